//! The scenario: serde types (the one place the schema is defined) and `validate()`,
//! which resolves names and defaults into a [`ValidScenario`] the engine runs.
//!
//! Error messages name the field path (`link[2].loss.p: must be in [0, 1]`).

use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{Bytes, Duration, Limit, LimitQ, RateQ};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A scenario input error: the field path and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {msg}")]
pub struct ScenarioError {
    pub path: String,
    pub msg: String,
}

fn err<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError {
        path: path.into(),
        msg: msg.into(),
    })
}

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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    #[default]
    Host,
    Router,
    /// A satellite TCP gateway (ACK-spoofing PEP); options in `gateway`.
    TcpGateway,
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
}

/// Options of a `tcp-gateway` node (seed 003's one-sided gateway).
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
    /// "spoof" (ACK spoofing, the paper's gateway; default) or "split" (terminate the
    /// server's connection and open a second one to the client, as PEPsal).
    #[serde(default)]
    pub mode: Option<GatewayMode>,
    /// Split mode: congestion control toward the client (default newreno).
    #[serde(default)]
    pub tcp: Option<TcpKind>,
    /// Split mode: offer SACK toward the client (default false).
    #[serde(default)]
    pub sack: Option<bool>,
    /// Split mode: initial window toward the client, segments (default 1).
    #[serde(default)]
    pub iw: Option<u32>,
    /// Buffer per connection (default 1MB).
    #[serde(default)]
    pub buffer: Option<Bytes>,
    /// Satellite-side window (default: the largest bandwidth-delay product of the
    /// gateway's links, rate x round-trip propagation delay).
    #[serde(default)]
    pub window: Option<Bytes>,
    /// Pace transmissions toward the client at this rate (default: no pacing).
    #[serde(default)]
    pub pace: Option<RateQ>,
    /// Duplicate ACKs that trigger go-back-N (default 3).
    #[serde(default)]
    pub dupthresh: Option<u32>,
    /// Minimum satellite-side RTO (default 1s).
    #[serde(default)]
    pub min_rto: Option<Duration>,
    /// The gateway fails (drops all state and traffic) at this time: fate-sharing tests.
    #[serde(default)]
    pub fail_at: Option<Duration>,
    /// After a go-back-N, ignore duplicate ACKs until everything then outstanding is
    /// acknowledged (default true; false = only the paper's echo suppression).
    #[serde(default)]
    pub recover_guard: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GatewayMode {
    Spoof,
    Split,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    /// FIFO, arrivals dropped when full.
    #[default]
    Droptail,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// Capacity: "1000pkt" or bytes ("64KB"). Default 100pkt. The packet in
    /// transmission is not counted.
    #[serde(default)]
    pub limit: Option<LimitQ>,
    #[serde(default)]
    pub kind: QueueKind,
}

/// Per-direction loss model, applied to each packet as it leaves the transmitter.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LossSpec {
    /// Each packet independently lost with probability p.
    Bernoulli { p: f64 },
    /// Independent bit errors: P(loss) = 1 - (1 - ber)^(8 * bytes).
    Ber { ber: f64 },
    /// Two-state Gilbert-Elliott chain, stepped once per packet: good->bad with
    /// probability p_gb, bad->good with p_bg; loss probability loss_good / loss_bad.
    Gilbert {
        p_gb: f64,
        p_bg: f64,
        #[serde(default)]
        loss_good: Option<f64>,
        #[serde(default)]
        loss_bad: Option<f64>,
    },
    /// Drop exactly the packets with these 0-based indices, counted over every packet
    /// that leaves this link direction (SYN = 0, ...). For exact tests.
    List { drop: Vec<u64> },
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// Line rate a->b (and b->a unless rate_ba is given).
    pub rate: RateQ,
    #[serde(default)]
    pub rate_ba: Option<RateQ>,
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
}

