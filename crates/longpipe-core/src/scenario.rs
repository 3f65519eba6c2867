//! The scenario file: its top-level shape (serde types), and `validate()`, which checks
//! the references between its parts (node names, uplinks), lets each component resolve
//! its own spec (defaults, units, limits live beside the component), and assembles a
//! [`ValidScenario`] for a driver to build.
//!
//! Error messages name the field path (`link[2].loss.p: must be in [0, 1]`).
//!
//! Why one file of ~920 lines (750 of code, the rest unit tests): the top-level
//! validation that ties the components' specs together (nodes, links, gateways, flows
//! and `[[user]]` groups); each component's own keys are resolved beside it.

use crate::app::{AppConfig, AppSpec};
use crate::error::err;
pub use crate::error::ScenarioError;
use crate::l2::atm::{self, PortLimits, SwitchSpec};
use crate::l2::{Layer2Config, Layer2Spec};
use crate::middlebox::gateway::{GatewayConfig, GatewaySpec};
use crate::net::link::LinkDirConfig;
use crate::net::loss::{LossModel, LossSpec};
use crate::net::queue::{QueueKind, QueueSpec};
use crate::net::schedule::{LinkShape, Outage, ScheduleSpec};
use crate::net::trace::LinkRate;
use crate::tcp::config::{FlowSpec, TcpConfig};
use crate::time::Rate;
use crate::time::{SimDuration, SimTime};
use crate::units::Duration;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

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

// ---------------------------------------------------------------------------------
// Validated, resolved form.

/// A `tcp-gateway` node's resolved options and its satellite uplink.
#[derive(Debug, Clone)]
pub struct GatewayInfo {
    pub cfg: GatewayConfig,
    /// The link index of the uplink.
    pub uplink: usize,
}

#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub kind: NodeKind,
    pub gateway: Option<GatewayInfo>,
    /// An `atm-switch`'s port limits and policy.
    pub atm: Option<PortLimits>,
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
    /// [forward a->b, reverse b->a]
    pub dirs: [DirInfo; 2],
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
    pub tcp: TcpConfig,
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

/// Parses a scenario from JSON text (the Python front end converts TOML and dicts to
/// JSON), with the field path in every error.
pub fn parse_json(text: &str) -> Result<Scenario, ScenarioError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." || path.is_empty() {
            "(top level)".to_string()
        } else {
            one_line(&path)
        };
        let mut msg = e.into_inner().to_string();
        // The JSON position means nothing to a user who wrote TOML: drop it.
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        ScenarioError {
            path,
            msg: one_line(&plain_words(&msg)),
        }
    })
}

