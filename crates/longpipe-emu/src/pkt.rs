//! The emulator's unit: one raw IPv4 packet as a TUN device hands it over (no packet
//! information header), in a buffer that is recycled through a [`Pool`], so the ferry's
//! steady state allocates nothing per packet.
//!
//! It implements the core's [`Frame`] (wire length = the bytes read, the TCP view
//! parsed from the headers on demand, for the `seq` loss model) and [`Stamp`] (a
//! creation-order number), so the core's link directions and RLC move it unchanged.

use longpipe_core::element::{Frame, TcpMeta};
use longpipe_core::engine::driver::Stamp;

/// A raw IPv4 packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pkt {
    /// The packet's bytes, from the IPv4 header on.
    pub buf: Vec<u8>,
    /// Creation order in the ferry (set by the driver).
    pub uid: u64,
}

/// `uid` before the driver stamps it.
pub const UNSTAMPED: u64 = u64::MAX;

impl Pkt {
    pub fn new(buf: Vec<u8>) -> Pkt {
        Pkt {
            buf,
            uid: UNSTAMPED,
        }
    }
}

impl Frame for Pkt {
    #[inline]
    fn wire_len(&self) -> u32 {
        self.buf.len() as u32
    }

    fn tcp_meta(&self) -> Option<TcpMeta> {
        tcp_meta(&self.buf)
    }
}

impl Stamp for Pkt {
    #[inline]
    fn stamp(&mut self, next: &mut u64) {
        if self.uid == UNSTAMPED {
            self.uid = *next;
            *next += 1;
        }
    }
}

/// The TCP view of an IPv4 packet: None unless it is an IPv4 packet carrying the start
/// of a TCP segment (protocol 6, fragment offset 0) with both headers present.
pub fn tcp_meta(b: &[u8]) -> Option<TcpMeta> {
    if b.len() < 20 || b[0] >> 4 != 4 || b[9] != 6 {
        return None;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    let frag = u16::from_be_bytes([b[6], b[7]]) & 0x1fff;
    if ihl < 20 || frag != 0 || b.len() < ihl + 20 {
        return None;
    }
    let total = (u16::from_be_bytes([b[2], b[3]]) as usize).min(b.len());
    let t = &b[ihl..];
    let doff = (t[12] >> 4) as usize * 4;
    let be16 = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
    Some(TcpMeta {
        src: [b[12], b[13], b[14], b[15]],
        dst: [b[16], b[17], b[18], b[19]],
        sport: be16(0),
        dport: be16(2),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        flags: t[13],
        len: total.saturating_sub(ihl + doff) as u32,
    })
}

/// Recycled packet buffers of one capacity.
pub struct Pool {
    free: Vec<Vec<u8>>,
    cap: usize,
    /// Buffers allocated so far (a steady state stops growing this).
    pub allocated: u64,
}

impl Pool {
    /// Buffers of `cap` bytes (the largest packet a device hands over), `n` made now.
    pub fn new(cap: usize, n: usize) -> Pool {
        let mut p = Pool {
            free: Vec::with_capacity(n.max(64)),
            cap,
            allocated: 0,
        };
        for _ in 0..n {
            let b = p.fresh();
            p.free.push(b);
        }
        p
    }

    fn fresh(&mut self) -> Vec<u8> {
        self.allocated += 1;
        Vec::with_capacity(self.cap)
    }

    /// A buffer of length `cap` to read into (its old bytes are left as they were).
    pub fn get(&mut self) -> Vec<u8> {
        let mut b = self.free.pop().unwrap_or_else(|| self.fresh());
        // No allocation: the capacity is already there; bytes are zeroed only once.
        b.resize(self.cap, 0);
        b
    }

    /// Gives a buffer back.
    pub fn put(&mut self, b: Vec<u8>) {
        if b.capacity() >= self.cap {
            self.free.push(b);
        }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use longpipe_core::wire::{TcpIpHeader, TcpOptions, ACK, SYN};

    fn packet(flags: u8, payload: u32, opts: TcpOptions) -> Vec<u8> {
        let h = TcpIpHeader {
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            ip_id: 1,
            ttl: 64,
            src_port: 49152,
            dst_port: 5001,
            seq: 0xfffffff0,
            ack: 9,
            flags,
            window: 100,
            options: opts,
            payload_len: payload,
        };
        let mut b = vec![];
        h.emit_with_zero_payload(&mut b);
        b
    }

    #[test]
    fn tcp_view_of_real_bytes() {
        let b = packet(
            SYN,
            0,
            TcpOptions {
                mss: Some(1460),
                sack_permitted: true,
                ..Default::default()
            },
        );
        let m = tcp_meta(&b).unwrap();
        assert_eq!(
            (m.sport, m.dport, m.seq, m.flags, m.len),
            (49152, 5001, 0xfffffff0, SYN, 0)
        );
        let b = packet(ACK, 1000, TcpOptions::default());
        let p = Pkt::new(b.clone());
        assert_eq!(p.wire_len(), 1040);
        let m = p.tcp_meta().unwrap();
        assert_eq!((m.src, m.dst, m.len), ([10, 0, 0, 1], [10, 0, 0, 2], 1000));
        // not TCP, not IPv4, a later fragment, truncated: no TCP view
        let mut udp = b.clone();
        udp[9] = 17;
        assert!(tcp_meta(&udp).is_none());
        let mut v6 = b.clone();
        v6[0] = 0x60;
        assert!(tcp_meta(&v6).is_none());
        let mut frag = b.clone();
        frag[7] = 1;
        assert!(tcp_meta(&frag).is_none());
        assert!(tcp_meta(&b[..30]).is_none());
    }

    #[test]
    fn pool_recycles() {
        let mut p = Pool::new(2048, 2);
        let a = p.get();
        let b = p.get();
        let c = p.get();
        assert_eq!((a.len(), p.allocated), (2048, 3));
        for x in [a, b, c] {
            p.put(x);
        }
        for _ in 0..100 {
            let x = p.get();
            p.put(x);
        }
        assert_eq!(p.allocated, 3);
        let mut s = Pkt::new(vec![]);
        let mut n = 5;
        s.stamp(&mut n);
        s.stamp(&mut n);
        assert_eq!((s.uid, n), (5, 6));
    }
}
