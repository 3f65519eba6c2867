//! The protocol every network element speaks, and what an element needs to know about
//! the unit it moves.
//!
//! An element is sans-IO, in the shape of quinn-proto and smoltcp: it is handed a unit
//! with [`Element::handle`], tells when it next wants to run with
//! [`Element::poll_timeout`], is run then with [`Element::handle_timeout`], and emits
//! units through numbered output ports into an out-vector. It never reads a clock,
//! never schedules an event and never knows what its ports are wired to: a driver owns
//! time, wiring and statistics. The simulator's event loop is one driver
//! ([`crate::sim`]); the live emulator and the gateway daemon drive the same elements
//! from a wall clock.
//!
//! Elements are generic over the unit they move where they can be ([`Frame`]): a queue,
//! a transmitter, a loss model or a delay line needs only a unit's wire length and its
//! class, so a simulated packet, an ATM cell and a raw IPv4 buffer from a TUN device
//! pass through the same code.
//!
//! Invariants a driver relies on: `handle_timeout(now)` is only called at or after the
//! time `poll_timeout()` returned; an `Emit::At` time is never before the `now` of the
//! call that emitted it; an element's `poll_timeout` may change only through its own
//! calls; a unit an element passes straight through ([`Element::pass_through`]) is one
//! it would have emitted unchanged, at once, changing nothing.

use crate::time::SimTime;

/// An element's id in its driver.
pub type ElemId = u32;
/// An element's input or output port number.
pub type PortId = u16;

/// Traffic class of a unit: what a queue discipline may treat differently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Normal traffic.
    #[default]
    Normal,
    /// Low priority: served after and dropped before normal traffic where a queue
    /// discipline distinguishes them (TCP-Peach probes, ATM cells tagged CLP = 1).
    Low,
}

/// The identity and sequence number of a TCP segment, for impairments that pick
/// segments by sequence number (ns-3's `TcpSeqErrorModel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpMeta {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub flags: u8,
    /// Payload bytes.
    pub len: u32,
}

/// What link stages need to know about a unit.
pub trait Frame {
    /// Bytes on the wire (an IPv4 packet's total length; 53 for an ATM cell).
    fn wire_len(&self) -> u32;
    /// Traffic class.
    fn class(&self) -> Class {
        Class::Normal
    }
    /// The IP ECN field (RFC 3168 §5: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE); units
    /// without one are Not-ECT.
    fn ecn(&self) -> u8 {
        0
    }
    /// Marks the unit Congestion Experienced (RFC 3168 §5) if it is ECN-capable;
    /// returns whether it was (a queue drops it otherwise).
    fn mark_ce(&mut self) -> bool {
        false
    }
    /// The TCP segment this unit carries, if it is one whole IPv4/TCP packet.
    fn tcp_meta(&self) -> Option<TcpMeta> {
        None
    }
}

/// A unit leaving an element.
#[derive(Debug)]
pub enum Emit<U> {
    /// Handed at once, at the same instant, to what `port` is wired to.
    Now { port: PortId, unit: U },
    /// Handed to what `port` is wired to at time `at` (propagation, processing delay).
    At { at: SimTime, port: PortId, unit: U },
}

/// Pushes the emission `f` makes onto `out`, made after the room for it is reserved.
///
/// The same as `out.push(f())`, but the compiler can build the emission in the vector's
/// slot. `push` builds it on the stack and copies it; when the unit was just assembled
/// from its fields (an ATM cell), the copy's 16-byte loads read the narrow stores that
/// built it, which the processor cannot forward (a store-forwarding stall). Measured
/// on an ATM line's cells: 0.895x CPU on examples/atm-wan.toml. Not a rule: a link that
/// passes a whole unit on measured 1.035x with it, so it keeps `push` (BENCHMARKS.md,
/// eighth session).
#[inline(always)]
pub fn emit_with<U>(out: &mut Vec<Emit<U>>, f: impl FnOnce() -> Emit<U>) {
    out.extend(std::iter::once_with(f));
}

