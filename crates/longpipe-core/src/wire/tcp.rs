//! IPv4 (RFC 791) + TCP (RFC 9293) headers with options (RFC 7323, RFC 2018): emit
//! and parse. Checksums per RFC 1071 over the RFC 9293 section 3.1 pseudo-header.

use super::{ones_sum, IPV4_HEADER_LEN, MAX_OPTIONS_LEN, TCP_HEADER_LEN};
use std::fmt;

const EOL: u8 = 0;
const NOP: u8 = 1;
const KIND_MSS: u8 = 2;
const KIND_WSCALE: u8 = 3;
const KIND_SACK_PERMITTED: u8 = 4;
const KIND_SACK: u8 = 5;
const KIND_TIMESTAMPS: u8 = 8;
const PROTO_TCP: u8 = 6;

/// SACK blocks (RFC 2018 section 3) as (left edge, right edge) wire sequence numbers:
/// the left edge is the first byte held, the right edge the byte after the last one.
/// Only `blocks[..n]` count; `n` above 4 is read as 4. [`super::parse`] leaves unused
/// slots at `(0, 0)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub n: u8,
    pub blocks: [(u32, u32); 4],
}

impl SackBlocks {
    /// Builds from up to 4 blocks (extra ones are ignored).
    pub fn from_slice(blocks: &[(u32, u32)]) -> Self {
        let mut s = SackBlocks::default();
        for (slot, &b) in s.blocks.iter_mut().zip(blocks) {
            *slot = b;
            s.n += 1;
        }
        s
    }

    /// The blocks in use.
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..(self.n as usize).min(4)]
    }
}

/// The TCP options this crate writes and reads. Unknown options are skipped on parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// Maximum segment size (kind 2, RFC 9293 section 3.2); normally SYNs only.
    pub mss: Option<u16>,
    /// Window scale shift count (kind 3, RFC 7323 section 2); SYNs only.
    pub wscale: Option<u8>,
    /// SACK-permitted (kind 4, RFC 2018 section 2); SYNs only.
    pub sack_permitted: bool,
    /// Timestamps (TSval, TSecr) (kind 8, RFC 7323 section 3).
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks (kind 5, RFC 2018 section 3).
    pub sack: SackBlocks,
}

