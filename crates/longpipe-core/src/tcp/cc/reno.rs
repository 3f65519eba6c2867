//! Standard AIMD window growth of RFC 5681: slow start below ssthresh, congestion
//! avoidance above. Tahoe, Reno and NewReno share it; they differ in loss recovery.
//!
//! [`LinuxReno`] is Linux's version (`tcp_reno_*` in `net/ipv4/tcp_cong.c`), used by
//! the Linux stack: it counts segments, grows only while cwnd-limited, adds every
//! segment acknowledged in slow start (`tcp_slow_start`), one segment per cwnd of
//! segments in congestion avoidance (`tcp_cong_avoid_ai`), and halves cwnd, not the
//! flight, on loss (`tcp_reno_ssthresh`).

use super::{
    additive_increase, linux_cong_avoid_ai, linux_slow_start, slow_start, CcState,
    CongestionControl,
};

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

/// Linux Reno.
#[derive(Debug, Default, Clone)]
pub struct LinuxReno {
    /// `snd_cwnd_cnt`
    cnt: u64,
}

impl CongestionControl for LinuxReno {
    fn name(&self) -> &'static str {
        "reno"
    }
    /// `tcp_reno_ssthresh`: max(cwnd/2, 2) segments.
    fn ssthresh(&mut self, st: &CcState) -> u64 {
        (st.cwnd_segs() / 2).max(2) * st.mss
    }
    /// `tcp_reno_cong_avoid`; `acked` is the bytes delivered by the ACK.
    fn cong_avoid(&mut self, st: &mut CcState, acked: u64) {
        if !st.cwnd_limited {
            return;
        }
        let mut acked = acked.div_ceil(st.mss);
        if st.in_slow_start() {
            acked = linux_slow_start(st, acked);
            if acked == 0 {
                return;
            }
        }
        let w = st.cwnd_segs();
        linux_cong_avoid_ai(st, &mut self.cnt, w, acked);
    }
    /// `snd_cwnd_cnt` restarts with every reduction (`tcp_init_cwnd_reduction`,
    /// `tcp_enter_loss`).
    fn set_state(&mut self, _st: &mut CcState, state: super::CaState) {
        if state != super::CaState::Open {
            self.cnt = 0;
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
            ..CcState::new(1000, 0)
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
    fn linux_reno_counts_segments() {
        let mut r = LinuxReno::default();
        // slow start adds every segment acknowledged (a stretch ACK of 3), up to ssthresh
        let mut s = st(4000, 6000);
        r.cong_avoid(&mut s, 3000);
        assert_eq!(s.cwnd, 6000);
        assert_eq!(r.cnt, 1, "the segment beyond ssthresh is a CA credit");
        // the rest of the ACK goes to congestion avoidance: +1 per cwnd (6) segments
        let mut r = LinuxReno::default();
        let mut s = st(5000, 6000);
        r.cong_avoid(&mut s, 3000); // 1 to slow start, 2 credits
        assert_eq!((s.cwnd, r.cnt), (6000, 2));
        r.cong_avoid(&mut s, 4000); // 6 credits: one segment
        assert_eq!((s.cwnd, r.cnt), (7000, 0));
        // no growth when not cwnd-limited
        let mut s = st(4000, 1 << 40);
        s.cwnd_limited = false;
        r.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 4000);
        // ssthresh from cwnd, not the flight, at least 2 segments
        let mut s = st(10_000, 1 << 40);
        s.flight = 4000;
        assert_eq!(r.ssthresh(&s), 5000);
        assert_eq!(r.ssthresh(&st(3000, 1 << 40)), 2000);
    }

    #[test]
    fn linux_reno_restarts_its_count_on_a_reduction_only() {
        use crate::tcp::cc::CaState;
        // 9 of the 10 credits for the next segment, in congestion avoidance
        let grown = |state: Option<CaState>| {
            let mut r = LinuxReno::default();
            let mut s = st(10_000, 5000);
            r.cong_avoid(&mut s, 9000);
            assert_eq!((s.cwnd, r.cnt), (10_000, 9));
            if let Some(state) = state {
                r.set_state(&mut s, state);
            }
            r.cong_avoid(&mut s, 1000);
            s.cwnd
        };
        assert_eq!(grown(None), 11_000);
        assert_eq!(grown(Some(CaState::Open)), 11_000, "Open keeps the count");
        for state in [CaState::Cwr, CaState::Recovery, CaState::Loss] {
            assert_eq!(grown(Some(state)), 10_000, "{state:?} restarts the count");
        }
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
