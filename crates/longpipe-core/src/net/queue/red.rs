//! Random Early Detection (`queue.kind = "red"`): Floyd & Jacobson, "Random Early
//! Detection Gateways for Congestion Avoidance", IEEE/ACM ToN 1(4), 1993, fig. 2, as
//! recommended by RFC 2309, with the "gentle" variant (Floyd 2000) and ECN marking
//! (RFC 3168 §5).
//!
//! On every arrival (fig. 2):
//! - the average queue size: `avg ← (1 − w_q)·avg + w_q·q` if the queue is not empty,
//!   else `avg ← (1 − w_q)^m·avg` with `m = (now − q_time)/s`, `q_time` the time the
//!   queue went empty and `s` the transmission time of a typical packet
//!   (`mean_pkt_size` at the link's rate);
//! - `avg < min_th`: admit, `count ← −1`;
//! - `min_th ≤ avg < max_th`: `count ← count + 1`,
//!   `p_b ← max_p·(avg − min_th)/(max_th − min_th)`, `p_a ← p_b/(1 − count·p_b)`; with
//!   probability `p_a` mark or drop the arrival and set `count ← 0`;
//! - gentle, `max_th ≤ avg < 2·max_th`: the same with
//!   `p_b ← max_p + (1 − max_p)·(avg − max_th)/max_th`;
//! - above (`avg ≥ max_th`, or `≥ 2·max_th` when gentle): drop, `count ← 0`.
//!
//! "Mark" (with `ecn = true` and an ECN-capable arrival) sets CE and admits the packet;
//! otherwise the arrival is dropped. The forced region always drops, ECN or not (ns-3's
//! `UseHardDrop`, Linux without `harddrop` would mark). A RED decision is taken before
//! the buffer limit is checked; an arrival RED admits may still overflow the buffer.
//! `q` and the thresholds are in packets, or in bytes when the thresholds are given in
//! bytes. The waiting queue excludes the unit in transmission, so "empty" begins when
//! the last waiting unit starts its transmission.

use super::discipline::{Admission, DisciplineSpec, Queue, QueueStats};
use crate::element::Frame;
use crate::error::{err, ScenarioError};
use crate::rng::RngStream;
use crate::tagged::Resolve;
use crate::time::{Rate, SimTime};
use crate::units::{Bytes, Limit, LimitQ};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

/// Random Early Detection (Floyd & Jacobson 1993, RFC 2309), gentle mode, ECN.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    /// Mark ECN-capable packets Congestion Experienced instead of dropping them
    /// (RFC 3168 §5). Default false.
    #[serde(default)]
    pub ecn: Option<bool>,
    /// Minimum threshold of the average queue, "5pkt" or bytes. Default 5pkt.
    #[serde(default)]
    pub min_th: Option<LimitQ>,
    /// Maximum threshold, in the unit of min_th. Default 15pkt (3 × min_th).
    #[serde(default)]
    pub max_th: Option<LimitQ>,
    /// Marking probability at max_th. Default 0.1.
    #[serde(default)]
    pub max_p: Option<f64>,
    /// Weight of the average queue's moving average. Default 0.002.
    #[serde(default)]
    pub w_q: Option<f64>,
    /// Gentle mode (probability rises from max_p to 1 between max_th and 2 × max_th
    /// instead of jumping to 1). Default true.
    #[serde(default)]
    pub gentle: Option<bool>,
    /// Typical packet size, for the decay of the average over idle time. Default 500B
    /// (ns-3's MeanPktSize).
    #[serde(default)]
    pub mean_pkt_size: Option<Bytes>,
}

impl Resolve for RedSpec {
    type Config = RedConfig;
    fn resolve(&self, path: &str) -> Result<RedConfig, ScenarioError> {
        RedConfig::resolve(self, path)
    }
}

impl DisciplineSpec for RedSpec {
    fn build<U: Frame + Send + 'static>(
        c: &RedConfig,
        admission: Admission,
        rate: Rate,
        rng: RngStream,
    ) -> Box<dyn Queue<U>> {
        Box::new(Red::new(*c, admission, rate, rng))
    }
}

/// Resolved RED parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedConfig {
    /// Thresholds, in packets or (with `bytes`) in bytes.
    pub min_th: f64,
    pub max_th: f64,
    pub bytes: bool,
    pub max_p: f64,
    pub w_q: f64,
    pub gentle: bool,
    pub ecn: bool,
    /// Bytes of a typical packet (idle-time decay).
    pub mean_pkt_size: u64,
}