/// Control characters (a newline in a key, say) escaped as Python's `repr` does
/// (`\n`, `\x00`), so a message is one line and reads the same from either side.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// serde's messages name Rust types ("expected struct FlowSpec", "expected u32",
/// "untagged enum IwSpec"); a user wrote TOML, so say what the file may contain.
fn plain_words(msg: &str) -> String {
    const UNTAGGED: [(&str, &str); 1] = [(
        "data did not match any variant of untagged enum IwSpec",
        "expected a number of segments (1, 2, ...) or one of \"rfc2414\", \"rfc3390\", \"rfc6928\"",
    )];
    const TYPES: [(&str, &str); 11] = [
        ("expected u8", "expected an integer from 0 to 255"),
        ("expected u16", "expected an integer from 0 to 65535"),
        ("expected u32", "expected an integer from 0 to 4294967295"),
        (
            "expected u64",
            "expected an integer from 0 to 18446744073709551615",
        ),
        ("expected usize", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
        ("invalid type: map", "invalid type: table"),
        ("invalid type: sequence", "invalid type: list"),
    ];
    let mut m = msg.to_string();
    for (from, to) in UNTAGGED.iter().chain(TYPES.iter()) {
        m = m.replace(from, to);
    }
    // "expected struct FlowSpec" (a table of keys) -> "expected a table"
    while let Some(i) = m.find("expected struct ") {
        let rest = &m[i + "expected struct ".len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        m = format!("{}expected a table{}", &m[..i], &rest[end..]);
    }
    m
}

fn resolve_dir(
    p: &str,
    rate: Rate,
    delay: Duration,
    queue: (&str, Option<&QueueSpec>),
    loss: (&str, Option<&LossSpec>),
    layer2: (&str, Option<&Layer2Spec>),
) -> Result<DirInfo, ScenarioError> {
    let loss_model = LossSpec::resolve(loss.1, &format!("{p}.{}", loss.0))?;
    let layer2_cfg = match layer2.1 {
        Some(l) => Some(l.resolve(&format!("{p}.{}", layer2.0))?),
        None => None,
    };
    if layer2_cfg.is_some() && matches!(loss_model, LossModel::Seq { .. }) {
        return err(
            format!("{p}.{}.kind", loss.0),
            "\"seq\" picks TCP segments and cannot apply to a link layer's units",
        );
    }
    let queue_cfg = QueueSpec::resolve(queue.1, &format!("{p}.{}", queue.0))?;
    if layer2_cfg.is_some() && queue_cfg.kind() != QueueKind::Droptail {
        return err(
            format!("{p}.{}.kind", queue.0),
            format!(
                "a link layer buffers its SDUs drop-tail: only \"droptail\" with {}, got {:?}",
                layer2.0,
                queue_cfg.kind().name()
            ),
        );
    }
    Ok(DirInfo {
        link: LinkDirConfig {
            rate,
            delay: delay.0,
            queue: queue_cfg,
            loss: loss_model,
            sched: None,
        },
        layer2: layer2_cfg,
    })
}

impl Scenario {
    pub fn validate(&self) -> Result<ValidScenario, ScenarioError> {
        let duration = self.duration.0;
        if duration.0 == 0 {
            return err("duration", "must be positive");
        }
        let warmup = self.warmup.map(|w| w.0).unwrap_or(SimDuration::ZERO);
        if warmup >= duration {
            return err("warmup", "must be shorter than duration");
        }
        let mut nodes: Vec<NodeInfo> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for (i, n) in self.node.iter().enumerate() {
            if n.name.is_empty() {
                return err(format!("node[{i}].name"), "must not be empty");
            }
            if index.contains_key(&n.name) {
                return err(
                    format!("node[{i}].name"),
                    format!("duplicate node name {:?}", n.name),
                );
            }
            if n.gateway.is_some() && n.kind != NodeKind::TcpGateway {
                return err(
                    format!("node[{i}].gateway"),
                    "only applies to kind = \"tcp-gateway\"",
                );
            }
            if n.atm.is_some() && n.kind != NodeKind::AtmSwitch {
                return err(
                    format!("node[{i}].atm"),
                    "only applies to kind = \"atm-switch\"",
                );
            }
            let atm = (n.kind == NodeKind::AtmSwitch)
                .then(|| {
                    SwitchSpec::resolve(
                        n.atm.as_ref(),
                        self.atm.as_ref(),
                        &format!("node[{i}].atm"),
                    )
                })
                .transpose()?;
            index.insert(n.name.clone(), nodes.len());
            nodes.push(NodeInfo {
                name: n.name.clone(),
                kind: n.kind,
                gateway: None,
                atm,
            });
        }
        if self.link.is_empty() {
            return err("link", "at least one link is required");
        }
        let mut links = Vec::new();
        let mut degree: Vec<usize> = Vec::new();
        for (i, l) in self.link.iter().enumerate() {
            if l.a == l.b {
                return err(
                    format!("link[{i}].b"),
                    format!("a link needs two different nodes, both are {:?}", l.a),
                );
            }
            let mut ends = [0usize; 2];
            for (k, name) in [&l.a, &l.b].into_iter().enumerate() {
                if name.is_empty() {
                    return err(
                        format!("link[{i}].{}", if k == 0 { "a" } else { "b" }),
                        "must not be empty",
                    );
                }
                ends[k] = *index.entry(name.clone()).or_insert_with(|| {
                    nodes.push(NodeInfo {
                        name: name.clone(),
                        kind: NodeKind::Host,
                        gateway: None,
                        atm: None,
                    });
                    nodes.len() - 1
                });
                degree.resize(nodes.len(), 0);
                degree[ends[k]] += 1;
                if degree[ends[k]] > MAX_LINKS_PER_NODE {
                    return err(
                        format!("link[{i}].{}", if k == 0 { "a" } else { "b" }),
                        format!("node {name:?} would have more than {MAX_LINKS_PER_NODE} links (a node's ports are numbered in 16 bits)"),
                    );
                }
            }
            let p = format!("link[{i}]");
            let (rate, trace) = l.rate.resolve(&format!("{p}.rate"))?;
            let (rate_ba, trace_ba) = match &l.rate_ba {
                Some(r) => r.resolve(&format!("{p}.rate_ba"))?,
                None => (rate, trace.clone()),
            };
            let l2_ba = l.layer2.as_ref().and_then(Layer2Spec::reverse_default);
            let mut fwd = resolve_dir(
                &p,
                rate,
                l.delay,
                ("queue", l.queue.as_ref()),
                ("loss", l.loss.as_ref()),
                ("layer2", l.layer2.as_ref()),
            )?;
            let mut rev = resolve_dir(
                &p,
                rate_ba,
                l.delay_ba.unwrap_or(l.delay),
                if l.queue_ba.is_some() {
                    ("queue_ba", l.queue_ba.as_ref())
                } else {
                    ("queue", l.queue.as_ref())
                },
                ("loss_ba", l.loss_ba.as_ref()),
                ("layer2_ba", l.layer2_ba.as_ref().or(l2_ba.as_ref())),
            )?;
            let shape = LinkShape {
                sym_rate: l.rate_ba.is_none(),
                sym_delay: l.delay_ba.is_none(),
                traced: [trace.is_some(), trace_ba.is_some()],
            };
            let parallel = self.link[..i]
                .iter()
                .filter(|o| (&o.a, &o.b) == (&l.a, &l.b) || (&o.a, &o.b) == (&l.b, &l.a))
                .count();
            let stream = match parallel {
                0 => format!("link/{}-{}/schedule", l.a, l.b),
                n => format!("link/{}-{}#{}/schedule", l.a, l.b, n + 1),
            };
            let scheds = crate::net::schedule::resolve(
                &l.schedule,
                shape,
                l.outage.unwrap_or_default(),
                l.reorder.unwrap_or(false),
                [trace, trace_ba],
                &stream,
                &p,
            )?;
            for (k, (d, s)) in [&mut fwd, &mut rev].into_iter().zip(scheds).enumerate() {
                if s.is_active() {
                    if d.layer2.is_some() {
                        let key = match (s.trace.is_some(), k) {
                            (true, 0) => "rate",
                            (true, _) => "rate_ba",
                            (false, _) => "schedule",
                        };
                        return err(
                            format!("{p}.{key}"),
                            "schedules and traces apply to plain link directions, not to a link layer's",
                        );
                    }
                    d.link.sched = Some(Arc::new(s));
                }
            }
            links.push(LinkInfo {
                a: ends[0],
                b: ends[1],
                dirs: [fwd, rev],
            });
        }
        for (i, n) in self.node.iter().enumerate() {
            if n.kind != NodeKind::TcpGateway {
                continue;
            }
            let p = format!("node[{i}].gateway");
            let spec = n.gateway.clone().unwrap_or_default();
            let cfg = spec.resolve(&p)?;
            let idx = index[&n.name];
            let mine: Vec<usize> = (0..links.len())
                .filter(|&li| links[li].a == idx || links[li].b == idx)
                .collect();
            let uplink = match &spec.uplink {
                Some(name) => *mine
                    .iter()
                    .find(|&&li| {
                        let other = if links[li].a == idx {
                            links[li].b
                        } else {
                            links[li].a
                        };
                        nodes[other].name == *name
                    })
                    .ok_or_else(|| {
                        ScenarioError::new(
                            format!("{p}.uplink"),
                            format!("{name:?} is not linked to {:?}", n.name),
                        )
                    })?,
                None => {
                    // the longest round-trip propagation delay; the first listed on a tie
                    let rtt =
                        |li: usize| links[li].dirs[0].link.delay + links[li].dirs[1].link.delay;
                    let Some(&first) = mine.first() else {
                        return err(format!("node[{i}]"), "a tcp-gateway needs a link");
                    };
                    mine.iter().fold(
                        first,
                        |best, &li| if rtt(li) > rtt(best) { li } else { best },
                    )
                }
            };
            nodes[idx].gateway = Some(GatewayInfo { cfg, uplink });
        }
        // The flow count is checked before anything is allocated for it: the `[[flow]]`
        // tables, then each user group's flows once per user.
        let mut total: u64 = 0;
        // (path, table, users it is copied for, group, index in its list)
        let tables: Vec<(String, &FlowSpec, u64, Option<usize>, usize)> = self
            .flow
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("flow[{i}]"), f, 1, None, i))
            .chain(self.user.iter().enumerate().flat_map(|(g, u)| {
                u.flow.iter().enumerate().map(move |(j, f)| {
                    (
                        format!("user[{g}].flow[{j}]"),
                        f,
                        u.count.unwrap_or(1) as u64,
                        Some(g),
                        j,
                    )
                })
            }))
            .collect();
        for (g, u) in self.user.iter().enumerate() {
            if u.count == Some(0) {
                return err(format!("user[{g}].count"), "must be at least 1");
            }
            if u.flow.is_empty() {
                return err(format!("user[{g}].flow"), "a user needs at least one flow");
            }
        }
        for (p, f, users, _, _) in &tables {
            total += f.count.unwrap_or(1) as u64 * users;
            if total > MAX_FLOWS {
                return err(
                    format!("{p}.count"),
                    format!(
                        "the scenario would have {total} or more flows; at most {MAX_FLOWS} \
                         (docs/limits.md)"
                    ),
                );
            }
        }
        let atm_links = links.iter().any(|l| {
            l.dirs
                .iter()
                .any(|d| matches!(d.layer2, Some(Layer2Config::Atm(_))))
        });
        // Resolved tables: (path, spec index, group, src, dst, tcp, app).
        let mut resolved = Vec::with_capacity(tables.len());
        for (p, f, users, group, spec_index) in &tables {
            let src = *index.get(&f.src).ok_or_else(|| ScenarioError {
                path: format!("{p}.src"),
                msg: format!("unknown node {:?}", f.src),
            })?;
            let dst = *index.get(&f.dst).ok_or_else(|| ScenarioError {
                path: format!("{p}.dst"),
                msg: format!("unknown node {:?}", f.dst),
            })?;
            if src == dst {
                return err(format!("{p}.dst"), "must differ from src");
            }
            let tcp = f.resolve(p)?;
            let app = AppSpec::resolve(f.app.as_ref(), &format!("{p}.app"))?;
            if atm_links && (app.is_workload() || group.is_some()) {
                return err(
                    format!("{p}{}", if group.is_some() { "" } else { ".app.kind" }),
                    format!(
                        "{} does not run over ATM links (each VC carries one flow's single \
                         connection): use bulk [[flow]] tables there",
                        if group.is_some() {
                            "a user group".to_string()
                        } else {
                            format!("{:?}", app.kind().name())
                        }
                    ),
                );
            }
            // Each flow is one local endpoint (one port) at its source and destination;
            // an application flow one per connection slot.
            degree.resize(nodes.len(), 0);
            for (end, n) in [("src", src), ("dst", dst)] {
                degree[n] += (tcp.count as u64 * users * app.slots() as u64) as usize;
                if degree[n] > MAX_LINKS_PER_NODE {
                    return err(
                        format!("{p}.count"),
                        format!(
                            "node {:?} ({p}.{end}) would have more than {MAX_LINKS_PER_NODE} \
                             links and flow endpoints (a node's ports are numbered in 16 bits)",
                            nodes[n].name
                        ),
                    );
                }
            }
            resolved.push((p.clone(), *spec_index, *group, src, dst, tcp, app));
        }
        let mut flows = Vec::with_capacity(total as usize);
        let push = |r: &(
            String,
            usize,
            Option<usize>,
            usize,
            usize,
            TcpConfig,
            AppConfig,
        ),
                    user: Option<usize>,
                    flows: &mut Vec<FlowInfo>| {
            for _ in 0..r.5.count {
                flows.push(FlowInfo {
                    id: flows.len(),
                    spec_index: r.1,
                    path: r.0.clone(),
                    user,
                    src: r.3,
                    dst: r.4,
                    tcp: r.5.clone(),
                    app: r.6.clone(),
                });
            }
        };
        for r in resolved.iter().filter(|r| r.2.is_none()) {
            push(r, None, &mut flows);
        }
        let mut users = Vec::new();
        for (g, u) in self.user.iter().enumerate() {
            let name = u.name.clone().unwrap_or_else(|| format!("user[{g}]"));
            for i in 0..u.count.unwrap_or(1) {
                let uid = users.len();
                users.push(format!("{name}#{i}"));
                for r in resolved.iter().filter(|r| r.2 == Some(g)) {
                    push(r, Some(uid), &mut flows);
                }
            }
        }
        self.check_atm(&nodes, &links, &flows)?;
        Ok(ValidScenario {
            name: self.name.clone().unwrap_or_else(|| "scenario".into()),
            seed: self.seed.unwrap_or(1),
            duration: SimTime(duration.0),
            warmup: SimTime(warmup.0),
            nodes,
            links,
            flows,
            users,
        })
    }
}

