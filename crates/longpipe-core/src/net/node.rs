//! The forwarding node behaviour (hosts and routers): deliver packets addressed to a
//! local TCP endpoint, send everything else on toward its destination.
//!
//! Ports: `0..deg` are the node's links in [`Routes::ports`] order (out: the link
//! direction leaving the node; in: the one arriving); `deg..` are local endpoints, one
//! port each (in and out).

use super::packet::{addr_node, Packet};
use super::routing::Routes;
use crate::element::{Element, Emit, PortId};
use crate::time::SimTime;
use crate::unit::Unit;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A local endpoint's identity as seen on arriving packets: (our port, remote address,
/// remote port).
pub type LocalKey = (u16, [u8; 4], u16);

pub struct Forwarder {
    node: usize,
    routes: Arc<Routes>,
    local: BTreeMap<LocalKey, PortId>,
    next_local: PortId,
    /// Packets with no route or no local endpoint.
    pub unroutable: u64,
}

impl Forwarder {
    pub fn new(node: usize, routes: Arc<Routes>) -> Self {
        let deg = routes.ports(node).len() as PortId;
        Forwarder {
            node,
            routes,
            local: BTreeMap::new(),
            next_local: deg,
            unroutable: 0,
        }
    }

    /// Adds a local endpoint; returns its port.
    pub fn add_local(&mut self, key: LocalKey) -> PortId {
        let p = self.next_local;
        self.next_local += 1;
        self.local.insert(key, p);
        p
    }

    /// Number of link ports.
    pub fn degree(&self) -> PortId {
        self.routes.ports(self.node).len() as PortId
    }

    /// The port a packet leaves on: a link toward its destination, or a local endpoint.
    pub fn route(&self, p: &Packet) -> Option<PortId> {
        let dst = addr_node(p.dst)?;
        if dst == self.node {
            return self.local.get(&(p.seg.dport, p.src, p.seg.sport)).copied();
        }
        self.routes.next(self.node, dst)
    }

    /// Emits `p` on its route (or counts it unroutable).
    pub fn forward(&mut self, p: Packet, out: &mut Vec<Emit<Unit>>) {
        match self.route(&p) {
            Some(port) => out.push(Emit::Now {
                port,
                unit: Unit::Packet(p),
            }),
            None => self.unroutable += 1,
        }
    }
}

impl Element<Unit> for Forwarder {
    type Metrics = ();

    fn handle(&mut self, _now: SimTime, _port: PortId, unit: Unit, out: &mut Vec<Emit<Unit>>) {
        match unit {
            Unit::Packet(p) => self.forward(p, out),
            Unit::Cell(_) => self.unroutable += 1, // cells end at ATM adapters
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        None
    }

    fn handle_timeout(&mut self, _now: SimTime, _out: &mut Vec<Emit<Unit>>) {}

    fn metrics(&self, _now: SimTime) {}
}
