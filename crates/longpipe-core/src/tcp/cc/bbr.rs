//! BBR v1 as Linux implements it (`net/ipv4/tcp_bbr.c`, Linux 6.x): a model of the path
//! (bottleneck bandwidth = windowed max of delivery-rate samples over 10 round trips;
//! min RTT = windowed min over 10 s) sets the pacing rate (pacing_gain · bw, 1 % below)
//! and cwnd (cwnd_gain · BDP plus ACK-aggregation and quantisation allowances) on every
//! ACK (`cong_control`). Modes: STARTUP (gains 2/ln 2 until the bandwidth grew less
//! than 25 % for 3 rounds), DRAIN (pacing gain ln 2 / 2 until the queue is gone),
//! PROBE_BW (the 8-phase gain cycle 5/4, 3/4, 1 × 6, starting at a random phase),
//! PROBE_RTT (cwnd 4 segments for max(200 ms, 1 round) when min RTT is 10 s old). Loss
//! does not reduce the model; recovery uses packet conservation for a round, then
//! restores cwnd; a long-term ("policer") bandwidth is used after two lossy intervals
//! of consistent rate.
//!
//! Units follow Linux: bandwidth in segments per µs scaled by 2^24 (`BW_UNIT`), gains
//! scaled by 256 (`BBR_UNIT`), cwnd in segments. Restarts after idle periods
//! (`CA_EVENT_TX_START`) are not modelled: the sources here are bulk transfers. Bytes from the sender are divided by
//! the MSS. What of BBRv3 is absent (loss- and ECN-bounded inflight_hi/lo, the new
//! probing state machine) is listed in docs/notes/linux-profile.md.

use super::minmax::MinMax;
use super::{CaState, CcState, CongestionControl, RateSample};
use crate::time::SimTime;