impl Scenario {
    /// The ATM rules that tie switches, ATM links and flows together.
    fn check_atm(
        &self,
        nodes: &[NodeInfo],
        links: &[LinkInfo],
        flows: &[FlowInfo],
    ) -> Result<(), ScenarioError> {
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        let switch: Vec<bool> = nodes.iter().map(|n| n.atm.is_some()).collect();
        fn atm_of(d: &DirInfo) -> Option<&atm::AtmLineConfig> {
            match &d.layer2 {
                Some(Layer2Config::Atm(c)) => Some(c),
                _ => None,
            }
        }
        let views: Vec<atm::config::LinkView> = links
            .iter()
            .zip(&self.link)
            .map(|(l, s)| atm::config::LinkView {
                a: l.a,
                b: l.b,
                atm: [atm_of(&l.dirs[0]), atm_of(&l.dirs[1])],
                other_layer2: [0, 1]
                    .map(|k| l.dirs[k].layer2.is_some() && atm_of(&l.dirs[k]).is_none()),
                rates: [l.dirs[0].link.rate, l.dirs[1].link.rate],
                queue_given: [s.queue.is_some(), s.queue_ba.is_some()],
            })
            .collect();
        let fl: Vec<(usize, usize, usize)> =
            flows.iter().map(|f| (f.src, f.dst, f.spec_index)).collect();
        atm::config::check_topology(&names, &switch, &views, &fl, self.atm.is_some())
    }
}

