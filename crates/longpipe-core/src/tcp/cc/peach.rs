//! Window rules of the TCP-Peach family (TCP-Peach, Akyildiz, Morabito & Palazzo,
//! IEEE/ACM ToN 9(3), 2001; TCP-Peach+, Akyildiz, Zhang & Fang, IEEE Comm. Letters
//! 6(7), 2002; TCP-Cherry, Utsumi, Zabir & Shiratori, Computer Communications 31(10),
//! 2008). The probing algorithms themselves (Sudden/Jump/Fast-Forward Start,
//! Rapid/Quick/First-Aid Recovery) are in [`crate::tcp::recovery::peach`].
//!
//! - Growth on ACKs of data: RFC 5681 (slow start below ssthresh, congestion avoidance
//!   above). A start phase sets ssthresh to its one-segment window, so after it the
//!   window grows by congestion avoidance, plus one segment per probe ACK
//!   ([`on_probe_ack`]): the probes, not slow start, find the spare capacity.
//! - Reduction (Rapid and Quick Recovery, ECN): half the window in use,
//!   `max(min(cwnd, FlightSize) / 2, 2 SMSS)`. The papers halve cwnd; taking the
//!   smaller of cwnd and the flight first makes a receiver-limited connection (whose
//!   cwnd may have grown past what it can send) halve what it actually sends.

use super::{additive_increase, slow_start, CcState, CongestionControl};

#[derive(Debug, Default, Clone)]
pub struct PeachCc;

impl CongestionControl for PeachCc {
    fn name(&self) -> &'static str {
        "peach"
    }
    fn ssthresh(&mut self, st: &CcState) -> u64 {
        (st.cwnd.min(st.flight) / 2).max(2 * st.mss)
    }
    fn cong_avoid(&mut self, st: &mut CcState, acked: u64) {
        if st.cwnd < st.ssthresh {
            slow_start(st, acked);
        } else {
            additive_increase(st);
        }
    }
}

/// A probe ACK (a dummy, NIL or supplement segment got through): one more segment of
/// window, as long as the window is below the receiver's (`peer_wnd`).
pub fn on_probe_ack(st: &mut CcState, peer_wnd: u64) {
    if st.cwnd < peer_wnd {
        st.cwnd += st.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    fn st(cwnd: u64, ssthresh: u64, flight: u64) -> CcState {
        CcState {
            now: SimTime(0),
            ssthresh,
            flight,
            ..CcState::new(1000, cwnd)
        }
    }

    #[test]
    fn reduction_halves_the_window_in_use() {
        let mut p = PeachCc;
        assert_eq!(p.ssthresh(&st(40_000, 1 << 40, 40_000)), 20_000);
        // receiver-limited: cwnd grew past the 30-segment flight
        assert_eq!(p.ssthresh(&st(90_000, 1 << 40, 30_000)), 15_000);
        assert_eq!(
            p.ssthresh(&st(3_000, 1 << 40, 3_000)),
            2_000,
            "at least 2 SMSS"
        );
    }

    #[test]
    fn data_acks_follow_rfc5681_and_probe_acks_add_a_segment_below_rwnd() {
        let mut p = PeachCc;
        // after a start phase: ssthresh = cwnd, congestion avoidance
        let mut s = st(1000, 1000, 1000);
        p.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 2000, "CA at one segment: + 1000·1000/1000");
        for _ in 0..5 {
            on_probe_ack(&mut s, 6000);
        }
        assert_eq!(s.cwnd, 6000, "probe ACKs stop at the receiver's window");
        p.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 6166);
        // below ssthresh (after an RTO without a new start phase): slow start
        let mut s = st(1000, 8000, 1000);
        p.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 2000);
    }
}
