//! A flow's TCP, resolved once: the [`TcpProfile`].
//!
//! A scenario names a variant (`tcp = "..."`), a stack (`stack = "classic" | "linux"`)
//! and any number of the profile's keys; [`TcpProfile::resolve`] turns them into one
//! value that every part uses — the sender and the receiver of the flow, the work
//! estimator, the emulator's sysctls and the result (`flows[].profile`, so a table can
//! show what ran). Which variant runs on which stack, with which congestion control and
//! loss recovery, is in one table, [`VARIANTS`], together with the reason a combination
//! does not exist.
//!
//! The stacks' defaults are in [`super::stack`]; each is overridden by the flow's own key.
//!
//! Why one file of ~690 lines (about 480 of code, the rest unit tests): the table, its
//! resolution and its report are one contract; split, a variant's rules would again be
//! spread over several files (issue 24).

use super::cc::hybla::{HyblaConfig, HyblaSpec};
use super::cc::CcConfig;
use super::config::{FlowSpec, IwSpec, PartialAckTimer, TcpKind};
use super::recovery::spec::{PeachSpec, ProbeAck, RecoveryKind, Variant};
use super::rtt::RtoBounds;
use super::stack::Stack;
use crate::error::{err, ScenarioError};
use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::Serialize;

/// The loss recovery a variant runs on the classic stack (the Linux stack always runs
/// its own state machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryName {
    Tahoe,
    Reno,
    NewReno,
    Peach(Variant),
    Linux,
}

/// A variant on one stack: its congestion control (with default options; the flow's
/// option table replaces them) and loss recovery, or why it cannot run there.
pub type Combo = Result<(CcConfig, RecoveryName), &'static str>;

/// One row of the table: a `tcp = ...` name on the classic and on the Linux stack.
pub struct VariantRow {
    pub tcp: TcpKind,
    pub classic: Combo,
    pub linux: Combo,
}

const PEACH_ON_LINUX: &str = "runs on the classic stack only: its loss recovery and \
                              low-priority probes replace the stack's";

/// Every `tcp = ...` name on each stack. The Linux stack runs Linux's loss recovery
/// (PRR, RACK-TLP, undo) with SACK, NewReno's without; a congestion control there is the
/// kernel module of the same name.
pub const VARIANTS: [VariantRow; 9] = [
    VariantRow {
        tcp: TcpKind::Tahoe,
        classic: Ok((CcConfig::Reno, RecoveryName::Tahoe)),
        linux: Err(
            "does not run on the Linux stack, which has no Tahoe (its recovery \
                    always runs fast recovery): use tcp = \"reno\" there, or \
                    stack = \"classic\"",
        ),
    },
    VariantRow {
        tcp: TcpKind::Reno,
        classic: Ok((CcConfig::Reno, RecoveryName::Reno)),
        linux: Ok((CcConfig::LinuxReno, RecoveryName::Linux)),
    },
    VariantRow {
        tcp: TcpKind::Newreno,
        classic: Ok((CcConfig::Reno, RecoveryName::NewReno)),
        linux: Ok((CcConfig::LinuxReno, RecoveryName::Linux)),
    },
    VariantRow {
        tcp: TcpKind::Hybla,
        classic: Ok((CcConfig::Hybla(HyblaConfig::DEFAULT), RecoveryName::NewReno)),
        linux: Ok((CcConfig::Hybla(HyblaConfig::LINUX), RecoveryName::Linux)),
    },
    VariantRow {
        tcp: TcpKind::Peach,
        classic: Ok((CcConfig::Peach, RecoveryName::Peach(Variant::Peach))),
        linux: Err(PEACH_ON_LINUX),
    },
    VariantRow {
        tcp: TcpKind::PeachPlus,
        classic: Ok((CcConfig::Peach, RecoveryName::Peach(Variant::PeachPlus))),
        linux: Err(PEACH_ON_LINUX),
    },
    VariantRow {
        tcp: TcpKind::Cherry,
        classic: Ok((CcConfig::Peach, RecoveryName::Peach(Variant::Cherry))),
        linux: Err(PEACH_ON_LINUX),
    },
    VariantRow {
        tcp: TcpKind::Cubic,
        classic: Ok((CcConfig::Cubic, RecoveryName::NewReno)),
        linux: Ok((CcConfig::Cubic, RecoveryName::Linux)),
    },
    VariantRow {
        tcp: TcpKind::Bbr,
        classic: Err(
            "needs stack = \"linux\" (BBR relies on Linux's loss recovery, \
                      rate sampling and pacing)",
        ),
        linux: Ok((CcConfig::Bbr, RecoveryName::Linux)),
    },
];

