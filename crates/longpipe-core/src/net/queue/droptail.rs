//! Drop-tail (`queue.kind = "droptail"`, the default): one FIFO; an arrival that does
//! not fit the buffer limit is dropped.

use super::discipline::{Admission, Queue};
use crate::element::Frame;
use crate::time::SimTime;
use std::collections::VecDeque;

super::discipline::keyless! {
    /// FIFO, arrivals dropped when full. No keys of its own.
    DropTailSpec => DropTail
}

/// FIFO; an arrival that does not fit is dropped.
pub struct DropTail<U> {
    q: VecDeque<U>,
    bytes: u64,
    admission: Admission,
}

impl<U> DropTail<U> {
    pub fn new(admission: Admission) -> Self {
        DropTail {
            q: VecDeque::new(),
            bytes: 0,
            admission,
        }
    }
}

impl<U: Frame + Send> Queue<U> for DropTail<U> {
    fn enqueue(&mut self, _now: SimTime, unit: U) -> Result<(), U> {
        let size = unit.wire_len();
        if !self.admission.admits(self.q.len(), self.bytes, size) {
            return Err(unit);
        }
        self.bytes += size as u64;
        self.q.push_back(unit);
        Ok(())
    }
    fn dequeue(&mut self, _now: SimTime) -> Option<U> {
        let u = self.q.pop_front()?;
        self.bytes -= u.wire_len() as u64;
        Some(u)
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::discipline::tests::F;
    use crate::net::queue::discipline::QueueStats;
    use crate::units::Limit;

    #[test]
    fn droptail_in_packets_drops_the_arrival_that_does_not_fit() {
        let mut q = DropTail::new(Admission {
            limit: Limit::Packets(2),
        });
        let t = SimTime(0);
        assert!(q.enqueue(t, F::new(1, 100)).is_ok());
        assert!(q.enqueue(t, F::new(2, 200)).is_ok());
        assert_eq!(q.enqueue(t, F::new(3, 1)).err().map(|f| f.id), Some(3));
        assert_eq!((q.len(), q.bytes()), (2, 300));
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(1));
        assert_eq!((q.len(), q.bytes()), (1, 200));
        assert!(q.enqueue(t, F::new(4, 5)).is_ok());
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(2));
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(4));
        assert!(q.dequeue(t).is_none() && q.is_empty());
        assert_eq!(q.stats(), QueueStats::default());
    }

    #[test]
    fn droptail_in_bytes_admits_up_to_the_limit_exactly() {
        let mut q = DropTail::new(Admission {
            limit: Limit::Bytes(1000),
        });
        let t = SimTime(0);
        assert!(q.enqueue(t, F::new(1, 600)).is_ok());
        assert!(q.enqueue(t, F::new(2, 401)).is_err());
        assert!(q.enqueue(t, F::new(3, 400)).is_ok());
        assert!(q.enqueue(t, F::new(4, 1)).is_err());
        assert_eq!(q.bytes(), 1000);
    }
}