impl RedConfig {
    /// Defaults (ns-3's: min_th 5 packets, max_th 15, max_p 0.1, w_q 0.002, gentle) and
    /// checks; `path` is the queue's field path.
    pub fn resolve(q: &RedSpec, path: &str) -> Result<RedConfig, ScenarioError> {
        let min = q.min_th.map(|l| l.0).unwrap_or(Limit::Packets(5));
        let max = match (q.max_th.map(|l| l.0), min) {
            (Some(m), _) => m,
            (None, Limit::Packets(n)) => Limit::Packets(n.saturating_mul(3)),
            (None, Limit::Bytes(n)) => Limit::Bytes(n.saturating_mul(3)),
        };
        let (min_th, max_th, bytes) = match (min, max) {
            (Limit::Packets(a), Limit::Packets(b)) => (a as f64, b as f64, false),
            (Limit::Bytes(a), Limit::Bytes(b)) => (a as f64, b as f64, true),
            _ => {
                return err(
                    format!("{path}.max_th"),
                    "must be in the unit of min_th (both packets or both bytes)",
                )
            }
        };
        if max_th <= min_th {
            return err(
                format!("{path}.max_th"),
                format!("must exceed min_th ({min_th}), got {max_th}"),
            );
        }
        let max_p = q.max_p.unwrap_or(0.1);
        if !(max_p > 0.0 && max_p <= 1.0) {
            return err(
                format!("{path}.max_p"),
                format!("must be in (0, 1], got {max_p}"),
            );
        }
        let w_q = q.w_q.unwrap_or(0.002);
        if !(w_q > 0.0 && w_q <= 1.0) {
            return err(
                format!("{path}.w_q"),
                format!("must be in (0, 1], got {w_q}"),
            );
        }
        let mean_pkt_size = q.mean_pkt_size.map(|b| b.0).unwrap_or(500);
        if mean_pkt_size == 0 {
            return err(format!("{path}.mean_pkt_size"), "must be at least 1 byte");
        }
        Ok(RedConfig {
            min_th,
            max_th,
            bytes,
            max_p,
            w_q,
            gentle: q.gentle.unwrap_or(true),
            ecn: q.ecn.unwrap_or(false),
            mean_pkt_size,
        })
    }

    /// RED's verdict for an average queue `avg` after `count` arrivals since the last
    /// mark (already incremented): the marking probability `p_a`, or `None` in the
    /// forced-drop region. `Some(0.0)` below min_th.
    pub fn p_a(&self, avg: f64, count: i64) -> Option<f64> {
        if avg < self.min_th {
            return Some(0.0);
        }
        let p_b = if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            return None;
        };
        let d = 1.0 - count as f64 * p_b;
        Some(if d <= p_b { 1.0 } else { (p_b / d).min(1.0) })
    }
}

pub struct Red<U> {
    c: RedConfig,
    q: VecDeque<U>,
    bytes: u64,
    admission: Admission,
    /// Transmission time of a typical packet, ns (`s` of fig. 2).
    s_ns: f64,
    rng: RngStream,
    pub avg: f64,
    count: i64,
    /// When the queue went empty (None while it holds units).
    q_time: Option<SimTime>,
    stats: QueueStats,
}

impl<U> Red<U> {
    pub fn new(c: RedConfig, admission: Admission, rate: Rate, rng: RngStream) -> Self {
        Red {
            c,
            q: VecDeque::new(),
            bytes: 0,
            admission,
            s_ns: rate.tx_time(c.mean_pkt_size).as_nanos().max(1) as f64,
            rng,
            avg: 0.0,
            count: -1,
            q_time: Some(SimTime::ZERO),
            stats: QueueStats::default(),
        }
    }

    /// Fig. 2: the average queue size as an arrival at `now` sees it.
    fn update_avg(&mut self, now: SimTime) {
        let w = self.c.w_q;
        match self.q_time {
            None => {
                let q = if self.c.bytes {
                    self.bytes as f64
                } else {
                    self.q.len() as f64
                };
                self.avg = (1.0 - w) * self.avg + w * q;
            }
            Some(t) => {
                let m = now.saturating_sub(t).as_nanos() as f64 / self.s_ns;
                self.avg *= (1.0 - w).powf(m);
                // the idle time up to now is accounted for: if this arrival is dropped
                // and the queue stays empty, the next arrival decays from here (as
                // ns-2/ns-3 clear their idle flag on every arrival)
                self.q_time = Some(now);
            }
        }
    }
}

