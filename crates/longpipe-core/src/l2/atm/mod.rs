//! Cell-level ATM (seed 002; ALGORITHMS.md §4): AAL5 segmentation and reassembly at
//! host adapters, switches that move cells between lines by virtual channel, output-port
//! buffers counted in cells with the UBR / EPD / SCD / SCD+EPD discard policies, and
//! usage parameter control (GCRA) per input line that tags cells CLP = 1.
//!
//! Two elements:
//! - [`line::AtmLine`], one direction of a link with `layer2 = { kind = "atm" }`: the
//!   buffer and transmitter at its sending end (a host adapter that segments packets,
//!   or a switch output port that takes cells under its discard policy), cell loss, the
//!   propagation delay, and at its receiving end either cells (into a switch) or
//!   reassembled packets (into a host or router).
//! - [`switch::AtmSwitch`], the `atm-switch` node: polices cells arriving on each input
//!   line (the line's VP) and hands each cell to the output line of its VC's route.
//!
//! One VC per TCP connection and direction ([`VcTable`]); a VC's route is the
//! scenario's shortest path.
//!
//! Speed: a port never needs a timer. Its discard decisions are taken at arrival from
//! the occupancy the arrival finds, and it serves cells first-in first-out at a fixed
//! rate, so each accepted cell's departure is known when it is admitted; the line emits
//! it then, timed for its arrival at the far end. A cell costs one event per switch it
//! enters (its arrival), and none on the lines into hosts, whose adapters reassemble at
//! admission and deliver one packet at its last cell's arrival.

pub mod aal5;
pub mod cell;
pub mod config;
pub mod discard;
pub mod gcra;
pub mod line;
pub mod report;
pub mod switch;

pub use cell::{Cell, VcId};
pub use config::{AtmLineConfig, AtmLineSpec, SwitchSpec, UpcConfig};
pub use discard::{Policy, PortLimits};

use crate::net::packet::Packet;
use crate::stats::Since;
use std::collections::BTreeMap;

/// The virtual channels of a run: one per TCP connection and direction, keyed by the
/// packets' addresses and ports.
#[derive(Debug, Default)]
pub struct VcTable {
    by_conn: BTreeMap<([u8; 4], [u8; 4], u16, u16), VcId>,
    /// Each VC's destination node.
    dst: Vec<u32>,
}

impl VcTable {
    /// Adds the VC that carries packets from `src`:`sport` to `dst`:`dport`, ending at
    /// node `dst_node`; its id.
    pub fn add(
        &mut self,
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        dst_node: usize,
    ) -> VcId {
        let id = self.dst.len() as VcId;
        self.by_conn.insert((src, dst, sport, dport), id);
        self.dst.push(dst_node as u32);
        id
    }

    /// The VC of a packet and its destination node.
    #[inline]
    pub fn lookup(&self, p: &Packet) -> Option<(VcId, u32)> {
        let vc = *self
            .by_conn
            .get(&(p.src, p.dst, p.seg.sport, p.seg.dport))?;
        Some((vc, self.dst[vc as usize]))
    }

    pub fn len(&self) -> usize {
        self.dst.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dst.is_empty()
    }
}

/// Counters kept per index (per VC, per port); differences are taken element by element.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerIndex<T>(pub Vec<T>);

impl<T: Since + Clone + Default> Since for PerIndex<T> {
    fn since(&self, base: &Self) -> Self {
        let zero = T::default();
        PerIndex(
            self.0
                .iter()
                .enumerate()
                .map(|(i, v)| v.since(base.0.get(i).unwrap_or(&zero)))
                .collect(),
        )
    }
}

impl<T: Clone + Default> PerIndex<T> {
    pub fn with_len(n: usize) -> Self {
        PerIndex(vec![T::default(); n])
    }

    /// The entry at `i`, grown to it if needed.
    #[inline]
    pub fn at(&mut self, i: usize) -> &mut T {
        if self.0.len() <= i {
            self.0.resize(i + 1, T::default());
        }
        &mut self.0[i]
    }
}

crate::counters! {
    /// What happened to one VC's cells and PDUs in one element (summed over elements in
    /// the result).
    #[derive(serde::Serialize, schemars::JsonSchema, PartialEq, Eq)]
    pub struct VcCounters {
        /// Cells made by segmentation at the sending adapter.
        pub cells_sent: u64,
        /// Cells tagged CLP = 1 by a switch's UPC.
        pub cells_tagged: u64,
        /// Cells discarded at switch buffers (any policy, incl. EPD and PPD).
        pub cells_dropped: u64,
        /// Cells lost to a line's loss model.
        pub cells_lost: u64,
        /// Cells that reached the receiving adapter (whole PDUs or not). Once the VC's
        /// cells have all arrived, cells_sent = cells_dropped + cells_lost + cells_received.
        pub cells_received: u64,
        /// PDUs (packets) segmented at the sending adapter.
        pub pdus_sent: u64,
        /// PDUs whose every cell EPD discarded at a switch.
        pub pdus_discarded_whole: u64,
        /// PDUs reassembled whole and delivered at the receiving adapter.
        pub pdus_delivered: u64,
        /// PDUs that did not arrive whole (discarded at reassembly, or no cell arrived).
        pub pdus_lost: u64,
        /// Loss events: epochs of the sender with a lost PDU (simultaneous losses once).
        pub loss_events: u64,
    }
}
