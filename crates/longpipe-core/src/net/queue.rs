//! Queue disciplines: where units wait for a transmitter, and which are dropped.
//!
//! [`Queue`] is the plug-in point (one file per discipline, one arm in [`QueueKind`]);
//! [`Admission`] is the one place a buffer limit is checked, shared by every discipline
//! and by link layers that buffer SDUs (RLC). Occupancy never counts the unit in
//! transmission.

use crate::element::Frame;
use crate::error::{err, ScenarioError};
use crate::time::SimTime;
use crate::units::{Limit, LimitQ};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

/// A buffer limit: in units (packets) or in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    pub limit: Limit,
}

impl Admission {
    /// Whether a unit of `size` bytes fits a buffer holding `len` units of `bytes` bytes.
    #[inline]
    pub fn admits(&self, len: usize, bytes: u64, size: u32) -> bool {
        match self.limit {
            Limit::Packets(n) => (len as u64) < n,
            Limit::Bytes(b) => bytes + size as u64 <= b,
        }
    }
}

/// A queue discipline over units of type `U`.
pub trait Queue<U>: Send {
    /// Admits `unit`, or hands it back when it is dropped.
    fn enqueue(&mut self, now: SimTime, unit: U) -> Result<(), U>;
    /// The next unit to transmit.
    fn dequeue(&mut self, now: SimTime) -> Option<U>;
    /// Units waiting.
    fn len(&self) -> usize;
    /// Bytes waiting.
    fn bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

/// Queue disciplines (the scenario's `queue.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    /// FIFO, arrivals dropped when full.
    #[default]
    Droptail,
}

/// The scenario's `queue = { ... }` of one link direction.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Capacity: "1000pkt" or bytes ("64KB"). Default 100pkt. The packet in
    /// transmission is not counted.
    #[serde(default)]
    pub limit: Option<LimitQ>,
    #[serde(default)]
    pub kind: QueueKind,
}

/// A resolved queue: its discipline and buffer limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    pub kind: QueueKind,
    pub admission: Admission,
}

impl QueueSpec {
    /// Defaults and checks; `path` is the spec's field path.
    pub fn resolve(spec: Option<&QueueSpec>, path: &str) -> Result<QueueConfig, ScenarioError> {
        let limit = spec
            .and_then(|q| q.limit)
            .map(|l| l.0)
            .unwrap_or(Limit::Packets(100));
        if matches!(limit, Limit::Packets(0) | Limit::Bytes(0)) {
            return err(
                format!("{path}.limit"),
                "must be at least 1 packet or 1 byte",
            );
        }
        Ok(QueueConfig {
            kind: spec.map(|q| q.kind).unwrap_or_default(),
            admission: Admission { limit },
        })
    }
}

impl QueueConfig {
    /// The discipline, ready to use.
    pub fn build<U: Frame + Send + 'static>(&self) -> Box<dyn Queue<U>> {
        match self.kind {
            QueueKind::Droptail => Box::new(DropTail::new(self.admission)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct F(u32);
    impl Frame for F {
        fn wire_len(&self) -> u32 {
            self.0
        }
    }

    #[test]
    fn droptail_in_packets_drops_the_arrival_that_does_not_fit() {
        let mut q = DropTail::new(Admission {
            limit: Limit::Packets(2),
        });
        let t = SimTime(0);
        assert!(q.enqueue(t, F(100)).is_ok());
        assert!(q.enqueue(t, F(200)).is_ok());
        assert_eq!(q.enqueue(t, F(1)).err().map(|f| f.0), Some(1));
        assert_eq!((q.len(), q.bytes()), (2, 300));
        assert_eq!(q.dequeue(t).map(|f| f.0), Some(100));
        assert_eq!((q.len(), q.bytes()), (1, 200));
        assert!(q.enqueue(t, F(5)).is_ok());
        assert_eq!(q.dequeue(t).map(|f| f.0), Some(200));
        assert_eq!(q.dequeue(t).map(|f| f.0), Some(5));
        assert!(q.dequeue(t).is_none() && q.is_empty());
    }

    #[test]
    fn droptail_in_bytes_admits_up_to_the_limit_exactly() {
        let mut q = DropTail::new(Admission {
            limit: Limit::Bytes(1000),
        });
        let t = SimTime(0);
        assert!(q.enqueue(t, F(600)).is_ok());
        assert!(q.enqueue(t, F(401)).is_err());
        assert!(q.enqueue(t, F(400)).is_ok());
        assert!(q.enqueue(t, F(1)).is_err());
        assert_eq!(q.bytes(), 1000);
    }

    #[test]
    fn zero_limits_are_rejected_with_their_path() {
        let spec = QueueSpec {
            limit: Some(LimitQ(Limit::Packets(0))),
            kind: QueueKind::Droptail,
        };
        let e = QueueSpec::resolve(Some(&spec), "link[0].queue").unwrap_err();
        assert_eq!(e.path, "link[0].queue.limit");
        let c = QueueSpec::resolve(None, "x").unwrap();
        assert_eq!(c.admission.limit, Limit::Packets(100));
    }
}
