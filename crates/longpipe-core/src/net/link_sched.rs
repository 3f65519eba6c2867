//! The schedule stage of a link direction: applies its [`Timeline`]'s changes to the
//! other stages (transmitter rate, delay line, loss model), takes the direction down
//! and up, and, for a trace-driven rate, serves the queue at the trace's delivery
//! opportunities instead of at a fixed rate.
//!
//! Semantics (docs/scenario.md "Links that change over time"):
//! - **rate**: a unit in transmission sends its remaining bits at the new rate;
//! - **delay**: applies to units whose transmission ends from then on; units already
//!   propagating keep theirs. When the delay drops, a unit would arrive before ones sent
//!   earlier: by default the delay line stays FIFO (a unit arrives no earlier than the
//!   one before it, as on one path whose length changed); `reorder = true` lets it
//!   overtake, as when a handover moves traffic to a shorter path (and as Linux netem
//!   does when its delay is changed);
//! - **loss**: the model applies to units whose transmission ends from then on;
//! - **up = false**: with `outage = "drop"` the unit in transmission, the queue and every
//!   arrival are dropped (`drops_outage`); with `"hold"` the queue keeps filling (up to
//!   its limit) and the unit in transmission pauses. Units already propagating arrive.
//! - at one instant a transmission that ends is finished before a change applies.
//!
//! A schedule whose changes set only the delay and the loss model (a jitter entry, a
//! loss period) is *lazy*: those act only on units whose transmission ends after them,
//! so they are applied when a transmission ends, every change before that instant
//! first, and cost no event of their own. A lazy schedule on a fixed drop-tail direction
//! keeps the timer-less transmitter (`link_fifo.rs`): there the changes before a
//! transmission's end are applied as it is admitted, which is the same order. The draws
//! are the same, in the same order, and so is every delivery: a unit of one byte or
//! more takes at least 1 ns to send (`Rate::tx_time` rounds up), so a change at the
//! instant its transmission started is before the instant it ends.
//!
//! (Over 600 lines with its tests, which drive each schedule semantics above.)

use super::{LinkDirConfig, LinkDirection, OUT, TAP};
use crate::element::{Class, Emit, Frame};
use crate::net::loss::LossState;
use crate::net::schedule::{Change, DirSchedule, Outage, Timeline};
use crate::net::trace::{Cursor, OPPORTUNITY_BYTES, PACKET_OVERHEAD};
use crate::rng::RngStream;
use crate::time::{Rate, SimDuration, SimTime};

/// A trace-driven transmitter.
pub(super) struct TraceTx<U> {
    cur: Cursor,
    /// The trace's capacity in opportunity bytes (busy time is counted at it).
    capacity: Rate,
    /// The unit whose bytes are going out, and how many are left (with the overhead).
    in_transit: Option<(U, u32)>,
}

pub(super) struct Sched<U> {
    tl: Timeline,
    /// Changes applied when a transmission ends, not at their own times (module doc).
    lazy: bool,
    up: bool,
    outage: Outage,
    reorder: bool,
    /// The latest delivery time handed out (FIFO delay line).
    last_at: SimTime,
    /// `hold`: the unit whose transmission an outage paused, and the time it still needs.
    paused: Option<(U, SimDuration)>,
    trace: Option<TraceTx<U>>,
}

