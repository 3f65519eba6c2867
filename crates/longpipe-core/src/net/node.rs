//! The forwarding node behaviour (hosts and routers): deliver packets addressed to a
//! local TCP endpoint, send everything else on toward its destination.
//!
//! Ports: `0..deg` are the node's links in [`Routes::ports`] order (out: the link
//! direction leaving the node; in: the one arriving); `deg..` are local endpoints, one
//! port each (in and out).

use super::packet::{addr_node, Packet, PacketUnit};
use super::routing::Routes;
use crate::element::{Element, Emit, PortId};
use crate::time::SimTime;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A local endpoint's identity as seen on arriving packets: (our port, remote address,
/// remote port).
pub type LocalKey = (u16, [u8; 4], u16);

pub struct Forwarder {
    node: usize,
    routes: Arc<Routes>,
    /// The node has one link: [`Routes::next_single_port`] instead of the table.
    single_port: bool,
    /// The first local endpoint, kept inline (most hosts have one: no map to visit).
    local_first: Option<(LocalKey, PortId)>,
    /// The others.
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
            single_port: deg == 1,
            routes,
            local_first: None,
            local: BTreeMap::new(),
            next_local: deg,
            unroutable: 0,
        }
    }

    /// Adds a local endpoint; returns its port.
    pub fn add_local(&mut self, key: LocalKey) -> PortId {
        let p = self.next_local;
        self.next_local += 1;
        match self.local_first {
            None => self.local_first = Some((key, p)),
            Some((k, _)) if k == key => self.local_first = Some((key, p)),
            Some(_) => {
                self.local.insert(key, p);
            }
        }
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
            let key = (p.seg.dport, p.src, p.seg.sport);
            return match self.local_first {
                Some((k, port)) if k == key => Some(port),
                _ if self.local.is_empty() => None,
                _ => self.local.get(&key).copied(),
            };
        }
        if self.single_port {
            return self.routes.next_single_port(self.node, dst);
        }
        self.routes.next(self.node, dst)
    }

    /// Emits `p` on its route (or counts it unroutable).
    pub fn forward<U: PacketUnit>(&mut self, p: Packet, out: &mut Vec<Emit<U>>) {
        match self.route(&p) {
            Some(port) => out.push(Emit::Now {
                port,
                unit: U::from_packet(p),
            }),
            None => self.unroutable += 1,
        }
    }
}

impl<U: PacketUnit> Element<U> for Forwarder {
    type Metrics = ();

    fn handle(&mut self, _now: SimTime, _port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        // Routed by reference: the unit moves on as it came (a boxed packet stays in
        // its box).
        match unit.packet().map(|p| self.route(p)) {
            Some(Some(port)) => out.push(Emit::Now { port, unit }),
            _ => self.unroutable += 1, // no route, or a cell (cells end at ATM adapters)
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

    /// A routed packet passes straight through (an unroutable one or a cell is
    /// handled: it is counted).
    #[inline]
    fn pass_through(&self, _port: PortId, unit: &U) -> Option<PortId> {
        self.route(unit.packet()?)
    }

    /// [`Forwarder::route`] reads the packet's destination and, for a local one, its
    /// ports and source; the routes and the local endpoints are fixed when it is built.
    fn pass_keyed(&self) -> bool {
        true
    }

    fn handle_timeout(&mut self, _now: SimTime, _out: &mut Vec<Emit<U>>) {}

    fn metrics(&self, _now: SimTime) {}
}