/// A link layer on one direction.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Layer2Spec {
    /// 3GPP TS 25.322 RLC acknowledged mode; the link rate is the bearer's payload rate.
    RlcAm {
        /// PDU payload octets (default 40).
        #[serde(default)]
        pdu_payload: Option<u32>,
        /// PDU header octets (default 2).
        #[serde(default)]
        header: Option<u32>,
        /// Transmission time interval (default 10ms).
        #[serde(default)]
        tti: Option<Duration>,
        /// Transmit window in PDUs (default 512).
        #[serde(default)]
        window: Option<u32>,
        /// Maximum transmissions of a PDU before its SDUs are discarded (default 15).
        #[serde(default)]
        max_dat: Option<u32>,
        /// Poll every this many new PDUs (default 0 = off).
        #[serde(default)]
        poll_pdu: Option<u32>,
        /// Poll when the transmit window is this % full and no poll is outstanding
        /// (default 50; 0 = off).
        #[serde(default)]
        poll_window: Option<u32>,
        /// Timer_Poll (default 200ms).
        #[serde(default)]
        poll_timer: Option<Duration>,
        /// Timer_Poll_Prohibit (default 0ms).
        #[serde(default)]
        poll_prohibit: Option<Duration>,
        /// Timer_Status_Prohibit (default 50ms).
        #[serde(default)]
        status_prohibit: Option<Duration>,
        /// Processing delay per PDU (default 0).
        #[serde(default)]
        pdu_delay: Option<Duration>,
        /// Processing delay per SDU at delivery (default 0).
        #[serde(default)]
        sdu_delay: Option<Duration>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TcpKind {
    /// 4.3BSD Tahoe: fast retransmit, then slow start from 1 MSS; no fast recovery.
    Tahoe,
    /// RFC 5681 Reno: fast recovery exits on the first new ACK.
    Reno,
    /// RFC 6582 NewReno: fast recovery with partial ACKs.
    #[default]
    Newreno,
    /// TCP Hybla (Caini & Firrincieli 2004) window growth with NewReno loss recovery;
    /// options in `hybla`.
    Hybla,
}

impl TcpKind {
    pub fn name(self) -> &'static str {
        match self {
            TcpKind::Tahoe => "tahoe",
            TcpKind::Reno => "reno",
            TcpKind::Newreno => "newreno",
            TcpKind::Hybla => "hybla",
        }
    }
}