impl TcpKind {
    /// This variant's row of [`VARIANTS`].
    pub fn row(self) -> &'static VariantRow {
        VARIANTS
            .iter()
            .find(|r| r.tcp == self)
            .expect("every variant has a row")
    }

    /// The stack a flow without `stack = ...` runs on: Linux wherever the table has a
    /// Linux combination, classic otherwise (tahoe, peach, peach+, cherry).
    pub fn default_stack(self) -> Stack {
        if self.row().linux.is_ok() {
            Stack::Linux
        } else {
            Stack::Classic
        }
    }

    /// What runs on `stack`, or why nothing does.
    pub fn on(self, stack: Stack) -> Combo {
        let r = self.row();
        match stack {
            Stack::Classic => r.classic,
            Stack::Linux => r.linux,
        }
    }
}

/// Everything about a flow's TCP that is not its traffic: both ends use it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpProfile {
    /// The scenario's name for the variant.
    pub tcp: TcpKind,
    pub stack: Stack,
    pub cc: CcConfig,
    /// The loss recovery configured (RFC 6675 replaces Reno's and NewReno's once SACK is
    /// negotiated; the Linux stack's runs with SACK only).
    pub recovery: RecoveryKind,
    /// Sender maximum segment size, payload bytes (without options).
    pub mss: u32,
    /// Initial window, bytes.
    pub iw_bytes: u64,
    /// Initial slow-start threshold, bytes (None: arbitrarily high, RFC 5681 §3.1).
    pub initial_ssthresh: Option<u64>,
    /// Receive buffer = the largest window advertised, bytes.
    pub rwnd: u64,
    /// SACK (RFC 2018) offered; RFC 6675 or Linux's recovery when both ends have it.
    pub sack: bool,
    /// RFC 2883 D-SACK reports from the receiver.
    pub dsack: bool,
    /// RFC 7323 timestamps offered.
    pub timestamps: bool,
    /// RFC 3168 ECN offered.
    pub ecn: bool,
    /// The sender paces (Linux's internal pacing rate; BBR's own).
    pub pacing: bool,
    /// Classic stack: RFC 6937 PRR in RFC 6675 recovery (the Linux stack always has it).
    pub prr: bool,
    /// Linux stack: RACK-TLP loss detection (RFC 8985) instead of RFC 6675 IsLost.
    pub rack: bool,
    /// RFC 3042 Limited Transmit.
    pub limited_transmit: bool,
    /// Receiver: delayed ACKs (RFC 1122 §4.2.3.2, RFC 5681 §4.2), and the timer.
    pub delayed_ack: bool,
    pub delayed_ack_timeout: SimDuration,
    /// Receiver: segments acknowledged at once at the start (Linux quick-ACK mode).
    pub quickack: u32,
    /// Retransmission timer bounds (RFC 6298 (2.1), (2.4), (2.5)).
    pub rto: RtoBounds,
    /// NewReno's timer on partial ACKs (RFC 6582 §4).
    pub partial_ack_timer: PartialAckTimer,
    /// Receiver: answer low-priority probes with flagged ACKs (the TCP-Peach family's
    /// `probe_ack = "flagged"`).
    pub flag_probe_acks: bool,
}

