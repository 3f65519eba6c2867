//! The driver of a network of elements: it owns time, the wiring between elements and
//! their wake-ups; elements own everything else (see [`crate::element`]).
//!
//! The simulator runs it to the end of a scenario ([`crate::sim`]); a wall-clock driver
//! (the live emulator, the gateway daemon) calls [`Driver::step_until`] with the
//! current time, [`Driver::inject`]s the units it reads, and writes out the units that
//! leave through unwired ports ([`Driver::take_exits`]).
//!
//! Semantics, in the order a plausible bug would break them:
//! - a unit emitted with [`Emit::Now`] is handed on at once, depth first, before the
//!   emitting element's own next wake-up is considered; one emitted with [`Emit::At`]
//!   is delivered by an event at that time;
//! - each element has at most one pending wake-up that counts: a new one is scheduled
//!   only when the element asks for an earlier time than the pending one, and an event
//!   that no longer matches the pending time is skipped (counted, not run);
//! - events at the same time run in the order they were scheduled;
//! - units the driver sees first (uid unset) are stamped in that order ([`Stamp`]);
//! - a unit bound for an element that passes it straight through
//!   ([`Element::pass_through`]: a router) goes to what that element would emit it to,
//!   at the same time and in the same order, without the element being called: the
//!   same run, one dispatch fewer per hop. Where every element on the way decides only
//!   by the unit's key ([`Element::pass_keyed`], [`Stamp::pass_key`]: a router by the
//!   packet's addresses and ports), the answer is remembered for that output and key
//!   (see `Memo`);
//! - a *folded hop*: a timed unit that one line ([`Element::folds`]) emits toward
//!   another line that only it feeds ([`Driver::fold`]), through pass-through elements,
//!   is handed to that line when it is emitted, at its arrival time, instead of by an
//!   event at that time. The line sees the same units at the same times in the same
//!   order, so it does the same; what changes is one event fewer per hop and the tie
//!   rule: the line's own emissions are scheduled when the unit entered the hop before,
//!   so among events at one instant they come before the events scheduled in between.
//!   A folded line may so have taken units that arrive after an instant the caller
//!   reads counters at; [`Driver::metrics`] gives its counters as they stood before
//!   the first of them (see [`Driver::set_snapshots`]).

use super::EventQueue;
use crate::element::{ElemId, Element, Emit, PortId};
use crate::time::SimTime;
use std::collections::BTreeMap;

/// What the driver needs of a unit: a creation-order number, and a key for
/// remembering where elements pass it.
pub trait Stamp {
    /// Sets the number from `next` (and advances it) if the unit has none yet.
    fn stamp(&mut self, next: &mut u64);
    /// Everything an element that passes units by key ([`Element::pass_keyed`]) may
    /// decide on, as one value (a packet: its kind, addresses and ports); units of
    /// different kinds never share a key. None (the default): the driver asks the
    /// elements every time.
    fn pass_key(&self) -> Option<u128> {
        None
    }
}

enum Ev<U> {
    Wake(ElemId),
    Deliver(ElemId, PortId, U),
    /// A unit leaving through an unwired port at its time.
    Exit(ElemId, PortId, U),
    /// The reference for a folded hop ([`Driver::fold_by_events`]): a delivery whose
    /// line's timed unit takes the insertion number `.3`, reserved when the unit was
    /// emitted toward it. (Boxed: every event is as large as the largest kind, and
    /// this one only runs in the reference.)
    Folded(Box<(ElemId, PortId, U, u64)>),
}

/// No insertion number reserved.
const NO_SEQ: u64 = u64::MAX;
/// The reserved insertion number has been taken.
const TAKEN: u64 = u64::MAX - 1;

const UNWIRED: (ElemId, PortId) = (ElemId::MAX, PortId::MAX);

/// An output port: where it is wired, and the event-queue lane of its timed units.
#[derive(Clone, Copy)]
struct Port {
    to: (ElemId, PortId),
    /// u32::MAX: none yet.
    lane: u32,
}

const NO_FOLD: u64 = u64::MAX;

/// A remembered pass-through walk: a unit with key `key` emitted on output `at` (an
/// index into `ports`) leaves the last element that passes it, `from`, on `port`,
/// toward `to`. Valid while the elements it crossed keep their answers (the wiring is
/// fixed once a run starts; a mutable borrow of a passing element forgets them all).
/// (32 bytes: the key in two halves and the tuple apart, so that nothing is padded to
/// a 16-byte alignment.)
#[derive(Clone, Copy)]
struct Memo {
    key: [u64; 2],
    /// u32::MAX: empty.
    at: u32,
    from: ElemId,
    to: ElemId,
    to_port: PortId,
    port: PortId,
}

/// A key in a memo's two halves.
#[inline]
fn halves(k: u128) -> [u64; 2] {
    [k as u64, (k >> 64) as u64]
}

/// The slot of output `at`'s walk for `key` in a memo of `len` slots (a power of two;
/// any value when empty).
#[inline]
fn memo_slot(at: u32, key: u128, len: usize) -> usize {
    let h = (key as u64) ^ ((key >> 64) as u64) ^ ((at as u64) << 32 | at as u64);
    (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - len.trailing_zeros())) as usize
}

const NO_MEMO: Memo = Memo {
    key: [0; 2],
    at: u32::MAX,
    from: 0,
    to: UNWIRED.0,
    to_port: UNWIRED.1,
    port: 0,
};

/// An element's output port as one key.
#[inline]
fn fold_key(from: ElemId, port: PortId) -> u64 {
    (from as u64) << 16 | port as u64
}

const NO_PORT: Port = Port {
    to: UNWIRED,
    lane: u32::MAX,
};

/// What the driver keeps of one element. Kept in one place, not in a vector each: a
/// unit's hop reads most of them for the element it leaves and the one it reaches, and
/// with a thousand flows each vector's read was a cache miss of its own.
#[derive(Clone, Copy)]
struct Meta {
    /// The wake-up time pending in the queue, if any.
    pending: Option<SimTime>,
    /// The output (see [`fold_key`]) whose timed units are folded into the element
    /// ([`Driver::fold`]); NO_FOLD: none.
    fold_src: u64,
    /// Where its output ports are in `ports`: (first, count).
    first: (u32, u32),
    /// [`Element::wakes`], asked once when it was added: the others are never polled.
    wakes: bool,
    /// [`Element::passes`], asked once when it was added.
    passes: bool,
    /// [`Element::pass_keyed`], asked once when it was added.
    keyed: bool,
}

