//! Packets as the simulator moves them: a TCP segment plus routing and size.

use crate::time::SimTime;

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// IPv4 (20 B) + TCP (20 B) headers without options.
pub const TCPIP_HEADER: u32 = 40;

/// SACK blocks carried by an ACK, as relative sequence numbers [left, right).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SackList {
    pub n: u8,
    pub blocks: [(u64, u64); 4],
}

/// A TCP segment. Sequence numbers are relative and 64-bit (no wrap inside the
/// simulator): each side's SYN is sequence 0; data starts at 1. The wire module turns
/// them into 32-bit numbers offset by an initial sequence number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// True when sent by the flow's data sender (src -> dst).
    pub from_sender: bool,
    pub flags: u8,
    pub seq: u64,
    pub ack: u64,
    /// Advertised window in bytes (already rounded to the window-scale granularity).
    pub wnd: u64,
    /// Payload bytes.
    pub len: u32,
    /// Options on a SYN: (mss, wscale shift, sack-permitted).
    pub syn_opts: Option<(u16, u8, bool)>,
    /// SACK option (None when absent; boxed to keep data packets small).
    pub sack: Option<Box<SackList>>,
}

impl Segment {
    /// Bytes of TCP options on the wire, padded to 4 (Linux layout).
    pub fn options_len(&self) -> u32 {
        let mut n = 0;
        if let Some((_, _, sack_ok)) = self.syn_opts {
            n += 4 + 4 + if sack_ok { 4 } else { 0 }; // MSS; NOP+WS; NOP,NOP,SACK-OK
        }
        if let Some(s) = &self.sack {
            if s.n > 0 {
                n += 4 + 8 * s.n as u32; // NOP,NOP,kind,len + blocks
            }
        }
        n
    }
    /// Sequence space consumed: payload + SYN + FIN.
    pub fn seq_len(&self) -> u64 {
        self.len as u64 + (self.flags & SYN != 0) as u64 + (self.flags & FIN != 0) as u64
    }
    pub fn end(&self) -> u64 {
        self.seq + self.seq_len()
    }
}

/// A packet in flight.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique, in creation order.
    pub uid: u64,
    pub flow: u32,
    pub src: u32,
    pub dst: u32,
    /// IPv4 total length in bytes (headers + options + payload).
    pub size: u32,
    /// 0 = normal; larger = lower priority (served and dropped after class 0).
    pub prio: u8,
    pub created: SimTime,
    pub seg: Segment,
}
