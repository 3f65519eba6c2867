//! Unit tests of the IPv4/TCP codec ([`super`]): option layouts, checksums against
//! known vectors, emit/parse round trips, garbage rejected.

use super::*;
use crate::wire::{ACK, FIN, PSH, RST, SYN};

fn hdr(flags: u8, options: TcpOptions, payload_len: u32) -> TcpIpHeader {
    TcpIpHeader {
        src_ip: [10, 0, 0, 1],
        dst_ip: [10, 0, 0, 2],
        ip_id: 77,
        tos: 0,
        ttl: 64,
        src_port: 49152,
        dst_port: 5001,
        seq: 0xfff0_0000,
        ack: 12345,
        flags,
        window: 4000,
        options,
        payload_len,
    }
}

fn syn_opts() -> TcpOptions {
    TcpOptions {
        mss: Some(1460),
        wscale: Some(7),
        sack_permitted: true,
        ..Default::default()
    }
}

fn sack(n: usize) -> SackBlocks {
    let all = [(100, 200), (300, 400), (u32::MAX - 5, 10), (7000, 9000)];
    SackBlocks::from_slice(&all[..n])
}

fn encode(o: &TcpOptions) -> Vec<u8> {
    let mut v = vec![];
    assert_eq!(o.emit(&mut v), v.len());
    v
}

#[test]
fn option_lengths() {
    assert_eq!(TcpOptions::default().encoded_len(), 0);
    // SYN-style options: MSS(4) + NOP,NOP,SACK-permitted(4) + NOP,WS(4).
    assert_eq!(syn_opts().encoded_len(), 12);
    // Linux's SYN with timestamps: MSS, SACK-permitted+TS, NOP+WS.
    let syn_ts = TcpOptions {
        timestamps: Some((1, 0)),
        ..syn_opts()
    };
    assert_eq!(syn_ts.encoded_len(), 20);
    let ts = TcpOptions {
        timestamps: Some((1, 2)),
        ..Default::default()
    };
    assert_eq!(ts.encoded_len(), 12);
    let ts_sp = TcpOptions {
        sack_permitted: true,
        ..ts
    };
    assert_eq!(ts_sp.encoded_len(), 12);
    for (n, len) in [(1, 12), (2, 20), (3, 28), (4, 36)] {
        let o = TcpOptions {
            sack: sack(n),
            ..Default::default()
        };
        assert_eq!(o.encoded_len(), len, "{n} SACK blocks");
        assert_eq!(o.sack_blocks_encoded(), n);
    }
    // Timestamps leave room for 3 SACK blocks only (12 + 4 + 24 = 40).
    let ts_sack = TcpOptions {
        sack: sack(4),
        ..ts
    };
    assert_eq!(ts_sack.sack_blocks_encoded(), 3);
    assert_eq!(ts_sack.encoded_len(), 40);
    // n above 4 reads as 4.
    let mut big = sack(4);
    big.n = 9;
    let o = TcpOptions {
        sack: big,
        ..Default::default()
    };
    assert_eq!(o.encoded_len(), 36);
}

#[test]
fn every_option_combination_is_aligned_and_fits() {
    for bits in 0..16u8 {
        for n in 0..=4 {
            let o = TcpOptions {
                mss: (bits & 1 != 0).then_some(1400),
                wscale: (bits & 2 != 0).then_some(14),
                sack_permitted: bits & 4 != 0,
                timestamps: (bits & 8 != 0).then_some((0xdead_beef, 0x0102_0304)),
                sack: sack(n),
            };
            let v = encode(&o);
            assert_eq!(v.len(), o.encoded_len(), "{o:?}");
            assert_eq!(v.len() % 4, 0, "{o:?}");
            assert!(v.len() <= MAX_OPTIONS_LEN, "{o:?}");
            let mut expect = o;
            expect.sack = SackBlocks::from_slice(&o.sack.as_slice()[..o.sack_blocks_encoded()]);
            assert_eq!(parse_options(&v).unwrap(), expect, "{o:?}");
        }
    }
}

#[test]
fn option_bytes_match_linux_layout() {
    let syn_ts = TcpOptions {
        timestamps: Some((1, 0)),
        ..syn_opts()
    };
    assert_eq!(
        encode(&syn_ts),
        [2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7]
    );
    assert_eq!(
        encode(&syn_opts()),
        [2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7]
    );
    let ack_ts_sack = TcpOptions {
        timestamps: Some((0x0a0b_0c0d, 0x0102_0304)),
        sack: SackBlocks::from_slice(&[(0x1111_2222, 0x3333_4444)]),
        ..Default::default()
    };
    assert_eq!(
        encode(&ack_ts_sack),
        [
            1, 1, 8, 10, 0x0a, 0x0b, 0x0c, 0x0d, 1, 2, 3, 4, // NOP,NOP,TS
            1, 1, 5, 10, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44 // NOP,NOP,SACK
        ]
    );
}

