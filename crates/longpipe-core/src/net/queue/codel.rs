//! Controlled Delay (`queue.kind = "codel"`), RFC 8289 §5 pseudocode, with ECN
//! marking (RFC 3168) as Linux's `codel_dequeue` does it.
//!
//! Each unit is stamped as it is enqueued; at dequeue its sojourn time is compared
//! with `target` (RFC 8289 `dodequeue`): once the sojourn time has stayed at or above
//! target for `interval` (and more than one maximum-size packet waits), CoDel enters
//! the dropping state, drops the head, and drops again at times spaced by the control
//! law `interval / sqrt(count)` until a dequeued unit's sojourn time falls below target
//! (§5.5). Re-entering soon after leaving resumes from the previous drop rate (§5.6,
//! `delta`). With `ecn = true` an ECN-capable unit is marked CE and sent instead of
//! dropped, which ends that dequeue's dropping round (Linux).
//!
//! [`CodelVars`] is the per-queue state, shared with fq_codel (one per flow).
//! `MAXPACKET` (§5.4) is the largest unit seen so far (Linux `maxpacket`).
//! Arrivals that do not fit the buffer limit are dropped at the tail.

use super::discipline::{Admission, DisciplineSpec, Queue, QueueStats};
use crate::element::Frame;
use crate::error::{err, ScenarioError};
use crate::rng::RngStream;
use crate::tagged::Resolve;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::Duration;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

/// Controlled Delay (RFC 8289), ECN.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodelSpec {
    /// Mark ECN-capable packets Congestion Experienced instead of dropping them
    /// (RFC 3168 §5). Default false.
    #[serde(default)]
    pub ecn: Option<bool>,
    /// Target sojourn time. Default 5ms.
    #[serde(default)]
    pub target: Option<Duration>,
    /// Interval. Default 100ms.
    #[serde(default)]
    pub interval: Option<Duration>,
}

impl Resolve for CodelSpec {
    type Config = CodelConfig;
    fn resolve(&self, path: &str) -> Result<CodelConfig, ScenarioError> {
        CodelConfig::resolve_with(self.target, self.interval, self.ecn.unwrap_or(false), path)
    }
}

impl DisciplineSpec for CodelSpec {
    fn build<U: Frame + Send + 'static>(
        c: &CodelConfig,
        admission: Admission,
        _: Rate,
        _: RngStream,
    ) -> Box<dyn Queue<U>> {
        Box::new(Codel::new(*c, admission))
    }
}

/// Resolved CoDel parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodelConfig {
    pub target: SimDuration,
    pub interval: SimDuration,
    pub ecn: bool,
}

impl CodelConfig {
    /// RFC 8289 §4.2–4.3 defaults (target 5 ms, interval 100 ms) and checks of the
    /// keys codel and fq-codel share; `path` is the queue's field path.
    pub fn resolve_with(
        target: Option<Duration>,
        interval: Option<Duration>,
        ecn: bool,
        path: &str,
    ) -> Result<CodelConfig, ScenarioError> {
        let target = target.map(|d| d.0).unwrap_or(SimDuration::from_millis(5));
        let interval = interval
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(100));
        if target.0 == 0 {
            return err(format!("{path}.target"), "must be positive");
        }
        if interval.0 == 0 {
            return err(format!("{path}.interval"), "must be positive");
        }
        Ok(CodelConfig {
            target,
            interval,
            ecn,
        })
    }

    /// RFC 8289 §5.5 `control_law`: t + interval / sqrt(count).
    pub fn control_law(&self, t: SimTime, count: u32) -> SimTime {
        let d = self.interval.0 as f64 / (count.max(1) as f64).sqrt();
        t + SimDuration(d as u64)
    }
}

/// The store CoDel dequeues from: its head, stamped with its enqueue time.
pub trait CodelStore<U> {
    /// Removes the head (and its bytes from the backlog).
    fn pop(&mut self) -> Option<(SimTime, U)>;
    /// Bytes still waiting (RFC 8289 `bytes()`).
    fn backlog(&self) -> u64;
}

