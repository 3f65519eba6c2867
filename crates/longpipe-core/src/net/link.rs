//! One direction of a link as a chain of stages: queue discipline → transmitter (fixed
//! rate) → impairment (loss model) → delay line (propagation).
//!
//! An [`Element`] generic over the unit it carries ([`Frame`]): the simulator's packets
//! and the emulator's raw IPv4 buffers use this same code. Output port [`OUT`] leads to
//! the far end, after the propagation delay; port [`TAP`], when enabled, receives a
//! copy of every unit as its transmission starts (a capture point at the sending
//! interface).
//!
//! Invariants: at most one unit is in transmission, and the queue is empty whenever
//! the transmitter is idle; units leave in the order they were admitted; a unit is
//! counted in `packets`/`bytes` when its transmission starts, in `drops_queue` when the
//! queue refuses it or drops it later (an AQM, a push-out) and in `drops_loss` when the
//! impairment takes it at the end of its transmission; the same three for low-priority
//! units alone in [`ClassCounters`], with the discipline's AQM drops and ECN marks.
//!
//! A direction leaving a host ([`LinkDirection::hold_local`]) is also the host's own
//! interface: a segment of the host's own TCP endpoints that the queue refuses is not
//! dropped but waits in the socket (a FIFO before the queue) and enters the queue as it
//! drains, as Linux's qdisc back-pressure and TCP small queues keep a sender's segments
//! in its socket (net/ipv4/tcp_output.c, `tcp_small_queue_check`). It is counted in
//! `held`, never in `drops_queue`; forwarded units still meet drop-tail
//! (docs/notes/host-interface.md).
//!
//! A direction with a schedule (`[[link.schedule]]`, a trace-driven rate) has one more
//! stage, which changes the others' parameters over time and takes the link down
//! ([`link_sched.rs`](sched)); a direction without one never runs its code.
//!
//! A direction with a drop-tail queue, fixed or with a schedule that changes only its
//! delay and loss model (a jitter entry, loss periods), runs without a transmitter timer
//! ([`link_fifo.rs`](fifo)): a unit's transmission start and end are computed when it
//! is admitted, and its delivery (and its tap copy) emitted at once: one event per hop
//! instead of two. Its results are those of the timer path under one tie rule: *at one
//! instant, a transmission that ends is finished (and the next one started) before a
//! unit arriving at that instant is offered to the queue*. The other disciplines (their
//! decisions depend on the state at dequeue) and directions whose rate changes, that go
//! down or follow a trace keep the timer.
//!
//! Why one file of ~620 lines: about half is the unit tests of the stages' shared path
//! (admission, the host's socket side, the counters); the two other transmitters live
//! in their own files.

use super::loss::{LossModel, LossState};
use super::queue::{Queue, QueueConfig};
use super::schedule::DirSchedule;
use crate::element::{Class, Element, Emit, Frame, PortId};
use crate::rng::RngStream;
use crate::stats::{Peak, Since};
use crate::time::{Rate, SimDuration, SimTime};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;

#[path = "link_fifo.rs"]
mod fifo;
#[path = "link_sched.rs"]
mod sched;

/// Output port toward the far end.
pub const OUT: PortId = 0;
/// Output port receiving a copy of each unit as its transmission starts.
pub const TAP: PortId = 1;

/// One resolved link direction.
#[derive(Debug, Clone)]
pub struct LinkDirConfig {
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: SimDuration,
    pub queue: QueueConfig,
    pub loss: LossModel,
    /// Changes over time (None: fixed for the whole run). A direction gets it through
    /// [`LinkDirection::with_schedule`].
    pub sched: Option<Arc<DirSchedule>>,
}

/// A counter only some directions have (a scheduled one's outage drops): absent from
/// the result where it does not apply. (A u64 with a sentinel, not an `Option`, so that
/// a link direction stays small.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptCount(u64);

