//! CUBIC (RFC 9438) as Linux implements it (`net/ipv4/tcp_cubic.c`, Linux 6.x, with
//! HZ = 1000), in segments:
//!
//! - W_cubic(t) = C·(t − K)³ + W_max with C = 0.4 (`bic_scale` 41/1024 · 10), t the time
//!   since the epoch started plus the minimum RTT (`delay_min`), K = ∛(W_max·(1−β)/C);
//!   per ACK cwnd grows by one segment every `cnt` = cwnd / (W_cubic − cwnd) segments
//!   acknowledged (`bictcp_update`, `tcp_cong_avoid_ai`), at most 1 per 2 (cnt ≥ 2),
//!   and at most 5 % per RTT before the first loss (cnt ≤ 20).
//! - Multiplicative decrease β = 717/1024 ≈ 0.7 of cwnd (`cubictcp_recalc_ssthresh`),
//!   with fast convergence: W_max = cwnd·(1 + β)/2 when cwnd is below the last W_max.
//! - TCP-friendly region: an estimate of Reno's window grown by one segment per
//!   cwnd·8/`beta_scale` segments acknowledged (RFC 9438's α = 3(1−β)/(1+β)); cnt is
//!   lowered so that CUBIC grows at least as fast.
//! - Linux's HyStart (the original Ha & Rhee algorithm, *not* RFC 9406 HyStart++):
//!   from cwnd ≥ 16 in slow start, exit slow start (ssthresh = cwnd) when an ACK train
//!   of closely spaced ACKs (≤ 2 ms apart) lasts longer than delay_min/2 (delay_min
//!   plus a GSO cushion when paced), or when the minimum RTT of the first 8 samples of a
//!   round exceeds delay_min + clamp(delay_min/8, 4 ms, 16 ms).
//! - The cube root uses Linux's table and one Newton–Raphson step.
//!
//! Times: `tcp_jiffies32` is the simulated time in ms (HZ = 1000), HyStart's clock in µs.

use super::{linux_cong_avoid_ai, linux_slow_start, CaState, CcState, CongestionControl};
use crate::time::SimDuration;

const BICTCP_BETA_SCALE: u64 = 1024;
/// `BICTCP_HZ`: the cubic function's time unit is 1/1024 s.
const BICTCP_HZ: u32 = 10;
const HZ: u64 = 1000;
const BETA: u64 = 717;
const BIC_SCALE: u64 = 41;
/// `cube_rtt_scale` = bic_scale · 10 (C = 0.4 scaled by 1024).
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
/// `beta_scale` = 8·(1024 + β)/3/(1024 − β) = 15.
const BETA_SCALE: u64 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
/// `cube_factor` = 2^40 / (bic_scale · 10).
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE * 10);

const HYSTART_LOW_WINDOW: u64 = 16;
const HYSTART_ACK_DELTA_US: u64 = 2000;
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN_US: u64 = 4000;
const HYSTART_DELAY_MAX_US: u64 = 16000;
/// `sk_gso_max_size` for HyStart's ACK-train cushion (GSO_LEGACY_MAX_SIZE).
const GSO_MAX_SIZE: u64 = 65_536;

