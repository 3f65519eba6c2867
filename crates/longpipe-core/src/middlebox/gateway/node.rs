//! The `tcp-gateway` node behaviour: a forwarding node whose transit traffic to and
//! from its satellite uplink goes through the [`Gateway`].

use super::{Dir, Gateway, GatewayCounters};
use crate::element::{Element, Emit, PortId};
use crate::net::node::Forwarder;
use crate::net::packet::Packet;
use crate::time::SimTime;
use crate::unit::Unit;

pub struct GatewayNode {
    pub fwd: Forwarder,
    /// The port of the satellite uplink.
    uplink: PortId,
    pub gw: Gateway,
    pkts: Vec<Packet>,
}

impl GatewayNode {
    pub fn new(fwd: Forwarder, uplink: PortId, gw: Gateway) -> Self {
        GatewayNode {
            fwd,
            uplink,
            gw,
            pkts: Vec::new(),
        }
    }

    fn emit(&mut self, out: &mut Vec<Emit<Unit>>) {
        let mut pkts = std::mem::take(&mut self.pkts);
        for p in pkts.drain(..) {
            self.fwd.forward(p, out);
        }
        self.pkts = pkts;
    }
}

impl Element<Unit> for GatewayNode {
    type Metrics = GatewayCounters;

    fn handle(&mut self, now: SimTime, port: PortId, unit: Unit, out: &mut Vec<Emit<Unit>>) {
        let Unit::Packet(p) = unit else {
            self.fwd.unroutable += 1; // cells end at ATM adapters
            return;
        };
        let route = self.fwd.route(&p);
        let dir = match route {
            Some(r) if r == self.uplink => Dir::ToClient,
            Some(r) if r < self.fwd.degree() && port == self.uplink => Dir::ToServer,
            _ => return self.fwd.forward(p, out), // local, or not across the uplink
        };
        self.gw.on_packet(now, dir, p, &mut self.pkts);
        self.emit(out);
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.gw.next_timer()
    }

    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<Unit>>) {
        self.gw.on_timer(now, &mut self.pkts);
        self.emit(out);
    }

    fn metrics(&self, _now: SimTime) -> GatewayCounters {
        self.gw.stats.clone()
    }
}
