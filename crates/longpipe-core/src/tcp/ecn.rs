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
//!   The sender's response is [`crate::tcp::tx::Tx::ecn_response`] (the classic engine).
//! - The Linux engine answers an echo in its own way instead (`linux/mod.rs`,
//!   `tcp_enter_cwr`): the CWR state, cwnd brought down to the control's ssthresh by PRR
//!   over a round trip; every reduction there queues CWR (`Tx::queue_cwr`). BBR v1
//!   ignores ECN there, as in Linux (it sets cwnd itself).
//!
//! Not modelled: the §6.1.2 rule for a window of one segment (reset the retransmission
//! timer instead of sending), ECN on SYN-ACKs (RFC 5562), ECN nonces, AccECN.

use super::seg::{Seg, CWR, ECE};
use crate::net::packet::ecn::{CE, ECT0, NOT_ECT};

/// Sender-side ECN state.
#[derive(Debug, Clone, Default)]
pub struct EcnSender {
    /// Configured (the flow's `ecn`).
    pub wanted: bool,
    /// Negotiated on the handshake.
    pub on: bool,
    /// The next new data segment carries CWR.
    pub(crate) cwr_pending: bool,
    /// snd_max at the last reduction (exclusive end): ECE is ignored until an ACK
    /// goes beyond it (that ACK answers data sent after the reduction, the first of
    /// which carried CWR).
    pub(crate) high: u64,
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
