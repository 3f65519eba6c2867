//! Standard AIMD window growth of RFC 5681: slow start below ssthresh, congestion
//! avoidance above. Tahoe, Reno and NewReno share it; they differ in loss recovery.

use super::{additive_increase, slow_start, CcState, CongestionControl};

#[derive(Debug, Default, Clone)]
pub struct Reno;

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn cong_avoid(&mut self, st: &mut CcState, acked: u64) {
        if st.cwnd < st.ssthresh {
            // RFC 5681 (2)
            slow_start(st, acked);
        } else {
            // RFC 5681 (3)
            additive_increase(st);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;
    fn st(cwnd: u64, ssthresh: u64) -> CcState {
        CcState {
            now: SimTime(0),
            mss: 1000,
            cwnd,
            ssthresh,
            flight: cwnd,
            srtt: None,
            min_srtt: None,
            min_rtt_sample: None,
            cwnd_limited: true,
        }
    }
    #[test]
    fn slow_start_then_ca() {
        let mut r = Reno;
        let mut s = st(1000, 3000);
        r.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 2000);
        r.cong_avoid(&mut s, 2000); // min(N, SMSS)
        assert_eq!(s.cwnd, 3000);
        r.cong_avoid(&mut s, 1000); // CA: + 1000*1000/3000
        assert_eq!(s.cwnd, 3333);
    }
    #[test]
    fn loss_halves_flight() {
        let mut r = Reno;
        let s = st(10_000, 1 << 40);
        assert_eq!(r.ssthresh(&s), 5000);
        let s = st(1000, 1 << 40);
        assert_eq!(r.ssthresh(&s), 2000);
    }
}
