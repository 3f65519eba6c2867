//! The gateway on real packets, fed by hand: identities, sequence wrap, window scaling,
//! the connection table, out-of-order server data, timestamps.
//!
//! Why one file of ~790 lines: every test builds its packets with the same few helpers
//! (`pkt`, `syn`, `open`, `stamped`) and reads the same counters; each test is short.

use super::*;
use crate::net::packet::{Options, Segment, ACK, FIN};
use crate::time::SimDuration;

pub(super) const SERVER: [u8; 4] = [10, 0, 0, 1];
pub(super) const CLIENT: [u8; 4] = [10, 0, 0, 3];
/// An uplink without pacing (these tests feed packets by hand).
pub(super) const UP: Uplink = Uplink {
    rate: None,
    bdp: 100_000,
};

pub(super) fn cfg(extra: &str) -> GatewayConfig {
    let spec: GatewaySpec = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
    spec.resolve("gw").unwrap()
}

pub(super) fn pkt(
    from_server: bool,
    sport: u16,
    flags: u8,
    seq: u32,
    ack: u32,
    len: u32,
) -> Packet {
    let (src, dst, sp, dp) = if from_server {
        (SERVER, CLIENT, 5001, sport)
    } else {
        (CLIENT, SERVER, sport, 5001)
    };
    Packet::new(
        src,
        dst,
        Segment {
            sport: sp,
            dport: dp,
            seq,
            ack,
            flags,
            window: 100,
            opts: Options::default(),
            len,
        },
    )
}

pub(super) fn syn(from_server: bool, sport: u16, isn: u32, ack: u32, wscale: Option<u8>) -> Packet {
    let mut p = pkt(
        from_server,
        sport,
        if ack > 0 { SYN | ACK } else { SYN },
        isn,
        ack,
        0,
    );
    p.seg.opts = Options {
        mss: Some(1000),
        wscale,
        ..Default::default()
    };
    p.seg.window = 60_000;
    p.size = 40 + p.seg.opts.encoded_len();
    p
}

/// A client-opened connection (as real downloads are): the gateway learns both sides
/// from the SYN and the SYN-ACK, whichever comes first.
pub(super) fn open(
    gw: &mut Gateway,
    sport: u16,
    c_isn: u32,
    s_isn: u32,
    ws: Option<u8>,
) -> Vec<Packet> {
    let mut out = vec![];
    gw.on_packet(
        SimTime(0),
        Dir::ToServer,
        syn(false, sport, c_isn, 0, ws),
        &mut out,
    );
    gw.on_packet(
        SimTime(1),
        Dir::ToClient,
        syn(true, sport, s_isn, c_isn.wrapping_add(1), ws),
        &mut out,
    );
    out
}

