//! The RLC AM bearer's configuration: the scenario's `layer2 = { kind = "rlc-am" }`
//! table ([`RlcSpec`], with TS 25.322 ranges and this project's defaults), its resolved
//! form ([`RlcConfig`]), and its counters and result report.

use crate::error::{err, ScenarioError};
use crate::stats::{Last, Samples};
use crate::tagged::Resolve;
use crate::time::SimDuration;
use crate::units::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The scenario's `layer2 = { kind = "rlc-am", ... }`: 3GPP TS 25.322 RLC acknowledged
/// mode; the link rate is the bearer's payload rate.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RlcSpec {
    /// PDU payload octets (default 40).
    #[serde(default)]
    pub pdu_payload: Option<u32>,
    /// PDU header octets (default 2).
    #[serde(default)]
    pub header: Option<u32>,
    /// Transmission time interval (default 10ms).
    #[serde(default)]
    pub tti: Option<Duration>,
    /// Transmit window in PDUs (default 512).
    #[serde(default)]
    pub window: Option<u32>,
    /// Maximum transmissions of a PDU before its SDUs are discarded (default 15).
    #[serde(default)]
    pub max_dat: Option<u32>,
    /// Poll every this many new PDUs (default 0 = off).
    #[serde(default)]
    pub poll_pdu: Option<u32>,
    /// Poll when the transmit window is this % full and no poll is outstanding
    /// (default 50; 0 = off).
    #[serde(default)]
    pub poll_window: Option<u32>,
    /// Timer_Poll (default 200ms).
    #[serde(default)]
    pub poll_timer: Option<Duration>,
    /// Timer_Poll_Prohibit (default 0ms).
    #[serde(default)]
    pub poll_prohibit: Option<Duration>,
    /// Timer_Status_Prohibit (default 50ms).
    #[serde(default)]
    pub status_prohibit: Option<Duration>,
    /// Processing delay per PDU (default 0).
    #[serde(default)]
    pub pdu_delay: Option<Duration>,
    /// Processing delay per SDU at delivery (default 0).
    #[serde(default)]
    pub sdu_delay: Option<Duration>,
}

impl Resolve for RlcSpec {
    type Config = RlcConfig;
    /// Defaults (TS 25.322 ranges where they exist) and checks.
    fn resolve(&self, path: &str) -> Result<RlcConfig, ScenarioError> {
        let d = |v: Option<Duration>, def: SimDuration| v.map(|d| d.0).unwrap_or(def);
        let c = RlcConfig {
            pdu_payload: self.pdu_payload.unwrap_or(40),
            header: self.header.unwrap_or(2),
            tti: d(self.tti, SimDuration::from_millis(10)),
            window: self.window.unwrap_or(512) as u64,
            max_dat: self.max_dat.unwrap_or(15),
            poll_pdu: self.poll_pdu.unwrap_or(0),
            poll_window: self.poll_window.unwrap_or(50),
            poll_timer: d(self.poll_timer, SimDuration::from_millis(200)),
            poll_prohibit: d(self.poll_prohibit, SimDuration::ZERO),
            status_prohibit: d(self.status_prohibit, SimDuration::from_millis(50)),
            pdu_delay: d(self.pdu_delay, SimDuration::ZERO),
            sdu_delay: d(self.sdu_delay, SimDuration::ZERO),
        };
        if c.pdu_payload == 0 || c.pdu_payload > 65_535 {
            return err(
                format!("{path}.pdu_payload"),
                format!("must be from 1 to 65535 octets, got {}", c.pdu_payload),
            );
        }
        if c.header > 64 {
            return err(
                format!("{path}.header"),
                format!(
                    "must be at most 64 octets (an AMD header is 2, plus length indicators), got {}",
                    c.header
                ),
            );
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
        Ok(c)
    }
}

#[derive(Debug, Clone)]
pub struct RlcConfig {
    pub pdu_payload: u32,
    pub header: u32,
    pub tti: SimDuration,
    pub window: u64,
    pub max_dat: u32,
    /// 0 = off
    pub poll_pdu: u32,
    /// Poll when the transmit window is this many percent full and no poll is
    /// outstanding (TS 25.322 Poll_Window); 0 = off.
    pub poll_window: u32,
    pub poll_timer: SimDuration,
    pub poll_prohibit: SimDuration,
    pub status_prohibit: SimDuration,
    /// Fixed processing delay added to every PDU and to every delivered SDU.
    pub pdu_delay: SimDuration,
    pub sdu_delay: SimDuration,
}

crate::counters! {
    /// RLC counters. Serialized (the first seven) inside the result's `links[].l2`.
    #[derive(Serialize, schemars::JsonSchema)]
    pub struct RlcCounters {
        pub pdus_sent: u64,
        pub pdus_retransmitted: u64,
        pub pdus_lost: u64,
        pub status_sent: u64,
        pub polls: u64,
        pub sdus_delivered: u64,
        pub sdus_discarded: u64,
        /// SDUs the buffer accepted.
        #[serde(skip)]
        pub sdus_in: u64,
        /// SDUs refused by a full buffer.
        #[serde(skip)]
        pub sdus_dropped_queue: u64,
        /// PDU slots used (one PDU each).
        #[serde(skip)]
        pub slots_used: u64,
        /// Per delivered SDU: from entering RLC to delivery, ns.
        #[serde(skip)]
        pub sdu_delay_ns: Samples,
        /// PDU slots of the TTIs that started so far (a function of time).
        #[serde(skip)]
        pub slots: u64,
        /// PDUs per TTI (a constant of the bearer).
        #[serde(skip)]
        pub pdus_per_tti: Last<u32>,
    }
}

/// The result's `links[].l2` for an RLC direction.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RlcReport {
    pub pdus_per_tti: u32,
    #[serde(flatten)]
    pub counters: RlcCounters,
    /// RLC-induced delay per SDU (entering RLC to in-sequence delivery).
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub sdu_delay_mean_s: Option<f64>,
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub sdu_delay_p50_s: Option<f64>,
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub sdu_delay_p95_s: Option<f64>,
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub sdu_delay_max_s: Option<f64>,
}

impl RlcCounters {
    /// Share of the PDU slots of the measured TTIs that carried a PDU.
    pub fn utilization(&self) -> f64 {
        if self.slots > 0 {
            self.slots_used as f64 / self.slots as f64
        } else {
            0.0
        }
    }

    /// The report of the interval these counters cover.
    pub fn report(&self, pdus_per_tti: u32) -> RlcReport {
        let mut d = self.sdu_delay_ns.0.clone();
        d.sort_unstable();
        let q = |f: f64| {
            (!d.is_empty()).then(|| d[((d.len() - 1) as f64 * f).round() as usize] as f64 * 1e-9)
        };
        RlcReport {
            pdus_per_tti,
            counters: self.clone(),
            sdu_delay_mean_s: (!d.is_empty())
                .then(|| d.iter().sum::<u64>() as f64 / d.len() as f64 * 1e-9),
            sdu_delay_p50_s: q(0.5),
            sdu_delay_p95_s: q(0.95),
            sdu_delay_max_s: q(1.0),
        }
    }
}
