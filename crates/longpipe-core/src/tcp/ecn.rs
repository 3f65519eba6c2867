//! The TCP side of Explicit Congestion Notification (RFC 3168 §6.1), for every
//! congestion control.
//!
//! - Negotiation (§6.1.1): the sender's SYN carries ECE and CWR; a receiver that does
//!   ECN answers with ECE (and not CWR) on its SYN-ACK; ECN is on for the connection
//!   only then.
//! - Sender (§6.1.2, §6.1.5): new data segments carry ECT(0); retransmissions, pure
//!   ACKs and low-priority probes are Not-ECT. On an ACK with ECE it reduces its window
//!   as for a loss — `ssthresh` from the congestion control's own `ssthresh` hook,
//!   `cwnd = ssthresh`, no retransmission — at most once per window of data: not while
//!   a loss recovery or an RTO episode is running and not until an ACK goes beyond
//!   what was outstanding at the previous reduction (so answers data sent after it). The first new data segment
//!   after a reduction carries CWR. Window growth is skipped on the ACK that caused the
//!   reduction.
//! - Receiver (§6.1.3): after a data segment marked CE it sets ECE on every ACK until
//!   a data segment arrives with CWR (a CWR segment that is itself marked CE sets it
//!   again). It acknowledges a CE-marked segment at once when ECE was not already set
//!   (so the echo is not held by the delayed-ACK timer; Linux does the same).
//! - The Linux stack with SACK answers an echo in its own scheme instead
//!   (`recovery/linux.rs`, `tcp_enter_cwr`): the CWR state, cwnd brought down to the
//!   control's ssthresh by PRR over a round trip; every reduction there queues CWR
//!   ([`queue_cwr`]). BBR v1 ignores ECN there, as in Linux (it sets cwnd itself).
//!
//! Not modelled: the §6.1.2 rule for a window of one segment (reset the retransmission
//! timer instead of sending), ECN on SYN-ACKs (RFC 5562), ECN nonces, AccECN.

use super::cc::CongestionControl;
use super::seg::{Seg, CWR, ECE};
use super::tx::Tx;
use crate::net::packet::ecn::{CE, ECT0, NOT_ECT};

/// Sender-side ECN state.
#[derive(Debug, Clone, Default)]
pub struct EcnSender {
    /// Configured (the flow's `ecn`).
    pub wanted: bool,
    /// Negotiated on the handshake.
    pub on: bool,
    /// The next new data segment carries CWR.
    cwr_pending: bool,
    /// snd_max at the last reduction (exclusive end): ECE is ignored until an ACK
    /// goes beyond it (that ACK answers data sent after the reduction, the first of
    /// which carried CWR).
    high: u64,
}

impl EcnSender {
    pub fn new(wanted: bool) -> Self {
        EcnSender {
            wanted,
            ..Default::default()
        }
    }

    /// Flags our SYN carries (§6.1.1: ECE and CWR).
    pub fn syn_flags(&self) -> u8 {
        if self.wanted {
            ECE | CWR
        } else {
            0
        }
    }

    /// Reads the peer's SYN-ACK.
    pub fn on_synack(&mut self, flags: u8) {
        self.on = self.wanted && flags & (ECE | CWR) == ECE;
    }

    /// (ECN field, extra TCP flags) of a data segment; `retx` for a retransmission.
    pub fn data_marks(&mut self, retx: bool) -> (u8, u8) {
        if !self.on || retx {
            return (NOT_ECT, 0);
        }
        let cwr = if std::mem::take(&mut self.cwr_pending) {
            CWR
        } else {
            0
        };
        (ECT0, cwr)
    }
}