/// The protocol of every network element (see the module documentation).
pub trait Element<U> {
    /// A snapshot of the element's counters (see [`crate::stats`]).
    type Metrics;
    /// A unit arrives on input port `port`.
    fn handle(&mut self, now: SimTime, port: PortId, unit: U, out: &mut Vec<Emit<U>>);
    /// When the element next wants [`Element::handle_timeout`], if ever.
    fn poll_timeout(&self) -> Option<SimTime>;
    /// False for an element that never wants a wake-up (its `poll_timeout` is always
    /// None): a driver asks once, when the element is added, and then never polls it
    /// (half the elements a packet meets are forwarders and ATM stages).
    fn wakes(&self) -> bool {
        true
    }
    /// True for an element that may pass units straight through
    /// ([`Element::pass_through`]); a driver asks once, when the element is added.
    fn passes(&self) -> bool {
        false
    }
    /// `Some(out)` when handing `unit` to input `port` now would do nothing but emit it
    /// unchanged, at once, on output `out`: no state or counter changes, no wake-up
    /// (a router or a host forwarding a packet, whose route is fixed). A driver may then
    /// hand the unit straight to what `out` is wired to, at the time it would have
    /// reached this element, without calling [`Element::handle`]. The answer for a unit
    /// must not change while the element runs (a driver asks when a timed unit is
    /// emitted toward it, before its time). Asked only of elements whose
    /// [`Element::passes`] is true.
    fn pass_through(&self, _port: PortId, _unit: &U) -> Option<PortId> {
        None
    }
    /// True when [`Element::pass_through`]'s answer depends only on the input port and
    /// the unit's key (the driver's `Stamp::pass_key`: a packet's addresses and ports),
    /// never on its other fields: a driver may then remember it. The answer must not
    /// change while the element runs (its own `handle` included), as for any
    /// pass-through; changing it from outside through the driver's `elem_mut` makes
    /// the driver forget what it remembered. Asked once, when the element is added.
    fn pass_keyed(&self) -> bool {
        false
    }
    /// True for a *line*: an element whose handling of each unit depends only on the
    /// units handed to it before, in order, and on their times (not on when it is
    /// called); that emits only timed units, each port's no earlier than the one
    /// before; and that never wants a wake-up while it is handed only units in
    /// transit (a fixed drop-tail link direction without a capture tap, an ATM line).
    /// A driver may then *fold* a hop into it (see [`crate::engine::driver`]). Asked
    /// when a fold is set up, after the element is built and wired.
    fn folds(&self) -> bool {
        false
    }
    /// Runs what is due at `now`.
    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<U>>);
    /// Counters since time zero, as they stand at `now`.
    fn metrics(&self, now: SimTime) -> Self::Metrics;
}

/// A boxed element is an element (large, rare element kinds are boxed in a driver's
/// element enum).
impl<U, T: Element<U> + ?Sized> Element<U> for Box<T> {
    type Metrics = T::Metrics;
    fn handle(&mut self, now: SimTime, port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        (**self).handle(now, port, unit, out)
    }
    fn poll_timeout(&self) -> Option<SimTime> {
        (**self).poll_timeout()
    }
    fn wakes(&self) -> bool {
        (**self).wakes()
    }
    fn passes(&self) -> bool {
        (**self).passes()
    }
    fn pass_through(&self, port: PortId, unit: &U) -> Option<PortId> {
        (**self).pass_through(port, unit)
    }
    fn pass_keyed(&self) -> bool {
        (**self).pass_keyed()
    }
    fn folds(&self) -> bool {
        (**self).folds()
    }
    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
        (**self).handle_timeout(now, out)
    }
    fn metrics(&self, now: SimTime) -> Self::Metrics {
        (**self).metrics(now)
    }
}