impl<U: Frame + Send> Queue<U> for Red<U> {
    fn enqueue(&mut self, now: SimTime, mut unit: U) -> Result<(), U> {
        self.update_avg(now);
        let congested = if self.avg < self.c.min_th {
            self.count = -1;
            false
        } else {
            self.count += 1;
            match self.c.p_a(self.avg, self.count) {
                Some(p_a) => self.rng.uniform() < p_a,
                None => {
                    // forced drop
                    self.count = 0;
                    self.stats.aqm_drops += 1;
                    return Err(unit);
                }
            }
        };
        if congested {
            self.count = 0;
            if !(self.c.ecn && unit.mark_ce()) {
                self.stats.aqm_drops += 1;
                return Err(unit);
            }
            self.stats.ce_marks += 1;
        }
        let size = unit.wire_len();
        if !self.admission.admits(self.q.len(), self.bytes, size) {
            return Err(unit);
        }
        self.bytes += size as u64;
        self.q.push_back(unit);
        self.q_time = None;
        Ok(())
    }

    fn dequeue(&mut self, now: SimTime) -> Option<U> {
        let u = self.q.pop_front()?;
        self.bytes -= u.wire_len() as u64;
        if self.q.is_empty() {
            self.q_time = Some(now);
        }
        Some(u)
    }

    fn len(&self) -> usize {
        self.q.len()
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::discipline::tests::F;

    fn cfg(min_th: f64, max_th: f64, max_p: f64, w_q: f64, gentle: bool, ecn: bool) -> RedConfig {
        RedConfig {
            min_th,
            max_th,
            bytes: false,
            max_p,
            w_q,
            gentle,
            ecn,
            mean_pkt_size: 1000,
        }
    }

    fn red(c: RedConfig, limit: u64) -> Red<F> {
        // 8 Mbit/s: a 1000 B packet takes 1 ms
        Red::new(
            c,
            Admission {
                limit: Limit::Packets(limit),
            },
            Rate(8_000_000),
            RngStream::new(1, "red-test"),
        )
    }

    #[test]
    fn marking_probability_follows_fig_2_and_the_gentle_ramp() {
        let c = cfg(5.0, 15.0, 0.1, 0.002, false, false);
        assert_eq!(c.p_a(4.99, 0), Some(0.0));
        // p_b = 0.1 * (10 - 5) / 10 = 0.05; p_a = p_b / (1 - count * p_b)
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(c.p_a(10.0, 0), 0.05));
        assert!(close(c.p_a(10.0, 10), 0.05 / 0.5));
        assert_eq!(c.p_a(10.0, 19), Some(1.0), "count · p_b reaches 1");
        assert_eq!(c.p_a(15.0, 0), None, "forced drop at max_th");
        let g = RedConfig { gentle: true, ..c };
        // p_b = 0.1 + 0.9 * (22.5 - 15) / 15 = 0.55
        assert!(close(g.p_a(22.5, 0), 0.55));
        assert!(close(g.p_a(15.0, 0), 0.1));
        assert_eq!(g.p_a(30.0, 0), None, "forced drop at 2 max_th");
    }

    #[test]
    fn average_is_the_ewma_of_the_queue_seen_by_arrivals_and_decays_when_idle() {
        let mut r = red(cfg(100.0, 300.0, 0.1, 0.25, true, false), 1000);
        let t = SimTime(0);
        // the first arrival sees an empty queue that has been idle since 0: avg stays 0
        r.enqueue(t, F::new(0, 1000)).unwrap();
        let mut want = 0.0f64;
        for i in 1..=8 {
            r.enqueue(t, F::new(i, 1000)).unwrap();
            want = 0.75 * want + 0.25 * i as f64;
            assert!((r.avg - want).abs() < 1e-12, "{} vs {want}", r.avg);
        }
        // drain at t = 1 ms, stay idle 10 ms (10 typical transmission times)
        while r.dequeue(SimTime(1_000_000)).is_some() {}
        let before = r.avg;
        r.enqueue(SimTime(11_000_000), F::new(99, 1000)).unwrap();
        let expect = before * 0.75f64.powi(10);
        assert!((r.avg - expect).abs() < 1e-12, "{} vs {expect}", r.avg);
    }

