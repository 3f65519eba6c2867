//! A two-way TCP connection: a [`Sender`] half for our data and a [`Receiver`] half for
//! the peer's, behind one handshake, each segment carrying both (RFC 9293 §3.10).
//!
//! The halves are unchanged; this composition only routes and merges:
//! - an arriving segment's data (sequence number, payload, FIN) goes to the receiving
//!   half, its acknowledgement (ACK, window, SACK, timestamp echo, ECE) to the sending
//!   half, which sees the FIN as one byte of data (so that it is never a duplicate ACK,
//!   RFC 5681 §2 (b), (c)) and does not answer it itself;
//! - every segment the sending half emits carries the receiving half's acknowledgement
//!   ([`Receiver::ack_fields`]: a data segment acknowledges everything received, and
//!   stops the delayed-ACK timer); the receiving half's pure ACKs go out only when the
//!   sending half sent nothing in the same step, with our sequence number (SND.NXT);
//! - the handshake: the active side's SYN is the sending half's, offering the receiving
//!   half's window and window scale; the SYN-ACK teaches the receiving half the peer's
//!   sequence space ([`Receiver::accept_synack`]) and establishes the sending half. The
//!   passive side's receiving half answers the SYN with the SYN-ACK (and a repeated SYN
//!   with it again); its sending half opens too, so that its SYN timer times the
//!   SYN-ACK (a SYN it would send goes out as the receiving half's SYN-ACK,
//!   RFC 6298 §5 and RFC 9293 §3.8.1), and it is established by the first segment that
//!   acknowledges the SYN-ACK, which it sees as the SYN-ACK it never received: the
//!   peer's SYN options and that segment's window. It then takes its RTT sample from
//!   the SYN-ACK to that ACK, and after a repeated SYN-ACK starts from one segment
//!   (RFC 6298 §5.7), as Linux's passive open does;
//! - our FIN is the sending half's ([`Duplex::close`]); the peer's FIN closes only its
//!   direction ([`Receiver::set_half`]). The connection is closed when both FINs are
//!   acknowledged ([`Duplex::closed`]); TIME-WAIT is not modelled.
//! - restart after idle ([`Duplex::set_idle_restart`]): an application that writes
//!   after more than one RTO without sending, with nothing in flight, finds cwnd cut to
//!   the restart window min(IW, cwnd) (RFC 5681 §4.1, the classic stack), or halved
//!   once per RTO of idleness down to it, with ssthresh kept at least 3/4 of the old
//!   cwnd (Linux `tcp_cwnd_restart`, `tcp_slow_start_after_idle` = 1, its default; not
//!   for a control with its own `cong_control`, BBR). The congestion control is not
//!   told (Linux's CA_EVENT_TX_START, with which CUBIC moves its epoch, has no hook
//!   here yet).
//!
//! Not modelled: simultaneous open, RST, urgent data.
//!
//! Why one file of ~670 lines: about 310 of code and 360 of tests, which drive two
//! endpoints over a scripted link (handshake, piggybacked ACKs, close, loss, idle
//! restart, a slow reader).

use super::receiver::{AckFields, Receiver};
use super::seg::{Seg, ACK, ECE, FIN, SYN};
use super::sender::{Sender, SenderState};
use crate::time::SimTime;

pub struct Duplex {
    pub tx: Sender,
    pub rx: Receiver,
    /// Opened by the peer's SYN (a server) rather than by our own.
    passive: bool,
    /// Passive: the peer's SYN, until the handshake completes.
    peer_syn: Option<Seg>,
    /// Active: the peer's SYN-ACK has taught the receiving half its sequence space.
    synack_seen: bool,
    /// Passive: ECE when our SYN-ACK agreed to ECN (RFC 3168 §6.1.1).
    synack_ece: u8,
    /// Restart after idle: None (off), or whether Linux's rule applies.
    idle_restart: Option<bool>,
    /// When our last data segment (or FIN) left.
    last_send: SimTime,
    rx_out: Vec<Seg>,
    tx_out: Vec<Seg>,
}

