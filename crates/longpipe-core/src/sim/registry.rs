//! Every element kind the simulator runs: one line each in [`elements!`]. The macro
//! makes the element enum (static dispatch of the element protocol) and the enum of
//! their metrics (with [`Since`]).

use super::apps::AppElement;
use crate::element::{Element, Emit, PortId};
use crate::engine::driver::{Dispatch, Stamp};
use crate::l2::atm::line::AtmLine;
use crate::l2::atm::switch::AtmSwitch;
use crate::l2::rlc::RlcLink;
use crate::middlebox::gateway::node::GatewayNode;
use crate::net::capture::Capture;
use crate::net::link::LinkDirection;
use crate::net::node::Forwarder;
use crate::net::packet::UNSTAMPED;
use crate::stats::Since;
use crate::tcp::endpoint::TcpElement;
use crate::time::SimTime;
use crate::unit::Unit;

macro_rules! elements {
    ($($name:ident($t:ty)),* $(,)?) => {
        /// A simulator element.
        // Link directions are most of a network's elements and sit on the hottest path;
        // they stay inline (one element = one slot of the driver's Vec) rather than
        // behind a Box, at the cost of padding the rarer variants.
        #[allow(clippy::large_enum_variant)]
        pub enum Elem { $($name($t)),* }

        /// An element's metrics snapshot.
        #[derive(Debug, Clone)]
        pub enum ElemMetrics { $($name(<$t as Element<Unit>>::Metrics)),* }

        impl Dispatch<Unit> for Elem {
            #[inline]
            fn handle(&mut self, now: SimTime, port: PortId, unit: Unit, out: &mut Vec<Emit<Unit>>) {
                match self { $(Elem::$name(e) => e.handle(now, port, unit, out)),* }
            }
            #[inline]
            fn poll_timeout(&self) -> Option<SimTime> {
                match self { $(Elem::$name(e) => e.poll_timeout()),* }
            }
            #[inline]
            fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<Unit>>) {
                match self { $(Elem::$name(e) => e.handle_timeout(now, out)),* }
            }
        }

        impl Elem {
            pub fn metrics(&self, now: SimTime) -> ElemMetrics {
                match self { $(Elem::$name(e) => ElemMetrics::$name(e.metrics(now))),* }
            }
        }

        impl Since for ElemMetrics {
            fn since(&self, base: &Self) -> Self {
                match (self, base) {
                    $((ElemMetrics::$name(a), ElemMetrics::$name(b)) => ElemMetrics::$name(a.since(b)),)*
                    #[allow(unreachable_patterns)]
                    _ => unreachable!("an element keeps its kind"),
                }
            }
        }
    };
}

elements! {
    Link(LinkDirection<Unit>),
    Rlc(Box<RlcLink<Unit>>),
    Node(Forwarder),
    Gateway(Box<GatewayNode>),
    Tcp(TcpElement),
    Capture(Capture),
    Atm(AtmLine),
    AtmSwitch(AtmSwitch),
    App(Box<AppElement>),
}

impl Stamp for Unit {
    #[inline]
    fn stamp(&mut self, next: &mut u64) {
        match self {
            Unit::Packet(p) => {
                if p.uid == UNSTAMPED {
                    p.uid = *next;
                    *next += 1;
                }
            }
            Unit::Cell(_) => {} // a cell's packet was stamped when it was sent
        }
    }
}
