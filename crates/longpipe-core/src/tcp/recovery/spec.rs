//! What a profile says of its loss recovery, as data: [`RecoveryKind`] and the TCP-Peach
//! family's options ([`PeachSpec`] as written, [`PeachConfig`] resolved). The schemes
//! themselves ([`super::Recovery`]) act on the sender and live beside this file; the
//! profile ([`crate::tcp::profile`]) needs only the data, so it does not depend on them.

use crate::error::{err, ScenarioError};
use schemars::JsonSchema;
use serde::Deserialize;

/// The loss recovery of a profile (`TcpProfile::recovery`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryKind {
    Tahoe,
    Reno,
    NewReno {
        /// Restart the RTO on every partial ACK (Slow-but-Steady) instead of the first
        /// only (Impatient), RFC 6582 §4.
        partial_ack_timer_every: bool,
    },
    /// TCP-Peach, TCP-Peach+ or TCP-Cherry (their own recovery, SACK or not).
    Peach(PeachConfig),
    /// The Linux engine (PRR, RACK-TLP, undo) when SACK is negotiated; NewReno's
    /// recovery in the classic engine otherwise.
    Linux,
}

impl RecoveryKind {
    /// Whether a connection with this recovery runs the Linux engine; `sack` when SACK
    /// was negotiated.
    pub fn linux_engine(self, sack: bool) -> bool {
        self == RecoveryKind::Linux && sack
    }
}

/// Which member of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Peach,
    PeachPlus,
    Cherry,
}

impl Variant {
    /// The scenario's name (`tcp = ...`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::Peach => "peach",
            Variant::PeachPlus => "peach+",
            Variant::Cherry => "cherry",
        }
    }
}

/// How the receiver lets the sender tell the ACKs of probes apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeAck {
    /// The receiver acknowledges every low-priority segment at once, with an ACK that
    /// is itself of the low-priority class (DSCP LE in its IPv4 header); the sender
    /// counts such ACKs as probe ACKs and never as duplicate ACKs.
    #[default]
    Flagged,
    /// An unmodified receiver: probes are acknowledged like any segment (a dummy, being
    /// old data, draws an immediate duplicate ACK), and the sender cannot tell them
    /// apart: probes then trigger spurious fast retransmits and never grow the window.
    Plain,
}

/// The flow's `peach = { ... }` table (tcp = "peach", "peach+" or "cherry").
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct PeachSpec {
    /// "flagged" (default) or "plain"; see docs/notes/peach.md.
    #[serde(default)]
    pub probe_ack: Option<ProbeAck>,
    /// Fig. 3 `maxburst`: segments sent at most per ACK in recovery. Default 4.
    #[serde(default)]
    pub maxburst: Option<u32>,
    /// Run the start phase (Sudden/Jump/Fast-Forward Start) again after a
    /// retransmission timeout. Default true.
    #[serde(default)]
    pub restart_after_rto: Option<bool>,
    /// tcp = "cherry" only: supplement segments per smoothed RTT in congestion
    /// avoidance. Default 1.
    #[serde(default)]
    pub ca_probes: Option<u32>,
}

/// Resolved options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeachConfig {
    pub variant: Variant,
    pub probe_ack: ProbeAck,
    pub maxburst: u32,
    pub restart_after_rto: bool,
    /// Supplement segments per RTT in congestion avoidance (0 but for Cherry).
    pub ca_probes: u32,
}

impl PeachSpec {
    /// Defaults and checks; `path` is the spec's field path (`flow[i].peach`).
    pub fn resolve(
        spec: Option<&PeachSpec>,
        variant: Variant,
        path: &str,
    ) -> Result<PeachConfig, ScenarioError> {
        let d = PeachSpec::default();
        let s = spec.unwrap_or(&d);
        if s.ca_probes.is_some() && variant != Variant::Cherry {
            return err(
                format!("{path}.ca_probes"),
                "only applies to tcp = \"cherry\"",
            );
        }
        let maxburst = s.maxburst.unwrap_or(4);
        if maxburst == 0 {
            return err(format!("{path}.maxburst"), "must be at least 1 segment");
        }
        let ca_probes = match variant {
            Variant::Cherry => s.ca_probes.unwrap_or(1),
            _ => 0,
        };
        if ca_probes > 1000 {
            return err(
                format!("{path}.ca_probes"),
                format!("must be at most 1000, got {ca_probes}"),
            );
        }
        Ok(PeachConfig {
            variant,
            probe_ack: s.probe_ack.unwrap_or_default(),
            maxburst,
            restart_after_rto: s.restart_after_rto.unwrap_or(true),
            ca_probes,
        })
    }
}
