//! The result contract (DESIGN.md "Result"): serialized as one JSON document. Field
//! order is fixed by the struct order, so output bytes are deterministic; the result
//! holds nothing that varies between identical runs (no wall time).
//!
//! Counters are the elements' own counter structs, flattened in: nothing is copied
//! field by field.

use crate::app::records::{FlowApp, UserResult, Workload};
use crate::l2::atm::report::{AtmLineReport, AtmReport};
use crate::l2::rlc::{RlcCounters, RlcReport};
use crate::l2::DirCounters;
use crate::middlebox::gateway::GatewayCounters;
use crate::net::link::{ClassCounters, LinkCounters};
pub use crate::stats::fairness_jain;
use crate::stats::Peak;
use crate::tcp::profile::ProfileReport;
use crate::tcp::sender::SenderCounters;
use crate::tcp::tx::ExtraCounters;
use schemars::JsonSchema;
use serde::Serialize;

/// One flow of a result (`flows[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FlowResult {
    pub id: usize,
    pub src: String,
    pub dst: String,
    pub tcp: String,
    /// The flow's resolved TCP profile: what ran (the stack, congestion control and loss
    /// recovery, and every default that applied).
    pub profile: ProfileReport,
    /// Bytes delivered in order to the receiving application between
    /// max(start, warmup) and the completion time (or the end of the run), × 8 / span.
    pub goodput_bps: f64,
    /// Bytes delivered in order at or after warmup.
    pub bytes_delivered: u64,
    /// Data segments sent (incl. retransmissions), retransmissions, timeouts and
    /// fast-recovery episodes, at or after warmup.
    #[serde(flatten)]
    pub sender: SenderCounters,
    /// probe_segments, probe_acks, ecn_reductions: only for flows that send
    /// low-priority probes or use ECN.
    #[serde(flatten)]
    pub extra: Option<ExtraCounters>,
    /// From the flow's start (SYN) to the delivery of its last byte; null if unfinished.
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub completion_time_s: Option<f64>,
    /// Mean of the sender's RTT samples (Karn-valid), null if none.
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub mean_rtt_s: Option<f64>,
    pub mss: u32,
    pub start_s: f64,
    /// An application flow's figures (one user's): only for kinds other than bulk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<FlowApp>,
}

/// One direction of a link (`links[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LinkResult {
    pub a: String,
    pub b: String,
    /// "forward" = a->b as declared, "reverse" = b->a (here `a` is the sending node).
    pub dir: String,
    /// Fraction of the measured time the transmitter was busy (for a link layer: see
    /// its report).
    pub utilization: f64,
    /// packets, bytes, drops_queue, drops_loss, max_queue_packets.
    #[serde(flatten)]
    pub counters: LinkCounters,
    /// packets_low, drops_queue_low, drops_loss_low, drops_aqm, marks_ecn: only when
    /// the scenario has a queue other than drop-tail, or a flow that sends
    /// low-priority segments or uses ECN (so that other results keep their fields).
    #[serde(flatten)]
    pub classes: Option<ClassCounters>,
    /// Link-layer counters when the direction has a `layer2` (then `packets` counts SDUs
    /// accepted, `drops_queue` SDU-buffer overflows, `drops_loss` SDUs discarded after
    /// MaxDAT, and `utilization` the share of PDU slots used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2Report>,
}

impl LinkResult {
    /// "forward" for a link's a->b direction (even index `i` of 2 × link + direction),
    /// "reverse" for b->a.
    pub fn dir_name(i: usize) -> &'static str {
        if i.is_multiple_of(2) {
            "forward"
        } else {
            "reverse"
        }
    }

    /// A link direction (plain or with a link layer) from `a` to `b`: its counters over a
    /// measured interval of `measured_s` seconds.
    pub fn from_dir(a: String, b: String, i: usize, c: &DirCounters, measured_s: f64) -> Self {
        match c {
            DirCounters::Link(c) => Self::from_link(a, b, i, c, measured_s),
            DirCounters::Rlc(c) => Self::from_rlc(a, b, i, c),
        }
    }

    /// A plain link direction from `a` to `b`: its counters over a measured interval of
    /// `measured_s` seconds (`utilization` is the transmitter's busy share).
    pub fn from_link(a: String, b: String, i: usize, c: &LinkCounters, measured_s: f64) -> Self {
        LinkResult {
            a,
            b,
            dir: Self::dir_name(i).into(),
            utilization: if measured_s > 0.0 {
                c.busy_ns as f64 * 1e-9 / measured_s
            } else {
                0.0
            },
            counters: c.clone(),
            classes: None,
            l2: None,
        }
    }

    /// With the per-class and AQM counters when `on` (the scenario reports them:
    /// [`crate::sim::reports_classes`]).
    pub fn with_classes(mut self, on: bool) -> Self {
        self.classes = on.then(|| (*self.counters.class).clone());
        self
    }

    /// An RLC AM direction: SDUs in the link fields, PDUs and delays in `l2`.
    pub fn from_rlc(a: String, b: String, i: usize, c: &RlcCounters) -> Self {
        LinkResult {
            a,
            b,
            dir: Self::dir_name(i).into(),
            utilization: c.utilization(),
            counters: LinkCounters {
                packets: c.sdus_in,
                bytes: 0,
                drops_queue: c.sdus_dropped_queue,
                drops_loss: c.sdus_discarded,
                max_queue: Peak(0),
                busy_ns: 0,
                ..LinkCounters::default()
            },
            classes: None,
            l2: Some(L2Report::RlcAm(c.report(c.pdus_per_tti.0))),
        }
    }
}