impl TcpOptions {
    /// Bytes taken by everything except the SACK blocks (each part already 4-aligned).
    fn base_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4; // kind 2, len 4, MSS
        }
        n += match (self.sack_permitted, self.timestamps.is_some()) {
            (_, true) => 12,    // [NOP,NOP | kind 4,len 2], kind 8, len 10, TSval, TSecr
            (true, false) => 4, // NOP, NOP, kind 4, len 2
            (false, false) => 0,
        };
        if self.wscale.is_some() {
            n += 4; // NOP, kind 3, len 3, shift
        }
        n
    }

    /// How many SACK blocks are actually encoded: `sack.n` capped at 4 and at what fits
    /// in the 40 option bytes after the other options (Linux drops the trailing blocks
    /// the same way; with timestamps at most 3 fit).
    pub fn sack_blocks_encoded(&self) -> usize {
        let n = (self.sack.n as usize).min(4);
        let room = MAX_OPTIONS_LEN - self.base_len();
        if n == 0 || room < 12 {
            0
        } else {
            n.min((room - 4) / 8)
        }
    }

    /// Encoded length in bytes including NOP padding to a multiple of 4 (RFC 9293 /
    /// 7323 / 2018 layouts with Linux-style NOP alignment): MSS 4; SACK-permitted alone
    /// NOP,NOP,4,2 = 4; timestamps NOP,NOP,8,10,TSval,TSecr = 12, or 4,2,8,10,... = 12
    /// with SACK-permitted; NOP,3,3,shift = 4; SACK blocks NOP,NOP,5,len then 8 bytes a
    /// block. Never above [`MAX_OPTIONS_LEN`]; see [`Self::sack_blocks_encoded`].
    pub fn encoded_len(&self) -> usize {
        let s = self.sack_blocks_encoded();
        self.base_len() + if s > 0 { 4 + 8 * s } else { 0 }
    }

    /// Appends the encoded options (exactly [`Self::encoded_len`] bytes, in Linux's
    /// order: MSS, SACK-permitted/timestamps, window scale, SACK) and returns the count.
    pub fn emit(&self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        if let Some(m) = self.mss {
            out.extend_from_slice(&[KIND_MSS, 4]);
            out.extend_from_slice(&m.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((val, ecr))) => {
                if sp {
                    out.extend_from_slice(&[KIND_SACK_PERMITTED, 2]);
                } else {
                    out.extend_from_slice(&[NOP, NOP]);
                }
                out.extend_from_slice(&[KIND_TIMESTAMPS, 10]);
                out.extend_from_slice(&val.to_be_bytes());
                out.extend_from_slice(&ecr.to_be_bytes());
            }
            (true, None) => out.extend_from_slice(&[NOP, NOP, KIND_SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.wscale {
            out.extend_from_slice(&[NOP, KIND_WSCALE, 3, ws]);
        }
        let n = self.sack_blocks_encoded();
        if n > 0 {
            out.extend_from_slice(&[NOP, NOP, KIND_SACK, 2 + 8 * n as u8]);
            for &(l, r) in &self.sack.blocks[..n] {
                out.extend_from_slice(&l.to_be_bytes());
                out.extend_from_slice(&r.to_be_bytes());
            }
        }
        let len = out.len() - start;
        debug_assert_eq!(len, self.encoded_len());
        debug_assert!(len.is_multiple_of(4) && len <= MAX_OPTIONS_LEN);
        len
    }
}

/// The fields of an IPv4 + TCP header that this crate sets; everything else is fixed
/// (see the module invariants). Sequence numbers are wire (32-bit, wrapping) values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpIpHeader {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub ip_id: u16,
    pub ttl: u8,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// TCP flags byte: [`super::FIN`], [`super::SYN`], ...
    pub flags: u8,
    /// Window field as sent (already right-shifted by the sender's scale).
    pub window: u16,
    pub options: TcpOptions,
    /// TCP payload bytes (not stored: only their count).
    pub payload_len: u32,
}

impl TcpIpHeader {
    /// 20 (IPv4) + 20 (TCP) + options.
    pub fn header_len(&self) -> usize {
        IPV4_HEADER_LEN + TCP_HEADER_LEN + self.options.encoded_len()
    }

    /// The IPv4 total length: header_len + payload_len.
    pub fn total_len(&self) -> usize {
        self.header_len() + self.payload_len as usize
    }

    /// Appends the IPv4 header (no IP options, DF set, protocol 6, correct header
    /// checksum) and the TCP header with options and a TCP checksum correct for a
    /// payload of `payload_len` zero bytes. Appends no payload bytes: exactly
    /// [`Self::header_len`] bytes.
    ///
    /// # Panics
    /// If [`Self::total_len`] exceeds 65535 (no IPv4 packet is that long).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let total = self.total_len();
        assert!(total <= 65_535, "IPv4 total length {total} exceeds 65535");
        let ip = out.len();
        out.extend_from_slice(&[0x45, 0]); // version 4, IHL 5; TOS 0
        out.extend_from_slice(&(total as u16).to_be_bytes());
        out.extend_from_slice(&self.ip_id.to_be_bytes());
        out.extend_from_slice(&[0x40, 0]); // DF, fragment offset 0
        out.extend_from_slice(&[self.ttl, PROTO_TCP, 0, 0]); // checksum filled below
        out.extend_from_slice(&self.src_ip);
        out.extend_from_slice(&self.dst_ip);
        let c = !ones_sum(&out[ip..ip + IPV4_HEADER_LEN], 0);
        out[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());

        let t = out.len();
        let doff = (TCP_HEADER_LEN + self.options.encoded_len()) / 4;
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        out.extend_from_slice(&[(doff as u8) << 4, self.flags]);
        out.extend_from_slice(&self.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]); // checksum (below), urgent pointer
        self.options.emit(out);
        let tcp_len = (out.len() - t) as u32 + self.payload_len;
        let c = !ones_sum(&out[t..], pseudo_sum(&self.src_ip, &self.dst_ip, tcp_len));
        out[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
        debug_assert_eq!(out.len() - ip, self.header_len());
    }

    /// Appends the header and `payload_len` zero bytes: a complete packet of
    /// [`Self::total_len`] bytes whose checksums verify.
    pub fn emit_with_zero_payload(&self, out: &mut Vec<u8>) {
        self.emit(out);
        out.resize(out.len() + self.payload_len as usize, 0);
    }
}

/// One's-complement sum (unfolded) of the RFC 9293 pseudo-header: source, destination,
/// zero, protocol 6, TCP length.
fn pseudo_sum(src: &[u8; 4], dst: &[u8; 4], tcp_len: u32) -> u32 {
    let w = |a: &[u8; 4]| {
        u16::from_be_bytes([a[0], a[1]]) as u32 + u16::from_be_bytes([a[2], a[3]]) as u32
    };
    w(src) + w(dst) + PROTO_TCP as u32 + tcp_len
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The bytes end inside the IPv4 header, the fixed TCP header or the TCP options.
    Truncated,
    /// IP version is not 4.
    NotIpv4,
    /// IP protocol is not 6.
    NotTcp,
    /// IHL below 5, TCP data offset below 5, or headers longer than the IPv4 total length.
    BadHeaderLength,
    /// A TCP option with a bad length, or one running past the options area.
    BadOption,
    /// An IPv4 fragment (MF set or a nonzero offset): no whole TCP segment to read.
    Fragment,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "packet truncated inside the IPv4/TCP header",
            WireError::NotIpv4 => "not an IPv4 packet",
            WireError::NotTcp => "not a TCP segment",
            WireError::BadHeaderLength => "bad IPv4 or TCP header length",
            WireError::BadOption => "malformed TCP option",
            WireError::Fragment => "IPv4 fragment",
        })
    }
}

impl std::error::Error for WireError {}

