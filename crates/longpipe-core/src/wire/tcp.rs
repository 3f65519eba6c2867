//! IPv4 (RFC 791) + TCP (RFC 9293) headers with options (RFC 7323, RFC 2018): emit
//! and parse. Checksums per RFC 1071 over the RFC 9293 section 3.1 pseudo-header.

use super::{ones_sum, IPV4_HEADER_LEN, MAX_OPTIONS_LEN, TCP_HEADER_LEN};
use std::fmt;

const EOL: u8 = 0;
const NOP: u8 = 1;
const KIND_MSS: u8 = 2;
const KIND_WSCALE: u8 = 3;
const KIND_SACK_PERMITTED: u8 = 4;
const KIND_SACK: u8 = 5;
const KIND_TIMESTAMPS: u8 = 8;
const PROTO_TCP: u8 = 6;

/// SACK blocks (RFC 2018 section 3) as (left edge, right edge) wire sequence numbers:
/// the left edge is the first byte held, the right edge the byte after the last one.
/// Only `blocks[..n]` count; `n` above 4 is read as 4. [`super::parse`] leaves unused
/// slots at `(0, 0)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub n: u8,
    pub blocks: [(u32, u32); 4],
}

impl SackBlocks {
    /// Builds from up to 4 blocks (extra ones are ignored).
    pub fn from_slice(blocks: &[(u32, u32)]) -> Self {
        let mut s = SackBlocks::default();
        for (slot, &b) in s.blocks.iter_mut().zip(blocks) {
            *slot = b;
            s.n += 1;
        }
        s
    }

    /// The blocks in use.
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..(self.n as usize).min(4)]
    }
}

/// The TCP options this crate writes and reads. Unknown options are skipped on parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    /// Maximum segment size (kind 2, RFC 9293 section 3.2); normally SYNs only.
    pub mss: Option<u16>,
    /// Window scale shift count (kind 3, RFC 7323 section 2); SYNs only.
    pub wscale: Option<u8>,
    /// SACK-permitted (kind 4, RFC 2018 section 2); SYNs only.
    pub sack_permitted: bool,
    /// Timestamps (TSval, TSecr) (kind 8, RFC 7323 section 3).
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks (kind 5, RFC 2018 section 3).
    pub sack: SackBlocks,
}

