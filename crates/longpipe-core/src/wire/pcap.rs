//! Classic libpcap files with nanosecond timestamps (magic 0xa1b23c4d, version 2.4,
//! little-endian) and link type LINKTYPE_RAW (101: each record is a raw IPv4 packet),
//! as tcpdump, tshark and Wireshark read them. Built in memory; the caller writes the
//! bytes wherever it likes.
//!
//! Layout: a 24-byte global header (magic, version 2.4, thiszone 0, sigfigs 0,
//! snaplen, link type), then per packet a 16-byte record header (ts_sec, ts_nsec,
//! captured length, original length) followed by the captured bytes. All integers
//! little-endian.

use super::TcpIpHeader;

/// LINKTYPE_RAW: raw IPv4/IPv6 packets, no link-layer header.
pub const LINKTYPE_RAW: u32 = 101;
/// The magic number of nanosecond-resolution classic pcap files.
pub const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;

/// An in-memory pcap file, growing one record at a time.
#[derive(Clone, Debug)]
pub struct PcapWriter {
    buf: Vec<u8>,
    snaplen: u32,
    packets: u64,
    scratch: Vec<u8>,
}

impl PcapWriter {
    /// A file holding just the global header: nanosecond timestamps, version 2.4,
    /// link type [`LINKTYPE_RAW`], and `snaplen`, the most bytes kept per record.
    pub fn new(snaplen: u32) -> Self {
        let mut buf = Vec::with_capacity(1 << 16);
        buf.extend_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes()); // version major
        buf.extend_from_slice(&4u16.to_le_bytes()); // version minor
        buf.extend_from_slice(&0i32.to_le_bytes()); // thiszone: UTC
        buf.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        buf.extend_from_slice(&snaplen.to_le_bytes());
        buf.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        PcapWriter {
            buf,
            snaplen,
            packets: 0,
            scratch: Vec::with_capacity(128),
        }
    }

    /// The snap length given to [`Self::new`].
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Adds one record. `ts_ns` is in integer nanoseconds since time 0 (written as
    /// seconds and nanoseconds; seconds wrap past `u32::MAX`, after 136 years).
    /// `data` is the packet as captured and is cut to the snap length; `orig_len` is
    /// its full length on the wire, raised to the captured length if below it.
    pub fn record(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) {
        let cap = data.len().min(self.snaplen as usize);
        let orig_len = orig_len.max(cap as u32);
        self.buf
            .extend_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&(cap as u32).to_le_bytes());
        self.buf.extend_from_slice(&orig_len.to_le_bytes());
        self.buf.extend_from_slice(&data[..cap]);
        self.packets += 1;
    }

    /// Records the IPv4 + TCP headers of a packet (no payload bytes are stored) with
    /// orig_len = [`TcpIpHeader::total_len`]. Readers see a capture truncated after
    /// the headers, as with `tcpdump -s` (or cut shorter if the snap length is below
    /// the header length).
    pub fn record_header(&mut self, ts_ns: u64, h: &TcpIpHeader) {
        let mut s = std::mem::take(&mut self.scratch);
        s.clear();
        h.emit(&mut s);
        self.record(ts_ns, &s, h.total_len() as u32);
        self.scratch = s;
    }

    /// Records written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The file so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The file.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{TcpOptions, ACK};

    #[test]
    fn global_header_bytes() {
        let w = PcapWriter::new(64);
        assert_eq!(
            w.as_bytes(),
            &[
                0x4d, 0x3c, 0xb2, 0xa1, // magic, nanosecond resolution
                2, 0, 4, 0, // version 2.4
                0, 0, 0, 0, // thiszone
                0, 0, 0, 0, // sigfigs
                64, 0, 0, 0, // snaplen
                101, 0, 0, 0, // LINKTYPE_RAW
            ]
        );
        assert_eq!(w.packets(), 0);
        assert_eq!(w.snaplen(), 64);
        assert_eq!(
            PcapWriter::new(0x0004_0000).as_bytes()[16..20],
            [0, 0, 4, 0]
        );
    }

    #[test]
    fn record_layout() {
        let mut w = PcapWriter::new(64);
        w.record(1_500_000_001, &[9u8; 100], 1500);
        let r = &w.as_bytes()[24..];
        assert_eq!(
            &r[..16],
            &[
                1, 0, 0, 0, // ts_sec = 1
                0x01, 0x65, 0xcd, 0x1d, // ts_nsec = 500_000_001 = 0x1dcd6501
                64, 0, 0, 0, // captured length: cut to snaplen
                0xdc, 0x05, 0, 0, // original length 1500
            ]
        );
        assert_eq!(&r[16..], &[9u8; 64]);
        assert_eq!(w.packets(), 1);

        // Short data is kept whole; orig_len never below the captured length.
        w.record(0, &[1, 2, 3], 2);
        let r = &w.as_bytes()[24 + 16 + 64..];
        assert_eq!(
            r,
            &[0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3]
        );
        assert_eq!(w.packets(), 2);
        assert_eq!(w.clone().into_bytes(), w.as_bytes());
    }

    #[test]
    fn record_header_stores_headers_only() {
        let h = TcpIpHeader {
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            ip_id: 3,
            tos: 0,
            ttl: 64,
            src_port: 49152,
            dst_port: 5001,
            seq: 1,
            ack: 2,
            flags: ACK,
            window: 100,
            options: TcpOptions {
                timestamps: Some((1, 2)),
                ..Default::default()
            },
            payload_len: 1448,
        };
        let mut w = PcapWriter::new(128);
        w.record_header(2_000_000_000, &h);
        w.record_header(3_000_000_000, &h);
        let mut hdr = vec![];
        h.emit(&mut hdr);
        let b = w.as_bytes();
        let rec = 16 + hdr.len();
        assert_eq!(b.len(), 24 + 2 * rec);
        for (i, r) in b[24..].chunks(rec).enumerate() {
            assert_eq!(&r[..4], &(2 + i as u32).to_le_bytes());
            assert_eq!(&r[4..8], &[0; 4]);
            assert_eq!(&r[8..12], &(hdr.len() as u32).to_le_bytes());
            assert_eq!(&r[12..16], &1500u32.to_le_bytes());
            assert_eq!(&r[16..], &hdr[..]);
        }
        // A snap length below the header length cuts the headers too.
        let mut w = PcapWriter::new(40);
        w.record_header(0, &h);
        assert_eq!(
            &w.as_bytes()[24 + 8..24 + 16],
            &[40, 0, 0, 0, 0xdc, 0x05, 0, 0]
        );
        assert_eq!(&w.as_bytes()[24 + 16..], &hdr[..40]);
    }
}