pub struct Driver<U, E: Element<U>> {
    elems: Vec<E>,
    /// Every element's output ports, in one flat vector (compact in cache however many
    /// elements): element `i`'s port `k` is `ports[first[i].0 + k]`, for `k < first[i].1`.
    ports: Vec<Port>,
    /// What the driver keeps of each element, side by side (one cache line or two
    /// an element, however many elements; see [`Meta`]).
    meta: Vec<Meta>,
    /// Remembered pass-through walks, direct-mapped by (output, key): empty until the
    /// first walk; emptied when a passing element is borrowed mutably or the wiring
    /// changes.
    memo: Vec<Memo>,
    /// Each output's first remembered walk, by output index (`ports`, the first 64 Ki):
    /// a host's link carries one key, so its walks never reach `memo` and never evict
    /// another's there. Emptied with `memo`.
    first: Vec<Memo>,
    /// Walks are remembered (not in the reference, [`Driver::fold_by_events`]).
    memo_on: bool,
    /// The instants the caller reads counters at ([`Driver::set_snapshots`]), in order.
    snaps: Vec<SimTime>,
    /// For each snapshot instant, the counters at it of each folded line that has
    /// taken a unit arriving from that instant on, kept just before the first such
    /// unit (empty until the first). By element: folded lines are a few of the
    /// elements (a vector for them all was a large allocation, and a fresh page, each).
    early: Vec<BTreeMap<ElemId, E::Metrics>>,
    /// For each element, the first snapshot instant it has not yet taken a unit
    /// arriving from (SimTime::MAX: none left).
    fold_next: Vec<SimTime>,
    /// While a folded hop's line runs: the lane of the unit it was handed, which its
    /// timed units join (u32::MAX: none).
    fold_lane: u32,
    /// Folded hops run as events, in the folded tie order (the reference).
    fold_events: bool,
    /// While a [`Ev::Folded`] delivery runs: the insertion number its line's timed unit
    /// takes (NO_SEQ: none; TAKEN: taken).
    reserved: u64,
    q: EventQueue<Ev<U>>,
    next_uid: u64,
    /// Out-vectors for nested dispatch, reused.
    pool: Vec<Vec<Emit<U>>>,
    exits: Vec<(SimTime, ElemId, PortId, U)>,
}

impl<U: Stamp, E: Element<U>> Default for Driver<U, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<U: Stamp, E: Element<U>> Driver<U, E> {
    pub fn new() -> Self {
        Driver {
            elems: Vec::new(),
            ports: Vec::new(),
            meta: Vec::new(),
            memo: Vec::new(),
            first: Vec::new(),
            memo_on: true,
            snaps: Vec::new(),
            early: Vec::new(),
            fold_next: Vec::new(),
            fold_lane: u32::MAX,
            fold_events: false,
            reserved: NO_SEQ,
            q: EventQueue::new(),
            next_uid: 0,
            pool: Vec::new(),
            exits: Vec::new(),
        }
    }

    /// Adds an element; its id.
    pub fn add(&mut self, e: E) -> ElemId {
        self.meta.push(Meta {
            pending: None,
            fold_src: NO_FOLD,
            first: (0, 0),
            wakes: e.wakes(),
            passes: e.passes(),
            keyed: e.pass_keyed(),
        });
        self.forget_walks();
        self.fold_next.push(SimTime::MAX);
        self.elems.push(e);
        (self.elems.len() - 1) as ElemId
    }

    /// Wires output port `port` of `from` to input port `to_port` of `to` (replacing
    /// any earlier wire of that output). Wire before running: a timed unit already
    /// emitted toward an element that passes it through was resolved to the wiring of
    /// that moment.
    pub fn wire(&mut self, from: ElemId, port: PortId, to: ElemId, to_port: PortId) {
        let i = self.port_index(from, port);
        self.ports[i].to = (to, to_port);
        self.forget_walks();
    }

    /// Folds the hop from output `port` of line `from` into line `into`: the timed
    /// units `from` emits there that reach `into` (through elements that pass them
    /// straight through) are handed to `into` as they are emitted, at their arrival
    /// time (see [`Driver::set_snapshots`] for reading its counters). The caller vouches that
    /// nothing else ever hands `into` a unit: no other element's output reaches it, and
    /// the elements in between pass every unit from `from` that they send toward it.
    /// Both must be lines ([`Element::folds`]), so that `into` sees its units in time
    /// order and is never woken.
    pub fn fold(&mut self, from: ElemId, port: PortId, into: ElemId) {
        assert!(
            self.elems[from as usize].folds() && self.elems[into as usize].folds(),
            "a fold joins two lines"
        );
        self.meta[into as usize].fold_src = fold_key(from, port);
    }

    /// Runs folded hops as events, each at its unit's arrival time, with the tie order
    /// of folding: the timed unit the line emits takes the insertion number it would
    /// have taken when folded. The reference a folded run is checked against (the same
    /// output, more events). It also checks what folding takes on trust, and panics
    /// otherwise: a folded line is handed units only over its folded hop, and emits at
    /// most one unit per unit in. It also walks every pass-through, never from memory.
    pub fn fold_by_events(&mut self) {
        self.fold_events = true;
        self.memo_on = false;
    }

    /// The instants `at` (in order) at which the caller will read counters
    /// ([`Driver::metrics`]) after running every event before them and none at or after
    /// them (a measured interval's edges). A folded line takes units before their
    /// time, so at such a read it may already hold some arriving at or after it: its
    /// counters are then kept just before it takes the first of them. Set before
    /// running.
    pub fn set_snapshots(&mut self, at: &[SimTime]) {
        assert!(
            at.windows(2).all(|w| w[0] < w[1]),
            "snapshot instants in order"
        );
        self.snaps = at.to_vec();
        self.early = Vec::new();
        let first = self.snaps.first().copied().unwrap_or(SimTime::MAX);
        self.fold_next.fill(first);
    }

    /// Element `id`'s counters at `now`. At a snapshot instant ([`Driver::set_snapshots`])
    /// those of a folded line kept as it took its first unit arriving from `now` on, if
    /// it has; otherwise (and at any other instant) its own.
    pub fn metrics(&self, id: ElemId, now: SimTime) -> E::Metrics
    where
        E::Metrics: Clone,
    {
        let kept = self
            .snaps
            .iter()
            .position(|&w| w == now)
            .and_then(|k| self.early.get(k)?.get(&id));
        match kept {
            Some(m) => m.clone(),
            None => self.elems[id as usize].metrics(now),
        }
    }

