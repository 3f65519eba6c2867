//! The simulator's ATM part: building ATM lines and switches from a valid scenario, and
//! their reports. Called from [`super::Sim`]; see [`crate::l2::atm`].

use super::registry::{DirElem, NodeElem, Snapshot};
use crate::error::ScenarioError;
use crate::l2::atm::config::AtmLineConfig;
use crate::l2::atm::gcra::Gcra;
use crate::l2::atm::line::{AtmLine, AtmLineCounters, Feed, Sink};
use crate::l2::atm::report::{AtmLineReport, AtmReport, VcReport};
use crate::l2::atm::switch::AtmSwitch;
use crate::l2::atm::{aal5::Reassembler, discard::Discard, PortLimits, VcCounters, VcTable};
use crate::l2::Layer2Config;
use crate::net::loss::LossState;
use crate::net::routing::Routes;
use crate::results::{L2Report, LinkResult};
use crate::scenario::ValidScenario;
use crate::tcp::endpoint::Addrs;
use std::sync::Arc;

/// The VCs of the run: flow f's data VC is 2f (sender to receiver), its ACK VC 2f + 1.
pub fn vc_table(sc: &ValidScenario, addrs: &[(Addrs, Addrs)]) -> Arc<VcTable> {
    let mut t = VcTable::default();
    for (f, (tx, rx)) in sc.flows.iter().zip(addrs) {
        t.add(tx.local, tx.remote, tx.local_port, tx.remote_port, f.dst);
        t.add(rx.local, rx.remote, rx.local_port, rx.remote_port, f.src);
    }
    Arc::new(t)
}

/// The sending and receiving node of direction `k` of link `li`.
fn ends(sc: &ValidScenario, li: usize, k: usize) -> (usize, usize) {
    let l = &sc.links[li];
    if k == 0 {
        (l.a, l.b)
    } else {
        (l.b, l.a)
    }
}

/// Direction `k` of link `li` as an ATM line.
pub fn line(
    sc: &ValidScenario,
    li: usize,
    k: usize,
    cfg: &AtmLineConfig,
    loss: LossState,
    vcs: &Arc<VcTable>,
) -> AtmLine {
    let (from, to) = ends(sc, li, k);
    let d = &sc.links[li].dirs[k].link;
    let feed = match sc.nodes[from].role.atm_switch() {
        Some(limits) => Feed::Port(Discard::new(limits)),
        None => AtmLine::adapter(cfg.llc, d.queue.admission),
    };
    let sink = match sc.nodes[to].role.atm_switch() {
        Some(_) => Sink::Cells,
        None => Sink::Reassemble(Reassembler::default()),
    };
    AtmLine::new(d.rate, d.delay, feed, sink, loss, vcs.clone())
}

/// The `atm-switch` node `n` of port `limits`: UPC on its input lines that carry a
/// contract, when its policy looks at CLP.
pub fn switch(
    sc: &ValidScenario,
    n: usize,
    limits: PortLimits,
    routes: &Arc<Routes>,
    n_vcs: usize,
) -> AtmSwitch {
    let upc = routes
        .ports(n)
        .iter()
        .map(|&(_, (li, dir))| {
            // port k receives the reverse of the direction it sends on
            let rev = 1 - dir as usize;
            let d = &sc.links[li as usize].dirs[rev];
            match (&d.layer2, limits.policy.uses_clp()) {
                (Some(Layer2Config::Atm(AtmLineConfig { upc: Some(u), .. })), true) => {
                    Some(Gcra::vbr(u.scr, u.pcr.unwrap_or(d.link.rate), u.mbs))
                }
                _ => None,
            }
        })
        .collect();
    AtmSwitch::new(n, routes.clone(), upc, n_vcs)
}

/// Captures record packets; an ATM link carries cells.
pub fn cells_not_captured(spec: &str) -> ScenarioError {
    ScenarioError::new(
        "pcap",
        format!("{spec:?} is an ATM link (cells); capture on a packet link"),
    )
}

/// The result row of ATM direction `i` of the links (link `i / 2`, direction `i % 2`),
/// from `a` to `b`: utilization (share of cell slots used), the generic counters in
/// cells, and the `l2` report.
pub fn link_row(
    sc: &ValidScenario,
    routes: &Routes,
    delta: &Snapshot,
    nodes: &[NodeElem],
    (a, b, i): (String, String, usize),
    c: &AtmLineCounters,
    measured: f64,
) -> LinkResult {
    let (li, k) = (i / 2, i % 2);
    let (from, to) = ends(sc, li, k);
    let tagged = match nodes[to] {
        NodeElem::AtmSwitch(h) => {
            let port = routes.in_port(to, (li as u32, k as u8));
            Some(
                delta
                    .get(h)
                    .tagged_by_port
                    .0
                    .get(port as usize)
                    .copied()
                    .unwrap_or(0),
            )
        }
        NodeElem::Forwarder(_) | NodeElem::Gateway(_) => None,
    };
    let mut row = LinkResult::from_link(a, b, i, &c.link_counters(), measured);
    row.l2 = Some(L2Report::Atm(AtmLineReport::new(
        c,
        sc.nodes[from].role.atm_switch(),
        tagged,
    )));
    row
}

/// Every VC's counters summed over the lines and switches it crossed; None without ATM.
pub fn report(
    sc: &ValidScenario,
    delta: &Snapshot,
    dirs: &[DirElem],
    nodes: &[NodeElem],
    n_vcs: usize,
) -> Option<AtmReport> {
    let mut vcs = vec![VcCounters::default(); n_vcs];
    let mut any = false;
    for dir in dirs {
        let c = match *dir {
            DirElem::Cells(h) => delta.get(h),
            DirElem::Packets(_) => continue,
        };
        any = true;
        for (v, x) in vcs.iter_mut().zip(&c.vcs.0) {
            v.cells_sent += x.cells_sent;
            v.cells_dropped += x.cells_dropped;
            v.cells_lost += x.cells_lost;
            v.cells_received += x.cells_received;
            v.pdus_sent += x.pdus_sent;
            v.pdus_discarded_whole += x.pdus_discarded_whole;
            v.pdus_delivered += x.pdus_delivered;
            v.pdus_lost += x.pdus_lost;
            v.loss_events += x.loss_events;
        }
    }
    for node in nodes {
        let s = match *node {
            NodeElem::AtmSwitch(h) => delta.get(h),
            NodeElem::Forwarder(_) | NodeElem::Gateway(_) => continue,
        };
        for (v, t) in vcs.iter_mut().zip(&s.tagged_by_vc.0) {
            v.cells_tagged += t;
        }
    }
    any.then(|| AtmReport {
        vcs: vcs
            .into_iter()
            .enumerate()
            .filter(|(_, c)| c.cells_sent > 0 || c.pdus_delivered > 0 || c.pdus_lost > 0)
            .map(|(i, counters)| VcReport {
                vc: i as u32,
                flow: sc.flows[i / 2].id,
                dir: if i % 2 == 0 { "data" } else { "ack" },
                counters,
            })
            .collect(),
    })
}
