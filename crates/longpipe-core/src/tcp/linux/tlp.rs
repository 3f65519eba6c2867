//! Tail Loss Probe (RFC 8985 §7, as Linux `tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe`, `tcp_process_tlp_ack`, Linux 6.x).
//!
//! In the Open (or CWR) state with data outstanding and SACK on, a probe timeout
//! PTO = 2·SRTT (+ the minimum RTO when only one segment is outstanding, for the
//! receiver's delayed ACK; + 2 ms otherwise), capped by the time left to the RTO,
//! replaces the RTO. When it fires the sender sends one new segment (cwnd ignored) if
//! the receiver's window allows, else retransmits the last segment, so that a tail loss
//! produces SACKs and RACK can repair it without a timeout. If the probe's ACK shows
//! that a retransmitted probe repaired a loss (the ACK passes the probe without a
//! D-SACK for it), cwnd is reduced once (Linux's CWR state).

use crate::time::{SimDuration, SimTime};

/// `TCP_TIMEOUT_MIN_US`
const TIMEOUT_MIN: SimDuration = SimDuration(2_000_000);
/// `TCP_TIMEOUT_INIT` (no RTT sample yet)
const TIMEOUT_INIT: SimDuration = SimDuration(1_000_000_000);

#[derive(Debug, Clone, Default)]
pub struct Tlp {
    /// snd_nxt when the probe was sent (`tlp_high_seq`); None: no probe outstanding.
    pub high_seq: Option<u64>,
    /// The probe was a retransmission (`tlp_retrans`).
    pub retrans: bool,
    pub deadline: Option<SimTime>,
    /// Probes sent.
    pub probes: u64,
}

/// What the ACK of a probe means (`tcp_process_tlp_ack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAck {
    /// Nothing decided yet (the ACK is below the probe).
    Pending,
    /// The episode ended without a loss.
    NoLoss,
    /// The retransmitted probe repaired a loss: reduce cwnd once.
    Repaired,
}

impl Tlp {
    /// The probe timeout (`tcp_schedule_loss_probe`): `packets_out` segments
    /// outstanding, `rto_left` the time to the retransmission timer.
    pub fn pto(
        srtt: Option<SimDuration>,
        packets_out: u64,
        rto_min: SimDuration,
        rto_left: SimDuration,
    ) -> SimDuration {
        let t = match srtt {
            Some(s) => {
                s.saturating_mul(2)
                    + if packets_out == 1 {
                        rto_min
                    } else {
                        TIMEOUT_MIN
                    }
            }
            None => TIMEOUT_INIT,
        };
        t.min(rto_left)
    }

    /// The ACK of `ack` arrived with a probe outstanding; `dsack` if it carried a
    /// D-SACK, `pure_dup` if it acknowledged nothing new (no SACK, same window).
    pub fn on_ack(&mut self, ack: u64, dsack: bool, pure_dup: bool) -> ProbeAck {
        let Some(high) = self.high_seq else {
            return ProbeAck::Pending;
        };
        if ack < high {
            return ProbeAck::Pending;
        }
        let verdict = if !self.retrans || dsack {
            // new data probed, or both the original and the probe arrived
            ProbeAck::NoLoss
        } else if ack > high {
            ProbeAck::Repaired
        } else if pure_dup {
            ProbeAck::NoLoss
        } else {
            return ProbeAck::Pending;
        };
        self.high_seq = None;
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn probe_timeout() {
        let rto_min = SimDuration(200 * MS);
        let far = SimDuration(10_000 * MS);
        let srtt = Some(SimDuration(100 * MS));
        assert_eq!(Tlp::pto(srtt, 5, rto_min, far), SimDuration(202 * MS));
        // one segment out: room for the receiver's delayed ACK
        assert_eq!(Tlp::pto(srtt, 1, rto_min, far), SimDuration(400 * MS));
        // never later than the RTO
        assert_eq!(
            Tlp::pto(srtt, 5, rto_min, SimDuration(150 * MS)),
            SimDuration(150 * MS)
        );
        assert_eq!(Tlp::pto(None, 5, rto_min, far), SimDuration(1000 * MS));
    }

    #[test]
    fn probe_ack_verdicts() {
        let probe = |retrans| Tlp {
            high_seq: Some(10_001),
            retrans,
            ..Default::default()
        };
        // below the probe: wait
        assert_eq!(probe(true).on_ack(9001, false, false), ProbeAck::Pending);
        // a retransmitted probe and an ACK beyond it without D-SACK: the probe repaired
        // a loss
        let mut t = probe(true);
        assert_eq!(t.on_ack(10_001 + 1000, false, false), ProbeAck::Repaired);
        assert_eq!(t.high_seq, None);
        // with a D-SACK: the original arrived too, no loss
        assert_eq!(probe(true).on_ack(11_001, true, false), ProbeAck::NoLoss);
        // a probe of new data: no loss to account for
        assert_eq!(probe(false).on_ack(11_001, false, false), ProbeAck::NoLoss);
        // a pure duplicate ACK at the probe: both copies arrived
        assert_eq!(probe(true).on_ack(10_001, false, true), ProbeAck::NoLoss);
        assert_eq!(probe(true).on_ack(10_001, false, false), ProbeAck::Pending);
    }
}