impl TcpOptions {
    /// Bytes taken by everything except the SACK blocks (each part already 4-aligned).
    fn base_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4; // kind 2, len 4, MSS
        }
        n += match (self.sack_permitted, self.timestamps.is_some()) {
            (_, true) => 12,    // [NOP,NOP | kind 4,len 2], kind 8, len 10, TSval, TSecr
            (true, false) => 4, // NOP, NOP, kind 4, len 2
            (false, false) => 0,
        };
        if self.wscale.is_some() {
            n += 4; // NOP, kind 3, len 3, shift
        }
        n
    }

    /// How many SACK blocks are actually encoded: `sack.n` capped at 4 and at what fits
    /// in the 40 option bytes after the other options (Linux drops the trailing blocks
    /// the same way; with timestamps at most 3 fit).
    pub fn sack_blocks_encoded(&self) -> usize {
        let n = (self.sack.n as usize).min(4);
        let room = MAX_OPTIONS_LEN - self.base_len();
        if n == 0 || room < 12 {
            0
        } else {
            n.min((room - 4) / 8)
        }
    }

    /// Encoded length in bytes including NOP padding to a multiple of 4 (RFC 9293 /
    /// 7323 / 2018 layouts with Linux-style NOP alignment): MSS 4; SACK-permitted alone
    /// NOP,NOP,4,2 = 4; timestamps NOP,NOP,8,10,TSval,TSecr = 12, or 4,2,8,10,... = 12
    /// with SACK-permitted; NOP,3,3,shift = 4; SACK blocks NOP,NOP,5,len then 8 bytes a
    /// block. Never above [`MAX_OPTIONS_LEN`]; see [`Self::sack_blocks_encoded`].
    pub fn encoded_len(&self) -> usize {
        let s = self.sack_blocks_encoded();
        self.base_len() + if s > 0 { 4 + 8 * s } else { 0 }
    }

    /// Appends the encoded options (exactly [`Self::encoded_len`] bytes, in Linux's
    /// order: MSS, SACK-permitted/timestamps, window scale, SACK) and returns the count.
    pub fn emit(&self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        if let Some(m) = self.mss {
            out.extend_from_slice(&[KIND_MSS, 4]);
            out.extend_from_slice(&m.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((val, ecr))) => {
                if sp {
                    out.extend_from_slice(&[KIND_SACK_PERMITTED, 2]);
                } else {
                    out.extend_from_slice(&[NOP, NOP]);
                }
                out.extend_from_slice(&[KIND_TIMESTAMPS, 10]);
                out.extend_from_slice(&val.to_be_bytes());
                out.extend_from_slice(&ecr.to_be_bytes());
            }
            (true, None) => out.extend_from_slice(&[NOP, NOP, KIND_SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.wscale {
            out.extend_from_slice(&[NOP, KIND_WSCALE, 3, ws]);
        }
        let n = self.sack_blocks_encoded();
        if n > 0 {
            out.extend_from_slice(&[NOP, NOP, KIND_SACK, 2 + 8 * n as u8]);
            for &(l, r) in &self.sack.blocks[..n] {
                out.extend_from_slice(&l.to_be_bytes());
                out.extend_from_slice(&r.to_be_bytes());
            }
        }
        let len = out.len() - start;
        debug_assert_eq!(len, self.encoded_len());
        debug_assert!(len.is_multiple_of(4) && len <= MAX_OPTIONS_LEN);
        len
    }
}

/// The fields of an IPv4 + TCP header that this crate sets; everything else is fixed
/// (see the module invariants). Sequence numbers are wire (32-bit, wrapping) values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpIpHeader {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub ip_id: u16,
    /// The IPv4 TOS byte (RFC 2474 DSCP in the upper six bits, RFC 3168 ECN field in
    /// the lower two).
    pub tos: u8,
    pub ttl: u8,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// TCP flags byte: [`super::FIN`], [`super::SYN`], ...
    pub flags: u8,
    /// Window field as sent (already right-shifted by the sender's scale).
    pub window: u16,
    pub options: TcpOptions,
    /// TCP payload bytes (not stored: only their count).
    pub payload_len: u32,
}

impl TcpIpHeader {
    /// 20 (IPv4) + 20 (TCP) + options.
    pub fn header_len(&self) -> usize {
        IPV4_HEADER_LEN + TCP_HEADER_LEN + self.options.encoded_len()
    }

    /// The IPv4 total length: header_len + payload_len.
    pub fn total_len(&self) -> usize {
        self.header_len() + self.payload_len as usize
    }

    /// Appends the IPv4 header (no IP options, DF set, protocol 6, correct header
    /// checksum) and the TCP header with options and a TCP checksum correct for a
    /// payload of `payload_len` zero bytes. Appends no payload bytes: exactly
    /// [`Self::header_len`] bytes.
    ///
    /// # Panics
    /// If [`Self::total_len`] exceeds 65535 (no IPv4 packet is that long).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let total = self.total_len();
        assert!(total <= 65_535, "IPv4 total length {total} exceeds 65535");
        let ip = out.len();
        out.extend_from_slice(&[0x45, self.tos]); // version 4, IHL 5; TOS
        out.extend_from_slice(&(total as u16).to_be_bytes());
        out.extend_from_slice(&self.ip_id.to_be_bytes());
        out.extend_from_slice(&[0x40, 0]); // DF, fragment offset 0
        out.extend_from_slice(&[self.ttl, PROTO_TCP, 0, 0]); // checksum filled below
        out.extend_from_slice(&self.src_ip);
        out.extend_from_slice(&self.dst_ip);
        let c = !ones_sum(&out[ip..ip + IPV4_HEADER_LEN], 0);
        out[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());

        let t = out.len();
        let doff = (TCP_HEADER_LEN + self.options.encoded_len()) / 4;
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        out.extend_from_slice(&[(doff as u8) << 4, self.flags]);
        out.extend_from_slice(&self.window.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]); // checksum (below), urgent pointer
        self.options.emit(out);
        let tcp_len = (out.len() - t) as u32 + self.payload_len;
        let c = !ones_sum(&out[t..], pseudo_sum(&self.src_ip, &self.dst_ip, tcp_len));
        out[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
        debug_assert_eq!(out.len() - ip, self.header_len());
    }

    /// Appends the header and `payload_len` zero bytes: a complete packet of
    /// [`Self::total_len`] bytes whose checksums verify.
    pub fn emit_with_zero_payload(&self, out: &mut Vec<u8>) {
        self.emit(out);
        out.resize(out.len() + self.payload_len as usize, 0);
    }
}

