//! Flow-queue CoDel (`queue.kind = "fq-codel"`), RFC 8290, as Linux `sch_fq_codel`.
//!
//! - Classification (§4.1.1): a unit goes to flow queue `hash(5-tuple) mod flows`. The
//!   hash is FNV-1a over addresses, ports and protocol, salted with a perturbation
//!   drawn from the queue's own seeded stream, so it is deterministic for a scenario and
//!   seed (Linux salts with a boot-time random value). Units that are not TCP packets
//!   share queue 0.
//! - Scheduling (§4.2): deficit round robin with `quantum` bytes over two lists: a flow
//!   that becomes active joins the *new* list with a full quantum; the new list is
//!   served first; a flow whose deficit is spent moves to the tail of the *old* list
//!   with one more quantum; a new flow found empty moves to the old list if that list
//!   is not empty (to prevent starvation), otherwise (and an old flow found empty)
//!   leaves the lists.
//! - Each flow queue runs CoDel (RFC 8289, [`super::codel`]) on dequeue; the MTU test
//!   (`bytes() <= MAXPACKET`) looks at the whole backlog, as Linux does.
//! - Overflow (§4.1): when an arrival exceeds the buffer limit, units are dropped from
//!   the head of the flow with the largest byte backlog: up to 64 units, until half of
//!   its backlog is gone (Linux `fq_codel_drop`, `drop_batch_size` 64). The arrival
//!   itself is admitted (it may be among the dropped if its flow is the fattest).

use super::codel::{CodelConfig, CodelStore, CodelVars, Stamped};
use super::discipline::{Admission, DisciplineSpec, Queue, QueueStats};
use crate::element::Frame;
use crate::error::{err, ScenarioError};
use crate::rng::RngStream;
use crate::tagged::Resolve;
use crate::time::{Rate, SimTime};
use crate::units::{Bytes, Duration};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

/// Flow-queue CoDel (RFC 8290): DRR over hashed flows, CoDel per flow, ECN. Also
/// accepted as "fq_codel" (Linux's name).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FqCodelSpec {
    /// Mark ECN-capable packets Congestion Experienced instead of dropping them
    /// (RFC 3168 §5). Default true (Linux).
    #[serde(default)]
    pub ecn: Option<bool>,
    /// CoDel's target sojourn time, per flow. Default 5ms.
    #[serde(default)]
    pub target: Option<Duration>,
    /// CoDel's interval. Default 100ms.
    #[serde(default)]
    pub interval: Option<Duration>,
    /// Number of flow queues (hash buckets). Default 1024.
    #[serde(default)]
    pub flows: Option<u32>,
    /// DRR quantum in bytes. Default 1514B (Linux: MTU + 14).
    #[serde(default)]
    pub quantum: Option<Bytes>,
}

impl Resolve for FqCodelSpec {
    type Config = FqCodelConfig;
    fn resolve(&self, path: &str) -> Result<FqCodelConfig, ScenarioError> {
        FqCodelConfig::resolve(self, path)
    }
}

impl DisciplineSpec for FqCodelSpec {
    fn build<U: Frame + Send + 'static>(
        c: &FqCodelConfig,
        admission: Admission,
        _: Rate,
        rng: RngStream,
    ) -> Box<dyn Queue<U>> {
        Box::new(FqCodel::new(*c, admission, rng))
    }
}

/// Linux `drop_batch_size`.
pub const DROP_BATCH: usize = 64;

/// Resolved fq_codel parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FqCodelConfig {
    pub codel: CodelConfig,
    pub flows: u32,
    pub quantum: u64,
}

