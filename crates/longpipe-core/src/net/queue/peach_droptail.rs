//! Drop-tail with TCP-Peach's router rule (`queue.kind = "peach-droptail"`), as in the
//! GTNetS `PeachQueue`: one FIFO for both classes, and a low-priority unit
//! ([`Class::Low`]: a dummy or NIL segment) is dropped on arrival if the queue already
//! holds more than one unit. A low-priority unit therefore only gets through a link
//! that is nearly idle; once admitted it is served in FIFO order like any other.
//! Occupancy does not count the unit in transmission.

use super::discipline::{Admission, Queue};
use super::droptail::DropTail;
use crate::element::{Class, Frame};
use crate::time::SimTime;

super::discipline::keyless! {
    /// FIFO where a low-priority unit is dropped on arrival if more than one unit already
    /// waits (the GTNetS `PeachQueue` rule for TCP-Peach dummy segments). No keys of its
    /// own.
    PeachDropTailSpec => PeachDropTail
}

/// Waiting units above which a low-priority arrival is dropped.
pub const LOW_ADMIT_MAX: usize = 1;

/// A [`DropTail`] that refuses low-priority arrivals once more than
/// [`LOW_ADMIT_MAX`] units wait.
pub struct PeachDropTail<U>(DropTail<U>);

impl<U> PeachDropTail<U> {
    pub fn new(admission: Admission) -> Self {
        PeachDropTail(DropTail::new(admission))
    }
}

impl<U: Frame + Send> Queue<U> for PeachDropTail<U> {
    fn enqueue(&mut self, now: SimTime, unit: U) -> Result<(), U> {
        if unit.class() == Class::Low && self.0.len() > LOW_ADMIT_MAX {
            return Err(unit);
        }
        self.0.enqueue(now, unit)
    }

    fn dequeue(&mut self, now: SimTime) -> Option<U> {
        self.0.dequeue(now)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn bytes(&self) -> u64 {
        self.0.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::discipline::tests::F;
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
