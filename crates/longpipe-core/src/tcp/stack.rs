//! Stack profiles: a flow's `stack = "classic" | "linux"`.
//!
//! - **classic** (the default) is the TCP of the papers: RFC 5681 Reno growth, RFC 6582
//!   NewReno or RFC 6675 SACK recovery, RFC 6298 RTO with a 1 s minimum, IW 1, no
//!   timestamps, 200 ms delayed ACKs. Existing scenarios keep their results.
//! - **linux** models the TCP of a current Linux kernel (6.x, the kernel this project
//!   was developed on): IW 10, RTO = SRTT + max(200 ms, 4·mdev) (Linux's estimator,
//!   maximum 120 s), SACK with D-SACK, timestamps, PRR, RACK-TLP loss detection and
//!   undo of spurious reductions, CUBIC unless `tcp` says otherwise, Linux's cwnd
//!   validation (`tcp_is_cwnd_limited`), a 40 ms delayed-ACK timer with quick ACKs at
//!   the start of the connection, and a 6 MiB receive buffer (the `tcp_rmem` maximum that
//!   autotuning would reach). docs/notes/linux-profile.md lists what is and is not
//!   modelled.
//!
//! Every default of the profile can be overridden by the flow's own key.

use crate::time::SimDuration;
use schemars::JsonSchema;
use serde::Deserialize;

/// The `stack = ...` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Stack {
    /// The papers' TCP (RFC 5681/6582/6675/6298); today's defaults.
    #[default]
    Classic,
    /// A Linux 6.x profile.
    Linux,
}

/// Mechanisms that differ between the profiles, resolved for one flow; shared by the
/// sender and the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StackConfig {
    /// The Linux machinery: its RTT estimator and RTO, its loss-recovery state machine
    /// (PRR, RACK-TLP, undo), its cwnd validation and delivery-rate sampling.
    pub linux: bool,
    /// RFC 7323 timestamps (TSopt, RTTM, PAWS) when both ends have them.
    pub timestamps: bool,
    /// RFC 2883 D-SACK: the receiver reports duplicate segments.
    pub dsack: bool,
    /// Linux quick-ACK: the first `quickack` data segments are acknowledged at once.
    pub quickack: u32,
    /// Pacing in the sender (always on for BBR).
    pub pacing: bool,
    /// Classic stack: RFC 6937 PRR instead of RFC 6675's one-step reduction.
    pub prr: bool,
    /// Linux stack: RACK-TLP (RFC 8985) loss detection; otherwise RFC 6675 IsLost.
    pub rack: bool,
}

impl StackConfig {
    pub const CLASSIC: StackConfig = StackConfig {
        linux: false,
        timestamps: false,
        dsack: false,
        quickack: 0,
        pacing: false,
        prr: false,
        rack: false,
    };
    pub const LINUX: StackConfig = StackConfig {
        linux: true,
        timestamps: true,
        dsack: true,
        quickack: LINUX_QUICKACKS,
        pacing: false,
        prr: true,
        rack: true,
    };
}

/// Linux `TCP_MAX_QUICKACKS`.
pub const LINUX_QUICKACKS: u32 = 16;

/// The defaults of a profile for the flow keys that have one.
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    pub mechanisms: StackConfig,
    /// Initial window in segments (None: the `iw` rule's default, 1 segment).
    pub iw_segments: u32,
    pub sack: bool,
    pub min_rto: SimDuration,
    pub initial_rto: SimDuration,
    pub max_rto: SimDuration,
    pub delayed_ack_timeout: SimDuration,
    pub rwnd: u64,
}

