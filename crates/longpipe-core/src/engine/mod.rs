//! The event queue: a min-heap ordered by (time, insertion sequence), so events at the
//! same instant run in the order they were scheduled. Time never goes backwards. And
//! the [`driver`] that runs a network of elements on it.
//!
//! Invariants:
//! - (time, sequence) is a total order (sequences are unique), so events come out in
//!   exactly one order whatever the heap's shape: any correct heap gives byte-identical
//!   runs.
//! - *Lazy pop*: popping a plain event leaves its entry at the root, marked stale. The
//!   handler of an event almost always schedules one, and the next schedule then
//!   overwrites the root and sifts it down once, instead of a pop (sift down) followed
//!   by a push (sift up). A stale root is removed for real only when the next pop comes
//!   before any schedule. Measured 0.80x CPU on `examples/dumbbell100.toml` (issue 31,
//!   BENCHMARKS.md).
//! - Every waiting event sits in a slot, a lane's too (a lane keeps only its events'
//!   times, numbers and slots); the slot freed last is taken first.

pub mod driver;

use crate::time::SimTime;
use std::collections::VecDeque;

/// Where a heap entry's event is: a slot, or the head of a lane.
#[derive(Clone, Copy)]
enum At {
    Slot(u32),
    Lane(u32),
}

/// A heap entry: the event's time, its insertion number and where the event is, in one
/// 128-bit key: the time in the high 64 bits, then the number (36 bits), then the
/// place (28 bits: a lane's flag and the slot's or lane's index). Numbers are unique,
/// so the key orders entries by (time, number) alone. 16 bytes: four entries a cache
/// line for the sifts, not 2.7 (BENCHMARKS.md, ninth session).
#[derive(Clone, Copy)]
struct Entry(u128);

/// Bits of an entry's place; the top one flags a lane.
const PLACE_BITS: u32 = 28;
const LANE_FLAG: u32 = 1 << (PLACE_BITS - 1);
/// Slots and lanes each number fewer than this (134 M: more packets than the
/// simulator's memory limit lets a run hold, `sim::estimate::MAX_MEMORY_BYTES`).
const MAX_PLACES: usize = LANE_FLAG as usize;
/// Insertion numbers stay below this (6.9 * 10^10 events; then they are renumbered).
const MAX_SEQ: u64 = 1 << (64 - PLACE_BITS);

impl Entry {
    #[inline(always)]
    fn new(time: SimTime, seq: u64, at: At) -> Entry {
        debug_assert!(seq < MAX_SEQ);
        let place = match at {
            At::Slot(s) => s,
            At::Lane(l) => LANE_FLAG | l,
        };
        Entry((time.0 as u128) << 64 | (seq as u128) << PLACE_BITS | place as u128)
    }

    #[inline(always)]
    fn time(&self) -> SimTime {
        SimTime((self.0 >> 64) as u64)
    }

    #[inline(always)]
    fn at(&self) -> At {
        let place = self.0 as u32 & ((1 << PLACE_BITS) - 1);
        if place & LANE_FLAG != 0 {
            At::Lane(place & !LANE_FLAG)
        } else {
            At::Slot(place)
        }
    }

    /// Strictly earlier in (time, sequence) order.
    #[inline(always)]
    fn before(&self, o: &Entry) -> bool {
        // One 128-bit comparison (compare and subtract-with-borrow), not a tuple's two
        // branches: the heap's sifts are mostly these (-2.3 % instructions on
        // examples/dumbbell100.toml; a 4-ary heap measured +5 %).
        self.0 < o.0
    }
}

/// A binary min-heap of entries whose root may be *stale* (already popped, waiting to be
/// overwritten by the next push; see the module docs).
#[derive(Default)]
struct LazyHeap {
    v: Vec<Entry>,
    /// `v[0]` has been popped and is no longer part of the heap.
    stale: bool,
}

impl LazyHeap {
    #[inline]
    fn len(&self) -> usize {
        self.v.len() - self.stale as usize
    }

    /// The earliest live entry.
    #[inline]
    fn peek(&self) -> Option<&Entry> {
        if !self.stale {
            return self.v.first();
        }
        match (self.v.get(1), self.v.get(2)) {
            (Some(a), Some(b)) => Some(if b.before(a) { b } else { a }),
            (a, _) => a,
        }
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        if self.stale {
            self.stale = false;
            self.v[0] = e;
            self.sift_down(0);
        } else {
            self.v.push(e);
            self.sift_up(self.v.len() - 1);
        }
    }

