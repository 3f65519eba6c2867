//! The validated, resolved scenario a driver builds ([`ValidScenario`]): node roles
//! decided once from their kinds, link directions with their resolved stages, flows
//! with their resolved TCP.

use super::spec::NodeKind;
use crate::app::AppConfig;
use crate::l2::atm::PortLimits;
use crate::l2::Layer2Config;
use crate::middlebox::gateway::GatewayConfig;
use crate::net::link::LinkDirConfig;
use crate::tcp::profile::TcpProfile;
use crate::time::SimTime;

/// A `tcp-gateway` node's resolved options and its satellite uplink.
#[derive(Debug, Clone)]
pub struct GatewayInfo {
    pub cfg: GatewayConfig,
    /// The link index of the uplink.
    pub uplink: usize,
}

/// What a node does, decided once from its [`NodeKind`] with what that kind needs.
/// Drivers match it exhaustively: a new kind is a compile error wherever a node is
/// built, and nowhere else.
#[derive(Debug, Clone)]
pub enum NodeRole {
    /// An end system: forwards (routes) and delivers to its local endpoints.
    Host,
    /// Forwards only (a host that no flow starts or ends at works the same).
    Router,
    /// A satellite TCP gateway (ACK-spoofing PEP) on its uplink.
    Gateway(Box<GatewayInfo>),
    /// An ATM switch: its ports' limits and discard policy.
    AtmSwitch(PortLimits),
}

impl NodeRole {
    /// The kind the scenario gave the node.
    pub fn kind(&self) -> NodeKind {
        match self {
            NodeRole::Host => NodeKind::Host,
            NodeRole::Router => NodeKind::Router,
            NodeRole::Gateway(_) => NodeKind::TcpGateway,
            NodeRole::AtmSwitch(_) => NodeKind::AtmSwitch,
        }
    }

    /// An ATM switch's limits (what an ATM line into or out of it needs to know).
    pub fn atm_switch(&self) -> Option<PortLimits> {
        match self {
            NodeRole::AtmSwitch(l) => Some(*l),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub role: NodeRole,
}

/// One direction of a link.
#[derive(Debug, Clone)]
pub struct DirInfo {
    pub link: LinkDirConfig,
    pub layer2: Option<Layer2Config>,
}

#[derive(Debug, Clone)]
pub struct LinkInfo {
    pub a: usize,
    pub b: usize,
    /// How many links between the same two nodes come before this one (0 for the
    /// first): parallel links get their own random streams ([`Self::stream_name`]).
    pub parallel: usize,
    /// [forward a->b, reverse b->a]
    pub dirs: [DirInfo; 2],
}

impl LinkInfo {
    /// `{base}` for the first link between two nodes, `{base}#{n}` for the n-th
    /// (n ≥ 2): the base of a random stream's name (`link/a->b/loss`) that stays the
    /// same when other links or flows are added.
    pub fn stream_name(&self, base: &str) -> String {
        match self.parallel {
            0 => base.to_string(),
            n => format!("{base}#{}", n + 1),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FlowInfo {
    pub id: usize,
    /// The index of its `[[flow]]` table (for a user's flow: of `[[user.flow]]` in its
    /// group).
    pub spec_index: usize,
    /// Where it is written: `flow[i]` or `user[g].flow[j]`.
    pub path: String,
    /// The user it belongs to ([`ValidScenario::users`]), if it is in a `[[user]]` group.
    pub user: Option<usize>,
    pub src: usize,
    pub dst: usize,
    /// The flow's TCP, resolved once (both ends use it).
    pub tcp: TcpProfile,
    /// Bytes of a sized transfer; None = unlimited.
    pub app_bytes: Option<u64>,
    /// When the sender opens the connection.
    pub start: SimTime,
    /// What the flow's endpoints do (`app`): a bulk transfer or an application.
    pub app: AppConfig,
}

#[derive(Debug, Clone)]
pub struct ValidScenario {
    pub name: String,
    pub seed: u64,
    pub duration: SimTime,
    pub warmup: SimTime,
    pub nodes: Vec<NodeInfo>,
    pub links: Vec<LinkInfo>,
    pub flows: Vec<FlowInfo>,
    /// The users of `[[user]]` groups, by name (`NAME#i`), in order; their flows say
    /// which.
    pub users: Vec<String>,
}

impl ValidScenario {
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
}
