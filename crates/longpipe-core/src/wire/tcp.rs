//! IPv4 + TCP headers: emit and parse.

use super::ones_sum;
use std::fmt;

/// SACK blocks as (left edge, right edge) wire sequence numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub n: u8,
    pub blocks: [(u32, u32); 4],
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    pub timestamps: Option<(u32, u32)>,
    pub sack: SackBlocks,
}

const NOP: u8 = 1;

impl TcpOptions {
    /// Writes the options (Linux layout) into `out`; returns the number of bytes.
    fn write(&self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        if let Some(m) = self.mss {
            out.extend_from_slice(&[2, 4]);
            out.extend_from_slice(&m.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (true, Some((v, e))) => {
                out.extend_from_slice(&[4, 2, 8, 10]);
                out.extend_from_slice(&v.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
            (false, Some((v, e))) => {
                out.extend_from_slice(&[NOP, NOP, 8, 10]);
                out.extend_from_slice(&v.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
            (true, None) => out.extend_from_slice(&[NOP, NOP, 4, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.wscale {
            out.extend_from_slice(&[NOP, 3, 3, ws]);
        }
        let n = self.sack.n.min(4) as usize;
        if n > 0 {
            out.extend_from_slice(&[NOP, NOP, 5, 2 + 8 * n as u8]);
            for &(l, r) in &self.sack.blocks[..n] {
                out.extend_from_slice(&l.to_be_bytes());
                out.extend_from_slice(&r.to_be_bytes());
            }
        }
        while !(out.len() - start).is_multiple_of(4) {
            out.push(0);
        }
        out.len() - start
    }

    /// Encoded length in bytes, a multiple of 4.
    pub fn encoded_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        n += match (self.sack_permitted, self.timestamps.is_some()) {
            (_, true) => 12,
            (true, false) => 4,
            (false, false) => 0,
        };
        if self.wscale.is_some() {
            n += 4;
        }
        let s = self.sack.n.min(4) as usize;
        if s > 0 {
            n += 4 + 8 * s;
        }
        n
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpIpHeader {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub ip_id: u16,
    pub ttl: u8,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub options: TcpOptions,
    pub payload_len: u32,
}

impl TcpIpHeader {
    pub fn header_len(&self) -> usize {
        40 + self.options.encoded_len()
    }
    pub fn total_len(&self) -> usize {
        self.header_len() + self.payload_len as usize
    }

    /// Appends the IPv4 header (DF, protocol 6) and the TCP header with options, both
    /// checksums correct for a payload of `payload_len` zero bytes. No payload bytes.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let total = self.total_len();
        assert!(total <= 65_535, "IPv4 total length {total} exceeds 65535");
        let ip = out.len();
        out.extend_from_slice(&[0x45, 0]);
        out.extend_from_slice(&(total as u16).to_be_bytes());
        out.extend_from_slice(&self.ip_id.to_be_bytes());
        out.extend_from_slice(&[0x40, 0, self.ttl, 6, 0, 0]);
        out.extend_from_slice(&self.src_ip);
        out.extend_from_slice(&self.dst_ip);
        let c = !ones_sum(&out[ip..ip + 20], 0);
        out[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        let t = out.len();
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        let doff = (20 + self.options.encoded_len()) / 4;
        out.extend_from_slice(&[(doff as u8) << 4, self.flags]);
        out.extend_from_slice(&self.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
        self.options.write(out);
        let tcp_len = (out.len() - t) as u32 + self.payload_len;
        let c = !ones_sum(&out[t..], pseudo_sum(&self.src_ip, &self.dst_ip, tcp_len));
        out[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
    }

    /// Appends header and `payload_len` zero bytes: a complete packet.
    pub fn emit_with_zero_payload(&self, out: &mut Vec<u8>) {
        self.emit(out);
        out.resize(out.len() + self.payload_len as usize, 0);
    }
}

fn pseudo_sum(src: &[u8; 4], dst: &[u8; 4], tcp_len: u32) -> u32 {
    let mut s = 0u32;
    for w in [src, dst] {
        s += u16::from_be_bytes([w[0], w[1]]) as u32 + u16::from_be_bytes([w[2], w[3]]) as u32;
    }
    s + 6 + tcp_len
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    Truncated,
    NotIpv4,
    NotTcp,
    BadHeaderLength,
    BadOption,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "packet truncated inside the IPv4/TCP header",
            WireError::NotIpv4 => "not an IPv4 packet",
            WireError::NotTcp => "not a TCP segment",
            WireError::BadHeaderLength => "bad IPv4 or TCP header length",
            WireError::BadOption => "malformed TCP option",
        })
    }
}
impl std::error::Error for WireError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChecksumStatus {
    pub ip_ok: bool,
    /// None when the payload is not all present (a truncated capture).
    pub tcp_ok: Option<bool>,
}

/// Parses an IPv4 + TCP packet; the bytes may stop after the TCP header.
pub fn parse(b: &[u8]) -> Result<(TcpIpHeader, ChecksumStatus), WireError> {
    if b.len() < 20 {
        return Err(WireError::Truncated);
    }
    if b[0] >> 4 != 4 {
        return Err(WireError::NotIpv4);
    }
    let ihl = (b[0] & 15) as usize * 4;
    if ihl < 20 {
        return Err(WireError::BadHeaderLength);
    }
    if b[9] != 6 {
        return Err(WireError::NotTcp);
    }
    if b.len() < ihl + 20 {
        return Err(WireError::Truncated);
    }
    let total = u16::from_be_bytes([b[2], b[3]]) as usize;
    let t = &b[ihl..];
    let doff = (t[12] >> 4) as usize * 4;
    if doff < 20 || total < ihl + doff {
        return Err(WireError::BadHeaderLength);
    }
    if t.len() < doff {
        return Err(WireError::Truncated);
    }
    let mut o = TcpOptions::default();
    let opts = &t[20..doff];
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1).ok_or(WireError::BadOption)? as usize;
                if len < 2 || i + len > opts.len() {
                    return Err(WireError::BadOption);
                }
                let v = &opts[i + 2..i + len];
                match (kind, len) {
                    (2, 4) => o.mss = Some(u16::from_be_bytes([v[0], v[1]])),
                    (3, 3) => o.wscale = Some(v[0]),
                    (4, 2) => o.sack_permitted = true,
                    (8, 10) => {
                        o.timestamps = Some((
                            u32::from_be_bytes([v[0], v[1], v[2], v[3]]),
                            u32::from_be_bytes([v[4], v[5], v[6], v[7]]),
                        ))
                    }
                    (5, l) if (l - 2) % 8 == 0 && l <= 34 => {
                        let n = (l - 2) / 8;
                        o.sack.n = n as u8;
                        for k in 0..n {
                            let w = &v[8 * k..8 * k + 8];
                            o.sack.blocks[k] = (
                                u32::from_be_bytes([w[0], w[1], w[2], w[3]]),
                                u32::from_be_bytes([w[4], w[5], w[6], w[7]]),
                            );
                        }
                    }
                    (2 | 3 | 4 | 5 | 8, _) => return Err(WireError::BadOption),
                    _ => {}
                }
                i += len;
            }
        }
    }
    let h = TcpIpHeader {
        src_ip: [b[12], b[13], b[14], b[15]],
        dst_ip: [b[16], b[17], b[18], b[19]],
        ip_id: u16::from_be_bytes([b[4], b[5]]),
        ttl: b[8],
        src_port: u16::from_be_bytes([t[0], t[1]]),
        dst_port: u16::from_be_bytes([t[2], t[3]]),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: t[13],
        window: u16::from_be_bytes([t[14], t[15]]),
        options: o,
        payload_len: (total - ihl - doff) as u32,
    };
    let ip_ok = ones_sum(&b[..ihl], 0) == 0xffff;
    let tcp_ok = (b.len() >= total).then(|| {
        let seg = &b[ihl..total];
        ones_sum(seg, pseudo_sum(&h.src_ip, &h.dst_ip, seg.len() as u32)) == 0xffff
    });
    Ok((h, ChecksumStatus { ip_ok, tcp_ok }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ACK, FIN, SYN};

    fn hdr(flags: u8, options: TcpOptions, payload_len: u32) -> TcpIpHeader {
        TcpIpHeader {
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            ip_id: 77,
            ttl: 64,
            src_port: 49152,
            dst_port: 5001,
            seq: 0xfff0_0000,
            ack: 12345,
            flags,
            window: 4000,
            options,
            payload_len,
        }
    }

    #[test]
    fn option_lengths() {
        let syn = TcpOptions {
            mss: Some(1460),
            wscale: Some(7),
            sack_permitted: true,
            ..Default::default()
        };
        assert_eq!(syn.encoded_len(), 12);
        let mut s = TcpOptions::default();
        s.sack.n = 1;
        assert_eq!(s.encoded_len(), 12);
        s.sack.n = 4;
        assert_eq!(s.encoded_len(), 36);
        let ts = TcpOptions {
            timestamps: Some((1, 2)),
            ..Default::default()
        };
        assert_eq!(ts.encoded_len(), 12);
        for o in [syn, s, ts] {
            let mut v = vec![];
            assert_eq!(o.write(&mut v), o.encoded_len());
        }
    }

    #[test]
    fn ipv4_checksum_known_vector() {
        // The classic example header: 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(!ones_sum(&h, 0), 0xb861);
    }

    #[test]
    fn emit_parse_round_trip_and_checksums() {
        let mut sack = SackBlocks {
            n: 3,
            ..Default::default()
        };
        sack.blocks[0] = (100, 200);
        sack.blocks[1] = (300, 400);
        sack.blocks[2] = (u32::MAX - 5, 10);
        let cases = [
            hdr(
                SYN,
                TcpOptions {
                    mss: Some(1460),
                    wscale: Some(3),
                    sack_permitted: true,
                    ..Default::default()
                },
                0,
            ),
            hdr(ACK, TcpOptions::default(), 1460),
            hdr(ACK | FIN, TcpOptions::default(), 17),
            hdr(
                ACK,
                TcpOptions {
                    sack,
                    ..Default::default()
                },
                0,
            ),
            hdr(
                ACK,
                TcpOptions {
                    timestamps: Some((5, 6)),
                    sack_permitted: true,
                    ..Default::default()
                },
                3,
            ),
        ];
        for h in cases {
            let mut v = vec![];
            h.emit_with_zero_payload(&mut v);
            assert_eq!(v.len(), h.total_len());
            let (p, ck) = parse(&v).unwrap();
            assert_eq!(p, h);
            assert_eq!(
                ck,
                ChecksumStatus {
                    ip_ok: true,
                    tcp_ok: Some(true)
                }
            );
            let mut trunc = vec![];
            h.emit(&mut trunc);
            let (p2, ck2) = parse(&trunc).unwrap();
            assert_eq!(p2, h);
            assert_eq!(
                ck2.tcp_ok,
                if h.payload_len == 0 { Some(true) } else { None }
            );
            // corrupt a byte: the TCP checksum must notice
            v[45] ^= 0x10;
            assert_eq!(parse(&v).unwrap().1.tcp_ok, Some(false));
        }
    }

    #[test]
    fn parse_rejects_garbage() {
        assert_eq!(parse(&[0x45; 10]), Err(WireError::Truncated));
        let mut v = vec![];
        hdr(ACK, TcpOptions::default(), 0).emit(&mut v);
        v[9] = 17;
        assert_eq!(parse(&v), Err(WireError::NotTcp));
        v[0] = 0x65;
        assert_eq!(parse(&v), Err(WireError::NotIpv4));
    }
}