    /// Removes a stale root for real, so that `v[0]` is the earliest live entry.
    #[inline]
    fn settle(&mut self) {
        if self.stale {
            self.stale = false;
            let last = self.v.pop().expect("a stale root");
            if !self.v.is_empty() {
                self.v[0] = last;
                self.sift_down(0);
            }
        }
    }

    /// Marks the (settled) root popped.
    #[inline]
    fn pop_lazily(&mut self) {
        debug_assert!(!self.stale && !self.v.is_empty());
        self.stale = true;
    }

    /// Replaces the (settled) root by `e`: a pop and a push in one sift.
    #[inline]
    fn replace_root(&mut self, e: Entry) {
        debug_assert!(!self.stale && !self.v.is_empty());
        self.v[0] = e;
        self.sift_down(0);
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let e = self.v[i];
        while i > 0 {
            let p = (i - 1) / 2;
            if !e.before(&self.v[p]) {
                break;
            }
            self.v[i] = self.v[p];
            i = p;
        }
        self.v[i] = e;
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.v.len();
        let e = self.v[i];
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            // the earlier child without a branch (which one it is is a coin toss)
            let c = if r < n {
                l + self.v[r].before(&self.v[l]) as usize
            } else {
                l
            };
            if !self.v[c].before(&e) {
                break;
            }
            self.v[i] = self.v[c];
            i = c;
        }
        self.v[i] = e;
    }
}

