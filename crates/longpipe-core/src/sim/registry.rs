//! Every element kind the simulator runs: one line each in [`elements!`]. The macro
//! makes the element enum (static dispatch of the element protocol), the enum of their
//! metrics (with [`Since`]), and [`Member`]: how each kind goes into the enum and comes
//! back out through a typed [`Handle`]. The simulator keeps handles, typed by what they
//! hold ([`DirElem`], [`NodeElem`]), and matches those exhaustively: a new kind is a
//! compile error where it must be handled.

use super::apps::AppElement;
use crate::element::{ElemId, Element, Emit, PortId};
use crate::engine::driver::{Driver, Stamp};
use crate::l2::atm::line::AtmLine;
use crate::l2::atm::switch::AtmSwitch;
use crate::l2::Direction;
use crate::middlebox::gateway::node::GatewayNode;
use crate::net::capture::Capture;
use crate::net::node::Forwarder;
use crate::net::packet::UNSTAMPED;
use crate::stats::Since;
use crate::tcp::endpoint::TcpElement;
use crate::time::SimTime;
use crate::unit::Unit;
use std::marker::PhantomData;

/// An element kind of [`Elem`]: how it goes in and comes back out.
pub trait Member: Element<Unit> + Sized {
    fn into_elem(self) -> Elem;
    fn of(e: &Elem) -> Option<&Self>;
    fn of_mut(e: &mut Elem) -> Option<&mut Self>;
    fn metrics_of(m: &ElemMetrics) -> Option<&Self::Metrics>;
}

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

        impl Element<Unit> for Elem {
            type Metrics = ElemMetrics;
            #[inline]
            fn handle(&mut self, now: SimTime, port: PortId, unit: Unit, out: &mut Vec<Emit<Unit>>) {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::handle(e, now, port, unit, out)),* }
            }
            #[inline]
            fn poll_timeout(&self) -> Option<SimTime> {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::poll_timeout(e)),* }
            }
            fn wakes(&self) -> bool {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::wakes(e)),* }
            }
            fn passes(&self) -> bool {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::passes(e)),* }
            }
            #[inline]
            fn pass_through(&self, port: PortId, unit: &Unit) -> Option<PortId> {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::pass_through(e, port, unit)),* }
            }
            fn folds(&self) -> bool {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::folds(e)),* }
            }
            fn pass_keyed(&self) -> bool {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::pass_keyed(e)),* }
            }
            #[inline]
            fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<Unit>>) {
                match self { $(Elem::$name(e) => <$t as Element<Unit>>::handle_timeout(e, now, out)),* }
            }
            fn metrics(&self, now: SimTime) -> ElemMetrics {
                match self { $(Elem::$name(e) => ElemMetrics::$name(<$t as Element<Unit>>::metrics(e, now))),* }
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

        $(impl Member for $t {
            fn into_elem(self) -> Elem {
                Elem::$name(self)
            }
            fn of(e: &Elem) -> Option<&Self> {
                match e {
                    Elem::$name(x) => Some(x),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
            fn of_mut(e: &mut Elem) -> Option<&mut Self> {
                match e {
                    Elem::$name(x) => Some(x),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
            fn metrics_of(m: &ElemMetrics) -> Option<&Self::Metrics> {
                match m {
                    ElemMetrics::$name(x) => Some(x),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        })*
    };
}

elements! {
    Dir(Direction<Unit>),
    Node(Forwarder),
    Gateway(Box<GatewayNode>),
    Tcp(TcpElement),
    Capture(Capture),
    Atm(AtmLine),
    AtmSwitch(AtmSwitch),
    App(Box<AppElement>),
}

/// An element of kind `T` in the simulator's driver. Made only by [`Elements::add`],
/// with an element of that kind, and elements never change kind: so a handle always
/// finds its kind.
pub struct Handle<T> {
    pub id: ElemId,
    kind: PhantomData<fn() -> T>,
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Handle<T> {}

const KEEPS_KIND: &str = "a handle's element keeps its kind";

/// Typed access to the simulator's driver.
pub trait Elements {
    /// Adds `e`; its handle.
    fn add_typed<T: Member>(&mut self, e: T) -> Handle<T>;
    fn get<T: Member>(&self, h: Handle<T>) -> &T;
    fn get_mut<T: Member>(&mut self, h: Handle<T>) -> &mut T;
}

impl Elements for Driver<Unit, Elem> {
    fn add_typed<T: Member>(&mut self, e: T) -> Handle<T> {
        Handle {
            id: self.add(e.into_elem()),
            kind: PhantomData,
        }
    }
    fn get<T: Member>(&self, h: Handle<T>) -> &T {
        T::of(self.elem(h.id)).expect(KEEPS_KIND)
    }
    fn get_mut<T: Member>(&mut self, h: Handle<T>) -> &mut T {
        T::of_mut(self.elem_mut(h.id)).expect(KEEPS_KIND)
    }
}

/// Every element's metrics at one time (or their difference between two times).
pub struct Snapshot(Vec<ElemMetrics>);

impl Snapshot {
    /// Every element of `d`'s metrics at `now`.
    pub fn of(d: &Driver<Unit, Elem>, now: SimTime) -> Snapshot {
        // (through the driver: a folded line may already hold units arriving later)
        Snapshot(
            (0..d.elems().len() as ElemId)
                .map(|id| d.metrics(id, now))
                .collect(),
        )
    }

    /// The metrics of `h`'s element.
    pub fn get<T: Member>(&self, h: Handle<T>) -> &T::Metrics {
        T::metrics_of(&self.0[h.id as usize]).expect(KEEPS_KIND)
    }
}

impl Since for Snapshot {
    fn since(&self, base: &Self) -> Self {
        Snapshot(
            self.0
                .iter()
                .zip(&base.0)
                .map(|(e, b)| e.since(b))
                .collect(),
        )
    }
}

/// A link direction's element: packets (plain, or a link layer generic over the unit)
/// or ATM cells.
#[derive(Clone, Copy)]
pub enum DirElem {
    Packets(Handle<Direction<Unit>>),
    Cells(Handle<AtmLine>),
}

impl DirElem {
    pub fn id(&self) -> ElemId {
        match self {
            DirElem::Packets(h) => h.id,
            DirElem::Cells(h) => h.id,
        }
    }
}

/// A node's element, by its role.
#[derive(Clone, Copy)]
pub enum NodeElem {
    /// A host or a router.
    Forwarder(Handle<Forwarder>),
    Gateway(Handle<Box<GatewayNode>>),
    AtmSwitch(Handle<AtmSwitch>),
}

impl NodeElem {
    pub fn id(&self) -> ElemId {
        match self {
            NodeElem::Forwarder(h) => h.id,
            NodeElem::Gateway(h) => h.id,
            NodeElem::AtmSwitch(h) => h.id,
        }
    }
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
    /// A packet: its addresses and ports (what a router decides on, delivering to a
    /// local endpoint included); a cell: its destination (what a switch routes by).
    #[inline]
    fn pass_key(&self) -> Option<u128> {
        Some(match self {
            Unit::Packet(p) => {
                1 << 127
                    | (u32::from_be_bytes(p.src) as u128) << 64
                    | (u32::from_be_bytes(p.dst) as u128) << 32
                    | (p.seg.sport as u128) << 16
                    | p.seg.dport as u128
            }
            Unit::Cell(c) => 1 << 126 | c.dst as u128,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l2::atm::Cell;
    use crate::net::packet::{node_addr, Packet, Segment};

    /// Every field a forwarder routes by (destination; for a local endpoint its port,
    /// the source and its port) is in the key, and a cell never shares a packet's.
    #[test]
    fn the_pass_key_tells_apart_what_a_forwarder_reads() {
        let seg = Segment {
            sport: 40_000,
            dport: 5001,
            ..Default::default()
        };
        let p = Packet::new(node_addr(1), node_addr(2), seg);
        let key = |p: &Packet| Unit::Packet(p.clone()).pass_key().expect("a packet's key");
        let k = key(&p);
        let mut other = vec![];
        for change in 0..4 {
            let mut q = p.clone();
            match change {
                0 => q.src = node_addr(3),
                1 => q.dst = node_addr(3),
                2 => q.seg.sport += 1,
                _ => q.seg.dport += 1,
            }
            other.push(key(&q));
        }
        assert!(other.iter().all(|&o| o != k), "{other:?}");
        // fields a forwarder does not read leave it alone
        let mut q = p.clone();
        q.seg.seq = 99;
        q.size += 100;
        assert_eq!(key(&q), k);
        let cell = Unit::Cell(Cell {
            vc: 0,
            dst: 2,
            pdu: 0,
            ncells: 1,
            eom: true,
            clp: false,
            epoch: 0,
            epoch_start: 0,
            sdu: None,
        });
        let c = cell.pass_key().expect("a cell's key");
        assert!(c >> 126 == 1 && k >> 127 == 1, "kinds in different bits");
    }
}