fn earlier(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// `rem` at rate `old`, rescaled to rate `new` (rounded up to the ns).
fn rescale(rem: SimDuration, old: Rate, new: Rate) -> SimDuration {
    SimDuration((rem.0 as u128 * old.0 as u128).div_ceil(new.0 as u128) as u64)
}

impl<U: Frame + Clone + Send + 'static> LinkDirection<U> {
    /// A link direction with every stage its config asks for, the schedule's random
    /// streams seeded from `seed`: how the simulator and the live emulator build one.
    pub fn build(cfg: &LinkDirConfig, loss: LossState, queue_rng: RngStream, seed: u64) -> Self {
        let l = LinkDirection::new(cfg, loss, queue_rng);
        match &cfg.sched {
            Some(s) => l.with_schedule(s, seed),
            None => l,
        }
    }

    /// Adds the schedule stage, its random streams seeded from `seed`. A schedule that
    /// changes nothing adds no stage.
    pub fn with_schedule(mut self, s: &DirSchedule, seed: u64) -> Self {
        if !s.is_active() {
            return self;
        }
        self.c.drops_outage = super::OptCount::new(Some(0));
        if !s.lazy() {
            self.fifo = None; // a changing rate and outages need the transmitter's timer
        }
        self.sched = Some(Box::new(Sched {
            tl: Timeline::new(s, seed),
            lazy: s.lazy(),
            up: true,
            outage: s.outage,
            reorder: s.reorder,
            last_at: SimTime::ZERO,
            paused: None,
            trace: s.trace.as_ref().map(|t| TraceTx {
                capacity: Rate(
                    ((t.offsets.len() as u128 * OPPORTUNITY_BYTES as u128 * 8 * 1_000_000_000)
                        / t.period as u128)
                        .max(1) as u64,
                ),
                cur: Cursor::new(t.clone()),
                in_transit: None,
            }),
        }));
        self
    }

    /// Whether the direction is up (always, without a schedule).
    pub fn is_up(&self) -> bool {
        self.sched.as_ref().is_none_or(|s| s.up)
    }

    /// The time of the transmitter's next event: the end of a transmission, or the next
    /// delivery opportunity while there is something to send; none while down.
    fn tx_next(&self, s: &Sched<U>) -> Option<SimTime> {
        if !s.up {
            return None;
        }
        match &s.trace {
            Some(t) => (t.in_transit.is_some() || !self.queue.is_empty()).then(|| t.cur.next()),
            None => self.in_tx.as_ref().map(|t| t.2),
        }
    }

    /// The same direction applying its changes at their own times, on the timer path
    /// (tests compare).
    #[cfg(test)]
    fn eager(mut self) -> Self {
        if let Some(s) = &mut self.sched {
            s.lazy = false;
        }
        self.fifo = None;
        self
    }

    /// The timer-less path's lazy schedule: applies every change before `end`, the end
    /// of the transmission being admitted. Transmissions end in the order they are
    /// admitted, so the changes apply in the order, and before the same transmissions,
    /// as on the timer path (which applies them as each transmission ends).
    pub(super) fn changes_before(&mut self, end: SimTime, out: &mut Vec<Emit<U>>) {
        let Some(mut s) = self.sched.take() else {
            return;
        };
        debug_assert!(s.lazy && s.trace.is_none());
        while let Some(c) = s.tl.next_change().filter(|&c| c < end) {
            let (c, ch) = s.tl.pop_due(c).expect("due");
            self.apply(&mut s, c, ch, out);
        }
        self.sched = Some(s);
    }

    /// The arrival time of a unit that would arrive at `at` over a delay line that stays
    /// FIFO (no earlier than the unit before it) unless the schedule lets units reorder.
    #[inline]
    pub(super) fn delay_line(&mut self, at: SimTime) -> SimTime {
        match self.sched.as_deref_mut() {
            Some(s) if !s.reorder => {
                let at = at.max(s.last_at);
                s.last_at = at;
                at
            }
            _ => at,
        }
    }

    pub(super) fn poll_sched(&self, s: &Sched<U>) -> Option<SimTime> {
        if s.lazy {
            return self.tx_next(s);
        }
        earlier(self.tx_next(s), s.tl.next_change())
    }

    /// Runs every transmitter event and change due at `now`, in time order
    /// (transmitter first at one instant).
    pub(super) fn timeout_sched(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
        let mut s = self.sched.take().expect("a scheduled direction");
        loop {
            let tx = self.tx_next(&s).filter(|&t| t <= now);
            let ch = (!s.lazy)
                .then(|| s.tl.next_change())
                .flatten()
                .filter(|&t| t <= now);
            match (tx, ch) {
                (Some(t), c) if c.is_none_or(|c| t <= c) => self.tx_event(&mut s, t, out),
                (_, Some(_)) => {
                    let (t, c) = s.tl.pop_due(now).expect("due");
                    self.apply(&mut s, t, c, out);
                }
                _ => break,
            }
        }
        self.sched = Some(s);
    }

    pub(super) fn handle_sched(&mut self, now: SimTime, unit: U, out: &mut Vec<Emit<U>>) {
        // What is due now happens first, whatever the order of events at this instant:
        // a change at `now` applies to this unit, and (as in Mahimahi) a delivery
        // opportunity at `now` is gone before the unit arrives.
        self.timeout_sched(now, out);
        let mut s = self.sched.take().expect("a scheduled direction");
        if !s.up && s.outage == Outage::Drop {
            self.c.drops_outage.add(1);
        } else if let Some(t) = &mut s.trace {
            if t.in_transit.is_none() && self.queue.is_empty() {
                t.cur.skip_to_after(now);
            }
            self.admit(now, unit);
        } else if s.up && self.in_tx.is_none() && s.paused.is_none() {
            debug_assert!(self.queue.is_empty());
            self.start(now, unit, out);
        } else {
            self.admit(now, unit);
        }
        self.sched = Some(s);
    }

    /// The impairment and the delay line, for a unit whose transmission ended at `t`.
    fn deliver(&mut self, s: &mut Sched<U>, t: SimTime, unit: U, out: &mut Vec<Emit<U>>) {
        if self.loss.lose(&unit) {
            self.c.drops_loss += 1;
            if unit.class() == Class::Low {
                self.c.class.drops_loss_low += 1;
            }
            return;
        }
        let mut at = t + self.delay;
        if !s.reorder {
            at = at.max(s.last_at);
            s.last_at = at;
        }
        out.push(Emit::At {
            at,
            port: OUT,
            unit,
        });
    }

    fn tx_event(&mut self, s: &mut Sched<U>, t: SimTime, out: &mut Vec<Emit<U>>) {
        if s.trace.is_none() {
            let (unit, started, _) = self.in_tx.take().expect("a transmission ends");
            self.c.busy_ns += (t - started).as_nanos();
            if s.lazy {
                // every change before this instant (one at it comes after: the tie rule)
                while let Some(c) = s.tl.next_change().filter(|&c| c < t) {
                    let (c, ch) = s.tl.pop_due(c).expect("due");
                    self.apply(s, c, ch, out);
                }
            }
            self.deliver(s, t, unit, out);
            if let Some(next) = self.next_unit(t) {
                self.start(t, next, out);
            }
            return;
        }
        // A delivery opportunity: OPPORTUNITY_BYTES for the unit in transit, then for
        // the next ones; what is left unused is lost.
        let mut tr = s.trace.take().expect("checked");
        tr.cur.advance();
        let mut credit = OPPORTUNITY_BYTES;
        while credit > 0 {
            let (unit, left) = match tr.in_transit.take() {
                Some(x) => x,
                None => {
                    let Some(unit) = self.next_unit(t) else {
                        break;
                    };
                    let size = unit.wire_len();
                    self.c.packets += 1;
                    self.c.bytes += size as u64;
                    if unit.class() == Class::Low {
                        self.c.class.packets_low += 1;
                    }
                    self.c.busy_ns += tr.capacity.tx_time((size + PACKET_OVERHEAD) as u64).0;
                    if self.tap {
                        out.push(Emit::Now {
                            port: TAP,
                            unit: unit.clone(),
                        });
                    }
                    (unit, size + PACKET_OVERHEAD)
                }
            };
            let n = credit.min(left);
            credit -= n;
            if left == n {
                self.deliver(s, t, unit, out);
            } else {
                tr.in_transit = Some((unit, left - n));
            }
        }
        s.trace = Some(tr);
    }

    fn apply(&mut self, s: &mut Sched<U>, t: SimTime, c: Change, out: &mut Vec<Emit<U>>) {
        if let Some(r) = c.rate {
            if let Some((_, _, done)) = &mut self.in_tx {
                *done = t + rescale(*done - t, self.rate, r);
            }
            if let Some((_, rem)) = &mut s.paused {
                *rem = rescale(*rem, self.rate, r);
            }
            self.rate = r;
        }
        if let Some(d) = c.delay {
            self.delay = d;
        }
        if let Some(m) = c.loss {
            self.loss.set_model(m);
        }
        match c.up {
            Some(false) if s.up => {
                s.up = false;
                self.go_down(s, t);
            }
            Some(true) if !s.up => {
                s.up = true;
                self.go_up(s, t, out);
            }
            _ => {}
        }
    }

    fn go_down(&mut self, s: &mut Sched<U>, t: SimTime) {
        if let Some((unit, started, done)) = self.in_tx.take() {
            self.c.busy_ns += (t - started).as_nanos();
            match s.outage {
                Outage::Drop => self.c.drops_outage.add(1),
                Outage::Hold => s.paused = Some((unit, done - t)),
            }
        }
        if s.outage == Outage::Drop {
            if let Some(tr) = &mut s.trace {
                if tr.in_transit.take().is_some() {
                    self.c.drops_outage.add(1);
                }
            }
            while self.queue.dequeue(t).is_some() {
                self.c.drops_outage.add(1);
            }
        }
    }

    fn go_up(&mut self, s: &mut Sched<U>, t: SimTime, out: &mut Vec<Emit<U>>) {
        if let Some(tr) = &mut s.trace {
            // the opportunities of the outage are gone; one at `t` is usable
            tr.cur.skip_to_after(SimTime(t.0.saturating_sub(1)));
            return;
        }
        if let Some((unit, rem)) = s.paused.take() {
            self.in_tx = Some((unit, t, t + rem));
        } else if let Some(next) = self.next_unit(t) {
            self.start(t, next, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LinkDirConfig, LinkDirection};
    use crate::element::{Class, Element, Emit, Frame, PortId};
    use crate::net::loss::{LossModel, LossState};
    use crate::net::queue::QueueConfig;
    use crate::net::schedule::{resolve, LinkShape, Outage, ScheduleSpec};
    use crate::net::trace::MmTrace;
    use crate::rng::RngStream;
    use crate::time::{Rate, SimDuration, SimTime};
    use crate::units::Limit;

    #[derive(Clone, Debug, PartialEq)]
    struct F(u32, u32); // (id, bytes)
    /// Units with an id from here up are [`Class::Low`].
    const LOW: u32 = 1_000_000;
    impl Frame for F {
        fn wire_len(&self) -> u32 {
            self.1
        }
        fn class(&self) -> Class {
            if self.0 >= LOW {
                Class::Low
            } else {
                Class::Normal
            }
        }
    }

    const MS: u64 = 1_000_000;

    /// A link direction at 1 byte/us, 10 ms, with the schedule `json` (a->b).
    fn link(json: &str, outage: Outage, reorder: bool, trace: Option<&str>) -> LinkDirection<F> {
        link_q(json, outage, reorder, trace, 1000)
    }

    /// [`link`] with a drop-tail queue of `limit` packets.
    fn link_q(
        json: &str,
        outage: Outage,
        reorder: bool,
        trace: Option<&str>,
        limit: u64,
    ) -> LinkDirection<F> {
        let specs: Vec<ScheduleSpec> = serde_json::from_str(json).unwrap();
        let mm = trace.map(|t| MmTrace::parse(t, "t", "t").unwrap());
        let shape = LinkShape {
            sym_rate: true,
            sym_delay: true,
            traced: [mm.is_some(), false],
        };
        let [a, _] = resolve(&specs, shape, outage, reorder, [mm, None], "s", "l").unwrap();
        let cfg = LinkDirConfig {
            rate: Rate(8_000_000),
            delay: SimDuration::from_millis(10),
            queue: QueueConfig::droptail(Limit::Packets(limit)),
            loss: LossModel::None,
            sched: None,
        };
        LinkDirection::new(
            &cfg,
            LossState::new(LossModel::None, RngStream::new(1, "t")),
            RngStream::new(1, "q"),
        )
        .with_schedule(&a, 1)
    }

    /// Drives `l` as a driver would: units arrive at the given times; returns the
    /// (delivery time, id) of every unit that leaves, until `end`.
    fn drive(l: &mut LinkDirection<F>, arrivals: &[(u64, F)], end: u64) -> Vec<(u64, u32)> {
        let mut got = vec![];
        let mut out = vec![];
        let mut arr = arrivals.iter().peekable();
        loop {
            let wake = l.poll_timeout().map(|t| t.0);
            let next_arr = arr.peek().map(|a| a.0);
            let t = match (wake, next_arr) {
                (Some(w), Some(a)) => w.min(a),
                (w, a) => match w.or(a) {
                    Some(t) => t,
                    None => break,
                },
            };
            if t > end {
                break;
            }
            if next_arr == Some(t) && wake.is_none_or(|w| w >= t) {
                let (_, u) = arr.next().unwrap();
                l.handle(SimTime(t), 0 as PortId, u.clone(), &mut out);
            } else {
                l.handle_timeout(SimTime(t), &mut out);
            }
            for e in out.drain(..) {
                if let Emit::At { at, unit, .. } = e {
                    got.push((at.0, unit.0));
                }
            }
        }
        got
    }

    #[test]
    fn delay_and_loss_changes_applied_lazily_deliver_as_at_their_times() {
        // A jitter entry (a delay drawn every 1 ms), loss periods and one-off delays,
        // some at the very instants transmissions end: applied when a transmission
        // ends, they deliver and drop exactly what they do applied at their own times,
        // with no wake-up of their own.
        let json = r#"[{"every":"1ms","delay":{"min":"0s","max":"3ms"}},
                        {"every":"7ms","loss":[{"kind":"bernoulli","p":0.5},{"kind":"none"}]},
                        {"at":"2ms","delay":"1ms"},{"at":"9125us","delay":"4ms"}]"#;
        for (reorder, limit) in [(false, 1000), (true, 1000), (false, 8), (true, 8)] {
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut arr = vec![];
            let mut t = 0;
            for id in 0..400u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                t += [0, 125_000, 250_000, 1_000_000][(x % 4) as usize];
                arr.push((t, F(id, 125 + (x >> 20) as u32 % 1000)));
            }
            // the lazy direction runs without the transmitter's timer (link_fifo.rs);
            // its units' deliveries are emitted as they are admitted, so the two are
            // compared once every unit has left (by 1 s), and their counters midway
            // (at 200 ms: about 190 units still queued; with 8 packets of queue, 175
            // dropped by then)
            let lazy = || link_q(json, Outage::Drop, reorder, None, limit);
            let eager = || link_q(json, Outage::Drop, reorder, None, limit).eager();
            assert!(lazy().sched.as_ref().unwrap().lazy && lazy().fifo.is_some());
            assert!(eager().fifo.is_none());
            let (a, b) = (
                drive(&mut lazy(), &arr, 1000 * MS),
                drive(&mut eager(), &arr, 1000 * MS),
            );
            assert_eq!(a, b, "reorder {reorder}, queue {limit}");
            // the lazy schedule on the timer path (a queue other than drop-tail, such
            // as CoDel, keeps it): the same as applied at the changes' own times
            let timer = || link_q(json, Outage::Drop, reorder, None, limit).with_timer();
            assert!(timer().sched.as_ref().unwrap().lazy && timer().fifo.is_none());
            let (mut t, mut e) = (timer(), eager());
            let (c, d) = (drive(&mut t, &arr, 200 * MS), drive(&mut e, &arr, 200 * MS));
            assert_eq!(c, d, "timer path: reorder {reorder}, queue {limit}");
            let (mt, me) = (t.metrics(SimTime(200 * MS)), e.metrics(SimTime(200 * MS)));
            assert_eq!(format!("{mt:?}"), format!("{me:?}"), "timer path counters");
            assert!(
                a.len() > 100 && a.len() < 390,
                "some lost, most delivered: {}",
                a.len()
            );
            for end in [200 * MS, 1000 * MS] {
                let (mut l, mut e) = (lazy(), eager());
                drive(&mut l, &arr, end);
                drive(&mut e, &arr, end);
                let (ma, mb) = (l.metrics(SimTime(end)), e.metrics(SimTime(end)));
                assert_eq!(
                    (
                        ma.drops_loss,
                        ma.drops_queue,
                        ma.packets,
                        ma.busy_ns,
                        ma.max_queue
                    ),
                    (
                        mb.drops_loss,
                        mb.drops_queue,
                        mb.packets,
                        mb.busy_ns,
                        mb.max_queue
                    ),
                    "reorder {reorder}, queue {limit}, at {end}"
                );
                if end == 200 * MS {
                    assert!(l.queue_len() >= 8 && ma.drops_queue == 0 || limit == 8);
                    assert!(
                        ma.drops_queue > 100 || limit == 1000,
                        "the small queue drops"
                    );
                }
            }
        }
        // a rate change, an outage or a trace keeps every change at its own time
        for json in [
            r#"[{"every":"1ms","delay":"1ms","rate":"4Mbps"}]"#,
            r#"[{"every":"1ms","delay":"1ms"},{"at":"5ms","up":false}]"#,
            r#"[{"every":"10ms","down_for":"1ms"}]"#,
        ] {
            let l = link(json, Outage::Drop, false, None);
            assert!(!l.sched.as_ref().unwrap().lazy, "{json}");
        }
    }

    #[test]
    fn a_change_a_nanosecond_before_a_transmission_ends_applies_to_it() {
        // Transmissions ending 1 ns before a delay change, at it, and 1 ns after it
        // (the random arrivals above fall on whole microseconds): applied at admission,
        // the changes reach exactly the units they reach at their own times. 125 B take
        // 125 us; each unit finds the transmitter idle.
        let json = r#"[{"at":"2ms","delay":"1ms"},{"at":"5ms","delay":"3ms"},
                        {"at":"8ms","delay":"0s"}]"#;
        for off in [-1i64, 0, 1] {
            let arr: Vec<(u64, F)> = [2u64, 5, 8]
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    (
                        (c * MS - 125_000).saturating_add_signed(off),
                        F(i as u32, 125),
                    )
                })
                .collect();
            let lazy = drive(
                &mut link_q(json, Outage::Drop, false, None, 1000),
                &arr,
                20 * MS,
            );
            let eager = drive(
                &mut link_q(json, Outage::Drop, false, None, 1000).eager(),
                &arr,
                20 * MS,
            );
            assert_eq!(lazy, eager, "ends {off} ns from the changes");
            // the change reaches the unit ending after it, not the one ending at it
            let first = lazy[0].0 - 2 * MS;
            let want = if off > 0 {
                MS + 1
            } else {
                (10 * MS).saturating_add_signed(off)
            };
            assert_eq!(first, want, "ends {off} ns from the changes");
        }
    }

    #[test]
    fn a_unit_serialising_across_a_rate_change_sends_the_rest_at_the_new_rate() {
        // 1000 B at 1 B/us: 400 us done when the rate halves at 400 us; the other 600 B
        // take 1200 us: the transmission ends at 1.6 ms, delivered at 11.6 ms.
        let mut l = link(
            r#"[{"at":"400us","rate":"4Mbps"}]"#,
            Outage::Drop,
            false,
            None,
        );
        let got = drive(&mut l, &[(0, F(1, 1000)), (0, F(2, 500))], 100 * MS);
        assert_eq!(got, [(11_600_000, 1), (12_600_000, 2)]);
        assert_eq!(l.metrics(SimTime(100 * MS)).busy_ns, 2_600_000);
    }

    #[test]
    fn a_delay_drop_keeps_fifo_order_unless_reorder() {
        // 1000 B units every 1 ms; the delay drops from 10 to 2 ms at 2.5 ms: unit 3
        // (sent at 3 ms) would arrive at 5 ms, before unit 2 (12 ms).
        let arr: Vec<(u64, F)> = (0..4).map(|i| (i * MS, F(i as u32, 1000))).collect();
        let fifo = drive(
            &mut link(
                r#"[{"at":"2500us","delay":"2ms"}]"#,
                Outage::Drop,
                false,
                None,
            ),
            &arr,
            100 * MS,
        );
        assert_eq!(
            fifo,
            [(11 * MS, 0), (12 * MS, 1), (12 * MS, 2), (12 * MS, 3)]
        );
        let re = drive(
            &mut link(
                r#"[{"at":"2500us","delay":"2ms"}]"#,
                Outage::Drop,
                true,
                None,
            ),
            &arr,
            100 * MS,
        );
        assert_eq!(re, [(11 * MS, 0), (12 * MS, 1), (5 * MS, 2), (6 * MS, 3)]);
    }

    #[test]
    fn an_outage_drops_or_holds() {
        // down from 1.5 ms to 5 ms; units of 1000 B arrive at 0, 0, 0, 2 ms, 6 ms
        let sched = r#"[{"at":"1500us","up":false},{"at":"5ms","up":true}]"#;
        let arr = [
            (0, F(0, 1000)),
            (0, F(1, 1000)),
            (0, F(2, 1000)),
            (2 * MS, F(3, 1000)),
            (6 * MS, F(4, 1000)),
        ];
        let mut d = link(sched, Outage::Drop, false, None);
        let got = drive(&mut d, &arr, 100 * MS);
        // 0 done at 1 ms; 1 cut mid-transmission, 2 flushed, 3 arrives while down
        assert_eq!(got, [(11 * MS, 0), (17 * MS, 4)]);
        let m = d.metrics(SimTime(100 * MS));
        assert_eq!(
            (m.drops_outage.get(), m.drops_queue, m.packets),
            (Some(3), 0, 3)
        );
        let mut h = link(sched, Outage::Hold, false, None);
        let got = drive(&mut h, &arr, 100 * MS);
        // 1 paused at 1.5 ms with 500 us to go: resumes at 5 ms, done 5.5 ms; then 2, 3, 4
        assert_eq!(
            got,
            [
                (11 * MS, 0),
                (15_500_000, 1),
                (16_500_000, 2),
                (17_500_000, 3),
                (18_500_000, 4)
            ]
        );
        let m = h.metrics(SimTime(100 * MS));
        assert_eq!(m.drops_outage.get(), Some(0));
        assert_eq!(m.busy_ns, 5_000_000);
    }

    #[test]
    fn a_change_at_an_arrivals_instant_applies_to_it_whatever_the_event_order() {
        // the link comes back up at 5 ms; a unit arriving at 5 ms is sent (the change is
        // applied before the arrival even though handle runs before the wake-up)
        let mut l = link(
            r#"[{"at":"0s","up":false},{"at":"5ms","up":true}]"#,
            Outage::Drop,
            false,
            None,
        );
        let mut out = vec![];
        l.handle_timeout(SimTime(0), &mut out);
        assert!(!l.is_up());
        l.handle(SimTime(5 * MS), 0, F(1, 100), &mut out);
        assert!(l.is_up());
        assert_eq!(l.metrics(SimTime(5 * MS)).drops_outage.get(), Some(0));
        assert_eq!(l.poll_timeout(), Some(SimTime(5 * MS + 100_000)));
    }

    #[test]
    fn a_trace_delivers_at_its_opportunities_exactly() {
        // opportunities at 1, 1, 3, 4 ms, period 4 ms (then 5, 5, 7, 8, ...)
        let tr = "1\n1\n3\n4\n";
        let mut l = link("[]", Outage::Drop, false, Some(tr));
        // a 1500-byte unit costs 1504 bytes: one whole opportunity; a 3000-byte one
        // (3004) takes the one at 4 ms and 1500 bytes of the first at 5 ms
        let arr = [
            (0, F(0, 1500)),
            (0, F(1, 1500)),
            (0, F(2, 1500)),
            (0, F(3, 3000)),
            (0, F(4, 40)),
            (0, F(5, 40)),
        ];
        let got = drive(&mut l, &arr, 100 * MS);
        let d = 10 * MS;
        // 0, 1 at 1 ms; 2 at 3 ms; 3 at 5 ms; 4 (44 B) starts in the 4 bytes left of
        // that opportunity and ends in the second one at 5 ms, with 5
        assert_eq!(
            got,
            [
                (d + MS, 0),
                (d + MS, 1),
                (d + 3 * MS, 2),
                (d + 5 * MS, 3),
                (d + 5 * MS, 4),
                (d + 5 * MS, 5)
            ]
        );
        // a unit arriving exactly at an opportunity does not use it (Mahimahi: the
        // opportunities up to now are used before the arrival)
        let mut l = link("[]", Outage::Drop, false, Some(tr));
        assert_eq!(
            drive(&mut l, &[(3 * MS, F(9, 100))], 100 * MS),
            [(d + 4 * MS, 9)]
        );
        // saturated with full-size units, the deliveries are the trace's opportunities,
        // one each, looped, shifted by the delay: a pseudo-random trace of 200 lines
        let mut x = 12345u64;
        let mut ms = 0u64;
        let lines: Vec<u64> = (0..200)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ms += (x >> 61) % 4; // gaps of 0 to 3 ms: several at one instant too
                ms
            })
            .collect();
        let text: String = lines.iter().map(|m| format!("{m}\n")).collect();
        let period = *lines.last().unwrap();
        let mut l = link("[]", Outage::Drop, false, Some(&text));
        let arr: Vec<(u64, F)> = (0..500).map(|i| (0, F(i, 1500))).collect();
        let got = drive(&mut l, &arr, 10_000 * MS);
        // (units arriving at 0 do not use an opportunity at 0 ms)
        let want: Vec<(u64, u32)> = (0..3u64)
            .flat_map(|k| lines.iter().map(move |&m| k * period + m))
            .filter(|&m| m > 0)
            .take(500)
            .enumerate()
            .map(|(i, m)| (d + m * MS, i as u32))
            .collect();
        assert_eq!(got, want);
        // idle across many periods: the cursor jumps
        let mut l = link("[]", Outage::Drop, false, Some(tr));
        assert_eq!(
            drive(&mut l, &[(4_000_001 * MS / 1000, F(9, 100))], 100_000 * MS),
            [(d + 4_001 * MS, 9)]
        );
    }

    #[test]
    fn losses_and_transmissions_of_low_class_units_are_counted_by_class() {
        // Every unit is lost from 1 ms on (a loss period), on a timed transmitter and on
        // a trace-driven one: the low-class counters take the Low units, as on a fixed
        // direction (link.rs).
        let json = r#"[{"at":"1ms","loss":{"kind":"bernoulli","p":1.0}}]"#;
        for trace in [None, Some("1\n")] {
            let mut l = link(json, Outage::Drop, false, trace);
            let arr = [
                (0, F(0, 100)),      // leaves before the loss period
                (0, F(LOW, 100)),    // the same
                (2 * MS, F(1, 100)), // lost
                (2 * MS, F(LOW + 1, 100)),
                (2 * MS, F(LOW + 2, 100)),
            ];
            let got = drive(&mut l, &arr, 100 * MS);
            let ids: Vec<u32> = got.iter().map(|g| g.1).collect();
            assert_eq!(ids, [0, LOW], "{trace:?}");
            let m = l.metrics(SimTime(100 * MS));
            assert_eq!((m.packets, m.class.packets_low), (5, 3), "{trace:?}");
            assert_eq!((m.drops_loss, m.class.drops_loss_low), (3, 2), "{trace:?}");
        }
    }
}
