//! Link layers that cut IP packets (SDUs) into smaller units with their own
//! retransmission or discard rules. Each is an [`crate::element::Element`] that replaces
//! a link direction's plain queue and transmitter: SDUs in, timed SDUs out at the far
//! end. One file (or folder) per link layer, one line in the `registry!` below (the
//! scenario's `layer2 = { kind = ..., ... }`, [`Layer2Spec`] → [`Layer2Config`]) and,
//! for a layer generic over the unit, one in [`directions!`] (the [`Direction`]
//! element).
//!
//! [`Direction`] is a link direction as one element, generic over the unit it carries:
//! the plain stages ([`LinkDirection`]) or a link layer. The simulator and the live
//! emulator add it as it is (built by [`crate::sim::direction`]). ATM carries cells,
//! which only the simulator models: it has no arm there (see [`crate::sim`]).

pub mod atm;
pub mod rlc;

use crate::element::{Element, Emit, Frame, PortId};
use crate::net::link::{LinkCounters, LinkDirection};
use crate::stats::Since;
use crate::tagged::{self, NoKeys};
use crate::time::SimTime;
use rlc::{RlcCounters, RlcLink};
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

tagged::registry! {
    /// The scenario's `layer2 = { kind = ..., ... }` of one link direction (a table
    /// tagged by `kind`, [`crate::tagged`]).
    #[derive(Debug, Clone)]
    pub enum Layer2Spec;
    /// A resolved link layer.
    #[derive(Debug, Clone)]
    pub enum Layer2Config;
    RlcAm = "rlc-am" => rlc::RlcSpec,
    Atm = "atm" => atm::AtmLineSpec,
}

impl<'de> Deserialize<'de> for Layer2Spec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        tagged::read::<_, NoKeys, _>(d, KINDS, None, "link layer").map(|(_, s)| s)
    }
}

impl JsonSchema for Layer2Spec {
    fn schema_name() -> String {
        "Layer2Spec".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        let doc = "The link layer of a link direction: its `kind` and that kind's keys.";
        tagged::schema::<NoKeys, _>(gen, doc, KINDS, None)
    }
}

impl Layer2Spec {
    /// What the reverse direction gets when only this one is given: an ATM link is ATM
    /// both ways (with the default options); other layers apply to one direction.
    pub fn reverse_default(&self) -> Option<Layer2Spec> {
        match self {
            Layer2Spec::Atm(_) => Some(Layer2Spec::Atm(atm::AtmLineSpec::default())),
            Layer2Spec::RlcAm(_) => None,
        }
    }
}

/// The link direction elements, generic over the unit: one line each,
/// `Variant(element type, its metrics type)`. Makes [`Direction`], [`DirCounters`] (with
/// [`Since`]), the element protocol by static dispatch, and `enable_tap`.
macro_rules! directions {
    ($($v:ident($t:ty, $m:ty)),+ $(,)?) => {
        /// A link direction as an element.
        // The plain direction is most of a network's elements and sits on the hottest
        // path: it stays inline (no Box), at the cost of padding the rarer variants.
        #[allow(clippy::large_enum_variant)]
        pub enum Direction<U> { $($v($t)),+ }

        /// A link direction's counters.
        #[derive(Debug, Clone)]
        pub enum DirCounters { $($v($m)),+ }

        impl<U: Frame + Clone + Send + 'static> Element<U> for Direction<U> {
            type Metrics = DirCounters;
            #[inline]
            fn handle(&mut self, now: SimTime, port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
                match self { $(Direction::$v(e) => <$t as Element<U>>::handle(e, now, port, unit, out)),+ }
            }
            #[inline]
            fn poll_timeout(&self) -> Option<SimTime> {
                match self { $(Direction::$v(e) => <$t as Element<U>>::poll_timeout(e)),+ }
            }
            #[inline]
            fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
                match self { $(Direction::$v(e) => <$t as Element<U>>::handle_timeout(e, now, out)),+ }
            }
            fn folds(&self) -> bool {
                match self { $(Direction::$v(e) => <$t as Element<U>>::folds(e)),+ }
            }
            fn metrics(&self, now: SimTime) -> DirCounters {
                match self { $(Direction::$v(e) => DirCounters::$v(<$t as Element<U>>::metrics(e, now))),+ }
            }
        }

        impl<U: Frame + Clone + Send + 'static> Direction<U> {
            /// Copies every unit to port [`crate::net::link::TAP`] as the direction
            /// takes it (a capture point at the sending interface).
            pub fn enable_tap(&mut self) {
                match self { $(Direction::$v(e) => e.enable_tap()),+ }
            }
        }

        impl Since for DirCounters {
            fn since(&self, base: &Self) -> Self {
                match (self, base) {
                    $((DirCounters::$v(a), DirCounters::$v(b)) => DirCounters::$v(a.since(b)),)+
                    #[allow(unreachable_patterns)]
                    _ => unreachable!("a direction keeps its kind"),
                }
            }
        }
    };
}

impl<U: Frame + Clone + Send + 'static> Direction<U> {
    /// Makes the direction the interface of the host with address `addr`: its own
    /// segments wait for room ([`LinkDirection::hold_local`]). A link layer keeps its
    /// own buffer (its SDU queue): unchanged.
    pub fn hold_local(&mut self, addr: [u8; 4]) {
        if let Direction::Link(l) = self {
            l.hold_local(addr);
        }
    }
}

directions! {
    Link(LinkDirection<U>, LinkCounters),
    Rlc(Box<RlcLink<U>>, RlcCounters),
}
