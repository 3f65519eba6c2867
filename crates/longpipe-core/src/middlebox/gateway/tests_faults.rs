//! The gateway under faults (issue 26): a FIN the client dropped, RSTs and SYNs that
//! are not the peer's, a client that stops reading or vanishes, a dead satellite, a
//! SYN flood, losses with a small client window. Each test failed on the gateway
//! before this issue's fixes.
//!
//! Why one file of ~600 lines: each test drives one connection by hand through the same
//! small harness ([`Run`]) and reads the packets the gateway sent.

use super::tests::{cfg, open, pkt, syn, CLIENT, SERVER, UP};
use super::*;
use crate::net::packet::{FIN, RST};

const S_ISN: u32 = 200;
const C_ISN: u32 = 100;
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// One connection driven by hand: every packet the gateway sends is logged with its
/// time.
struct Run {
    gw: Gateway,
    port: u16,
    t: u64,
    log: Vec<(u64, Packet)>,
}

impl Run {
    /// A client-opened connection whose handshake is complete (port 1).
    fn new(extra: &str) -> Run {
        let mut gw = Gateway::new(cfg(extra), UP);
        open(&mut gw, 1, C_ISN, S_ISN, None);
        let mut r = Run {
            gw,
            port: 1,
            t: 2,
            log: vec![],
        };
        r.client(ACK, 1, 0, 60_000); // the handshake's last ACK
        r
    }

    fn feed(&mut self, dir: Dir, p: Packet) {
        let mut out = vec![];
        self.gw.on_packet(SimTime(self.t), dir, p, &mut out);
        self.log.extend(out.into_iter().map(|p| (self.t, p)));
    }

    /// A segment from the server: `rel` relative to its ISN (1 = the first byte).
    fn server(&mut self, flags: u8, rel: u32, len: u32) {
        let p = pkt(true, self.port, flags, S_ISN + rel, C_ISN + 1, len);
        self.feed(Dir::ToClient, p);
    }

    /// A segment from the client acknowledging `ack_rel` of the server's data, with
    /// window `wnd` (no scaling in these connections).
    fn client(&mut self, flags: u8, ack_rel: u32, len: u32, wnd: u16) {
        let mut p = pkt(false, self.port, flags, C_ISN + 1, S_ISN + ack_rel, len);
        p.seg.window = wnd;
        self.feed(Dir::ToServer, p);
    }

    /// Runs the gateway's timers until `until` ns.
    fn until(&mut self, until: u64) {
        while let Some(t) = self.gw.next_timer() {
            if t.0 > until {
                break;
            }
            self.t = self.t.max(t.0);
            let mut out = vec![];
            self.gw.on_timer(SimTime(self.t), &mut out);
            self.log.extend(out.into_iter().map(|p| (self.t, p)));
        }
        self.t = self.t.max(until);
    }

    fn at(&mut self, t: u64) -> &mut Run {
        self.until(t);
        self
    }

    /// Packets sent toward the client after `since` ns.
    fn to_client(&self, since: u64) -> Vec<&Packet> {
        self.log
            .iter()
            .filter(|(t, p)| *t >= since && p.dst == CLIENT)
            .map(|(_, p)| p)
            .collect()
    }

    fn to_server(&self, since: u64) -> Vec<&Packet> {
        self.log
            .iter()
            .filter(|(t, p)| *t >= since && p.dst == SERVER)
            .map(|(_, p)| p)
            .collect()
    }

    fn key(&self) -> ConnKey {
        (SERVER, 5001, CLIENT, self.port)
    }
}