#[test]
fn ipv4_checksum_known_vectors() {
    // The classic example header (RFC 1071-style worked example, as on Wikipedia's
    // "IPv4 header checksum"): 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
    let mut h = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];
    assert_eq!(!ones_sum(&h, 0), 0xb861);
    h[10..12].copy_from_slice(&[0xb8, 0x61]);
    assert_eq!(ones_sum(&h, 0), 0xffff);

    // Our own header, checksums worked out independently (a Python RFC 1071 sum):
    // 4500 0028 0001 4000 4006 [26cd] 0a00 0001 0a00 0002, then the TCP header
    // c000 1389 0102 0304 0a0b 0c0d 5010 0fa0 [9e8a] 0000.
    let h = TcpIpHeader {
        src_ip: [10, 0, 0, 1],
        dst_ip: [10, 0, 0, 2],
        ip_id: 1,
        tos: 0,
        ttl: 64,
        src_port: 49152,
        dst_port: 5001,
        seq: 0x0102_0304,
        ack: 0x0a0b_0c0d,
        flags: ACK,
        window: 4000,
        options: TcpOptions::default(),
        payload_len: 0,
    };
    let mut v = vec![];
    h.emit(&mut v);
    let expect: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0x00, 0x01, 0x40, 0x00, 0x40, 0x06, 0x26, 0xcd, 10, 0, 0, 1, 10, 0,
        0, 2, 0xc0, 0x00, 0x13, 0x89, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 0x50, 0x10, 0x0f, 0xa0,
        0x9e, 0x8a, 0, 0,
    ];
    assert_eq!(v, expect);
    // The same with 100 zero payload bytes: IP 008c/2669, TCP checksum 9e26.
    let h100 = TcpIpHeader {
        payload_len: 100,
        ..h
    };
    let mut v = vec![];
    h100.emit(&mut v);
    assert_eq!(v.len(), 40);
    assert_eq!(&v[2..4], &[0x00, 0x8c]);
    assert_eq!(&v[10..12], &[0x26, 0x69]);
    assert_eq!(&v[36..38], &[0x9e, 0x26]);
}

/// Re-sums the TCP segment with an explicitly built pseudo-header.
fn tcp_resum(pkt: &[u8]) -> u16 {
    let seg = &pkt[20..];
    let mut ph = vec![];
    ph.extend_from_slice(&pkt[12..20]); // source, destination
    ph.extend_from_slice(&[0, 6]);
    ph.extend_from_slice(&(seg.len() as u16).to_be_bytes());
    ph.extend_from_slice(seg);
    ones_sum(&ph, 0)
}

#[test]
fn tcp_checksum_verifies_with_pseudo_header() {
    let mut ts_sack = TcpOptions {
        timestamps: Some((0x8000_0001, 0xffff_ffff)),
        sack: sack(3),
        ..Default::default()
    };
    for payload in [0, 1, 3, 536, 1448, 65_535 - 40 - 40] {
        for o in [TcpOptions::default(), syn_opts(), ts_sack] {
            let h = hdr(ACK | PSH, o, payload);
            let mut v = vec![];
            h.emit_with_zero_payload(&mut v);
            assert_eq!(v.len(), h.total_len());
            assert_eq!(ones_sum(&v[..20], 0), 0xffff);
            assert_eq!(tcp_resum(&v), 0xffff, "payload {payload}, {o:?}");
        }
        ts_sack.sack.blocks[0].0 ^= payload;
    }
}

#[test]
#[should_panic(expected = "exceeds 65535")]
fn oversized_packet_panics() {
    hdr(ACK, TcpOptions::default(), 65_535 - 39).emit(&mut vec![]);
}