impl Duplex {
    /// The side that opens the connection (its SYN at [`Duplex::start`]).
    pub fn active(tx: Sender, mut rx: Receiver) -> Self {
        rx.set_half();
        Duplex {
            tx,
            rx,
            passive: false,
            peer_syn: None,
            synack_seen: false,
            synack_ece: 0,
            idle_restart: None,
            last_send: SimTime::ZERO,
            rx_out: Vec::new(),
            tx_out: Vec::new(),
        }
    }

    /// The side that waits for the peer's SYN.
    pub fn passive(tx: Sender, mut rx: Receiver) -> Self {
        rx.set_half();
        Duplex {
            passive: true,
            ..Duplex::active(tx, rx)
        }
    }

    /// Opens the connection (the active side): our SYN.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        if !self.passive {
            self.tx.start(now, &mut self.tx_out);
            self.finish(now, out);
        }
    }

    /// Both halves can carry data.
    pub fn established(&self) -> bool {
        matches!(
            self.tx.state(),
            SenderState::Established | SenderState::Done
        ) && self.rx.established()
    }

    /// Both directions closed and acknowledged.
    pub fn closed(&self) -> bool {
        self.tx.state() == SenderState::Done && self.rx.fin_received()
    }

    /// The acknowledgement part of `seg` for the sending half: no FIN (the receiving
    /// half's), which counts as a byte of data so that the segment is no duplicate ACK.
    fn ack_view(seg: &Seg) -> Seg {
        let mut v = seg.clone();
        if v.flags & FIN != 0 {
            v.flags &= !FIN;
            v.len += 1;
        }
        v
    }

    pub fn on_segment(&mut self, now: SimTime, seg: &Seg, out: &mut Vec<Seg>) {
        if seg.flags & SYN != 0 {
            self.on_syn(now, seg);
            self.finish(now, out);
            return;
        }
        if self.passive && self.peer_syn.is_some() && self.tx.state() == SenderState::SynSent {
            // the handshake's last ACK (or data carrying it)
            self.rx.on_segment(now, seg, &mut self.rx_out);
            if seg.flags & ACK != 0 && seg.ack == 1 {
                let syn = self.peer_syn.take().expect("checked");
                let synack = Seg {
                    flags: SYN | ACK | self.synack_ece,
                    seq: syn.seq,
                    ack: 1,
                    wnd: seg.wnd,
                    syn_opts: syn.syn_opts,
                    ts: syn.ts.and(seg.ts.or(syn.ts)),
                    ..Default::default()
                };
                let mut hs = Vec::new();
                self.tx.on_segment(now, &synack, &mut hs);
                // its handshake ACK is ours to drop: the peer's SYN-ACK never existed
                self.tx_out
                    .extend(hs.into_iter().filter(|s| s.len > 0 || s.flags & FIN != 0));
            }
            self.finish(now, out);
            return;
        }
        if !self.established() && !self.passive {
            return; // before the SYN-ACK: an old segment of an earlier connection
        }
        if self.passive && self.peer_syn.is_none() && self.tx.state() == SenderState::Closed {
            return; // no SYN yet
        }
        self.rx.on_segment(now, seg, &mut self.rx_out);
        self.tx
            .on_segment(now, &Self::ack_view(seg), &mut self.tx_out);
        self.finish(now, out);
    }

    fn on_syn(&mut self, now: SimTime, seg: &Seg) {
        if self.passive {
            if seg.flags & ACK != 0 {
                return; // a SYN-ACK for a side that opened nothing
            }
            if self.peer_syn.is_none() && self.tx.state() == SenderState::Closed {
                self.peer_syn = Some(seg.clone());
                // the sending half's SYN timer times our SYN-ACK; its SYN never leaves
                let mut syn = Vec::new();
                self.tx.start(now, &mut syn);
            }
            // the SYN-ACK (again, for a repeated SYN)
            self.rx.on_segment(now, seg, &mut self.rx_out);
            self.synack_ece = self.rx_out.last().map_or(0, |s| s.flags) & ECE;
            return;
        }
        if seg.flags & ACK == 0 || seg.ack != 1 {
            return; // not an answer to our SYN
        }
        if !self.synack_seen {
            self.synack_seen = true;
            self.rx.accept_synack(seg);
        }
        self.tx.on_segment(now, seg, &mut self.tx_out);
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        match (self.tx.next_timer(), self.rx.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        if self.rx.next_timer().is_some_and(|t| t <= now) {
            self.rx.on_timer(now, &mut self.rx_out);
        }
        if self.tx.next_timer().is_some_and(|t| t <= now) {
            self.tx.on_timer(now, &mut self.tx_out);
        }
        self.finish(now, out);
    }

    /// Cut cwnd when the application writes after an idle period (`linux`: Linux's
    /// rule, else RFC 5681 §4.1's).
    pub fn set_idle_restart(&mut self, linux: bool) {
        self.idle_restart = Some(linux);
    }

    /// RFC 5681 §4.1 / Linux `tcp_cwnd_restart`, before new data is written.
    fn restart_if_idle(&mut self, now: SimTime) {
        let Some(linux) = self.idle_restart else {
            return;
        };
        let tx = &mut self.tx.tx;
        if tx.state != SenderState::Established || tx.snd_una != tx.snd_max {
            return;
        }
        let rto = tx.rtt.rto();
        let idle = now.saturating_sub(self.last_send);
        if idle <= rto {
            return;
        }
        let st = &mut tx.st;
        let restart = tx.cfg.iw_bytes.min(st.cwnd);
        if linux {
            // tcp_current_ssthresh: max(ssthresh, 3/4 cwnd)
            st.ssthresh = st.ssthresh.max(st.cwnd / 4 * 3);
            let mut cwnd = st.cwnd;
            let mut left = idle.0 as i128;
            loop {
                left -= rto.0 as i128;
                if left <= 0 || cwnd <= restart {
                    break;
                }
                cwnd >>= 1;
            }
            st.cwnd = cwnd.max(restart);
        } else {
            st.cwnd = restart;
        }
    }

    /// The application writes `bytes` more.
    pub fn write(&mut self, now: SimTime, bytes: u64, out: &mut Vec<Seg>) {
        self.restart_if_idle(now);
        self.tx.push_data(now, bytes, &mut self.tx_out);
        self.finish(now, out);
    }

    /// The application closes our direction: a FIN after the last byte written.
    pub fn close(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        self.tx.close(now, &mut self.tx_out);
        self.finish(now, out);
    }

    /// Writes without end (`on`), or stops: what has not been sent is dropped from the
    /// send buffer. (Reaches into the sending half's [`super::tx::Tx`]: the end of
    /// the data the application has handed over.)
    pub fn set_unlimited(&mut self, now: SimTime, on: bool, out: &mut Vec<Seg>) {
        let tx = &mut self.tx.tx;
        if tx.fin_seq.is_some() {
            return;
        }
        if on {
            self.restart_if_idle(now);
            let tx = &mut self.tx.tx;
            let add = (u64::MAX / 4).saturating_sub(tx.avail_end);
            self.tx.push_data(now, add, &mut self.tx_out);
        } else {
            tx.avail_end = tx.avail_end.min(tx.snd_max.max(1));
        }
        self.finish(now, out);
    }

    /// Stamps what the halves emitted in this step and moves it to `out`.
    fn finish(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        if self.tx_out.is_empty() {
            for mut s in self.rx_out.drain(..) {
                if s.flags & SYN == 0 {
                    s.seq = self.tx.tx.snd_nxt;
                }
                out.push(s);
            }
            return;
        }
        // a pure ACK of the receiving half in this step lends its fields (D-SACK
        // included) to our first segment; the others take them afresh
        let mut lent: Option<AckFields> = None;
        for s in self.rx_out.drain(..) {
            if s.flags & SYN != 0 {
                out.push(s);
            } else {
                lent = Some(AckFields {
                    ack: s.ack,
                    wnd: s.wnd,
                    sack: s.sack,
                    ts_echo: s.ts.map(|t| t.1),
                    flags: s.flags & ECE,
                });
            }
        }
        for mut s in std::mem::take(&mut self.tx_out) {
            if s.len > 0 || s.flags & FIN != 0 {
                self.last_send = now;
            }
            if s.flags & SYN != 0 {
                if self.passive {
                    // the SYN timer fired: our SYN-ACK again
                    out.push(self.rx.synack(now));
                    continue;
                }
                // our SYN offers the receiving half's window and scale
                s.wnd = self.rx.syn_window();
                if let Some(o) = s.syn_opts.as_mut() {
                    o.1 = self.rx.wscale;
                }
                out.push(s);
                continue;
            }
            let f = match lent.take() {
                Some(f) => f,
                None => self.rx.ack_fields(),
            };
            s.flags |= ACK | f.flags;
            s.ack = f.ack;
            s.wnd = f.wnd;
            s.sack = f.sack;
            if let (Some((v, _)), Some(e)) = (s.ts, f.ts_echo) {
                s.ts = Some((v, e));
            }
            out.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::Packet;
    use crate::tcp::cc::reno::Reno;
    use crate::tcp::endpoint::{Addrs, Endpoint, Side};
    use crate::tcp::profile::TcpProfile;
    use crate::tcp::rtt::RtoBounds;
    use crate::time::SimDuration;

    const MS: u64 = 1_000_000;

    fn halves(buffer: u64) -> (Sender, Receiver) {
        let mut p = TcpProfile::classic_newreno(1000);
        p.iw_bytes = 4000;
        p.rto = RtoBounds {
            initial: SimDuration::from_secs(1),
            min: SimDuration::from_secs(1),
            max: SimDuration::from_secs(60),
        };
        p.sack = true;
        p.rwnd = buffer;
        p.delayed_ack = true;
        p.delayed_ack_timeout = SimDuration::from_millis(200);
        let tx = Sender::new_streaming(p, Box::new(Reno));
        let rx = Receiver::new(p, None);
        (tx, rx)
    }

    /// A client and a server 50 ms apart (one way), and what crossed between them.
    struct Pair {
        ep: [Endpoint; 2],
        now: SimTime,
        /// (arrival time, to endpoint, packet)
        wire: Vec<(SimTime, usize, Packet)>,
        log: Vec<(SimTime, usize, Packet)>,
        /// Drop the n-th packet sent by the server (0-based), if set.
        drop_server: Option<usize>,
        server_sent: usize,
    }

    impl Pair {
        fn new(client_buffer: u64) -> Pair {
            let a = [10, 0, 0, 1];
            let b = [10, 0, 0, 2];
            let (ctx, crx) = halves(client_buffer);
            let (stx, srx) = halves(100_000);
            let c = Endpoint::new(
                Side::Duplex(Box::new(Duplex::active(ctx, crx))),
                Addrs {
                    local: a,
                    local_port: 40000,
                    remote: b,
                    remote_port: 80,
                },
                1234,
                Some(SimTime(0)),
            );
            let s = Endpoint::new(
                Side::Duplex(Box::new(Duplex::passive(stx, srx))),
                Addrs {
                    local: b,
                    local_port: 80,
                    remote: a,
                    remote_port: 40000,
                },
                987_654,
                None,
            );
            let mut p = Pair {
                ep: [c, s],
                now: SimTime(0),
                wire: vec![],
                log: vec![],
                drop_server: None,
                server_sent: 0,
            };
            let mut out = vec![];
            p.ep[0].on_timeout(SimTime(0), &mut out);
            p.send(0, out);
            p
        }

        fn send(&mut self, from: usize, pkts: Vec<Packet>) {
            for pk in pkts {
                self.log.push((self.now, from, pk.clone()));
                if from == 1 {
                    self.server_sent += 1;
                    if self.drop_server == Some(self.server_sent - 1) {
                        continue;
                    }
                }
                self.wire
                    .push((self.now + SimDuration(50 * MS), 1 - from, pk));
            }
        }

        /// Runs packets and timers up to `until`; `app` runs after each step.
        fn run(&mut self, until: SimTime, app: &mut dyn FnMut(&mut Pair)) {
            loop {
                let next_pkt = self.wire.iter().map(|w| w.0).min();
                let next_tmr = (0..2).filter_map(|i| self.ep[i].next_timeout()).min();
                let t = match (next_pkt, next_tmr) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => match a.or(b) {
                        Some(t) => t,
                        None => break,
                    },
                };
                if t > until {
                    break;
                }
                self.now = t;
                if next_pkt == Some(t) {
                    let i = self.wire.iter().position(|w| w.0 == t).unwrap();
                    let (_, to, pk) = self.wire.remove(i);
                    let mut out = vec![];
                    self.ep[to].on_packet(t, &pk, &mut out);
                    self.send(to, out);
                } else {
                    for i in 0..2 {
                        if self.ep[i].next_timeout().is_some_and(|x| x <= t) {
                            let mut out = vec![];
                            self.ep[i].on_timeout(t, &mut out);
                            self.send(i, out);
                        }
                    }
                }
                app(self);
            }
            self.now = until;
        }

        fn d(&self, i: usize) -> &Duplex {
            self.ep[i].duplex().unwrap()
        }

        fn act(&mut self, i: usize, f: impl FnOnce(&mut Duplex, SimTime, &mut Vec<Seg>)) {
            let now = self.now;
            let mut out = vec![];
            self.ep[i].with_duplex(&mut out, |d, segs| f(d, now, segs));
            self.send(i, out);
        }
    }

    #[test]
    fn one_handshake_opened_by_the_client_with_the_receiving_halves_windows() {
        let mut p = Pair::new(1 << 20);
        p.run(SimTime(500 * MS), &mut |_| {});
        assert!(p.d(0).established() && p.d(1).established());
        let syn = &p.log[0].2.seg;
        // the client's SYN offers its receive buffer's scale (1 MiB: shift 5)
        assert_eq!(
            (syn.flags, syn.opts.wscale, syn.window),
            (SYN, Some(5), 65_535)
        );
        let synack = &p.log[1].2.seg;
        assert_eq!(synack.flags, SYN | ACK);
        assert_eq!((synack.opts.wscale, synack.window), (Some(1), 65_535));
        // three segments: SYN, SYN-ACK, ACK; nothing else
        assert_eq!(
            p.log.len(),
            3,
            "{:?}",
            p.log.iter().map(|l| l.2.seg.flags).collect::<Vec<_>>()
        );
        assert_eq!(p.log[2].2.seg.flags, ACK);
        // the server's sending half sampled the RTT from its SYN-ACK to that ACK
        assert_eq!(p.d(1).tx.tx.rtt.srtt, Some(SimDuration(100 * MS)));
        // and sees the client's scaled window: the whole 1 MiB buffer
        assert_eq!(p.d(1).tx.tx.peer_wnd, (1 << 20) >> 5 << 5);
    }

    #[test]
    fn a_request_and_its_response_with_acks_on_the_data() {
        let mut p = Pair::new(200_000);
        p.run(SimTime(150 * MS), &mut |_| {});
        p.act(0, |d, now, segs| d.write(now, 328, segs));
        let mut answered = false;
        p.run(SimTime(3_000 * MS), &mut |p| {
            if !answered && p.d(1).rx.delivered() == 328 {
                answered = true;
                p.act(1, |d, now, segs| d.write(now, 10_000, segs));
            }
        });
        assert_eq!(p.d(0).rx.delivered(), 10_000);
        // the response's first segment acknowledges the request: no pure ACK for it
        let srv: Vec<_> = p
            .log
            .iter()
            .filter(|l| l.1 == 1)
            .map(|l| &l.2.seg)
            .collect();
        let first_data = srv.iter().find(|s| s.len > 0).unwrap();
        let req_end = p
            .log
            .iter()
            .find(|l| l.1 == 0 && l.2.seg.len == 328)
            .unwrap()
            .2
            .seg
            .seq
            .wrapping_add(328);
        assert_eq!(first_data.ack, req_end, "piggybacked");
        let pure_before = srv
            .iter()
            .take_while(|s| s.len == 0)
            .filter(|s| s.flags == ACK)
            .count();
        assert_eq!(
            pure_before, 0,
            "the delayed ACK was carried by the response"
        );
        // the client's ACKs of the response carry its own sequence number after the request
        let c_acks: Vec<_> = p
            .log
            .iter()
            .filter(|l| l.1 == 0 && l.2.seg.len == 0 && l.0 > SimTime(300 * MS))
            .collect();
        assert!(!c_acks.is_empty());
        assert!(c_acks.iter().all(|l| l.2.seg.seq == req_end));
    }

    #[test]
    fn both_directions_close_and_a_lost_response_segment_is_repaired() {
        let mut p = Pair::new(200_000);
        p.drop_server = Some(3); // SYN-ACK, then the 2nd response segment (one per MSS)
        p.run(SimTime(150 * MS), &mut |_| {});
        p.act(0, |d, now, segs| d.write(now, 100, segs));
        let mut answered = false;
        p.run(SimTime(10_000 * MS), &mut |p| {
            if !answered && p.d(1).rx.delivered() == 100 {
                answered = true;
                p.act(1, |d, now, segs| d.write(now, 20_000, segs));
            }
        });
        assert_eq!(p.d(0).rx.delivered(), 20_000);
        assert!(p.d(1).tx.tx.stats.retransmitted_segments >= 1);
        // the client closes; the server sees the FIN and closes too
        p.act(0, |d, now, segs| d.close(now, segs));
        let mut closed = false;
        p.run(SimTime(20_000 * MS), &mut |p| {
            if !closed && p.d(1).rx.fin_received() {
                closed = true;
                p.act(1, |d, now, segs| d.close(now, segs));
            }
        });
        assert!(p.d(0).closed() && p.d(1).closed());
        assert_eq!(p.d(0).next_timer(), None);
        assert_eq!(p.d(1).next_timer(), None);
    }

    #[test]
    fn writing_after_an_idle_rto_restarts_from_the_initial_window() {
        for (linux, idle_s) in [(false, 10), (true, 2), (true, 10)] {
            let mut p = Pair::new(1 << 20);
            if let Side::Duplex(d) = &mut p.ep[1].side {
                d.set_idle_restart(linux);
            }
            p.run(SimTime(150 * MS), &mut |_| {});
            p.act(1, |d, now, segs| d.write(now, 200_000, segs));
            p.run(SimTime(1_500 * MS), &mut |_| {});
            let grown = p.d(1).tx.tx.st.cwnd;
            assert!(grown >= 64_000, "{grown}");
            // RTO = 1 s (the classic minimum); Linux halves per RTO idle, down to IW
            let t = SimTime(1_500 * MS + idle_s * 1000 * MS);
            p.run(t, &mut |_| {});
            let idle = t - p.d(1).last_send;
            p.act(1, |d, now, segs| d.write(now, 1000, segs));
            let cwnd = p.d(1).tx.tx.st.cwnd;
            // classic: IW (4 segments); Linux: halved once per whole RTO (1 s) of idleness
            // beyond the first, not below IW
            let halvings = idle.0.div_ceil(1_000 * MS) - 1;
            let want = if linux {
                (grown >> halvings).max(4000)
            } else {
                4000
            };
            assert_eq!(cwnd, want, "linux {linux}, idle {idle}, from {grown}");
        }
    }

    #[test]
    fn a_slow_reader_closes_its_window_and_reopens_it() {
        // the client reads at 80 kbit/s (10 kB/s) with a 20 kB buffer; the server sends
        // 100 kB: about 8 s of reading after the window fills
        let mut p = Pair::new(20_000);
        if let Side::Duplex(d) = &mut p.ep[0].side {
            d.rx.set_read_rate(crate::time::Rate(80_000));
        }
        p.run(SimTime(150 * MS), &mut |_| {});
        p.act(1, |d, now, segs| d.write(now, 100_000, segs));
        p.run(SimTime(60_000 * MS), &mut |_| {});
        assert_eq!(p.d(0).rx.delivered(), 100_000);
        // the window falls from the 20 kB buffer to what the reader frees per round trip
        let min_wnd = p
            .log
            .iter()
            .filter(|l| l.1 == 0 && l.0 > SimTime(MS))
            .map(|l| l.2.seg.window)
            .min();
        assert!(min_wnd.unwrap() <= 2000, "{min_wnd:?}");
        // reading paces the sender: 80 kB beyond the buffer at 10 kB/s take 8 s
        let t_done = p
            .log
            .iter()
            .filter(|l| l.1 == 1 && l.2.seg.len > 0)
            .map(|l| l.0)
            .max()
            .unwrap();
        assert!(
            t_done > SimTime(7_900 * MS) && t_done < SimTime(9_000 * MS),
            "{t_done}"
        );
    }
}