/// A link layer's report, tagged by its kind.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind")]
pub enum L2Report {
    #[serde(rename = "rlc-am")]
    RlcAm(RlcReport),
    #[serde(rename = "atm")]
    Atm(AtmLineReport),
}

impl L2Report {
    /// The RLC report, if this is one.
    pub fn rlc(&self) -> Option<&RlcReport> {
        match self {
            L2Report::RlcAm(r) => Some(r),
            _ => None,
        }
    }

    /// The ATM report, if this is one.
    pub fn atm(&self) -> Option<&AtmLineReport> {
        match self {
            L2Report::Atm(r) => Some(r),
            _ => None,
        }
    }
}

/// One TCP gateway node (`gateways[]`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GatewayResult {
    pub node: String,
    #[serde(flatten)]
    pub counters: GatewayCounters,
    /// Spoof mode: bytes the client acknowledged ÷ bytes sent toward it (null if none
    /// were sent).
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub satellite_efficiency: Option<f64>,
}

/// What `longpipe emu` adds to a result (`emu`; an emulated run only). Typed here: the
/// gateway daemons it ran (`emu.gateways[]`); its other fields (kernel, congestion
/// controls, unmapped options, ferry counters, device drops) are described in
/// docs/emulation.md.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct EmuReport {
    /// One per `tcp-gateway` node: the real daemon in its namespace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub gateways: Vec<EmuGateway>,
}

/// A `tcp-gateway` node emulated by the real daemon (`longpipe gateway run`): how it
/// ran and its stop summary. In spoof mode the core gateway's counters are the
/// result's `gateways[]` entry, as in a simulated run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EmuGateway {
    pub node: String,
    /// "spoof" or "split".
    pub mode: String,
    /// The daemon's arguments after `run` (the node's `gateway` table as flags).
    pub args: Vec<String>,
    /// Gateway options the daemon has no flag for, one line each.
    pub unmapped: Vec<String>,
    /// The daemon's exit status (0: stopped cleanly; null: killed).
    #[schemars(with = "crate::results::Nullable<i32>")]
    pub exit: Option<i32>,
    /// From its stop summary (null if it gave none).
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub uptime_s: Option<f64>,
    /// The most connections it held at once.
    #[schemars(with = "crate::results::Nullable<u64>")]
    pub conns_peak: Option<u64>,
    /// Spoof mode: bytes the servers saw acknowledged that never reached the clients.
    #[schemars(with = "crate::results::Nullable<u64>")]
    pub acked_undelivered_bytes: Option<u64>,
    /// Bytes it held when it stopped (split: read and not yet written).
    #[schemars(with = "crate::results::Nullable<u64>")]
    pub held_bytes: Option<u64>,
    /// Connections reset on both ends at the stop (the flows are cut at `duration`).
    #[schemars(with = "crate::results::Nullable<u64>")]
    pub reset_conns: Option<u64>,
    /// Split mode: the relay's counters.
    #[schemars(with = "crate::results::Nullable<EmuSplitCounters>")]
    pub split: Option<EmuSplitCounters>,
    /// Its last lines on stderr (the stop report).
    pub stderr_tail: Vec<String>,
}

/// The split daemon's relay counters (its stop summary's `split`).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, JsonSchema)]
pub struct EmuSplitCounters {
    pub opened: u64,
    pub closed: u64,
    /// Reset at once: over `max_conns`, or while stopping.
    pub refused: u64,
    pub connect_errors: u64,
    pub resets: u64,
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
}

/// A node of the scenario and its IPv4 address (as in pcaps).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NodeResult {
    pub name: String,
    pub kind: String,
    pub ipv4: String,
}

impl NodeResult {
    /// Every node of the scenario, in order.
    pub fn all(sc: &crate::scenario::ValidScenario) -> Vec<NodeResult> {
        sc.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let a = crate::net::packet::node_addr(i);
                NodeResult {
                    name: n.name.clone(),
                    kind: n.role.kind().name().to_string(),
                    ipv4: format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
                }
            })
            .collect()
    }
}

/// The simulator's own figures (`sim`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SimStats {
    /// Events the simulator ran (including skipped stale timer events).
    pub events: u64,
}

/// A simulation's result: the document `longpipe run` writes (DESIGN.md "Result").
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SimResult {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    /// Jain's index over flow goodputs; null if no flow delivered anything.
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub fairness_jain: Option<f64>,
    /// TCP gateway counters (only when the scenario has `tcp-gateway` nodes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub gateways: Vec<GatewayResult>,
    pub nodes: Vec<NodeResult>,
    /// Per-VC ATM counters (only when the scenario has ATM links).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atm: Option<AtmReport>,
    /// The users of `[[user]]` groups (only when the scenario has some).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub users: Vec<UserResult>,
    /// Pages, requests, chunks and transfers of the applications, and per-user figures
    /// across users (only when a flow's application is not bulk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    pub sim: SimStats,
    /// What the emulator adds (`longpipe emu` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emu: Option<EmuReport>,
}

impl SimResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result serializes")
    }
}

/// In the result schema, an `Option` field that is always serialized (as `null` when
/// `None`): required, and nullable. (schemars takes every `Option` field as one that
/// may be left out, which is true of deserializing, not of our output.)
pub struct Nullable<T>(std::marker::PhantomData<T>);

impl<T: JsonSchema> JsonSchema for Nullable<T> {
    fn is_referenceable() -> bool {
        false
    }
    fn schema_name() -> String {
        <Option<T>>::schema_name()
    }
    fn json_schema(gen: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        <Option<T>>::json_schema(gen)
    }
}

/// The JSON Schema of the result document (`longpipe schema --result`), derived from
/// the same structs that serialize it, so it cannot drift from the output.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(SimResult);
    serde_json::to_string_pretty(&schema).expect("schema serializes")
}