#[test]
fn emit_parse_round_trip_and_checksums() {
    let cases = [
        hdr(SYN, syn_opts(), 0),
        hdr(
            SYN | ACK,
            TcpOptions {
                timestamps: Some((99, 1)),
                ..syn_opts()
            },
            0,
        ),
        hdr(
            SYN,
            TcpOptions {
                mss: Some(536),
                ..Default::default()
            },
            0,
        ),
        hdr(ACK, TcpOptions::default(), 1460),
        hdr(ACK | PSH, TcpOptions::default(), 1),
        hdr(ACK | FIN, TcpOptions::default(), 17),
        hdr(RST, TcpOptions::default(), 0),
        hdr(
            ACK,
            TcpOptions {
                sack: sack(1),
                ..Default::default()
            },
            0,
        ),
        hdr(
            ACK,
            TcpOptions {
                sack: sack(4),
                ..Default::default()
            },
            0,
        ),
        hdr(
            ACK,
            TcpOptions {
                timestamps: Some((5, 6)),
                sack: sack(3),
                ..Default::default()
            },
            3,
        ),
        TcpIpHeader {
            src_ip: [192, 168, 255, 254],
            dst_ip: [255, 255, 255, 255],
            ip_id: 0xffff,
            tos: 0xff,
            ttl: 1,
            src_port: 65535,
            dst_port: 1,
            seq: u32::MAX,
            ack: u32::MAX,
            flags: 0xff,
            window: 65535,
            options: TcpOptions {
                wscale: Some(14),
                ..Default::default()
            },
            payload_len: 65_535 - 44,
        },
    ];
    for h in cases {
        let mut v = vec![];
        h.emit_with_zero_payload(&mut v);
        assert_eq!(v.len(), h.total_len());
        let (p, ck) = parse(&v).unwrap();
        assert_eq!(p, h);
        assert!(ck.all_ok());
        assert_eq!(
            ck,
            ChecksumStatus {
                ip_ok: true,
                tcp_ok: Some(true)
            }
        );
        // Headers only, as in a snaplen-truncated capture.
        let mut trunc = vec![];
        h.emit(&mut trunc);
        assert_eq!(trunc.len(), h.header_len());
        assert_eq!(&trunc[..], &v[..h.header_len()]);
        let (p2, ck2) = parse(&trunc).unwrap();
        assert_eq!(p2, h);
        assert!(ck2.ip_ok);
        assert_eq!(ck2.tcp_ok, (h.payload_len == 0).then_some(true));
        // Trailing link padding is ignored.
        let mut padded = v.clone();
        padded.extend_from_slice(&[0xaa; 6]);
        assert_eq!(parse(&padded).unwrap(), (h, ck));
        // Corrupting a TCP header byte is noticed by the TCP checksum only.
        v[24] ^= 0x10; // sequence number
        let (_, ck3) = parse(&v).unwrap();
        assert_eq!(ck3.tcp_ok, Some(false));
        assert!(ck3.ip_ok);
        v[24] ^= 0x10;
        // Corrupting the IP header is noticed by the IP checksum.
        v[8] ^= 0x01; // TTL
        let (_, ck4) = parse(&v).unwrap();
        assert!(!ck4.ip_ok);
    }
}

#[test]
fn parse_skips_ip_options_and_unknown_tcp_options() {
    let h = hdr(ACK, TcpOptions::default(), 10);
    let mut v = vec![];
    h.emit_with_zero_payload(&mut v);
    // Insert 4 bytes of IP options (NOP, NOP, NOP, EOL): IHL 6, total + 4.
    v.splice(20..20, [1, 1, 1, 0]);
    v[0] = 0x46;
    let total = (h.total_len() + 4) as u16;
    v[2..4].copy_from_slice(&total.to_be_bytes());
    v[10..12].copy_from_slice(&[0, 0]);
    let c = !ones_sum(&v[..24], 0);
    v[10..12].copy_from_slice(&c.to_be_bytes());
    let (p, ck) = parse(&v).unwrap();
    assert_eq!(p, h);
    assert!(ck.all_ok());

    // Unknown option kind 30 (len 4) before a MSS, then EOL: skipped, then stop.
    let opts = [30, 4, 0xab, 0xcd, 2, 4, 0x02, 0x18, 0, 2, 4, 9];
    let o = parse_options(&opts).unwrap();
    assert_eq!(
        o,
        TcpOptions {
            mss: Some(536),
            ..Default::default()
        }
    );
}

#[test]
fn parse_rejects_garbage() {
    assert_eq!(parse(&[]), Err(WireError::Truncated));
    assert_eq!(parse(&[0x45; 10]), Err(WireError::Truncated));
    let h = hdr(ACK, syn_opts(), 0);
    let mut good = vec![];
    h.emit(&mut good);
    let with = |i: usize, b: u8| {
        let mut v = good.clone();
        v[i] = b;
        parse(&v)
    };
    assert_eq!(parse(&good[..30]), Err(WireError::Truncated));
    assert_eq!(parse(&good[..45]), Err(WireError::Truncated)); // inside options
    assert_eq!(with(9, 17), Err(WireError::NotTcp));
    assert_eq!(with(0, 0x65), Err(WireError::NotIpv4));
    assert_eq!(with(0, 0x44), Err(WireError::BadHeaderLength));
    assert_eq!(with(32, 0x40), Err(WireError::BadHeaderLength)); // data offset 4
    assert_eq!(with(3, 40), Err(WireError::BadHeaderLength)); // total < headers
    assert_eq!(with(6, 0x20), Err(WireError::Fragment)); // MF
    assert_eq!(with(7, 0x01), Err(WireError::Fragment)); // offset 8
    assert_eq!(with(41, 3), Err(WireError::BadOption)); // MSS with length 3
    assert_eq!(with(41, 40), Err(WireError::BadOption)); // runs past the area
    assert_eq!(parse_options(&[1, 1, 8]), Err(WireError::BadOption));
    assert_eq!(parse_options(&[5, 2]), Err(WireError::BadOption)); // empty SACK
    assert_eq!(parse_options(&[2, 0]), Err(WireError::BadOption));
    // The Display strings are distinct and non-empty.
    let all = [
        WireError::Truncated,
        WireError::NotIpv4,
        WireError::NotTcp,
        WireError::BadHeaderLength,
        WireError::BadOption,
        WireError::Fragment,
    ];
    let msgs: std::collections::BTreeSet<String> = all.iter().map(|e| e.to_string()).collect();
    assert_eq!(msgs.len(), all.len());
    let _: &dyn std::error::Error = &WireError::BadOption;
}