/// Linux `cubic_root`: table lookup then one Newton–Raphson iteration (≈ 0.2 % error).
pub fn cubic_root(a: u64) -> u64 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = 64 - a.leading_zeros(); // fls64
    if b < 7 {
        return (V[a as usize] as u64 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let x = (((V[shift] as u32 + 10) << b) >> 6) as u64;
    let x = 2 * x + a / (x * (x - 1));
    (x * 341) >> 10
}

#[derive(Debug, Clone, Default)]
pub struct Cubic {
    /// Increase cwnd by one segment after `cnt` segments acknowledged.
    pub cnt: u64,
    pub last_max_cwnd: u64,
    last_cwnd: u64,
    last_time: u64,
    pub origin_point: u64,
    /// K in 1/1024 s.
    pub k: u64,
    /// Minimum RTT in µs (0: none yet).
    pub delay_min: u64,
    /// Start of the epoch in ms (None: a reduction ended the last one).
    pub epoch_start: Option<u64>,
    ack_cnt: u64,
    pub tcp_cwnd: u64,
    /// `snd_cwnd_cnt` of `tcp_cong_avoid_ai`.
    cwnd_cnt: u64,
    // HyStart
    pub found: bool,
    round_start: u64,
    end_seq: u64,
    last_ack: u64,
    curr_rtt: u64,
    sample_cnt: u32,
}

fn jiffies(st: &CcState) -> u64 {
    st.now.0 / (1_000_000_000 / HZ)
}

fn clock_us(st: &CcState) -> u64 {
    st.now.0 / 1000
}

impl Cubic {
    /// `bictcp_reset` then `bictcp_hystart_reset`, as both of Linux's callers
    /// (`cubictcp_init`, and `cubictcp_state` on a timeout) do: everything starts over,
    /// HyStart with a new round. (`snd_cwnd_cnt`, kept here, is 0 at both: a fresh
    /// connection, and the timeout's reduction clears it first.)
    fn restart(&mut self, st: &CcState) {
        *self = Cubic::default();
        self.hystart_reset(st);
    }

    /// `bictcp_hystart_reset`: a new round starts.
    fn hystart_reset(&mut self, st: &CcState) {
        self.round_start = clock_us(st);
        self.last_ack = self.round_start;
        self.end_seq = st.snd_nxt;
        self.curr_rtt = u64::MAX;
        self.sample_cnt = 0;
    }

    /// `bictcp_update`: the target window and `cnt`.
    pub fn update(&mut self, st: &CcState, cwnd: u64, acked: u64) {
        let now = jiffies(st);
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && now.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        // the cubic function is recomputed at most once per jiffy
        if !(self.epoch_start.is_some() && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            let epoch = match self.epoch_start {
                Some(e) => e,
                None => {
                    self.epoch_start = Some(now);
                    self.ack_cnt = acked;
                    self.tcp_cwnd = cwnd;
                    if self.last_max_cwnd <= cwnd {
                        self.k = 0;
                        self.origin_point = cwnd;
                    } else {
                        self.k = cubic_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd));
                        self.origin_point = self.last_max_cwnd;
                    }
                    now
                }
            };
            // t = time since the epoch + delay_min, in 1/1024 s
            let mut t = now - epoch;
            t += self.delay_min.div_ceil(1_000_000 / HZ); // usecs_to_jiffies
            let t = (t << BICTCP_HZ) / HZ;
            let offs = t.abs_diff(self.k);
            let delta = (CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
            let target = if t < self.k {
                self.origin_point.saturating_sub(delta)
            } else {
                self.origin_point + delta
            };
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd // very small increment
            };
            // the first growth (no loss yet) is at least 5 % per RTT
            if self.last_max_cwnd == 0 {
                self.cnt = self.cnt.min(20);
            }
        }
        // TCP-friendly region: grow at least as fast as Reno would
        let delta = (cwnd * BETA_SCALE) >> 3;
        while self.ack_cnt > delta && delta > 0 {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // at most 1.5x per RTT
        self.cnt = self.cnt.max(2);
    }

    /// `hystart_update` with an RTT sample of `delay` µs.
    fn hystart_update(&mut self, st: &mut CcState, delay: u64) {
        if st.snd_una > self.end_seq {
            self.hystart_reset(st);
        }
        let now = clock_us(st);
        // ACK train: closely spaced ACKs lasting longer than half the minimum RTT
        if now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA_US {
            self.last_ack = now;
            let mut threshold = self.delay_min + hystart_ack_delay(st);
            if !st.pacing {
                threshold >>= 1;
            }
            if now - self.round_start > threshold {
                self.found = true;
                st.ssthresh = st.cwnd;
            }
        }
        // delay increase
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
            if self.curr_rtt > self.delay_min + thresh {
                self.found = true;
                st.ssthresh = st.cwnd;
            }
        }
    }
}