/// Events ordered by (time, insertion sequence).
///
/// A *lane* is a FIFO of events whose (time, sequence) only grow, such as the packets a
/// link delivers after a fixed delay: only a lane's head sits in the heap, so the heap
/// stays as small as the number of lanes plus other events, while the order in which
/// events come out is exactly that of one heap holding them all.
pub struct EventQueue<E> {
    heap: LazyHeap,
    /// Events by slot, plain or in a lane; `free` lists the empty slots, the one
    /// emptied last on top: the next event scheduled takes the slot the event being
    /// run was just read from, a line still in cache.
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    /// Each lane's events by slot: (time, sequence, slot), 24 bytes an entry, not the
    /// ~100 of an event carrying a packet. A long delay line's ring so no longer
    /// streams whole packets through the cache (measured: dumbbell100 0.96x CPU, L1
    /// write misses -28 %; BENCHMARKS.md, ninth session).
    lanes: Vec<VecDeque<(SimTime, u64, u32)>>,
    seq: u64,
    /// A number was reserved ([`EventQueue::reserve_seq`]): numbers held outside the
    /// queue forbid renumbering.
    reserved_any: bool,
    now: SimTime,
    executed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: LazyHeap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            lanes: Vec::new(),
            seq: 0,
            reserved_any: false,
            now: SimTime::ZERO,
            executed: 0,
        }
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn executed(&self) -> u64 {
        self.executed
    }

    fn next_seq(&mut self, time: SimTime) -> u64 {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        if self.seq == MAX_SEQ {
            self.renumber();
        }
        self.seq += 1;
        self.seq - 1
    }

    /// Numbers the waiting events 0, 1, ... in their order, once 2^36 numbers have been
    /// taken (hours of a large simulation, a day of a busy daemon): the order, and so
    /// the run, is unchanged. It panics once a number has been reserved: numbers held
    /// outside the queue would fall out of order (the reference run of folded hops,
    /// [`driver::Driver::fold_by_events`], a check of short runs).
    #[cold]
    #[inline(never)]
    fn renumber(&mut self) {
        assert!(
            !self.reserved_any,
            "numbers were reserved (the reference run of folded hops): they cannot be renumbered"
        );
        // (time, number, where): a plain event's heap index, or a lane and position
        let mut all: Vec<(SimTime, u64, u32, u32)> = vec![];
        let live = self.heap.stale as usize..self.heap.v.len();
        for i in live.clone() {
            let e = self.heap.v[i];
            if let At::Slot(_) = e.at() {
                let seq = ((e.0 >> PLACE_BITS) as u64) & (MAX_SEQ - 1);
                all.push((e.time(), seq, u32::MAX, i as u32));
            }
        }
        for (l, lane) in self.lanes.iter().enumerate() {
            for (j, &(time, seq, _)) in lane.iter().enumerate() {
                all.push((time, seq, l as u32, j as u32));
            }
        }
        all.sort_unstable();
        for (rank, &(time, _, l, j)) in all.iter().enumerate() {
            let rank = rank as u64;
            if l == u32::MAX {
                let at = self.heap.v[j as usize].at();
                self.heap.v[j as usize] = Entry::new(time, rank, at);
            } else {
                self.lanes[l as usize][j as usize].1 = rank;
            }
        }
        for i in live {
            if let At::Lane(l) = self.heap.v[i].at() {
                let &(time, seq, _) = self.lanes[l as usize].front().expect("a lane's head");
                self.heap.v[i] = Entry::new(time, seq, At::Lane(l));
            }
        }
        self.seq = all.len() as u64;
    }

    #[inline]
    pub fn schedule(&mut self, time: SimTime, ev: E) {
        let seq = self.next_seq(time);
        self.push_slot(time, seq, ev);
    }

    /// Puts `ev` in a free slot; its number.
    #[inline]
    fn store(&mut self, ev: E) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(ev);
                s
            }
            None => {
                assert!(
                    self.slots.len() < MAX_PLACES,
                    "over 2^27 events waiting at once"
                );
                self.slots.push(Some(ev));
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[inline]
    fn push_slot(&mut self, time: SimTime, seq: u64, ev: E) {
        let slot = self.store(ev);
        self.heap.push(Entry::new(time, seq, At::Slot(slot)));
    }

    /// Takes the next insertion number without scheduling anything: an event scheduled
    /// later with it ([`EventQueue::schedule_reserved`]) comes out as if scheduled now.
    pub fn reserve_seq(&mut self) -> u64 {
        assert!(self.seq < MAX_SEQ, "over 2^36 numbers reserved");
        self.reserved_any = true;
        self.seq += 1;
        self.seq - 1
    }

    /// Schedules `ev` at `time` with the insertion number `seq` taken before
    /// ([`EventQueue::reserve_seq`]), as a plain event (a lane's numbers only grow).
    pub fn schedule_reserved(&mut self, time: SimTime, seq: u64, ev: E) {
        assert!(time >= self.now, "event scheduled in the past");
        debug_assert!(seq < self.seq, "a reserved number");
        self.push_slot(time, seq, ev);
    }

    /// A new lane's id.
    pub fn add_lane(&mut self) -> u32 {
        assert!(self.lanes.len() < MAX_PLACES, "over 2^27 lanes");
        self.lanes.push(VecDeque::new());
        (self.lanes.len() - 1) as u32
    }

    /// Schedules `ev` at `time` in lane `lane` if that keeps the lane's times in order
    /// (no earlier than its last event), else as a plain event. Either way it comes out
    /// in (time, insertion) order.
    #[inline]
    pub fn schedule_in(&mut self, lane: u32, time: SimTime, ev: E) {
        let l = &self.lanes[lane as usize];
        if l.back().is_some_and(|b| b.0 > time) {
            return self.schedule(time, ev);
        }
        let seq = self.next_seq(time);
        let slot = self.store(ev);
        let l = &mut self.lanes[lane as usize];
        if l.is_empty() {
            self.heap.push(Entry::new(time, seq, At::Lane(lane)));
        }
        l.push_back((time, seq, slot));
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time())
    }

    /// Moves the clock forward to `t` (a wall-clock driver's present) without an event.
    pub fn advance_to(&mut self, t: SimTime) {
        debug_assert!(self.heap.peek().is_none_or(|e| e.time() >= t));
        self.now = self.now.max(t);
    }

    /// Pops the next event if it is due no later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        if self.heap.peek()?.time() > until {
            return None;
        }
        self.heap.settle();
        let e = self.heap.v[0];
        debug_assert!(e.time() >= self.now);
        self.now = e.time();
        self.executed += 1;
        let ev = match e.at() {
            At::Slot(s) => {
                self.heap.pop_lazily();
                self.free.push(s);
                self.slots[s as usize].take().expect("a scheduled event")
            }
            At::Lane(l) => {
                let lane = &mut self.lanes[l as usize];
                let (_, _, s) = lane.pop_front().expect("a lane's head");
                match lane.front() {
                    Some(&(time, seq, _)) => {
                        self.heap.replace_root(Entry::new(time, seq, At::Lane(l)))
                    }
                    None => self.heap.pop_lazily(),
                }
                self.free.push(s);
                self.slots[s as usize].take().expect("a lane's event")
            }
        };
        Some((e.time(), ev))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), "b");
        q.schedule(SimTime(1), "a");
        q.schedule(SimTime(5), "c");
        q.schedule(SimTime(9), "d");
        let mut v = vec![];
        while let Some((_, e)) = q.pop_until(SimTime(8)) {
            v.push(e);
        }
        assert_eq!(v, ["a", "b", "c"]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.executed(), 3);
    }
    #[test]
    #[should_panic]
    fn no_past_events() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), ());
        q.pop_until(SimTime(10));
        q.schedule(SimTime(4), ());
    }

    #[test]
    fn lanes_keep_the_order_of_one_heap() {
        // The same schedule through lanes and through plain events pops identically.
        let mut a = EventQueue::new();
        let mut b = EventQueue::new();
        let (l0, l1) = (a.add_lane(), a.add_lane());
        let plan: Vec<(u32, u64)> = vec![
            (0, 5),
            (1, 5),
            (2, 3),
            (0, 5),
            (1, 9),
            (0, 7),
            (2, 5),
            (1, 9),
            (0, 6),
            (2, 1),
        ];
        for (i, &(lane, t)) in plan.iter().enumerate() {
            match lane {
                0 => a.schedule_in(l0, SimTime(t), i),
                1 => a.schedule_in(l1, SimTime(t), i),
                _ => a.schedule(SimTime(t), i),
            }
            b.schedule(SimTime(t), i);
        }
        assert_eq!(a.len(), plan.len());
        let pa: Vec<_> = std::iter::from_fn(|| a.pop_until(SimTime(100))).collect();
        let pb: Vec<_> = std::iter::from_fn(|| b.pop_until(SimTime(100))).collect();
        assert_eq!(pa, pb);
        // (0, 6) after (0, 7) went out of its lane as a plain event, in time order
        assert_eq!(
            pa.iter().map(|x| x.0 .0).collect::<Vec<_>>(),
            [1, 3, 5, 5, 5, 5, 6, 7, 9, 9]
        );
        assert!(a.is_empty() && a.len() == 0);
    }

    #[test]
    fn an_entry_keeps_time_and_place_and_orders_by_time_then_number() {
        let top = MAX_PLACES as u32 - 1;
        let cases = [
            (SimTime(0), 0, At::Slot(0)),
            (SimTime(7), MAX_SEQ - 1, At::Lane(top)),
            (SimTime(7), MAX_SEQ - 2, At::Slot(top)),
            (SimTime(u64::MAX), 3, At::Lane(0)),
            (SimTime(u64::MAX), 2, At::Slot(top)),
        ];
        for &(t, seq, at) in &cases {
            let e = Entry::new(t, seq, at);
            assert_eq!(e.time(), t);
            match (e.at(), at) {
                (At::Slot(a), At::Slot(b)) | (At::Lane(a), At::Lane(b)) => assert_eq!(a, b),
                _ => panic!("a slot read back as a lane or the reverse"),
            }
            for &(t2, seq2, at2) in &cases {
                let o = Entry::new(t2, seq2, at2);
                assert_eq!(
                    e.before(&o),
                    (t, seq) < (t2, seq2),
                    "{t} {seq} vs {t2} {seq2}"
                );
            }
        }
    }

    #[test]
    fn numbers_run_out_and_the_waiting_events_are_renumbered_in_order() {
        // Schedules and pops across the renumbering (plain events, lanes, a stale
        // root): the order is that of a sorted reference throughout.
        let mut q = EventQueue::new();
        let lanes = [q.add_lane(), q.add_lane()];
        q.seq = MAX_SEQ - 40;
        let mut reference: Vec<(u64, u64, usize)> = vec![];
        let (mut n, mut now) = (0usize, 0u64);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut renumbered = false;
        for _ in 0..400 {
            if next() % 3 != 0 {
                let t = now + next() % 30;
                match next() % 3 {
                    k @ 0..=1 => q.schedule_in(lanes[k as usize], SimTime(t), n),
                    _ => q.schedule(SimTime(t), n),
                }
                reference.push((t, n as u64, n));
                n += 1;
                renumbered |= q.seq < 1_000;
            } else {
                reference.sort();
                let want = reference.first().map(|e| (e.0, e.2));
                let got = q.pop_until(SimTime(u64::MAX)).map(|(t, v)| (t.0, v));
                assert_eq!(got, want);
                if want.is_some() {
                    reference.remove(0);
                    now = want.unwrap().0;
                }
            }
        }
        assert!(renumbered, "the numbers ran out during the test");
        assert!(q.seq < MAX_SEQ);
    }

    #[test]
    fn renumbering_with_a_stale_root_keeps_the_order() {
        // The numbers run out just after a pop left the root stale: a lane's (now
        // empty) or a plain event's. The stale root is no waiting event; the others
        // keep their order.
        for lane_root in [true, false] {
            let mut q = EventQueue::new();
            let (first, lane) = (q.add_lane(), q.add_lane());
            if lane_root {
                q.schedule_in(first, SimTime(1), "a");
            } else {
                q.schedule(SimTime(1), "a");
            }
            q.schedule(SimTime(10), "c");
            q.schedule_in(lane, SimTime(10), "d");
            assert_eq!(q.pop_until(SimTime(5)), Some((SimTime(1), "a")));
            assert!(q.heap.stale, "the popped root waits to be overwritten");
            q.seq = MAX_SEQ;
            q.schedule(SimTime(10), "e");
            q.schedule_in(lane, SimTime(10), "f");
            assert!(q.seq < 10, "renumbered");
            let got: Vec<_> = std::iter::from_fn(|| q.pop_until(SimTime::MAX))
                .map(|e| e.1)
                .collect();
            assert_eq!(got, ["c", "d", "e", "f"]);
        }
    }

    #[test]
    #[should_panic(expected = "cannot be renumbered")]
    fn reserved_numbers_forbid_renumbering() {
        // A reserved number held outside the queue would no longer be in order.
        let mut q = EventQueue::new();
        q.seq = MAX_SEQ - 1;
        let _held = q.reserve_seq();
        q.schedule(SimTime(5), ());
    }

    #[test]
    fn lane_events_reuse_the_slot_just_freed() {
        // A delay line in steady state: each popped event is followed by the next one
        // scheduled. Its events take the slot the popped one left (the one in cache),
        // and the slots never outgrow the events waiting at once.
        let mut q = EventQueue::new();
        let lane = q.add_lane();
        for i in 0..8u64 {
            q.schedule_in(lane, SimTime(i * 10), i);
        }
        for i in 8..1_000u64 {
            let (_, ev) = q.pop_until(SimTime::MAX).expect("an event");
            assert_eq!(ev, i - 8);
            let freed = *q.free.last().expect("the popped event's slot");
            q.schedule_in(lane, SimTime(i * 10), i);
            assert_eq!(q.lanes[lane as usize].back().map(|e| e.2), Some(freed));
        }
        assert_eq!((q.len(), q.slots.len()), (8, 8));
    }

    #[test]
    fn lazy_pop_matches_a_sorted_reference() {
        // Interleaved schedules (plain and in lanes), pops with and without a schedule
        // between them and bounded pops that leave a stale root in place: the order is
        // that of a plain sorted list of (time, insertion).
        let mut q = EventQueue::new();
        let lanes = [q.add_lane(), q.add_lane(), q.add_lane()];
        let mut reference: Vec<(u64, u64, usize)> = vec![];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut n, mut seq, mut now) = (0usize, 0u64, 0u64);
        for _ in 0..5_000 {
            let r = next();
            match r % 7 {
                0..=2 => {
                    let t = now + next() % 50;
                    let k = (next() % 4) as usize;
                    if k < 3 {
                        q.schedule_in(lanes[k], SimTime(t), n);
                    } else {
                        q.schedule(SimTime(t), n);
                    }
                    reference.push((t, seq, n));
                    seq += 1;
                    n += 1;
                }
                _ => {
                    let until = now + next() % 20;
                    reference.sort();
                    let want = reference.first().filter(|e| e.0 <= until).copied();
                    let got = q.pop_until(SimTime(until));
                    assert_eq!(got.map(|(t, v)| (t.0, v)), want.map(|(t, _, v)| (t, v)));
                    if want.is_some() {
                        reference.remove(0);
                        now = want.unwrap().0;
                    }
                    assert_eq!(q.len(), reference.len());
                    assert_eq!(q.is_empty(), reference.is_empty());
                    reference.sort();
                    assert_eq!(q.peek_time().map(|t| t.0), reference.first().map(|e| e.0));
                }
            }
        }
    }
}
