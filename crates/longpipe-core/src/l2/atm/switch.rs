//! The `atm-switch` node: cells in on its input lines, out on the line toward their
//! VC's destination. Input ports with a traffic contract run usage parameter control:
//! the GCRA of that line (its VP, which groups all the VCs the line carries) tags
//! non-conforming CLP = 0 cells CLP = 1 — only when the switch's discard policy looks
//! at CLP (`scd`, `scd-epd`; UBR has no contract). The output buffers and their
//! discard policy are the output lines' ([`super::line::AtmLine`]).
//!
//! Ports are numbered as a forwarding node's ([`crate::net::routing::Routes::ports`]).

use super::cell::CellUnit;
use super::gcra::Gcra;
use super::PerIndex;
use crate::element::{Element, Emit, PortId};
use crate::net::routing::Routes;
use crate::time::SimTime;
use std::sync::Arc;

crate::counters! {
    /// Counters of a switch. (Cells switched are the output lines' `cells_in`: a cell
    /// on an unpoliced input passes straight through, uncounted here.)
    pub struct SwitchCounters {
        /// Cells tagged by UPC, per input port and per VC.
        pub tagged_by_port: PerIndex<u64>,
        pub tagged_by_vc: PerIndex<u64>,
        /// Units that could not be switched (a packet, or a cell with no route).
        pub stray: u64,
    }
}

pub struct AtmSwitch {
    node: usize,
    routes: Arc<Routes>,
    /// The UPC of each input port, if it polices.
    upc: Vec<Option<Gcra>>,
    c: SwitchCounters,
}

impl AtmSwitch {
    /// Switch `node`; `upc[k]` polices input port `k`.
    pub fn new(node: usize, routes: Arc<Routes>, upc: Vec<Option<Gcra>>, n_vcs: usize) -> Self {
        let n = upc.len();
        AtmSwitch {
            node,
            routes,
            upc,
            c: SwitchCounters {
                tagged_by_port: PerIndex::with_len(n),
                tagged_by_vc: PerIndex::with_len(n_vcs),
                ..Default::default()
            },
        }
    }
}

impl<U: CellUnit> Element<U> for AtmSwitch {
    type Metrics = SwitchCounters;

