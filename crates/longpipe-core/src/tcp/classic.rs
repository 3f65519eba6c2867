//! The classic engine: the sender of the papers' TCP (4.4BSD-Lite, RFC 5681, RFC 6298),
//! and of the Linux profile when SACK is not negotiated.
//!
//! On every ACK it follows RFC 5681 and RFC 9293: window update, ECN response (RFC 3168
//! §6.1.2), SACK scoreboard (RFC 2018), RTT sample (Karn, or the RFC 7323 echo), window
//! growth by the congestion control outside recovery, the RFC 6298 timer rules, duplicate
//! ACK counting (RFC 5681 §2, RFC 6675 §2) with Limited Transmit (RFC 3042); a loss
//! recovery scheme ([`Recovery`]) decides what duplicate ACKs and ACKs during an episode
//! do. On a retransmission timeout it applies RFC 5681 (4) and goes back N. A scheme that
//! probes (the TCP-Peach family) is also told of the connection's start, of probe ACKs,
//! of its probe timer and of timeouts ([`Prober`]).

use super::cc::{CaState, CongestionControl};
use super::pacing;
use super::probe::Prober;
use super::recovery::{Recovery, RecoveryKind, DUP_THRESH};
use super::seg::{Seg, FIN, SYN};
use super::timestamps::ts_rtt;
use super::tx::{SenderState, Tx};
use crate::element::Class;
use crate::time::SimTime;

pub struct Classic {
    recovery: Box<dyn Recovery>,
}

impl Classic {
    /// The engine with the scheme of `kind` for a connection that negotiated SACK or not.
    pub fn new(kind: RecoveryKind, sack: bool) -> Self {
        Classic {
            recovery: kind.classic(sack),
        }
    }