/// What [`parse`] could verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChecksumStatus {
    /// The IPv4 header checksum verifies.
    pub ip_ok: bool,
    /// The TCP checksum verifies; `None` when the bytes stop before the end of the
    /// segment given by the IPv4 total length (a snaplen-truncated capture).
    pub tcp_ok: Option<bool>,
}

impl ChecksumStatus {
    /// Both checksums were checked and verify.
    pub fn all_ok(&self) -> bool {
        self.ip_ok && self.tcp_ok == Some(true)
    }
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn parse_options(opts: &[u8]) -> Result<TcpOptions, WireError> {
    let mut o = TcpOptions::default();
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            EOL => break,
            NOP => i += 1,
            kind => {
                let len = *opts.get(i + 1).ok_or(WireError::BadOption)? as usize;
                if len < 2 || i + len > opts.len() {
                    return Err(WireError::BadOption);
                }
                let v = &opts[i + 2..i + len];
                match (kind, len) {
                    (KIND_MSS, 4) => o.mss = Some(be16(v, 0)),
                    (KIND_WSCALE, 3) => o.wscale = Some(v[0]),
                    (KIND_SACK_PERMITTED, 2) => o.sack_permitted = true,
                    (KIND_TIMESTAMPS, 10) => o.timestamps = Some((be32(v, 0), be32(v, 4))),
                    (KIND_SACK, l) if l >= 10 && (l - 2) % 8 == 0 => {
                        // At most 4 blocks fit in 40 option bytes, so l <= 34 here.
                        let mut s = SackBlocks::default();
                        for (k, w) in v.chunks_exact(8).enumerate() {
                            s.blocks[k] = (be32(w, 0), be32(w, 4));
                        }
                        s.n = ((l - 2) / 8) as u8;
                        o.sack = s;
                    }
                    (
                        KIND_MSS | KIND_WSCALE | KIND_SACK_PERMITTED | KIND_SACK | KIND_TIMESTAMPS,
                        _,
                    ) => return Err(WireError::BadOption),
                    _ => {} // unknown option: skipped
                }
                i += len;
            }
        }
    }
    Ok(o)
}

/// Parses an IPv4 + TCP packet. The bytes may stop anywhere after the TCP options (a
/// truncated capture); bytes past the IPv4 total length (link padding) are ignored.
/// `payload_len` comes from the IPv4 total length. The TCP checksum is checked only
/// when the whole segment is present ([`ChecksumStatus::tcp_ok`]). IP options are
/// skipped; unknown TCP options are skipped; an EOL option ends the option list.
pub fn parse(b: &[u8]) -> Result<(TcpIpHeader, ChecksumStatus), WireError> {
    if b.len() < IPV4_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    if b[0] >> 4 != 4 {
        return Err(WireError::NotIpv4);
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    if ihl < IPV4_HEADER_LEN {
        return Err(WireError::BadHeaderLength);
    }
    if b[9] != PROTO_TCP {
        return Err(WireError::NotTcp);
    }
    if be16(b, 6) & 0x3fff != 0 {
        return Err(WireError::Fragment);
    }
    if b.len() < ihl + TCP_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let total = be16(b, 2) as usize;
    let t = &b[ihl..];
    let doff = (t[12] >> 4) as usize * 4;
    if doff < TCP_HEADER_LEN || total < ihl + doff {
        return Err(WireError::BadHeaderLength);
    }
    if t.len() < doff {
        return Err(WireError::Truncated);
    }
    let options = parse_options(&t[TCP_HEADER_LEN..doff])?;
    let h = TcpIpHeader {
        src_ip: [b[12], b[13], b[14], b[15]],
        dst_ip: [b[16], b[17], b[18], b[19]],
        ip_id: be16(b, 4),
        ttl: b[8],
        src_port: be16(t, 0),
        dst_port: be16(t, 2),
        seq: be32(t, 4),
        ack: be32(t, 8),
        flags: t[13],
        window: be16(t, 14),
        options,
        payload_len: (total - ihl - doff) as u32,
    };
    let ip_ok = ones_sum(&b[..ihl], 0) == 0xffff;
    let tcp_ok = (b.len() >= total).then(|| {
        let seg = &b[ihl..total];
        ones_sum(seg, pseudo_sum(&h.src_ip, &h.dst_ip, seg.len() as u32)) == 0xffff
    });
    Ok((h, ChecksumStatus { ip_ok, tcp_ok }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ACK, FIN, PSH, RST, SYN};

    fn hdr(flags: u8, options: TcpOptions, payload_len: u32) -> TcpIpHeader {
        TcpIpHeader {
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            ip_id: 77,
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
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
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
            0x45, 0x00, 0x00, 0x28, 0x00, 0x01, 0x40, 0x00, 0x40, 0x06, 0x26, 0xcd, 10, 0, 0, 1,
            10, 0, 0, 2, 0xc0, 0x00, 0x13, 0x89, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d, 0x50, 0x10,
            0x0f, 0xa0, 0x9e, 0x8a, 0, 0,
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
}