/// Initial window: segments, or a named RFC rule.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IwSpec {
    Segments(u32),
    Rule(IwRule),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IwRule {
    /// min(4*MSS, max(2*MSS, 4380 B))
    Rfc2414,
    /// same rule as RFC 2414
    Rfc3390,
    /// min(10*MSS, max(2*MSS, 14600 B))
    Rfc6928,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PartialAckTimer {
    #[default]
    First,
    Every,
}

/// Options of `tcp = "hybla"`.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct HyblaSpec {
    /// Reference RTT (default 25ms, as Linux).
    #[serde(default)]
    pub rtt0: Option<Duration>,
    /// "fixed" (Linux fixed-point, default) or "float" (the paper's real-valued form).
    #[serde(default)]
    pub arithmetic: Option<HyblaArithSpec>,
    /// RTT for rho: "min-srtt" (Linux, default) or "min-rtt" (smallest sample).
    #[serde(default)]
    pub rho_from: Option<RhoFromSpec>,
    /// Initial window: "rho" (Linux: floor(rho) segments, default), "iw" (the flow's iw),
    /// "iw-times-rho" (ns-3).
    #[serde(default)]
    pub initial_window: Option<HyblaIwSpec>,
    /// ssthresh after a loss: "flight" (max(FlightSize/2, 2 MSS), as NewReno and ns-2;
    /// default) or "cwnd" (Linux: max(cwnd/2, 2)).
    #[serde(default)]
    pub ssthresh: Option<HyblaSsthreshSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HyblaSsthreshSpec {
    Flight,
    Cwnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HyblaArithSpec {
    Fixed,
    Float,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RhoFromSpec {
    MinSrtt,
    MinRtt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HyblaIwSpec {
    Rho,
    Iw,
    IwTimesRho,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AppKind {
    /// Send as fast as TCP allows; `bytes` limits the transfer.
    #[default]
    Bulk,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    #[serde(default)]
    pub kind: AppKind,
    /// Transfer size; unlimited when absent.
    #[serde(default)]
    pub bytes: Option<Bytes>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub src: String,
    pub dst: String,
    #[serde(default)]
    pub tcp: TcpKind,
    /// Sender maximum segment size (payload bytes). Default 1460.
    #[serde(default)]
    pub mss: Option<u32>,
    /// Alternative to mss: mss = mtu - 40.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Receiver buffer = advertised window (window scaling negotiated when > 65535 B).
    /// Default 64KiB.
    #[serde(default)]
    pub rwnd: Option<Bytes>,
    /// Initial window in segments or "rfc2414" | "rfc3390" | "rfc6928". Default 1.
    #[serde(default)]
    pub iw: Option<IwSpec>,
    /// Initial slow-start threshold in segments (default: arbitrarily high, RFC 5681).
    #[serde(default)]
    pub ssthresh: Option<u32>,
    /// Options of `tcp = "hybla"`.
    #[serde(default)]
    pub hybla: Option<HyblaSpec>,
    /// NewReno RTO timer on partial ACKs (RFC 6582 §4): "first" (Impatient, default:
    /// reset on the first partial ACK only) or "every" (Slow-but-Steady, ns-2's default).
    #[serde(default)]
    pub partial_ack_timer: Option<PartialAckTimer>,
    /// RFC 3042 Limited Transmit: a new segment on each of the first two duplicate ACKs
    /// (default false).
    #[serde(default)]
    pub limited_transmit: bool,
    /// SACK (RFC 2018 option, RFC 6675 loss recovery) when both ends have it. Default false.
    #[serde(default)]
    pub sack: bool,
    /// Receiver delays ACKs (every second full segment, 200 ms timer). Default true.
    #[serde(default)]
    pub delayed_ack: Option<bool>,
    /// Delayed-ACK timer. Default 200ms.
    #[serde(default)]
    pub delayed_ack_timeout: Option<Duration>,
    /// Minimum RTO (RFC 6298 says 1 s; Linux uses 200 ms). Default 1s.
    #[serde(default)]
    pub min_rto: Option<Duration>,
    /// Initial RTO (RFC 6298 (2.1)). Default 1s.
    #[serde(default)]
    pub initial_rto: Option<Duration>,
    /// Maximum RTO (RFC 6298 (2.5)). Default 60s.
    #[serde(default)]
    pub max_rto: Option<Duration>,
    #[serde(default)]
    pub app: Option<AppSpec>,
    #[serde(default)]
    pub start: Option<Duration>,
    /// Replicate this flow `count` times (ids are consecutive).
    #[serde(default)]
    pub count: Option<u32>,
}

// ---------------------------------------------------------------------------------
// Validated, resolved form.

#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub name: String,
    pub kind: NodeKind,
    pub gateway: Option<crate::middlebox::gateway::GatewayConfig>,
}

#[derive(Debug, Clone)]
pub enum LossModel {
    None,
    Bernoulli {
        p: f64,
    },
    Ber {
        ber: f64,
    },
    Gilbert {
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    List {
        drop: Vec<u64>,
    },
}

#[derive(Debug, Clone)]
pub struct DirInfo {
    pub rate: Rate,
    pub delay: SimDuration,
    pub limit: Limit,
    pub loss: LossModel,
    pub layer2: Option<crate::l2::rlc::RlcConfig>,
}

fn resolve_layer2(
    path: &str,
    l: &Option<Layer2Spec>,
) -> Result<Option<crate::l2::rlc::RlcConfig>, ScenarioError> {
    let Some(Layer2Spec::RlcAm {
        pdu_payload,
        header,
        tti,
        window,
        max_dat,
        poll_pdu,
        poll_window,
        poll_timer,
        poll_prohibit,
        status_prohibit,
        pdu_delay,
        sdu_delay,
    }) = l
    else {
        return Ok(None);
    };
    let c = crate::l2::rlc::RlcConfig {
        pdu_payload: pdu_payload.unwrap_or(40),
        header: header.unwrap_or(2),
        tti: tti.map(|d| d.0).unwrap_or(SimDuration::from_millis(10)),
        window: window.unwrap_or(512) as u64,
        max_dat: max_dat.unwrap_or(15),
        poll_pdu: poll_pdu.unwrap_or(0),
        poll_window: poll_window.unwrap_or(50),
        poll_timer: poll_timer
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(200)),
        poll_prohibit: poll_prohibit.map(|d| d.0).unwrap_or(SimDuration::ZERO),
        status_prohibit: status_prohibit
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_millis(50)),
        pdu_delay: pdu_delay.map(|d| d.0).unwrap_or(SimDuration::ZERO),
        sdu_delay: sdu_delay.map(|d| d.0).unwrap_or(SimDuration::ZERO),
    };
    if c.pdu_payload == 0 {
        return err(format!("{path}.pdu_payload"), "must be at least 1 octet");
    }
    if c.tti.0 == 0 {
        return err(format!("{path}.tti"), "must be positive");
    }
    if c.window == 0 || c.window > 2047 {
        return err(
            format!("{path}.window"),
            "must be in [1, 2047] PDUs (TS 25.322)",
        );
    }
    if c.max_dat == 0 || c.max_dat > 40 {
        return err(format!("{path}.max_dat"), "must be in [1, 40] (TS 25.322)");
    }
    if c.poll_timer.0 == 0 {
        return err(format!("{path}.poll_timer"), "must be positive");
    }
    Ok(Some(c))
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
    pub spec_index: usize,
    pub src: usize,
    pub dst: usize,
    pub tcp: TcpKind,
    pub mss: u32,
    pub rwnd: u64,
    /// Initial window in bytes.
    pub iw_bytes: u64,
    pub sack: bool,
    pub delayed_ack: bool,
    pub delayed_ack_timeout: SimDuration,
    pub min_rto: SimDuration,
    pub initial_rto: SimDuration,
    pub max_rto: SimDuration,
    pub app_bytes: Option<u64>,
    pub start: SimTime,
    /// Initial ssthresh in bytes (None = arbitrarily high).
    pub ssthresh: Option<u64>,
    pub hybla: crate::tcp::cc::hybla::HyblaConfig,
    pub partial_ack_timer: PartialAckTimer,
    pub limited_transmit: bool,
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
        let path = if path == "." {
            "(top level)".to_string()
        } else {
            path
        };
        let mut msg = e.into_inner().to_string();
        // The JSON position means nothing to a user who wrote TOML: drop it.
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        ScenarioError { path, msg }
    })
}

fn check_prob(path: String, p: f64) -> Result<f64, ScenarioError> {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return err(path, format!("must be a probability in [0, 1], got {p}"));
    }
    Ok(p)
}