impl FqCodelConfig {
    /// RFC 8290 §5 / Linux defaults: 1024 flows, quantum 1514 B, target 5 ms, interval
    /// 100 ms, ECN on.
    pub fn resolve(q: &FqCodelSpec, path: &str) -> Result<FqCodelConfig, ScenarioError> {
        let codel = CodelConfig::resolve_with(q.target, q.interval, q.ecn.unwrap_or(true), path)?;
        let flows = q.flows.unwrap_or(1024);
        if !(1..=65_536).contains(&flows) {
            return err(
                format!("{path}.flows"),
                format!("must be in [1, 65536], got {flows}"),
            );
        }
        let quantum = q.quantum.map(|b| b.0).unwrap_or(1514);
        if quantum == 0 || quantum > 1 << 20 {
            return err(
                format!("{path}.quantum"),
                format!("must be in [1 B, 1 MiB], got {quantum} B"),
            );
        }
        Ok(FqCodelConfig {
            codel,
            flows,
            quantum,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Flow<U> {
    s: Stamped<U>,
    deficit: i64,
    vars: CodelVars,
    list: List,
}

/// A flow's queue seen by CoDel: pops keep the totals right; the backlog is the
/// whole queue's.
struct FlowStore<'a, U> {
    s: &'a mut Stamped<U>,
    len: &'a mut usize,
    bytes: &'a mut u64,
}

impl<U: Frame> CodelStore<U> for FlowStore<'_, U> {
    fn pop(&mut self) -> Option<(SimTime, U)> {
        let (t, u) = self.s.pop()?;
        *self.len -= 1;
        *self.bytes -= u.wire_len() as u64;
        Some((t, u))
    }
    fn backlog(&self) -> u64 {
        *self.bytes
    }
}

pub struct FqCodel<U> {
    c: FqCodelConfig,
    flows: Vec<Flow<U>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    len: usize,
    bytes: u64,
    admission: Admission,
    perturbation: u64,
    maxpacket: u64,
    stats: QueueStats,
}

impl<U> FqCodel<U> {
    pub fn new(c: FqCodelConfig, admission: Admission, mut rng: RngStream) -> Self {
        FqCodel {
            c,
            flows: (0..c.flows)
                .map(|_| Flow {
                    s: Stamped::default(),
                    deficit: 0,
                    vars: CodelVars::default(),
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            len: 0,
            bytes: 0,
            admission,
            perturbation: rng.next_u64(),
            maxpacket: 0,
            stats: QueueStats::default(),
        }
    }
}

impl<U: Frame> FqCodel<U> {
    /// §4.1.1: the flow queue of `unit`.
    pub fn classify(&self, unit: &U) -> usize {
        let Some(m) = unit.tcp_meta() else { return 0 };
        let mut h = 0xcbf2_9ce4_8422_2325u64 ^ self.perturbation;
        let (sp, dp) = (m.sport.to_be_bytes(), m.dport.to_be_bytes());
        let bytes = m
            .src
            .iter()
            .chain(&m.dst)
            .chain(&sp)
            .chain(&dp)
            .chain(&[6u8]);
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        (h % self.c.flows as u64) as usize
    }

    /// Linux `fq_codel_drop`: drops from the head of the fattest flow.
    fn drop_from_fattest(&mut self) {
        let mut idx = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.s.bytes > max {
                max = f.s.bytes;
                idx = i;
            }
        }
        let threshold = max / 2;
        let f = &mut self.flows[idx];
        let mut dropped = 0u64;
        for _ in 0..DROP_BATCH {
            let Some((_, u)) = f.s.pop() else { break };
            let size = u.wire_len() as u64;
            dropped += size;
            self.len -= 1;
            self.bytes -= size;
            self.stats.drop_admitted(u.class());
            if dropped >= threshold {
                break;
            }
        }
    }
}

impl<U: Frame + Send> Queue<U> for FqCodel<U> {
    fn enqueue(&mut self, now: SimTime, unit: U) -> Result<(), U> {
        let size = unit.wire_len();
        let over = !self.admission.admits(self.len, self.bytes, size);
        let idx = self.classify(&unit);
        self.maxpacket = self.maxpacket.max(size as u64);
        let f = &mut self.flows[idx];
        f.s.bytes += size as u64;
        f.s.q.push_back((now, unit));
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.c.quantum as i64;
            self.new_flows.push_back(idx);
        }
        self.len += 1;
        self.bytes += size as u64;
        if over {
            self.drop_from_fattest();
        }
        Ok(())
    }

    fn dequeue(&mut self, now: SimTime) -> Option<U> {
        loop {
            let (is_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i),
                (None, Some(&i)) => (false, i),
                (None, None) => return None,
            };
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += self.c.quantum as i64;
                f.list = List::Old;
                if is_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx);
                continue;
            }
            let mut store = FlowStore {
                s: &mut f.s,
                len: &mut self.len,
                bytes: &mut self.bytes,
            };
            let got = f.vars.dequeue(
                &self.c.codel,
                now,
                &mut store,
                self.maxpacket,
                &mut self.stats,
            );
            match got {
                Some(u) => {
                    f.deficit -= u.wire_len() as i64;
                    return Some(u);
                }
                None => {
                    if is_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    if is_new && !self.old_flows.is_empty() {
                        f.list = List::Old;
                        self.old_flows.push_back(idx);
                    } else {
                        f.list = List::None;
                    }
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.len
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
    use crate::time::SimDuration;
    use crate::units::Limit;

    const MS: u64 = 1_000_000;

    fn fq(limit: u64, flows: u32, quantum: u64, ecn: bool) -> FqCodel<F> {
        FqCodel::new(
            FqCodelConfig {
                codel: CodelConfig {
                    target: SimDuration::from_millis(5),
                    interval: SimDuration::from_millis(100),
                    ecn,
                },
                flows,
                quantum,
            },
            Admission {
                limit: Limit::Packets(limit),
            },
            RngStream::new(1, "fq-test"),
        )
    }

    /// Two test flow numbers that hash to different queues.
    fn two_flows(q: &FqCodel<F>) -> (u16, u16) {
        let a = 1;
        let b =
            (2..).find(|&b| q.classify(&F::new(0, 1).flow(b)) != q.classify(&F::new(0, 1).flow(a)));
        (a, b.unwrap())
    }

    #[test]
    fn hashing_is_deterministic_and_spreads_flows() {
        let q = fq(100, 1024, 1514, false);
        let same = fq(100, 1024, 1514, false);
        let mut used = std::collections::BTreeSet::new();
        for flow in 0..200u16 {
            let i = q.classify(&F::new(0, 1).flow(flow));
            assert_eq!(
                i,
                same.classify(&F::new(7, 99).flow(flow)),
                "same 5-tuple, same queue"
            );
            used.insert(i);
        }
        assert!(
            used.len() > 170,
            "200 flows over 1024 queues: {} used",
            used.len()
        );
    }

    #[test]
    fn a_new_sparse_flow_is_served_before_a_backlogged_one() {
        let mut q = fq(100, 1024, 1514, false);
        let (a, b) = two_flows(&q);
        let t = SimTime(0);
        for i in 0..10 {
            q.enqueue(t, F::new(i, 1000).flow(a)).unwrap();
        }
        // a: deficit 1514 → 514 → −486
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(0));
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(1));
        q.enqueue(t, F::new(100, 1000).flow(b)).unwrap();
        // a's deficit is spent: it moves to the old list; b (new) goes first
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(100));
        assert_eq!(q.dequeue(t).map(|f| f.id), Some(2));
        assert_eq!((q.len(), q.bytes()), (7, 7000));
    }