#[test]
fn a_fin_the_client_trimmed_off_a_segment_is_resent_in_both_modes() {
    for extra in ["", r#""shared":false"#] {
        let mut r = Run::new(extra);
        r.t = 10 * MS;
        r.server(ACK | FIN, 1, 1000);
        // the client took the bytes, not the FIN (beyond its window)
        r.at(700 * MS).client(ACK, 1001, 0, 60_000);
        r.until(10 * S);
        let again = r
            .to_client(700 * MS)
            .iter()
            .filter(|p| p.seg.flags & FIN != 0)
            .count();
        assert!(again >= 1, "{extra}: the FIN is resent");
        // once the client has it, the gateway holds nothing
        r.client(ACK, 1002, 0, 60_000);
        assert_eq!(r.gw.held_bytes(&r.key()), Some(0), "{extra}");
    }
}

/// The spoofed ACKs toward the server that cover its FIN at relative `fin` (ack field
/// `fin + 1`), sent in the client's name after `since`.
fn fin_acks(r: &Run, since: u64, fin: u32) -> usize {
    r.to_server(since)
        .iter()
        .filter(|p| p.src == CLIENT && p.seg.ack == S_ISN + fin + 1)
        .count()
}

#[test]
fn the_servers_fin_is_acknowledged_in_the_clients_name_in_both_modes() {
    // issue 25: a server whose FIN waited for the client's ACK across the satellite
    // timed out on it; the gateway holding the FIN acknowledges it as it does data
    for extra in ["", r#""shared":false"#] {
        // data with the FIN
        let mut r = Run::new(extra);
        r.t = 10 * MS;
        r.server(ACK | FIN, 1, 1000);
        assert_eq!(fin_acks(&r, 10 * MS, 1001), 1, "{extra}: data+FIN at once");
        // a bare FIN after the data
        let mut r = Run::new(extra);
        r.t = 10 * MS;
        r.server(ACK, 1, 1000);
        assert_eq!(fin_acks(&r, 10 * MS, 1001), 0, "{extra}: no FIN yet");
        r.server(ACK | FIN, 1001, 0);
        assert_eq!(fin_acks(&r, 10 * MS, 1001), 1, "{extra}: bare FIN at once");
        // a FIN behind a hole: acknowledged only when the hole is filled
        let mut r = Run::new(extra);
        r.t = 10 * MS;
        r.server(ACK | FIN, 1001, 1000);
        assert_eq!(fin_acks(&r, 10 * MS, 2001), 0, "{extra}: FIN beyond a hole");
        r.server(ACK, 1, 1000);
        assert_eq!(fin_acks(&r, 10 * MS, 2001), 1, "{extra}: hole filled");
        // the client's own segments carry the same acknowledgement (never below it)
        r.at(100 * MS).client(ACK, 1001, 0, 60_000);
        assert!(
            r.to_server(100 * MS)
                .iter()
                .all(|p| p.seg.ack == S_ISN + 2002),
            "{extra}: a client ACK below the FIN is raised to it"
        );
    }
}

#[test]
fn a_fin_acknowledged_in_the_clients_name_is_resent_until_the_client_has_it() {
    for extra in ["", r#""shared":false"#] {
        let mut r = Run::new(extra);
        r.t = 10 * MS;
        r.server(ACK, 1, 1000);
        r.server(ACK | FIN, 1001, 0);
        // the client's copy of the FIN is lost on the satellite: the client
        // acknowledges the data only, again and again
        r.at(700 * MS).client(ACK, 1001, 0, 60_000);
        r.until(10 * S);
        let fins = r
            .to_client(700 * MS)
            .iter()
            .filter(|p| p.seg.flags & FIN != 0)
            .count();
        assert!(fins >= 1, "{extra}: the FIN is resent toward the client");
        assert_eq!(r.gw.conns(), 1, "{extra}: the FIN is still held");
        r.client(ACK, 1002, 0, 60_000);
        assert_eq!(r.gw.held_bytes(&r.key()), Some(0), "{extra}");
    }
}