fn resolve_loss(path: &str, l: &Option<LossSpec>) -> Result<LossModel, ScenarioError> {
    Ok(match l {
        None => LossModel::None,
        Some(LossSpec::Bernoulli { p }) => LossModel::Bernoulli {
            p: check_prob(format!("{path}.p"), *p)?,
        },
        Some(LossSpec::Ber { ber }) => LossModel::Ber {
            ber: check_prob(format!("{path}.ber"), *ber)?,
        },
        Some(LossSpec::Gilbert {
            p_gb,
            p_bg,
            loss_good,
            loss_bad,
        }) => LossModel::Gilbert {
            p_gb: check_prob(format!("{path}.p_gb"), *p_gb)?,
            p_bg: check_prob(format!("{path}.p_bg"), *p_bg)?,
            loss_good: check_prob(format!("{path}.loss_good"), loss_good.unwrap_or(0.0))?,
            loss_bad: check_prob(format!("{path}.loss_bad"), loss_bad.unwrap_or(1.0))?,
        },
        Some(LossSpec::List { drop }) => {
            let mut d = drop.clone();
            d.sort_unstable();
            d.dedup();
            LossModel::List { drop: d }
        }
    })
}

fn resolve_limit(path: &str, q: &Option<QueueSpec>) -> Result<Limit, ScenarioError> {
    let limit = q
        .as_ref()
        .and_then(|q| q.limit)
        .map(|l| l.0)
        .unwrap_or(Limit::Packets(100));
    match limit {
        Limit::Packets(0) | Limit::Bytes(0) => err(
            format!("{path}.limit"),
            "must be at least 1 packet or 1 byte",
        ),
        l => Ok(l),
    }
}

