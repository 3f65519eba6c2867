//! Throughput of the daemon's packet path on one core (`make bench`): 1500 B data
//! segments from servers through the gateway toward clients, the clients' ACKs (one
//! per two segments) back, the gateway's timers (pacing at the uplink's rate), every
//! packet parsed, checksummed and encoded as on a TUN device — only the device
//! read/write system calls are left out (a fake device counts the bytes).
//!
//!     cargo run -p longpipe-gateway --release --example gateway_bench [SECONDS]

use longpipe_core::middlebox::gateway::{GatewaySpec, Uplink};
use longpipe_core::time::{Rate, SimTime};
use longpipe_core::wire::{TcpIpHeader, TcpOptions, ACK, SYN};
use longpipe_gateway::path::{PacketPath, Prefix, DEV_TO_CLIENT, DEV_TO_SERVER};
use longpipe_gateway::pkt::build_packet;
use std::time::Instant;

const MSS: u32 = 1460;

fn hdr(c: u16, from_client: bool, flags: u8, seq: u32, ack: u32) -> TcpIpHeader {
    let client = [10, 1, (c >> 8) as u8, c as u8];
    let server = [10, 0, 0, 1];
    let (src, dst, sp, dp) = if from_client {
        (client, server, 40_000, 80)
    } else {
        (server, client, 80, 40_000)
    };
    TcpIpHeader {
        src_ip: src,
        dst_ip: dst,
        ip_id: 1,
        tos: 0,
        ttl: 63,
        src_port: sp,
        dst_port: dp,
        seq,
        ack,
        flags,
        window: 65_535,
        options: TcpOptions::default(),
        payload_len: 0,
    }
}

/// Runs `conns` connections for `secs` of wall time; (data packets, ACKs, bytes
/// written, seconds).
fn run(conns: u16, secs: f64) -> (u64, u64, u64, f64) {
    let spec: GatewaySpec = serde_json::from_str("{}").unwrap();
    let rate = Rate(1_000_000_000);
    let up = Uplink {
        rate: Some(rate),
        bdp: 75_000_000, // 1 Gbit/s x 600 ms
    };
    let mut p = PacketPath::new(
        spec.resolve("gateway").unwrap(),
        up,
        vec![Prefix([10, 1, 0, 0], 16)],
    );
    let mut written = 0u64;
    let mut tx = |_: usize, b: &[u8]| {
        written += b.len() as u64;
        true
    };
    let mut now = 0u64;
    for c in 0..conns {
        let mut syn = hdr(c, true, SYN, 1000, 0);
        syn.options.mss = Some(MSS as u16);
        syn.options.wscale = Some(9);
        p.input(
            SimTime(now),
            DEV_TO_SERVER,
            &build_packet(&syn, &[]),
            &mut tx,
        );
        let mut sa = hdr(c, false, SYN | ACK, 5000, 1001);
        sa.options = syn.options;
        p.input(
            SimTime(now),
            DEV_TO_CLIENT,
            &build_packet(&sa, &[]),
            &mut tx,
        );
        p.input(
            SimTime(now),
            DEV_TO_SERVER,
            &build_packet(&hdr(c, true, ACK, 1001, 5001), &[]),
            &mut tx,
        );
    }
    let payload: Vec<u8> = (0..MSS).map(|i| i as u8).collect();
    // pre-built packets would hide the cost of nothing: the path copies and parses
    // each one anyway; building them costs time, so it is done outside the clock
    let per_conn = 64u32;
    let mut data: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut acks: Vec<Vec<Vec<u8>>> = Vec::new();
    for c in 0..conns {
        let mut d = vec![];
        let mut a = vec![];
        for k in 0..per_conn {
            let seq = 5001u32.wrapping_add(k * MSS);
            d.push(build_packet(&hdr(c, false, ACK, seq, 1001), &payload));
            a.push(build_packet(
                &hdr(c, true, ACK, 1001, seq.wrapping_add(MSS)),
                &[],
            ));
        }
        data.push(d);
        acks.push(a);
    }
    let gap = rate.tx_time(1500).0;
    let (mut n_data, mut n_ack) = (0u64, 0u64);
    let t0 = Instant::now();
    let mut round = 0u32;
    while t0.elapsed().as_secs_f64() < secs {
        // one round: each connection sends 64 segments (sequence numbers move on by a
        // round's bytes, so the packets are rebuilt... cheaply: only the seq/ack words)
        for c in 0..conns as usize {
            for k in 0..per_conn as usize {
                let b = &mut data[c][k];
                let seq = 5001u32.wrapping_add((round * per_conn + k as u32) * MSS);
                rewrite_u32(b, 24, seq);
                now += gap;
                p.input(SimTime(now), DEV_TO_CLIENT, b, &mut tx);
                n_data += 1;
                if p.next_timer().is_some_and(|t| t.0 <= now) {
                    p.timeout(SimTime(now), &mut tx);
                }
                if k % 2 == 1 {
                    let a = &mut acks[c][k];
                    rewrite_u32(a, 28, seq.wrapping_add(MSS));
                    p.input(SimTime(now), DEV_TO_SERVER, a, &mut tx);
                    n_ack += 1;
                }
            }
        }
        round += 1;
    }
    let dt = t0.elapsed().as_secs_f64();
    // the work was done: every segment parsed as good, taken and acknowledged in the
    // client's name, sent on, and acknowledged by the client
    let g = &p.gw.stats;
    assert_eq!((p.stats.bad_checksum, p.stats.malformed), (0, 0));
    assert_eq!(g.spoofed_acks, n_data);
    assert!(g.sat_bytes_sent >= (n_data - 2 * conns as u64 * per_conn as u64) * MSS as u64);
    assert!(g.sat_bytes_delivered > 0 && g.segments_resent == 0);
    (n_data, n_ack, written, dt)
}

/// Sets a 32-bit TCP header field at `off` (from the IPv4 header) and fixes the TCP
/// checksum incrementally (RFC 1624).
fn rewrite_u32(b: &mut [u8], off: usize, v: u32) {
    let old = [
        u16::from_be_bytes([b[off], b[off + 1]]),
        u16::from_be_bytes([b[off + 2], b[off + 3]]),
    ];
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
    let new = [(v >> 16) as u16, v as u16];
    let mut c = !u16::from_be_bytes([b[36], b[37]]) as u32;
    for i in 0..2 {
        c += !old[i] as u32 + new[i] as u32;
    }
    while c > 0xffff {
        c = (c & 0xffff) + (c >> 16);
    }
    b[36..38].copy_from_slice(&(!(c as u16)).to_be_bytes());
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    println!("gateway packet path, one core, 1500 B data packets (fake devices):");
    println!(
        "| connections | data packets/s | Gbit/s of data | ACKs/s | all packets/s (in + out) |"
    );
    println!("|---|---|---|---|---|");
    for conns in [1u16, 100, 1000] {
        let (d, a, _w, dt) = run(conns, secs);
        let pps = d as f64 / dt;
        println!(
            "| {conns} | {:.0} k | {:.2} | {:.0} k | {:.0} k |",
            pps / 1e3,
            pps * 1500.0 * 8.0 / 1e9,
            a as f64 / dt / 1e3,
            (2 * d + a + d) as f64 / dt / 1e3,
        );
    }
}