/// RFC 8289 §5 state of one CoDel queue.
#[derive(Debug, Clone, Default)]
pub struct CodelVars {
    /// `first_above_time_` (the RFC's 0 is None).
    first_above_time: Option<SimTime>,
    pub drop_next: SimTime,
    pub count: u32,
    lastcount: u32,
    pub dropping: bool,
}

impl CodelVars {
    /// RFC 8289 `dodequeue`: the head, and whether it may be dropped.
    fn dodequeue<U, S: CodelStore<U>>(
        &mut self,
        c: &CodelConfig,
        now: SimTime,
        s: &mut S,
        maxpacket: u64,
    ) -> (Option<U>, bool) {
        let Some((stamp, u)) = s.pop() else {
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_sub(stamp);
        let mut ok_to_drop = false;
        if sojourn < c.target || s.backlog() <= maxpacket {
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                None => self.first_above_time = Some(now + c.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(u), ok_to_drop)
    }

    /// RFC 8289 `dequeue`: what to send next, dropping (or marking) on the way.
    pub fn dequeue<U: Frame, S: CodelStore<U>>(
        &mut self,
        c: &CodelConfig,
        now: SimTime,
        s: &mut S,
        maxpacket: u64,
        stats: &mut QueueStats,
    ) -> Option<U> {
        let (mut p, ok_to_drop) = self.dodequeue(c, now, s, maxpacket);
        if self.dropping {
            if !ok_to_drop {
                // sojourn time below target: leave the dropping state
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                let mut u = p.take().expect("ok_to_drop implies a unit");
                self.count += 1;
                if c.ecn && u.mark_ce() {
                    stats.ce_marks += 1;
                    self.drop_next = c.control_law(self.drop_next, self.count);
                    return Some(u);
                }
                stats.drop_admitted(u.class());
                stats.aqm_drops += 1;
                let (np, ok) = self.dodequeue(c, now, s, maxpacket);
                p = np;
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = c.control_law(self.drop_next, self.count);
                }
            }
        } else if ok_to_drop {
            let mut u = p.take().expect("ok_to_drop implies a unit");
            if c.ecn && u.mark_ce() {
                stats.ce_marks += 1;
                p = Some(u);
            } else {
                stats.drop_admitted(u.class());
                stats.aqm_drops += 1;
                p = self.dodequeue(c, now, s, maxpacket).0;
            }
            self.dropping = true;
            // §5.6: if we were dropping recently, resume near the previous rate
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            let recent =
                now < self.drop_next || (now - self.drop_next) < c.interval.saturating_mul(16);
            if delta > 1 && recent {
                self.count = delta;
            }
            self.drop_next = c.control_law(now, self.count);
            self.lastcount = self.count;
        }
        p
    }
}

/// A FIFO with enqueue stamps and a byte count.
pub(crate) struct Stamped<U> {
    pub q: VecDeque<(SimTime, U)>,
    pub bytes: u64,
}

impl<U> Default for Stamped<U> {
    fn default() -> Self {
        Stamped {
            q: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<U: Frame> CodelStore<U> for Stamped<U> {
    fn pop(&mut self) -> Option<(SimTime, U)> {
        let (t, u) = self.q.pop_front()?;
        self.bytes -= u.wire_len() as u64;
        Some((t, u))
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

pub struct Codel<U> {
    c: CodelConfig,
    s: Stamped<U>,
    admission: Admission,
    pub vars: CodelVars,
    maxpacket: u64,
    stats: QueueStats,
}

impl<U> Codel<U> {
    pub fn new(c: CodelConfig, admission: Admission) -> Self {
        Codel {
            c,
            s: Stamped::default(),
            admission,
            vars: CodelVars::default(),
            maxpacket: 0,
            stats: QueueStats::default(),
        }
    }
}

impl<U: Frame + Send> Queue<U> for Codel<U> {
    fn enqueue(&mut self, now: SimTime, unit: U) -> Result<(), U> {
        let size = unit.wire_len();
        if !self.admission.admits(self.s.q.len(), self.s.bytes, size) {
            return Err(unit);
        }
        self.maxpacket = self.maxpacket.max(size as u64);
        self.s.bytes += size as u64;
        self.s.q.push_back((now, unit));
        Ok(())
    }

    fn dequeue(&mut self, now: SimTime) -> Option<U> {
        self.vars
            .dequeue(&self.c, now, &mut self.s, self.maxpacket, &mut self.stats)
    }

    fn len(&self) -> usize {
        self.s.q.len()
    }

    fn bytes(&self) -> u64 {
        self.s.bytes
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::discipline::tests::F;
    use crate::units::Limit;

    const MS: u64 = 1_000_000;

    fn codel(ecn: bool) -> Codel<F> {
        Codel::new(
            CodelConfig {
                target: SimDuration::from_millis(5),
                interval: SimDuration::from_millis(100),
                ecn,
            },
            Admission {
                limit: Limit::Packets(10_000),
            },
        )
    }

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count() {
        let c = CodelConfig {
            target: SimDuration::from_millis(5),
            interval: SimDuration::from_millis(100),
            ecn: false,
        };
        assert_eq!(c.control_law(SimTime(0), 1), SimTime(100 * MS));
        assert_eq!(c.control_law(SimTime(0), 4), SimTime(50 * MS));
        assert_eq!(c.control_law(SimTime(7), 100), SimTime(7 + 10 * MS));
    }

    #[test]
    fn a_queue_below_target_is_never_dropped() {
        // three arrivals every 8 ms, each served 4 ms later: a standing delay of 4 ms
        // (below target) is never dropped, however long it lasts
        let mut q = codel(false);
        for i in 0..500u64 {
            for _ in 0..3 {
                q.enqueue(SimTime(8 * i * MS), F::new(i as u32, 1000))
                    .unwrap();
            }
            for _ in 0..3 {
                assert!(q.dequeue(SimTime((8 * i + 4) * MS)).is_some());
            }
        }
        assert_eq!(q.stats().aqm_drops, 0);
    }

    /// Times (ms) of the drops, serving one unit per `gap` ms from `t0` while the
    /// queue was filled beforehand; stops after `n` drops.
    fn drops_while_serving(q: &mut Codel<F>, t0: u64, gap: u64, n: usize) -> (Vec<u64>, u64) {
        let mut times = vec![];
        let mut t = t0;
        while times.len() < n {
            let before = q.stats().aqm_drops;
            q.dequeue(SimTime(t * MS));
            if q.stats().aqm_drops > before {
                times.push(t);
            }
            t += gap;
        }
        (times, t)
    }

    #[test]
    fn overload_is_dropped_after_an_interval_above_target_then_by_the_control_law() {
        // 1000 units stamped at 0, one served every 2 ms: the unit served at t has
        // waited t ms. Sojourn reaches target at t = 6 (the first even t ≥ 5):
        // first_above_time = 106, the first drop at 106 (count 1, drop_next 206);
        // then drops at the first service time ≥ drop_next, and drop_next advances by
        // interval / sqrt(count) (RFC 8289 §5.5).
        let mut q = codel(false);
        for i in 0..1000 {
            q.enqueue(SimTime(0), F::new(i, 1000)).unwrap();
        }
        let (times, _) = drops_while_serving(&mut q, 0, 2, 10);
        let mut want = vec![106];
        let mut next = 206 * MS;
        let mut count = 1u32;
        while want.len() < 10 {
            let t = next.div_ceil(2 * MS) * 2; // first service time ≥ drop_next
            want.push(t);
            count += 1;
            next += (100.0 * MS as f64 / (count as f64).sqrt()) as u64;
        }
        assert_eq!(times, want);
        assert!(q.vars.dropping && q.vars.count == 10);
        // each drop also skips a unit: the drops are of admitted units
        let s = q.stats();
        assert_eq!((s.aqm_drops, s.dropped, s.ce_marks), (10, 10, 0));
    }

    #[test]
    fn leaving_below_target_and_reentering_resumes_near_the_previous_rate() {
        let mut q = codel(false);
        for i in 0..1000 {
            q.enqueue(SimTime(0), F::new(i, 1000)).unwrap();
        }
        // one per ms: drops at 105 (count 1), 205 (2), 276 (3), 334 (4), 384 (5), 429 (6)
        let (times, t) = drops_while_serving(&mut q, 0, 1, 6);
        assert_eq!(times, [105, 205, 276, 334, 384, 429]);
        assert_eq!(q.vars.count, 6);
        // empty the queue at once: no drop is due before drop_next (≈ 469 ms); the
        // last units leave with at most one MTU behind them and dropping ends
        while q.dequeue(SimTime(t * MS)).is_some() {}
        assert!(!q.vars.dropping);
        assert_eq!(q.stats().aqm_drops, 6);
        // a new standing queue 0.1 s later: §5.6 re-entry with count = 6 - 1 = 5
        for i in 0..1000 {
            q.enqueue(SimTime(t * MS), F::new(i, 1000)).unwrap();
        }
        let (times, _) = drops_while_serving(&mut q, t + 1, 1, 1);
        assert_eq!(times, [t + 105]);
        assert_eq!(q.vars.count, 5);
        let interval_over_sqrt5 = (100.0 * MS as f64 / 5f64.sqrt()) as u64;
        assert_eq!(
            q.vars.drop_next,
            SimTime((t + 105) * MS + interval_over_sqrt5)
        );
    }

    #[test]
    fn ecn_marks_instead_of_dropping() {
        let mut plain = codel(false);
        let mut ecn = codel(true);
        for q in [&mut plain, &mut ecn] {
            for i in 0..400 {
                q.enqueue(SimTime(0), F::new(i, 1000).ect()).unwrap();
            }
        }
        let (first_drop, _) = drops_while_serving(&mut plain, 0, 1, 1);
        let mut marks = vec![];
        let mut sent = 0;
        for t in 0..400 {
            if let Some(f) = ecn.dequeue(SimTime(t * MS)) {
                sent += 1;
                if f.ecn == 3 {
                    marks.push(t);
                }
            }
        }
        let e = ecn.stats();
        assert_eq!(e.aqm_drops, 0);
        assert_eq!(e.ce_marks, marks.len() as u64);
        assert_eq!(
            marks[..3],
            [105, 205, 276],
            "the drop schedule, marked instead"
        );
        assert_eq!(first_drop, [105]);
        assert_eq!(sent, 400, "nothing lost with ECN");
        // a Not-ECT unit is still dropped by an ECN CoDel
        let mut mixed = codel(true);
        for i in 0..400 {
            mixed.enqueue(SimTime(0), F::new(i, 1000)).unwrap();
        }
        let (d, _) = drops_while_serving(&mut mixed, 0, 1, 1);
        assert_eq!((d, mixed.stats().ce_marks), (vec![105], 0));
    }

    #[test]
    fn maxpacket_rule_keeps_the_last_packet() {
        // one packet waiting with a huge sojourn time is never dropped (bytes() ≤ MTU)
        let mut q = codel(false);
        q.enqueue(SimTime(0), F::new(1, 1000)).unwrap();
        q.enqueue(SimTime(0), F::new(2, 1000)).unwrap();
        assert_eq!(q.dequeue(SimTime(500 * MS)).map(|f| f.id), Some(1));
        assert_eq!(q.dequeue(SimTime(900 * MS)).map(|f| f.id), Some(2));
        assert_eq!(q.stats().aqm_drops, 0);
    }
}
