//! A packet capture point: records IPv4/TCP headers (no payload) into a pcap file as
//! units pass. Input port [`COPY`] takes copies (a transmitter's tap) and records them;
//! input port [`INLINE`] sits on a path: it records and passes the unit on to output
//! port 0.

use super::packet::{Packet, PacketUnit};
use crate::element::{Element, Emit, PortId};
use crate::time::SimTime;
use crate::wire::PcapWriter;

pub const COPY: PortId = 0;
pub const INLINE: PortId = 1;

/// Bytes kept per record: all headers, no payload.
pub const SNAPLEN: u32 = 128;

pub struct Capture {
    pub spec: String,
    writer: PcapWriter,
}

impl Capture {
    pub fn new(spec: String) -> Self {
        Capture {
            spec,
            writer: PcapWriter::new(SNAPLEN),
        }
    }

    fn record(&mut self, now: SimTime, p: &Packet) {
        let h = p.header();
        debug_assert_eq!(h.total_len() as u32, p.size);
        self.writer.record_header(now.0, &h);
    }

    /// The pcap file so far.
    pub fn bytes(&self) -> &[u8] {
        self.writer.as_bytes()
    }
}

impl<U: PacketUnit> Element<U> for Capture {
    type Metrics = ();

    fn handle(&mut self, now: SimTime, port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        let Some(p) = unit.packet() else {
            return; // captures are refused on ATM links
        };
        self.record(now, p);
        if port == INLINE {
            out.push(Emit::Now { port: 0, unit });
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        None
    }

    fn wakes(&self) -> bool {
        false
    }

    fn handle_timeout(&mut self, _now: SimTime, _out: &mut Vec<Emit<U>>) {}

    fn metrics(&self, _now: SimTime) {}
}
