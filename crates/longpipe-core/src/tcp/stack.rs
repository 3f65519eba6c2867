//! Stack profiles: a flow's `stack = "classic" | "linux"`, and each profile's defaults
//! for the flow keys that have one ([`Stack::defaults`]). The resolved profile of a
//! flow is a [`super::profile::TcpProfile`].
//!
//! Without `stack`, a flow runs on **linux** when the Linux stack runs its `tcp`, on
//! **classic** otherwise (tahoe and the TCP-Peach family): issue 25, and
//! docs/notes/defaults.md for the reason and every default's source.
//!
//! - **classic** is the TCP of the papers: RFC 5681 Reno growth, RFC 6582
//!   NewReno or RFC 6675 SACK recovery, RFC 6298 RTO with a 1 s minimum, IW 1, no
//!   timestamps, 200 ms delayed ACKs. The paper reproductions pin it.
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
    /// The papers' TCP (RFC 5681/6582/6675/6298); the default for tahoe and the
    /// TCP-Peach family only.
    Classic,
    /// A Linux 6.x profile; the default wherever it runs the flow's `tcp`.
    #[default]
    Linux,
}

/// Linux `TCP_MAX_QUICKACKS`.
pub const LINUX_QUICKACKS: u32 = 16;

/// The defaults of a profile for the flow keys that have one.
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    /// Initial window in segments.
    pub iw_segments: u32,
    pub sack: bool,
    pub dsack: bool,
    pub timestamps: bool,
    pub pacing: bool,
    pub prr: bool,
    pub rack: bool,
    pub quickack: u32,
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
                // RFC 5681 §3.1 (RFC 3390 and RFC 6928 are opt-in: `iw`)
                iw_segments: 1,
                sack: false,
                dsack: false,
                timestamps: false,
                pacing: false,
                prr: false,
                rack: false,
                quickack: 0,
                // RFC 6298 (2.4), (2.1), (2.5)
                min_rto: SimDuration::from_secs(1),
                initial_rto: SimDuration::from_secs(1),
                max_rto: SimDuration::from_secs(60),
                // RFC 1122 §4.2.3.2: at most 500 ms; BSD's 200 ms
                delayed_ack_timeout: SimDuration::from_millis(200),
                // 64 KiB: the largest window without RFC 7323 scaling
                rwnd: 65_536,
            },
            Stack::Linux => Defaults {
                // TCP_INIT_CWND (RFC 6928's 10 segments, without its 14600 B cap)
                iw_segments: 10,
                // net.ipv4.tcp_sack, tcp_dsack, tcp_timestamps = 1
                sack: true,
                dsack: true,
                timestamps: true,
                // sch_fq is not the default qdisc: no pacing unless the control sets it
                pacing: false,
                prr: true,
                // net.ipv4.tcp_recovery = 1 (RACK)
                rack: true,
                quickack: LINUX_QUICKACKS,
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
