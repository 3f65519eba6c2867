//! One connection end of an application flow on a real socket: what it still has to
//! write (headers and payloads, gathered into one write), what it reads (raw replies at
//! the active end, framed messages at the passive end) and, at `dst`, how fast
//! (`read_rate`, [`Reader`]).

use super::frame::{Deframer, Header, HEADER_LEN};
use crate::flows::TcpInfo;
use longpipe_core::app::io::{ConnId, Msg, Tag};
use longpipe_core::time::SimTime;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;

/// The size of each message of an `Unlimited` write.
const UNLIMITED_MSG: u64 = 64 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum End {
    Active,
    Passive,
}

pub(super) enum Piece {
    Bytes([u8; HEADER_LEN], usize),
    Zeros(u64),
}

/// A reader at `read_rate`: a credit of bytes (also the bulk receiver's, flows.rs).
pub struct Reader {
    bps: u64,
    /// Credit, in bits × 1e9 (bytes × 8e9), so that nothing is lost to rounding.
    credit: u128,
    last: u64,
}

impl Reader {
    pub fn new(bps: u64, now: u64) -> Reader {
        Reader {
            bps,
            credit: 0,
            last: now,
        }
    }
    fn cap(&self) -> u128 {
        // 5 ms of reading, at least one 1500-byte segment
        (self.bps as u128 * 5_000_000).max(1500 * 8_000_000_000)
    }
    pub fn refill(&mut self, now: u64) {
        self.credit = (self.credit + self.bps as u128 * (now - self.last) as u128).min(self.cap());
        self.last = now;
    }
    pub fn bytes(&self) -> u64 {
        (self.credit / 8_000_000_000) as u64
    }
    pub fn take(&mut self, n: u64) {
        self.credit -= n as u128 * 8_000_000_000;
    }
    /// When the credit reaches one read's worth.
    pub fn wake(&self) -> u64 {
        let want = self.cap().min(1500 * 8_000_000_000);
        if self.credit >= want {
            return self.last;
        }
        self.last + ((want - self.credit).div_ceil(self.bps.max(1) as u128)) as u64
    }
}

pub(super) struct Conn {
    pub(super) s: TcpStream,
    pub(super) id: ConnId,
    pub(super) end: End,
    pub(super) connected: bool,
    pub(super) out: VecDeque<Piece>,
    pub(super) unlimited: bool,
    pub(super) close_after: bool,
    pub(super) shut: bool,
    pub(super) peer_closed: bool,
    pub(super) told_peer_closed: bool,
    pub(super) deframer: Deframer,
    /// This end is at the flow's `src` (its sends are the flow's data).
    pub(super) at_src: bool,
    pub(super) reader: Option<Reader>,
    /// TCP_INFO at the warmup (connections open then), for differences.
    pub(super) base: Option<TcpInfo>,
    pub(super) prev_ca: u8,
}

/// Writes what the connection holds (and, unlimited, more) until the kernel takes no
/// more: headers and payloads gathered into one write (a message goes out in as few
/// segments as its size allows, as the simulator sends it).
pub(super) fn write_out(c: &mut Conn) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    loop {
        if c.out.is_empty() && c.unlimited && !c.shut {
            let m = Msg {
                len: UNLIMITED_MSG,
                reply: 0,
                born: SimTime(0),
                tag: Tag::Data,
            };
            if c.end == End::Active {
                c.out.push_back(Piece::Bytes(Header(m).encode(), 0));
            }
            c.out.push_back(Piece::Zeros(m.len));
        }
        // gather
        let mut n = 0;
        for p in &c.out {
            if n == buf.len() {
                break;
            }
            match p {
                Piece::Bytes(b, off) => {
                    let k = (HEADER_LEN - off).min(buf.len() - n);
                    buf[n..n + k].copy_from_slice(&b[*off..*off + k]);
                    n += k;
                }
                Piece::Zeros(z) => {
                    let k = (*z).min((buf.len() - n) as u64) as usize;
                    buf[n..n + k].fill(0);
                    n += k;
                }
            }
        }
        if n == 0 {
            return Ok(());
        }
        match (&c.s).write(&buf[..n]) {
            Ok(0) => return Ok(()),
            Ok(mut k) => {
                // consume what the kernel took
                while k > 0 {
                    let front = c.out.front_mut().expect("gathered from it");
                    let done = match front {
                        Piece::Bytes(_, off) => {
                            let t = (HEADER_LEN - *off).min(k);
                            *off += t;
                            k -= t;
                            *off == HEADER_LEN
                        }
                        Piece::Zeros(z) => {
                            let t = (*z).min(k as u64);
                            *z -= t;
                            k -= t as usize;
                            *z == 0
                        }
                    };
                    if done {
                        c.out.pop_front();
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads what the connection may read now (a slow reader: its credit). Returns the
/// application's bytes (payload; messages whole go to `msgs`) and whether the peer
/// closed.
pub(super) fn read_in(c: &mut Conn, now: u64, msgs: &mut Vec<Msg>) -> Result<(u64, bool), String> {
    let mut buf = [0u8; 65_536];
    let mut got = 0;
    loop {
        let mut want = buf.len();
        if let Some(r) = &mut c.reader {
            r.refill(now);
            want = want.min(r.bytes() as usize);
            if want == 0 {
                return Ok((got, false));
            }
        }
        match (&c.s).read(&mut buf[..want]) {
            Ok(0) => return Ok((got, true)),
            Ok(n) => {
                if let Some(r) = &mut c.reader {
                    r.take(n as u64);
                }
                got += match c.end {
                    End::Passive => c.deframer.feed(&buf[..n], msgs)?,
                    End::Active => n as u64,
                };
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((got, false)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_reader_reads_at_its_rate() {
        let mut r = Reader {
            bps: 800_000, // 100 kB/s
            credit: 0,
            last: 0,
        };
        r.refill(10_000_000); // 10 ms: 1000 B, below the cap (1500 B)
        assert_eq!(r.bytes(), 1000);
        assert_eq!(r.wake(), 15_000_000, "1500 B after 15 ms");
        r.refill(1_000_000_000);
        assert_eq!(r.bytes(), 1500, "capped");
        r.take(1500);
        let mut read = 0;
        for t in 1..=1000u64 {
            r.refill(1_000_000_000 + t * 1_000_000);
            let n = r.bytes();
            r.take(n);
            read += n;
        }
        assert_eq!(read, 100_000, "one second at 100 kB/s");
    }
}