#[test]
fn a_servers_fin_retransmission_is_answered_by_the_gateway_not_the_client() {
    let mut r = Run::new("");
    r.t = 10 * MS;
    r.server(ACK | FIN, 1, 1000);
    let to_client = r.to_client(0).len();
    // the spoofed ACK was lost on the ground: the server sends its FIN again
    r.at(300 * MS).server(ACK | FIN, 1, 1000);
    assert_eq!(fin_acks(&r, 300 * MS, 1001), 1, "acknowledged again");
    assert_eq!(
        r.to_client(0).len(),
        to_client,
        "nothing more crosses the satellite"
    );
    // after the client acknowledged the FIN, likewise (and its ACK passes)
    r.at(700 * MS).client(ACK, 1002, 0, 60_000);
    assert!(
        fin_acks(&r, 700 * MS, 1001) >= 1,
        "the client's ACK of the FIN passes"
    );
    r.at(1200 * MS).server(ACK | FIN, 1, 1000);
    assert_eq!(fin_acks(&r, 1200 * MS, 1001), 1);
    assert!(r.to_client(1200 * MS).is_empty());
}

#[test]
fn a_connection_given_up_counts_the_fin_it_acknowledged_and_never_delivered() {
    let mut r = Run::new(r#""abandon_timeout":"30s""#);
    r.t = 10 * MS;
    r.server(ACK, 1, 1000);
    r.server(ACK | FIN, 1001, 0);
    // the client acknowledges the data, then vanishes
    r.at(700 * MS).client(ACK, 1001, 0, 60_000);
    r.until(40 * S);
    assert_eq!(r.gw.conns(), 0);
    assert_eq!((r.gw.abandoned, r.gw.abandoned_bytes), (1, 0));
    assert_eq!(
        r.gw.faults.fins_undelivered, 1,
        "the FIN the server saw acknowledged"
    );
    let rst_c: Vec<_> = r
        .to_client(0)
        .into_iter()
        .filter(|p| p.seg.flags & RST != 0)
        .collect();
    assert_eq!(rst_c.len(), 1);
    assert_eq!(rst_c[0].seg.seq, S_ISN + 1001, "at the client's RCV.NXT");
}

/// A connection holding 1000 B for the client (not yet acknowledged by it).
fn holding(extra: &str) -> Run {
    let mut r = Run::new(extra);
    r.t = 10 * MS;
    r.server(ACK, 1, 1000);
    assert_eq!(r.gw.held_bytes(&r.key()), Some(1000));
    r
}

#[test]
fn a_blind_rst_toward_the_client_is_dropped_and_the_connection_kept() {
    let mut r = holding("");
    r.t = 20 * MS;
    let since = r.t;
    r.server(RST, 5_000_001, 0); // far outside any window
    assert_eq!(r.gw.conns(), 1);
    assert_eq!(r.gw.held_bytes(&r.key()), Some(1000));
    assert!(
        r.to_client(since).iter().all(|p| p.seg.flags & RST == 0),
        "not passed on"
    );
    // the transfer goes on
    r.client(ACK, 1001, 0, 60_000);
    assert_eq!(r.gw.held_bytes(&r.key()), Some(0));
}

#[test]
fn an_in_window_rst_from_the_server_gets_a_challenge_ack_and_an_exact_one_resets_the_client() {
    let mut r = holding("");
    r.t = 20 * MS;
    r.server(RST, 1501, 0); // inside the promised window, not the next byte
    assert_eq!(r.gw.conns(), 1);
    let ch = r.to_server(20 * MS);
    assert_eq!(ch.len(), 1, "RFC 5961 §3.2: a challenge ACK");
    assert_eq!(
        (ch[0].seg.flags, ch[0].seg.ack, ch[0].seg.seq),
        (ACK, S_ISN + 1001, C_ISN + 1)
    );
    assert!(r.to_client(20 * MS).is_empty());
    // the server answers with the exact one: the client gets a RST it accepts (at the
    // byte it expects next: it acknowledged none of the 1000 held), and the state goes
    r.t = 30 * MS;
    r.server(RST, 1001, 0);
    assert_eq!(r.gw.conns(), 0);
    let rst = r.to_client(30 * MS);
    assert_eq!(rst.len(), 1);
    assert_eq!(rst[0].seg.flags & RST, RST);
    assert_eq!(rst[0].seg.seq, S_ISN + 1, "the client's RCV.NXT");
}

#[test]
fn a_clients_rst_resets_only_at_the_clients_own_sequence_number() {
    let mut r = holding("");
    r.t = 20 * MS;
    let mut blind = pkt(false, 1, RST, C_ISN + 70_001, 0, 0);
    blind.seg.window = 0;
    r.feed(Dir::ToServer, blind);
    assert_eq!(r.gw.conns(), 1, "kept: the server judges that one");
    assert_eq!(r.to_server(20 * MS).len(), 1, "passed on");
    r.t = 30 * MS;
    r.feed(Dir::ToServer, pkt(false, 1, RST, C_ISN + 1, 0, 0));
    assert_eq!(r.gw.conns(), 0);
}

#[test]
fn a_syn_with_another_isn_does_not_replace_a_connection_holding_data() {
    let mut r = holding("");
    r.t = 20 * MS;
    r.feed(Dir::ToServer, syn(false, 1, 9_999, 0, None));
    assert_eq!(r.gw.held_bytes(&r.key()), Some(1000));
    // the spoofed ACKs still speak with the client's own sequence number
    r.t = 30 * MS;
    r.server(ACK, 1001, 1000);
    let acks: Vec<_> = r
        .to_server(30 * MS)
        .into_iter()
        .filter(|p| p.src == CLIENT)
        .collect();
    assert!(!acks.is_empty());
    assert!(acks.iter().all(|a| a.seg.seq == C_ISN + 1), "{acks:?}");
}

/// The client: acknowledges everything that reaches it `rtt` later, with window
/// `wnd` (0: it stopped reading and acknowledges nothing new), or (`alive` false)
/// nothing at all. Runs until `until`.
fn client_answers(r: &mut Run, from: u64, until: u64, rtt: u64, wnd: u16, alive: bool) {
    let mut seen = r.log.len();
    let mut pending: Vec<(u64, u32)> = vec![];
    let mut acked = 1u32;
    r.until(from);
    loop {
        // what the gateway sent since: answered (in order) rtt later
        for (t, p) in &r.log[seen..] {
            if p.dst == CLIENT && (p.seg.len > 0 || p.seg.flags & FIN != 0) && alive {
                let end = p.seg.seq.wrapping_sub(S_ISN) + p.seg.len;
                if wnd > 0 {
                    acked = acked.max(end);
                }
                pending.push((t + rtt, acked));
            }
        }
        seen = r.log.len();
        let next_ack = pending.iter().map(|x| x.0).min();
        let next_timer = r.gw.next_timer().map(|t| t.0);
        let next = match (next_ack, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(x) => x,
                None => break,
            },
        };
        if next > until {
            break;
        }
        if Some(next) == next_ack {
            let i = pending.iter().position(|x| x.0 == next).unwrap();
            let (t, a) = pending.remove(i);
            r.t = r.t.max(t);
            r.client(ACK, a, 0, wnd);
        } else {
            r.until(next);
        }
    }
    r.t = r.t.max(until);
}

