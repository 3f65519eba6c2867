//! The unit the simulator's elements exchange: the sum of the kinds of thing that
//! travel between them, above the components that define each. Link stages see only
//! its [`Frame`] view; elements that read packets or cells, their [`PacketUnit`] and
//! [`CellUnit`] views.

use crate::element::{Class, Frame, TcpMeta};
use crate::l2::atm::cell::CellUnit;
use crate::l2::atm::Cell;
use crate::net::packet::{Packet, PacketUnit};

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

impl PacketUnit for Unit {
    #[inline]
    fn from_packet(p: Packet) -> Self {
        Unit::Packet(p)
    }
    #[inline]
    fn packet(&self) -> Option<&Packet> {
        match self {
            Unit::Packet(p) => Some(p),
            Unit::Cell(_) => None,
        }
    }
    #[inline]
    fn into_packet(self) -> Result<Packet, Self> {
        match self {
            Unit::Packet(p) => Ok(p),
            u => Err(u),
        }
    }
}

impl CellUnit for Unit {
    #[inline]
    fn from_cell(c: Cell) -> Self {
        Unit::Cell(c)
    }
    #[inline]
    fn into_cell(self) -> Result<Cell, Self> {
        match self {
            Unit::Cell(c) => Ok(c),
            u => Err(u),
        }
    }
    #[inline]
    fn cell(&self) -> Option<&Cell> {
        match self {
            Unit::Cell(c) => Some(c),
            Unit::Packet(_) => None,
        }
    }
}
