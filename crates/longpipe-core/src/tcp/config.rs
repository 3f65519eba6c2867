//! A flow's TCP options as written in a scenario ([`FlowSpec`], the `[[flow]]` table),
//! and their resolution into the configurations of the endpoints
//! ([`TcpConfig`]): defaults, units and checks live here, beside the endpoints that use
//! them. Node names (`src`, `dst`) are resolved by the scenario layer.

use super::cc::hybla::{HyblaSpec, LossSsthresh};
use super::cc::CcConfig;
use super::receiver::ReceiverConfig;
use super::recovery::peach::{PeachSpec, ProbeAck, Variant};
use super::recovery::RecoveryKind;
use super::rtt::RtoBounds;
use super::sender::SenderConfig;
use super::stack::{Stack, StackConfig};
use crate::app::AppSpec;
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

    /// The member of the TCP-Peach family, if this is one.
    pub fn peach_variant(self) -> Option<Variant> {
        match self {
            TcpKind::Peach => Some(Variant::Peach),
            TcpKind::PeachPlus => Some(Variant::PeachPlus),
            TcpKind::Cherry => Some(Variant::Cherry),
            _ => None,
        }
    }

    /// The congestion control of the classic stack, with `hybla` the options of
    /// `tcp = "hybla"`.
    pub fn cc(self, hybla: Option<&HyblaSpec>, path: &str) -> Result<CcConfig, ScenarioError> {
        self.cc_for(Stack::Classic, hybla, path)
    }

    /// The congestion control in a stack profile: the Linux profile uses Linux's Reno
    /// (`tcp_reno_*`: ssthresh from cwnd) and Hybla's Linux loss response by default.
    pub fn cc_for(
        self,
        stack: Stack,
        hybla: Option<&HyblaSpec>,
        path: &str,
    ) -> Result<CcConfig, ScenarioError> {
        if hybla.is_some() && self != TcpKind::Hybla {
            return err(format!("{path}.hybla"), "only applies to tcp = \"hybla\"");
        }
        let linux = stack == Stack::Linux;
        Ok(match self {
            TcpKind::Tahoe | TcpKind::Reno | TcpKind::Newreno if linux => CcConfig::LinuxReno,
            TcpKind::Tahoe | TcpKind::Reno | TcpKind::Newreno => CcConfig::Reno,
            TcpKind::Hybla => {
                let mut h = HyblaSpec::resolve(hybla, &format!("{path}.hybla"))?;
                if linux && hybla.is_none_or(|h| h.ssthresh.is_none()) {
                    h.loss_ssthresh = LossSsthresh::Cwnd;
                }
                CcConfig::Hybla(h)
            }
            TcpKind::Peach | TcpKind::PeachPlus | TcpKind::Cherry if linux => {
                return err(
                    format!("{path}.stack"),
                    format!(
                        "tcp = \"{}\" runs on the classic stack only (its loss recovery \
                         replaces the stack's)",
                        self.name()
                    ),
                )
            }
            TcpKind::Peach | TcpKind::PeachPlus | TcpKind::Cherry => CcConfig::Peach,
            TcpKind::Cubic => CcConfig::Cubic,
            TcpKind::Bbr if linux => CcConfig::Bbr,
            TcpKind::Bbr => {
                return err(
                    format!("{path}.stack"),
                    "tcp = \"bbr\" needs stack = \"linux\" (BBR relies on Linux's loss \
                     recovery, rate sampling and pacing)",
                )
            }
        })
    }

    /// The loss-recovery scheme (RFC 6675 replaces Reno's and NewReno's once SACK is
    /// negotiated; the Linux profile has its own).
    pub fn recovery(self, partial_ack_timer: PartialAckTimer) -> RecoveryKind {
        match self {
            TcpKind::Tahoe => RecoveryKind::Tahoe,
            TcpKind::Reno => RecoveryKind::Reno,
            // the TCP-Peach family's recovery is built with its options in resolve();
            // this is the NewReno fallback it replaces
            TcpKind::Newreno
            | TcpKind::Hybla
            | TcpKind::Cubic
            | TcpKind::Bbr
            | TcpKind::Peach
            | TcpKind::PeachPlus
            | TcpKind::Cherry => RecoveryKind::NewReno {
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

/// A `[[flow]]` table.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub src: String,
    pub dst: String,
    /// Congestion control. Default "newreno" ("cubic" with stack = "linux").
    #[serde(default)]
    pub tcp: Option<TcpKind>,
    /// "classic" (the papers' TCP, default) or "linux" (a Linux 6.x profile; see
    /// docs/notes/linux-profile.md). Sets the defaults marked (linux: ...) below.
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
    /// false (linux: true).
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

/// The shortest retransmission, persist and delayed-ACK timer a flow may set.
pub const MIN_TIMER: SimDuration = SimDuration::from_millis(1);

/// Both endpoints of a flow, resolved.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    pub tcp: TcpKind,
    pub stack: Stack,
    pub cc: CcConfig,
    pub recovery: RecoveryKind,
    pub sender: SenderConfig,
    pub receiver: ReceiverConfig,
    pub start: SimTime,
    pub count: u32,
}

impl TcpConfig {
    /// Whether the flow sends low-priority probes or uses ECN (its result then reports
    /// those counters).
    pub fn uses_classes(&self) -> bool {
        self.sender.ecn || matches!(self.recovery, RecoveryKind::Peach(_))
    }
}

impl FlowSpec {
    /// The stack profile and the congestion control: `tcp = "bbr"` implies the Linux
    /// stack; the Linux stack's default is CUBIC, the classic one's NewReno.
    pub fn stack_and_tcp(&self) -> (Stack, TcpKind) {
        let stack = self.stack.unwrap_or(if self.tcp == Some(TcpKind::Bbr) {
            Stack::Linux
        } else {
            Stack::Classic
        });
        let tcp = self.tcp.unwrap_or(match stack {
            Stack::Classic => TcpKind::Newreno,
            Stack::Linux => TcpKind::Cubic,
        });
        (stack, tcp)
    }

    /// The profile's mechanisms with the flow's overrides.
    fn mechanisms(
        &self,
        stack: Stack,
        tcp: TcpKind,
        p: &str,
    ) -> Result<StackConfig, ScenarioError> {
        let mut m = stack.defaults().mechanisms;
        m.timestamps = self.timestamps.unwrap_or(m.timestamps);
        m.dsack = self.dsack.unwrap_or(m.dsack);
        m.quickack = self.quickack.unwrap_or(m.quickack);
        m.pacing = self.pacing.unwrap_or(m.pacing);
        if tcp == TcpKind::Bbr {
            if self.pacing == Some(false) {
                return err(
                    format!("{p}.pacing"),
                    "BBR always paces (it sets its pacing rate)",
                );
            }
            m.pacing = true;
        }
        if let Some(prr) = self.prr {
            if stack == Stack::Linux && !prr {
                return err(format!("{p}.prr"), "the Linux stack always uses PRR");
            }
            m.prr = prr;
        }
        if let Some(rack) = self.rack {
            if stack == Stack::Classic && rack {
                return err(format!("{p}.rack"), "RACK-TLP needs stack = \"linux\"");
            }
            m.rack = rack;
        }
        Ok(m)
    }

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
        let (stack, tcp) = self.stack_and_tcp();
        let prof = stack.defaults();
        let rwnd = self.rwnd.map(|b| b.0).unwrap_or(prof.rwnd);
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
        let iw = self
            .iw
            .clone()
            .unwrap_or(IwSpec::Segments(prof.iw_segments));
        let iw_bytes = IwSpec::bytes(Some(&iw), mss, &format!("{p}.iw"))?;
        let dur = |d: Option<Duration>, def: SimDuration| d.map(|d| d.0).unwrap_or(def);
        let min_rto = dur(self.min_rto, prof.min_rto);
        let initial_rto = dur(self.initial_rto, prof.initial_rto);
        let max_rto = dur(self.max_rto, prof.max_rto);
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
        let delack = dur(self.delayed_ack_timeout, prof.delayed_ack_timeout);
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
        let cc = tcp.cc_for(stack, self.hybla.as_ref(), p)?;
        let peach = match tcp.peach_variant() {
            Some(v) => Some(PeachSpec::resolve(
                self.peach.as_ref(),
                v,
                &format!("{p}.peach"),
            )?),
            None if self.peach.is_some() => {
                return err(
                    format!("{p}.peach"),
                    "only applies to tcp = \"peach\", \"peach+\" or \"cherry\"",
                )
            }
            None => None,
        };
        let sack = self.sack.unwrap_or(prof.sack);
        let mech = self.mechanisms(stack, tcp, p)?;
        let count = self.count.unwrap_or(1);
        if count == 0 {
            return err(format!("{p}.count"), "must be at least 1");
        }
        Ok(TcpConfig {
            tcp,
            stack,
            cc,
            recovery: match peach {
                // cc_for() refused the family on the Linux stack
                Some(c) => RecoveryKind::Peach(c),
                None if mech.linux => RecoveryKind::Linux,
                None => tcp.recovery(self.partial_ack_timer.unwrap_or_default()),
            },
            sender: SenderConfig {
                mss,
                iw_bytes,
                initial_rto,
                min_rto,
                max_rto,
                app_bytes,
                sack_permitted: sack,
                initial_ssthresh: self.ssthresh.map(|s| s as u64 * mss as u64),
                limited_transmit: self.limited_transmit,
                ecn: self.ecn,
                stack: mech,
            },
            receiver: ReceiverConfig {
                mss,
                buffer: rwnd,
                delayed_ack: self.delayed_ack.unwrap_or(true),
                delayed_ack_timeout: delack,
                sack,
                app_bytes,
                ecn: self.ecn,
                flag_probe_acks: peach.is_some_and(|c| c.probe_ack == ProbeAck::Flagged),
                stack: mech,
                rto: RtoBounds {
                    initial: initial_rto,
                    min: min_rto,
                    max: max_rto,
                },
            },
            start: SimTime(self.start.map(|d| d.0 .0).unwrap_or(0)),
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_builds_its_congestion_control_on_each_stack() {
        use TcpKind::*;
        let name = |k: TcpKind, s: Stack| k.cc_for(s, None, "flow[0]").map(|c| c.build().name());
        for (kind, classic, linux) in [
            (Tahoe, Ok("reno"), Ok("reno")),
            (Reno, Ok("reno"), Ok("reno")),
            (Newreno, Ok("reno"), Ok("reno")),
            (Hybla, Ok("hybla"), Ok("hybla")),
            (Cubic, Ok("cubic"), Ok("cubic")),
            (Bbr, Err(()), Ok("bbr")),
            (Peach, Ok("peach"), Err(())),
            (PeachPlus, Ok("peach"), Err(())),
            (Cherry, Ok("peach"), Err(())),
        ] {
            assert_eq!(
                name(kind, Stack::Classic).map_err(|_| ()),
                classic,
                "{kind:?} classic"
            );
            assert_eq!(
                name(kind, Stack::Linux).map_err(|_| ()),
                linux,
                "{kind:?} linux"
            );
        }
        // the error names the field and the stack
        let e = Bbr
            .cc_for(Stack::Classic, None, "flow[2]")
            .map(|_| ())
            .unwrap_err();
        assert!(e.to_string().contains("flow[2].stack"), "{e}");
    }
}