/// A connection with `n` segments of 1000 B on their way to the client, who has
/// acknowledged none.
fn loaded(extra: &str, n: u32) -> Run {
    let mut r = Run::new(extra);
    r.t = 10 * MS;
    for k in 0..n {
        r.server(ACK, 1 + 1000 * k, 1000);
    }
    r
}

#[test]
fn a_zero_window_is_probed_with_backoff_not_flooded() {
    let mut r = loaded("", 20);
    // the client takes the first two segments and stops reading: window 0
    r.at(300 * MS).client(ACK, 2001, 0, 0);
    let since = r.t;
    client_answers(&mut r, since, 120 * S, 300 * MS, 0, true);
    let sent: Vec<u64> = r
        .log
        .iter()
        .filter(|(t, p)| *t > since && p.dst == CLIENT && p.seg.len > 0)
        .map(|(t, _)| *t)
        .collect();
    // a probe now and then, each interval at least the one before (RFC 1122
    // §4.2.2.17; Linux's tcp_probe0): a handful in two minutes, not the window every RTO
    assert!(
        !sent.is_empty() && sent.len() <= 12,
        "{} sent: {sent:?}",
        sent.len()
    );
    let gaps: Vec<u64> = sent.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "{gaps:?}");
    assert_eq!(r.gw.conns(), 1, "not given up before abandon_timeout");
}

