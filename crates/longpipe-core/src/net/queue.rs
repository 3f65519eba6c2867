//! Queue disciplines: where units wait for a transmitter, and which are dropped.
//!
//! [`Queue`] is the plug-in point (one file per discipline, one arm in [`QueueKind`]);
//! [`Admission`] is the one place a buffer limit is checked, shared by every discipline
//! and by link layers that buffer SDUs (RLC). Occupancy never counts the unit in
//! transmission.

use super::codel::{Codel, CodelConfig};
use super::fq_codel::{FqCodel, FqCodelConfig};
use super::peach_droptail::PeachDropTail;
use super::priority::PriorityQueue;
use super::red::{Red, RedConfig};
use crate::element::{Class, Frame};
use crate::error::{err, ScenarioError};
use crate::rng::RngStream;
use crate::time::{Rate, SimTime};
use crate::units::{Bytes, Duration, Limit, LimitQ};
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
    /// Strict priority between two classes: low-priority units are served only when
    /// no normal unit waits, and pushed out (newest first) to admit a normal unit.
    Priority,
    /// FIFO where a low-priority unit is dropped on arrival if more than one unit
    /// already waits (the GTNetS `PeachQueue` rule for TCP-Peach dummy segments).
    PeachDroptail,
    /// Random Early Detection (Floyd & Jacobson 1993, RFC 2309), gentle mode, ECN.
    Red,
    /// Controlled Delay (RFC 8289), ECN.
    Codel,
    /// Flow-queue CoDel (RFC 8290): DRR over hashed flows, CoDel per flow, ECN.
    /// Also accepted as "fq_codel" (Linux's name).
    #[serde(alias = "fq_codel")]
    FqCodel,
}

impl QueueKind {
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Droptail => "droptail",
            QueueKind::Priority => "priority",
            QueueKind::PeachDroptail => "peach-droptail",
            QueueKind::Red => "red",
            QueueKind::Codel => "codel",
            QueueKind::FqCodel => "fq-codel",
        }
    }
}

/// The scenario's `queue = { ... }` of one link direction. Besides `limit` and `kind`,
/// each key applies to the disciplines named in its documentation only.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Capacity: "1000pkt" or bytes ("64KB"). Default 100pkt. The packet in
    /// transmission is not counted.
    #[serde(default)]
    pub limit: Option<LimitQ>,
    #[serde(default)]
    pub kind: QueueKind,
    /// red, codel, fq-codel: mark ECN-capable packets Congestion Experienced instead
    /// of dropping them (RFC 3168 §5). Default false for red and codel, true for
    /// fq-codel (the Linux defaults).
    #[serde(default)]
    pub ecn: Option<bool>,
    /// red: minimum threshold of the average queue, "5pkt" or bytes. Default 5pkt.
    #[serde(default)]
    pub min_th: Option<LimitQ>,
    /// red: maximum threshold, in the unit of min_th. Default 15pkt (3 × min_th).
    #[serde(default)]
    pub max_th: Option<LimitQ>,
    /// red: marking probability at max_th. Default 0.1.
    #[serde(default)]
    pub max_p: Option<f64>,
    /// red: weight of the average queue's moving average. Default 0.002.
    #[serde(default)]
    pub w_q: Option<f64>,
    /// red: gentle mode (probability rises from max_p to 1 between max_th and
    /// 2 × max_th instead of jumping to 1). Default true.
    #[serde(default)]
    pub gentle: Option<bool>,
    /// red: typical packet size, for the decay of the average over idle time.
    /// Default 500B (ns-3's MeanPktSize).
    #[serde(default)]
    pub mean_pkt_size: Option<Bytes>,
    /// codel, fq-codel: target sojourn time. Default 5ms.
    #[serde(default)]
    pub target: Option<Duration>,
    /// codel, fq-codel: interval. Default 100ms.
    #[serde(default)]
    pub interval: Option<Duration>,
    /// fq-codel: number of flow queues (hash buckets). Default 1024.
    #[serde(default)]
    pub flows: Option<u32>,
    /// fq-codel: DRR quantum in bytes. Default 1514B (Linux: MTU + 14).
    #[serde(default)]
    pub quantum: Option<Bytes>,
}

/// A resolved discipline with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Discipline {
    Droptail,
    Priority,
    PeachDroptail,
    Red(RedConfig),
    Codel(CodelConfig),
    FqCodel(FqCodelConfig),
}