/// The shortest retransmission, persist and delayed-ACK timer a flow may set.
pub const MIN_TIMER: SimDuration = SimDuration::from_millis(1);

/// How a profile is reported in a result (`flows[].profile`): what ran, in the units of
/// the result contract.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProfileReport {
    /// "classic" or "linux".
    pub stack: &'static str,
    /// The congestion control ("reno", "hybla", "peach", "cubic", "bbr").
    pub cc: &'static str,
    /// The loss recovery that runs when both ends use this profile: "tahoe", "reno",
    /// "newreno", "sack" (RFC 6675), "peach", "peach+", "cherry" or "linux".
    pub recovery: &'static str,
    pub mss: u32,
    pub iw_bytes: u64,
    pub rwnd_bytes: u64,
    pub sack: bool,
    pub dsack: bool,
    pub timestamps: bool,
    pub ecn: bool,
    pub pacing: bool,
    pub prr: bool,
    pub rack: bool,
    pub limited_transmit: bool,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_s: f64,
    pub quickack: u32,
    pub min_rto_s: f64,
    pub initial_rto_s: f64,
    pub max_rto_s: f64,
}

impl TcpProfile {
    /// Whether the flow sends low-priority probes or uses ECN (its result then reports
    /// those counters).
    pub fn uses_classes(&self) -> bool {
        self.ecn || matches!(self.recovery, RecoveryKind::Peach(_))
    }

    /// The Linux stack's machinery (its RTT estimator and RTO, cwnd validation, delivery
    /// rate sampling, and its recovery state machine once SACK is negotiated).
    pub fn linux(&self) -> bool {
        self.stack == Stack::Linux
    }