#[test]
fn a_client_that_stops_reading_is_reset_on_both_sides_after_abandon_timeout() {
    let mut r = loaded(r#""abandon_timeout":"30s""#, 20);
    r.at(300 * MS).client(ACK, 2001, 0, 0);
    client_answers(&mut r, 300 * MS, 40 * S, 300 * MS, 0, true);
    assert_eq!(r.gw.conns(), 0);
    let rst_s: Vec<_> = r
        .to_server(0)
        .into_iter()
        .filter(|p| p.seg.flags & RST != 0)
        .collect();
    let rst_c: Vec<_> = r
        .to_client(0)
        .into_iter()
        .filter(|p| p.seg.flags & RST != 0)
        .collect();
    assert_eq!((rst_s.len(), rst_c.len()), (1, 1), "both sides reset");
    assert_eq!(rst_s[0].seg.seq, C_ISN + 1, "at the server's RCV.NXT");
    assert_eq!(rst_c[0].seg.seq, S_ISN + 2001, "at the client's RCV.NXT");
    // the 18 000 B the server saw acknowledged and the client never got
    assert_eq!((r.gw.abandoned, r.gw.abandoned_bytes), (1, 18_000));
}

#[test]
fn a_vanished_client_gets_retransmissions_with_backoff_then_both_sides_reset() {
    for (extra, most) in [
        (r#""abandon_timeout":"30s""#, 8),
        (r#""abandon_timeout":"30s","shared":false"#, 6 * 20),
    ] {
        let mut r = loaded(extra, 20);
        let sent_first = r.to_client(0).iter().filter(|p| p.seg.len > 0).count();
        assert_eq!(sent_first, 20, "{extra}");
        client_answers(&mut r, 10 * MS, 40 * S, 300 * MS, 60_000, false);
        // RFC 6298 §5.5: the timer doubles (at 1, 3, 7, 15 and 31 s)
        let resent = r
            .log
            .iter()
            .filter(|(t, p)| *t > 10 * MS && p.dst == CLIENT && p.seg.len > 0)
            .count();
        assert!(resent <= most, "{extra}: {resent} resent into a dead link");
        assert_eq!(r.gw.conns(), 0, "{extra}");
        let rsts = r.log.iter().filter(|(_, p)| p.seg.flags & RST != 0).count();
        assert_eq!(rsts, 2, "{extra}: both sides reset");
        assert_eq!(r.gw.abandoned_bytes, 20_000, "{extra}");
    }
}

#[test]
fn acknowledged_and_undelivered_is_exact_when_the_client_acks_part_of_a_segment() {
    let mut r = loaded("", 2);
    r.at(300 * MS).client(ACK, 501, 0, 60_000);
    assert_eq!(
        r.gw.held_totals().1,
        1500,
        "the server got 2000 B acknowledged"
    );
}

#[test]
fn a_syn_flood_neither_fills_the_table_nor_keeps_real_connections_out() {
    let mut gw = Gateway::new(cfg(r#""max_conns":1000"#), UP);
    let mut out = vec![];
    for i in 0..5000u32 {
        let mut s = syn(false, (i % 60_000) as u16 + 1, i, 0, None);
        s.src = [10, 8, (i >> 8) as u8, i as u8];
        gw.on_packet(SimTime(i as u64 * 1000), Dir::ToServer, s, &mut out);
    }
    assert_eq!(out.len(), 5000, "every SYN passes");
    assert_eq!(gw.conns(), 0, "none is a connection before its SYN-ACK");
    assert_eq!(gw.half_open(), 4096, "max_half_open");
    assert_eq!(gw.handshake_counters().refused, 5000 - 4096);
    // a real connection, later, is accelerated
    let t = 4 * S;
    let mut out = vec![];
    gw.on_packet(
        SimTime(t),
        Dir::ToServer,
        syn(false, 40_000, 7, 0, None),
        &mut out,
    );
    gw.on_packet(
        SimTime(t + 1),
        Dir::ToClient,
        syn(true, 40_000, 70, 8, None),
        &mut out,
    );
    gw.on_packet(
        SimTime(t + 2),
        Dir::ToServer,
        pkt(false, 40_000, ACK, 8, 71, 0),
        &mut out,
    );
    out.clear();
    gw.on_packet(
        SimTime(t + 3),
        Dir::ToClient,
        pkt(true, 40_000, ACK, 71, 8, 1000),
        &mut out,
    );
    assert!(
        out.iter().any(|p| p.src == CLIENT && p.seg.ack == 1071),
        "spoofed: {out:?}"
    );
    assert_eq!(gw.conns(), 1);
}

#[test]
fn one_client_address_gets_at_most_half_open_per_source_handshakes() {
    let mut gw = Gateway::new(cfg(""), UP);
    let mut out = vec![];
    for i in 0..1100u32 {
        let s = syn(false, 2000 + i as u16, i, 0, None);
        gw.on_packet(SimTime(10 * MS), Dir::ToServer, s, &mut out);
    }
    assert_eq!(gw.half_open_from(CLIENT), 1024);
    let mut other = syn(false, 7, 1, 0, None);
    other.src = [10, 0, 0, 4];
    gw.on_packet(SimTime(10 * MS), Dir::ToServer, other, &mut out);
    assert_eq!(gw.half_open(), 1025, "another address still gets one");
}

#[test]
fn a_handshake_that_never_completes_is_forgotten_fast() {
    let mut gw = Gateway::new(cfg(""), UP);
    let mut out = vec![];
    // SYNs that servers answer, from clients that never acknowledge the SYN-ACK
    for p in 1..=100u16 {
        gw.on_packet(
            SimTime(0),
            Dir::ToServer,
            syn(false, p, 100, 0, None),
            &mut out,
        );
        gw.on_packet(
            SimTime(MS),
            Dir::ToClient,
            syn(true, p, 200, 101, None),
            &mut out,
        );
    }
    assert_eq!((gw.conns(), gw.half_open()), (100, 100), "embryonic");
    // no timer for them (the simulator's events stay those of a gateway without the
    // table): forgotten when a packet passes or the daemon asks, 3 s after their answer
    gw.housekeeping(SimTime(3 * S));
    assert_eq!(gw.conns(), 100, "not before half_open_timeout");
    gw.housekeeping(SimTime(3 * S + MS));
    assert_eq!((gw.conns(), gw.half_open()), (0, 0));
    assert_eq!(gw.handshake_counters().expired, 100);
    // a SYN that nobody answers: forgotten on the next packet after 3 s
    gw.on_packet(
        SimTime(4 * S),
        Dir::ToServer,
        syn(false, 500, 1, 0, None),
        &mut out,
    );
    assert_eq!(gw.half_open(), 1);
    gw.on_packet(
        SimTime(8 * S),
        Dir::ToServer,
        syn(false, 501, 1, 0, None),
        &mut out,
    );
    assert_eq!(gw.half_open(), 1, "the first forgotten, the second tracked");
    assert_eq!(gw.handshake_counters().expired, 101);
}