    /// Keeps folded line `id`'s counters at each snapshot instant up to `at` that it
    /// has not yet kept, before it takes a unit arriving at `at`.
    #[cold]
    #[inline(never)]
    fn keep_early(&mut self, id: ElemId, at: SimTime) {
        if self.early.is_empty() {
            self.early = self.snaps.iter().map(|_| BTreeMap::new()).collect();
        }
        let i = id as usize;
        for (k, &w) in self.snaps.iter().enumerate() {
            if w > at {
                self.fold_next[i] = w;
                return;
            }
            let elems = &self.elems;
            self.early[k]
                .entry(id)
                .or_insert_with(|| elems[i].metrics(w));
        }
        self.fold_next[i] = SimTime::MAX;
    }

    /// The index in `ports` of `from`'s output `port`, making room for it: an element
    /// whose ports outgrow their place moves them to the end (building only: elements
    /// are wired before they run).
    fn port_index(&mut self, from: ElemId, port: PortId) -> usize {
        let (base, len) = self.meta[from as usize].first;
        if (port as u32) < len {
            return (base + port as u32) as usize;
        }
        let new_len = (port as u32 + 1).max(2 * len).max(2);
        self.forget_walks();
        let new_base = self.ports.len() as u32;
        let old: Vec<Port> = self.ports[base as usize..(base + len) as usize].to_vec();
        self.ports.extend(old);
        self.ports.resize((new_base + new_len) as usize, NO_PORT);
        self.meta[from as usize].first = (new_base, new_len);
        (new_base + port as u32) as usize
    }

    /// What output `port` of `from` is wired to.
    pub fn wired(&self, from: ElemId, port: PortId) -> Option<(ElemId, PortId)> {
        let (base, len) = self.meta[from as usize].first;
        if port as u32 >= len {
            return None;
        }
        Some(self.ports[(base + port as u32) as usize].to).filter(|&w| w != UNWIRED)
    }

    pub fn elem(&self, id: ElemId) -> &E {
        &self.elems[id as usize]
    }

    /// Element `id`, to change; if it passes units through, the remembered walks are
    /// forgotten (its answers may change).
    pub fn elem_mut(&mut self, id: ElemId) -> &mut E {
        if self.meta[id as usize].passes {
            self.forget_walks();
        }
        &mut self.elems[id as usize]
    }

    pub fn elems(&self) -> &[E] {
        &self.elems
    }

    /// Forgets every remembered walk (the wiring or a passing element changed).
    fn forget_walks(&mut self) {
        self.memo = Vec::new();
        self.first = Vec::new();
    }

    /// Schedules every element's first wake-up, in id order. Call once, after building.
    pub fn start(&mut self) {
        let now = self.q.now();
        for id in 0..self.elems.len() as ElemId {
            if self.meta[id as usize].wakes {
                self.sync_wake(id, now);
            }
        }
    }

    /// The time of the next event, if any.
    pub fn next_deadline(&self) -> Option<SimTime> {
        self.q.peek_time()
    }

    /// The time of the last event run.
    pub fn now(&self) -> SimTime {
        self.q.now()
    }

    /// Events popped so far (including skipped stale wake-ups).
    pub fn events(&self) -> u64 {
        self.q.executed()
    }

    /// Runs the next event if it is due no later than `t`; false if there is none.
    #[inline]
    pub fn step_one(&mut self, t: SimTime) -> bool {
        let Some((now, ev)) = self.q.pop_until(t) else {
            return false;
        };
        match ev {
            Ev::Wake(id) => {
                let i = id as usize;
                if self.meta[i].pending != Some(now) {
                    return true; // superseded by an earlier wake-up
                }
                self.meta[i].pending = None;
                let mut out = self.pool.pop().unwrap_or_default();
                self.elems[i].handle_timeout(now, &mut out);
                self.route(now, id, &mut out);
                self.pool.push(out);
                self.sync_wake(id, now);
            }
            Ev::Deliver(id, port, unit) => self.dispatch(now, id, port, unit),
            Ev::Exit(id, port, unit) => self.exits.push((now, id, port, unit)),
            Ev::Folded(f) => {
                let (id, port, unit, seq) = *f;
                self.reserved = seq;
                self.dispatch(now, id, port, unit);
                self.reserved = NO_SEQ;
            }
        }
        true
    }

    /// Runs every event due no later than `t`.
    pub fn step_until(&mut self, t: SimTime) {
        while self.step_one(t) {}
    }

    /// Hands `unit` to input `port` of element `id` now (the time of the last event).
    pub fn inject(&mut self, id: ElemId, port: PortId, mut unit: U) {
        let now = self.q.now();
        unit.stamp(&mut self.next_uid);
        self.dispatch(now, id, port, unit);
    }

    /// Advances the clock to `t` (no earlier than now) without running anything; for a
    /// wall-clock driver before it injects a unit read at `t`.
    pub fn advance_to(&mut self, t: SimTime) {
        self.step_until(t);
        self.q.advance_to(t);
    }

    /// Units that left through unwired ports: (time, element, port, unit).
    pub fn take_exits(&mut self) -> Vec<(SimTime, ElemId, PortId, U)> {
        std::mem::take(&mut self.exits)
    }

    /// Moves the units that left through unwired ports to the end of `into`, in the
    /// order they left; no allocation once both vectors have grown (a wall-clock
    /// driver's hot path).
    pub fn drain_exits_into(&mut self, into: &mut Vec<(SimTime, ElemId, PortId, U)>) {
        into.append(&mut self.exits);
    }

    fn dispatch(&mut self, now: SimTime, id: ElemId, port: PortId, unit: U) {
        if self.fold_events {
            // the reference checks the caller's word: a folded line gets its units
            // only over the folded hop (an Ev::Folded delivery)
            assert!(
                self.meta[id as usize].fold_src == NO_FOLD || self.reserved != NO_SEQ,
                "element {id} is folded but was handed a unit another way"
            );
        }
        let mut out = self.pool.pop().unwrap_or_default();
        self.elems[id as usize].handle(now, port, unit, &mut out);
        self.route(now, id, &mut out);
        self.pool.push(out);
        if self.meta[id as usize].wakes {
            self.sync_wake(id, now);
        }
    }