/// §6.1.2: the sender's response to an ACK acknowledging up to `ack` with `flags`.
/// Returns whether it reduced the window (then the ACK does not grow it).
pub fn on_ack(tx: &mut Tx, cc: &mut dyn CongestionControl, flags: u8, ack: u64) -> bool {
    let e = &tx.ecn;
    if !e.on
        || flags & ECE == 0
        || tx.in_recovery
        || tx.in_loss
        || ack <= e.high
        || ack < tx.recover_end
    {
        return false;
    }
    tx.sync_flight();
    tx.st.ssthresh = cc.ssthresh(&tx.st);
    tx.st.cwnd = tx.st.ssthresh;
    tx.ecn.high = tx.snd_max;
    queue_cwr(tx);
    tx.stats.extra.ecn_reductions += 1;
    true
}

/// Whether an ACK with `flags` echoes congestion on a connection that negotiated ECN.
pub fn ece(tx: &Tx, flags: u8) -> bool {
    tx.ecn.on && flags & ECE != 0
}

/// The next new data segment carries CWR (after a window reduction; the Linux stack
/// calls this on every reduction, as `tcp_ecn_queue_cwr`).
pub fn queue_cwr(tx: &mut Tx) {
    if tx.ecn.on {
        tx.ecn.cwr_pending = true;
    }
}

/// Receiver-side ECN state.
#[derive(Debug, Clone, Default)]
pub struct EcnReceiver {
    /// Configured (the flow's `ecn`).
    pub wanted: bool,
    /// Negotiated (the peer's SYN asked for it and we want it).
    pub on: bool,
    /// ACKs carry ECE.
    ece: bool,
}

impl EcnReceiver {
    pub fn new(wanted: bool) -> Self {
        EcnReceiver {
            wanted,
            ..Default::default()
        }
    }

    /// Reads the peer's SYN; returns the flags our SYN-ACK adds (§6.1.1: ECE).
    pub fn on_syn(&mut self, flags: u8) -> u8 {
        self.on = self.wanted && flags & (ECE | CWR) == ECE | CWR;
        self.synack_flags()
    }

    /// Flags our SYN-ACK carries (ECE when ECN is on).
    pub fn synack_flags(&self) -> u8 {
        if self.on {
            ECE
        } else {
            0
        }
    }

    /// A data segment arrives; returns whether it must be acknowledged at once (the
    /// first CE mark since the last CWR).
    pub fn on_data(&mut self, seg: &Seg) -> bool {
        if !self.on || seg.len == 0 {
            return false;
        }
        if seg.flags & CWR != 0 {
            self.ece = false;
        }
        if seg.ecn == CE && !self.ece {
            self.ece = true;
            return true;
        }
        false
    }

