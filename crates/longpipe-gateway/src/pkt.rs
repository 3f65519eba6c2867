//! The daemon's packet: the core's [`Packet`] header (what the gateway reads and
//! rewrites) and the payload bytes, shared by the copies the gateway resends.
//!
//! A packet the gateway forwards without touching its header ([`RawPkt::dirty`] false)
//! is written out as the bytes that came in (IP options, unknown TCP options and TTL
//! kept); one whose header it rewrote, or one it made, is encoded with the core's
//! `wire` codec, its payload appended and its TCP checksum completed from the payload's
//! one's-complement sum (computed once, when the packet arrived).

use longpipe_core::middlebox::gateway::GwPacket;
use longpipe_core::net::packet::{Packet, UNSTAMPED};
use longpipe_core::wire::{self, ones_sum};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct RawPkt {
    pub hdr: Packet,
    /// The header was rewritten (or the packet made): encode it anew.
    pub dirty: bool,
    /// The number of the read that brought it (0: made by the gateway): the packet
    /// just read may be written out as its input bytes.
    pub input: u64,
    /// The IPv4 TTL it arrived with (the kernel decrements it on each forward).
    pub ttl: u8,
    /// The TCP payload (None for a packet without one).
    pub payload: Option<Rc<[u8]>>,
    /// One's-complement sum of the payload (RFC 1071), unfolded into 16 bits.
    pub payload_sum: u16,
}

impl GwPacket for RawPkt {
    #[inline]
    fn hdr(&self) -> &Packet {
        &self.hdr
    }
    #[inline]
    fn hdr_mut(&mut self) -> &mut Packet {
        self.dirty = true;
        &mut self.hdr
    }
    fn made(p: Packet) -> Self {
        RawPkt {
            hdr: p,
            dirty: true,
            input: 0,
            ttl: 64,
            payload: None,
            payload_sum: 0,
        }
    }
}

/// One's-complement addition of two 16-bit sums (RFC 1071).
#[inline]
fn add1(a: u16, b: u16) -> u16 {
    let s = a as u32 + b as u32;
    ((s & 0xffff) + (s >> 16)) as u16
}

impl RawPkt {
    /// The packet whose parsed header is `h`, from the bytes `b` of read number
    /// `input` (`payload_at`: where the TCP payload starts; `b` holds it whole).
    pub fn from_wire(input: u64, h: &wire::TcpIpHeader, b: &[u8], payload_at: usize) -> RawPkt {
        let len = h.payload_len as usize;
        let (payload, payload_sum) = if len > 0 {
            let p = &b[payload_at..payload_at + len];
            (Some(Rc::from(p)), ones_sum(p, 0))
        } else {
            (None, 0)
        };
        RawPkt {
            hdr: Packet::from_header(h.ip_id as u64, h),
            dirty: false,
            input,
            ttl: h.ttl,
            payload,
            payload_sum,
        }
    }

