//! Classic libpcap files with nanosecond timestamps (magic 0xa1b23c4d, version 2.4,
//! little-endian) and link type LINKTYPE_RAW (101: raw IPv4), as tcpdump, tshark and
//! Wireshark read them.

use super::TcpIpHeader;

pub const LINKTYPE_RAW: u32 = 101;

pub struct PcapWriter {
    buf: Vec<u8>,
    snaplen: u32,
    packets: u64,
    scratch: Vec<u8>,
}

impl PcapWriter {
    pub fn new(snaplen: u32) -> Self {
        let mut buf = Vec::with_capacity(1 << 16);
        buf.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes()); // thiszone
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

    /// One record: `data` is truncated to the snap length; `orig_len` is the length on
    /// the wire.
    pub fn record(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) {
        let cap = data.len().min(self.snaplen as usize);
        self.buf
            .extend_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&(cap as u32).to_le_bytes());
        self.buf.extend_from_slice(&orig_len.to_le_bytes());
        self.buf.extend_from_slice(&data[..cap]);
        self.packets += 1;
    }

    /// Records the headers of a packet (payload not stored; orig_len = total length).
    pub fn record_header(&mut self, ts_ns: u64, h: &TcpIpHeader) {
        let mut s = std::mem::take(&mut self.scratch);
        s.clear();
        h.emit(&mut s);
        self.record(ts_ns, &s, h.total_len() as u32);
        self.scratch = s;
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn global_header_and_record_layout() {
        let mut w = PcapWriter::new(64);
        assert_eq!(
            w.as_bytes(),
            &[
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 101, 0, 0,
                0
            ]
        );
        w.record(1_500_000_001, &[9u8; 100], 1500);
        let r = &w.as_bytes()[24..];
        assert_eq!(&r[0..4], &1u32.to_le_bytes());
        assert_eq!(&r[4..8], &500_000_001u32.to_le_bytes());
        assert_eq!(&r[8..12], &64u32.to_le_bytes());
        assert_eq!(&r[12..16], &1500u32.to_le_bytes());
        assert_eq!(r.len(), 16 + 64);
        assert_eq!(w.packets(), 1);
    }
}