fn resolve_hybla(
    path: &str,
    h: Option<&HyblaSpec>,
) -> Result<crate::tcp::cc::hybla::HyblaConfig, ScenarioError> {
    use crate::tcp::cc::hybla::{
        HyblaArith, HyblaConfig, HyblaInitialWindow, LossSsthresh, RhoSource,
    };
    let mut c = HyblaConfig::default();
    let Some(h) = h else { return Ok(c) };
    if let Some(r) = h.rtt0 {
        if r.0 .0 == 0 {
            return err(format!("{path}.rtt0"), "must be positive");
        }
        c.rtt0 = r.0;
    }
    if let Some(a) = h.arithmetic {
        c.arith = match a {
            HyblaArithSpec::Fixed => HyblaArith::Fixed,
            HyblaArithSpec::Float => HyblaArith::Float,
        };
    }
    if let Some(r) = h.rho_from {
        c.rho_source = match r {
            RhoFromSpec::MinSrtt => RhoSource::MinSrtt,
            RhoFromSpec::MinRtt => RhoSource::MinSample,
        };
    }
    if let Some(i) = h.initial_window {
        c.initial_window = match i {
            HyblaIwSpec::Rho => HyblaInitialWindow::Rho,
            HyblaIwSpec::Iw => HyblaInitialWindow::Iw,
            HyblaIwSpec::IwTimesRho => HyblaInitialWindow::IwTimesRho,
        };
    }
    if let Some(l) = h.ssthresh {
        c.loss_ssthresh = match l {
            HyblaSsthreshSpec::Flight => LossSsthresh::Flight,
            HyblaSsthreshSpec::Cwnd => LossSsthresh::Cwnd,
        };
    }
    Ok(c)
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
            index.insert(n.name.clone(), nodes.len());
            nodes.push(NodeInfo {
                name: n.name.clone(),
                kind: n.kind,
                gateway: None,
            });
        }
        if self.link.is_empty() {
            return err("link", "at least one link is required");
        }
        let mut links = Vec::new();
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
                    });
                    nodes.len() - 1
                });
            }
            let p = format!("link[{i}]");
            let fwd = DirInfo {
                rate: l.rate.0,
                delay: l.delay.0,
                limit: resolve_limit(&format!("{p}.queue"), &l.queue)?,
                loss: resolve_loss(&format!("{p}.loss"), &l.loss)?,
                layer2: resolve_layer2(&format!("{p}.layer2"), &l.layer2)?,
            };
            let rev = DirInfo {
                rate: l.rate_ba.unwrap_or(l.rate).0,
                delay: l.delay_ba.unwrap_or(l.delay).0,
                limit: if l.queue_ba.is_some() {
                    resolve_limit(&format!("{p}.queue_ba"), &l.queue_ba)?
                } else {
                    fwd.limit
                },
                loss: resolve_loss(&format!("{p}.loss_ba"), &l.loss_ba)?,
                layer2: resolve_layer2(&format!("{p}.layer2_ba"), &l.layer2_ba)?,
            };
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
            let g = n.gateway.clone().unwrap_or_default();
            let split = (g.mode == Some(GatewayMode::Split)).then(|| {
                crate::middlebox::gateway::SplitConfig {
                    tcp: g.tcp.unwrap_or_default(),
                    hybla: Default::default(),
                    sack: g.sack.unwrap_or(false),
                    iw_segments: g.iw.unwrap_or(1).max(1),
                }
            });
            if split.is_none() && (g.tcp.is_some() || g.sack.is_some() || g.iw.is_some()) {
                return err(
                    format!("{p}.mode"),
                    "tcp, sack and iw apply to mode = \"split\"",
                );
            }
            let idx = index[&n.name];
            let bdp = links
                .iter()
                .filter(|l| l.a == idx || l.b == idx)
                .map(|l| {
                    let d = if l.a == idx { &l.dirs[0] } else { &l.dirs[1] };
                    let rtt = (l.dirs[0].delay + l.dirs[1].delay).as_nanos() as u128;
                    (d.rate.bps() as u128 * rtt / 8 / 1_000_000_000) as u64
                })
                .max()
                .unwrap_or(0);
            let cfg = crate::middlebox::gateway::GatewayConfig {
                split,
                buffer: g.buffer.map(|b| b.0).unwrap_or(1_000_000),
                window: g.window.map(|b| b.0).unwrap_or(bdp.max(65_535)),
                pace: g.pace.map(|r| r.0),
                dupthresh: g.dupthresh.unwrap_or(3),
                min_rto: g.min_rto.map(|d| d.0).unwrap_or(SimDuration::from_secs(1)),
                initial_rto: SimDuration::from_secs(1),
                fail_at: g.fail_at.map(|d| SimTime(d.0 .0)),
                recover_guard: g.recover_guard.unwrap_or(true),
            };
            if cfg.buffer == 0 {
                return err(format!("{p}.buffer"), "must be positive");
            }
            if cfg.dupthresh == 0 {
                return err(format!("{p}.dupthresh"), "must be at least 1");
            }
            nodes[idx].gateway = Some(cfg);
        }
        let mut flows = Vec::new();
        for (i, f) in self.flow.iter().enumerate() {
            let p = format!("flow[{i}]");
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
            if f.mss.is_some() && f.mtu.is_some() {
                return err(format!("{p}.mtu"), "give either mss or mtu, not both");
            }
            let mss = match (f.mss, f.mtu) {
                (Some(m), _) => m,
                (None, Some(mtu)) => {
                    if mtu <= 40 {
                        return err(
                            format!("{p}.mtu"),
                            format!("must exceed 40 B of TCP/IP headers, got {mtu}"),
                        );
                    }
                    mtu - 40
                }
                (None, None) => 1460,
            };
            if mss == 0 || mss > 65_495 {
                return err(
                    format!("{p}.mss"),
                    format!("must be in [1, 65495], got {mss}"),
                );
            }
            let rwnd = f.rwnd.map(|b| b.0).unwrap_or(65_536);
            if rwnd < mss as u64 {
                return err(
                    format!("{p}.rwnd"),
                    format!("must be at least one MSS ({mss} B), got {rwnd} B"),
                );
            }
            if rwnd > (1u64 << 30) {
                return err(
                    format!("{p}.rwnd"),
                    "must be at most 1 GiB (RFC 7323 window scale limit)",
                );
            }
            let m = mss as u64;
            let iw_bytes = match &f.iw {
                None => m,
                Some(IwSpec::Segments(0)) => {
                    return err(format!("{p}.iw"), "must be at least 1 segment")
                }
                Some(IwSpec::Segments(n)) => *n as u64 * m,
                Some(IwSpec::Rule(IwRule::Rfc2414 | IwRule::Rfc3390)) => {
                    (4 * m).min((2 * m).max(4380))
                }
                Some(IwSpec::Rule(IwRule::Rfc6928)) => (10 * m).min((2 * m).max(14_600)),
            };
            let min_rto = f.min_rto.map(|d| d.0).unwrap_or(SimDuration::from_secs(1));
            let initial_rto = f
                .initial_rto
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_secs(1));
            let max_rto = f.max_rto.map(|d| d.0).unwrap_or(SimDuration::from_secs(60));
            if min_rto.0 == 0 {
                return err(format!("{p}.min_rto"), "must be positive");
            }
            if max_rto < min_rto || max_rto < initial_rto {
                return err(
                    format!("{p}.max_rto"),
                    "must be at least min_rto and initial_rto",
                );
            }
            let delack = f
                .delayed_ack_timeout
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_millis(200));
            if delack.0 == 0 {
                return err(format!("{p}.delayed_ack_timeout"), "must be positive");
            }
            let app_bytes = f.app.as_ref().and_then(|a| a.bytes).map(|b| b.0);
            if app_bytes == Some(0) {
                return err(
                    format!("{p}.app.bytes"),
                    "must be positive (omit it for an unlimited transfer)",
                );
            }
            let start = SimTime(f.start.map(|d| d.0 .0).unwrap_or(0));
            if f.ssthresh == Some(0) {
                return err(format!("{p}.ssthresh"), "must be at least 1 segment");
            }
            if f.hybla.is_some() && f.tcp != TcpKind::Hybla {
                return err(format!("{p}.hybla"), "only applies to tcp = \"hybla\"");
            }
            let hybla = resolve_hybla(&format!("{p}.hybla"), f.hybla.as_ref())?;
            let count = f.count.unwrap_or(1);
            if count == 0 {
                return err(format!("{p}.count"), "must be at least 1");
            }
            for _ in 0..count {
                flows.push(FlowInfo {
                    id: flows.len(),
                    spec_index: i,
                    src,
                    dst,
                    tcp: f.tcp,
                    mss,
                    rwnd,
                    iw_bytes,
                    sack: f.sack,
                    delayed_ack: f.delayed_ack.unwrap_or(true),
                    delayed_ack_timeout: delack,
                    min_rto,
                    initial_rto,
                    max_rto,
                    app_bytes,
                    start,
                    ssthresh: f.ssthresh.map(|s| s as u64 * mss as u64),
                    hybla,
                    partial_ack_timer: f.partial_ack_timer.unwrap_or_default(),
                    limited_transmit: f.limited_transmit,
                });
            }
        }
        Ok(ValidScenario {
            name: self.name.clone().unwrap_or_else(|| "scenario".into()),
            seed: self.seed.unwrap_or(1),
            duration: SimTime(duration.0),
            warmup: SimTime(warmup.0),
            nodes,
            links,
            flows,
        })
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

    fn parse(s: &str) -> Result<ValidScenario, ScenarioError> {
        parse_json(s)?.validate()
    }

    const BASE: &str = r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"10ms"}],
        "flow":[{"src":"s","dst":"c"}]}"#;

    #[test]
    fn minimal_resolves() {
        let v = parse(BASE).unwrap();
        assert_eq!(v.nodes.len(), 2);
        assert_eq!(v.flows[0].mss, 1460);
        assert_eq!(v.links[0].dirs[1].rate, Rate(10_000_000));
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
    fn unknown_node() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms"}],"flow":[{"src":"s","dst":"x"}]}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].dst");
    }

    #[test]
    fn iw_rules() {
        let v = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":"rfc3390""#)).unwrap();
        assert_eq!(v.flows[0].iw_bytes, 4380);
        let v =
            parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":"rfc6928","mss":1000"#)).unwrap();
        assert_eq!(v.flows[0].iw_bytes, 10_000);
        let v = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":3,"count":4"#)).unwrap();
        assert_eq!(v.flows.len(), 4);
        assert_eq!(v.flows[3].iw_bytes, 3 * 1460);
    }

    #[test]
    fn schema_mentions_keys() {
        let s = json_schema();
        assert!(s.contains("delayed_ack") && s.contains("bernoulli"));
    }
}
