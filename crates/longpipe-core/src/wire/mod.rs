//! Real IPv4/TCP header bytes (RFC 791, RFC 9293, options of RFC 7323 and RFC 2018) and
//! a pcap writer, with no I/O: callers get bytes. Used for pcap export now, and by the
//! live emulator and gateway daemon on real packets later.
//!
//! Invariants: emitted headers carry correct IPv4 and TCP checksums (RFC 1071), the TCP
//! checksum computed as if the payload were `payload_len` zero bytes; options are laid
//! out as Linux does (NOP-aligned) and padded to a multiple of 4.

mod pcap;
mod tcp;

pub use pcap::PcapWriter;
pub use tcp::{parse, ChecksumStatus, SackBlocks, TcpIpHeader, TcpOptions, WireError};

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// RFC 1071 one's-complement sum of 16-bit big-endian words (odd byte padded with 0),
/// folded to 16 bits, not complemented.
pub fn ones_sum(data: &[u8], mut acc: u32) -> u16 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        acc += (*b as u32) << 8;
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}
