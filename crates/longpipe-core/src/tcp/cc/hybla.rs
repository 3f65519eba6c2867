//! TCP Hybla (Caini & Firrincieli, Int. J. Satellite Commun. Netw. 22(5), 2004).
//!
//! ρ = RTT / RTT0 (RTT0 = 25 ms by default), ρ ≥ 1. Per ACK: slow start W += 2^ρ − 1;
//! congestion avoidance W += ρ²/W (windows in segments). Loss response as Reno.
//!
//! Two arithmetic forms:
//! - [`HyblaArith::Fixed`] (default) follows Linux `net/ipv4/tcp_hybla.c`: ρ kept with 3
//!   fractional bits (`rho_3ls = max(8·SRTT/RTT0, 8)`), recomputed only when SRTT falls
//!   below the smallest seen (ρ only falls); increments in 1/128 segment with a
//!   `snd_cwnd_cents` carry; the slow-start increment uses the 2^(k/8) table; growth
//!   only in the Open state and only when cwnd-limited; cwnd capped at 65535 segments;
//!   at init cwnd = ⌊ρ⌋ (replacing IW). Loss response: see [`LossSsthresh`].
//! - [`HyblaArith::Float`] is the paper's form with a real-valued ρ and window.

use super::{additive_increase, slow_start, CaState, CcState, CongestionControl};
use crate::error::{err, ScenarioError};
use crate::time::SimDuration;
use crate::units::Duration;
use schemars::JsonSchema;
use serde::Deserialize;

/// The flow's `hybla = { ... }` table (only with `tcp = "hybla"`).
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct HyblaSpec {
    /// Reference RTT (default 25ms, as Linux).
    #[serde(default)]
    pub rtt0: Option<Duration>,
    /// "fixed" (Linux fixed-point, default) or "float" (the paper's real-valued form).
    #[serde(default)]
    pub arithmetic: Option<HyblaArith>,
    /// RTT for rho: "min-srtt" (Linux, default) or "min-rtt" (smallest sample).
    #[serde(default)]
    pub rho_from: Option<RhoSource>,
    /// Initial window: "rho" (Linux: floor(rho) segments, default), "iw" (the flow's iw),
    /// "iw-times-rho" (ns-3).
    #[serde(default)]
    pub initial_window: Option<HyblaInitialWindow>,
    /// ssthresh after a loss: "flight" (max(FlightSize/2, 2 MSS), as NewReno and ns-2;
    /// default) or "cwnd" (Linux: max(cwnd/2, 2)).
    #[serde(default)]
    pub ssthresh: Option<LossSsthresh>,
}

impl HyblaSpec {
    /// The options over the defaults `d` (the stack's: [`HyblaConfig::DEFAULT`] or
    /// [`HyblaConfig::LINUX`]); `path` names the table.
    pub fn resolve(
        spec: Option<&HyblaSpec>,
        d: HyblaConfig,
        path: &str,
    ) -> Result<HyblaConfig, ScenarioError> {
        let Some(h) = spec else { return Ok(d) };
        let c = HyblaConfig {
            rtt0: h.rtt0.map(|r| r.0).unwrap_or(d.rtt0),
            arith: h.arithmetic.unwrap_or(d.arith),
            rho_source: h.rho_from.unwrap_or(d.rho_source),
            initial_window: h.initial_window.unwrap_or(d.initial_window),
            loss_ssthresh: h.ssthresh.unwrap_or(d.loss_ssthresh),
        };
        if c.rtt0.0 == 0 {
            return err(format!("{path}.rtt0"), "must be positive");
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HyblaArith {
    Fixed,
    Float,
}

/// Where ρ's RTT comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RhoSource {
    /// The smallest smoothed RTT seen (Linux).
    MinSrtt,
    /// The smallest RTT sample seen.
    #[serde(rename = "min-rtt")]
    MinSample,
}

/// The initial congestion window once ρ is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HyblaInitialWindow {
    /// cwnd = ⌊ρ⌋ segments (Linux `hybla_init`).
    Rho,
    /// Keep the flow's configured IW.
    Iw,
    /// IW × ρ (ns-3 `TcpHybla`).
    IwTimesRho,
}

/// ssthresh after a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LossSsthresh {
    /// max(FlightSize/2, 2·SMSS), as NewReno (RFC 6582) and as ns-2, which halves
    /// min(cwnd, rwnd). The default: the paper's model assumes this.
    Flight,
    /// max(cwnd/2, 2) segments (Linux `tcp_reno_ssthresh`). Hybla's slow start on a long
    /// RTT takes cwnd far above a receiver-limited flight (2^ρ per ACK, capped at 65535
    /// segments), and Linux keeps growth off only while not cwnd-limited, so halving
    /// cwnd can leave it above the receiver window: losses then barely reduce the rate.
    Cwnd,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HyblaConfig {
    pub rtt0: SimDuration,
    pub arith: HyblaArith,
    pub rho_source: RhoSource,
    pub initial_window: HyblaInitialWindow,
    pub loss_ssthresh: LossSsthresh,
}

impl HyblaConfig {
    /// The defaults: RTT0 = 25 ms (the paper), Linux's fixed-point arithmetic, ρ from
    /// the minimum SRTT and IW = ρ (Linux), the loss response of NewReno (the model's).
    pub const DEFAULT: HyblaConfig = HyblaConfig {
        rtt0: SimDuration::from_millis(25),
        arith: HyblaArith::Fixed,
        rho_source: RhoSource::MinSrtt,
        initial_window: HyblaInitialWindow::Rho,
        loss_ssthresh: LossSsthresh::Flight,
    };

