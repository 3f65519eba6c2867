//! The plug-in point of queue disciplines: the [`Queue`] every discipline implements,
//! the [`Admission`] that is the one place a buffer limit is checked (shared by every
//! discipline and by link layers that buffer SDUs), the [`QueueStats`] a discipline
//! counts itself, and [`DisciplineSpec`], what a discipline's file gives the registry
//! ([`super`]): its scenario keys, their resolution and the queue they build.
//! Occupancy never counts the unit in transmission.

use crate::element::{Class, Frame};
use crate::rng::RngStream;
use crate::tagged::Resolve;
use crate::time::{Rate, SimTime};
use crate::units::Limit;

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
    /// What the discipline counted itself (drops of units it had admitted, AQM
    /// decisions, ECN marks), since it was built. Read at snapshots only.
    fn stats(&self) -> QueueStats {
        QueueStats::default()
    }
}

/// Counters a discipline keeps itself. Refused arrivals (`enqueue` handing the unit
/// back) are counted by the link; these are the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Units dropped after they were admitted (pushed out by a higher class, dropped
    /// from the head by an AQM or from the fattest flow on overflow).
    pub dropped: u64,
    /// Of which low-priority units.
    pub dropped_low: u64,
    /// Drops decided by active queue management (RED's early and forced drops, CoDel's
    /// drops), whether of an arrival or of an admitted unit; not buffer overflows.
    pub aqm_drops: u64,
    /// Units marked Congestion Experienced instead of dropped (RFC 3168).
    pub ce_marks: u64,
}

impl QueueStats {
    /// Counts a drop of an admitted unit of class `class`.
    pub fn drop_admitted(&mut self, class: Class) {
        self.dropped += 1;
        self.dropped_low += (class == Class::Low) as u64;
    }
}

/// What a discipline's file gives the registry: its spec type is its own keys of
/// `queue = { kind = ..., ... }` (besides `kind` and `limit`, with
/// `deny_unknown_fields`; a key of another discipline is refused by name), resolved
/// into its config ([`Resolve`]), which builds the queue.
pub trait DisciplineSpec: Resolve {
    /// The queue, on a link of `rate`, with `rng` its own random stream (RED's drop
    /// decisions, fq_codel's hash perturbation).
    fn build<U: Frame + Send + 'static>(
        c: &Self::Config,
        admission: Admission,
        rate: Rate,
        rng: RngStream,
    ) -> Box<dyn Queue<U>>;
}

/// A discipline without keys of its own (`keyless!(/// doc, Spec => Queue)`): an empty
/// spec type that is its own config, and the queue `Queue::new(admission)`.
macro_rules! keyless {
    ($(#[$m:meta])* $spec:ident => $queue:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Default, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $spec {}

        impl $crate::tagged::Resolve for $spec {
            type Config = $spec;
            fn resolve(&self, _path: &str) -> Result<Self, $crate::error::ScenarioError> {
                Ok(*self)
            }
        }

        impl $crate::net::queue::discipline::DisciplineSpec for $spec {
            fn build<U: $crate::element::Frame + Send + 'static>(
                _: &Self,
                admission: $crate::net::queue::discipline::Admission,
                _: $crate::time::Rate,
                _: $crate::rng::RngStream,
            ) -> Box<dyn $crate::net::queue::discipline::Queue<U>> {
                Box::new($queue::new(admission))
            }
        }
    };
}
pub(crate) use keyless;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::element::TcpMeta;

    /// A test unit: id, wire length, class, ECN field and a flow number (its TCP
    /// source port, for flow hashing).
    #[derive(Debug, Clone, PartialEq)]
    pub struct F {
        pub id: u32,
        pub len: u32,
        pub class: Class,
        pub ecn: u8,
        pub flow: u16,
    }

    impl F {
        pub fn new(id: u32, len: u32) -> F {
            F {
                id,
                len,
                class: Class::Normal,
                ecn: 0,
                flow: 0,
            }
        }
        pub fn low(id: u32, len: u32) -> F {
            F {
                class: Class::Low,
                ..F::new(id, len)
            }
        }
        /// ECN-capable (ECT(0)).
        pub fn ect(mut self) -> F {
            self.ecn = 2;
            self
        }
        pub fn flow(mut self, flow: u16) -> F {
            self.flow = flow;
            self
        }
    }

    impl Frame for F {
        fn wire_len(&self) -> u32 {
            self.len
        }
        fn class(&self) -> Class {
            self.class
        }
        fn ecn(&self) -> u8 {
            self.ecn
        }
        fn mark_ce(&mut self) -> bool {
            if self.ecn == 0 {
                return false;
            }
            self.ecn = 3;
            true
        }
        fn tcp_meta(&self) -> Option<TcpMeta> {
            Some(TcpMeta {
                src: [10, 0, 0, 1],
                dst: [10, 0, 0, 2],
                sport: self.flow,
                dport: 5001,
                seq: 0,
                flags: 0,
                len: self.len,
            })
        }
    }
}
