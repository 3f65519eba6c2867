//! Cross-checks against tshark (Wireshark's dissectors) when `tshark` is on PATH;
//! skipped with a printed note otherwise. These are the only tests of the module that
//! touch files or processes: a per-process directory under the system temp dir.

use super::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];
const SPORT: u16 = 5001;
const MSS: u32 = 1000;

struct Flow {
    cport: u16,
    cisn: u32,
    sisn: u32,
    ts: bool,
}

impl Flow {
    fn seg(&self, from_client: bool, flags: u8, seq: u32, ack: u32, len: u32) -> TcpIpHeader {
        let (src_ip, dst_ip, src_port, dst_port) = if from_client {
            (C, S, self.cport, SPORT)
        } else {
            (S, C, SPORT, self.cport)
        };
        TcpIpHeader {
            src_ip,
            dst_ip,
            ip_id: 0,
            tos: 0,
            ttl: 64,
            src_port,
            dst_port,
            seq,
            ack,
            flags,
            window: 512,
            options: TcpOptions::default(),
            payload_len: len,
        }
    }
}

/// A scripted connection, as seen by a capture point just before the server: the
/// handshake, one server data segment (whose sequence numbers wrap past 2^32 when
/// `sisn` is near it), `nseg` client segments of MSS bytes of which those in `lost`
/// never arrive, the server's ACKs with RFC 2018 SACK blocks (the block holding the
/// latest arrival first), retransmissions of the lost segments, and the FIN exchange.
fn flow(f: &Flow, nseg: u32, lost: &[u32], out: &mut Vec<TcpIpHeader>) {
    let mut tsval = 100u32;
    let mut ts = |h: &mut TcpIpHeader| {
        if f.ts {
            tsval += 1;
            h.options.timestamps = Some((tsval, tsval - 1));
        }
    };
    let c1 = f.cisn.wrapping_add(1);
    let s1 = f.sisn.wrapping_add(1);
    let d = |i: u32| c1.wrapping_add(i * MSS);

    let syn_opts = |ws| TcpOptions {
        mss: Some(MSS as u16),
        wscale: Some(ws),
        sack_permitted: true,
        timestamps: f.ts.then_some((1, 0)),
        ..Default::default()
    };
    let mut h = f.seg(true, SYN, f.cisn, 0, 0);
    h.options = syn_opts(7);
    out.push(h);
    let mut h = f.seg(false, SYN | ACK, f.sisn, c1, 0);
    h.options = syn_opts(9);
    out.push(h);
    let mut h = f.seg(true, ACK, c1, s1, 0);
    ts(&mut h);
    out.push(h);
    let s_end = s1.wrapping_add(MSS);
    let mut h = f.seg(false, ACK | PSH, s1, c1, MSS);
    ts(&mut h);
    out.push(h);
    let mut h = f.seg(true, ACK, c1, s_end, 0);
    ts(&mut h);
    out.push(h);

    // Receiver state: which segments arrived, and in which order.
    let mut arrived: Vec<u32> = vec![];
    let server_ack =
        |arrived: &Vec<u32>, out: &mut Vec<TcpIpHeader>, ts: &mut dyn FnMut(&mut TcpIpHeader)| {
            let cum = (0..=nseg).find(|i| !arrived.contains(i)).unwrap();
            // Runs of arrived segments above the cumulative ACK, each with its latest arrival.
            let mut runs: Vec<(u32, u32, usize)> = vec![];
            for i in cum..nseg {
                if let Some(pos) = arrived.iter().position(|&a| a == i) {
                    match runs.last_mut() {
                        Some(r) if r.1 == i => {
                            r.1 = i + 1;
                            r.2 = r.2.max(pos);
                        }
                        _ => runs.push((i, i + 1, pos)),
                    }
                }
            }
            runs.sort_by_key(|r| std::cmp::Reverse(r.2));
            let blocks: Vec<(u32, u32)> = runs.iter().map(|r| (d(r.0), d(r.1))).collect();
            let mut h = f.seg(false, ACK, s_end, d(cum), 0);
            h.options.sack = SackBlocks::from_slice(&blocks);
            ts(&mut h);
            out.push(h);
        };
    for i in 0..nseg {
        let mut h = f.seg(true, ACK | PSH, d(i), s_end, MSS);
        ts(&mut h);
        if lost.contains(&i) {
            continue; // dropped before the capture point
        }
        out.push(h);
        arrived.push(i);
        server_ack(&arrived, out, &mut ts);
    }
    for &i in lost {
        let mut h = f.seg(true, ACK | PSH, d(i), s_end, MSS);
        ts(&mut h);
        out.push(h);
        arrived.push(i);
        server_ack(&arrived, out, &mut ts);
    }
    let fin = d(nseg);
    for (from_client, flags, seq, ack) in [
        (true, FIN | ACK, fin, s_end),
        (false, FIN | ACK, s_end, fin.wrapping_add(1)),
        (true, ACK, fin.wrapping_add(1), s_end.wrapping_add(1)),
    ] {
        let mut h = f.seg(from_client, flags, seq, ack, 0);
        ts(&mut h);
        out.push(h);
    }
}

