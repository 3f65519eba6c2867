//! The data sender of a flow (the active opener).
//!
//! Sequence numbers are relative: our SYN is 0, data byte k (0-based) is k + 1, and the
//! FIN of a sized transfer follows the last byte. Invariants:
//! `snd_una <= snd_nxt <= snd_max`, and the scoreboard lists every segment in
//! [snd_una, snd_max) in order.
//!
//! [`Sender`] = [`Tx`] (connection state, timers and transmission; RFC 9293, RFC 6298,
//! RFC 5681 §3.1 and §4, RFC 3042) + a [`CongestionControl`] (window growth and the
//! reduction on loss) + a [`Recovery`] scheme (what duplicate ACKs and ACKs during
//! recovery do). The two plug-ins never see each other; both act on [`Tx`].

use super::cc::{CaState, CcState, CongestionControl};
use super::ecn::{self, EcnSender};
use super::pacing::{self, Pacer};
use super::recovery::{Recovery, RecoveryKind, DUP_THRESH};
use super::rtt::RttEstimator;
use super::sack::Scoreboard;
use super::seg::{Seg, ACK, FIN, SYN};
use super::timestamps::{ts_rtt, Paws, TsRecent};
use super::tx::{CwndUse, TS_OPT_LEN};
use super::FlowTrace;
use crate::element::Class;
use crate::time::SimTime;

pub use super::tx::{SenderConfig, SenderCounters, SenderState, Tx, OWN_WINDOW};

pub struct Sender {
    pub tx: Tx,
    cc: Box<dyn CongestionControl>,
    /// The configured scheme, and the one in use (chosen once SACK is negotiated).
    recovery_kind: RecoveryKind,
    recovery: Box<dyn Recovery>,
}

