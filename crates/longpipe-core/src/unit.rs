//! The unit the simulator's elements exchange. One variant per kind of thing that
//! travels between elements; link stages see only its [`Frame`] view.

use crate::element::{Class, Frame, TcpMeta};
use crate::l2::atm::Cell;
use crate::net::packet::Packet;

/// What moves between the simulator's elements.
#[derive(Clone, Debug)]
pub enum Unit {
    /// An IPv4/TCP packet.
    Packet(Packet),
    /// An ATM cell (53 octets; class Low when tagged CLP = 1).
    Cell(Cell),
}

impl Frame for Unit {
    #[inline]
    fn wire_len(&self) -> u32 {
        match self {
            Unit::Packet(p) => p.wire_len(),
            Unit::Cell(c) => c.wire_len(),
        }
    }
    #[inline]
    fn class(&self) -> Class {
        match self {
            Unit::Packet(p) => p.class(),
            Unit::Cell(c) => c.class(),
        }
    }
    #[inline]
    fn ecn(&self) -> u8 {
        match self {
            Unit::Packet(p) => p.ecn(),
            Unit::Cell(c) => c.ecn(),
        }
    }
    #[inline]
    fn mark_ce(&mut self) -> bool {
        match self {
            Unit::Packet(p) => p.mark_ce(),
            Unit::Cell(c) => c.mark_ce(),
        }
    }
    fn tcp_meta(&self) -> Option<TcpMeta> {
        match self {
            Unit::Packet(p) => p.tcp_meta(),
            Unit::Cell(_) => None,
        }
    }
}