impl Stack {
    pub fn name(self) -> &'static str {
        match self {
            Stack::Classic => "classic",
            Stack::Linux => "linux",
        }
    }

    pub fn defaults(self) -> Defaults {
        match self {
            Stack::Classic => Defaults {
                mechanisms: StackConfig::CLASSIC,
                iw_segments: 1,
                sack: false,
                min_rto: SimDuration::from_secs(1),
                initial_rto: SimDuration::from_secs(1),
                max_rto: SimDuration::from_secs(60),
                delayed_ack_timeout: SimDuration::from_millis(200),
                rwnd: 65_536,
            },
            Stack::Linux => Defaults {
                mechanisms: StackConfig::LINUX,
                // TCP_INIT_CWND (RFC 6928's 10 segments, without its 14600 B cap)
                iw_segments: 10,
                sack: true,
                // TCP_RTO_MIN, TCP_TIMEOUT_INIT, TCP_RTO_MAX
                min_rto: SimDuration::from_millis(200),
                initial_rto: SimDuration::from_secs(1),
                max_rto: SimDuration::from_secs(120),
                // TCP_ATO_MIN (Linux adapts the delayed-ACK timeout between 40 and
                // 200 ms; bulk data keeps it at the minimum)
                delayed_ack_timeout: SimDuration::from_millis(40),
                // tcp_rmem[2]: the buffer autotuning may grow to
                rwnd: 6 << 20,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::cc::CcConfig;
    use crate::tcp::config::{FlowSpec, TcpKind};
    use crate::tcp::recovery::RecoveryKind;
    use crate::time::SimDuration;

    fn flow(extra: &str) -> Result<crate::tcp::config::TcpConfig, String> {
        let text = format!(r#"{{"src": "a", "dst": "b"{extra}}}"#);
        let spec: FlowSpec = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        spec.resolve("flow[0]").map_err(|e| e.to_string())
    }

    #[test]
    fn linux_profile_defaults() {
        let c = flow(r#", "stack": "linux""#).unwrap();
        assert_eq!((c.tcp, c.cc), (TcpKind::Cubic, CcConfig::Cubic));
        assert_eq!(c.recovery, RecoveryKind::Linux);
        let s = &c.sender;
        assert_eq!(s.iw_bytes, 10 * 1460);
        assert_eq!(s.min_rto, SimDuration::from_millis(200));
        assert_eq!(s.max_rto, SimDuration::from_secs(120));
        assert!(s.sack_permitted && s.stack.timestamps && s.stack.linux && s.stack.rack);
        assert!(!s.stack.pacing);
        let r = &c.receiver;
        assert_eq!(r.delayed_ack_timeout, SimDuration::from_millis(40));
        assert_eq!((r.buffer, r.stack.quickack), (6 << 20, 16));
        assert!(r.sack && r.stack.dsack);
        // the flow's own keys override the profile
        let c = flow(r#", "stack": "linux", "tcp": "reno", "iw": 4, "timestamps": false"#).unwrap();
        assert_eq!(c.cc, CcConfig::LinuxReno);
        assert_eq!(c.sender.iw_bytes, 4 * 1460);
        assert!(!c.sender.stack.timestamps);
    }

    #[test]
    fn classic_is_unchanged_and_bbr_implies_linux() {
        let c = flow("").unwrap();
        assert_eq!((c.tcp, c.cc), (TcpKind::Newreno, CcConfig::Reno));
        assert_eq!(c.sender.stack, super::StackConfig::CLASSIC);
        assert_eq!(c.sender.iw_bytes, 1460);
        assert_eq!(c.sender.min_rto, SimDuration::from_secs(1));
        let c = flow(r#", "tcp": "bbr""#).unwrap();
        assert_eq!(c.stack, super::Stack::Linux);
        assert!(c.sender.stack.pacing, "BBR paces");
        // classic CUBIC is allowed: Linux's window growth with the classic recovery
        let c = flow(r#", "tcp": "cubic""#).unwrap();
        assert_eq!((c.stack, c.cc), (super::Stack::Classic, CcConfig::Cubic));
    }

    #[test]
    fn contradictions_are_errors_naming_the_field() {
        let e = flow(r#", "tcp": "bbr", "stack": "classic""#).unwrap_err();
        assert!(e.contains("flow[0].stack") && e.contains("linux"), "{e}");
        let e = flow(r#", "tcp": "bbr", "pacing": false"#).unwrap_err();
        assert!(e.contains("flow[0].pacing"), "{e}");
        let e = flow(r#", "rack": true"#).unwrap_err();
        assert!(e.contains("flow[0].rack"), "{e}");
        let e = flow(r#", "stack": "linux", "prr": false"#).unwrap_err();
        assert!(e.contains("flow[0].prr"), "{e}");
        assert!(flow(r#", "stack": "bsd""#).is_err());
    }
}
