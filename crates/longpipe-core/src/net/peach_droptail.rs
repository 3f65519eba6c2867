//! Drop-tail with TCP-Peach's router rule (`queue.kind = "peach-droptail"`), as in the
//! GTNetS `PeachQueue`: one FIFO for both classes, and a low-priority unit
//! ([`Class::Low`]: a dummy or NIL segment) is dropped on arrival if the queue already
//! holds more than one unit. A low-priority unit therefore only gets through a link
//! that is nearly idle; once admitted it is served in FIFO order like any other.
//! Occupancy does not count the unit in transmission.

use super::queue::{Admission, Queue};
use crate::element::{Class, Frame};
use crate::time::SimTime;
use std::collections::VecDeque;

/// Waiting units above which a low-priority arrival is dropped.
pub const LOW_ADMIT_MAX: usize = 1;

pub struct PeachDropTail<U> {
    q: VecDeque<U>,
    bytes: u64,
    admission: Admission,
}

impl<U> PeachDropTail<U> {
    pub fn new(admission: Admission) -> Self {
        PeachDropTail {
            q: VecDeque::new(),
            bytes: 0,
            admission,
        }
    }
}

impl<U: Frame + Send> Queue<U> for PeachDropTail<U> {
    fn enqueue(&mut self, _now: SimTime, unit: U) -> Result<(), U> {
        let size = unit.wire_len();
        if (unit.class() == Class::Low && self.q.len() > LOW_ADMIT_MAX)
            || !self.admission.admits(self.q.len(), self.bytes, size)
        {
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
    use crate::net::queue::tests::F;
    use crate::units::Limit;

    #[test]
    fn low_units_pass_only_while_at_most_one_unit_waits() {
        let mut q = PeachDropTail::new(Admission {
            limit: Limit::Packets(5),
        });
        let t = SimTime(0);
        assert!(q.enqueue(t, F::low(1, 100)).is_ok()); // 0 waiting
        assert!(q.enqueue(t, F::low(2, 100)).is_ok()); // 1 waiting
        assert!(q.enqueue(t, F::low(3, 100)).is_err()); // 2 waiting: dropped
        assert!(q.enqueue(t, F::new(4, 100)).is_ok());
        assert!(q.enqueue(t, F::new(5, 100)).is_ok());
        assert!(q.enqueue(t, F::new(6, 100)).is_ok());
        assert!(
            q.enqueue(t, F::new(7, 100)).is_err(),
            "the limit still holds"
        );
        // FIFO for both classes
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(t)).map(|f| f.id).collect();
        assert_eq!(order, [1, 2, 4, 5, 6]);
        assert!(q.enqueue(t, F::new(8, 100)).is_ok());
        assert!(
            q.enqueue(t, F::low(9, 100)).is_ok(),
            "one waiting: admitted"
        );
    }
}
