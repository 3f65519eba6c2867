//! The ATM cell (ITU-T I.361): 5 octets of header and 48 of payload. The simulator
//! carries what the header says (the connection, the PTI bit that marks the last cell
//! of an AAL5 CPCS-PDU, the CLP bit) and, on the last cell, the packet the PDU carries
//! (no payload bytes move; the AAL5 trailer's Length field is `ncells`' source).
//!
//! Bookkeeping that no real cell carries, kept for counters only: the PDU's number on
//! its connection (`pdu`, standing in for the CRC-32 that catches cells of two PDUs
//! glued together), and the sender's loss-response epoch (see [`super::aal5`]).

use crate::element::{Class, Frame};
use crate::net::packet::{Packet, PacketUnit};

/// Octets of a cell on the wire.
pub const CELL_BYTES: u32 = 53;
/// Payload octets of a cell.
pub const CELL_PAYLOAD: u32 = 48;
/// Bits of a cell on the wire.
pub const CELL_BITS: u64 = CELL_BYTES as u64 * 8;

/// A virtual channel: one per TCP connection and direction.
pub type VcId = u32;

#[derive(Clone, Debug)]
pub struct Cell {
    /// The virtual channel (VPI/VCI in a real header).
    pub vc: VcId,
    /// The destination node of the VC (what a switch's VC table maps the VCI to).
    pub dst: u32,
    /// The CPCS-PDU's number on its VC, counted by the sending adapter from 0.
    pub pdu: u32,
    /// Cells of this PDU (the AAL5 trailer's Length field, rounded up to cells).
    pub ncells: u16,
    /// PTI "AAL indicate": the last cell of its CPCS-PDU (end of message).
    pub eom: bool,
    /// Cell Loss Priority: 1 = tagged (low priority).
    pub clp: bool,
    /// The sender's loss-response epoch when the PDU left, and the PDU number at which
    /// that epoch began (counters only).
    pub epoch: u32,
    pub epoch_start: u32,
    /// The packet, on the last cell only.
    pub sdu: Option<Box<Packet>>,
}

/// A unit that may be a packet or an ATM cell: what ATM lines and switches take.
pub trait CellUnit: PacketUnit {
    fn from_cell(c: Cell) -> Self;
    fn into_cell(self) -> Result<Cell, Self>;
    fn cell(&self) -> Option<&Cell>;
}

impl Frame for Cell {
    #[inline]
    fn wire_len(&self) -> u32 {
        CELL_BYTES
    }
    #[inline]
    fn class(&self) -> Class {
        if self.clp {
            Class::Low
        } else {
            Class::Normal
        }
    }
}