/// The JSON Schema of the scenario file.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Scenario);
    serde_json::to_string_pretty(&schema).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Rate;

    fn parse(s: &str) -> Result<ValidScenario, ScenarioError> {
        parse_json(s)?.validate()
    }

    const BASE: &str = r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"10ms"}],
        "flow":[{"src":"s","dst":"c"}]}"#;

    #[test]
    fn minimal_resolves() {
        let v = parse(BASE).unwrap();
        assert_eq!(v.nodes.len(), 2);
        assert_eq!(v.flows[0].tcp.sender.mss, 1460);
        assert_eq!(v.links[0].dirs[1].link.rate, Rate(10_000_000));
    }

    #[test]
    fn unknown_key_names_path() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms","colour":1}]}"#)
            .unwrap_err();
        assert!(e.path.starts_with("link[0]"), "{e}");
        assert!(e.msg.contains("colour"), "{e}");
    }

    #[test]
    fn bad_probability_and_rate() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms","loss":{"kind":"bernoulli","p":1.5}}]}"#).unwrap_err();
        assert_eq!(e.path, "link[0].loss.p");
        let e = parse(
            r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"-10Mbps","delay":"1ms"}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.path, "link[0].rate");
    }

    #[test]
    fn a_node_has_at_most_65534_links() {
        // One more would wrap its 16-bit port numbers (and reach the no-route marker).
        let star = |n: usize| {
            let links: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"a":"h{i}","b":"hub","rate":"1Mbps","delay":"1ms"}}"#))
                .collect();
            format!(r#"{{"duration":"1s","link":[{}]}}"#, links.join(","))
        };
        assert!(parse(&star(MAX_LINKS_PER_NODE)).is_ok());
        let e = parse(&star(MAX_LINKS_PER_NODE + 1)).unwrap_err();
        assert_eq!(e.path, format!("link[{MAX_LINKS_PER_NODE}].b"), "{e}");
        assert!(e.msg.contains("\"hub\"") && e.msg.contains("65534"), "{e}");
        // flows' endpoints take ports too: one link plus 65533 flows fit, one more not
        let flows = |n: usize| {
            format!(
                r#"{{"duration":"1s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms"}}],
                "flow":[{{"src":"s","dst":"c","count":{n}}}]}}"#
            )
        };
        assert!(parse(&flows(MAX_LINKS_PER_NODE - 1)).is_ok());
        let e = parse(&flows(MAX_LINKS_PER_NODE)).unwrap_err();
        assert_eq!(e.path, "flow[0].count", "{e}");
        assert!(e.msg.contains("flow[0].src"), "{e}");
    }

    #[test]
    fn a_link_layer_takes_no_queue_discipline() {
        let l2 = r#""layer2":{"kind":"rlc-am"}"#;
        let link = |q: &str| {
            format!(
                r#"{{"duration":"10s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms",{l2}{q}}}]}}"#
            )
        };
        assert!(parse(&link("")).is_ok());
        assert!(parse(&link(r#","queue":{"limit":"50pkt","kind":"droptail"}"#)).is_ok());
        let e = parse(&link(r#","queue":{"kind":"codel"}"#)).unwrap_err();
        assert_eq!(e.path, "link[0].queue.kind");
        assert!(e.msg.contains("\"codel\""), "{e}");
        // the reverse direction takes queue_ba when given
        let e = parse(&link(
            r#","layer2_ba":{"kind":"rlc-am"},"queue_ba":{"kind":"red"}"#,
        ))
        .unwrap_err();
        assert_eq!(e.path, "link[0].queue_ba.kind");
    }

    #[test]
    fn unknown_node() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms"}],"flow":[{"src":"s","dst":"x"}]}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].dst");
    }

    #[test]
    fn iw_rules() {
        let v = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":"rfc3390""#)).unwrap();
        assert_eq!(v.flows[0].tcp.sender.iw_bytes, 4380);
        let v =
            parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":"rfc6928","mss":1000"#)).unwrap();
        assert_eq!(v.flows[0].tcp.sender.iw_bytes, 10_000);
        let v = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":3,"count":4"#)).unwrap();
        assert_eq!(v.flows.len(), 4);
        assert_eq!(v.flows[3].tcp.sender.iw_bytes, 3 * 1460);
    }

    #[test]
    fn messages_name_no_rust_types() {
        let bad = [
            (r#""iw":"bogus""#, "rfc3390"),
            (r#""iw":true"#, "rfc3390"),
            (r#""mss":"x""#, "integer from 0 to 4294967295"),
            (r#""mss":-1"#, "integer from 0 to 4294967295"),
            (r#""count":1.5"#, "integer"),
            (r#""sack":"yes""#, "true or false"),
        ];
        for (field, want) in bad {
            let e =
                parse(&BASE.replace(r#""dst":"c""#, &format!(r#""dst":"c",{field}"#))).unwrap_err();
            assert!(e.msg.contains(want), "{field}: {e}");
            for rust in ["untagged", "struct", "IwSpec", "u32", "f64", "i64"] {
                assert!(!e.msg.contains(rust), "{field}: {e}");
            }
        }
        let e = parse(r#"{"duration":"10s","link":[],"flow":[1]}"#).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.msg.contains("expected a table")),
            ("flow[0]", true),
            "{e}"
        );
        let e = parse(r#"{"duration":"10s","link":{}}"#).unwrap_err();
        assert!(e.msg.contains("table") && e.msg.contains("list"), "{e}");
    }

    #[test]
    fn messages_are_one_line_and_paths_never_empty() {
        let e = parse(r#"{"duration":"10s","link":[],"":1}"#).unwrap_err();
        assert!(!e.path.is_empty(), "{e:?}");
        let e = parse("{\"duration\":\"10s\",\"link\":[],\"a\\nb\":1}").unwrap_err();
        assert!(
            !e.to_string().contains('\n') && e.msg.contains("a\\nb"),
            "{e:?}"
        );
    }

    #[test]
    fn flow_count_is_bounded_before_allocation() {
        let e =
            parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","count":4294967295"#)).unwrap_err();
        assert_eq!(e.path, "flow[0].count");
        assert!(e.msg.contains("1000000"), "{e}");
        let ok = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","count":1000"#)).unwrap();
        assert_eq!(ok.flows.len(), 1000);
    }

    #[test]
    fn timers_have_a_floor() {
        for key in ["initial_rto", "min_rto", "delayed_ack_timeout"] {
            for v in ["0s", "999us"] {
                let e =
                    parse(&BASE.replace(r#""dst":"c""#, &format!(r#""dst":"c","{key}":"{v}""#)))
                        .unwrap_err();
                assert_eq!(e.path, format!("flow[0].{key}"), "{e}");
            }
            parse(&BASE.replace(r#""dst":"c""#, &format!(r#""dst":"c","{key}":"1ms""#))).unwrap();
        }
    }

    #[test]
    fn schema_mentions_keys() {
        let s = json_schema();
        assert!(s.contains("delayed_ack") && s.contains("bernoulli"));
    }
}
