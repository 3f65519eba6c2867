//! The data sender of a flow (the active opener).
//!
//! Sequence numbers are relative: our SYN is 0, data byte k (0-based) is k + 1, and the
//! FIN of a sized transfer follows the last byte. Invariants:
//! `snd_una <= snd_nxt <= snd_max`, and the scoreboard lists every segment in
//! [snd_una, snd_max) in order.
//!
//! [`Sender`] = [`Tx`] (connection state, timers and transmission; RFC 9293, RFC 6298,
//! RFC 5681 §3.1 and §4) + a [`CongestionControl`] (window growth and the reduction on
//! loss) + an engine, chosen when the handshake tells whether SACK is on: the classic
//! engine ([`Classic`], the papers' TCP with a loss-recovery scheme, and the Linux
//! profile without SACK) or the Linux engine ([`Linux`]). The sender itself does what
//! both share: the handshake, PAWS, the peer's FIN, the persist and pacing timers, the
//! SYN's retransmission.

use super::cc::{CcState, CongestionControl};
use super::classic::Classic;
use super::ecn::EcnSender;
use super::linux::Linux;
use super::pacing::Pacer;
use super::profile::TcpProfile;
use super::recovery::RecoveryKind;
use super::rtt::RttEstimator;
use super::sack::Scoreboard;
use super::seg::{Seg, ACK, FIN, SYN};
use super::timestamps::{Paws, TsRecent};
use super::tx::{CwndUse, TS_OPT_LEN};
use super::FlowTrace;
use crate::time::SimTime;

pub use super::tx::{SenderCounters, SenderState, Tx, OWN_WINDOW};

/// The engine that processes ACKs, decides transmissions and handles timeouts.
enum Engine {
    Classic(Classic),
    Linux(Linux),
}

impl Engine {
    /// The engine of a connection with `recovery` that negotiated SACK or not.
    fn new(recovery: RecoveryKind, sack: bool) -> Self {
        if recovery.linux_engine(sack) {
            Engine::Linux(Linux::default())
        } else {
            Engine::Classic(Classic::new(recovery, sack))
        }
    }
}

pub struct Sender {
    pub tx: Tx,
    cc: Box<dyn CongestionControl>,
    engine: Engine,
}

impl Sender {
    /// A sender of the flow's `profile` with its congestion control `cc` (built from
    /// `profile.cc`, seeded by the caller), sending `app_bytes` (None: unlimited).
    pub fn new(
        profile: TcpProfile,
        app_bytes: Option<u64>,
        cc: Box<dyn CongestionControl>,
        trace: bool,
    ) -> Self {
        let cfg = profile;
        let mss = cfg.mss as u64;
        let linux = cfg.linux();
        let rtt = if linux {
            RttEstimator::new_linux(cfg.rto.initial, cfg.rto.min, cfg.rto.max)
        } else {
            RttEstimator::new(cfg.rto.initial, cfg.rto.min, cfg.rto.max)
        };
        let pacer = cfg.pacing.then(Pacer::default);
        Sender {
            tx: Tx {
                fin_seq: app_bytes.map(|b| b + 1),
                avail_end: app_bytes.map_or(u64::MAX / 4, |b| b + 1),
                st: CcState {
                    // RFC 5681 §3.1: initial ssthresh arbitrarily high.
                    ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX / 4),
                    pacing: cfg.pacing,
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
                syn_sent_at: SimTime::ZERO,
                syn_retx: false,
                stats: SenderCounters::default(),
                trace: trace.then(FlowTrace::default),
                ts_ok: false,
                ts: TsRecent::default(),
                pacer,
                // the Linux stack's delivery-rate sampling and cwnd validation
                first_tx: linux.then_some(SimTime::ZERO),
                ack_delivered: 0,
                cwnd_use: linux.then(CwndUse::default),
                cfg,
            },
            cc,
            // without SACK until the handshake tells whether SACK is on
            engine: Engine::new(cfg.recovery, false),
        }
    }