/// One's-complement sum (unfolded) of the RFC 9293 pseudo-header: source, destination,
/// zero, protocol 6, TCP length.
fn pseudo_sum(src: &[u8; 4], dst: &[u8; 4], tcp_len: u32) -> u32 {
    let w = |a: &[u8; 4]| {
        u16::from_be_bytes([a[0], a[1]]) as u32 + u16::from_be_bytes([a[2], a[3]]) as u32
    };
    w(src) + w(dst) + PROTO_TCP as u32 + tcp_len
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The bytes end inside the IPv4 header, the fixed TCP header or the TCP options.
    Truncated,
    /// IP version is not 4.
    NotIpv4,
    /// IP protocol is not 6.
    NotTcp,
    /// IHL below 5, TCP data offset below 5, or headers longer than the IPv4 total length.
    BadHeaderLength,
    /// A TCP option with a bad length, or one running past the options area.
    BadOption,
    /// An IPv4 fragment (MF set or a nonzero offset): no whole TCP segment to read.
    Fragment,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "packet truncated inside the IPv4/TCP header",
            WireError::NotIpv4 => "not an IPv4 packet",
            WireError::NotTcp => "not a TCP segment",
            WireError::BadHeaderLength => "bad IPv4 or TCP header length",
            WireError::BadOption => "malformed TCP option",
            WireError::Fragment => "IPv4 fragment",
        })
    }
}

impl std::error::Error for WireError {}

/// What [`parse`] could verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChecksumStatus {
    /// The IPv4 header checksum verifies.
    pub ip_ok: bool,
    /// The TCP checksum verifies; `None` when the bytes stop before the end of the
    /// segment given by the IPv4 total length (a snaplen-truncated capture).
    pub tcp_ok: Option<bool>,
}

impl ChecksumStatus {
    /// Both checksums were checked and verify.
    pub fn all_ok(&self) -> bool {
        self.ip_ok && self.tcp_ok == Some(true)
    }
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn parse_options(opts: &[u8]) -> Result<TcpOptions, WireError> {
    let mut o = TcpOptions::default();
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            EOL => break,
            NOP => i += 1,
            kind => {
                let len = *opts.get(i + 1).ok_or(WireError::BadOption)? as usize;
                if len < 2 || i + len > opts.len() {
                    return Err(WireError::BadOption);
                }
                let v = &opts[i + 2..i + len];
                match (kind, len) {
                    (KIND_MSS, 4) => o.mss = Some(be16(v, 0)),
                    (KIND_WSCALE, 3) => o.wscale = Some(v[0]),
                    (KIND_SACK_PERMITTED, 2) => o.sack_permitted = true,
                    (KIND_TIMESTAMPS, 10) => o.timestamps = Some((be32(v, 0), be32(v, 4))),
                    (KIND_SACK, l) if l >= 10 && (l - 2) % 8 == 0 => {
                        // At most 4 blocks fit in 40 option bytes, so l <= 34 here.
                        let mut s = SackBlocks::default();
                        for (k, w) in v.chunks_exact(8).enumerate() {
                            s.blocks[k] = (be32(w, 0), be32(w, 4));
                        }
                        s.n = ((l - 2) / 8) as u8;
                        o.sack = s;
                    }
                    (
                        KIND_MSS | KIND_WSCALE | KIND_SACK_PERMITTED | KIND_SACK | KIND_TIMESTAMPS,
                        _,
                    ) => return Err(WireError::BadOption),
                    _ => {} // unknown option: skipped
                }
                i += len;
            }
        }
    }
    Ok(o)
}

/// Parses an IPv4 + TCP packet. The bytes may stop anywhere after the TCP options (a
/// truncated capture); bytes past the IPv4 total length (link padding) are ignored.
/// `payload_len` comes from the IPv4 total length. The TCP checksum is checked only
/// when the whole segment is present ([`ChecksumStatus::tcp_ok`]). IP options are
/// skipped; unknown TCP options are skipped; an EOL option ends the option list.
pub fn parse(b: &[u8]) -> Result<(TcpIpHeader, ChecksumStatus), WireError> {
    if b.len() < IPV4_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    if b[0] >> 4 != 4 {
        return Err(WireError::NotIpv4);
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    if ihl < IPV4_HEADER_LEN {
        return Err(WireError::BadHeaderLength);
    }
    if b[9] != PROTO_TCP {
        return Err(WireError::NotTcp);
    }
    if be16(b, 6) & 0x3fff != 0 {
        return Err(WireError::Fragment);
    }
    if b.len() < ihl + TCP_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let total = be16(b, 2) as usize;
    let t = &b[ihl..];
    let doff = (t[12] >> 4) as usize * 4;
    if doff < TCP_HEADER_LEN || total < ihl + doff {
        return Err(WireError::BadHeaderLength);
    }
    if t.len() < doff {
        return Err(WireError::Truncated);
    }
    let options = parse_options(&t[TCP_HEADER_LEN..doff])?;
    let h = TcpIpHeader {
        src_ip: [b[12], b[13], b[14], b[15]],
        dst_ip: [b[16], b[17], b[18], b[19]],
        ip_id: be16(b, 4),
        tos: b[1],
        ttl: b[8],
        src_port: be16(t, 0),
        dst_port: be16(t, 2),
        seq: be32(t, 4),
        ack: be32(t, 8),
        flags: t[13],
        window: be16(t, 14),
        options,
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
#[path = "tcp_tests.rs"]
mod tests;
