//! A flow as written in a scenario ([`FlowSpec`], the `[[flow]]` table): its TCP keys,
//! resolved into a [`super::profile::TcpProfile`], and its traffic ([`FlowTraffic`]).
//! Node names (`src`, `dst`) are resolved by the scenario layer.

use super::cc::hybla::HyblaSpec;
use super::recovery::spec::PeachSpec;
use super::stack::Stack;
use crate::app::AppSpec;
use crate::error::{err, ScenarioError};
use crate::time::SimTime;
use crate::units::{Bytes, Duration};
use schemars::JsonSchema;
use serde::Deserialize;

/// The `tcp = ...` choices: a congestion control with a loss-recovery scheme.
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
    /// TCP-Peach (Akyildiz et al. 2001): Sudden Start and Rapid Recovery with
    /// low-priority dummy segments; options in `peach`.
    Peach,
    /// TCP-Peach+ (Akyildiz et al. 2002): Jump Start and Quick Recovery with NIL
    /// segments carrying unacknowledged data; options in `peach`.
    #[serde(rename = "peach+")]
    PeachPlus,
    /// TCP-Cherry (Utsumi et al. 2008), experimental reconstruction: supplement
    /// segments, Fast-Forward Start, First-Aid Recovery; options in `peach`.
    Cherry,
    /// CUBIC (RFC 9438) as Linux `tcp_cubic.c` implements it, with HyStart.
    Cubic,
    /// BBR v1 as Linux `tcp_bbr.c` (needs `stack = "linux"`, which it implies).
    Bbr,
}