    #[test]
    fn drr_shares_bytes_not_packets() {
        let mut q = fq(10_000, 1024, 1514, false);
        let (a, b) = two_flows(&q);
        let t = SimTime(0);
        for i in 0..3000 {
            q.enqueue(t, F::new(i, 1500).flow(a)).unwrap();
            q.enqueue(t, F::new(i, 300).flow(b)).unwrap();
        }
        let (mut ba, mut bb) = (0u64, 0u64);
        for _ in 0..2000 {
            let f = q.dequeue(t).unwrap();
            if f.flow == a {
                ba += f.len as u64;
            } else {
                bb += f.len as u64;
            }
            // never more than a quantum + a packet apart
            assert!(ba.abs_diff(bb) <= 1514 + 1500, "{ba} vs {bb}");
        }
        assert!(ba > 300_000 && bb > 300_000);
    }

    #[test]
    fn overflow_drops_half_the_fattest_flow_from_its_head() {
        let mut q = fq(10, 1024, 1514, false);
        let (a, b) = two_flows(&q);
        let t = SimTime(0);
        for i in 0..8 {
            q.enqueue(t, F::new(i, 1000).flow(a)).unwrap();
        }
        for i in 0..2 {
            q.enqueue(t, F::new(100 + i, 1000).flow(b)).unwrap();
        }
        // the 11th unit overflows: a (8000 B) loses its 4 oldest units (4000 B)
        q.enqueue(t, F::new(102, 1000).flow(b)).unwrap();
        assert_eq!(q.stats().dropped, 4);
        assert_eq!(q.len(), 7);
        let mut out: Vec<u32> = std::iter::from_fn(|| q.dequeue(t)).map(|f| f.id).collect();
        out.sort_unstable();
        assert_eq!(out, [4, 5, 6, 7, 100, 101, 102]);
    }

    #[test]
    fn codel_runs_per_flow() {
        // a bulk flow builds a standing queue; a sparse flow sends one unit every
        // 10 ms. Served every 1 ms: the bulk flow's units are dropped by its CoDel,
        // the sparse flow's never (each waits less than target).
        let mut q = fq(10_000, 1024, 1514, false);
        let (bulk, sparse) = two_flows(&q);
        for i in 0..2000 {
            q.enqueue(SimTime(0), F::new(i, 1000).flow(bulk)).unwrap();
        }
        let mut sparse_sent = 0;
        for t in 0..1000u64 {
            if t % 10 == 0 {
                q.enqueue(SimTime(t * MS), F::new(9000 + t as u32, 1000).flow(sparse))
                    .unwrap();
            }
            if let Some(f) = q.dequeue(SimTime(t * MS)) {
                sparse_sent += (f.flow == sparse) as u32;
            }
        }
        assert_eq!(sparse_sent, 100, "every sparse unit got through");
        let s = q.stats();
        assert!(s.aqm_drops >= 5, "{s:?}");
        assert_eq!(
            q.flows[q.classify(&F::new(0, 1).flow(sparse))].vars.count,
            0
        );
    }

    #[test]
    fn ecn_is_on_by_default_and_marks() {
        let c = FqCodelSpec::default().resolve("q").unwrap();
        assert!(c.codel.ecn);
        assert_eq!((c.flows, c.quantum), (1024, 1514));
        let mut q = fq(10_000, 1024, 1514, true);
        for i in 0..400 {
            q.enqueue(SimTime(0), F::new(i, 1000).ect()).unwrap();
        }
        let mut marked = 0;
        for t in 0..400u64 {
            marked += (q.dequeue(SimTime(t * MS)).unwrap().ecn == 3) as u64;
        }
        let s = q.stats();
        assert_eq!((s.aqm_drops, s.ce_marks), (0, marked));
        assert!(marked >= 3);
        let bad = FqCodelSpec {
            flows: Some(0),
            ..Default::default()
        };
        assert_eq!(bad.resolve("q").unwrap_err().path, "q.flows");
    }
}