const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u64 = 1 << BBR_SCALE;
const CYCLE_LEN: usize = 8;
const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
const MIN_RTT_WIN_MS: u64 = 10_000;
const PROBE_RTT_MODE_MS: u64 = 200;
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
const PACING_MARGIN_PERCENT: u64 = 1;
pub const HIGH_GAIN: u64 = BBR_UNIT * 2885 / 1000 + 1;
pub const DRAIN_GAIN: u64 = BBR_UNIT * 1000 / 2885;
const CWND_GAIN: u64 = BBR_UNIT * 2;
pub const PACING_GAIN: [u64; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
const CYCLE_RAND: u64 = 7;
const CWND_MIN_TARGET: u64 = 4;
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
const LT_BW_DIFF: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
const EXTRA_ACKED_GAIN: u64 = BBR_UNIT;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;
/// TCP_INIT_CWND
const INIT_CWND: u64 = 10;
/// GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// `sk_pacing_shift`: TSO autosizing aims at ~1 ms of data.
const PACING_SHIFT: u32 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

#[derive(Debug, Clone)]
pub struct Bbr {
    pub mode: Mode,
    pub min_rtt_us: u64,
    min_rtt_stamp: u64,
    probe_rtt_done_stamp: Option<u64>,
    bw: MinMax,
    pub rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: SimTime,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    pub lt_use_bw: bool,
    pub lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp: u64,
    lt_last_lost: u64,
    pub pacing_gain: u64,
    pub cwnd_gain: u64,
    pub full_bw_reached: bool,
    full_bw_cnt: u32,
    pub cycle_idx: usize,
    has_seen_rtt: bool,
    prior_cwnd: u64,
    full_bw: u64,
    ack_epoch_mstamp: SimTime,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    rng: u64,
}

fn jiffies(t: SimTime) -> u64 {
    t.0 / 1_000_000
}

impl Bbr {
    pub fn new(seed: u64) -> Self {
        Bbr {
            mode: Mode::Startup,
            min_rtt_us: u64::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: None,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: SimTime::ZERO,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: SimTime::ZERO,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            rng: seed | 1,
        }
    }

    /// A uniform draw in [0, n) from the flow's stream (xorshift64*).
    fn rand_below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % n
    }

    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }

    /// The bandwidth estimate (segments/µs << 24).
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec`
    pub fn rate_bytes_per_sec(st: &CcState, rate: u64, gain: u64) -> u64 {
        let r = (rate as u128 * st.mss as u128 * gain as u128) >> BBR_SCALE;
        let r = r * (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (r >> BW_SCALE) as u64
    }

    fn init_pacing_rate_from_rtt(&mut self, st: &mut CcState) {
        let rtt_us = match st.srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                (s.0 / 1000).max(1)
            }
            None => 1000,
        };
        let bw = st.cwnd_segs() * BW_UNIT / rtt_us;
        st.pacing_rate = Self::rate_bytes_per_sec(st, bw, HIGH_GAIN);
    }

    fn set_pacing_rate(&mut self, st: &mut CcState, bw: u64, gain: u64) {
        let rate = Self::rate_bytes_per_sec(st, bw, gain);
        if !self.has_seen_rtt && st.srtt.is_some() {
            self.init_pacing_rate_from_rtt(st);
        }
        if self.full_bw_reached || rate > st.pacing_rate {
            st.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_goal`
    fn tso_segs_goal(st: &CcState) -> u64 {
        let min = if st.pacing_rate < MIN_TSO_RATE_BPS / 8 {
            1
        } else {
            2
        };
        let bytes = (st.pacing_rate >> PACING_SHIFT).min(TSO_MAX_BYTES);
        (bytes / st.mss).max(min).min(0x7f)
    }

    fn save_cwnd(&mut self, st: &CcState) {
        let cwnd = st.cwnd_segs();
        self.prior_cwnd = if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            cwnd
        } else {
            self.prior_cwnd.max(cwnd)
        };
    }

    /// `bbr_bdp`: ceil(bw · min_rtt · gain) in segments.
    pub fn bdp(&self, bw: u64, gain: u64) -> u64 {
        if self.min_rtt_us == u64::MAX {
            return INIT_CWND;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        (((w * gain as u128) >> BBR_SCALE) as u64).div_ceil(BW_UNIT)
    }

    /// `bbr_quantization_budget`
    fn quantization_budget(&self, st: &CcState, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * Self::tso_segs_goal(st);
        cwnd = (cwnd + 1) & !1; // round up to even: fewer delayed ACKs
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    pub fn inflight(&self, st: &CcState, bw: u64, gain: u64) -> u64 {
        let i = self.bdp(bw, gain);
        self.quantization_budget(st, i)
    }

    /// `bbr_packets_in_net_at_edt`
    fn packets_in_net_at_edt(&self, st: &CcState, inflight_now: u64) -> u64 {
        let edt = st.next_send.max(st.now);
        let interval_us = (edt.0 - st.now.0) / 1000;
        let interval_delivered = (self.bw() * interval_us) >> BW_SCALE;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += Self::tso_segs_goal(st);
        }
        at_edt.saturating_sub(interval_delivered)
    }

    fn ack_aggregation_cwnd(&self) -> u64 {
        if self.full_bw_reached {
            let max_aggr = self.bw() * EXTRA_ACKED_MAX_US / BW_UNIT;
            ((EXTRA_ACKED_GAIN * self.extra_acked()) >> BBR_SCALE).min(max_aggr)
        } else {
            0
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: returns the cwnd and whether packet
    /// conservation applies.
    fn recover_or_restore(&mut self, st: &CcState, rs: &RateSample, acked: u64) -> (u64, bool) {
        let mss = st.mss;
        let mut cwnd = st.cwnd_segs();
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses.div_ceil(mss)).max(1);
        }
        let (prev, state) = (self.prev_ca_state, st.ca_state);
        let in_flight = st.in_flight.div_ceil(mss);
        if state == CaState::Recovery && prev != CaState::Recovery {
            // first round of recovery: packet conservation
            self.packet_conservation = true;
            self.next_rtt_delivered = st.delivered;
            cwnd = in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            // recovery ended: restore the cwnd saved before it
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight + acked), true);
        }
        (cwnd, false)
    }

    fn set_cwnd(&mut self, st: &mut CcState, rs: &RateSample, bw: u64, gain: u64) {
        let acked = rs.acked_sacked / st.mss;
        let mut cwnd = st.cwnd_segs();
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(st, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(st, target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || st.delivered / st.mss < INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        st.cwnd = cwnd * st.mss;
    }

    fn is_next_cycle_phase(&self, st: &CcState, rs: &RateSample) -> bool {
        let full_length =
            (st.delivered_time.0.saturating_sub(self.cycle_mstamp.0)) / 1000 > self.min_rtt_us;
        if self.pacing_gain == BBR_UNIT {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(st, rs.prior_in_flight.div_ceil(st.mss));
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return full_length
                && (rs.losses > 0 || inflight >= self.inflight(st, bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(st, bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self, st: &CcState) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = st.delivered_time;
    }

    fn reset_probe_bw_mode(&mut self, st: &CcState) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rand_below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(st);
    }

    fn reset_mode(&mut self, st: &CcState) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(st);
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn update_bw(&mut self, st: &CcState, rs: &RateSample) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else {
            return;
        };
        let interval_us = interval.0 / 1000;
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = st.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(st, rs);
        let bw =
            (delivered as u128 * BW_UNIT as u128 / st.mss as u128 / interval_us as u128) as u64;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    fn update_ack_aggregation(&mut self, st: &CcState, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = (st.delivered_time.0.saturating_sub(self.ack_epoch_mstamp.0)) / 1000;
        let mut expected = self.bw() * epoch_us / BW_UNIT;
        let acked = rs.acked_sacked / st.mss;
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + acked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = st.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + acked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(st.cwnd_segs());
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = (self.full_bw * FULL_BW_THRESH) >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, st: &mut CcState) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            st.ssthresh = self.inflight(st, self.max_bw(), BBR_UNIT) * st.mss;
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(st, st.in_flight.div_ceil(st.mss))
                <= self.inflight(st, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(st);
        }
    }

    fn check_probe_rtt_done(&mut self, st: &mut CcState) {
        let now = jiffies(st.now);
        if self.probe_rtt_done_stamp.is_none_or(|d| now <= d) {
            return;
        }
        self.min_rtt_stamp = now;
        st.cwnd = st.cwnd.max(self.prior_cwnd * st.mss);
        self.reset_mode(st);
    }

    fn update_min_rtt(&mut self, st: &mut CcState, rs: &RateSample) {
        let now = jiffies(st.now);
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN_MS;
        if let Some(rtt) = rs.rtt {
            let r = rtt.0 / 1000;
            if r < self.min_rtt_us || (expired && !rs.is_ack_delayed) {
                self.min_rtt_us = r;
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(st);
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // ignore low-rate samples during this mode
            st.app_limited = (st.delivered + st.in_flight).max(1);
            match self.probe_rtt_done_stamp {
                None if st.in_flight <= CWND_MIN_TARGET * st.mss => {
                    self.probe_rtt_done_stamp = Some(now + PROBE_RTT_MODE_MS);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = st.delivered;
                }
                Some(_) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done {
                        self.check_probe_rtt_done(st);
                    }
                }
                None => {}
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw if self.lt_use_bw => (BBR_UNIT, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn init(&mut self, st: &mut CcState) {
        st.ssthresh = u64::MAX / 4;
        self.next_rtt_delivered = st.delivered;
        self.min_rtt_us = st.min_rtt_sample.map_or(u64::MAX, |r| r.0 / 1000);
        self.min_rtt_stamp = jiffies(st.now);
        self.bw.reset(self.rtt_cnt, 0);
        self.init_pacing_rate_from_rtt(st);
        self.reset_lt_bw_sampling(st);
        self.mode = Mode::Startup;
        self.ack_epoch_mstamp = st.now;
        st.pacing = true;
    }

    /// `bbr_ssthresh`: remembers cwnd; the threshold itself is not reduced.
    fn ssthresh(&mut self, st: &CcState) -> u64 {
        self.save_cwnd(st);
        st.ssthresh
    }

    fn cong_avoid(&mut self, _st: &mut CcState, _acked: u64) {}

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_main`
    fn cong_control(&mut self, st: &mut CcState, rs: &RateSample) {
        self.update_bw(st, rs);
        self.update_ack_aggregation(st, rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(st, rs) {
            self.advance_cycle_phase(st);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(st);
        self.update_min_rtt(st, rs);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(st, bw, self.pacing_gain);
        self.set_cwnd(st, rs, bw, self.cwnd_gain);
    }

    /// `bbr_undo_cwnd`: a spurious slow-down resets full-pipe detection.
    fn undo_cwnd(&mut self, st: &CcState, _prior_cwnd: u64) -> u64 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(st);
        st.cwnd
    }

    /// `bbr_set_state`: an RTO ends a round and counts as a lossy sample.
    fn set_state(&mut self, st: &mut CcState, state: CaState) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            let rs = RateSample {
                losses: 1,
                ..Default::default()
            };
            self.lt_bw_sampling(st, &rs);
        }
    }
}

#[path = "bbr_lt.rs"]
mod lt;

#[cfg(test)]
#[path = "bbr_tests.rs"]
mod tests;