/// A resolved queue: its discipline and buffer limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueConfig {
    pub discipline: Discipline,
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
        let default = QueueSpec::default();
        let q = spec.unwrap_or(&default);
        let kind = q.kind;
        // Keys that belong to other disciplines are errors, not silently ignored.
        let given: [(&str, bool, &[QueueKind]); 12] = {
            use QueueKind::*;
            [
                ("ecn", q.ecn.is_some(), &[Red, Codel, FqCodel]),
                ("min_th", q.min_th.is_some(), &[Red]),
                ("max_th", q.max_th.is_some(), &[Red]),
                ("max_p", q.max_p.is_some(), &[Red]),
                ("w_q", q.w_q.is_some(), &[Red]),
                ("gentle", q.gentle.is_some(), &[Red]),
                ("mean_pkt_size", q.mean_pkt_size.is_some(), &[Red]),
                ("target", q.target.is_some(), &[Codel, FqCodel]),
                ("interval", q.interval.is_some(), &[Codel, FqCodel]),
                ("flows", q.flows.is_some(), &[FqCodel]),
                ("quantum", q.quantum.is_some(), &[FqCodel]),
                ("kind", false, &[]),
            ]
        };
        for (key, set, kinds) in given {
            if set && !kinds.contains(&kind) {
                let names: Vec<String> = kinds.iter().map(|k| format!("{:?}", k.name())).collect();
                return err(
                    format!("{path}.{key}"),
                    format!(
                        "only applies to kind = {} (this queue is {:?})",
                        names.join(" or "),
                        kind.name()
                    ),
                );
            }
        }
        let discipline = match kind {
            QueueKind::Droptail => Discipline::Droptail,
            QueueKind::Priority => Discipline::Priority,
            QueueKind::PeachDroptail => Discipline::PeachDroptail,
            QueueKind::Red => Discipline::Red(RedConfig::resolve(q, path)?),
            QueueKind::Codel => Discipline::Codel(CodelConfig::resolve(q, path)?),
            QueueKind::FqCodel => Discipline::FqCodel(FqCodelConfig::resolve(q, path)?),
        };
        Ok(QueueConfig {
            discipline,
            admission: Admission { limit },
        })
    }
}

impl QueueConfig {
    /// A drop-tail queue of `limit`.
    pub fn droptail(limit: Limit) -> Self {
        QueueConfig {
            discipline: Discipline::Droptail,
            admission: Admission { limit },
        }
    }

    pub fn kind(&self) -> QueueKind {
        match self.discipline {
            Discipline::Droptail => QueueKind::Droptail,
            Discipline::Priority => QueueKind::Priority,
            Discipline::PeachDroptail => QueueKind::PeachDroptail,
            Discipline::Red(_) => QueueKind::Red,
            Discipline::Codel(_) => QueueKind::Codel,
            Discipline::FqCodel(_) => QueueKind::FqCodel,
        }
    }

    /// The discipline, ready to use on a link of `rate`; `rng` is its own random
    /// stream (RED's drop decisions, fq_codel's hash perturbation).
    pub fn build<U: Frame + Send + 'static>(
        &self,
        rate: Rate,
        rng: RngStream,
    ) -> Box<dyn Queue<U>> {
        let a = self.admission;
        match self.discipline {
            Discipline::Droptail => Box::new(DropTail::new(a)),
            Discipline::Priority => Box::new(PriorityQueue::new(a)),
            Discipline::PeachDroptail => Box::new(PeachDropTail::new(a)),
            Discipline::Red(c) => Box::new(Red::new(c, a, rate, rng)),
            Discipline::Codel(c) => Box::new(Codel::new(c, a)),
            Discipline::FqCodel(c) => Box::new(FqCodel::new(c, a, rng)),
        }
    }
}

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

    #[test]
    fn zero_limits_are_rejected_with_their_path() {
        let spec = QueueSpec {
            limit: Some(LimitQ(Limit::Packets(0))),
            ..Default::default()
        };
        let e = QueueSpec::resolve(Some(&spec), "link[0].queue").unwrap_err();
        assert_eq!(e.path, "link[0].queue.limit");
        let c = QueueSpec::resolve(None, "x").unwrap();
        assert_eq!(c.admission.limit, Limit::Packets(100));
        assert_eq!(c.kind(), QueueKind::Droptail);
    }

    #[test]
    fn fq_codel_is_also_accepted_under_its_linux_name() {
        for name in ["fq-codel", "fq_codel"] {
            let s: QueueSpec = serde_json::from_str(&format!(r#"{{"kind":"{name}"}}"#)).unwrap();
            assert_eq!(s.kind, QueueKind::FqCodel);
        }
        assert!(serde_json::from_str::<QueueSpec>(r#"{"kind":"fqcodel"}"#).is_err());
    }

    #[test]
    fn keys_of_another_discipline_are_errors() {
        let spec = QueueSpec {
            kind: QueueKind::Codel,
            max_p: Some(0.2),
            ..Default::default()
        };
        let e = QueueSpec::resolve(Some(&spec), "link[1].queue").unwrap_err();
        assert_eq!(e.path, "link[1].queue.max_p");
        assert!(
            e.msg.contains("\"red\"") && e.msg.contains("\"codel\""),
            "{}",
            e.msg
        );
        let spec = QueueSpec {
            ecn: Some(true),
            ..Default::default()
        };
        let e = QueueSpec::resolve(Some(&spec), "q").unwrap_err();
        assert_eq!(e.path, "q.ecn");
        for (kind, name) in [
            (QueueKind::Priority, "priority"),
            (QueueKind::PeachDroptail, "peach-droptail"),
            (QueueKind::Red, "red"),
            (QueueKind::Codel, "codel"),
            (QueueKind::FqCodel, "fq-codel"),
        ] {
            let spec = QueueSpec {
                kind,
                ..Default::default()
            };
            let c = QueueSpec::resolve(Some(&spec), "q").unwrap();
            assert_eq!((c.kind(), c.kind().name()), (kind, name));
        }
    }
}