    #[inline(always)]
    fn route(&mut self, now: SimTime, from: ElemId, out: &mut Vec<Emit<U>>) {
        let mut ports = self.meta[from as usize].first;
        // most calls emit one unit: no drain to set up and tear down for it
        if out.len() == 1 {
            let e = out.pop().expect("one unit");
            return self.route_one(now, from, e, &mut ports);
        }
        for e in out.drain(..) {
            self.route_one(now, from, e, &mut ports);
        }
    }

    /// Hands on one unit `from` emitted; `ports`: where `from`'s output ports are in
    /// `self.ports` (first, count), refreshed when a new lane moves them.
    #[inline]
    fn route_one(&mut self, now: SimTime, from: ElemId, e: Emit<U>, ports: &mut (u32, u32)) {
        let (base, len) = *ports;
        match e {
            Emit::Now { port, mut unit } => {
                unit.stamp(&mut self.next_uid);
                let to = if (port as u32) < len {
                    self.ports[(base + port as u32) as usize].to
                } else {
                    UNWIRED
                };
                let (from, port, to) = match to {
                    (id, _) if id != ElemId::MAX && self.meta[id as usize].passes => {
                        self.through(base + port as u32, from, port, to, &unit)
                    }
                    _ => (from, port, to),
                };
                if to == UNWIRED {
                    self.exits.push((now, from, port, unit));
                } else {
                    self.dispatch(now, to.0, to.1, unit);
                }
            }
            Emit::At { at, port, mut unit } => {
                debug_assert!(at >= now, "an element emitted into the past");
                unit.stamp(&mut self.next_uid);
                // Timed units over one output mostly come in time order (a link's
                // delay line): they share a lane, wired (a delivery) or not (an
                // exit: a wall-clock driver's link directions end in unwired ports).
                let p = if (port as u32) < len {
                    self.ports[(base + port as u32) as usize]
                } else {
                    NO_PORT
                };
                let lane = if self.fold_lane != u32::MAX {
                    // A folded line's units join the lane of the unit it was handed:
                    // they follow it in time as it followed the others (a lane is only
                    // where an event waits: any lane keeps the order of one heap).
                    self.fold_lane
                } else if p.lane != u32::MAX {
                    p.lane
                } else {
                    let lane = self.new_lane(from, port);
                    // (an unwired port beyond the element's ports moved them)
                    *ports = self.meta[from as usize].first;
                    lane
                };
                // (the lane stays that of `from`'s port: its units still come in order)
                let src = fold_key(from, port);
                let (from, port, to) = match p.to {
                    (id, _) if id != ElemId::MAX && self.meta[id as usize].passes => {
                        self.through(base + port as u32, from, port, p.to, &unit)
                    }
                    _ => (from, port, p.to),
                };
                // a folded hop: the line it feeds takes the unit now, at its time
                if let Some(f) = self.meta.get(to.0 as usize).map(|m| m.fold_src) {
                    if f == src && self.fold_events {
                        // the reference: an event, its line's unit numbered as if now
                        let seq = match self.reserved {
                            NO_SEQ => self.q.reserve_seq(),
                            // (a hop folded after a folded hop)
                            _ => std::mem::replace(&mut self.reserved, TAKEN),
                        };
                        assert!(seq != TAKEN, "a folded line emitted two units for one");
                        let ev = Ev::Folded(Box::new((to.0, to.1, unit, seq)));
                        return self.q.schedule_in(lane, at.max(now), ev);
                    }
                    if f == src {
                        if at >= self.fold_next[to.0 as usize] {
                            self.keep_early(to.0, at);
                        }
                        let outer = std::mem::replace(&mut self.fold_lane, lane);
                        self.dispatch(at.max(now), to.0, to.1, unit);
                        self.fold_lane = outer;
                        return;
                    }
                }
                let ev = if to == UNWIRED {
                    Ev::Exit(from, port, unit)
                } else {
                    Ev::Deliver(to.0, to.1, unit)
                };
                if self.reserved != NO_SEQ {
                    // the reference's folded line: its unit, numbered when folded
                    let seq = std::mem::replace(&mut self.reserved, TAKEN);
                    assert!(seq != TAKEN, "a folded line emitted two units for one");
                    return self.q.schedule_reserved(at.max(now), seq, ev);
                }
                self.q.schedule_in(lane, at.max(now), ev);
            }
        }
    }

    /// Where a unit that `from` emits on `port` (output `at` in `ports`), wired to `to`,
    /// goes once the elements that pass it straight through are skipped: (the last
    /// element it leaves, its port, where that is wired). A pass-through element's
    /// answer does not depend on time, so a timed unit can be resolved when it is
    /// emitted; when every element asked decides by the unit's key alone, the answer
    /// is remembered for (`at`, key).
    #[inline]
    fn through(
        &mut self,
        at: u32,
        from: ElemId,
        port: PortId,
        to: (ElemId, PortId),
        unit: &U,
    ) -> (ElemId, PortId, (ElemId, PortId)) {
        let key = if self.memo_on { unit.pass_key() } else { None };
        if let Some(k) = key {
            let h = halves(k);
            if let Some(e) = self.first.get(at as usize) {
                if e.at == at && e.key == h {
                    return (e.from, e.port, (e.to, e.to_port));
                }
            }
            if let Some(e) = self.memo.get(memo_slot(at, k, self.memo.len())) {
                if e.at == at && e.key == h {
                    return (e.from, e.port, (e.to, e.to_port));
                }
            }
        }
        self.walk(at, from, port, to, unit, key)
    }

    /// [`Driver::through`] by asking the elements; remembers the answer under `key` if
    /// every element asked decides by it alone.
    #[inline(never)]
    fn walk(
        &mut self,
        at: u32,
        mut from: ElemId,
        mut port: PortId,
        mut to: (ElemId, PortId),
        unit: &U,
        key: Option<u128>,
    ) -> (ElemId, PortId, (ElemId, PortId)) {
        let mut keyed = true;
        // (an unwired port's element is ElemId::MAX: no element passes it)
        while let Some(m) = self.meta.get(to.0 as usize).filter(|m| m.passes) {
            keyed &= m.keyed;
            let Some(out) = self.elems[to.0 as usize].pass_through(to.1, unit) else {
                break;
            };
            from = to.0;
            port = out;
            let (base, len) = self.meta[from as usize].first;
            to = match self.ports.get((base + out as u32) as usize) {
                Some(p) if (out as u32) < len => p.to,
                _ => UNWIRED,
            };
        }
        if let (Some(key), true) = (key, keyed) {
            let walk = Memo {
                key: halves(key),
                at,
                from,
                to: to.0,
                to_port: to.1,
                port,
            };
            if self.first.is_empty() {
                // (at most 64 Ki outputs, 2 MiB: beyond, walks go to the shared table)
                self.first = vec![NO_MEMO; self.ports.len().min(1 << 16)];
            }
            // an output's first key in its own slot, later ones in the shared table
            if let Some(f) = self.first.get_mut(at as usize).filter(|f| f.at == u32::MAX) {
                *f = walk;
                return (from, port, to);
            }
            if self.memo.is_empty() {
                // about two slots per output, at least 1 Ki, at most 16 Ki (512 KiB):
                // four had about 0.2 % fewer instructions on dumbbell100, but 1000
                // flows would have had 2 MiB of it
                let n = (self.ports.len() * 2).next_power_of_two();
                self.memo = vec![NO_MEMO; n.clamp(1 << 10, 1 << 14)];
            }
            let m = memo_slot(at, key, self.memo.len());
            self.memo[m] = walk;
        }
        (from, port, to)
    }

