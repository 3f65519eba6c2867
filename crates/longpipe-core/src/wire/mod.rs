//! Real IPv4/TCP header bytes and a pcap writer, with no I/O: callers get bytes.
//!
//! Used for pcap export of simulated runs now, and by the live emulator and gateway
//! daemon on real packets later. Only `std` is used; nothing here reads a clock or a
//! file.
//!
//! # Standards
//!
//! * IPv4 header: RFC 791 (20 bytes, no IP options when emitted; any IHL accepted by
//!   [`parse`]).
//! * TCP header: RFC 793 as updated and obsoleted by RFC 9293 (section 3.1: header
//!   format, data offset, pseudo-header for the checksum).
//! * Options: MSS (RFC 9293 section 3.2, kind 2), window scale and timestamps
//!   (RFC 7323, kinds 3 and 8), SACK-permitted and SACK blocks (RFC 2018, kinds 4 and 5).
//! * Checksums: the Internet checksum of RFC 1071, the 16-bit one's complement of the
//!   one's-complement sum of big-endian 16-bit words ([`ones_sum`]).
//! * pcap: the classic libpcap file format with nanosecond timestamps (magic
//!   `0xa1b23c4d`, version 2.4) and `LINKTYPE_RAW` (101): each record is one raw IPv4
//!   packet with no link-layer header.
//!
//! # Invariants
//!
//! * [`TcpIpHeader::emit`] writes exactly [`TcpIpHeader::header_len`] bytes:
//!   20 (IPv4) + 20 (TCP) + [`TcpOptions::encoded_len`].
//! * The options area is a multiple of 4 bytes and never longer than
//!   [`MAX_OPTIONS_LEN`] (40) bytes, so the TCP data offset always fits its 4 bits.
//!   SACK blocks that do not fit after the other options are dropped from the end, as
//!   Linux does (e.g. at most 3 blocks alongside timestamps); at most 4 blocks are ever
//!   sent. [`TcpOptions::sack_blocks_encoded`] tells how many go out.
//! * Options are laid out as Linux lays them out (NOP-aligned, in the order MSS,
//!   SACK-permitted/timestamps, window scale, SACK blocks), so captures look like real
//!   Linux traffic.
//! * The emitted IPv4 header has version 4, IHL 5, TOS 0, DF set, fragment offset 0,
//!   protocol 6 and a correct header checksum; the TCP checksum is correct for a
//!   payload of `payload_len` zero bytes (zero bytes add nothing to a one's-complement
//!   sum, so the header alone determines it). [`TcpIpHeader::emit_with_zero_payload`]
//!   therefore yields a complete packet whose both checksums verify.
//! * `emit` then [`parse`] gives back an equal [`TcpIpHeader`] whenever the options fit
//!   (see above) and SACK slots past `n` are zero, as [`parse`] leaves them.
//! * [`PcapWriter`] records never hold more than the snap length, and a record's
//!   original length is never below its captured length.

mod pcap;
mod tcp;

#[cfg(test)]
mod tshark_tests;

pub use pcap::{PcapWriter, LINKTYPE_RAW, PCAP_MAGIC_NS};
pub use tcp::{parse, ChecksumStatus, SackBlocks, TcpIpHeader, TcpOptions, WireError};

/// TCP flag bits (the low byte of RFC 9293's control bits).
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const URG: u8 = 0x20;
pub const ECE: u8 = 0x40;
pub const CWR: u8 = 0x80;

/// Length of the emitted IPv4 header (no IP options).
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of the fixed part of the TCP header.
pub const TCP_HEADER_LEN: usize = 20;
/// Largest TCP options area: the 4-bit data offset allows 60 header bytes.
pub const MAX_OPTIONS_LEN: usize = 40;

/// RFC 1071 one's-complement sum of 16-bit big-endian words (an odd final byte is
/// padded with a zero byte), added to `acc` and folded to 16 bits; not complemented.
/// A block whose checksum field is correct sums to `0xffff`.
pub fn ones_sum(data: &[u8], acc: u32) -> u16 {
    let mut acc = acc as u64;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [b] = chunks.remainder() {
        acc += (*b as u64) << 8;
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ones_sum_rfc1071_example() {
        // RFC 1071 section 3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
        assert_eq!(
            ones_sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7], 0),
            0xddf2
        );
        // Odd length: the last byte is the high byte of a zero-padded word.
        assert_eq!(ones_sum(&[0x12, 0x34, 0x56], 0), 0x1234 + 0x5600);
        // Carries fold back in, even from a large initial accumulator.
        assert_eq!(ones_sum(&[0xff, 0xff, 0x00, 0x01], 0), 0x0001);
        assert_eq!(ones_sum(&[], u32::MAX), 0xffff);
        // Long input does not overflow.
        assert_eq!(ones_sum(&[0xff; 65_536], 0), 0xffff);
    }
}
