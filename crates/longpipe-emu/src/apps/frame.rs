//! The framing of application messages on a real socket: a 32-byte header (magic
//! `LPM1`, tag, length, reply size, birth time; integers big-endian) before each
//! message's payload ([`Header`]), and the reader that gives the passive side each
//! message once its last payload byte is read ([`Deframer`]), as the simulator's frame
//! queue does. Payload bytes are counted apart from header bytes.

use longpipe_core::app::io::{Msg, Tag};
use longpipe_core::time::SimTime;

/// Bytes of a message header on the wire.
pub const HEADER_LEN: usize = 32;
const MAGIC: &[u8; 4] = b"LPM1";

/// A message header: what the simulator's frame queue tells the passive side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header(pub Msg);

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let m = self.0;
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(MAGIC);
        b[4] = match m.tag {
            Tag::Request => 0,
            Tag::Transfer => 1,
            Tag::Data => 2,
        };
        b[8..16].copy_from_slice(&m.len.to_be_bytes());
        b[16..24].copy_from_slice(&m.reply.to_be_bytes());
        b[24..32].copy_from_slice(&m.born.0.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, String> {
        if &b[..4] != MAGIC {
            return Err(format!("bad message header magic {:?}", &b[..4]));
        }
        let tag = match b[4] {
            0 => Tag::Request,
            1 => Tag::Transfer,
            2 => Tag::Data,
            t => return Err(format!("bad message tag {t}")),
        };
        let u = |o: usize| u64::from_be_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        Ok(Header(Msg {
            len: u(8),
            reply: u(16),
            born: SimTime(u(24)),
            tag,
        }))
    }
}

/// Reads framed messages out of a byte stream.
#[derive(Debug, Default)]
pub struct Deframer {
    head: Vec<u8>,
    /// The message being read and its payload bytes still to come.
    cur: Option<(Msg, u64)>,
}

impl Deframer {
    /// Takes `n` bytes of `buf`; whole messages go to `done`. Payload bytes read.
    pub fn feed(&mut self, mut buf: &[u8], done: &mut Vec<Msg>) -> Result<u64, String> {
        let mut payload = 0;
        while !buf.is_empty() {
            match &mut self.cur {
                Some((m, left)) => {
                    let k = (*left).min(buf.len() as u64);
                    *left -= k;
                    payload += k;
                    buf = &buf[k as usize..];
                    if *left == 0 {
                        done.push(*m);
                        self.cur = None;
                    }
                }
                None => {
                    let k = (HEADER_LEN - self.head.len()).min(buf.len());
                    self.head.extend_from_slice(&buf[..k]);
                    buf = &buf[k..];
                    if self.head.len() == HEADER_LEN {
                        let h = Header::decode(
                            self.head.as_slice().try_into().expect("header length"),
                        )?;
                        self.head.clear();
                        if h.0.len == 0 {
                            done.push(h.0);
                        } else {
                            self.cur = Some((h.0, h.0.len));
                        }
                    }
                }
            }
        }
        Ok(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_messages_come_whole() {
        let m = |len, reply, tag| Msg {
            len,
            reply,
            born: SimTime(123_456_789),
            tag,
        };
        let msgs = [
            m(328, 50_000, Tag::Request),
            m(0, 7, Tag::Request),
            m(100_000, 0, Tag::Transfer),
            m(5, 0, Tag::Data),
        ];
        let mut wire = Vec::new();
        for x in msgs {
            let h = Header(x).encode();
            assert_eq!(Header::decode(&h).unwrap(), Header(x));
            wire.extend_from_slice(&h);
            wire.extend(std::iter::repeat_n(0u8, x.len as usize));
        }
        // fed in odd pieces: the same messages, the payload bytes counted, no header
        for step in [1, 7, 31, 32, 33, 4096, wire.len()] {
            let mut d = Deframer::default();
            let (mut got, mut payload) = (Vec::new(), 0);
            for piece in wire.chunks(step) {
                payload += d.feed(piece, &mut got).unwrap();
            }
            assert_eq!(got, msgs, "step {step}");
            assert_eq!(payload, 328 + 100_000 + 5);
        }
        let mut bad = Header(msgs[0]).encode();
        bad[0] = b'X';
        assert!(Deframer::default().feed(&bad, &mut Vec::new()).is_err());
    }
}