    /// Gives output `port` of `from` its lane (its first timed unit).
    #[cold]
    fn new_lane(&mut self, from: ElemId, port: PortId) -> u32 {
        let i = self.port_index(from, port);
        self.ports[i].lane = self.q.add_lane();
        self.ports[i].lane
    }

    #[inline(always)]
    fn sync_wake(&mut self, id: ElemId, now: SimTime) {
        let i = id as usize;
        let Some(t) = self.elems[i].poll_timeout() else {
            return;
        };
        let t = t.max(now);
        if self.meta[i].pending.is_none_or(|p| t < p) {
            self.meta[i].pending = Some(t);
            self.q.schedule(t, Ev::Wake(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct U(u64, u64); // (payload, uid)
    impl Stamp for U {
        fn stamp(&mut self, next: &mut u64) {
            if self.1 == u64::MAX {
                self.1 = *next;
                *next += 1;
            }
        }
        fn pass_key(&self) -> Option<u128> {
            Some(self.0 as u128)
        }
    }

    /// A test element: on a unit, emits it on port 0 now and a copy on port 1 after
    /// `delay`; wakes at the times in `wakes`, logging each call.
    struct T {
        name: u64,
        delay: u64,
        wakes: Vec<u64>,
        log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    }
    impl Element<U> for T {
        type Metrics = ();
        fn metrics(&self, _: SimTime) {}
        fn handle(&mut self, now: SimTime, port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
            self.log.borrow_mut().push(format!(
                "{}:handle@{}:p{port}:u{}#{}",
                self.name, now.0, unit.0, unit.1
            ));
            if self.delay > 0 {
                out.push(Emit::At {
                    at: SimTime(now.0 + self.delay),
                    port: 1,
                    unit: U(unit.0 + 100, u64::MAX),
                });
            }
            out.push(Emit::Now { port: 0, unit });
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            self.wakes.first().map(|&t| SimTime(t))
        }
        fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
            self.log
                .borrow_mut()
                .push(format!("{}:wake@{}", self.name, now.0));
            self.wakes.remove(0);
            out.push(Emit::Now {
                port: 0,
                unit: U(now.0, u64::MAX),
            });
        }
    }

    #[test]
    fn now_is_depth_first_at_is_an_event_and_unwired_ports_exit() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
        let mut d: Driver<U, T> = Driver::new();
        let mk = |name, delay, wakes: Vec<u64>| T {
            name,
            delay,
            wakes,
            log: log.clone(),
        };
        let a = d.add(mk(0, 5, vec![10]));
        let b = d.add(mk(1, 0, vec![]));
        d.wire(a, 0, b, 3);
        d.wire(a, 1, b, 4);
        d.start();
        assert_eq!(d.next_deadline(), Some(SimTime(10)));
        d.step_until(SimTime(9));
        assert!(log.borrow().is_empty());
        d.step_until(SimTime(100));
        assert_eq!(
            *log.borrow(),
            [
                "0:wake@10",
                "1:handle@10:p3:u10#0", // stamped first, delivered at once
            ]
        );
        let ex = d.take_exits();
        assert_eq!(ex.len(), 1, "b's port 0 is unwired");
        assert_eq!((ex[0].0, ex[0].1, ex[0].2), (SimTime(10), b, 0));
        log.borrow_mut().clear();
        d.advance_to(SimTime(100));
        assert_eq!(d.now(), SimTime(100));
        d.inject(a, 0, U(7, u64::MAX));
        d.step_until(SimTime(1000));
        assert_eq!(
            *log.borrow(),
            [
                "0:handle@100:p0:u7#1",
                "1:handle@100:p3:u7#1",
                "1:handle@105:p4:u107#2", // the copy, after the delay
            ]
        );
    }

    /// Emits each unit it gets on port 0 after `unit.0` ns (a delay line per unit).
    struct D;
    impl Element<U> for D {
        type Metrics = ();
        fn metrics(&self, _: SimTime) {}
        fn handle(&mut self, now: SimTime, _: PortId, u: U, out: &mut Vec<Emit<U>>) {
            out.push(Emit::At {
                at: SimTime(now.0 + u.0),
                port: 0,
                unit: u,
            });
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            None
        }
        fn handle_timeout(&mut self, _: SimTime, _: &mut Vec<Emit<U>>) {}
    }

    #[test]
    fn timed_exits_leave_in_time_order_and_drain_in_place() {
        let mut d: Driver<U, D> = Driver::new();
        let a = d.add(D);
        d.start();
        // Unwired port 0: every unit exits at now + its delay; the third one overtakes
        // the second (out of its lane's order), as it would in one heap.
        for (t, delay) in [(0, 50), (10, 60), (20, 5), (30, 40)] {
            d.advance_to(SimTime(t));
            d.inject(a, 0, U(delay, u64::MAX));
        }
        // advancing to 30 already let the third one out (at 25)
        assert_eq!(d.next_deadline(), Some(SimTime(50)));
        let mut got = Vec::with_capacity(8);
        d.step_until(SimTime(60));
        d.drain_exits_into(&mut got);
        d.step_until(SimTime(100));
        d.drain_exits_into(&mut got);
        let seen: Vec<(u64, u64)> = got.iter().map(|e| (e.0 .0, e.3 .1)).collect();
        assert_eq!(seen, [(25, 2), (50, 0), (70, 1), (70, 3)]);
        assert!(d.take_exits().is_empty(), "drained");
        assert_eq!(got.capacity(), 8, "appended in place");
    }

    struct W(Vec<u64>, std::rc::Rc<std::cell::Cell<u32>>);
    impl Element<U> for W {
        type Metrics = ();
        fn metrics(&self, _: SimTime) {}
        fn handle(&mut self, now: SimTime, _: PortId, u: U, _: &mut Vec<Emit<U>>) {
            self.0.push(now.0 + u.0); // each unit asks for a wake-up
            self.0.sort();
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            self.0.first().map(|&t| SimTime(t))
        }
        fn handle_timeout(&mut self, now: SimTime, _: &mut Vec<Emit<U>>) {
            self.1.set(self.1.get() + 1);
            self.0.retain(|&t| t > now.0);
        }
    }

    #[test]
    fn one_pending_wake_up_per_element() {
        let runs = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut d: Driver<U, W> = Driver::new();
        let w = d.add(W(vec![], runs.clone()));
        d.start();
        d.inject(w, 0, U(50, 0)); // wake at 50
        d.inject(w, 0, U(80, 0)); // later: no new event
        d.inject(w, 0, U(20, 0)); // earlier: a new event; the one at 50 stays queued
        d.step_until(SimTime(1000));
        assert_eq!(runs.get(), 3, "20, 50, 80 each run once");
        // events: wake@20; wake@50 from the first inject (current again after 20 ran);
        // wake@50 scheduled after 20 ran (stale by then: skipped, but counted); wake@80
        assert_eq!(d.events(), 4);
    }

    /// Counts its polls; `wakes` as given.
    struct Q(bool, std::rc::Rc<std::cell::Cell<u32>>);
    impl Element<U> for Q {
        type Metrics = ();
        fn metrics(&self, _: SimTime) {}
        fn handle(&mut self, _: SimTime, _: PortId, u: U, out: &mut Vec<Emit<U>>) {
            out.push(Emit::Now { port: 0, unit: u });
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            self.1.set(self.1.get() + 1);
            None
        }
        fn wakes(&self) -> bool {
            self.0
        }
        fn handle_timeout(&mut self, _: SimTime, _: &mut Vec<Emit<U>>) {}
    }

    /// kind 0: a delay line (each unit out on port `unit.0 % 2` after `unit.0 % 7` ns);
    /// kind 1: a router (each unit out on port `(unit.0 / salt) % 3`, straight through
    /// when `pass` and `unit.0 % 5 != 0`); kind 2: a sink; kind 3: a relay (each unit
    /// out at once on port 0). All log what they are handed. A router decides by the
    /// unit's key (`unit.0`) and says so when `keyed`; it counts the times it is asked.
    struct X {
        kind: u8,
        salt: u64,
        pass: bool,
        keyed: bool,
        asked: std::rc::Rc<std::cell::Cell<u64>>,
        log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    }
    impl Element<U> for X {
        type Metrics = ();
        fn metrics(&self, _: SimTime) {}
        fn handle(&mut self, now: SimTime, port: PortId, u: U, out: &mut Vec<Emit<U>>) {
            let line = format!("{}@{}:p{port}:u{}#{}", self.kind, now.0, u.0, u.1);
            self.log.borrow_mut().push(line);
            match self.kind {
                0 => out.push(Emit::At {
                    at: SimTime(now.0 + u.0 % 7),
                    port: (u.0 % 2) as PortId,
                    unit: u,
                }),
                1 => out.push(Emit::Now {
                    port: ((u.0 / self.salt) % 3) as PortId,
                    unit: u,
                }),
                3 => out.push(Emit::Now { port: 0, unit: u }),
                _ => {}
            }
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            None
        }
        fn passes(&self) -> bool {
            self.kind == 1 && self.pass
        }
        fn pass_through(&self, _: PortId, u: &U) -> Option<PortId> {
            self.asked.set(self.asked.get() + 1);
            (u.0 % 5 != 0).then_some(((u.0 / self.salt) % 3) as PortId)
        }
        fn pass_keyed(&self) -> bool {
            self.keyed
        }
        fn handle_timeout(&mut self, _: SimTime, _: &mut Vec<Emit<U>>) {}
    }

    #[test]
    fn passing_straight_through_changes_nothing_but_the_calls() {
        // Timed units: source -> delay line l1 (port 0 -> router r1, port 1 -> router
        // r3); r1: port 0 -> r2 (a router straight after a router), port 1 -> delay
        // line l2, port 2 unwired (an exit); r2: port 0 -> sink, 1 -> l2, 2 unwired; l2
        // (both ports) -> r3 -> sink / unwired. Immediate units: a relay -> r1. Run with
        // and without pass-through: everything but the routers' own calls is the same.
        // With `keyed`, the walks are remembered; with `change`, r1 changes its routes
        // halfway (through `elem_mut`, which forgets them). `reference`: the driver's
        // reference run, which never remembers.
        let run = |pass: bool, keyed: bool, reference: bool, change: bool| {
            let log = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
            let asked = std::rc::Rc::new(std::cell::Cell::new(0));
            let mut d: Driver<U, X> = Driver::new();
            if reference {
                d.fold_by_events();
            }
            let mk = |kind, salt| X {
                kind,
                salt,
                pass,
                keyed,
                asked: asked.clone(),
                log: log.clone(),
            };
            let (l1, r1, r2, l2, r3, sink, relay) = (
                d.add(mk(0, 1)),
                d.add(mk(1, 1)),
                d.add(mk(1, 3)),
                d.add(mk(0, 1)),
                d.add(mk(1, 9)),
                d.add(mk(2, 1)),
                d.add(mk(3, 1)),
            );
            d.wire(l1, 0, r1, 5);
            d.wire(l1, 1, r3, 6);
            d.wire(r1, 0, r2, 1);
            d.wire(r1, 1, l2, 0);
            d.wire(r2, 0, sink, 9);
            d.wire(r2, 1, l2, 1);
            d.wire(l2, 0, r3, 2);
            d.wire(l2, 1, r3, 3);
            d.wire(r3, 0, sink, 8);
            d.wire(r3, 1, sink, 7);
            d.wire(relay, 0, r1, 4);
            d.start();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut exits = vec![];
            for t in 0..600u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // three units an instant; a unit handed to an element directly is
                // handled by it (port 7 marks those)
                d.advance_to(SimTime(t / 3));
                if change && t == 300 {
                    d.elem_mut(r1).salt = 2;
                }
                let (to, port) = match x % 5 {
                    0 => (r1, 7),
                    1 => (relay, 0),
                    _ => (l1, 5),
                };
                d.inject(to, port, U(x % 60, u64::MAX));
                d.drain_exits_into(&mut exits);
            }
            d.step_until(SimTime(10_000));
            d.drain_exits_into(&mut exits);
            let events = d.events();
            let log = log.borrow().clone();
            (log, exits, events, asked.get())
        };
        let (with, exits_with, ev_with, asked) = run(true, false, false, false);
        let (without, exits_without, ev_without, _) = run(false, false, false, false);
        // remembered: the same run, the routers asked a fraction as often (60 keys, a
        // few outputs each)
        let (keyed, exits_keyed, ev_keyed, asked_keyed) = run(true, true, false, false);
        assert_eq!(
            (&keyed, &exits_keyed, ev_keyed),
            (&with, &exits_with, ev_with)
        );
        assert!(
            asked > 600 && asked_keyed < asked / 3,
            "{asked_keyed} of {asked}"
        );
        let (reference, exits_reference, _, asked_reference) = run(true, true, true, false);
        assert_eq!((&reference, &exits_reference), (&with, &exits_with));
        assert_eq!(asked_reference, asked, "the reference never remembers");
        // r1's routes changed halfway: the units it passes after take the new ones,
        // remembered or not
        let (changed, exits_changed, ..) = run(true, false, false, true);
        let (changed_keyed, exits_changed_keyed, ..) = run(true, true, false, true);
        assert_ne!(exits_changed, exits_with);
        assert_eq!(
            (changed_keyed, exits_changed_keyed),
            (changed, exits_changed)
        );
        let not_router = |l: &Vec<String>| -> Vec<String> {
            l.iter().filter(|x| !x.starts_with('1')).cloned().collect()
        };
        assert_eq!(not_router(&with), not_router(&without));
        assert_eq!(exits_with, exits_without);
        assert_eq!(ev_with, ev_without, "the same events, delivered elsewhere");
        // every path was taken: exits from each router, the sink from r2 and r3, the
        // relay's immediate units through r1
        let from = |e: ElemId| exits_without.iter().filter(|x| x.1 == e).count();
        assert!(
            [1, 2, 4].iter().all(|&r| from(r) > 10),
            "exits by r1, r2, r3"
        );
        for p in [":p9:", ":p8:", ":p7:"] {
            assert!(
                without.iter().any(|l| l.starts_with('2') && l.contains(p)),
                "{p}"
            );
        }
        assert!(without
            .iter()
            .any(|l| l.starts_with("1@") && l.contains(":p4:")));
        // the routers were called only for the units they do not pass
        let routed = without.iter().filter(|x| x.starts_with('1')).count();
        let handled: Vec<&String> = with
            .iter()
            .filter(|x| x.starts_with('1') && !x.contains(":p7:"))
            .collect();
        assert!(routed > 600 && !handled.is_empty() && handled.len() < routed / 3);
        for h in handled {
            let u: u64 = h
                .split(":u")
                .nth(1)
                .unwrap()
                .split('#')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(u % 5, 0, "{h}");
        }
    }

    #[test]
    fn two_keys_in_one_memo_slot_each_keep_their_route() {
        // a relay -> a keyed router whose outputs are unwired (exits): the output's
        // first key keeps its own slot; two more keys whose walks share a slot of the
        // table take different routes, alternately
        let log = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
        let asked = std::rc::Rc::new(std::cell::Cell::new(0));
        let mk = |kind| X {
            kind,
            salt: 1,
            pass: true,
            keyed: true,
            asked: asked.clone(),
            log: log.clone(),
        };
        let mut d: Driver<U, X> = Driver::new();
        let (relay, router) = (d.add(mk(3)), d.add(mk(1)));
        d.wire(relay, 0, router, 0);
        d.start();
        let at = d.port_index(relay, 0) as u32;
        let slots = (d.ports.len() * 2)
            .next_power_of_two()
            .clamp(1 << 10, 1 << 14);
        // routed (not a multiple of 5), out on port k % 3: three keys, three ports
        let k1 = 1u64;
        let k2 = 2u64;
        let k3 = (3..100_000u64)
            .find(|&k| {
                k % 5 != 0
                    && k % 3 == 0
                    && memo_slot(at, k as u128, slots) == memo_slot(at, k2 as u128, slots)
            })
            .expect("a key in the same slot");
        let keys = [k1, k2, k3, k2, k3, k3, k2, k1];
        let mut exits = vec![];
        for (i, k) in keys.into_iter().enumerate() {
            d.advance_to(SimTime(i as u64));
            d.inject(relay, 0, U(k, u64::MAX));
            d.drain_exits_into(&mut exits);
        }
        assert_eq!(d.memo.len(), slots, "the walks were remembered");
        assert_eq!(
            d.first[at as usize].key,
            halves(k1 as u128),
            "the first key"
        );
        let routes: Vec<(u64, PortId)> = exits.iter().map(|e| (e.3 .0, e.2)).collect();
        let want: Vec<(u64, PortId)> = keys.into_iter().map(|k| (k, (k % 3) as PortId)).collect();
        assert_eq!(routes, want);
        // the router was asked again only where the other key had taken the shared
        // slot (k2, k3, k2, k3, k2), never again for the first key
        assert_eq!(asked.get(), 6);
    }

    #[test]
    fn outputs_beyond_the_first_slots_remember_in_the_shared_table() {
        // a relay whose output lies beyond the first 64 Ki outputs (after two elements
        // with 40 001 each): its walks go to the shared table, and route right
        let log = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
        let asked = std::rc::Rc::new(std::cell::Cell::new(0));
        let mk = |kind| X {
            kind,
            salt: 1,
            pass: true,
            keyed: true,
            asked: asked.clone(),
            log: log.clone(),
        };
        let mut d: Driver<U, X> = Driver::new();
        for _ in 0..2 {
            let wide = d.add(mk(3));
            d.port_index(wide, 40_000);
        }
        let (relay, router) = (d.add(mk(3)), d.add(mk(1)));
        d.wire(relay, 0, router, 0);
        d.start();
        let at = d.port_index(relay, 0);
        assert!(at >= 1 << 16);
        let keys = [1u64, 2, 1, 2, 4];
        let mut exits = vec![];
        for (i, k) in keys.into_iter().enumerate() {
            d.advance_to(SimTime(i as u64));
            d.inject(relay, 0, U(k, u64::MAX));
            d.drain_exits_into(&mut exits);
        }
        assert_eq!(d.first.len(), 1 << 16);
        let routes: Vec<(u64, PortId)> = exits.iter().map(|e| (e.3 .0, e.2)).collect();
        let want: Vec<(u64, PortId)> = keys.into_iter().map(|k| (k, (k % 3) as PortId)).collect();
        assert_eq!(routes, want);
        assert_eq!(asked.get(), 3, "each key walked once");
    }

    /// kind 0: a line (each unit out on port 0 `delay` ns after it is handed; counts
    /// them); kind 1: a router passing everything to port 0; kind 2: a sink. All log
    /// what they are handed.
    struct F {
        kind: u8,
        delay: u64,
        n: u64,
        log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    }
    impl Element<U> for F {
        type Metrics = u64;
        fn metrics(&self, _: SimTime) -> u64 {
            self.n
        }
        fn handle(&mut self, now: SimTime, port: PortId, u: U, out: &mut Vec<Emit<U>>) {
            let line = format!("{}{}@{}:p{port}:u{}", self.kind, self.delay, now.0, u.0);
            self.log.borrow_mut().push(line);
            self.n += 1;
            match self.kind {
                0 => out.push(Emit::At {
                    at: SimTime(now.0 + self.delay),
                    port: 0,
                    unit: u,
                }),
                1 => out.push(Emit::Now { port: 0, unit: u }),
                _ => {}
            }
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            None
        }
        fn wakes(&self) -> bool {
            false
        }
        fn passes(&self) -> bool {
            self.kind == 1
        }
        fn pass_through(&self, _: PortId, _: &U) -> Option<PortId> {
            Some(0)
        }
        fn folds(&self) -> bool {
            self.kind == 0
        }
        fn handle_timeout(&mut self, _: SimTime, _: &mut Vec<Emit<U>>) {}
    }

    #[test]
    fn a_folded_hop_changes_the_events_and_the_tie_order_only() {
        // line a (10 ns) -> router -> line b (3 ns) -> sink, and a second line c (13 ns)
        // straight into the sink: c's units reach the sink at the instants b's do. Run
        // unfolded, folded, and folded by events (the reference).
        let run = |mode: u8| {
            let log = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
            let mut d: Driver<U, F> = Driver::new();
            let mk = |kind, delay| F {
                kind,
                delay,
                n: 0,
                log: log.clone(),
            };
            let (a, r, b, c, sink) = (
                d.add(mk(0, 10)),
                d.add(mk(1, 0)),
                d.add(mk(0, 3)),
                d.add(mk(0, 13)),
                d.add(mk(2, 0)),
            );
            d.wire(a, 0, r, 0);
            d.wire(r, 0, b, 0);
            d.wire(b, 0, sink, 0);
            d.wire(c, 0, sink, 1);
            if mode > 0 {
                d.fold(a, 0, b);
            }
            if mode == 2 {
                d.fold_by_events();
            }
            d.start();
            d.set_snapshots(&[56, 58, 60, 62, 1000].map(SimTime));
            for t in [0, 5, 40, 45, 49, 50, 55] {
                d.step_until(SimTime(t));
                d.advance_to(SimTime(t));
                d.inject(a, 0, U(t, u64::MAX));
                d.inject(c, 0, U(t + 1000, u64::MAX));
            }
            // b's count at each snapshot instant w, every event before w run
            let mut counts = vec![];
            for w in [56, 58, 60, 62, 1000] {
                d.step_until(SimTime(w - 1));
                counts.push(d.metrics(b, SimTime(w)));
            }
            let sink_log: Vec<String> = log
                .borrow()
                .iter()
                .filter(|l| l.starts_with('2'))
                .cloned()
                .collect();
            let b_log: Vec<String> = log
                .borrow()
                .iter()
                .filter(|l| l.starts_with("03"))
                .cloned()
                .collect();
            (sink_log, b_log, counts, d.events())
        };
        let (plain, folded, reference) = (run(0), run(1), run(2));
        // b sees the same units at the same times in every mode (arriving at 10, 15,
        // 50, 55, 59, 60, 65). At each snapshot instant its count is that of the units
        // arriving before it, though folded it took them earlier: the one arriving at
        // 59 (at 49) crosses 56 and 58 at once, the one at 60 (at 50) crosses 60.
        assert_eq!(plain.1, folded.1);
        assert_eq!(plain.1, reference.1);
        assert_eq!(plain.2, [4, 4, 5, 6, 7]);
        assert_eq!(folded.2, plain.2);
        assert_eq!(reference.2, plain.2);
        // the reference is the folded run, event for event but the folded ones
        assert_eq!(folded.0, reference.0);
        assert_eq!(folded.3 + 7, reference.3);
        assert_eq!(plain.3, reference.3);
        // The tie rule: a unit handed to a and c at t reaches the sink from b and from
        // c at t + 13. Unfolded, b's delivery is scheduled at t + 10, after c's (at t):
        // c's comes first. Folded, b's is scheduled at t, when a emitted toward b,
        // before c's: b's comes first. Nothing else differs.
        assert_ne!(plain.0, folded.0);
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(sorted(plain.0.clone()), sorted(folded.0.clone()));
        assert_eq!(plain.0[..2], ["20@13:p1:u1000", "20@13:p0:u0"]);
        assert_eq!(folded.0[..2], ["20@13:p0:u0", "20@13:p1:u1000"]);
    }

    #[test]
    fn elements_that_never_wake_are_never_polled() {
        let (quiet, timed) = (std::rc::Rc::default(), std::rc::Rc::default());
        let mut d: Driver<U, Q> = Driver::new();
        let a = d.add(Q(false, std::rc::Rc::clone(&quiet)));
        let b = d.add(Q(true, std::rc::Rc::clone(&timed)));
        d.wire(a, 0, b, 0);
        d.start();
        for k in 0..3 {
            d.inject(a, 0, U(k, u64::MAX));
        }
        assert_eq!(d.take_exits().len(), 3, "every unit went through both");
        assert_eq!(quiet.get(), 0, "never polled");
        assert_eq!(timed.get(), 4, "at start() and after each unit");
    }
}

#[cfg(test)]
mod size {
    #[test]
    fn an_event_is_a_unit_and_a_destination() {
        // an event is copied into its slot and out of it for every hop
        use crate::unit::Unit;
        let unit = std::mem::size_of::<Unit>();
        assert!(std::mem::size_of::<super::Ev<Unit>>() <= unit + 8);
    }

    #[test]
    fn a_remembered_walk_is_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<super::Memo>(), 32);
    }
}
