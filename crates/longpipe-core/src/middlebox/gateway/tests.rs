//! The gateway on real packets, fed by hand: identities, sequence wrap, window scaling,
//! the connection table.

use super::*;
use crate::net::packet::{Options, Segment, ACK, FIN};

const SERVER: [u8; 4] = [10, 0, 0, 1];
const CLIENT: [u8; 4] = [10, 0, 0, 3];

fn cfg(extra: &str) -> GatewayConfig {
    let spec: GatewaySpec = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
    spec.resolve("gw").unwrap()
}

fn pkt(from_server: bool, sport: u16, flags: u8, seq: u32, ack: u32, len: u32) -> Packet {
    let (src, dst, sp, dp) = if from_server {
        (SERVER, CLIENT, 5001, sport)
    } else {
        (CLIENT, SERVER, sport, 5001)
    };
    Packet::new(
        SimTime(0),
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

fn syn(from_server: bool, sport: u16, isn: u32, ack: u32, wscale: Option<u8>) -> Packet {
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
fn open(gw: &mut Gateway, sport: u16, c_isn: u32, s_isn: u32, ws: Option<u8>) -> Vec<Packet> {
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
    let mut gw = Gateway::new(cfg(r#""buffer":"1MB""#), 100_000);
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
    let mut gw = Gateway::new(cfg(r#""max_conns":1"#), 100_000);
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
    let mut gw = Gateway::new(cfg(r#""idle_timeout":"10s""#), 100_000);
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
}

#[test]
fn a_closed_connection_is_forgotten_after_both_fins() {
    let mut gw = Gateway::new(cfg(""), 100_000);
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
