//! The event queue: a min-heap ordered by (time, insertion sequence), so events at the
//! same instant run in the order they were scheduled. Time never goes backwards. And
//! the [`driver`] that runs a network of elements on it.

pub mod driver;

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // reversed: BinaryHeap is a max-heap
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
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
            heap: BinaryHeap::new(),
            seq: 0,
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

    pub fn schedule(&mut self, time: SimTime, ev: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        self.heap.push(Entry {
            time,
            seq: self.seq,
            ev,
        });
        self.seq += 1;
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    /// Moves the clock forward to `t` (a wall-clock driver's present) without an event.
    pub fn advance_to(&mut self, t: SimTime) {
        debug_assert!(self.heap.peek().is_none_or(|e| e.time >= t));
        self.now = self.now.max(t);
    }

    /// Pops the next event if it is due no later than `until`.
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        if self.heap.peek()?.time > until {
            return None;
        }
        let e = self.heap.pop()?;
        debug_assert!(e.time >= self.now);
        self.now = e.time;
        self.executed += 1;
        Some((e.time, e.ev))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