    /// The name of the loss recovery that runs when both ends have this profile.
    pub fn recovery_name(&self) -> &'static str {
        match (self.recovery, self.sack) {
            (RecoveryKind::Tahoe, _) => "tahoe",
            (RecoveryKind::Peach(c), _) => c.variant.name(),
            (RecoveryKind::Linux, true) => "linux",
            (RecoveryKind::Linux, false) | (RecoveryKind::NewReno { .. }, false) => "newreno",
            (RecoveryKind::Reno, false) => "reno",
            (RecoveryKind::Reno | RecoveryKind::NewReno { .. }, true) => "sack",
        }
    }

    pub fn report(&self) -> ProfileReport {
        ProfileReport {
            stack: self.stack.name(),
            cc: self.cc.name(),
            recovery: self.recovery_name(),
            mss: self.mss,
            iw_bytes: self.iw_bytes,
            rwnd_bytes: self.rwnd,
            sack: self.sack,
            dsack: self.dsack,
            timestamps: self.timestamps,
            ecn: self.ecn,
            pacing: self.pacing,
            prr: self.prr,
            rack: self.rack,
            limited_transmit: self.limited_transmit,
            delayed_ack: self.delayed_ack,
            delayed_ack_timeout_s: self.delayed_ack_timeout.as_secs_f64(),
            quickack: self.quickack,
            min_rto_s: self.rto.min.as_secs_f64(),
            initial_rto_s: self.rto.initial.as_secs_f64(),
            max_rto_s: self.rto.max.as_secs_f64(),
        }
    }

    /// The profile of a flow's `[[flow]]` keys; `path` is `flow[i]`.
    pub fn resolve(f: &FlowSpec, path: &str) -> Result<TcpProfile, ScenarioError> {
        let p = path;
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
        let (stack, tcp) = f.stack_and_tcp();
        let (mut cc, rec_name) = tcp.on(stack).or_else(|why| {
            err(
                format!("{p}.stack"),
                format!("tcp = {:?} {why}", tcp.name()),
            )
        })?;
        let d = stack.defaults();
        let rwnd = f.rwnd.map(|b| b.0).unwrap_or(d.rwnd);
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
        let iw = f.iw.clone().unwrap_or(IwSpec::Segments(d.iw_segments));
        let iw_bytes = IwSpec::bytes(Some(&iw), mss, &format!("{p}.iw"))?;
        let dur =
            |v: Option<crate::units::Duration>, def: SimDuration| v.map(|v| v.0).unwrap_or(def);
        let rto = RtoBounds {
            initial: dur(f.initial_rto, d.initial_rto),
            min: dur(f.min_rto, d.min_rto),
            max: dur(f.max_rto, d.max_rto),
        };
        // RFC 6298 recommends 1 s and Linux uses 200 ms; below 1 ms no real stack times
        // out, and a zero timer would fire forever at one instant.
        for (key, v) in [("min_rto", rto.min), ("initial_rto", rto.initial)] {
            if v < MIN_TIMER {
                return err(
                    format!("{p}.{key}"),
                    format!("must be at least 1ms, got {v}"),
                );
            }
        }
        if rto.max < rto.min || rto.max < rto.initial {
            return err(
                format!("{p}.max_rto"),
                "must be at least min_rto and initial_rto",
            );
        }
        let delayed_ack_timeout = dur(f.delayed_ack_timeout, d.delayed_ack_timeout);
        if delayed_ack_timeout < MIN_TIMER {
            return err(
                format!("{p}.delayed_ack_timeout"),
                format!("must be at least 1ms, got {delayed_ack_timeout}"),
            );
        }
        if f.ssthresh == Some(0) {
            return err(format!("{p}.ssthresh"), "must be at least 1 segment");
        }
        match &mut cc {
            CcConfig::Hybla(h) => {
                *h = HyblaSpec::resolve(f.hybla.as_ref(), *h, &format!("{p}.hybla"))?;
            }
            _ if f.hybla.is_some() => {
                return err(format!("{p}.hybla"), "only applies to tcp = \"hybla\"")
            }
            _ => {}
        }
        let recovery = match rec_name {
            RecoveryName::Tahoe => RecoveryKind::Tahoe,
            RecoveryName::Reno => RecoveryKind::Reno,
            RecoveryName::NewReno => RecoveryKind::NewReno {
                partial_ack_timer_every: f.partial_ack_timer == Some(PartialAckTimer::Every),
            },
            RecoveryName::Peach(v) => RecoveryKind::Peach(PeachSpec::resolve(
                f.peach.as_ref(),
                v,
                &format!("{p}.peach"),
            )?),
            RecoveryName::Linux => RecoveryKind::Linux,
        };
        if f.peach.is_some() && !matches!(rec_name, RecoveryName::Peach(_)) {
            return err(
                format!("{p}.peach"),
                "only applies to tcp = \"peach\", \"peach+\" or \"cherry\"",
            );
        }
        let mut pacing = f.pacing.unwrap_or(d.pacing);
        if cc == CcConfig::Bbr {
            if f.pacing == Some(false) {
                return err(
                    format!("{p}.pacing"),
                    "BBR always paces (it sets its pacing rate)",
                );
            }
            pacing = true;
        }
        let prr = match f.prr {
            Some(false) if stack == Stack::Linux => {
                return err(format!("{p}.prr"), "the Linux stack always uses PRR")
            }
            Some(v) => v,
            None => d.prr,
        };
        let rack = match f.rack {
            Some(true) if stack == Stack::Classic => {
                return err(format!("{p}.rack"), "RACK-TLP needs stack = \"linux\"")
            }
            Some(v) => v,
            None => d.rack,
        };
        Ok(TcpProfile {
            tcp,
            stack,
            cc,
            recovery,
            mss,
            iw_bytes,
            initial_ssthresh: f.ssthresh.map(|s| s as u64 * mss as u64),
            rwnd,
            // Peach+ and Cherry find missing segments on the SACK scoreboard (seed 004,
            // fig. 3: Quick Recovery "updates the SACK scoreboard"): SACK unless told
            sack: f.sack.unwrap_or(match recovery {
                RecoveryKind::Peach(c) if c.variant != Variant::Peach => true,
                _ => d.sack,
            }),
            dsack: f.dsack.unwrap_or(d.dsack),
            timestamps: f.timestamps.unwrap_or(d.timestamps),
            ecn: f.ecn,
            pacing,
            prr,
            rack,
            limited_transmit: f.limited_transmit,
            delayed_ack: f.delayed_ack.unwrap_or(true),
            delayed_ack_timeout,
            quickack: f.quickack.unwrap_or(d.quickack),
            rto,
            partial_ack_timer: f.partial_ack_timer.unwrap_or_default(),
            flag_probe_acks: matches!(recovery, RecoveryKind::Peach(c) if c.probe_ack == ProbeAck::Flagged),
        })
    }

    /// The classic stack's NewReno with segments of `mss` bytes and every other key at
    /// the classic stack's default, without checks (a middlebox's own connection, whose
    /// segment size comes from a peer's SYN).
    pub fn classic_newreno(mss: u32) -> TcpProfile {
        let d = Stack::Classic.defaults();
        TcpProfile {
            tcp: TcpKind::Newreno,
            stack: Stack::Classic,
            cc: CcConfig::Reno,
            recovery: RecoveryKind::NewReno {
                partial_ack_timer_every: false,
            },
            mss,
            iw_bytes: d.iw_segments as u64 * mss as u64,
            initial_ssthresh: None,
            rwnd: d.rwnd,
            sack: d.sack,
            dsack: d.dsack,
            timestamps: d.timestamps,
            ecn: false,
            pacing: d.pacing,
            prr: d.prr,
            rack: d.rack,
            limited_transmit: false,
            delayed_ack: true,
            delayed_ack_timeout: d.delayed_ack_timeout,
            quickack: d.quickack,
            rto: RtoBounds {
                initial: d.initial_rto,
                min: d.min_rto,
                max: d.max_rto,
            },
            partial_ack_timer: PartialAckTimer::First,
            flag_probe_acks: false,
        }
    }

    /// The papers' classic profile of `tcp` with segments of `mss` bytes and every other
    /// key at the classic stack's default (tests).
    pub fn classic(tcp: TcpKind, mss: u32) -> Result<TcpProfile, ScenarioError> {
        let spec = FlowSpec {
            tcp: Some(tcp),
            stack: Some(Stack::Classic),
            mss: Some(mss),
            ..FlowSpec::default()
        };
        TcpProfile::resolve(&spec, "tcp")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::CcConfig;
    use crate::time::SimDuration;

    fn flow(extra: &str) -> Result<TcpProfile, String> {
        let text = format!(r#"{{"src": "a", "dst": "b"{extra}}}"#);
        let spec: FlowSpec = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        TcpProfile::resolve(&spec, "flow[0]").map_err(|e| e.to_string())
    }

    #[test]
    fn linux_profile_defaults() {
        let c = flow(r#", "stack": "linux""#).unwrap();
        assert_eq!((c.tcp, c.cc), (TcpKind::Cubic, CcConfig::Cubic));
        assert_eq!(c.recovery, RecoveryKind::Linux);
        assert_eq!(c.iw_bytes, 10 * 1460);
        assert_eq!(c.rto.min, SimDuration::from_millis(200));
        assert_eq!(c.rto.max, SimDuration::from_secs(120));
        assert!(c.sack && c.timestamps && c.linux() && c.rack && c.prr && c.dsack);
        assert!(!c.pacing);
        assert_eq!(c.delayed_ack_timeout, SimDuration::from_millis(40));
        assert_eq!((c.rwnd, c.quickack), (6 << 20, 16));
        assert_eq!(c.recovery_name(), "linux");
        // the flow's own keys override the profile
        let c = flow(r#", "stack": "linux", "tcp": "reno", "iw": 4, "timestamps": false"#).unwrap();
        assert_eq!(c.cc, CcConfig::LinuxReno);
        assert_eq!(c.iw_bytes, 4 * 1460);
        assert!(!c.timestamps);
        let c = flow(r#", "stack": "linux", "sack": false"#).unwrap();
        assert_eq!(
            c.recovery_name(),
            "newreno",
            "the Linux profile without SACK"
        );
    }

    #[test]
    fn classic_is_unchanged_when_pinned() {
        let c = flow(r#", "stack": "classic""#).unwrap();
        assert_eq!((c.tcp, c.cc), (TcpKind::Newreno, CcConfig::Reno));
        assert_eq!(
            c,
            TcpProfile::classic_newreno(1460),
            "the unchecked constructor"
        );
        assert_eq!(c.iw_bytes, 1460);
        assert_eq!(c.rto.min, SimDuration::from_secs(1));
        assert!(!c.linux() && !c.sack && !c.timestamps && !c.prr && !c.rack);
        assert_eq!(c.recovery_name(), "newreno");
        // classic CUBIC is allowed: Linux's window growth with the classic recovery
        let c = flow(r#", "tcp": "cubic", "stack": "classic""#).unwrap();
        assert_eq!((c.stack, c.cc), (Stack::Classic, CcConfig::Cubic));
        let c = flow(r#", "tcp": "reno", "sack": true, "stack": "classic""#).unwrap();
        assert_eq!(
            c.recovery_name(),
            "sack",
            "RFC 6675 replaces Reno's recovery"
        );
    }

    /// Issue 25 item 1: one default profile for every congestion control, the Linux
    /// stack wherever it runs the variant; the rest keep the classic stack.
    #[test]
    fn the_default_stack_is_linux_wherever_the_table_allows() {
        let c = flow("").unwrap();
        assert_eq!(
            (c.stack, c.tcp, c.cc),
            (Stack::Linux, TcpKind::Cubic, CcConfig::Cubic)
        );
        for row in &VARIANTS {
            let name = row.tcp.name();
            let p = flow(&format!(r#", "tcp": "{name}""#)).unwrap();
            let want = if row.linux.is_ok() {
                Stack::Linux
            } else {
                Stack::Classic
            };
            assert_eq!(p.stack, want, "tcp = {name}");
            assert_eq!(
                p,
                flow(&format!(r#", "tcp": "{name}", "stack": "{}""#, want.name())).unwrap()
            );
        }
        // the comparison users make first runs on one profile
        let pick = |t: &str| flow(&format!(r#", "tcp": "{t}""#)).unwrap();
        let (cubic, bbr, hybla) = (pick("cubic"), pick("bbr"), pick("hybla"));
        for p in [&bbr, &hybla] {
            assert_eq!(
                (p.stack, p.iw_bytes, p.rwnd, p.sack, p.rto.min),
                (
                    cubic.stack,
                    cubic.iw_bytes,
                    cubic.rwnd,
                    cubic.sack,
                    cubic.rto.min
                )
            );
        }
        assert_eq!(pick("tahoe").stack, Stack::Classic);
        assert_eq!(pick("peach+").stack, Stack::Classic);
    }

    #[test]
    fn contradictions_are_errors_naming_the_field() {
        let e = flow(r#", "tcp": "bbr", "stack": "classic""#).unwrap_err();
        assert!(e.contains("flow[0].stack") && e.contains("linux"), "{e}");
        let e = flow(r#", "tcp": "bbr", "pacing": false"#).unwrap_err();
        assert!(e.contains("flow[0].pacing"), "{e}");
        let e = flow(r#", "stack": "classic", "rack": true"#).unwrap_err();
        assert!(e.contains("flow[0].rack"), "{e}");
        let e = flow(r#", "stack": "linux", "prr": false"#).unwrap_err();
        assert!(e.contains("flow[0].prr"), "{e}");
        let e = flow(r#", "tcp": "cubic", "hybla": {}"#).unwrap_err();
        assert!(e.contains("flow[0].hybla"), "{e}");
        let e = flow(r#", "tcp": "cubic", "peach": {}"#).unwrap_err();
        assert!(e.contains("flow[0].peach"), "{e}");
        assert!(flow(r#", "stack": "bsd""#).is_err());
    }

    /// Every variant the scenario schema names, on each stack: the table decides, the
    /// resolved profile runs the table's congestion control and recovery, and a refusal
    /// names `stack` with the table's reason.
    #[test]
    fn every_variant_on_every_stack_follows_the_table() {
        let schema: serde_json::Value =
            serde_json::from_str(&crate::scenario::json_schema()).unwrap();
        let defs = schema
            .get("definitions")
            .or_else(|| schema.get("$defs"))
            .unwrap();
        let names: Vec<String> = defs["TcpKind"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|v| v["enum"].as_array().unwrap().clone())
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        assert_eq!(names.len(), VARIANTS.len(), "a row per variant: {names:?}");
        let mut refused = vec![];
        for name in &names {
            let kind: TcpKind = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(kind.name(), name);
            for stack in [Stack::Classic, Stack::Linux] {
                let r = flow(&format!(
                    r#", "tcp": "{name}", "stack": "{}""#,
                    stack.name()
                ));
                match (kind.on(stack), r) {
                    (Ok((cc, rec)), Ok(p)) => {
                        assert_eq!(p.cc, cc, "{name} on {stack:?}: default options");
                        assert_eq!(p.cc.build().name(), cc.name());
                        let linux = matches!(rec, RecoveryName::Linux);
                        assert_eq!(p.recovery == RecoveryKind::Linux, linux);
                        assert_eq!(
                            linux,
                            stack == Stack::Linux,
                            "Linux recovery iff the Linux stack"
                        );
                        assert_eq!(p.report().stack, stack.name());
                    }
                    (Err(why), Err(e)) => {
                        refused.push(format!("{name} on {}", stack.name()));
                        assert!(e.contains("flow[0].stack") && e.contains(why), "{e}");
                    }
                    (want, got) => panic!("{name} on {stack:?}: table {want:?}, resolved {got:?}"),
                }
            }
        }
        for r in [
            "tahoe on linux",
            "peach on linux",
            "peach+ on linux",
            "cherry on linux",
            "bbr on classic",
        ] {
            assert!(refused.iter().any(|x| x == r), "{r} in {refused:?}");
        }
    }

    #[test]
    fn the_report_states_what_runs() {
        let r = flow(r#", "stack": "linux", "tcp": "bbr", "mss": 1000"#)
            .unwrap()
            .report();
        assert_eq!((r.stack, r.cc, r.recovery), ("linux", "bbr", "linux"));
        assert_eq!((r.mss, r.iw_bytes, r.rwnd_bytes), (1000, 10_000, 6 << 20));
        assert!(r.pacing && r.sack && r.timestamps);
        assert_eq!((r.min_rto_s, r.delayed_ack_timeout_s), (0.2, 0.04));
        let r = flow(r#", "tcp": "peach+", "sack": true"#).unwrap().report();
        assert_eq!((r.stack, r.cc, r.recovery), ("classic", "peach", "peach+"));
    }

    #[test]
    fn peach_plus_and_cherry_offer_sack_unless_told() {
        // seed 004: Quick Recovery works on the SACK scoreboard; TCP-Peach does not
        for (tcp, sack) in [("peach", false), ("peach+", true), ("cherry", true)] {
            assert_eq!(
                flow(&format!(r#", "tcp": "{tcp}""#)).unwrap().sack,
                sack,
                "{tcp}"
            );
            let off = flow(&format!(r#", "tcp": "{tcp}", "sack": false"#)).unwrap();
            assert!(!off.sack, "{tcp}: the flow's key wins");
        }
    }
}