    pub fn recovery_name(&self) -> &'static str {
        self.recovery.name()
    }

    fn prober(&mut self) -> Option<&mut dyn Prober> {
        self.recovery.prober_mut()
    }

    /// When the scheme's probe timer fires, if set.
    pub fn probe_deadline(&self) -> Option<SimTime> {
        self.recovery.prober().and_then(|p| p.deadline())
    }

    /// Runs the probe timer (`tx.st.now` is the time).
    pub fn on_probe_deadline(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        out: &mut Vec<Seg>,
    ) {
        if let Some(p) = self.prober() {
            p.on_deadline(tx, cc, out);
        }
    }

    /// The connection is established (cwnd = IW), before the first data is sent.
    pub fn on_established(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        out: &mut Vec<Seg>,
    ) {
        if let Some(p) = self.prober() {
            p.on_established(tx, cc, out);
        }
    }

    /// Sends what the windows allow: the scheme decides during recovery.
    pub fn send(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        if tx.in_recovery {
            self.recovery.send(tx, out);
        } else {
            tx.try_send(out);
        }
    }

    /// An ACK on an established connection.
    pub fn on_ack(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        seg: &Seg,
        out: &mut Vec<Seg>,
    ) {
        let ack = seg.ack;
        if ack > tx.snd_max {
            return; // acknowledges data never sent: ignore (RFC 9293 §3.10.7.4)
        }
        let wnd_changed = seg.wnd != tx.peer_wnd;
        tx.peer_wnd = seg.wnd;
        // An ACK of the low-priority class answers a probe (TCP-Peach family): never a
        // duplicate ACK.
        let probe_ack = seg.class == Class::Low;
        let ecn_cut = tx.ecn_response(cc, seg.flags, ack);
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
            // new data acknowledged (the FIN's sequence number is not data)
            let fin = tx.fin_seq.is_some_and(|f| tx.snd_una <= f && ack > f);
            let acked = ack - tx.snd_una - fin as u64;
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
            cc.pkts_acked(&mut tx.st, acked, sample);
            let restart = if tx.in_recovery {
                self.recovery.on_ack(tx, cc, acked, out)
            } else {
                if tx.in_loss && ack >= tx.recover_end {
                    tx.in_loss = false;
                    cc.set_state(&mut tx.st, CaState::Open);
                }
                if !ecn_cut {
                    cc.cong_avoid(&mut tx.st, acked);
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
            self.recovery.on_dupack(tx, cc, out);
            if tx.cfg.limited_transmit && tx.dupacks < DUP_THRESH && !tx.in_recovery {
                tx.limited_transmit(out);
            }
        }
        if probe_ack {
            tx.stats.extra.probe_acks += 1;
            if let Some(p) = self.recovery.prober_mut() {
                p.on_probe_ack(tx, cc, out);
            }
        }
        // pacing: Linux's default rate (`tcp_update_pacing_rate`)
        if tx.pacer.is_some() {
            tx.st.pacing_rate = pacing::linux_rate(&tx.st, tx.packets_out());
        }
    }

    /// A retransmission timeout on an established connection (counted by the caller):
    /// RFC 5681 (4), go back N (RFC 6298 (5.4)-(5.6)).
    pub fn on_rto(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        let now = tx.st.now;
        tx.sync_flight();
        // RFC 5681 (4) for a segment not yet resent by the retransmission timer (held
        // constant across repeated timeouts of one segment), as written: from the
        // FlightSize at the timeout, also when a recovery episode's window inflation
        // raised it (so the value can exceed the episode's; the papers' ns-2 agents take
        // the inflated cwnd itself). The Linux engine keeps the episode's ssthresh.
        if !tx.board.get(tx.snd_una).is_some_and(|s| s.timer_retx) {
            tx.st.ssthresh = cc.ssthresh(&tx.st);
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
        cc.set_state(&mut tx.st, CaState::Loss);
        if let Some(p) = self.recovery.prober_mut() {
            p.on_rto(tx, cc, out);
        }
        tx.try_send(out);
        if tx.snd_nxt == tx.snd_una {
            // A closed receiver window held the retransmission back: send it anyway, as
            // a window probe.
            if let Some((len, fin)) = tx.segment_at(tx.snd_una) {
                tx.emit(tx.snd_una, len, fin, out);
                tx.snd_nxt = tx.snd_una + len as u64 + fin as u64;
            }
        }
        tx.board.mark_timer_retx(tx.snd_una);
        tx.rto_deadline = Some(now + tx.rtt.rto());
    }
}

#[cfg(test)]
mod tests {
    use crate::net::packet::ecn::ECT0;
    use crate::tcp::seg::{Seg, ACK, CWR, ECE, SYN};

    /// A NewReno sender with ECN, mss 1000, 10 segments in flight after the handshake
    /// (SYN at 0, SYN-ACK with ECE at 100 ms).
    fn sender_with_ten_in_flight() -> (crate::tcp::sender::Sender, Vec<Seg>) {
        use crate::tcp::cc::reno::Reno;
        use crate::tcp::config::TcpKind;
        use crate::tcp::profile::TcpProfile;
        use crate::tcp::rtt::RtoBounds;
        use crate::tcp::sender::Sender;
        use crate::time::{SimDuration, SimTime};
        let cfg = TcpProfile {
            iw_bytes: 10_000,
            rto: RtoBounds {
                initial: SimDuration::from_secs(3),
                min: SimDuration::from_secs(3),
                max: SimDuration::from_secs(60),
            },
            ecn: true,
            ..TcpProfile::classic(TcpKind::Newreno, 1000).unwrap()
        };
        let mut s = Sender::new(cfg, None, Box::new(Reno), false);
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        assert_eq!(out[0].flags & (ECE | CWR), ECE | CWR, "ECN-setup SYN");
        out.clear();
        let synack = Seg {
            flags: SYN | ACK | ECE,
            ack: 1,
            wnd: 100_000,
            syn_opts: Some((1000, 0, false)),
            ..Default::default()
        };
        s.on_segment(SimTime(100_000_000), &synack, &mut out);
        assert!(s.tx.ecn.on);
        (s, out)
    }

    /// (seq, ECN field, CWR) of the data segments in `out`.
    fn data(out: &[Seg]) -> Vec<(u64, u8, bool)> {
        out.iter()
            .filter(|s| s.len > 0)
            .map(|s| (s.seq, s.ecn, s.flags & CWR != 0))
            .collect()
    }

    #[test]
    fn sender_reduces_once_per_window_and_sends_cwr_with_the_next_new_data() {
        use crate::time::SimTime;
        let (mut s, out) = sender_with_ten_in_flight();
        let sent = data(&out);
        assert_eq!(sent.len(), 10);
        assert!(sent.iter().all(|&(_, e, c)| e == ECT0 && !c), "{sent:?}");
        let ack = |a: u64, ece: bool| Seg {
            flags: ACK | if ece { ECE } else { 0 },
            seq: 1,
            ack: a,
            wnd: 100_000,
            ..Default::default()
        };
        let mut t = 200_000_000;
        let mut feed = |s: &mut crate::tcp::sender::Sender, a: u64, ece: bool| {
            let mut out = vec![];
            t += 1_000_000;
            s.on_segment(SimTime(t), &ack(a, ece), &mut out);
            data(&out)
        };
        // the first ECE: ssthresh = FlightSize / 2 = 5 segments, cwnd = ssthresh, and
        // the ACK does not grow the window; 8 segments still out: nothing is sent
        assert!(feed(&mut s, 2001, true).is_empty());
        assert_eq!((s.tx.st.ssthresh, s.tx.st.cwnd), (5000, 5000));
        assert_eq!(s.tx.stats.extra.ecn_reductions, 1);
        // more ECEs within the same window: no further reduction (congestion
        // avoidance grows cwnd by MSS²/cwnd on each)
        assert!(feed(&mut s, 4001, true).is_empty());
        let sent = feed(&mut s, 7001, true);
        assert_eq!(s.tx.stats.extra.ecn_reductions, 1);
        assert!(s.tx.st.cwnd >= 5000);
        // the first new data segment carries CWR, the next ones not
        assert_eq!(sent[0], (10_001, ECT0, true));
        assert!(
            sent[1..].iter().all(|&(_, e, c)| e == ECT0 && !c),
            "{sent:?}"
        );
        // the ACK that exactly covers the reduction's window still answers data sent
        // before CWR: ignored
        feed(&mut s, 10_001, true);
        assert_eq!(s.tx.stats.extra.ecn_reductions, 1);
        // an ECE beyond it answers data sent after the reduction: a second one
        let cwnd = s.tx.st.cwnd;
        let sent = feed(&mut s, 11_001, true);
        assert_eq!(s.tx.stats.extra.ecn_reductions, 2);
        assert!(s.tx.st.cwnd < cwnd);
        assert!(sent.first().is_none_or(|d| d.2), "CWR again: {sent:?}");
        // no reduction while a loss recovery runs
        let high = s.tx.snd_max;
        s.tx.in_recovery = true;
        s.tx.recover_end = high;
        let before = s.tx.st.cwnd;
        s.tx.ecn_response(&mut crate::tcp::cc::reno::Reno, ACK | ECE, high + 1000);
        assert_eq!((s.tx.stats.extra.ecn_reductions, s.tx.st.cwnd), (2, before));
        // nor for an ACK without ECE, nor when ECN was not negotiated
        s.tx.in_recovery = false;
        assert!(!s
            .tx
            .ecn_response(&mut crate::tcp::cc::reno::Reno, ACK, high + 1000));
        s.tx.ecn.on = false;
        assert!(!s
            .tx
            .ecn_response(&mut crate::tcp::cc::reno::Reno, ACK | ECE, high + 1000));
        s.tx.ecn.on = true;
        assert!(s
            .tx
            .ecn_response(&mut crate::tcp::cc::reno::Reno, ACK | ECE, high + 1000));
    }

    #[test]
    fn the_fin_is_not_data_for_the_congestion_control() {
        // an ACK of two 1000 B segments and the FIN: CUBIC's slow start (Linux's, which
        // counts packets) grows by two segments, not three
        use crate::tcp::script::{seq, Script, Setup, MSS};
        let (mut sc, init) = Script::new(Setup {
            app_bytes: 2000,
            iw: 2,
            cc: crate::tcp::cc::CcConfig::Cubic,
            ..Setup::default()
        });
        assert_eq!(init.len(), 2);
        sc.ack(seq(2) + 1, &[]);
        assert_eq!(sc.s.tx.st.cwnd, 4 * MSS);
    }

    #[test]
    fn a_timeout_in_recovery_takes_rfc_5681_equation_4_as_written() {
        // NewReno without SACK, ten segments out, segment 0 lost: fast retransmit with
        // ssthresh = FlightSize / 2 = 5 segments; more duplicate ACKs inflate cwnd and send
        // new segments, so the flight grows to 14; then the retransmission is lost too and
        // the timer fires. The classic stack applies RFC 5681 (4) to that flight: 7
        // segments, above the episode's 5 (docs/notes/tcp-behaviour.md; the Linux engine
        // keeps the episode's value: `tcp::linux::tests::a_timeout_in_recovery_keeps_ssthresh`)
        use crate::tcp::script::{Script, Setup, MSS};
        use crate::time::SimDuration;
        let (mut sc, init) = Script::new(Setup {
            sack: false,
            ..Setup::default()
        });
        assert_eq!(init.len(), 10);
        for _ in 0..3 {
            sc.dupack(0, &[]);
        }
        assert!(sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.st.ssthresh, 5 * MSS);
        for _ in 0..6 {
            sc.dupack(0, &[]);
        }
        let flight = sc.s.tx.snd_max - sc.s.tx.snd_una;
        assert!(flight >= 14 * MSS, "inflation sent new data: {flight}");
        let t = sc.s.tx.rto_deadline.unwrap() + SimDuration::from_millis(1);
        let mut out = vec![];
        sc.s.on_timer(t, &mut out);
        assert_eq!(sc.s.tx.stats.timeouts, 1);
        assert_eq!(
            sc.s.tx.st.ssthresh,
            flight / 2,
            "FlightSize / 2 at the timeout"
        );
        assert!(sc.s.tx.st.ssthresh > 5 * MSS);
        assert_eq!(sc.s.tx.st.cwnd, MSS);
        // outside an episode RFC 5681 (4) applies as written: a timeout on a fresh
        // connection halves its flight
        let (mut sc, _) = Script::new(Setup {
            sack: false,
            ..Setup::default()
        });
        let t = sc.s.tx.rto_deadline.unwrap();
        sc.s.on_timer(t, &mut out);
        assert_eq!(sc.s.tx.st.ssthresh, 5 * MSS);
    }
}
