//! Strict two-class priority queue (`queue.kind = "priority"`).
//!
//! Normal units are always served before low-priority ones ([`Class::Low`], e.g.
//! TCP-Peach's dummy and NIL segments); each class is FIFO. The buffer limit is shared:
//! a normal arrival that does not fit pushes out waiting low-priority units, newest
//! first, until it fits; a low-priority arrival that does not fit is dropped, as is a
//! normal one when no low-priority unit is left to push out. So low-priority traffic
//! only ever uses capacity and buffer that normal traffic leaves unused.

use super::discipline::{Admission, Queue, QueueStats};
use crate::element::{Class, Frame};
use crate::time::SimTime;
use std::collections::VecDeque;

super::discipline::keyless! {
    /// Strict priority between two classes: low-priority units are served only when no
    /// normal unit waits, and pushed out (newest first) to admit a normal unit. No keys of
    /// its own.
    PrioritySpec => PriorityQueue
}

pub struct PriorityQueue<U> {
    high: VecDeque<U>,
    low: VecDeque<U>,
    bytes: u64,
    admission: Admission,
    stats: QueueStats,
}

impl<U> PriorityQueue<U> {
    pub fn new(admission: Admission) -> Self {
        PriorityQueue {
            high: VecDeque::new(),
            low: VecDeque::new(),
            bytes: 0,
            admission,
            stats: QueueStats::default(),
        }
    }
}

impl<U: Frame + Send> Queue<U> for PriorityQueue<U> {
    fn enqueue(&mut self, _now: SimTime, unit: U) -> Result<(), U> {
        let size = unit.wire_len();
        let low = unit.class() == Class::Low;
        while !self.admission.admits(self.len(), self.bytes, size) {
            if low || self.low.is_empty() {
                return Err(unit);
            }
            // push out the newest low-priority unit
            let v = self.low.pop_back().expect("not empty");
            self.bytes -= v.wire_len() as u64;
            self.stats.drop_admitted(Class::Low);
        }
        self.bytes += size as u64;
        if low {
            self.low.push_back(unit);
        } else {
            self.high.push_back(unit);
        }
        Ok(())
    }

    fn dequeue(&mut self, _now: SimTime) -> Option<U> {
        let u = self.high.pop_front().or_else(|| self.low.pop_front())?;
        self.bytes -= u.wire_len() as u64;
        Some(u)
    }

    fn len(&self) -> usize {
        self.high.len() + self.low.len()
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
    use crate::units::Limit;

    fn q(limit: Limit) -> PriorityQueue<F> {
        PriorityQueue::new(Admission { limit })
    }

    #[test]
    fn low_is_served_only_when_no_normal_unit_waits() {
        let mut q = q(Limit::Packets(10));
        let t = SimTime(0);
        for f in [
            F::low(1, 100),
            F::new(2, 100),
            F::low(3, 100),
            F::new(4, 100),
        ] {
            assert!(q.enqueue(t, f).is_ok());
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(t)).map(|f| f.id).collect();
        assert_eq!(order, [2, 4, 1, 3]);
        assert_eq!((q.len(), q.bytes()), (0, 0));
    }

    #[test]
    fn normal_arrival_pushes_out_the_newest_low_units() {
        let mut q = q(Limit::Packets(3));
        let t = SimTime(0);
        assert!(q.enqueue(t, F::low(1, 100)).is_ok());
        assert!(q.enqueue(t, F::low(2, 100)).is_ok());
        assert!(q.enqueue(t, F::new(3, 100)).is_ok());
        // full: a low arrival is refused, a normal one pushes out low unit 2
        assert_eq!(q.enqueue(t, F::low(4, 100)).err().map(|f| f.id), Some(4));
        assert!(q.enqueue(t, F::new(5, 100)).is_ok());
        assert!(q.enqueue(t, F::new(6, 100)).is_ok()); // pushes out 1
        assert_eq!(q.enqueue(t, F::new(7, 100)).err().map(|f| f.id), Some(7));
        let s = q.stats();
        assert_eq!((s.dropped, s.dropped_low), (2, 2));
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(t)).map(|f| f.id).collect();
        assert_eq!(order, [3, 5, 6]);
    }

    #[test]
    fn byte_limit_pushes_out_as_many_low_units_as_needed() {
        let mut q = q(Limit::Bytes(1000));
        let t = SimTime(0);
        for i in 0..4 {
            assert!(q.enqueue(t, F::low(i, 250)).is_ok());
        }
        assert!(q.enqueue(t, F::new(9, 600)).is_ok());
        assert_eq!(
            q.stats().dropped_low,
            3,
            "three 250 B units make room for 600 B"
        );
        assert_eq!((q.len(), q.bytes()), (2, 850));
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(9));
        assert_eq!(
            q.dequeue(t).map(|f| f.id),
            Some(0),
            "the oldest low unit stays"
        );
    }
}