    #[test]
    fn idle_time_decays_the_average_once_even_when_arrivals_are_dropped() {
        // w_q = 0.5, thresholds 1 and 2 (not gentle): a burst drives avg above max_th
        let mut r = red(cfg(1.0, 2.0, 0.1, 0.5, false, false), 1000);
        for i in 0..20 {
            let _ = r.enqueue(SimTime(0), F::new(i, 1000));
        }
        while r.dequeue(SimTime(1_000_000)).is_some() {}
        let before = r.avg;
        let drops = r.stats().aqm_drops;
        assert!(before > 2.0 * 1.1, "{before}");
        // idle from 1 ms; arrivals at 1.1 and 1.3 ms (s = 1 ms) see avg above max_th:
        // both dropped, the queue stays empty
        assert!(r.enqueue(SimTime(1_100_000), F::new(50, 1000)).is_err());
        assert!((r.avg - before * 0.5f64.powf(0.1)).abs() < 1e-9);
        assert!(r.enqueue(SimTime(1_300_000), F::new(51, 1000)).is_err());
        // 0.3 ms of idle time in all, not 0.1 + 0.3
        let want = before * 0.5f64.powf(0.3);
        assert!((r.avg - want).abs() < 1e-9, "{} vs {want}", r.avg);
        assert_eq!(r.stats().aqm_drops, drops + 2, "both forced drops");
    }

    #[test]
    fn count_spaces_the_drops_uniformly() {
        // w_q = 1: avg = the queue length; hold it at 10 packets: p_b = 0.05, so
        // count forces a drop after at most 19 arrivals, never more.
        let mut r = red(cfg(5.0, 15.0, 0.1, 1.0, false, false), 1000);
        let t = SimTime(0);
        for i in 0..10 {
            r.enqueue(t, F::new(i, 1000)).unwrap();
        }
        let mut since = 0;
        let mut drops = 0;
        let mut max_gap = 0;
        for i in 10..20_000 {
            since += 1;
            match r.enqueue(t, F::new(i, 1000)) {
                Ok(()) => {
                    r.dequeue(t);
                }
                Err(_) => {
                    max_gap = max_gap.max(since);
                    since = 0;
                    drops += 1;
                }
            }
        }
        assert!(max_gap <= 20, "gap {max_gap}");
        // uniform spacing on [1, 1/p_b]: mean gap ≈ (1 + 20) / 2 ≈ 10.5, so ~1900 drops
        assert!((1700..2100).contains(&drops), "{drops} drops");
        let s = r.stats();
        assert_eq!((s.aqm_drops, s.ce_marks, s.dropped), (drops, 0, 0));
    }

    #[test]
    fn ecn_marks_capable_arrivals_drops_others_and_forced_region_drops_all() {
        // w_q = 1 (avg = queue length), max_p = 1: at avg 2, p_b = 0.5 and the second
        // arrival of the region (count 1) has p_a = 1
        let mut r = red(cfg(1.0, 3.0, 1.0, 1.0, false, true), 1000);
        let t = SimTime(0);
        r.enqueue(t, F::new(0, 1000).ect()).unwrap(); // avg 0 (idle)
        r.enqueue(t, F::new(1, 1000).ect()).unwrap(); // avg 1: p_b = 0
        assert!(r.q.iter().all(|f| f.ecn == 2));
        r.enqueue(t, F::new(2, 1000).ect()).unwrap(); // avg 2, count 1: marked
        assert_eq!(r.q.back().unwrap().ecn, 3);
        r.dequeue(t);
        let f = r.enqueue(t, F::new(3, 1000)).unwrap_err(); // Not-ECT: dropped
        assert_eq!(f.id, 3);
        r.enqueue(t, F::new(4, 1000).ect()).unwrap(); // marked again
        assert_eq!((r.q.len(), r.q.back().unwrap().ecn), (3, 3));
        // avg 3 = max_th: forced drop even for an ECN-capable packet
        let f = r.enqueue(t, F::new(5, 1000).ect()).unwrap_err();
        assert_eq!(f.ecn, 2, "dropped, not marked");
        let s = r.stats();
        assert_eq!((s.ce_marks, s.aqm_drops), (2, 2));
    }

    #[test]
    fn resolve_defaults_and_errors() {
        let spec = RedSpec::default();
        let r = spec.resolve("q").unwrap();
        assert_eq!((r.min_th, r.max_th, r.bytes), (5.0, 15.0, false));
        assert_eq!((r.max_p, r.w_q, r.gentle, r.ecn), (0.1, 0.002, true, false));
        let bad = RedSpec {
            min_th: Some(LimitQ(Limit::Packets(5))),
            max_th: Some(LimitQ(Limit::Bytes(15_000))),
            ..Default::default()
        };
        assert_eq!(bad.resolve("q").unwrap_err().path, "q.max_th");
        let bad = RedSpec {
            max_p: Some(0.0),
            ..Default::default()
        };
        assert_eq!(bad.resolve("q").unwrap_err().path, "q.max_p");
        let bytes = RedSpec {
            min_th: Some(LimitQ(Limit::Bytes(6000))),
            ..Default::default()
        };
        let r = bytes.resolve("q").unwrap();
        assert_eq!((r.min_th, r.max_th, r.bytes), (6000.0, 18_000.0, true));
    }
}
