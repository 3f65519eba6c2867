//! What a run reports about its ATM parts: each ATM link direction's counters (the
//! link's `l2` in the result) and each VC's, summed over the elements it crossed (the
//! result's `atm.vcs`).

use super::line::AtmLineCounters;
use super::{PortLimits, VcCounters};
use serde::Serialize;

/// An ATM link direction's `l2` report. Fields that do not apply to the direction's
/// ends are left out: a switch port's (`policy` ... `pdus_discarded_whole`), a host
/// adapter's (`pdus_in`, `pdus_refused`), a line into a switch's (`cells_tagged`) and a
/// line into a host's (`pdus_delivered`, `pdus_lost`, `loss_events`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AtmLineReport {
    /// "adapter" (a host or router sends packets as cells) or "port" (a switch's output).
    pub sender: &'static str,
    pub cells_in: u64,
    pub cells_out: u64,
    pub cells_lost: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub port: Option<PortReport>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterReport>,
    /// Cells tagged by the UPC of the switch this direction enters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells_tagged: Option<u64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub reassembly: Option<ReassemblyReport>,
}

/// A switch output port: its policy, buffer, thresholds and discards.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PortReport {
    pub policy: &'static str,
    pub buffer_cells: u64,
    pub epd_threshold_cells: u64,
    pub scd_threshold_cells: u64,
    /// Cells the buffer discarded, in all and by reason.
    pub cells_dropped: u64,
    pub dropped_full: u64,
    pub dropped_tagged: u64,
    pub dropped_epd: u64,
    pub dropped_ppd: u64,
    /// Dropped cells that were tagged CLP = 1.
    pub dropped_clp1: u64,
    /// PDUs discarded whole by EPD.
    pub pdus_discarded_whole: u64,
}

/// A host adapter: packets segmented and refused (buffer full).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AdapterReport {
    pub pdus_in: u64,
    pub pdus_refused: u64,
}

/// Reassembly at the receiving end (a host or router).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ReassemblyReport {
    pub pdus_delivered: u64,
    pub pdus_lost: u64,
    pub loss_events: u64,
}

impl AtmLineReport {
    /// The report of a direction sent by a switch port (`port`) or an adapter, into a
    /// switch (`tagged` = the cells its UPC tagged) or a host (`tagged` = None).
    pub fn new(c: &AtmLineCounters, port: Option<PortLimits>, tagged: Option<u64>) -> Self {
        AtmLineReport {
            sender: if port.is_some() { "port" } else { "adapter" },
            cells_in: c.cells_in,
            cells_out: c.cells_out,
            cells_lost: c.cells_lost,
            port: port.map(|p| PortReport {
                policy: p.policy.name(),
                buffer_cells: p.buffer,
                epd_threshold_cells: p.epd_threshold,
                scd_threshold_cells: p.scd_threshold,
                cells_dropped: c.cells_dropped(),
                dropped_full: c.dropped_full,
                dropped_tagged: c.dropped_tagged,
                dropped_epd: c.dropped_epd,
                dropped_ppd: c.dropped_ppd,
                dropped_clp1: c.dropped_clp1,
                pdus_discarded_whole: c.epd_pdus,
            }),
            adapter: port.is_none().then_some(AdapterReport {
                pdus_in: c.pdus_in,
                pdus_refused: c.pdus_refused,
            }),
            cells_tagged: tagged,
            reassembly: tagged.is_none().then_some(ReassemblyReport {
                pdus_delivered: c.pdus_delivered,
                pdus_lost: c.pdus_lost,
                loss_events: c.loss_events,
            }),
        }
    }
}

/// One VC over the whole run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VcReport {
    pub vc: u32,
    pub flow: usize,
    /// "data" (sender to receiver) or "ack".
    pub dir: &'static str,
    #[serde(flatten)]
    pub counters: VcCounters,
}

/// The result's `atm` section.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AtmReport {
    pub vcs: Vec<VcReport>,
}