    /// On the Linux stack: the Linux module's loss response (ssthresh from cwnd).
    pub const LINUX: HyblaConfig = HyblaConfig {
        loss_ssthresh: LossSsthresh::Cwnd,
        ..HyblaConfig::DEFAULT
    };
}

impl Default for HyblaConfig {
    fn default() -> Self {
        HyblaConfig::DEFAULT
    }
}

/// Linux `hybla_fraction`: 128 · 2^(k/8), k = 0..7.
const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];
const CWND_CLAMP: u64 = 65_535;

#[derive(Debug, Clone)]
pub struct Hybla {
    cfg: HyblaConfig,
    /// ρ · 8 (Linux `rho_3ls`)
    pub rho_3ls: u32,
    /// ⌊ρ⌋
    pub rho: u32,
    /// 128 ρ² computed from rho_3ls (Linux `rho2_7ls`)
    pub rho2_7ls: u32,
    /// ρ as a real number (float form)
    pub rho_f: f64,
    /// The RTT ρ was last computed from.
    min_rtt: Option<SimDuration>,
    /// Linux `snd_cwnd_cents`, `snd_cwnd_cnt`
    cents: u32,
    cwnd_cnt: u64,
    /// Float form: the window in segments (real-valued).
    wf: f64,
    /// Linux `hybla_en`: Hybla growth only in the Open state.
    enabled: bool,
}

impl Hybla {
    pub fn new(cfg: HyblaConfig) -> Self {
        Hybla {
            cfg,
            rho_3ls: 8,
            rho: 1,
            rho2_7ls: 128,
            rho_f: 1.0,
            min_rtt: None,
            cents: 0,
            cwnd_cnt: 0,
            wf: 0.0,
            enabled: true,
        }
    }

    fn rtt_for_rho(&self, st: &CcState) -> Option<SimDuration> {
        match self.cfg.rho_source {
            RhoSource::MinSrtt => st.srtt,
            RhoSource::MinSample => st.min_rtt_sample,
        }
    }

    /// Linux `hybla_recalc_param`.
    pub fn recalc(&mut self, rtt: SimDuration) {
        let r0 = self.cfg.rtt0.as_nanos().max(1);
        self.rho_3ls = ((8 * rtt.as_nanos() as u128 / r0 as u128) as u32).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = (self.rho_3ls * self.rho_3ls) << 1;
        self.rho_f = (rtt.as_nanos() as f64 / r0 as f64).max(1.0);
        self.min_rtt = Some(rtt);
    }

    fn maybe_recalc(&mut self, st: &CcState) {
        if let Some(r) = self.rtt_for_rho(st) {
            if self.min_rtt.is_none_or(|m| r < m) {
                self.recalc(r);
            }
        }
    }

    fn fixed_step(&mut self, st: &mut CcState) {
        let mss = st.mss;
        let mut cwnd = st.cwnd / mss;
        let ssthresh = st.ssthresh / mss;
        let slow_start = cwnd < ssthresh;
        let increment: u64 = if slow_start {
            let frac = (self.rho_3ls - (self.rho << 3)) as usize;
            ((1u64 << self.rho.min(16)) * FRACTIONS[frac] as u64) - 128
        } else {
            let inc = self.rho2_7ls as u64 / cwnd.max(1);
            if inc < 128 {
                self.cwnd_cnt += 1;
            }
            inc
        };
        let odd = (increment % 128) as u32;
        cwnd += increment >> 7;
        self.cents += odd;
        while self.cents >= 128 {
            cwnd += 1;
            self.cents -= 128;
            self.cwnd_cnt = 0;
        }
        // Reno-like fallback when the increment rounds to nothing.
        if increment == 0 && odd == 0 && self.cwnd_cnt >= cwnd {
            cwnd += 1;
            self.cwnd_cnt = 0;
        }
        if slow_start {
            cwnd = cwnd.min(ssthresh.max(1));
        }
        cwnd = cwnd.min(CWND_CLAMP);
        st.cwnd = cwnd * mss;
    }