/// `hystart_ack_delay`: a cushion for TSO/GRO aggregation, min(1 ms, 4 GSO packets at the
/// pacing rate), in µs.
fn hystart_ack_delay(st: &CcState) -> u64 {
    if st.pacing_rate == 0 {
        return 0;
    }
    (GSO_MAX_SIZE * 4 * 1_000_000 / st.pacing_rate).min(1000)
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `cubictcp_init`: HyStart starts its first round.
    fn init(&mut self, st: &mut CcState) {
        self.restart(st);
    }

    /// `cubictcp_recalc_ssthresh`: β·cwnd, with fast convergence of W_max.
    fn ssthresh(&mut self, st: &CcState) -> u64 {
        let cwnd = st.cwnd_segs();
        self.epoch_start = None;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            cwnd * (BICTCP_BETA_SCALE + BETA) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd * BETA / BICTCP_BETA_SCALE).max(2) * st.mss
    }

    /// `cubictcp_cong_avoid`; `acked` is the bytes delivered by the ACK.
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
        let cwnd = st.cwnd_segs();
        self.update(st, cwnd, acked);
        let w = self.cnt;
        linux_cong_avoid_ai(st, &mut self.cwnd_cnt, w, acked);
    }

    /// `cubictcp_acked`: delay_min and HyStart.
    fn pkts_acked(&mut self, st: &mut CcState, _acked: u64, rtt: Option<SimDuration>) {
        let Some(rtt) = rtt else { return };
        // discard delay samples right after a reduction
        if self
            .epoch_start
            .is_some_and(|e| jiffies(st).saturating_sub(e) < HZ)
        {
            return;
        }
        let delay = (rtt.0 / 1000).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && st.in_slow_start() && st.cwnd_segs() >= HYSTART_LOW_WINDOW {
            self.hystart_update(st, delay);
        }
    }

    /// `cubictcp_state`: a timeout resets everything; the cwnd credit restarts with
    /// every reduction.
    fn set_state(&mut self, st: &mut CcState, state: CaState) {
        if state != CaState::Open {
            self.cwnd_cnt = 0;
        }
        if state == CaState::Loss {
            self.restart(st);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    const MS: u64 = 1_000_000;

    fn st(cwnd: u64, ssthresh: u64, now_ms: u64) -> CcState {
        CcState {
            now: SimTime(now_ms * MS),
            ssthresh: ssthresh * 1000,
            ..CcState::new(1000, cwnd * 1000)
        }
    }

    #[test]
    fn constants_match_linux() {
        assert_eq!(BETA_SCALE, 15);
        assert_eq!(CUBE_FACTOR, 2_681_735_677);
    }

    #[test]
    fn cube_root_within_linux_accuracy() {
        for a in [
            1u64,
            7,
            8,
            27,
            63,
            64,
            1000,
            123_456,
            1 << 30,
            CUBE_FACTOR * 300,
        ] {
            let exact = (a as f64).cbrt();
            let got = cubic_root(a) as f64;
            assert!(
                (got - exact).abs() <= 1.0 + exact * 0.01,
                "a {a}: {got} vs {exact}"
            );
        }
    }

    #[test]
    fn the_cubic_function_is_recomputed_only_when_cwnd_changed_or_a_32nd_second_passed() {
        // `bictcp_update`: same cwnd and at most HZ/32 jiffies (31 ms) since the last
        // computation: nothing but the ACK count changes
        let mut c = Cubic {
            last_max_cwnd: 100,
            ..Default::default()
        };
        c.update(&st(70, 70, 1000), 70, 1);
        assert_eq!(c.last_time, 1000);
        c.update(&st(70, 70, 1020), 70, 1);
        assert_eq!(c.last_time, 1000, "20 ms later, same cwnd: not recomputed");
        c.update(&st(71, 70, 1025), 71, 1);
        assert_eq!(c.last_time, 1025, "cwnd changed");
        c.update(&st(71, 70, 1056), 71, 1);
        assert_eq!(c.last_time, 1025, "31 ms");
        c.update(&st(71, 70, 1057), 71, 1);
        assert_eq!(c.last_time, 1057, "32 ms");
    }

    #[test]
    fn the_tcp_friendly_window_counts_every_delta_of_acks() {
        // RFC 9438 §4.3 / `bictcp_update`: the Reno-equivalent window grows by one for
        // each `delta` = cwnd · 15 / 8 ACKed segments (18 at cwnd 10): 181 ACKs since
        // the epoch → 10 more, 1 left over; then cnt lets cwnd follow it (cnt = 2 cap)
        let mut c = Cubic {
            epoch_start: Some(1000),
            last_max_cwnd: 10,
            origin_point: 10,
            tcp_cwnd: 10,
            ack_cnt: 180,
            ..Default::default()
        };
        c.update(&st(10, 10, 1000), 10, 1);
        assert_eq!((c.tcp_cwnd, c.ack_cnt), (20, 1));
        assert_eq!(c.cnt, 2);
    }

    #[test]
    fn k_follows_rfc9438_eq_2() {
        // W_max 100, cwnd after the reduction 70: K = ∛(30/0.4) = 4.217 s = 4318/1024 s
        let mut c = Cubic {
            last_max_cwnd: 100,
            ..Default::default()
        };
        c.update(&st(70, 70, 1000), 70, 1);
        let k_s = c.k as f64 / 1024.0;
        assert!((k_s - (30.0f64 / 0.4).cbrt()).abs() < 0.02, "{k_s}");
        assert_eq!(c.origin_point, 100);
        // just after the epoch starts the target is below W_max: slow growth (large cnt)
        assert!(c.cnt > 70 / 2);
    }

    #[test]
    fn before_the_first_loss_growth_is_at_least_five_percent_per_rtt() {
        // `bictcp_update`: with no W_max yet (no loss) the cubic curve starts flat at
        // cwnd, which would grow it by less than a segment per RTT; cnt is capped at 20
        // (5 % of cwnd per RTT). After a loss the curve alone decides.
        for (w_max, capped) in [(0, true), (100, false)] {
            let mut c = Cubic {
                last_max_cwnd: w_max,
                delay_min: 100_000,
                ..Default::default()
            };
            let s = st(100, 50, 1000);
            c.update(&s, 100, 1);
            assert_eq!(c.cnt == 20, capped, "W_max {w_max}: cnt {}", c.cnt);
            assert!(c.cnt >= 20, "W_max {w_max}: cnt {}", c.cnt);
        }
    }

    #[test]
    fn window_follows_the_cubic_curve() {
        // From cwnd 70 (W_max 100, min RTT 100 ms), one round of 70 ACKs per 100 ms;
        // after K (≈ 4.2 s) cwnd is back near W_max and then grows beyond it.
        let mut c = Cubic {
            last_max_cwnd: 100,
            delay_min: 100_000,
            ..Default::default()
        };
        let mut s = st(70, 70, 0);
        let mut t = 0;
        let mut at_k = 0;
        while t < 8000 {
            let n = s.cwnd_segs();
            for i in 0..n {
                s.now = SimTime((t + i * 100 / n) * MS);
                c.cong_avoid(&mut s, 1000);
            }
            t += 100;
            if t == 4300 {
                at_k = s.cwnd_segs();
            }
        }
        assert!((96..=104).contains(&at_k), "cwnd at K: {at_k}");
        // W(8 s) = 0.4·(8.1 − 4.22)³ + 100 ≈ 123 segments (t includes delay_min)
        let w = s.cwnd_segs();
        assert!((115..=130).contains(&w), "cwnd at 8 s: {w}");
    }

    #[test]
    fn loss_response_and_fast_convergence() {
        let mut c = Cubic::default();
        let s = st(100, 1 << 20, 0);
        assert_eq!(c.ssthresh(&s), 70_000); // 100·717/1024
        assert_eq!(c.last_max_cwnd, 100);
        // a second loss below the previous W_max: W_max = cwnd·(1+β)/2
        let s = st(80, 1 << 20, 0);
        assert_eq!(c.ssthresh(&s), 56_000);
        assert_eq!(c.last_max_cwnd, 80 * 1741 / 2048);
        assert_eq!(c.ssthresh(&st(2, 10, 0)), 2000, "at least 2 segments");
    }

    #[test]
    fn tcp_friendly_region_bounds_cnt() {
        // W_max barely above cwnd for a long time: the cubic target is flat, Reno's
        // estimate (tcp_cwnd) grows and caps cnt at cwnd / (tcp_cwnd − cwnd).
        let mut c = Cubic {
            last_max_cwnd: 50,
            ..Default::default()
        };
        let mut s = st(50, 10, 0);
        c.update(&s, 50, 1);
        c.tcp_cwnd = 60;
        s.now = SimTime(100 * MS);
        c.update(&s, 50, 1);
        assert_eq!(c.cnt, 5);
    }

    #[test]
    fn hystart_delay_exit() {
        // min RTT 100 ms; a round whose first 8 samples all exceed 100 + 12.5 ms ends
        // slow start with ssthresh = cwnd.
        let mut c = Cubic::default();
        let mut s = st(20, 1 << 20, 0);
        c.init(&mut s);
        c.pkts_acked(&mut s, 1000, Some(SimDuration(100 * MS)));
        assert!(!c.found);
        // the next round (snd_una passes the round's end)
        s.snd_una = 1;
        s.snd_nxt = 10_000;
        for k in 0..9 {
            s.now = SimTime((200 + 10 * k) * MS); // ACKs 10 ms apart: no ACK train
            c.pkts_acked(&mut s, 1000, Some(SimDuration(113 * MS)));
        }
        assert!(c.found);
        assert_eq!(s.ssthresh, 20_000);
        // below the threshold it stays in slow start
        let mut c = Cubic::default();
        let mut s = st(20, 1 << 20, 0);
        c.init(&mut s);
        c.pkts_acked(&mut s, 1000, Some(SimDuration(100 * MS)));
        s.snd_una = 1;
        s.snd_nxt = 10_000;
        for k in 0..20 {
            s.now = SimTime((200 + 10 * k) * MS);
            c.pkts_acked(&mut s, 1000, Some(SimDuration(112 * MS)));
        }
        assert!(!c.found);
    }

    #[test]
    fn hystart_ack_train_exit() {
        // ACKs 1 ms apart (a train) for longer than delay_min/2 = 20 ms (not paced)
        let mut c = Cubic::default();
        let mut s = st(32, 1 << 20, 0);
        c.init(&mut s);
        c.pkts_acked(&mut s, 1000, Some(SimDuration(40 * MS)));
        let mut k = 0;
        while !c.found && k < 100 {
            k += 1;
            s.now = SimTime(k * MS);
            c.pkts_acked(&mut s, 1000, Some(SimDuration(40 * MS)));
        }
        assert_eq!(k, 21);
        assert_eq!(s.ssthresh, 32_000);
    }
}