impl Sender {
    /// A sender with congestion control `cc` and loss recovery `recovery` (the RFC 6675
    /// scheme replaces Reno's and NewReno's if the handshake negotiates SACK).
    pub fn new(
        cfg: SenderConfig,
        cc: Box<dyn CongestionControl>,
        recovery_kind: RecoveryKind,
        trace: bool,
    ) -> Self {
        let mss = cfg.mss as u64;
        let rtt = if cfg.stack.linux {
            RttEstimator::new_linux(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
        } else {
            RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto)
        };
        let pacer = cfg.stack.pacing.then(Pacer::default);
        // The scheme without SACK until the handshake tells whether SACK is on.
        let recovery = recovery_kind.build(false);
        Sender {
            tx: Tx {
                fin_seq: cfg.app_bytes.map(|b| b + 1),
                avail_end: cfg.app_bytes.map_or(u64::MAX / 4, |b| b + 1),
                st: CcState {
                    // RFC 5681 §3.1: initial ssthresh arbitrarily high.
                    ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX / 4),
                    pacing: cfg.stack.pacing,
                    ..CcState::new(mss, cfg.iw_bytes)
                },
                state: SenderState::Closed,
                snd_una: 0,
                snd_nxt: 0,
                snd_max: 0,
                peer_wnd: mss,
                peer_rcv_nxt: 0,
                dupacks: 0,
                lt_bytes: 0,
                in_recovery: false,
                in_loss: false,
                recover_end: 0,
                rtt,
                rto_deadline: None,
                persist_at: None,
                persist_backoff: 0,
                board: Scoreboard::default(),
                sack_ok: false,
                ecn: EcnSender::new(cfg.ecn),
                cfg,
                syn_sent_at: SimTime::ZERO,
                syn_retx: false,
                stats: SenderCounters::default(),
                trace: trace.then(FlowTrace::default),
                ts_ok: false,
                ts: TsRecent::default(),
                pacer,
                first_tx: SimTime::ZERO,
                ack_delivered: 0,
                cwnd_use: CwndUse::default(),
            },
            cc,
            recovery_kind,
            recovery,
        }
    }

    /// A streaming sender: data arrives through [`Sender::push_data`] and ends with
    /// [`Sender::close`].
    pub fn new_streaming(
        cfg: SenderConfig,
        cc: Box<dyn CongestionControl>,
        recovery: RecoveryKind,
    ) -> Self {
        let mut s = Sender::new(
            SenderConfig {
                app_bytes: None,
                ..cfg
            },
            cc,
            recovery,
            false,
        );
        s.tx.avail_end = 1;
        s
    }

    /// The application hands over `bytes` more bytes.
    pub fn push_data(&mut self, now: SimTime, bytes: u64, out: &mut Vec<Seg>) {
        self.tx.st.now = now;
        self.tx.avail_end += bytes;
        self.send(out);
    }

    /// The application closes: a FIN follows the last byte.
    pub fn close(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        self.tx.st.now = now;
        if self.tx.fin_seq.is_none() {
            self.tx.fin_seq = Some(self.tx.avail_end);
            self.tx.try_send(out);
        }
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    pub fn recovery_name(&self) -> &'static str {
        self.recovery.name()
    }

    pub fn state(&self) -> SenderState {
        self.tx.state
    }

    /// Earliest timer deadline: retransmission, persist, pacing, and the recovery
    /// scheme's own (RACK reordering, tail loss probe; probe pacing of the TCP-Peach
    /// family).
    pub fn next_timer(&self) -> Option<SimTime> {
        [
            self.tx.rto_deadline,
            self.tx.persist_at,
            self.tx.pacer.as_ref().and_then(|p| p.deadline()),
            self.recovery.next_timer(),
            self.recovery.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Sends what the windows allow: the recovery scheme decides during recovery (or
    /// always, for a scheme that owns transmission).
    fn send(&mut self, out: &mut Vec<Seg>) {
        if self.tx.in_recovery || self.recovery.owns_send() {
            self.recovery.send(&mut self.tx, out);
        } else {
            self.tx.try_send(out);
        }
    }

    /// Opens the connection: sends the SYN.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        let tx = &mut self.tx;
        debug_assert_eq!(tx.state, SenderState::Closed);
        tx.st.now = now;
        tx.state = SenderState::SynSent;
        tx.snd_nxt = 1;
        tx.snd_max = 1;
        tx.syn_sent_at = now;
        out.push(tx.syn());
        tx.rto_deadline = Some(now + tx.rtt.rto());
    }

    pub fn on_segment(&mut self, now: SimTime, seg: &Seg, out: &mut Vec<Seg>) {
        self.tx.st.now = now;
        match self.tx.state {
            SenderState::Closed => {}
            SenderState::SynSent => {
                if seg.flags & SYN != 0 && seg.flags & ACK != 0 && seg.ack == 1 {
                    self.established(now, seg, out);
                }
            }
            SenderState::Established | SenderState::Done => {
                let tx = &mut self.tx;
                if tx.ts_ok {
                    if let Some((tsval, _)) = seg.ts {
                        // RFC 7323 §5.3: PAWS; a stale segment is dropped
                        if tx.ts.on_segment(seg.seq, tsval) == Paws::Reject {
                            return;
                        }
                    }
                }
                if seg.flags & SYN != 0 {
                    // Our handshake ACK was lost: repeat it.
                    out.push(tx.pure_ack());
                    return;
                }
                if seg.flags & FIN != 0
                    && (seg.seq == tx.peer_rcv_nxt || seg.seq + 1 == tx.peer_rcv_nxt)
                {
                    // The peer's FIN, or its retransmission (our ACK was lost, RFC 9293
                    // §3.10.7.4): acknowledge it.
                    tx.peer_rcv_nxt = seg.seq + 1;
                    let mut a = tx.pure_ack();
                    a.seq = tx.snd_max;
                    out.push(a);
                }
                if tx.state == SenderState::Established {
                    self.on_ack(seg, out);
                    self.send(out);
                    self.tx.record();
                }
            }
        }
    }

    fn established(&mut self, now: SimTime, seg: &Seg, out: &mut Vec<Seg>) {
        let tx = &mut self.tx;
        tx.state = SenderState::Established;
        tx.snd_una = 1;
        tx.peer_rcv_nxt = seg.seq + 1;
        tx.peer_wnd = seg.wnd;
        tx.sack_ok = tx.cfg.sack_permitted && seg.syn_opts.is_some_and(|o| o.2);
        tx.ecn.on_synack(seg.flags);
        self.recovery = self.recovery_kind.build(tx.sack_ok);
        if tx.syn_retx {
            tx.rtt.syn_timed_out();
        } else {
            tx.take_sample(now - tx.syn_sent_at);
        }
        // RFC 7323: timestamps when both SYNs carry them; then every segment carries
        // the option and data segments 12 bytes less payload (RFC 6691).
        tx.ts_ok = tx.cfg.stack.timestamps && seg.ts.is_some();
        if let (true, Some((tsval, _))) = (tx.ts_ok, seg.ts) {
            tx.ts.recent = Some(tsval);
            tx.st.mss = tx.cfg.mss as u64 - TS_OPT_LEN.min(tx.cfg.mss as u64 - 1);
        }
        // RFC 5681 §3.1 / RFC 3390: IW is one segment after a lost SYN.
        let iw_segs = (tx.cfg.iw_bytes / tx.cfg.mss as u64).max(1);
        tx.st.cwnd = if tx.syn_retx {
            tx.st.mss
        } else if tx.ts_ok {
            iw_segs * tx.st.mss
        } else {
            tx.cfg.iw_bytes
        };
        tx.st.snd_una = 1;
        tx.st.snd_nxt = 1;
        self.cc.init(&mut tx.st);
        tx.rto_deadline = None;
        out.push(tx.pure_ack());
        self.recovery.on_established(tx, &mut *self.cc, out);
        tx.try_send(out);
        tx.record();
    }

    fn on_ack(&mut self, seg: &Seg, out: &mut Vec<Seg>) {
        if self
            .recovery
            .on_segment_ack(&mut self.tx, &mut *self.cc, seg, out)
        {
            self.check_done();
            return;
        }
        let tx = &mut self.tx;
        let ack = seg.ack;
        if ack > tx.snd_max {
            return; // acknowledges data never sent: ignore (RFC 9293 §3.10.7.4)
        }
        let wnd_changed = seg.wnd != tx.peer_wnd;
        tx.peer_wnd = seg.wnd;
        // An ACK of the low-priority class answers a probe (TCP-Peach family): never a
        // duplicate ACK.
        let probe_ack = seg.class == Class::Low;
        let ecn_cut = ecn::on_ack(tx, &mut *self.cc, seg.flags, ack);
        let newly_sacked = match (&seg.sack, tx.sack_ok) {
            (Some(b), true) => {
                if let Some(tr) = &mut tx.trace {
                    for &(l, r) in b.as_slice() {
                        tr.sack_t_ns.push(tx.st.now.0);
                        tr.sack_left.push(l);
                        tr.sack_right.push(r);
                    }
                }
                tx.board.mark_sacked(b)
            }
            _ => 0,
        };
        if ack > tx.snd_una {
            let acked = ack - tx.snd_una;
            // Karn: sample from the newest fully acknowledged segment, and only if no
            // segment this ACK covers was retransmitted (else the ACK may answer either
            // transmission, or release data held behind a repaired hole).
            let (newest, any_retx) = tx.board.ack_to(ack);
            let mut sample = newest.filter(|_| !any_retx).map(|s| tx.st.now - s.sent_at);
            if sample.is_none() && tx.ts_ok {
                // RFC 7323 §4: with timestamps the echo identifies the transmission
                sample = seg.ts.and_then(|(_, ecr)| ts_rtt(tx.st.now, ecr));
            }
            if let Some(r) = sample {
                tx.take_sample(r);
            }
            tx.snd_una = ack;
            if tx.snd_nxt < ack {
                tx.snd_nxt = ack;
            }
            tx.dupacks = 0;
            tx.lt_bytes = 0;
            tx.ack_delivered = acked + newly_sacked;
            tx.sync_flight();
            self.cc.pkts_acked(&mut tx.st, acked, sample);
            let restart = if tx.in_recovery {
                self.recovery.on_ack(tx, &mut *self.cc, acked, out)
            } else {
                if tx.in_loss && ack >= tx.recover_end {
                    tx.in_loss = false;
                    self.cc.set_state(&mut tx.st, CaState::Open);
                }
                if !ecn_cut {
                    self.cc.cong_avoid(&mut tx.st, acked);
                }
                true
            };
            // RFC 6298 (5.2), (5.3)
            if tx.snd_una == tx.snd_max {
                tx.rto_deadline = None;
            } else if restart {
                tx.restart_rto();
            }
            if let Some(fin) = tx.fin_seq {
                if tx.snd_una > fin {
                    tx.state = SenderState::Done;
                    tx.rto_deadline = None;
                }
            }
        } else if ack == tx.snd_una
            && !probe_ack
            && seg.len == 0
            && seg.flags & (SYN | FIN) == 0
            && tx.snd_max > tx.snd_una
            && (!wnd_changed || newly_sacked > 0)
        {
            // RFC 5681 §2 duplicate ACK (RFC 6675 §2: or one that SACKs new data)
            tx.dupacks += 1;
            tx.ack_delivered = newly_sacked;
            self.recovery.on_dupack(tx, &mut *self.cc, out);
            if tx.cfg.limited_transmit && tx.dupacks < DUP_THRESH && !tx.in_recovery {
                tx.limited_transmit(out);
            }
        }
        if probe_ack {
            let tx = &mut self.tx;
            tx.stats.extra.probe_acks += 1;
            self.recovery.on_probe_ack(tx, &mut *self.cc, out);
        }
        // pacing in the classic stack: Linux's default rate (`tcp_update_pacing_rate`)
        let tx = &mut self.tx;
        if let Some(packets_out) = tx
            .pacer
            .as_ref()
            .map(|_| (tx.snd_max - tx.snd_una).div_ceil(tx.st.mss))
        {
            tx.st.pacing_rate = pacing::linux_rate(&tx.st, packets_out);
        }
    }

    /// All data and our FIN acknowledged: the transfer is done.
    fn check_done(&mut self) {
        let tx = &mut self.tx;
        if tx.fin_seq.is_some_and(|fin| tx.snd_una > fin) {
            tx.state = SenderState::Done;
            tx.rto_deadline = None;
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        if self.recovery.poll_timeout().is_some_and(|t| t <= now) {
            self.tx.st.now = now;
            self.recovery.on_timeout(&mut self.tx, &mut *self.cc, out);
        }
        let tx = &mut self.tx;
        tx.st.now = now;
        if tx.persist_at.is_some_and(|p| p <= now) {
            // Window probe: send the next segment although the window is closed; the
            // receiver drops it if it still has no room, and its ACK carries the window.
            tx.persist_at = None;
            tx.persist_backoff += 1;
            if tx.state == SenderState::Established && tx.snd_una == tx.snd_max {
                if let Some((len, fin)) = tx.segment_at(tx.snd_nxt) {
                    let seq = tx.snd_nxt;
                    tx.emit(seq, len, fin, out);
                    tx.snd_nxt = seq + len as u64 + fin as u64;
                    tx.sync_flight();
                }
            }
        }
        if tx.state == SenderState::Established {
            if tx
                .pacer
                .as_ref()
                .is_some_and(|p| p.blocked && p.next <= now)
            {
                self.send(out); // the pacing timer: what was held back may leave now
            }
            if self.recovery.next_timer().is_some_and(|t| t <= now) {
                self.recovery.on_timer(&mut self.tx, &mut *self.cc, out);
                self.send(out);
            }
        }
        let tx = &mut self.tx;
        let Some(d) = tx.rto_deadline else { return };
        if d > now {
            return;
        }
        tx.rto_deadline = None;
        match tx.state {
            SenderState::SynSent => {
                // RFC 6298 (5.5)-(5.6) for the SYN; Karn: no sample from it.
                tx.syn_retx = true;
                tx.rtt.back_off();
                out.push(tx.syn());
                tx.rto_deadline = Some(now + tx.rtt.rto());
            }
            SenderState::Established if self.recovery.owns_send() => {
                // the scheme's own timeout processing (Linux `tcp_retransmit_timer`)
                tx.stats.timeouts += 1;
                self.recovery.on_rto(tx, &mut *self.cc, out);
                self.tx.record();
            }
            SenderState::Established => {
                tx.stats.timeouts += 1;
                tx.sync_flight();
                // RFC 5681 (4) for a segment not yet resent by the retransmission timer
                // (held constant across repeated timeouts of one segment).
                if !tx.board.get(tx.snd_una).is_some_and(|s| s.timer_retx) {
                    tx.st.ssthresh = self.cc.ssthresh(&tx.st);
                }
                tx.st.cwnd = tx.st.mss; // loss window
                tx.in_recovery = false;
                tx.dupacks = 0;
                tx.lt_bytes = 0;
                tx.recover_end = tx.snd_max; // RFC 6582 §4
                tx.snd_nxt = tx.snd_una; // go back N
                tx.board.clear_sacked(); // RFC 6675 §5.1: the receiver may renege
                tx.rtt.back_off();
                tx.in_loss = true;
                self.cc.set_state(&mut tx.st, CaState::Loss);
                self.recovery.on_rto(tx, &mut *self.cc, out);
                tx.try_send(out);
                if tx.snd_nxt == tx.snd_una {
                    // A closed receiver window held the retransmission back: send it
                    // anyway, as a window probe.
                    if let Some((len, fin)) = tx.segment_at(tx.snd_una) {
                        tx.emit(tx.snd_una, len, fin, out);
                        tx.snd_nxt = tx.snd_una + len as u64 + fin as u64;
                    }
                }
                tx.board.mark_timer_retx(tx.snd_una);
                tx.rto_deadline = Some(now + tx.rtt.rto());
                tx.record();
            }
            SenderState::Closed | SenderState::Done => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::reno::Reno;
    use crate::tcp::recovery::RecoveryKind;
    use crate::time::SimDuration;

    fn sender() -> Sender {
        let cfg = SenderConfig {
            mss: 1000,
            iw_bytes: 4000,
            initial_rto: SimDuration::from_secs(1),
            min_rto: SimDuration::from_secs(1),
            max_rto: SimDuration::from_secs(60),
            app_bytes: Some(10_000),
            sack_permitted: false,
            initial_ssthresh: None,
            limited_transmit: false,
            ecn: false,
            stack: crate::tcp::stack::StackConfig::CLASSIC,
        };
        Sender::new(
            cfg,
            Box::new(Reno),
            RecoveryKind::NewReno {
                partial_ack_timer_every: false,
            },
            false,
        )
    }

    fn ack(ack: u64, wnd: u64) -> Seg {
        Seg {
            flags: ACK,
            seq: 1,
            ack,
            wnd,
            ..Default::default()
        }
    }

    #[test]
    fn sack_recovery_only_once_the_handshake_negotiates_sack() {
        // RFC 2018: SACK is used only when both SYNs carry SACK-permitted; RFC 6675 then
        // replaces NewReno's recovery.
        for (offered, granted, want) in [
            (true, true, "sack"),
            (true, false, "newreno"),
            (false, true, "newreno"),
        ] {
            let mut s = sender();
            s.tx.cfg.sack_permitted = offered;
            assert_eq!((s.cc_name(), s.recovery_name()), ("reno", "newreno"));
            let mut out = vec![];
            s.start(SimTime(0), &mut out);
            let synack = Seg {
                flags: SYN | ACK,
                seq: 0,
                ack: 1,
                wnd: 100_000,
                syn_opts: Some((1000, 0, granted)),
                ..Default::default()
            };
            s.on_segment(SimTime(100_000_000), &synack, &mut out);
            assert_eq!(
                s.recovery_name(),
                want,
                "offered {offered}, granted {granted}"
            );
        }
    }

    #[test]
    fn timestamps_take_twelve_bytes_of_each_segment_but_never_all_of_it() {
        // RFC 7323 / RFC 6691: with timestamps on, data segments carry MSS − 12 bytes;
        // an MSS of 12 or less still leaves one byte
        for (mss, ts, want) in [
            (1000, true, 988),
            (1000, false, 1000),
            (12, true, 1),
            (5, true, 1),
        ] {
            let mut s = sender();
            s.tx.cfg.mss = mss;
            s.tx.cfg.stack.timestamps = true;
            let mut out = vec![];
            s.start(SimTime(0), &mut out);
            let synack = Seg {
                flags: SYN | ACK,
                seq: 0,
                ack: 1,
                wnd: 100_000,
                ts: ts.then_some((7, 1)),
                ..Default::default()
            };
            s.on_segment(SimTime(1_000_000), &synack, &mut out);
            assert_eq!(s.state(), SenderState::Established);
            assert_eq!(s.tx.st.mss, want, "mss {mss}, timestamps {ts}");
        }
        // an ACK without SYN (or a SYN without ACK) does not establish the connection
        for flags in [ACK, SYN] {
            let mut s = sender();
            let mut out = vec![];
            s.start(SimTime(0), &mut out);
            let seg = Seg {
                flags,
                ack: 1,
                wnd: 100_000,
                ..Default::default()
            };
            s.on_segment(SimTime(1), &seg, &mut out);
            assert_eq!(s.state(), SenderState::SynSent, "flags {flags}");
        }
    }

    #[test]
    fn done_only_once_the_fin_is_acknowledged() {
        use crate::tcp::script::{seq, Script, Setup};
        // two segments, the FIN on the second: relative sequence 2001 is the FIN
        let (mut sc, init) = Script::new(Setup {
            app_bytes: 2000,
            ..Setup::default()
        });
        assert_eq!(init, vec![(0, false), (1, false)]);
        sc.ack(seq(2), &[]);
        assert_eq!(
            sc.s.state(),
            SenderState::Established,
            "the data, not the FIN"
        );
        assert!(sc.s.next_timer().is_some(), "the FIN is still timed");
        sc.ack(seq(2) + 1, &[]);
        assert_eq!(sc.s.state(), SenderState::Done);
        assert_eq!(sc.s.next_timer(), None);
    }

    #[test]
    fn a_streaming_sender_closes_with_a_bare_fin() {
        let cfg = sender().tx.cfg;
        let mut s = Sender::new_streaming(
            cfg,
            Box::new(Reno),
            RecoveryKind::NewReno {
                partial_ack_timer_every: false,
            },
        );
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        let synack = Seg {
            flags: SYN | ACK,
            ack: 1,
            wnd: 100_000,
            ..Default::default()
        };
        s.on_segment(SimTime(1), &synack, &mut out);
        out.clear();
        s.push_data(SimTime(2), 2000, &mut out);
        assert_eq!(
            out.iter().map(|g| (g.seq, g.len)).collect::<Vec<_>>(),
            vec![(1, 1000), (1001, 1000)]
        );
        s.on_segment(SimTime(3), &ack(2001, 100_000), &mut out);
        out.clear();
        // everything sent and acknowledged: the FIN goes alone, after the last byte
        s.close(SimTime(4), &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].seq, out[0].len, out[0].flags & FIN), (2001, 0, FIN));
        s.on_segment(SimTime(5), &ack(2002, 100_000), &mut out);
        assert_eq!(s.state(), SenderState::Done);
    }

    #[test]
    fn zero_window_is_probed_by_the_persist_timer() {
        let mut s = sender();
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        out.clear();
        let synack = Seg {
            flags: SYN | ACK,
            seq: 0,
            ack: 1,
            wnd: 0,
            ..Default::default()
        };
        s.on_segment(
            SimTime::ZERO + SimDuration::from_millis(100),
            &synack,
            &mut out,
        );
        assert_eq!(out.len(), 1, "only the handshake ACK: the window is closed");
        let t = s.next_timer().expect("persist timer armed");
        assert!(t > SimTime(100_000_000));
        out.clear();
        s.on_timer(t, &mut out);
        assert_eq!(out.len(), 1, "one probe");
        assert_eq!((out[0].seq, out[0].len), (1, 1000));
        // the receiver accepts it and opens its window: normal sending resumes
        out.clear();
        s.on_segment(
            t + SimDuration::from_millis(100),
            &ack(1001, 5000),
            &mut out,
        );
        assert!(out.len() >= 2, "{out:?}");
        assert!(s.tx.persist_at.is_none());
    }

    /// A sender whose peer's SYN-ACK advertised a zero window (the persist timer runs).
    fn shut_at_the_handshake() -> (Sender, Vec<Seg>) {
        let mut s = sender();
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        let synack = Seg {
            flags: SYN | ACK,
            seq: 0,
            ack: 1,
            wnd: 0,
            ..Default::default()
        };
        s.on_segment(SimTime(1), &synack, &mut out);
        (s, out)
    }

    #[test]
    fn persist_interval_doubles_while_probes_find_the_window_shut() {
        // RFC 9293 §3.8.6.1 (zero-window probing with exponential backoff): the probe
        // is accepted but the window stays shut, so the next probe waits twice the RTO;
        // new data sent once the window opens resets the backoff
        let (mut s, mut out) = shut_at_the_handshake();
        let t1 = s.next_timer().unwrap();
        s.on_timer(t1, &mut out);
        let now = t1 + SimDuration::from_millis(100);
        s.on_segment(now, &ack(1001, 0), &mut out);
        let rto = s.tx.rtt.rto();
        assert_eq!(s.next_timer(), Some(now + rto.saturating_mul(2)), "2 x RTO");
        let t2 = now + rto.saturating_mul(2);
        s.on_timer(t2, &mut out);
        let now = t2 + SimDuration::from_millis(100);
        s.on_segment(now, &ack(2001, 0), &mut out);
        let rto = s.tx.rtt.rto();
        assert_eq!(s.next_timer(), Some(now + rto.saturating_mul(4)), "4 x RTO");
        // the window opens: data flows, and a later shut window starts again at 1 x RTO
        let now = now + SimDuration::from_millis(10);
        s.on_segment(now, &ack(2001, 1000), &mut out);
        let now = now + SimDuration::from_millis(100);
        s.on_segment(now, &ack(3001, 0), &mut out);
        let rto = s.tx.rtt.rto();
        assert_eq!(s.next_timer(), Some(now + rto), "backoff reset");
    }

    #[test]
    fn persist_timer_backs_off_while_the_window_stays_shut() {
        let (mut s, mut out) = shut_at_the_handshake();
        let t1 = s.next_timer().unwrap();
        out.clear();
        s.on_timer(t1, &mut out);
        // the probe is dropped; the receiver answers with a zero window again
        let now = t1 + SimDuration::from_millis(100);
        s.on_segment(now, &ack(1, 0), &mut out);
        // the probe stays unacknowledged; its retransmission timer sends it again even
        // though the window is still closed (a probe, not a stall)
        out.clear();
        let rto = s.next_timer().unwrap();
        s.on_timer(rto, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].seq, 1);
        assert_eq!(s.tx.stats.timeouts, 1);
    }
}