    fn float_step(&mut self, st: &mut CcState) {
        let mss = st.mss as f64;
        if (self.wf * mss - st.cwnd as f64).abs() >= mss {
            self.wf = st.cwnd as f64 / mss; // resynchronise after a loss response
        }
        let ssthresh = st.ssthresh as f64 / mss;
        if self.wf < ssthresh {
            self.wf = (self.wf + self.rho_f.exp2() - 1.0).min(ssthresh.max(1.0));
        } else {
            self.wf += self.rho_f * self.rho_f / self.wf.max(1.0);
        }
        self.wf = self.wf.min(CWND_CLAMP as f64);
        st.cwnd = (self.wf * mss) as u64;
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    fn init(&mut self, st: &mut CcState) {
        self.maybe_recalc(st);
        let mss = st.mss;
        st.cwnd = match self.cfg.initial_window {
            HyblaInitialWindow::Rho => self.rho.max(1) as u64 * mss,
            HyblaInitialWindow::Iw => st.cwnd,
            HyblaInitialWindow::IwTimesRho => match self.cfg.arith {
                HyblaArith::Fixed => st.cwnd * self.rho.max(1) as u64,
                HyblaArith::Float => (st.cwnd as f64 * self.rho_f) as u64,
            },
        };
        self.wf = st.cwnd as f64 / mss as f64;
    }

    fn ssthresh(&mut self, st: &CcState) -> u64 {
        match self.cfg.loss_ssthresh {
            LossSsthresh::Flight => (st.flight / 2).max(2 * st.mss),
            LossSsthresh::Cwnd => (st.cwnd / st.mss / 2).max(2) * st.mss,
        }
    }

    fn cong_avoid(&mut self, st: &mut CcState, acked: u64) {
        self.maybe_recalc(st);
        if !st.cwnd_limited {
            return;
        }
        if !self.enabled {
            // Linux: plain Reno outside the Open state.
            if st.cwnd < st.ssthresh {
                slow_start(st, acked);
            } else {
                additive_increase(st);
            }
            return;
        }
        match self.cfg.arith {
            HyblaArith::Fixed => self.fixed_step(st),
            HyblaArith::Float => self.float_step(st),
        }
    }

    fn set_state(&mut self, _st: &mut CcState, state: CaState) {
        self.enabled = state == CaState::Open;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    fn st(cwnd_pkts: u64, ssthresh_pkts: u64, srtt_ms: u64) -> CcState {
        CcState {
            now: SimTime(0),
            mss: 1000,
            cwnd: cwnd_pkts * 1000,
            ssthresh: ssthresh_pkts * 1000,
            flight: cwnd_pkts * 1000,
            srtt: Some(SimDuration::from_millis(srtt_ms)),
            min_srtt: Some(SimDuration::from_millis(srtt_ms)),
            min_rtt_sample: Some(SimDuration::from_millis(srtt_ms)),
            cwnd_limited: true,
            ..CcState::new(1000, 0)
        }
    }

    #[test]
    fn rho_at_reference_rtts() {
        for (ms, rho, rho_3ls) in [
            (25, 1, 8),
            (100, 4, 32),
            (250, 10, 80),
            (550, 22, 176),
            (10, 1, 8),
            (30, 1, 9),
        ] {
            let mut h = Hybla::new(HyblaConfig::default());
            h.recalc(SimDuration::from_millis(ms));
            assert_eq!((h.rho, h.rho_3ls), (rho, rho_3ls), "{ms} ms");
            assert_eq!(h.rho2_7ls, 2 * rho_3ls * rho_3ls);
        }
    }

    #[test]
    fn init_can_multiply_the_initial_window_by_rho_as_ns3_does() {
        // ns-3 TcpHybla: cwnd = IW × ρ; at 250 ms ρ = 10, so an IW of 2 becomes 20
        for arith in [HyblaArith::Fixed, HyblaArith::Float] {
            let mut h = Hybla::new(HyblaConfig {
                initial_window: HyblaInitialWindow::IwTimesRho,
                arith,
                ..HyblaConfig::default()
            });
            let mut s = st(2, 1 << 20, 250);
            h.init(&mut s);
            assert_eq!(s.cwnd, 20_000, "{arith:?}");
        }
    }

    #[test]
    fn init_sets_cwnd_to_rho() {
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(1, 1 << 20, 250);
        h.init(&mut s);
        assert_eq!(s.cwnd, 10_000);
    }

    #[test]
    fn slow_start_increments() {
        // ρ = 4 (100 ms): +2^4 − 1 = 15 segments per ACK
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(4, 1 << 20, 100);
        h.init(&mut s);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 19_000);
        // ρ = 10 (250 ms): +1023
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(10, 1 << 20, 250);
        h.init(&mut s);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 1_033_000);
        // capped at ssthresh in slow start
        let mut s = st(10, 50, 250);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 50_000);
        // fractional ρ: 30 ms → rho_3ls = 9 → 2^1 · 139/128 − 1 ≈ 1.17: +1 and 22/128 carried
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(1, 1 << 20, 30);
        h.init(&mut s);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 2000);
        assert_eq!(h.cents, 2 * 139 - 128 - 128);
    }

    #[test]
    fn congestion_avoidance_increment_is_rho_squared_over_w() {
        // ρ = 4: ⌊128·16/W⌋/128 per ACK. Continuously dW/dn = ρ²/W gives
        // W² = 100² + 2·16·100 → 115.3 after 100 ACKs; truncation of each increment
        // to 1/128 costs about one more segment.
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(100, 50, 100);
        h.recalc(SimDuration::from_millis(100));
        for _ in 0..100 {
            h.cong_avoid(&mut s, 1000);
        }
        let w = s.cwnd / 1000;
        assert!((114..=115).contains(&w), "{w}");
        // ρ = 1 behaves like Reno, +1 per window of ACKs, up to fixed-point truncation:
        // ⌊128/10⌋ = 12/128 per ACK, so the 11th ACK (not the 10th) completes a segment.
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(10, 5, 25);
        h.recalc(SimDuration::from_millis(25));
        for _ in 0..10 {
            h.cong_avoid(&mut s, 1000);
        }
        assert_eq!(s.cwnd, 10_000);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 11_000);
    }

    #[test]
    fn float_form_matches_paper() {
        let cfg = HyblaConfig {
            arith: HyblaArith::Float,
            ..Default::default()
        };
        let mut h = Hybla::new(cfg);
        let mut s = st(100, 50, 100);
        h.init(&mut s); // cwnd = ⌊ρ⌋ = 4
        assert_eq!(s.cwnd, 4000);
        let mut s = st(100, 50, 100);
        h.wf = 100.0;
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 100_160); // 100 + 16/100 segments
    }

    #[test]
    fn loss_response_and_states() {
        let mut h = Hybla::new(HyblaConfig {
            loss_ssthresh: LossSsthresh::Cwnd,
            ..Default::default()
        });
        let mut s = st(100, 1 << 20, 550);
        s.flight = 40_000;
        assert_eq!(h.ssthresh(&s), 50_000);
        assert_eq!(h.ssthresh(&st(3, 10, 550)), 2000);
        let mut h = Hybla::new(HyblaConfig::default());
        assert_eq!(h.ssthresh(&s), 20_000, "default: FlightSize / 2");
        let mut s = st(10, 5, 550);
        h.recalc(SimDuration::from_millis(550));
        h.set_state(&mut s, CaState::Loss);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 10_100, "Reno growth (+1/W) while not Open");
        h.set_state(&mut s, CaState::Open);
        let mut s = st(10, 5, 550);
        h.cong_avoid(&mut s, 1000);
        assert!(s.cwnd > 10_000 + 40_000, "ρ²/W = 484/10 segments");
        // not cwnd-limited: no growth
        let mut s = st(10, 5, 550);
        s.cwnd_limited = false;
        h.cong_avoid(&mut s, 1000);
        assert_eq!(s.cwnd, 10_000);
    }

    #[test]
    fn rho_only_falls() {
        let mut h = Hybla::new(HyblaConfig::default());
        let mut s = st(10, 5, 250);
        h.cong_avoid(&mut s, 1000);
        assert_eq!(h.rho, 10);
        s.srtt = Some(SimDuration::from_millis(400));
        h.cong_avoid(&mut s, 1000);
        assert_eq!(h.rho, 10);
        s.srtt = Some(SimDuration::from_millis(100));
        h.cong_avoid(&mut s, 1000);
        assert_eq!(h.rho, 4);
    }
}
