//! The simulator's packet: a real IPv4 + TCP header (addresses, ports, 32-bit wrapping
//! sequence numbers, the 16-bit window field, options) and a payload length. No payload
//! bytes are carried. The same header converts to and from wire bytes
//! ([`Packet::header`], [`Packet::from_header`]), so the pcap writer, the live emulator
//! and the gateway daemon see exactly what the simulator's elements see.
//!
//! Addresses: node `i` of a scenario is `10.0.0.0 + i + 1` ([`node_addr`]); routing maps
//! an address back to its node with [`addr_node`].

use crate::element::{Class, Frame, TcpMeta};
use crate::wire::{SackBlocks, TcpIpHeader, TcpOptions};

pub use crate::wire::{ACK, CWR, ECE, FIN, PSH, RST, SYN};

/// IPv4 (20 B) + TCP (20 B) headers without options.
pub const TCPIP_HEADER: u32 = 40;

/// RFC 3168 §5 ECN codepoints (the low two bits of the IPv4 TOS byte).
pub mod ecn {
    /// Not ECN-capable transport.
    pub const NOT_ECT: u8 = 0b00;
    /// ECN-capable transport, ECT(1).
    pub const ECT1: u8 = 0b01;
    /// ECN-capable transport, ECT(0) (what RFC 3168 senders set).
    pub const ECT0: u8 = 0b10;
    /// Congestion experienced.
    pub const CE: u8 = 0b11;
}

/// The DSCP of a low-priority ([`Class::Low`]) packet on the wire: Lower Effort,
/// RFC 8622 (codepoint 000001). Normal packets carry DSCP 0 (default forwarding).
pub const DSCP_LE: u8 = 0b00_0001;

/// The IPv4 address of node `i`: 10.0.0.0 + i + 1.
pub fn node_addr(i: usize) -> [u8; 4] {
    let v = 0x0a00_0000u32 + i as u32 + 1;
    v.to_be_bytes()
}

/// The node whose address is `a` (inverse of [`node_addr`]), if it is one.
pub fn addr_node(a: [u8; 4]) -> Option<usize> {
    let v = u32::from_be_bytes(a);
    (v > 0x0a00_0000 && v < 0x0b00_0000).then(|| (v - 0x0a00_0001) as usize)
}

/// TCP options as carried by a simulated segment. SACK blocks are boxed so that a data
/// packet stays small.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: Option<(u32, u32)>,
    pub sack: Option<Box<SackBlocks>>,
}

impl Options {
    /// The codec's form.
    pub fn to_wire(&self) -> TcpOptions {
        TcpOptions {
            mss: self.mss,
            wscale: self.wscale,
            sack_permitted: self.sack_permitted,
            timestamps: self.timestamps,
            sack: self.sack.as_deref().copied().unwrap_or_default(),
        }
    }

    pub fn from_wire(o: &TcpOptions) -> Self {
        Options {
            mss: o.mss,
            wscale: o.wscale,
            sack_permitted: o.sack_permitted,
            timestamps: o.timestamps,
            sack: (o.sack.n > 0).then(|| Box::new(o.sack)),
        }
    }

    /// Bytes of options on the wire (Linux layout, padded to 4).
    pub fn encoded_len(&self) -> u32 {
        if self.mss.is_none()
            && self.wscale.is_none()
            && !self.sack_permitted
            && self.timestamps.is_none()
            && self.sack.is_none()
        {
            return 0;
        }
        self.to_wire().encoded_len() as u32
    }
}

/// A TCP segment as on the wire (RFC 9293 header fields; `len` payload bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// The window field as sent (right-shifted by the sender's window scale, except in
    /// SYN segments).
    pub window: u16,
    pub opts: Options,
    /// Payload bytes.
    pub len: u32,
}

impl Segment {
    /// Sequence space consumed: payload + SYN + FIN.
    pub fn seq_len(&self) -> u32 {
        self.len + (self.flags & SYN != 0) as u32 + (self.flags & FIN != 0) as u32
    }
}

/// An IPv4/TCP packet in flight.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique per run, in order of creation (the driver stamps it); the IPv4 ID field.
    pub uid: u64,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// IPv4 total length in bytes (headers + options + payload).
    pub size: u32,
    /// Traffic class; on the wire the DSCP ([`DSCP_LE`] for [`Class::Low`]).
    pub class: Class,
    /// The IP ECN field ([`ecn`] codepoints).
    pub ecn: u8,
    pub seg: Segment,
}

/// A packet's uid before the driver stamps it.
pub const UNSTAMPED: u64 = u64::MAX;

impl Packet {
    /// A new packet from `src` to `dst` carrying `seg`; its size follows from the
    /// options and payload.
    pub fn new(src: [u8; 4], dst: [u8; 4], seg: Segment) -> Packet {
        Packet {
            uid: UNSTAMPED,
            src,
            dst,
            size: TCPIP_HEADER + seg.opts.encoded_len() + seg.len,
            class: Class::Normal,
            ecn: ecn::NOT_ECT,
            seg,
        }
    }

    /// The IPv4 TOS byte: DSCP from the class, then the ECN field.
    pub fn tos(&self) -> u8 {
        let dscp = match self.class {
            Class::Normal => 0,
            Class::Low => DSCP_LE,
        };
        dscp << 2 | (self.ecn & 3)
    }