    /// A streaming sender: data arrives through [`Sender::push_data`] and ends with
    /// [`Sender::close`].
    pub fn new_streaming(profile: TcpProfile, cc: Box<dyn CongestionControl>) -> Self {
        let mut s = Sender::new(profile, None, cc, false);
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

    /// The loss recovery running: the classic engine's scheme, or "linux".
    pub fn recovery_name(&self) -> &'static str {
        match &self.engine {
            Engine::Classic(c) => c.recovery_name(),
            Engine::Linux(_) => "linux",
        }
    }

    pub fn state(&self) -> SenderState {
        self.tx.state
    }

    /// The Linux engine, if it runs (tests).
    #[cfg(test)]
    pub(crate) fn linux_engine(&self) -> Option<&Linux> {
        match &self.engine {
            Engine::Linux(l) => Some(l),
            Engine::Classic(_) => None,
        }
    }

    /// Earliest timer deadline: retransmission, persist, pacing, and the engine's own
    /// (RACK reordering, tail loss probe; probe pacing of the TCP-Peach family).
    pub fn next_timer(&self) -> Option<SimTime> {
        let engine = match &self.engine {
            Engine::Classic(c) => c.probe_deadline(),
            Engine::Linux(l) => l.next_timer(),
        };
        [
            self.tx.rto_deadline,
            self.tx.persist_at,
            self.tx.pacer.as_ref().and_then(|p| p.deadline()),
            engine,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Sends what the windows allow, as the engine decides.
    fn send(&mut self, out: &mut Vec<Seg>) {
        match &mut self.engine {
            Engine::Classic(c) => c.send(&mut self.tx, out),
            Engine::Linux(l) => l.send(&mut self.tx, out),
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
                    match &mut self.engine {
                        Engine::Classic(c) => c.on_ack(tx, &mut *self.cc, seg, out),
                        Engine::Linux(l) => {
                            l.on_ack(tx, &mut *self.cc, seg);
                            // all data and our FIN acknowledged: the transfer is done
                            if tx.fin_seq.is_some_and(|fin| tx.snd_una > fin) {
                                tx.state = SenderState::Done;
                                tx.rto_deadline = None;
                            }
                        }
                    }
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
        tx.sack_ok = tx.cfg.sack && seg.syn_opts.is_some_and(|o| o.2);
        tx.ecn.on_synack(seg.flags);
        self.engine = Engine::new(tx.cfg.recovery, tx.sack_ok);
        if tx.syn_retx {
            tx.rtt.syn_timed_out();
        } else {
            tx.take_sample(now - tx.syn_sent_at);
        }
        // RFC 7323: timestamps when both SYNs carry them; then every segment carries
        // the option and data segments 12 bytes less payload (RFC 6691).
        tx.ts_ok = tx.cfg.timestamps && seg.ts.is_some();
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
        if let Engine::Classic(c) = &mut self.engine {
            c.on_established(tx, &mut *self.cc, out);
        }
        tx.try_send(out);
        tx.record();
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        if let Engine::Classic(c) = &mut self.engine {
            if c.probe_deadline().is_some_and(|t| t <= now) {
                self.tx.st.now = now;
                c.on_probe_deadline(&mut self.tx, &mut *self.cc, out);
            }
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
            if let Engine::Linux(l) = &mut self.engine {
                if l.next_timer().is_some_and(|t| t <= now) {
                    l.on_timer(&mut self.tx, &mut *self.cc, out);
                    self.send(out);
                }
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
            SenderState::Established => {
                tx.stats.timeouts += 1;
                match &mut self.engine {
                    Engine::Classic(c) => c.on_rto(tx, &mut *self.cc, out),
                    Engine::Linux(l) => l.on_rto(tx, &mut *self.cc, out),
                }
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
    use crate::tcp::config::TcpKind;
    use crate::time::SimDuration;

    /// A classic NewReno sender of 10 000 bytes, mss 1000, IW 4, no SACK.
    fn profile() -> TcpProfile {
        TcpProfile {
            iw_bytes: 4000,
            ..TcpProfile::classic(TcpKind::Newreno, 1000).unwrap()
        }
    }

    fn sender() -> Sender {
        Sender::new(profile(), Some(10_000), Box::new(Reno), false)
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
            s.tx.cfg.sack = offered;
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
            s.tx.cfg.timestamps = true;
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
        let mut s = Sender::new_streaming(profile(), Box::new(Reno));
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
