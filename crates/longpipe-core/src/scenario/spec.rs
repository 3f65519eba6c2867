//! The scenario file's shape: serde types, as a user writes them (TOML file or Python
//! dict; the same keys). Each component's own keys are its spec type, beside it.

use crate::l2::atm::SwitchSpec;
use crate::l2::Layer2Spec;
use crate::middlebox::gateway::GatewaySpec;
use crate::net::loss::LossSpec;
use crate::net::queue::QueueSpec;
use crate::net::schedule::{Outage, ScheduleSpec};
use crate::net::trace::LinkRate;
use crate::tcp::config::FlowSpec;
use crate::units::Duration;
use schemars::JsonSchema;
use serde::Deserialize;

/// The most flows a scenario may have (after `count`): each costs a few kB of state.
pub const MAX_FLOWS: u64 = 1_000_000;

/// At most this many links and flow endpoints at one node: its ports are numbered in 16
/// bits and `PortId::MAX` means "no route" in the routing table.
pub const MAX_LINKS_PER_NODE: usize = u16::MAX as usize - 1;

/// A simulation scenario (TOML file or Python dict; same keys).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free-form name, echoed in results.
    #[serde(default)]
    pub name: Option<String>,
    /// Simulated time (required).
    pub duration: Duration,
    /// Master seed (default 1); every random stream is derived from it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Statistics ignore traffic before this time (default 0 s).
    #[serde(default)]
    pub warmup: Option<Duration>,
    /// Optional node declarations; nodes are otherwise implied by links.
    #[serde(default)]
    pub node: Vec<NodeSpec>,
    /// Duplex links; direction a->b is "forward".
    pub link: Vec<LinkSpec>,
    /// TCP flows.
    #[serde(default)]
    pub flow: Vec<FlowSpec>,
    /// Groups of users, each user with the flows listed (`[[user.flow]]`).
    #[serde(default)]
    pub user: Vec<UserSpec>,
    /// Defaults of every `atm-switch` (policy, buffer, thresholds).
    #[serde(default)]
    pub atm: Option<SwitchSpec>,
}

/// `count` users, each with its own copy of the flows listed (a web session and a
/// video stream, say); per-user results add up each user's flows.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    /// Users are named NAME#0, NAME#1, ... (default "user[i]").
    #[serde(default)]
    pub name: Option<String>,
    /// Users in the group (default 1).
    #[serde(default)]
    pub count: Option<u32>,
    /// Each user's flows, as `[[flow]]` tables.
    pub flow: Vec<FlowSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    #[default]
    Host,
    Router,
    /// A satellite TCP gateway (ACK-spoofing PEP); options in `gateway`.
    TcpGateway,
    /// An ATM switch: cells between ATM links; options in `atm`.
    AtmSwitch,
}

impl NodeKind {
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Host => "host",
            NodeKind::Router => "router",
            NodeKind::TcpGateway => "tcp-gateway",
            NodeKind::AtmSwitch => "atm-switch",
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub kind: NodeKind,
    /// Options of a `tcp-gateway` node.
    #[serde(default)]
    pub gateway: Option<GatewaySpec>,
    /// Options of an `atm-switch` node (defaults from the scenario's `[atm]`).
    #[serde(default)]
    pub atm: Option<SwitchSpec>,
}

/// A duplex link: two directions, each a queue, a transmitter, a loss model and a delay
/// (or a link layer).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// Line rate a->b (and b->a unless rate_ba is given), or a Mahimahi trace
    /// (`{ trace = "file.up" }`).
    pub rate: LinkRate,
    #[serde(default)]
    pub rate_ba: Option<LinkRate>,
    /// One-way propagation delay a->b (and b->a unless delay_ba is given).
    pub delay: Duration,
    #[serde(default)]
    pub delay_ba: Option<Duration>,
    /// Queue at the a end (and at the b end unless queue_ba is given).
    #[serde(default)]
    pub queue: Option<QueueSpec>,
    #[serde(default)]
    pub queue_ba: Option<QueueSpec>,
    /// Loss model a->b.
    #[serde(default)]
    pub loss: Option<LossSpec>,
    /// Loss model b->a.
    #[serde(default)]
    pub loss_ba: Option<LossSpec>,
    /// Link layer a->b (e.g. `{ kind = "rlc-am" }`); its loss model then applies per
    /// link-layer unit (PDU), and `queue` limits its SDU buffer.
    #[serde(default)]
    pub layer2: Option<Layer2Spec>,
    /// Link layer b->a.
    #[serde(default)]
    pub layer2_ba: Option<Layer2Spec>,
    /// Changes over time (`[[link.schedule]]`, net/schedule.rs).
    #[serde(default)]
    pub schedule: Vec<ScheduleSpec>,
    /// What an outage does to units: "drop" (default) or "hold".
    #[serde(default)]
    pub outage: Option<Outage>,
    /// Let a unit overtake earlier ones when the delay drops (default false: FIFO).
    #[serde(default)]
    pub reorder: Option<bool>,
}