impl TcpKind {
    pub fn name(self) -> &'static str {
        match self {
            TcpKind::Tahoe => "tahoe",
            TcpKind::Reno => "reno",
            TcpKind::Newreno => "newreno",
            TcpKind::Hybla => "hybla",
            TcpKind::Peach => "peach",
            TcpKind::PeachPlus => "peach+",
            TcpKind::Cherry => "cherry",
            TcpKind::Cubic => "cubic",
            TcpKind::Bbr => "bbr",
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

impl IwSpec {
    /// The initial window in bytes for segments of `mss` bytes.
    pub fn bytes(spec: Option<&IwSpec>, mss: u32, path: &str) -> Result<u64, ScenarioError> {
        let m = mss as u64;
        Ok(match spec {
            None => m,
            Some(IwSpec::Segments(0)) => return err(path, "must be at least 1 segment"),
            Some(IwSpec::Segments(n)) => *n as u64 * m,
            Some(IwSpec::Rule(IwRule::Rfc2414 | IwRule::Rfc3390)) => (4 * m).min((2 * m).max(4380)),
            Some(IwSpec::Rule(IwRule::Rfc6928)) => (10 * m).min((2 * m).max(14_600)),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PartialAckTimer {
    #[default]
    First,
    Every,
}

/// A `[[flow]]` table.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub src: String,
    pub dst: String,
    /// Congestion control. Default "cubic" ("newreno" with stack = "classic").
    #[serde(default)]
    pub tcp: Option<TcpKind>,
    /// "linux" (a Linux 6.x profile, see docs/notes/linux-profile.md; the default for
    /// every tcp it runs) or "classic" (the papers' TCP; the default for tahoe, peach,
    /// peach+ and cherry). Sets the defaults marked (linux: ...) below.
    #[serde(default)]
    pub stack: Option<Stack>,
    /// RFC 7323 timestamps (linux: true). Default false.
    #[serde(default)]
    pub timestamps: Option<bool>,
    /// RFC 2883 D-SACK reports from the receiver (linux: true). Default false.
    #[serde(default)]
    pub dsack: Option<bool>,
    /// Pace transmissions (Linux's rate: 200 % of cwnd/SRTT in slow start, 120 % after);
    /// always on for BBR. Default false.
    #[serde(default)]
    pub pacing: Option<bool>,
    /// Classic stack with SACK: RFC 6937 Proportional Rate Reduction instead of RFC
    /// 6675's reduction at once (the Linux stack always uses PRR). Default false.
    #[serde(default)]
    pub prr: Option<bool>,
    /// Linux stack: RACK-TLP loss detection (RFC 8985); false uses RFC 6675's IsLost.
    /// Default true.
    #[serde(default)]
    pub rack: Option<bool>,
    /// Data segments acknowledged at once at the start of the connection (Linux
    /// quick-ACK mode; linux: 16). Default 0.
    #[serde(default)]
    pub quickack: Option<u32>,
    /// Sender maximum segment size (payload bytes). Default 1460.
    #[serde(default)]
    pub mss: Option<u32>,
    /// Alternative to mss: mss = mtu - 40.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Receiver buffer = advertised window (window scaling negotiated when > 65535 B).
    /// Default 64KiB (linux: 6MiB, the autotuning maximum).
    #[serde(default)]
    pub rwnd: Option<Bytes>,
    /// Initial window in segments or "rfc2414" | "rfc3390" | "rfc6928". Default 1
    /// (linux: 10).
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
    /// SACK (RFC 2018 option, RFC 6675 loss recovery) when both ends have it. Default
    /// false (linux: true; peach+ and cherry: true, their recovery uses the SACK
    /// scoreboard).
    #[serde(default)]
    pub sack: Option<bool>,
    /// ECN (RFC 3168) at both ends: negotiated on the handshake; ECT data, ECE/CWR.
    /// Default false.
    #[serde(default)]
    pub ecn: bool,
    /// Options of tcp = "peach", "peach+" and "cherry".
    #[serde(default)]
    pub peach: Option<PeachSpec>,
    /// Receiver delays ACKs (every second full segment, 200 ms timer). Default true.
    #[serde(default)]
    pub delayed_ack: Option<bool>,
    /// Delayed-ACK timer. Default 200ms (linux: 40ms).
    #[serde(default)]
    pub delayed_ack_timeout: Option<Duration>,
    /// Minimum RTO (RFC 6298 says 1 s). Default 1s (linux: 200ms, added to SRTT as
    /// Linux does).
    #[serde(default)]
    pub min_rto: Option<Duration>,
    /// Initial RTO (RFC 6298 (2.1)). Default 1s.
    #[serde(default)]
    pub initial_rto: Option<Duration>,
    /// Maximum RTO (RFC 6298 (2.5)). Default 60s (linux: 120s).
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

/// A flow's traffic: what it sends and when, resolved (its TCP is a
/// [`super::profile::TcpProfile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowTraffic {
    /// Bytes of a sized transfer; None = unlimited.
    pub app_bytes: Option<u64>,
    /// When the sender opens the connection.
    pub start: SimTime,
    /// How many copies of the flow.
    pub count: u32,
}

impl FlowSpec {
    /// The stack profile and the variant (issue 25, docs/notes/defaults.md): without
    /// `stack`, every variant the Linux stack runs uses it (a modern Linux host is what
    /// users have); tahoe and the TCP-Peach family, which it refuses ([`super::profile::VARIANTS`]),
    /// keep the classic stack. Without `tcp`, the stack's default: CUBIC on Linux (the
    /// kernel's `tcp_congestion_control` default), NewReno on the classic stack.
    pub fn stack_and_tcp(&self) -> (Stack, TcpKind) {
        let stack = self
            .stack
            .unwrap_or_else(|| self.tcp.map_or(Stack::Linux, TcpKind::default_stack));
        let tcp = self.tcp.unwrap_or(match stack {
            Stack::Classic => TcpKind::Newreno,
            Stack::Linux => TcpKind::Cubic,
        });
        (stack, tcp)
    }

    /// The flow's traffic, with its checks; `path` is `flow[i]`.
    pub fn traffic(&self, path: &str) -> Result<FlowTraffic, ScenarioError> {
        let app_bytes = self.app.as_ref().and_then(|a| a.bytes).map(|b| b.0);
        if app_bytes == Some(0) {
            return err(
                format!("{path}.app.bytes"),
                "must be positive (omit it for an unlimited transfer)",
            );
        }
        let count = self.count.unwrap_or(1);
        if count == 0 {
            return err(format!("{path}.count"), "must be at least 1");
        }
        Ok(FlowTraffic {
            app_bytes,
            start: SimTime(self.start.map(|d| d.0 .0).unwrap_or(0)),
            count,
        })
    }
}