impl OptCount {
    const ABSENT: u64 = u64::MAX;
    pub fn new(v: Option<u64>) -> Self {
        OptCount(v.unwrap_or(Self::ABSENT))
    }
    pub fn get(&self) -> Option<u64> {
        (self.0 != Self::ABSENT).then_some(self.0)
    }
    pub fn is_none(&self) -> bool {
        self.0 == Self::ABSENT
    }
    fn add(&mut self, n: u64) {
        if !self.is_none() {
            self.0 += n;
        }
    }
}

impl Default for OptCount {
    fn default() -> Self {
        OptCount(Self::ABSENT)
    }
}

impl Serialize for OptCount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

/// In the schema as what it serializes to: an optional count.
impl schemars::JsonSchema for OptCount {
    fn is_referenceable() -> bool {
        false
    }
    fn schema_name() -> String {
        <Option<u64>>::schema_name()
    }
    fn json_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        <Option<u64>>::json_schema(gen)
    }
}

impl Since for OptCount {
    fn since(&self, base: &Self) -> Self {
        OptCount::new(self.get().map(|c| c - base.get().unwrap_or(0)))
    }
}

crate::counters! {
    /// Counters of a link direction. Serialized as the result's link fields.
    #[derive(Serialize, schemars::JsonSchema)]
    pub struct LinkCounters {
        /// Units whose transmission started.
        pub packets: u64,
        pub bytes: u64,
        pub drops_queue: u64,
        pub drops_loss: u64,
        /// Units of the sending host's own endpoints that the queue refused and that
        /// waited in the socket for room instead (each counted once; only on a host's
        /// interface, absent from the result while zero).
        #[serde(skip_serializing_if = "is_zero")]
        #[schemars(default)]
        pub held: u64,
        /// Units dropped because the link was down (only on scheduled directions).
        #[serde(skip_serializing_if = "OptCount::is_none")]
        #[schemars(default)]
        pub drops_outage: OptCount,
        /// Largest queue occupancy seen (units waiting, excluding the one in
        /// transmission), over the whole run.
        #[serde(rename = "max_queue_packets")]
        pub max_queue: Peak,
        /// Transmitter busy time, ns.
        #[serde(skip)]
        pub busy_ns: u64,
        /// Per-class and AQM counters (reported only by scenarios that use classes,
        /// ECN or an AQM; see `results::LinkResult`). Boxed: only low-priority units
        /// touch them on the per-packet path.
        #[serde(skip)]
        pub class: Box<ClassCounters>,
    }
}

