//! What a run reports about its ATM parts: each ATM link direction's counters (the
//! link's `l2` in the result) and each VC's, summed over the elements it crossed (the
//! result's `atm.vcs`).

use super::line::AtmLineCounters;
use super::{PortLimits, VcCounters};
use serde::Serialize;

/// An ATM link direction's `l2` report.
#[derive(Debug, Clone, Serialize)]
pub struct AtmLineReport {
    /// "adapter" (a host or router sends packets as cells) or "port" (a switch's output).
    pub sender: &'static str,
    /// The port's discard policy and buffer (ports only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_cells: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epd_threshold_cells: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scd_threshold_cells: Option<u64>,
    pub cells_in: u64,
    pub cells_out: u64,
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
    pub cells_lost: u64,
    /// Cells tagged by the UPC of the switch this direction enters.
    pub cells_tagged: u64,
    /// Adapter: packets segmented and refused (buffer full).
    pub pdus_in: u64,
    pub pdus_refused: u64,
    /// Reassembly at the receiving end (a host or router).
    pub pdus_delivered: u64,
    pub pdus_lost: u64,
    pub loss_events: u64,
}

impl AtmLineReport {
    pub fn new(c: &AtmLineCounters, port: Option<PortLimits>, cells_tagged: u64) -> Self {
        AtmLineReport {
            sender: if port.is_some() { "port" } else { "adapter" },
            policy: port.map(|p| p.policy.name()),
            buffer_cells: port.map(|p| p.buffer),
            epd_threshold_cells: port.map(|p| p.epd_threshold),
            scd_threshold_cells: port.map(|p| p.scd_threshold),
            cells_in: c.cells_in,
            cells_out: c.cells_out,
            cells_dropped: c.cells_dropped(),
            dropped_full: c.dropped_full,
            dropped_tagged: c.dropped_tagged,
            dropped_epd: c.dropped_epd,
            dropped_ppd: c.dropped_ppd,
            dropped_clp1: c.dropped_clp1,
            pdus_discarded_whole: c.epd_pdus,
            cells_lost: c.cells_lost,
            cells_tagged,
            pdus_in: c.pdus_in,
            pdus_refused: c.pdus_refused,
            pdus_delivered: c.pdus_delivered,
            pdus_lost: c.pdus_lost,
            loss_events: c.loss_events,
        }
    }
}

/// One VC over the whole run.
#[derive(Debug, Clone, Serialize)]
pub struct VcReport {
    pub vc: u32,
    pub flow: usize,
    /// "data" (sender to receiver) or "ack".
    pub dir: &'static str,
    #[serde(flatten)]
    pub counters: VcCounters,
}

/// The result's `atm` section.
#[derive(Debug, Clone, Serialize)]
pub struct AtmReport {
    pub vcs: Vec<VcReport>,
}