    fn handle(&mut self, now: SimTime, port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        let Ok(mut cell) = unit.into_cell() else {
            self.c.stray += 1;
            return;
        };
        if let Some(Some(g)) = self.upc.get_mut(port as usize) {
            if !cell.clp && !g.conforms(now) {
                cell.clp = true;
                *self.c.tagged_by_port.at(port as usize) += 1;
                *self.c.tagged_by_vc.at(cell.vc as usize) += 1;
            }
        }
        match self.routes.next(self.node, cell.dst as usize) {
            Some(p) => out.push(Emit::Now {
                port: p,
                unit: U::from_cell(cell),
            }),
            None => self.c.stray += 1,
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        None
    }

    fn wakes(&self) -> bool {
        false
    }

    fn passes(&self) -> bool {
        true
    }

    /// A routed cell on an input without UPC passes straight through (a policed input
    /// runs its GCRA; a packet or a cell without a route is counted as stray).
    #[inline]
    fn pass_through(&self, port: PortId, unit: &U) -> Option<PortId> {
        if matches!(self.upc.get(port as usize), Some(Some(_))) {
            return None;
        }
        self.routes.next(self.node, unit.cell()?.dst as usize)
    }

    /// The input's policing (fixed) and the cell's destination.
    fn pass_keyed(&self) -> bool {
        true
    }

    fn handle_timeout(&mut self, _now: SimTime, _out: &mut Vec<Emit<U>>) {}

    fn metrics(&self, _now: SimTime) -> SwitchCounters {
        self.c.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l2::atm::Cell;
    use crate::net::packet::{node_addr, Packet, Segment};
    use crate::unit::Unit;

    fn metrics(e: &AtmSwitch, now: SimTime) -> SwitchCounters {
        Element::<Unit>::metrics(e, now)
    }

    fn cell(vc: u32, dst: u32, clp: bool) -> Unit {
        Unit::Cell(Cell {
            vc,
            dst,
            pdu: 0,
            ncells: 1,
            eom: true,
            clp,
            epoch: 0,
            epoch_start: 0,
            sdu: None,
        })
    }

    /// Switch 0 with lines to hosts 1 and 2 (ports 0 and 1) and to host 3 (port 2).
    fn switch(upc: Vec<Option<Gcra>>) -> AtmSwitch {
        let r = Routes::compute(4, &[(1, 0), (2, 0), (0, 3)], &[1, 3]);
        AtmSwitch::new(0, Arc::new(r), upc, 4)
    }

    fn emitted(out: &[Emit<Unit>]) -> Vec<(PortId, bool)> {
        out.iter()
            .map(|e| match e {
                Emit::Now {
                    port,
                    unit: Unit::Cell(c),
                } => (*port, c.clp),
                _ => panic!("cells now"),
            })
            .collect()
    }

    #[test]
    fn cells_follow_their_vc_and_the_input_lines_upc_tags_the_excess() {
        // port 0 polices GCRA(10 ns, 0); port 1 does not
        let mut s = switch(vec![Some(Gcra::new(10, 0)), None, None]);
        let mut out = vec![];
        s.handle(SimTime(0), 0, cell(0, 3, false), &mut out);
        s.handle(SimTime(5), 0, cell(1, 3, false), &mut out); // early: tagged
        s.handle(SimTime(5), 1, cell(2, 3, false), &mut out); // port 1: no contract
        s.handle(SimTime(6), 0, cell(1, 3, true), &mut out); // already tagged: not tested
        s.handle(SimTime(10), 0, cell(0, 3, false), &mut out); // conforms (TAT 10)
        s.handle(SimTime(11), 2, cell(3, 1, false), &mut out); // toward host 1
        assert_eq!(
            emitted(&out),
            [
                (2, false),
                (2, true),
                (2, false),
                (2, true),
                (2, false),
                (0, false)
            ]
        );
        let m = metrics(&s, SimTime(20));
        assert_eq!(m.tagged_by_port.0, [1, 0, 0]);
        assert_eq!(m.tagged_by_vc.0, [0, 1, 0, 0]);
    }

    #[test]
    fn a_cell_passes_straight_through_only_where_handling_it_would_change_nothing() {
        // port 0 polices; ports 1 and 2 do not
        let mut s = switch(vec![Some(Gcra::new(10, 0)), None, None]);
        for (port, c) in [
            (0, cell(0, 3, false)),
            (0, cell(1, 3, false)), // too early: tagged, counted
            (1, cell(2, 3, false)),
            (2, cell(3, 1, true)),
            (1, cell(1, 2, false)),
        ] {
            let passed = Element::<Unit>::pass_through(&s, port, &c);
            assert_eq!(passed.is_none(), port == 0 || c.cell().unwrap().dst == 2);
            let before = metrics(&s, SimTime(0));
            let mut out = vec![];
            s.handle(SimTime(0), port, c, &mut out);
            let after = metrics(&s, SimTime(0));
            match passed {
                Some(p) => {
                    assert_eq!(emitted(&out).iter().map(|e| e.0).collect::<Vec<_>>(), [p]);
                    assert_eq!(
                        format!("{before:?}"),
                        format!("{after:?}"),
                        "nothing counted"
                    );
                }
                // policed (port 0: the second cell is tagged), or no route toward node
                // 2 (counted stray)
                None => assert!(
                    (port == 0 && after.tagged_by_port.0[0] <= 1)
                        || after.stray == before.stray + 1
                ),
            }
        }
        assert_eq!(metrics(&s, SimTime(0)).tagged_by_port.0, [1, 0, 0]);
        let p = Packet::new(node_addr(1), node_addr(3), Segment::default());
        assert_eq!(Element::<Unit>::pass_through(&s, 1, &Unit::Packet(p)), None);
    }

    #[test]
    fn packets_and_cells_without_a_route_are_counted_and_dropped() {
        let mut s = switch(vec![None, None, None]);
        let mut out = vec![];
        s.handle(SimTime(0), 0, cell(0, 2, false), &mut out); // no route toward 2
        let p = Packet::new(node_addr(1), node_addr(3), Segment::default());
        s.handle(SimTime(0), 0, Unit::Packet(p), &mut out);
        assert!(out.is_empty());
        assert_eq!(metrics(&s, SimTime(0)).stray, 2);
    }
}
