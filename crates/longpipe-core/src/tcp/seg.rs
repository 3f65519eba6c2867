//! Segments as a TCP endpoint sees them inside: sequence numbers relative to the
//! initial sequence number and 64 bits wide (the SYN is 0, the first data byte 1; they
//! never wrap), the window in bytes. [`super::endpoint`] converts them to and from the
//! wire form ([`crate::net::packet::Segment`]).

use crate::element::Class;

pub use crate::wire::{ACK, CWR, ECE, FIN, RST, SYN};

/// SACK blocks carried by an ACK, as relative sequence numbers [left, right).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SackList {
    pub n: u8,
    pub blocks: [(u64, u64); 4],
}

impl SackList {
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..(self.n as usize).min(4)]
    }
}

/// A TCP segment in relative sequence numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seg {
    pub flags: u8,
    pub seq: u64,
    pub ack: u64,
    /// Advertised window in bytes (already rounded to the window-scale granularity).
    pub wnd: u64,
    /// Payload bytes.
    pub len: u32,
    /// Options on a SYN: (mss, wscale shift, sack-permitted).
    pub syn_opts: Option<(u16, u8, bool)>,
    /// SACK option (None when absent; boxed to keep data segments small).
    pub sack: Option<Box<SackList>>,
    /// Traffic class of the packet that carries it: [`Class::Low`] for TCP-Peach probe
    /// segments and the ACKs that answer them.
    pub class: Class,
    /// The IP ECN field of the packet that carries it (RFC 3168;
    /// [`crate::net::packet::ecn`]).
    pub ecn: u8,
    /// RFC 7323 timestamps (TSval, TSecr), our clock offset removed (see
    /// [`super::timestamps`]); on a SYN, the offer of the option.
    pub ts: Option<(u32, u32)>,
}

impl Seg {
    /// Sequence space consumed: payload + SYN + FIN.
    pub fn seq_len(&self) -> u64 {
        self.len as u64 + (self.flags & SYN != 0) as u64 + (self.flags & FIN != 0) as u64
    }
    pub fn end(&self) -> u64 {
        self.seq + self.seq_len()
    }
}