    /// Writes the packet's bytes to `out` (cleared first). `input` is the read in
    /// progress (its number and bytes); `next_id` numbers the IPv4 ID of packets the
    /// gateway made or resent.
    pub fn encode(&self, input: (u64, &[u8]), next_id: &mut u16, out: &mut Vec<u8>) {
        out.clear();
        if !self.dirty && self.input != 0 && self.input == input.0 {
            let input = input.1;
            out.extend_from_slice(input);
            return;
        }
        let mut h = self.hdr.header();
        h.ttl = self.ttl;
        if self.hdr.uid == UNSTAMPED {
            h.ip_id = *next_id;
            *next_id = next_id.wrapping_add(1);
        }
        let len = self.payload.as_ref().map_or(0, |p| p.len());
        // the header says how much payload there is; a made packet carries none
        h.payload_len = h.payload_len.min(len as u32);
        h.emit(out);
        if let Some(p) = &self.payload {
            let n = h.payload_len as usize;
            out.extend_from_slice(&p[..n]);
            let sum = if n == p.len() {
                self.payload_sum
            } else {
                ones_sum(&p[..n], 0)
            };
            if sum != 0 {
                // the emitted checksum covers a zero payload: add the payload's sum
                let t = wire::IPV4_HEADER_LEN + 16;
                let c0 = u16::from_be_bytes([out[t], out[t + 1]]);
                let c = !add1(!c0, sum);
                out[t..t + 2].copy_from_slice(&c.to_be_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(payload: &[u8]) -> Vec<u8> {
        let h = wire::TcpIpHeader {
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 3],
            ip_id: 7,
            tos: 0,
            ttl: 61,
            src_port: 80,
            dst_port: 40000,
            seq: 1000,
            ack: 2000,
            flags: wire::ACK,
            window: 500,
            options: wire::TcpOptions {
                timestamps: Some((5, 6)),
                ..Default::default()
            },
            payload_len: payload.len() as u32,
        };
        let mut b = Vec::new();
        h.emit(&mut b);
        b.extend_from_slice(payload);
        // fix the checksum the slow way: recompute over the whole segment
        let t = wire::IPV4_HEADER_LEN;
        b[t + 16] = 0;
        b[t + 17] = 0;
        let mut ps = Vec::new();
        ps.extend_from_slice(&h.src_ip);
        ps.extend_from_slice(&h.dst_ip);
        ps.extend_from_slice(&[0, 6]);
        ps.extend_from_slice(&((b.len() - t) as u16).to_be_bytes());
        let c = !ones_sum(&b[t..], ones_sum(&ps, 0) as u32);
        b[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn a_rewritten_packet_keeps_its_payload_and_checksums_verify() {
        for payload in [
            &b""[..],
            b"x",
            b"hello, world",
            &[0xffu8; 1448][..],
            &[0u8; 3][..],
        ] {
            let b = sample(payload);
            let (h, st) = wire::parse(&b).unwrap();
            assert!(st.all_ok());
            let mut p = RawPkt::from_wire(1, &h, &b, h.header_len());
            let mut id = 100;
            let mut out = Vec::new();
            p.encode((1, &b), &mut id, &mut out);
            assert_eq!(out, b, "untouched: the bytes that came in");
            p.hdr_mut().seg.ack = 2500;
            p.hdr_mut().seg.window = 9;
            p.encode((1, &b), &mut id, &mut out);
            let (h2, st2) = wire::parse(&out).unwrap();
            assert!(
                st2.all_ok(),
                "checksums after a rewrite ({} B payload)",
                payload.len()
            );
            assert_eq!((h2.ack, h2.window, h2.ttl, h2.ip_id), (2500, 9, 61, 7));
            assert_eq!(&out[h2.header_len()..], payload, "payload intact");
            assert_eq!(id, 100, "an existing packet keeps its IPv4 ID");
            // a resend is renumbered
            p.hdr_mut().uid = UNSTAMPED;
            p.encode((1, &b), &mut id, &mut out);
            assert_eq!((wire::parse(&out).unwrap().0.ip_id, id), (100, 101));
        }
    }

    #[test]
    fn a_made_packet_has_no_payload_and_ttl_64() {
        let b = sample(b"abc");
        let (h, _) = wire::parse(&b).unwrap();
        let mut hdr = Packet::from_header(UNSTAMPED, &h);
        hdr.seg.len = 0;
        hdr.size = 40 + hdr.seg.opts.encoded_len();
        let p = RawPkt::made(hdr);
        let mut out = Vec::new();
        p.encode((1, &[]), &mut 1, &mut out);
        let (h2, st) = wire::parse(&out).unwrap();
        assert!(st.all_ok());
        assert_eq!((h2.payload_len, h2.ttl), (0, 64));
    }
}

/// A complete IPv4/TCP packet: header `h` (its `payload_len` set to the payload's) and
/// `payload`, both checksums correct (tests, fuzzing, benchmarks).
pub fn build_packet(h: &wire::TcpIpHeader, payload: &[u8]) -> Vec<u8> {
    let mut h = *h;
    h.payload_len = payload.len() as u32;
    let mut out = Vec::with_capacity(h.total_len());
    h.emit(&mut out);
    out.extend_from_slice(payload);
    let sum = ones_sum(payload, 0);
    if sum != 0 {
        let t = wire::IPV4_HEADER_LEN + 16;
        let c0 = u16::from_be_bytes([out[t], out[t + 1]]);
        out[t..t + 2].copy_from_slice(&(!add1(!c0, sum)).to_be_bytes());
    }
    out
}
