//! A flow's TCP options as written in a scenario ([`FlowSpec`], the `[[flow]]` table),
//! and their resolution into the configurations of the endpoints
//! ([`TcpConfig`]): defaults, units and checks live here, beside the endpoints that use
//! them. Node names (`src`, `dst`) are resolved by the scenario layer.

use super::cc::hybla::HyblaSpec;
use super::cc::CcConfig;
use super::receiver::ReceiverConfig;
use super::recovery::RecoveryKind;
use super::sender::SenderConfig;
use crate::error::{err, ScenarioError};
use crate::time::{SimDuration, SimTime};
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

    /// The congestion control, with `hybla` the options of `tcp = "hybla"`.
    pub fn cc(self, hybla: Option<&HyblaSpec>, path: &str) -> Result<CcConfig, ScenarioError> {
        if hybla.is_some() && self != TcpKind::Hybla {
            return err(format!("{path}.hybla"), "only applies to tcp = \"hybla\"");
        }
        Ok(match self {
            TcpKind::Tahoe | TcpKind::Reno | TcpKind::Newreno => CcConfig::Reno,
            TcpKind::Hybla => CcConfig::Hybla(HyblaSpec::resolve(hybla, &format!("{path}.hybla"))?),
        })
    }

    /// The loss-recovery scheme (RFC 6675 replaces Reno's and NewReno's once SACK is
    /// negotiated).
    pub fn recovery(self, partial_ack_timer: PartialAckTimer) -> RecoveryKind {
        match self {
            TcpKind::Tahoe => RecoveryKind::Tahoe,
            TcpKind::Reno => RecoveryKind::Reno,
            TcpKind::Newreno | TcpKind::Hybla => RecoveryKind::NewReno {
                partial_ack_timer_every: partial_ack_timer == PartialAckTimer::Every,
            },
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

/// A `[[flow]]` table.
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

/// The shortest retransmission, persist and delayed-ACK timer a flow may set.
pub const MIN_TIMER: SimDuration = SimDuration::from_millis(1);

/// Both endpoints of a flow, resolved.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    pub tcp: TcpKind,
    pub cc: CcConfig,
    pub recovery: RecoveryKind,
    pub sender: SenderConfig,
    pub receiver: ReceiverConfig,
    pub start: SimTime,
    pub count: u32,
}

impl FlowSpec {
    /// Defaults and checks of everything but the node names; `path` is `flow[i]`.
    pub fn resolve(&self, path: &str) -> Result<TcpConfig, ScenarioError> {
        let p = path;
        if self.mss.is_some() && self.mtu.is_some() {
            return err(format!("{p}.mtu"), "give either mss or mtu, not both");
        }
        let mss = match (self.mss, self.mtu) {
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
        let rwnd = self.rwnd.map(|b| b.0).unwrap_or(65_536);
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
        let iw_bytes = IwSpec::bytes(self.iw.as_ref(), mss, &format!("{p}.iw"))?;
        let dur = |d: Option<Duration>, def: SimDuration| d.map(|d| d.0).unwrap_or(def);
        let min_rto = dur(self.min_rto, SimDuration::from_secs(1));
        let initial_rto = dur(self.initial_rto, SimDuration::from_secs(1));
        let max_rto = dur(self.max_rto, SimDuration::from_secs(60));
        // RFC 6298 recommends 1 s and Linux uses 200 ms; below 1 ms no real stack times
        // out, and a zero timer would fire forever at one instant.
        for (key, v) in [("min_rto", min_rto), ("initial_rto", initial_rto)] {
            if v < MIN_TIMER {
                return err(
                    format!("{p}.{key}"),
                    format!("must be at least 1ms, got {v}"),
                );
            }
        }
        if max_rto < min_rto || max_rto < initial_rto {
            return err(
                format!("{p}.max_rto"),
                "must be at least min_rto and initial_rto",
            );
        }
        let delack = dur(self.delayed_ack_timeout, SimDuration::from_millis(200));
        if delack < MIN_TIMER {
            return err(
                format!("{p}.delayed_ack_timeout"),
                format!("must be at least 1ms, got {delack}"),
            );
        }
        let app_bytes = self.app.as_ref().and_then(|a| a.bytes).map(|b| b.0);
        if app_bytes == Some(0) {
            return err(
                format!("{p}.app.bytes"),
                "must be positive (omit it for an unlimited transfer)",
            );
        }
        if self.ssthresh == Some(0) {
            return err(format!("{p}.ssthresh"), "must be at least 1 segment");
        }
        let cc = self.tcp.cc(self.hybla.as_ref(), p)?;
        let count = self.count.unwrap_or(1);
        if count == 0 {
            return err(format!("{p}.count"), "must be at least 1");
        }
        Ok(TcpConfig {
            tcp: self.tcp,
            cc,
            recovery: self
                .tcp
                .recovery(self.partial_ack_timer.unwrap_or_default()),
            sender: SenderConfig {
                mss,
                iw_bytes,
                initial_rto,
                min_rto,
                max_rto,
                app_bytes,
                sack_permitted: self.sack,
                initial_ssthresh: self.ssthresh.map(|s| s as u64 * mss as u64),
                limited_transmit: self.limited_transmit,
            },
            receiver: ReceiverConfig {
                mss,
                buffer: rwnd,
                delayed_ack: self.delayed_ack.unwrap_or(true),
                delayed_ack_timeout: delack,
                sack: self.sack,
                app_bytes,
            },
            start: SimTime(self.start.map(|d| d.0 .0).unwrap_or(0)),
            count,
        })
    }
}