/// Two connections: one with timestamps (so at most 3 SACK blocks fit), one without
/// (4 blocks), the server's ISN just below 2^32 in both.
fn conversation() -> Vec<(u64, TcpIpHeader)> {
    let mut v = vec![];
    let a = Flow {
        cport: 49152,
        cisn: 1_000_000,
        sisn: 0xffff_fe00,
        ts: true,
    };
    flow(&a, 10, &[1, 3, 5, 7], &mut v);
    let b = Flow {
        cport: 49153,
        cisn: 0x8000_0000,
        sisn: 0xffff_fffe,
        ts: false,
    };
    flow(&b, 10, &[1, 3, 5, 7], &mut v);
    v.into_iter()
        .enumerate()
        .map(|(i, mut h)| {
            h.ip_id = i as u16;
            // every ECN codepoint, and DSCP LE (RFC 8622) on every third packet
            h.tos = (i % 4) as u8 | if i % 3 == 0 { 1 << 2 } else { 0 };
            (1_000_000_000 + i as u64 * 1_234_567, h)
        })
        .collect()
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn temp_dir() -> PathBuf {
    std::env::temp_dir().join(format!("longpipe-wire-{}", std::process::id()))
}

fn temp_pcap(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

const FIELDS: &[&str] = &[
    "frame.len",
    "frame.cap_len",
    "ip.src",
    "ip.dst",
    "ip.id",
    "ip.ttl",
    "ip.flags.df",
    "ip.checksum.status",
    "tcp.srcport",
    "tcp.dstport",
    "ip.dsfield.dscp",
    "ip.dsfield.ecn",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.flags",
    "tcp.window_size_value",
    "tcp.hdr_len",
    "tcp.len",
    "tcp.option_kind",
    "tcp.options.mss_val",
    "tcp.options.wscale.shift",
    "tcp.options.timestamp.tsval",
    "tcp.options.timestamp.tsecr",
    "tcp.options.sack_le",
    "tcp.options.sack_re",
    "tcp.checksum.status",
    "tcp.analysis.duplicate_ack_num",
    "tcp.analysis.fast_retransmission",
    "tcp.analysis.retransmission",
    "tcp.analysis.lost_segment",
    "tcp.analysis.bytes_in_flight",
    "tcp.window_size",
    "_ws.malformed",
];

/// Runs tshark on `file`: one map field -> text per packet. Raw sequence numbers, both
/// checksums validated.
fn tshark_fields(file: &PathBuf) -> Vec<BTreeMap<&'static str, String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file);
    cmd.args([
        "-n",
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "aggregator=,",
    ]);
    cmd.args(["-o", "tcp.relative_sequence_numbers:FALSE"]);
    cmd.args([
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "ip.check_checksum:TRUE",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("running tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), FIELDS.len(), "{l}");
            FIELDS
                .iter()
                .copied()
                .zip(cols.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

/// A tshark number: decimal or 0x-hex.
fn num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}")),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// Option kinds in wire order, read from the emitted bytes (NOP included).
fn option_kinds(h: &TcpIpHeader) -> String {
    let mut b = vec![];
    h.options.emit(&mut b);
    let mut kinds = vec![];
    let mut i = 0;
    while i < b.len() {
        kinds.push(b[i].to_string());
        i += if b[i] <= 1 { 1 } else { b[i + 1] as usize };
    }
    kinds.join(",")
}

/// Checks everything tshark decoded against the header we emitted.
fn check_fields(h: &TcpIpHeader, row: &BTreeMap<&str, String>, cap_len: usize) {
    let ctx = format!("{h:?}\n{row:?}");
    let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
    let n = h.options.sack_blocks_encoded();
    let sack = &h.options.sack.blocks[..n];
    let join =
        |it: &mut dyn Iterator<Item = u32>| it.map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    let expect: [(&str, String); 22] = [
        ("frame.len", h.total_len().to_string()),
        ("frame.cap_len", cap_len.to_string()),
        ("ip.src", ip(h.src_ip)),
        ("ip.dst", ip(h.dst_ip)),
        ("ip.ttl", h.ttl.to_string()),
        ("tcp.srcport", h.src_port.to_string()),
        ("tcp.dstport", h.dst_port.to_string()),
        ("tcp.seq_raw", h.seq.to_string()),
        ("tcp.ack_raw", h.ack.to_string()),
        ("tcp.window_size_value", h.window.to_string()),
        ("tcp.hdr_len", (20 + h.options.encoded_len()).to_string()),
        ("tcp.len", h.payload_len.to_string()),
        ("tcp.option_kind", option_kinds(h)),
        ("tcp.options.mss_val", opt(h.options.mss)),
        ("tcp.options.wscale.shift", opt(h.options.wscale)),
        (
            "tcp.options.timestamp.tsval",
            opt(h.options.timestamps.map(|t| t.0)),
        ),
        (
            "tcp.options.timestamp.tsecr",
            opt(h.options.timestamps.map(|t| t.1)),
        ),
        ("tcp.options.sack_le", join(&mut sack.iter().map(|b| b.0))),
        ("tcp.options.sack_re", join(&mut sack.iter().map(|b| b.1))),
        ("ip.checksum.status", "1".into()), // 1 = good
        ("ip.flags.df", "1".into()),
        ("_ws.malformed", String::new()),
    ];
    for (k, v) in expect {
        assert_eq!(row[k], v, "field {k}\n{ctx}");
    }
    assert_eq!(num(&row["ip.id"]), h.ip_id as u64, "{ctx}");
    assert_eq!(num(&row["ip.dsfield.dscp"]), (h.tos >> 2) as u64, "{ctx}");
    assert_eq!(num(&row["ip.dsfield.ecn"]), (h.tos & 3) as u64, "{ctx}");
    assert_eq!(num(&row["tcp.flags"]), h.flags as u64, "{ctx}");
    // TCP checksum: verified good whenever the whole segment was captured; tshark
    // leaves it unverified (2) when the payload was cut by the snap length.
    let whole = cap_len == h.total_len();
    assert_eq!(
        row["tcp.checksum.status"],
        if whole { "1" } else { "2" },
        "{ctx}"
    );
}

fn analysis(rows: &[BTreeMap<&'static str, String>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            FIELDS
                .iter()
                .filter(|f| f.starts_with("tcp.analysis") || **f == "tcp.window_size")
                .map(|f| r[f].clone())
                .collect()
        })
        .collect()
}

#[test]
fn tshark_decodes_full_and_header_only_captures() {
    if !tshark_available() {
        println!("note: tshark is not on PATH; skipping the tshark cross-check");
        return;
    }
    let conv = conversation();
    let mut full = PcapWriter::new(65_535);
    let mut hdrs = PcapWriter::new(128);
    for (t, h) in &conv {
        let mut b = vec![];
        h.emit_with_zero_payload(&mut b);
        full.record(*t, &b, b.len() as u32);
        hdrs.record_header(*t, h);
    }
    let full_rows = tshark_fields(&temp_pcap("full.pcap", full.as_bytes()));
    let hdr_rows = tshark_fields(&temp_pcap("headers.pcap", hdrs.as_bytes()));
    assert_eq!(full_rows.len(), conv.len());
    assert_eq!(hdr_rows.len(), conv.len());
    for (i, (_, h)) in conv.iter().enumerate() {
        check_fields(h, &full_rows[i], h.total_len());
        check_fields(h, &hdr_rows[i], h.header_len());
    }
    // tshark's sequence analysis (dup ACKs, retransmissions, bytes in flight, scaled
    // windows) is the same whether or not the payload bytes were captured: it works
    // from the IPv4 total length, not the captured length.
    assert_eq!(analysis(&full_rows), analysis(&hdr_rows));

    // The scenario reads as intended: the first ACK with SACK in each connection is a
    // duplicate ACK; 4 SACK blocks went out only without timestamps; the first
    // retransmission is seen as a fast retransmission; the SYN's window scale applies.
    for (cport, max_blocks) in [(49152u16, 3usize), (49153, 4)] {
        let idx: Vec<usize> = (0..conv.len())
            .filter(|&i| conv[i].1.src_port == cport || conv[i].1.dst_port == cport)
            .collect();
        let most = idx
            .iter()
            .map(|&i| conv[i].1.options.sack_blocks_encoded())
            .max()
            .unwrap();
        assert_eq!(most, max_blocks);
        let first_sack = *idx.iter().find(|&&i| conv[i].1.options.sack.n > 0).unwrap();
        assert_eq!(full_rows[first_sack]["tcp.analysis.duplicate_ack_num"], "1");
        // The lost segment the duplicate ACKs point at is retransmitted later.
        let hole = conv[first_sack].1.ack;
        let first_rtx = *idx
            .iter()
            .find(|&&i| {
                let h = &conv[i].1;
                h.src_port == cport && h.payload_len > 0 && h.seq == hole
            })
            .unwrap();
        assert!(first_rtx > first_sack);
        assert!(
            full_rows[first_rtx]["tcp.analysis.fast_retransmission"].len()
                + full_rows[first_rtx]["tcp.analysis.retransmission"].len()
                > 0,
            "{:?}",
            full_rows[first_rtx]
        );
        // Client data: window field 512 scaled by the client's own SYN shift (7).
        let data = idx
            .iter()
            .find(|&&i| conv[i].1.src_port == cport && conv[i].1.payload_len > 0)
            .unwrap();
        assert_eq!(
            full_rows[*data]["tcp.window_size"],
            (512u32 << 7).to_string()
        );
    }
    // Left in place for inspection when an assertion above fails.
    let _ = std::fs::remove_dir_all(temp_dir());
}