#[test]
fn client_opened_connection_is_accelerated_across_the_sequence_wrap() {
    let mut gw = Gateway::new(cfg(r#""buffer":"1MB","shared":false"#), UP);
    let (c_isn, s_isn) = (7_000, u32::MAX - 1_500); // the server's data wraps at byte 1500
    let out = open(&mut gw, 40_000, c_isn, s_isn, Some(2));
    assert_eq!(out.len(), 2, "both SYNs pass");
    // The client's SYN now offers the gateway's own scale: 1 MB needs a shift of 4.
    assert_eq!(out[0].seg.opts.wscale, Some(4));
    assert_eq!(gw.conns(), 1);
    let mut out = vec![];
    for k in 0..3u32 {
        let seq = s_isn.wrapping_add(1 + 1000 * k);
        let data = pkt(true, 40_000, ACK, seq, c_isn + 1, 1000);
        gw.on_packet(SimTime(10 + k as u64), Dir::ToClient, data, &mut out);
    }
    let acks: Vec<&Packet> = out.iter().filter(|p| p.src == CLIENT).collect();
    let fwd: Vec<&Packet> = out.iter().filter(|p| p.src == SERVER).collect();
    assert_eq!(acks.len(), 3, "one spoofed ACK per in-order segment");
    for (k, a) in acks.iter().enumerate() {
        assert_eq!(a.seg.ack, s_isn.wrapping_add(1 + 1000 * (k as u32 + 1)));
        assert_eq!(a.seg.seq, c_isn + 1, "in the client's sequence space");
        assert_eq!((a.seg.sport, a.seg.dport), (40_000, 5001));
        // free buffer in the server's view of the client's (rewritten) scale
        let free = 1_000_000 - 1000 * (k as u64 + 1);
        assert_eq!(a.seg.window as u64, free >> 4);
    }
    assert_eq!(fwd.len(), 3, "the data goes on toward the client");
    assert!(
        fwd[2].seg.seq < 1000,
        "the third segment starts past the wrap"
    );
    let key = (SERVER, 5001, CLIENT, 40_000);
    assert_eq!(gw.held_bytes(&key), Some(3000));
    // The client acknowledges two segments (its window field in its own scale, 2):
    // the gateway releases exactly those.
    let mut ack = pkt(false, 40_000, ACK, c_isn + 1, s_isn.wrapping_add(2001), 0);
    ack.seg.window = 1000; // 4000 B
    gw.on_packet(SimTime(20), Dir::ToServer, ack, &mut out);
    assert_eq!(gw.held_bytes(&key), Some(1000));
    assert_eq!(gw.stats.spoofed_acks, 3);
}

#[test]
fn rst_forgets_and_a_full_table_passes_new_connections_through() {
    let mut gw = Gateway::new(cfg(r#""max_conns":1"#), UP);
    open(&mut gw, 1, 100, 200, None);
    assert_eq!(gw.conns(), 1);
    let mut out = vec![];
    // a second connection finds the table full: untouched, unaccelerated
    gw.on_packet(
        SimTime(2),
        Dir::ToServer,
        syn(false, 2, 300, 0, None),
        &mut out,
    );
    gw.on_packet(
        SimTime(3),
        Dir::ToClient,
        syn(true, 2, 400, 301, None),
        &mut out,
    );
    let data = pkt(true, 2, ACK, 401, 301, 500);
    out.clear();
    gw.on_packet(SimTime(4), Dir::ToClient, data, &mut out);
    assert_eq!(out.len(), 1, "passed, no spoofed ACK");
    assert_eq!((out[0].src, out[0].seg.seq), (SERVER, 401));
    assert_eq!((gw.stats.conns_refused, gw.conns()), (1, 1));
    // a RST from either side forgets the first connection (and passes)
    out.clear();
    gw.on_packet(
        SimTime(5),
        Dir::ToClient,
        pkt(true, 1, RST, 201, 101, 0),
        &mut out,
    );
    assert_eq!((out.len(), gw.conns(), gw.stats.conns_closed), (1, 0, 1));
    // now there is room
    open(&mut gw, 3, 500, 600, None);
    assert_eq!((gw.conns(), gw.stats.conns_opened), (1, 2));
}

#[test]
fn idle_connections_are_reaped_but_not_while_they_hold_data() {
    let mut gw = Gateway::new(cfg(r#""idle_timeout":"10s""#), UP);
    open(&mut gw, 1, 100, 200, None);
    open(&mut gw, 2, 100, 200, None);
    let mut out = vec![];
    // connection 2 holds data the client has not acknowledged
    gw.on_packet(
        SimTime(2),
        Dir::ToClient,
        pkt(true, 2, ACK, 201, 101, 500),
        &mut out,
    );
    let t = gw.next_timer().expect("a reaping deadline");
    assert!(t <= SimTime(10_000_000_000), "{t}");
    gw.on_timer(SimTime(30_000_000_000), &mut out);
    assert_eq!(
        gw.conns(),
        1,
        "the idle empty one is gone, the loaded one stays"
    );
    assert_eq!(gw.stats.conns_closed, 1);
    assert!(gw.held_bytes(&(SERVER, 5001, CLIENT, 2)).is_some());
    // ... until its client has acknowledged nothing for `abandon_timeout` (300 s): the
    // satellite-side timer keeps firing meanwhile, and the held bytes are reported
    let mut t = 30_000_000_000;
    while gw.conns() == 1 {
        let next = gw.next_timer().expect("the satellite-side timer").0;
        assert!(next > t && next <= 304_000_000_000, "{next}");
        t = next;
        gw.on_timer(SimTime(t), &mut out);
    }
    assert!(
        t >= 300_000_000_002,
        "abandoned at {t} ns, not before 300 s of silence"
    );
    assert_eq!((gw.abandoned, gw.abandoned_bytes), (1, 500));
    assert_eq!(gw.stats.conns_closed, 2);
    assert_eq!(gw.next_timer(), None, "nothing left to wait for");
}

#[test]
fn a_closed_connection_is_forgotten_after_both_fins() {
    let mut gw = Gateway::new(cfg(""), UP);
    open(&mut gw, 9, 1000, 2000, None);
    let mut out = vec![];
    gw.on_packet(
        SimTime(2),
        Dir::ToClient,
        pkt(true, 9, ACK | FIN, 2001, 1001, 100),
        &mut out,
    );
    assert_eq!(gw.conns(), 1);
    // the client acknowledges data and FIN and closes its side at once
    gw.on_packet(
        SimTime(3),
        Dir::ToServer,
        pkt(false, 9, ACK | FIN, 1001, 2102, 0),
        &mut out,
    );
    assert_eq!((gw.conns(), gw.stats.conns_closed), (0, 1));
    assert!(
        out.iter()
            .any(|p| p.src == CLIENT && p.seg.flags & FIN != 0),
        "the FIN passes"
    );
}

#[test]
fn zero_window_and_zero_iw_are_refused() {
    let e = serde_json::from_str::<GatewaySpec>(r#"{"window":"0B"}"#)
        .unwrap()
        .resolve("node[0].gateway")
        .unwrap_err();
    assert_eq!(e.path, "node[0].gateway.window");
    let e = serde_json::from_str::<GatewaySpec>(r#"{"mode":"split","iw":0}"#)
        .unwrap()
        .resolve("node[0].gateway")
        .unwrap_err();
    assert_eq!(e.path, "node[0].gateway.iw");
}

#[test]
fn split_mode_resolves_its_leg_through_the_variant_table() {
    let spec = |t: &str| {
        serde_json::from_str::<GatewaySpec>(t)
            .unwrap()
            .resolve("node[0].gateway")
    };
    // a PEPsal operator's leg unless told: Hybla, Linux stack, SACK, IW 10, 200 ms RTO
    let c = spec(r#"{"mode":"split"}"#).unwrap();
    let s = c.split.unwrap();
    assert_eq!(
        (s.leg.stack.name(), s.leg.cc.name(), s.iw_segments),
        ("linux", "hybla", 10)
    );
    assert!(s.leg.sack);
    assert_eq!(s.leg.rto.min, SimDuration::from_millis(200));
    // the classic stack's defaults (NewReno, IW 1, no SACK) when asked for
    let s = spec(r#"{"mode":"split","tcp":"newreno","stack":"classic"}"#)
        .unwrap()
        .split
        .unwrap();
    assert_eq!(
        (s.leg.cc.name(), s.leg.recovery_name(), s.iw_segments),
        ("reno", "newreno", 1)
    );
    assert!(!s.leg.sack);
    // BBR implies the Linux stack, whose defaults apply
    let s = spec(r#"{"mode":"split","tcp":"bbr"}"#)
        .unwrap()
        .split
        .unwrap();
    assert_eq!(
        (s.leg.stack.name(), s.leg.cc.name(), s.iw_segments),
        ("linux", "bbr", 10)
    );
    assert!(s.leg.sack && s.leg.pacing);
    // a refusal names a key the gateway has
    let e = spec(r#"{"mode":"split","tcp":"bbr","stack":"classic"}"#).unwrap_err();
    assert_eq!(e.path, "node[0].gateway.stack");
    let e = spec(r#"{"mode":"split","tcp":"tahoe","stack":"linux"}"#).unwrap_err();
    assert_eq!(e.path, "node[0].gateway.stack");
    // the Peach family is not a split-mode variant; stack is a split-mode key
    assert!(serde_json::from_str::<GatewaySpec>(r#"{"mode":"split","tcp":"peach"}"#).is_err());
    let e = spec(r#"{"stack":"linux"}"#).unwrap_err();
    assert_eq!(e.path, "node[0].gateway.mode");
    // the gateway's min_rto applies to its leg
    let s = spec(r#"{"mode":"split","min_rto":"300ms"}"#)
        .unwrap()
        .split
        .unwrap();
    assert_eq!(s.leg.rto.min, SimDuration::from_millis(300));
}

/// A greedy server on connection `port`: sends in-order 1000 B segments while the
/// latest spoofed ACK's window allows; returns how many the gateway took.
fn fill(gw: &mut Gateway, port: u16, s_isn: u32, t: u64) -> u32 {
    let mut next = 1u32;
    // relative right edge the server was granted: the client's SYN-ACK granted 60 000 B
    // (its window field is not scaled)
    let mut edge = 1 + 60_000u32;
    let mut out = vec![];
    let mut taken = 0;
    while next + 1000 <= edge && taken < 10_000 {
        out.clear();
        let data = pkt(true, port, ACK, s_isn.wrapping_add(next), 101, 1000);
        gw.on_packet(SimTime(t + next as u64), Dir::ToClient, data, &mut out);
        for a in out
            .iter()
            .filter(|p| p.src == CLIENT && p.seg.flags & ACK != 0)
        {
            let ack = a.seg.ack.wrapping_sub(s_isn);
            // no scaling negotiated in these connections
            edge = edge.max(ack + a.seg.window as u32);
        }
        next += 1000;
        taken += 1;
    }
    taken
}

#[test]
fn spoofed_windows_never_promise_more_than_the_shared_memory() {
    let mut gw = Gateway::new(cfg(r#""memory":"200KB","buffer":"1MB""#), UP);
    let mut taken = 0;
    for port in 1..=4u16 {
        open(&mut gw, port, 100, 1000 * port as u32, None);
    }
    for port in 1..=4u16 {
        // nothing is acknowledged by the client (it is far away): the data stays held
        taken += fill(&mut gw, port, 1000 * port as u32, 10 * port as u64);
        let (_, reserved) = gw.shared_use().unwrap();
        assert!(reserved <= 200_000 + 60_000, "{reserved}");
    }
    let held: u64 = (1..=4u16)
        .map(|p| gw.held_bytes(&(SERVER, 5001, CLIENT, p)).unwrap())
        .sum();
    println!("taken {taken} held {held}");
    // every segment the server was allowed to send was taken, none dropped
    assert_eq!(gw.stats.dropped_buffer_full, 0);
    assert_eq!(held, taken as u64 * 1000);
    // and the memory (plus the clients' own 60 000 B SYN-ACK grants) bounds them all
    assert!(held <= 200_000 + 4 * 60_000);
    assert!(held >= 150_000, "the memory is used: {held}");
}

#[test]
fn sack_offered_by_the_client_is_granted_toward_it_and_stripped_toward_the_server() {
    let mut gw = Gateway::new(cfg(""), UP);
    let mut out = vec![];
    let mut s = syn(false, 7, 100, 0, None);
    s.seg.opts.sack_permitted = true;
    gw.on_packet(SimTime(0), Dir::ToServer, s, &mut out);
    let s = syn(true, 7, 1000, 101, None); // the server does not offer SACK
    let size = s.size;
    gw.on_packet(SimTime(1), Dir::ToClient, s, &mut out);
    let synack = &out[1];
    assert!(
        synack.seg.opts.sack_permitted,
        "the client may SACK to the gateway"
    );
    assert_eq!(synack.size, size + 4, "SACK-permitted takes 2 B, padded");
    // the client's FIN with a SACK block reaches the server without it
    out.clear();
    let mut fin = pkt(false, 7, ACK | FIN, 101, 1001, 0);
    fin.seg.opts.sack = Some(Box::new(crate::wire::SackBlocks::from_slice(&[(
        5000, 6000,
    )])));
    gw.on_packet(SimTime(2), Dir::ToServer, fin, &mut out);
    let f = out.iter().find(|p| p.seg.flags & FIN != 0).unwrap();
    assert!(f.seg.opts.sack.is_none());
    assert_eq!(f.size, 40);
}

/// Real downloads: the client opens, completes the handshake and sends a request; the
/// server answers. The handshake's last ACK and the request reach the server (the
/// request with the gateway's own ACK and window: the server's send window was opened
/// by spoofed ACKs), the data toward the client acknowledges the request, and the
/// spoofed ACKs carry the client's sequence number after the request.
#[test]
fn a_client_opened_connection_passes_the_handshake_and_the_clients_data() {
    let mut gw = Gateway::new(cfg(""), UP);
    open(&mut gw, 1, 100, 200, None);
    let mut out = vec![];
    gw.on_packet(
        SimTime(2),
        Dir::ToServer,
        pkt(false, 1, ACK, 101, 201, 0),
        &mut out,
    );
    assert_eq!(out.len(), 1, "the handshake's last ACK passes");
    assert_eq!(
        (out[0].dst, out[0].seg.ack, out[0].seg.len),
        (SERVER, 201, 0)
    );
    out.clear();
    // a second pure ACK (a window update) is the gateway's business: absorbed
    gw.on_packet(
        SimTime(3),
        Dir::ToServer,
        pkt(false, 1, ACK, 101, 201, 0),
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");
    gw.on_packet(
        SimTime(4),
        Dir::ToServer,
        pkt(false, 1, ACK, 101, 201, 80),
        &mut out,
    );
    assert_eq!(out.len(), 1, "the request passes");
    assert_eq!(
        (out[0].seg.seq, out[0].seg.len, out[0].seg.ack),
        (101, 80, 201)
    );
    out.clear();
    // the server acknowledges the request (passes), then answers with data
    gw.on_packet(
        SimTime(5),
        Dir::ToClient,
        pkt(true, 1, ACK, 201, 181, 0),
        &mut out,
    );
    assert_eq!(out.len(), 1);
    out.clear();
    gw.on_packet(
        SimTime(6),
        Dir::ToClient,
        pkt(true, 1, ACK, 201, 181, 1000),
        &mut out,
    );
    let ack = out.iter().find(|p| p.dst == SERVER).expect("a spoofed ACK");
    assert_eq!(
        (ack.seg.seq, ack.seg.ack),
        (181, 1201),
        "after the request, all data"
    );
    let data = out
        .iter()
        .find(|p| p.dst == CLIENT)
        .expect("data toward the client");
    assert_eq!((data.seg.seq, data.seg.ack, data.seg.len), (201, 181, 1000));
    out.clear();
    // more client data with an ACK older than what the gateway acknowledged: it reaches
    // the server acknowledging what the gateway did (a real server drops a segment
    // whose ACK is more than a window old), with the gateway's window
    let adv = gw.advertised(&(SERVER, 5001, CLIENT, 1)).expect("tracked");
    gw.on_packet(
        SimTime(7),
        Dir::ToServer,
        pkt(false, 1, ACK, 181, 201, 50),
        &mut out,
    );
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].seg.seq, out[0].seg.len, out[0].seg.ack),
        (181, 50, 1201)
    );
    assert_eq!(out[0].seg.window as u64, adv.min(65_535));
    assert_eq!(
        gw.held_bytes(&(SERVER, 5001, CLIENT, 1)),
        Some(1000),
        "not released"
    );
    assert_eq!(
        gw.stats.go_back_n, 0,
        "a data segment is not a duplicate ACK"
    );
}

/// Thousands of connections: the timer set and the eligible set keep each event cheap
/// and do what a pass over the table did — the fair share of a small link window goes
/// round robin in key order, every connection's data is sent once, and the table
/// empties by idle reaping.
#[test]
fn thousands_of_connections_share_the_link_in_round_robin_and_are_reaped() {
    let n = 2000u16;
    // 2000 handshakes from one client address at once: above the default per-source limit
    let mut gw = Gateway::new(
        cfg(r#""link_window":"10000B","idle_timeout":"10s","half_open_per_source":2000"#),
        UP,
    );
    for port in 1..=n {
        open(&mut gw, port, 100, 200, None);
    }
    assert_eq!(gw.conns(), n as usize);
    let mut out = vec![];
    let mut sent = vec![];
    for port in 1..=n {
        gw.on_packet(
            SimTime(10),
            Dir::ToClient,
            pkt(true, port, ACK, 201, 101, 1000),
            &mut out,
        );
        sent.extend(
            out.drain(..)
                .filter(|p| p.dst == CLIENT)
                .map(|p| p.seg.dport),
        );
    }
    // 10 000 B in flight at most: the first ten connections got their segment out
    assert_eq!(sent, (1..=10).collect::<Vec<u16>>());
    let mut rounds = 0;
    let mut acked = 0;
    while acked < n as usize {
        rounds += 1;
        let batch = std::mem::take(&mut sent);
        assert!(!batch.is_empty() && batch.len() <= 10, "{batch:?}");
        for port in batch {
            acked += 1;
            gw.on_packet(
                SimTime(20 + rounds),
                Dir::ToServer,
                pkt(false, port, ACK, 101, 1201, 0),
                &mut out,
            );
            sent.extend(
                out.drain(..)
                    .filter(|p| p.dst == CLIENT)
                    .map(|p| p.seg.dport),
            );
        }
        if rounds == 1 {
            // each ACK frees room for the next connection in key order
            assert_eq!(sent, (11..=20).collect::<Vec<u16>>());
        }
    }
    assert_eq!(rounds, 200);
    assert_eq!(gw.stats.sat_bytes_sent, n as u64 * 1000);
    assert_eq!(gw.stats.segments_resent, 0);
    assert_eq!(gw.shared_use(), Some((0, gw.shared_use().unwrap().1)));
    // all idle now: one wake-up reaps them all
    let t = gw.next_timer().expect("idle deadlines");
    assert!(t.0 >= 10_000_000_000 && t.0 <= 10_000_000_300, "{t}");
    gw.on_timer(SimTime(10_000_001_000), &mut out);
    assert_eq!((gw.conns(), gw.stats.conns_closed), (0, n as u64));
    assert_eq!(gw.next_timer(), None);
}

/// Segments the shared-mode pacer sends toward the client in `span_us` when every
/// wake-up comes `late_us` after the gateway's deadline (as a real packet loop's do),
/// with a catch-up of `catchup_us`; and the most it sent in one wake-up.
fn paced(catchup_us: u64, late_us: u64, span_us: u64) -> (usize, usize) {
    let mut c = cfg(r#""link_window":"1MB""#);
    c.pace_catchup = SimDuration(catchup_us * 1000);
    // 8 Mbit/s: a 1040 B packet (1000 B of data) every 1040 µs
    let up = Uplink {
        rate: Some(Rate(8_000_000)),
        bdp: 100_000,
    };
    let mut gw = Gateway::new(c, up);
    open(&mut gw, 1, 100, 1000, None);
    assert!(
        fill(&mut gw, 1, 1000, 10) >= 50,
        "enough held to send for the span"
    );
    let (mut sent, mut most) = (0, 0);
    let mut out = vec![];
    loop {
        let t = gw.next_timer().expect("the pacer's deadline") + SimDuration(late_us * 1000);
        if t.0 > span_us * 1000 {
            break;
        }
        out.clear();
        gw.on_timer(t, &mut out);
        let n = out
            .iter()
            .filter(|p| p.dst == CLIENT && p.seg.len > 0)
            .count();
        sent += n;
        most = most.max(n);
    }
    (sent, most)
}

/// A pacer woken late keeps to its rate with a catch-up, and loses the lateness on
/// every segment without one (the simulator's timers are never late: its default).
#[test]
fn a_late_pacer_keeps_its_rate_with_a_catch_up() {
    // 40 ms at 1040 µs a packet: 38 on schedule (the first went out with the data)
    assert_eq!(paced(0, 0, 40_000).0, 38);
    assert_eq!(
        paced(2_000, 0, 40_000).0,
        38,
        "on time, the catch-up changes nothing"
    );
    // woken 300 µs late each time: 40 ms / 1340 µs without a catch-up
    let (slow, _) = paced(0, 300, 40_000);
    assert_eq!(slow, 29);
    let (kept, most) = paced(2_000, 300, 40_000);
    assert!((37..=38).contains(&kept), "{kept}");
    assert_eq!(most, 1, "late by less than a packet: one at a time");
    // woken 5 ms late each time: at most the catch-up's worth at once (2 ms: one
    // on the schedule's packet, one more within the catch-up)
    let (_, burst) = paced(2_000, 5_000, 40_000);
    assert!((2..=3).contains(&burst), "{burst}");
}

/// `p` with the timestamps option (TSval, TSecr).
fn stamped(mut p: Packet, tsval: u32, tsecr: u32) -> Packet {
    p.seg.opts.timestamps = Some((tsval, tsecr));
    p.size = 40 + p.seg.opts.encoded_len() + p.seg.len;
    p
}

/// The spoofed ACKs' timestamps (RFC 7323) when both SYNs carry the option, or none.
fn spoofed_stamps(server_ts: bool) -> Vec<Option<(u32, u32)>> {
    let mut gw = Gateway::new(cfg(r#""buffer":"1MB","shared":false"#), UP);
    let (c_isn, s_isn) = (7_000u32, 90_000u32);
    let mut out = vec![];
    // the client's clock is about to wrap
    let c0 = u32::MAX - 1;
    gw.on_packet(
        SimTime(0),
        Dir::ToServer,
        stamped(syn(false, 40_000, c_isn, 0, Some(2)), c0, 0),
        &mut out,
    );
    let synack = syn(true, 40_000, s_isn, c_isn + 1, Some(2));
    let synack = if server_ts {
        stamped(synack, 5_000, c0)
    } else {
        synack
    };
    gw.on_packet(SimTime(1), Dir::ToClient, synack, &mut out);
    // the handshake's last ACK, one tick later (past the wrap)
    let ack = pkt(false, 40_000, ACK, c_isn + 1, s_isn + 1, 0);
    gw.on_packet(SimTime(2), Dir::ToServer, stamped(ack, 0, 5_000), &mut out);
    let data = |k: u32, tsval: u32| {
        stamped(
            pkt(true, 40_000, ACK, s_isn + 1 + 1000 * k, c_isn + 1, 1000),
            tsval,
            0,
        )
    };
    out.clear();
    gw.on_packet(SimTime(10), Dir::ToClient, data(0, 5_001), &mut out);
    gw.on_packet(SimTime(11), Dir::ToClient, data(1, 5_002), &mut out);
    // a client ACK with a newer clock, then a reordered one with an older clock
    let cack = |t: u32| {
        stamped(
            pkt(false, 40_000, ACK, c_isn + 1, s_isn + 1001, 0),
            t,
            5_001,
        )
    };
    gw.on_packet(SimTime(12), Dir::ToServer, cack(7), &mut out);
    gw.on_packet(SimTime(13), Dir::ToServer, cack(3), &mut out);
    // segment 3 before segment 2: a duplicate spoofed ACK
    gw.on_packet(SimTime(14), Dir::ToClient, data(3, 5_009), &mut out);
    out.iter()
        .filter(|p| p.src == CLIENT && p.seg.flags == ACK && p.seg.len == 0)
        .map(|p| p.seg.opts.timestamps)
        .collect()
}

#[test]
fn spoofed_acks_carry_timestamps_when_both_syns_had_them() {
    // RFC 7323 §3.2: once negotiated, every segment carries TSopt. TSval: the client's
    // newest (its clock wrapped: 0 is newer than 2^32 − 2; the reordered 3 is older than
    // 7); TSecr: the TSval of the server segment that advanced the acknowledgement — the
    // duplicate ACK for out-of-order data echoes the last in-order one, not its own.
    assert_eq!(
        spoofed_stamps(true),
        vec![Some((0, 5_001)), Some((0, 5_002)), Some((7, 5_002))]
    );
    // the server's SYN-ACK without the option: no timestamps at all
    assert_eq!(spoofed_stamps(false), vec![None, None, None]);
}

/// A client-opened connection whose SYNs both offer SACK (`sack`) or neither; the
/// server's data segments `ks` (1000 B each, segment k at relative sequence 1 + 1000 k)
/// arrive in that order. Returns what the gateway sent: the spoofed ACKs' (relative ACK,
/// SACK blocks relative) and the segments forwarded toward the client (k).
fn server_sends(
    shared: bool,
    sack: bool,
    ks: &[u32],
) -> (Gateway, Vec<(u32, Vec<(u32, u32)>)>, Vec<u32>) {
    let extra = format!(r#""buffer":"100KB","shared":{shared}"#);
    let mut gw = Gateway::new(cfg(&extra), UP);
    let (c_isn, s_isn) = (7_000u32, 90_000u32);
    let mut out = vec![];
    let mut c_syn = syn(false, 40_000, c_isn, 0, None);
    let mut s_syn = syn(true, 40_000, s_isn, c_isn + 1, None);
    for p in [&mut c_syn, &mut s_syn] {
        p.seg.opts.sack_permitted = sack;
        p.size = 40 + p.seg.opts.encoded_len();
    }
    gw.on_packet(SimTime(0), Dir::ToServer, c_syn, &mut out);
    gw.on_packet(SimTime(1), Dir::ToClient, s_syn, &mut out);
    let ack = pkt(false, 40_000, ACK, c_isn + 1, s_isn + 1, 0);
    gw.on_packet(SimTime(2), Dir::ToServer, ack, &mut out);
    out.clear();
    for (i, &k) in ks.iter().enumerate() {
        let data = pkt(true, 40_000, ACK, s_isn + 1 + 1000 * k, c_isn + 1, 1000);
        gw.on_packet(SimTime(10 + i as u64), Dir::ToClient, data, &mut out);
    }
    let rel = |w: u32| w.wrapping_sub(s_isn);
    let acks = out
        .iter()
        .filter(|p| p.src == CLIENT)
        .map(|p| {
            let blocks = p.seg.opts.sack.as_ref().map_or(vec![], |b| {
                b.blocks[..b.n as usize]
                    .iter()
                    .map(|&(l, r)| (rel(l), rel(r)))
                    .collect()
            });
            (rel(p.seg.ack), blocks)
        })
        .collect();
    let fwd = out
        .iter()
        .filter(|p| p.src == SERVER && p.seg.len > 0)
        .map(|p| (rel(p.seg.seq) - 1) / 1000)
        .collect();
    (gw, acks, fwd)
}

#[test]
fn out_of_order_server_data_is_kept_until_the_hole_is_filled() {
    // Segment 1 lost on the terrestrial path: 2 and 3 arrive first. A receiver keeps
    // them (and so does the gateway, within the window it promised): duplicate ACKs
    // for 1001, nothing forwarded beyond the hole, then one ACK for all four when 1
    // arrives, and 1, 2, 3 go on toward the client in order.
    for shared in [false, true] {
        let (gw, acks, fwd) = server_sends(shared, false, &[0, 2, 3, 1]);
        assert_eq!(
            acks,
            vec![
                (1001, vec![]),
                (1001, vec![]),
                (1001, vec![]),
                (4001, vec![])
            ],
            "shared {shared}"
        );
        if !shared {
            assert_eq!(fwd, vec![0, 1, 2, 3], "in order, after the hole");
        }
        assert_eq!(gw.stats.out_of_order_held, 2);
        assert_eq!(gw.stats.spoofed_acks, 2, "segments 0 and 1 (with 2 and 3)");
        let key = (SERVER, 5001, CLIENT, 40_000);
        assert_eq!(gw.held_bytes(&key), Some(4000));
    }
}

#[test]
fn duplicate_acks_carry_sack_blocks_when_both_syns_offered_sack() {
    // RFC 2018 §4: the first block holds the segment received last; then the others.
    let (_, acks, _) = server_sends(false, true, &[0, 2, 4, 5, 1]);
    assert_eq!(
        acks,
        vec![
            (1001, vec![]),
            (1001, vec![(2001, 3001)]),
            (1001, vec![(4001, 5001), (2001, 3001)]),
            (1001, vec![(4001, 6001), (2001, 3001)]),
            // 1 fills the first hole: 0..3 in order, 4 and 5 still beyond 3
            (3001, vec![(4001, 6001)]),
        ]
    );
    // without SACK on both SYNs: none
    let (_, acks, _) = server_sends(false, false, &[0, 2, 1]);
    assert!(acks.iter().all(|(_, b)| b.is_empty()), "{acks:?}");
}

#[test]
fn out_of_order_data_beyond_the_promised_window_or_the_buffer_is_not_kept() {
    // 100 KB of buffer, nothing acknowledged by the client: the first spoofed ACK
    // promises 99 KB beyond segment 0; segment 150 lies beyond that promise
    let (gw, acks, _) = server_sends(false, false, &[0, 150, 2, 2]);
    assert_eq!(gw.stats.out_of_order_held, 1, "only segment 2, and once");
    assert!(acks.iter().all(|(a, _)| *a == 1001));
}

#[test]
fn data_kept_behind_a_hole_goes_on_with_tsvals_that_never_decrease() {
    // PAWS at the client (RFC 7323 §5): segments 2 and 3 (TSvals 102, 103) waited
    // behind the hole that the server's resend of 1 (TSval 110) filled; sent after it
    // with their own TSvals, a Linux client dropped them as old duplicates at every
    // resend. They go on with 110; segment 0 keeps its own.
    let mut gw = Gateway::new(cfg(r#""buffer":"100KB","shared":false"#), UP);
    let (c_isn, s_isn) = (7_000u32, 90_000u32);
    let mut out = vec![];
    let c_syn = stamped(syn(false, 40_000, c_isn, 0, None), 50, 0);
    let s_syn = stamped(syn(true, 40_000, s_isn, c_isn + 1, None), 99, 50);
    gw.on_packet(SimTime(0), Dir::ToServer, c_syn, &mut out);
    gw.on_packet(SimTime(1), Dir::ToClient, s_syn, &mut out);
    let ack = stamped(pkt(false, 40_000, ACK, c_isn + 1, s_isn + 1, 0), 51, 99);
    gw.on_packet(SimTime(2), Dir::ToServer, ack, &mut out);
    out.clear();
    for (i, (k, tsval)) in [(0u32, 100u32), (2, 102), (3, 103), (1, 110)]
        .into_iter()
        .enumerate()
    {
        let data = pkt(true, 40_000, ACK, s_isn + 1 + 1000 * k, c_isn + 1, 1000);
        gw.on_packet(
            SimTime(10 + i as u64),
            Dir::ToClient,
            stamped(data, tsval, 51),
            &mut out,
        );
    }
    let fwd: Vec<(u32, Option<(u32, u32)>)> = out
        .iter()
        .filter(|p| p.src == SERVER && p.seg.len > 0)
        .map(|p| ((p.seg.seq - s_isn - 1) / 1000, p.seg.opts.timestamps))
        .collect();
    assert_eq!(
        fwd,
        vec![
            (0, Some((100, 51))),
            (1, Some((110, 51))),
            (2, Some((110, 51))),
            (3, Some((110, 51)))
        ]
    );
    // the spoofed ACK for all four echoes the resend's TSval (RFC 7323 §4.3)
    let last = out.iter().rfind(|p| p.src == CLIENT).unwrap();
    assert_eq!(last.seg.opts.timestamps, Some((51, 110)));
}

#[test]
fn stopping_leaves_a_rescaled_connection_whose_server_side_is_done_to_close_end_to_end() {
    // The gateway substituted its own window scale for the client's (2 -> 4): the server
    // reads the client's windows wrongly without it. Once the client has acknowledged
    // the server's last byte and FIN, the server has nothing more to send, so the
    // connection closes end to end: stopping must not reset it (a killed daemon's
    // drain reset servers whose clients had everything, issue 26).
    let mut gw = Gateway::new(cfg(r#""buffer":"1MB","shared":false"#), UP);
    let (c_isn, s_isn) = (7_000u32, 90_000u32);
    open(&mut gw, 40_000, c_isn, s_isn, Some(2));
    let mut out = vec![];
    let data = pkt(true, 40_000, ACK | FIN, s_isn + 1, c_isn + 1, 1000);
    gw.on_packet(SimTime(10), Dir::ToClient, data, &mut out);
    // before the client's ACK: the gateway holds the data, the server saw it acknowledged
    let mut probe = Gateway::new(cfg(r#""buffer":"1MB","shared":false"#), UP);
    open(&mut probe, 40_000, c_isn, s_isn, Some(2));
    probe.on_packet(
        SimTime(10),
        Dir::ToClient,
        pkt(true, 40_000, ACK | FIN, s_isn + 1, c_isn + 1, 1000),
        &mut vec![],
    );
    let mut rst = vec![];
    assert_eq!(probe.reset_all(&mut rst).0, 1, "held data: reset");
    // the client acknowledges the data and the FIN
    let ack = pkt(false, 40_000, ACK, c_isn + 1, s_isn + 1002, 0);
    gw.on_packet(SimTime(20), Dir::ToServer, ack, &mut out);
    let mut rst = vec![];
    assert_eq!(gw.reset_all(&mut rst), (0, 0));
    assert!(rst.is_empty(), "no RST to either end");
    // a rescaled connection whose server still sends does need the gateway
    let mut busy = Gateway::new(cfg(r#""buffer":"1MB","shared":false"#), UP);
    open(&mut busy, 40_001, c_isn, s_isn, Some(2));
    let d = pkt(true, 40_001, ACK, s_isn + 1, c_isn + 1, 1000);
    busy.on_packet(SimTime(10), Dir::ToClient, d, &mut out);
    let a = pkt(false, 40_001, ACK, c_isn + 1, s_isn + 1001, 0);
    busy.on_packet(SimTime(20), Dir::ToServer, a, &mut out);
    assert_eq!(busy.reset_all(&mut rst).0, 1, "rescaled, still sending");
}