crate::counters! {
    /// A link direction's counters of low-priority units ([`Class::Low`]) and of its
    /// queue discipline's active queue management.
    #[derive(Serialize, schemars::JsonSchema)]
    pub struct ClassCounters {
        /// Low-priority units whose transmission started.
        pub packets_low: u64,
        /// Low-priority units dropped by the queue (refused or dropped later).
        pub drops_queue_low: u64,
        /// Low-priority units taken by the loss model.
        pub drops_loss_low: u64,
        /// Drops decided by active queue management (RED, CoDel): part of
        /// `drops_queue`.
        pub drops_aqm: u64,
        /// Units marked ECN Congestion Experienced by the queue (RFC 3168).
        pub marks_ecn: u64,
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The socket side of a host's own interface: its address, and its segments waiting
/// for room in the queue, in the order they were sent.
struct HostIf<U> {
    addr: [u8; 4],
    held: VecDeque<U>,
}

impl<U: Frame> HostIf<U> {
    fn is_local(&self, unit: &U) -> bool {
        unit.tcp_meta().is_some_and(|m| m.src == self.addr)
    }
}

// (In this order, `repr(C)`: what an arrival on the timer-less path reads comes first,
// in three cache lines: the transmitter, the rate, delay and stages, the counters, the
// loss state's head. The timer path's state follows.)
#[repr(C)]
pub struct LinkDirection<U> {
    /// The timer-less transmitter of a drop-tail direction, fixed or with a lazy
    /// schedule (then `queue` and `in_tx` stay empty); None on the timer path.
    fifo: Option<fifo::Fifo>,
    rate: Rate,
    delay: SimDuration,
    /// The schedule stage; None on a fixed direction.
    sched: Option<Box<sched::Sched<U>>>,
    /// The sending host's socket side; None on a router's or an emulated direction.
    host: Option<Box<HostIf<U>>>,
    c: LinkCounters,
    /// On the timer-less path: the host holds units (`host.held` is not empty). Kept
    /// here so that an arrival on a host's link does not read the boxed interface (a
    /// cache miss a packet with a thousand flows).
    holding: bool,
    tap: bool,
    loss: LossState,
    queue: Box<dyn Queue<U>>,
    /// The unit in transmission, when it started and when it ends.
    in_tx: Option<(U, SimTime, SimTime)>,
}

impl<U: Frame + Clone + Send + 'static> LinkDirection<U> {
    /// A link direction; `queue_rng` is its queue discipline's own random stream.
    pub fn new(cfg: &LinkDirConfig, loss: LossState, queue_rng: RngStream) -> Self {
        let fifo = cfg
            .queue
            .is_droptail()
            .then(|| fifo::Fifo::new(cfg.queue.admission));
        LinkDirection {
            rate: cfg.rate,
            delay: cfg.delay,
            queue: cfg.queue.build(cfg.rate, queue_rng),
            in_tx: None,
            loss,
            tap: false,
            c: LinkCounters::default(),
            sched: None,
            host: None,
            fifo,
            holding: false,
        }
    }

    /// The same direction on the transmitter-timer path (tests compare the two paths).
    #[cfg(test)]
    pub(crate) fn with_timer(mut self) -> Self {
        self.fifo = None;
        self
    }

    /// Makes the direction the interface of the host with address `addr`: its own
    /// segments wait for room instead of being dropped (see the module documentation).
    pub fn hold_local(&mut self, addr: [u8; 4]) {
        self.host = Some(Box::new(HostIf {
            addr,
            held: VecDeque::new(),
        }));
    }

    /// Offers `unit` to the queue: a local unit waits behind those already waiting, and
    /// one the queue refuses (or pushes out) waits for room; anything else is dropped.
    fn admit(&mut self, now: SimTime, unit: U) {
        if let Some(h) = self.host.as_mut() {
            if !h.held.is_empty() && h.is_local(&unit) {
                h.held.push_back(unit);
                self.c.held += 1;
                return;
            }
        }
        match self.queue.enqueue(now, unit) {
            Ok(()) => self.c.max_queue.update(self.queue.len() as u64),
            Err(dropped) => {
                if let Some(h) = self.host.as_mut().filter(|h| h.is_local(&dropped)) {
                    h.held.push_back(dropped);
                    self.c.held += 1;
                    return;
                }
                self.c.drops_queue += 1;
                if dropped.class() == Class::Low {
                    self.c.class.drops_queue_low += 1;
                }
            }
        }
    }

    /// The next unit to transmit, and the waiting local units moved into the room it
    /// leaves (a host's queue that cannot hold one still sends them, one by one).
    fn next_unit(&mut self, now: SimTime) -> Option<U> {
        let next = self.queue.dequeue(now);
        let Some(h) = self.host.as_mut() else {
            return next;
        };
        let next = next.or_else(|| h.held.pop_front());
        while let Some(u) = h.held.pop_front() {
            if let Err(back) = self.queue.enqueue(now, u) {
                if h.is_local(&back) {
                    h.held.push_front(back);
                } else {
                    self.c.drops_queue += 1; // a forwarded unit pushed out
                }
                break;
            }
            self.c.max_queue.update(self.queue.len() as u64);
        }
        next
    }

    /// Copies every unit to port [`TAP`] as its transmission starts.
    pub fn enable_tap(&mut self) {
        self.tap = true;
    }

    fn start(&mut self, now: SimTime, unit: U, out: &mut Vec<Emit<U>>) {
        let size = unit.wire_len();
        let done = now + self.rate.tx_time(size as u64);
        self.c.packets += 1;
        self.c.bytes += size as u64;
        if unit.class() == Class::Low {
            self.c.class.packets_low += 1;
        }
        if self.tap {
            out.push(Emit::Now {
                port: TAP,
                unit: unit.clone(),
            });
        }
        self.in_tx = Some((unit, now, done));
    }

    /// Units waiting (not counting the one in transmission), as of the last event the
    /// direction saw.
    pub fn queue_len(&self) -> usize {
        match &self.fifo {
            Some(f) => f.waiting(),
            None => self.queue.len(),
        }
    }
}

impl<U: Frame + Clone + Send + 'static> Element<U> for LinkDirection<U> {
    type Metrics = LinkCounters;

    fn handle(&mut self, now: SimTime, _port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        // (a lazy schedule keeps the timer-less path: it applies its changes there)
        if self.fifo.is_some() {
            return self.handle_fifo(now, unit, out);
        }
        if self.sched.is_some() {
            return self.handle_sched(now, unit, out);
        }
        if self.in_tx.is_none() {
            debug_assert!(self.queue.is_empty());
            self.start(now, unit, out);
            return;
        }
        self.admit(now, unit);
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        if let Some(f) = &self.fifo {
            return self.poll_fifo(f);
        }
        if let Some(s) = &self.sched {
            return self.poll_sched(s);
        }
        self.in_tx.as_ref().map(|t| t.2)
    }

    /// The timer-less transmitter without a tap or a schedule: a unit's handling
    /// depends on the units before it and their arrival times only; a host's held units
    /// (the only reason it wakes) are its own, never units in transit.
    fn folds(&self) -> bool {
        self.fifo.is_some() && self.sched.is_none() && !self.tap
    }

    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
        if self.fifo.is_some() {
            return self.advance_fifo(now, out);
        }
        if self.sched.is_some() {
            return self.timeout_sched(now, out);
        }
        if self.in_tx.as_ref().is_none_or(|t| t.2 > now) {
            return;
        }
        let (unit, started, _) = self.in_tx.take().expect("checked above");
        self.c.busy_ns += (now - started).as_nanos();
        if self.loss.lose(&unit) {
            self.c.drops_loss += 1;
            if unit.class() == Class::Low {
                self.c.class.drops_loss_low += 1;
            }
        } else {
            out.push(Emit::At {
                at: now + self.delay,
                port: OUT,
                unit,
            });
        }
        if let Some(next) = self.next_unit(now) {
            self.start(now, next, out);
        }
    }

    fn metrics(&self, now: SimTime) -> LinkCounters {
        let mut c = self.c.clone();
        if let Some(f) = &self.fifo {
            f.unhappened(now, &mut c);
        }
        if let Some((_, started, _)) = &self.in_tx {
            c.busy_ns += now.saturating_sub(*started).as_nanos();
        }
        let q = self.queue.stats();
        c.drops_queue += q.dropped;
        c.class.drops_queue_low += q.dropped_low;
        c.class.drops_aqm = q.aqm_drops;
        c.class.marks_ecn = q.ce_marks;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::discipline::tests::F as Q;
    use crate::rng::RngStream;
    use crate::stats::Since;
    use crate::units::Limit;

    #[derive(Clone, Debug, PartialEq)]
    struct F(u32, u32); // (id, bytes)
    impl Frame for F {
        fn wire_len(&self) -> u32 {
            self.1
        }
    }

    fn link(limit: u64, loss: LossModel) -> LinkDirection<F> {
        let cfg = LinkDirConfig {
            rate: Rate(8_000_000), // 1 byte per us
            delay: SimDuration::from_millis(10),
            queue: QueueConfig::droptail(Limit::Packets(limit)),
            loss: loss.clone(),
            sched: None,
        };
        // the timer path (the timer-less one is compared against it in link_fifo.rs)
        LinkDirection::new(
            &cfg,
            LossState::new(loss, RngStream::new(1, "t")),
            RngStream::new(1, "q"),
        )
        .with_timer()
    }

    fn at(e: &Emit<F>) -> (SimTime, PortId, u32) {
        match e {
            Emit::At { at, port, unit } => (*at, *port, unit.0),
            Emit::Now { port, unit } => (SimTime::MAX, *port, unit.0),
        }
    }

    #[test]
    fn serialises_in_order_and_delays_each_unit() {
        let mut l = link(10, LossModel::None);
        let mut out = vec![];
        let t0 = SimTime(0);
        l.handle(t0, 0, F(1, 1000), &mut out);
        l.handle(t0, 0, F(2, 500), &mut out);
        assert!(out.is_empty());
        assert_eq!(l.poll_timeout(), Some(SimTime(1_000_000)));
        l.handle_timeout(SimTime(999_999), &mut out);
        assert!(out.is_empty(), "nothing before the transmission ends");
        l.handle_timeout(SimTime(1_000_000), &mut out);
        assert_eq!(at(&out[0]), (SimTime(11_000_000), OUT, 1));
        assert_eq!(l.poll_timeout(), Some(SimTime(1_500_000)));
        l.handle_timeout(SimTime(1_500_000), &mut out);
        assert_eq!(at(&out[1]), (SimTime(11_500_000), OUT, 2));
        assert_eq!(l.poll_timeout(), None);
        let m = l.metrics(SimTime(2_000_000));
        assert_eq!((m.packets, m.bytes, m.busy_ns), (2, 1500, 1_500_000));
        assert_eq!(m.max_queue, Peak(1));
    }

    #[test]
    fn full_queue_drops_and_loss_takes_units_at_the_end_of_transmission() {
        let mut l = link(1, LossModel::List { drop: vec![1] });
        let mut out = vec![];
        for i in 0..4 {
            l.handle(SimTime(0), 0, F(i, 100), &mut out);
        }
        // 0 in transmission, 1 queued, 2 and 3 dropped
        let m = l.metrics(SimTime(0));
        assert_eq!((m.drops_queue, m.packets), (2, 1));
        l.handle_timeout(SimTime(100_000), &mut out);
        l.handle_timeout(SimTime(200_000), &mut out);
        let ids: Vec<u32> = out.iter().map(|e| at(e).2).collect();
        assert_eq!(ids, [0], "unit 1 (the second transmitted) is lost");
        assert_eq!(l.metrics(SimTime(200_000)).drops_loss, 1);
    }

    #[test]
    fn tap_copies_at_transmission_start_and_busy_time_splits_at_a_snapshot() {
        let mut l = link(10, LossModel::None);
        l.enable_tap();
        let mut out = vec![];
        l.handle(SimTime(0), 0, F(7, 1000), &mut out);
        assert_eq!(at(&out[0]), (SimTime::MAX, TAP, 7));
        let base = l.metrics(SimTime(400_000));
        assert_eq!(base.busy_ns, 400_000);
        l.handle_timeout(SimTime(1_000_000), &mut out);
        let end = l.metrics(SimTime(3_000_000));
        assert_eq!(end.since(&base).busy_ns, 600_000);
        assert_eq!(end.since(&base).packets, 0);
    }

    /// A unit from address `[src; 4]`.
    #[derive(Clone, Debug, PartialEq)]
    struct H(u32, u8);
    impl Frame for H {
        fn wire_len(&self) -> u32 {
            100
        }
        fn tcp_meta(&self) -> Option<crate::element::TcpMeta> {
            Some(crate::element::TcpMeta {
                src: [self.1; 4],
                dst: [0; 4],
                sport: 0,
                dport: 0,
                seq: self.0,
                flags: 0,
                len: 60,
            })
        }
    }

    #[test]
    fn a_hosts_own_units_wait_for_room_in_order_and_forwarded_ones_are_dropped() {
        let cfg = LinkDirConfig {
            rate: Rate(8_000_000), // 100 us per unit
            delay: SimDuration::ZERO,
            queue: QueueConfig::droptail(Limit::Packets(2)),
            loss: LossModel::None,
            sched: None,
        };
        let mut l: LinkDirection<H> = LinkDirection::new(
            &cfg,
            LossState::new(LossModel::None, RngStream::new(1, "t")),
            RngStream::new(1, "q"),
        )
        .with_timer();
        l.hold_local([7; 4]);
        let mut out = vec![];
        // 0 in transmission, 1 and 2 queued, 3..6 local wait, 100 forwarded is dropped
        for i in 0..6 {
            l.handle(SimTime(0), 0, H(i, 7), &mut out);
        }
        l.handle(SimTime(0), 0, H(100, 9), &mut out);
        let m = l.metrics(SimTime(0));
        assert_eq!((m.drops_queue, m.held, m.max_queue), (1, 3, Peak(2)));
        // a local unit sent while others wait queues behind them
        l.handle_timeout(SimTime(100_000), &mut out); // 0 leaves, 3 moves in
        l.handle(SimTime(100_000), 0, H(6, 7), &mut out);
        let mut t = 100_000;
        while let Some(next) = l.poll_timeout() {
            t = next.0;
            l.handle_timeout(next, &mut out);
        }
        let ids: Vec<u32> = out.iter().map(|e| at(&e_h(e)).2).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(t, 700_000, "the link never idles while units wait");
        let m = l.metrics(SimTime(t));
        assert_eq!((m.packets, m.drops_queue, m.held), (7, 1, 4));
    }

    fn e_h(e: &Emit<H>) -> Emit<F> {
        match e {
            Emit::At { at, port, unit } => Emit::At {
                at: *at,
                port: *port,
                unit: F(unit.0, 100),
            },
            Emit::Now { port, unit } => Emit::Now {
                port: *port,
                unit: F(unit.0, 100),
            },
        }
    }

    #[test]
    fn class_counters_take_queue_drops_push_outs_and_losses_by_class() {
        use crate::net::queue::{Admission, Discipline};
        let cfg = LinkDirConfig {
            rate: Rate(8_000_000),
            delay: SimDuration::from_millis(10),
            queue: QueueConfig {
                discipline: Discipline::Priority(crate::net::queue::priority::PrioritySpec {}),
                admission: Admission {
                    limit: Limit::Packets(1),
                },
            },
            // the second and third transmissions are lost, whatever their class
            loss: LossModel::List { drop: vec![1, 2] },
            sched: None,
        };
        let mut l: LinkDirection<Q> = LinkDirection::new(
            &cfg,
            LossState::new(cfg.loss.clone(), RngStream::new(1, "t")),
            RngStream::new(1, "q"),
        );
        let mut out = vec![];
        let t = SimTime(0);
        l.handle(t, 0, Q::new(0, 100), &mut out); // in transmission
        l.handle(t, 0, Q::low(1, 100), &mut out); // queued
        l.handle(t, 0, Q::low(2, 100), &mut out); // refused
        l.handle(t, 0, Q::new(3, 100), &mut out); // pushes out 1
        let m = l.metrics(t);
        assert_eq!((m.drops_queue, m.class.drops_queue_low), (2, 2));
        l.handle_timeout(SimTime(100_000), &mut out); // 0 leaves, 3 starts (lost)
        l.handle(SimTime(100_000), 0, Q::low(4, 100), &mut out);
        l.handle_timeout(SimTime(200_000), &mut out); // 3 lost, 4 starts
        l.handle_timeout(SimTime(300_000), &mut out); // 4 lost: link errors hit both
        l.handle(SimTime(300_000), 0, Q::low(5, 100), &mut out);
        l.handle_timeout(SimTime(400_000), &mut out);
        let m = l.metrics(SimTime(400_000));
        assert_eq!((m.packets, m.class.packets_low), (4, 2));
        assert_eq!((m.drops_loss, m.class.drops_loss_low), (2, 1));
        let ids: Vec<u32> = out
            .iter()
            .filter_map(|e| match e {
                Emit::At { unit, .. } => Some(unit.id),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [0, 5]);
    }
}
