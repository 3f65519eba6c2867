//! BBR's long-term ("policer") bandwidth estimate (`bbr_lt_bw_sampling` and helpers
//! in `tcp_bbr.c`): after a loss, intervals of at least 4 round trips with a loss rate
//! of 20 % or more are measured; two consecutive ones with a consistent rate (within
//! 1/8 or 4 kbit/s) mean a token-bucket policer, whose rate is then used for 48 round
//! trips with a pacing gain of 1.

use super::{
    Bbr, Mode, BBR_SCALE, BBR_UNIT, BW_UNIT, LT_BW_DIFF, LT_BW_MAX_RTTS, LT_BW_RATIO,
    LT_INTVL_MIN_RTTS, LT_LOSS_THRESH,
};
use crate::tcp::cc::{CcState, RateSample};

/// A time in µs.
fn us(t: crate::time::SimTime) -> u64 {
    t.0 / 1000
}

impl Bbr {
    pub(super) fn reset_lt_bw_sampling_interval(&mut self, st: &CcState) {
        self.lt_last_stamp = us(st.delivered_time) / 1000;
        self.lt_last_delivered = st.delivered;
        self.lt_last_lost = st.lost;
        self.lt_rtt_cnt = 0;
    }

    pub(super) fn reset_lt_bw_sampling(&mut self, st: &CcState) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(st);
    }

    pub(super) fn lt_bw_interval_done(&mut self, st: &CcState, bw: u64) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw
                || Self::rate_bytes_per_sec(st, diff, BBR_UNIT) <= LT_BW_DIFF
            {
                // two consistent lossy intervals: we are policed
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(st);
    }

    pub(super) fn lt_bw_sampling(&mut self, st: &CcState, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(st);
                    self.reset_probe_bw_mode(st);
                }
            }
            return;
        }
        // wait for the first loss, so the policer's tokens are exhausted
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(st);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(st);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(st);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = (st.lost - self.lt_last_lost) / st.mss;
        let delivered = (st.delivered - self.lt_last_delivered) / st.mss;
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = (us(st.delivered_time) / 1000).saturating_sub(self.lt_last_stamp);
        if t < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t * 1000);
        self.lt_bw_interval_done(st, bw);
    }
}