    /// The header as the codec writes it: IPv4 ID from the uid, TTL 64, DF.
    pub fn header(&self) -> TcpIpHeader {
        TcpIpHeader {
            src_ip: self.src,
            dst_ip: self.dst,
            ip_id: self.uid as u16,
            tos: self.tos(),
            ttl: 64,
            src_port: self.seg.sport,
            dst_port: self.seg.dport,
            seq: self.seg.seq,
            ack: self.seg.ack,
            flags: self.seg.flags,
            window: self.seg.window,
            options: self.seg.opts.to_wire(),
            payload_len: self.seg.len,
        }
    }

    /// The packet a parsed header describes (payload bytes are not kept).
    pub fn from_header(uid: u64, h: &TcpIpHeader) -> Packet {
        let seg = Segment {
            sport: h.src_port,
            dport: h.dst_port,
            seq: h.seq,
            ack: h.ack,
            flags: h.flags,
            window: h.window,
            opts: Options::from_wire(&h.options),
            len: h.payload_len,
        };
        Packet {
            uid,
            src: h.src_ip,
            dst: h.dst_ip,
            size: h.total_len() as u32,
            class: if h.tos >> 2 == DSCP_LE {
                Class::Low
            } else {
                Class::Normal
            },
            ecn: h.tos & 3,
            seg,
        }
    }
}

/// A unit that may be one whole packet: what the elements that read packets take
/// (forwarding nodes, capture points, ATM adapters), whatever else the unit may be (the
/// simulator's [`crate::unit::Unit`] is a packet or an ATM cell).
pub trait PacketUnit: Frame + Sized {
    fn from_packet(p: Packet) -> Self;
    fn packet(&self) -> Option<&Packet>;
    fn into_packet(self) -> Result<Packet, Self>;
}

impl PacketUnit for Packet {
    #[inline]
    fn from_packet(p: Packet) -> Self {
        p
    }
    #[inline]
    fn packet(&self) -> Option<&Packet> {
        Some(self)
    }
    #[inline]
    fn into_packet(self) -> Result<Packet, Self> {
        Ok(self)
    }
}

impl Frame for Packet {
    fn wire_len(&self) -> u32 {
        self.size
    }
    fn class(&self) -> Class {
        self.class
    }
    fn ecn(&self) -> u8 {
        self.ecn
    }
    #[inline]
    fn mark_ce(&mut self) -> bool {
        if self.ecn == ecn::NOT_ECT {
            return false;
        }
        self.ecn = ecn::CE;
        true
    }
    fn tcp_meta(&self) -> Option<TcpMeta> {
        Some(TcpMeta {
            src: self.src,
            dst: self.dst,
            sport: self.seg.sport,
            dport: self.seg.dport,
            seq: self.seg.seq,
            flags: self.seg.flags,
            len: self.seg.len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::parse;

    #[test]
    fn addresses_round_trip() {
        assert_eq!(node_addr(0), [10, 0, 0, 1]);
        assert_eq!(node_addr(255), [10, 0, 1, 0]);
        for i in [0, 1, 254, 255, 65_535, 1 << 20] {
            assert_eq!(addr_node(node_addr(i)), Some(i));
        }
        assert_eq!(addr_node([10, 0, 0, 0]), None);
        assert_eq!(addr_node([192, 168, 0, 1]), None);
    }

    #[test]
    fn size_counts_options_and_codec_round_trips() {
        let mut seg = Segment {
            sport: 49_152,
            dport: 5001,
            seq: 0xffff_fff0,
            ack: 7,
            flags: SYN | ACK,
            window: 65_535,
            len: 0,
            opts: Options {
                mss: Some(1460),
                wscale: Some(7),
                sack_permitted: true,
                ..Default::default()
            },
        };
        let p = Packet::new(node_addr(1), node_addr(2), seg.clone());
        assert_eq!(p.size, 40 + 12);
        let mut bytes = vec![];
        p.header().emit_with_zero_payload(&mut bytes);
        let (h, ck) = parse(&bytes).unwrap();
        assert!(ck.all_ok());
        let q = Packet::from_header(p.uid, &h);
        assert_eq!(
            (q.seg.clone(), q.size, q.src, q.dst),
            (seg.clone(), p.size, p.src, p.dst)
        );

        // class and ECN field travel in the TOS byte
        let mut low = p.clone();
        low.class = Class::Low;
        low.ecn = ecn::CE;
        assert_eq!(low.tos(), 0b0000_0111);
        let mut bytes = vec![];
        low.header().emit_with_zero_payload(&mut bytes);
        let (h, _) = parse(&bytes).unwrap();
        let q = Packet::from_header(low.uid, &h);
        assert_eq!((q.class, q.ecn), (Class::Low, ecn::CE));
        assert!(!p.clone().mark_ce(), "a Not-ECT packet is never marked");
        let mut e = p.clone();
        e.ecn = ecn::ECT0;
        assert!(e.mark_ce() && e.ecn == ecn::CE);

        seg.flags = ACK;
        seg.opts = Options {
            sack: Some(Box::new(SackBlocks::from_slice(&[(1, 2), (3, 4), (5, 6)]))),
            ..Default::default()
        };
        seg.len = 100;
        let p = Packet::new(node_addr(1), node_addr(2), seg);
        assert_eq!(p.size, 40 + 4 + 24 + 100);
        assert_eq!(p.wire_len(), p.size);
    }
}