    /// Flags every ACK carries (ECE while set).
    pub fn ack_flags(&self) -> u8 {
        if self.ece {
            ECE
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::seg::{ACK, SYN};

    #[test]
    fn negotiation_needs_both_sides() {
        let mut s = EcnSender::new(true);
        let mut r = EcnReceiver::new(true);
        assert_eq!(s.syn_flags(), ECE | CWR);
        let synack = r.on_syn(SYN | s.syn_flags());
        assert_eq!(synack, ECE);
        s.on_synack(SYN | ACK | synack);
        assert!(s.on && r.on);
        // a receiver without ECN, or a SYN-ACK that echoes both flags (a reflector)
        let mut r2 = EcnReceiver::new(false);
        assert_eq!(r2.on_syn(SYN | ECE | CWR), 0);
        let mut s2 = EcnSender::new(true);
        s2.on_synack(SYN | ACK | ECE | CWR);
        assert!(!s2.on);
        // a sender without ECN sends a plain SYN; the receiver stays off
        let mut r3 = EcnReceiver::new(true);
        assert_eq!(r3.on_syn(SYN), 0);
        assert!(!r3.on);
    }

    #[test]
    fn sender_marks_new_data_ect_and_sets_cwr_once() {
        let mut s = EcnSender::new(true);
        assert_eq!(s.data_marks(false), (NOT_ECT, 0), "not negotiated");
        s.on_synack(SYN | ACK | ECE);
        assert_eq!(s.data_marks(false), (ECT0, 0));
        assert_eq!(
            s.data_marks(true),
            (NOT_ECT, 0),
            "retransmissions are Not-ECT"
        );
        s.cwr_pending = true;
        assert_eq!(s.data_marks(true), (NOT_ECT, 0), "CWR waits for new data");
        assert_eq!(s.data_marks(false), (ECT0, CWR));
        assert_eq!(s.data_marks(false), (ECT0, 0));
    }

    /// A NewReno sender with ECN, mss 1000, 10 segments in flight after the handshake
    /// (SYN at 0, SYN-ACK with ECE at 100 ms).
    fn sender_with_ten_in_flight() -> (crate::tcp::sender::Sender, Vec<Seg>) {
        use crate::tcp::cc::reno::Reno;
        use crate::tcp::recovery::RecoveryKind;
        use crate::tcp::sender::{Sender, SenderConfig};
        use crate::time::{SimDuration, SimTime};
        let cfg = SenderConfig {
            mss: 1000,
            iw_bytes: 10_000,
            initial_rto: SimDuration::from_secs(3),
            min_rto: SimDuration::from_secs(3),
            max_rto: SimDuration::from_secs(60),
            app_bytes: None,
            sack_permitted: false,
            initial_ssthresh: None,
            limited_transmit: false,
            ecn: true,
            stack: crate::tcp::stack::StackConfig::CLASSIC,
        };
        let mut s = Sender::new(
            cfg,
            Box::new(Reno),
            RecoveryKind::NewReno {
                partial_ack_timer_every: false,
            },
            false,
        );
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
        on_ack(
            &mut s.tx,
            &mut crate::tcp::cc::reno::Reno,
            ACK | ECE,
            high + 1000,
        );
        assert_eq!((s.tx.stats.extra.ecn_reductions, s.tx.st.cwnd), (2, before));
        // nor for an ACK without ECE, nor when ECN was not negotiated
        s.tx.in_recovery = false;
        assert!(!on_ack(
            &mut s.tx,
            &mut crate::tcp::cc::reno::Reno,
            ACK,
            high + 1000
        ));
        s.tx.ecn.on = false;
        assert!(!on_ack(
            &mut s.tx,
            &mut crate::tcp::cc::reno::Reno,
            ACK | ECE,
            high + 1000
        ));
        s.tx.ecn.on = true;
        assert!(on_ack(
            &mut s.tx,
            &mut crate::tcp::cc::reno::Reno,
            ACK | ECE,
            high + 1000
        ));
    }

    #[test]
    fn receiver_echoes_ce_until_cwr() {
        let mut r = EcnReceiver::new(true);
        r.on_syn(SYN | ECE | CWR);
        let data = |ecn: u8, flags: u8| Seg {
            flags: ACK | flags,
            len: 100,
            ecn,
            ..Default::default()
        };
        assert!(!r.on_data(&data(ECT0, 0)));
        assert_eq!(r.ack_flags(), 0);
        assert!(r.on_data(&data(CE, 0)), "first CE: ACK at once");
        assert_eq!(r.ack_flags(), ECE);
        assert!(!r.on_data(&data(CE, 0)), "already echoing");
        assert!(!r.on_data(&data(ECT0, 0)));
        assert_eq!(r.ack_flags(), ECE, "ECE stays until CWR");
        assert!(!r.on_data(&data(ECT0, CWR)));
        assert_eq!(r.ack_flags(), 0);
        assert!(
            r.on_data(&data(CE, CWR)),
            "a CWR segment marked CE sets it again"
        );
        assert_eq!(r.ack_flags(), ECE);
        // pure ACKs change nothing
        let mut pure = data(CE, CWR);
        pure.len = 0;
        assert!(!r.on_data(&pure));
        assert_eq!(r.ack_flags(), ECE);
    }
}
