//! A TCP endpoint on the wire: a [`Sender`] or a [`Receiver`] (which think in relative
//! 64-bit sequence numbers and byte windows) behind the conversion to real segments —
//! addresses and ports, 32-bit wrapping sequence numbers offset by the initial sequence
//! numbers, the 16-bit window field scaled per RFC 7323, SACK blocks (RFC 2018).
//!
//! An [`Element`] on port 0 (packets in from and out to its host); also used directly
//! by the gateway's split mode and by applications' connections
//! ([`Endpoint::on_packet`], [`Endpoint::on_timeout`]). A two-way connection is
//! [`Side::Duplex`] ([`super::duplex`]).
//!
//! Window scaling (RFC 7323 §2.2): the shift counts of both SYNs apply only if both
//! SYNs carried the option; a SYN's own window field is never scaled.

use super::duplex::Duplex;
use super::receiver::Receiver;
use super::seg::{SackList, Seg, ACK, SYN};
use super::sender::{Sender, SenderCounters};
use super::seq::SeqSpace;
use super::FlowTrace;
use crate::element::{Element, Emit, PortId};
use crate::net::packet::{Options, Packet, Segment};
use crate::stats::Since;
use crate::time::SimTime;
use crate::unit::Unit;
use crate::wire::SackBlocks;

use super::receiver::ReceiverCounters;

/// Which end of a connection: one-way (bulk flows, the split gateway), or both ways.
pub enum Side {
    Sender(Box<Sender>),
    Receiver(Box<Receiver>),
    Duplex(Box<Duplex>),
}

/// The two ends' identities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addrs {
    pub local: [u8; 4],
    pub local_port: u16,
    pub remote: [u8; 4],
    pub remote_port: u16,
}

pub struct Endpoint {
    pub side: Side,
    pub addrs: Addrs,
    own: SeqSpace,
    peer: Option<SeqSpace>,
    /// Window-scale shift in our SYN, and in the peer's.
    own_ws: Option<u8>,
    peer_ws: Option<u8>,
    /// Highest relative numbers seen: acknowledgements of our data, and the peer's
    /// sequence numbers (references for unwrapping).
    high_ack: u64,
    high_peer: u64,
    /// The sender opens the connection at this time.
    start: Option<SimTime>,
    segs: Vec<Seg>,
    /// Our timestamp clock's offset on the wire (Linux randomises it per connection;
    /// here it is derived from the initial sequence number).
    ts_offset: u32,
}

/// Counters of either end.
#[derive(Debug, Clone)]
pub enum TcpMetrics {
    Sender(SenderCounters),
    Receiver(ReceiverCounters),
}

impl Since for TcpMetrics {
    fn since(&self, base: &Self) -> Self {
        match (self, base) {
            (TcpMetrics::Sender(a), TcpMetrics::Sender(b)) => TcpMetrics::Sender(a.since(b)),
            (TcpMetrics::Receiver(a), TcpMetrics::Receiver(b)) => TcpMetrics::Receiver(a.since(b)),
            _ => unreachable!("an endpoint keeps its side"),
        }
    }
}

impl Endpoint {
    /// An endpoint with initial sequence number `isn`; a sender opens at `start`.
    pub fn new(side: Side, addrs: Addrs, isn: u32, start: Option<SimTime>) -> Self {
        Endpoint {
            side,
            addrs,
            own: SeqSpace::new(isn),
            peer: None,
            own_ws: None,
            peer_ws: None,
            high_ack: 0,
            high_peer: 0,
            start,
            segs: Vec::new(),
            ts_offset: isn.rotate_left(13).wrapping_mul(0x9e37_79b9),
        }
    }

    pub fn sender(&self) -> Option<&Sender> {
        match &self.side {
            Side::Sender(s) => Some(s),
            Side::Duplex(d) => Some(&d.tx),
            Side::Receiver(_) => None,
        }
    }

    pub fn sender_mut(&mut self) -> Option<&mut Sender> {
        match &mut self.side {
            Side::Sender(s) => Some(s),
            Side::Duplex(d) => Some(&mut d.tx),
            Side::Receiver(_) => None,
        }
    }

    pub fn receiver(&self) -> Option<&Receiver> {
        match &self.side {
            Side::Receiver(r) => Some(r),
            Side::Duplex(d) => Some(&d.rx),
            Side::Sender(_) => None,
        }
    }

    pub fn receiver_mut(&mut self) -> Option<&mut Receiver> {
        match &mut self.side {
            Side::Receiver(r) => Some(r),
            Side::Duplex(d) => Some(&mut d.rx),
            Side::Sender(_) => None,
        }
    }

    pub fn duplex(&self) -> Option<&Duplex> {
        match &self.side {
            Side::Duplex(d) => Some(d),
            _ => None,
        }
    }

    /// The sender's time series, taken out (recording stops).
    pub fn take_trace(&mut self) -> Option<FlowTrace> {
        self.sender_mut().and_then(|s| s.tx.trace.take())
    }

    /// The samples recorded so far, taken out (recording goes on), if the flow is
    /// traced and holds at least `min_rows` (0: always, even none).
    pub fn drain_trace(&mut self, min_rows: usize) -> Option<FlowTrace> {
        let t = self.sender_mut()?.tx.trace.as_mut()?;
        (t.rows() >= min_rows).then(|| std::mem::take(t))
    }

    fn scaling(&self) -> bool {
        self.own_ws.is_some() && self.peer_ws.is_some()
    }

    /// Wire segment → relative segment.
    fn decode(&mut self, w: &Segment) -> Seg {
        let syn = w.flags & SYN != 0;
        if syn {
            self.peer = Some(SeqSpace::new(w.seq));
            self.peer_ws = w.opts.wscale;
        }
        let peer = self.peer.unwrap_or(SeqSpace::new(w.seq));
        let seq = peer.to_rel(w.seq, self.high_peer);
        self.high_peer = self.high_peer.max(seq + w.seq_len() as u64);
        let ack = if w.flags & ACK != 0 {
            let a = self.own.to_rel(w.ack, self.high_ack);
            self.high_ack = self.high_ack.max(a);
            a
        } else {
            0
        };
        let shift = if self.scaling() && !syn {
            self.peer_ws.unwrap_or(0)
        } else {
            0
        };
        let sack = w.opts.sack.as_ref().map(|b| {
            let mut l = SackList::default();
            for (slot, &(a, z)) in l.blocks.iter_mut().zip(b.as_slice()) {
                *slot = (
                    self.own.to_rel(a, self.high_ack),
                    self.own.to_rel(z, self.high_ack),
                );
                l.n += 1;
            }
            Box::new(l)
        });
        Seg {
            flags: w.flags,
            seq,
            ack,
            wnd: (w.window as u64) << shift,
            len: w.len,
            syn_opts: syn.then(|| {
                (
                    w.opts.mss.unwrap_or(536),
                    w.opts.wscale.unwrap_or(0),
                    w.opts.sack_permitted,
                )
            }),
            sack,
            ts: w
                .opts
                .timestamps
                .map(|(v, e)| (v, e.wrapping_sub(self.ts_offset))),
            ..Default::default()
        }
    }

    /// Relative segment → wire segment.
    fn encode(&mut self, s: &Seg) -> Segment {
        let syn = s.flags & SYN != 0;
        if let Some((_, ws, _)) = s.syn_opts {
            self.own_ws = Some(ws);
        }
        let peer = self.peer.unwrap_or(SeqSpace::new(0));
        let window = if syn {
            s.wnd.min(65_535)
        } else {
            let shift = if self.scaling() {
                self.own_ws.unwrap_or(0)
            } else {
                0
            };
            (s.wnd >> shift).min(65_535)
        } as u16;
        let mut opts = Options::default();
        if let Some((mss, ws, sack_ok)) = s.syn_opts {
            opts.mss = Some(mss);
            opts.wscale = Some(ws);
            opts.sack_permitted = sack_ok;
        }
        opts.timestamps = s.ts.map(|(v, e)| (v.wrapping_add(self.ts_offset), e));
        if let Some(l) = &s.sack {
            let mut b = SackBlocks::default();
            for (slot, &(a, z)) in b.blocks.iter_mut().zip(l.as_slice()) {
                *slot = (peer.to_wire(a), peer.to_wire(z));
                b.n += 1;
            }
            opts.sack = Some(Box::new(b));
        }
        Segment {
            sport: self.addrs.local_port,
            dport: self.addrs.remote_port,
            seq: self.own.to_wire(s.seq),
            ack: if s.flags & ACK != 0 {
                peer.to_wire(s.ack)
            } else {
                0
            },
            flags: s.flags,
            window,
            opts,
            len: s.len,
        }
    }

    fn flush(&mut self, out: &mut impl PacketSink) {
        let segs = std::mem::take(&mut self.segs);
        for s in &segs {
            let w = self.encode(s);
            let mut p = Packet::new(self.addrs.local, self.addrs.remote, w);
            // the IP header's class (DSCP) and ECN field
            p.class = s.class;
            p.ecn = s.ecn;
            out.put(p);
        }
        self.segs = segs;
        self.segs.clear();
    }

    /// A packet for this endpoint; what it sends goes to `out`.
    pub fn on_packet(&mut self, now: SimTime, p: &Packet, out: &mut impl PacketSink) {
        let mut seg = self.decode(&p.seg);
        seg.class = p.class;
        seg.ecn = p.ecn;
        let mut segs = std::mem::take(&mut self.segs);
        match &mut self.side {
            Side::Sender(s) => s.on_segment(now, &seg, &mut segs),
            Side::Receiver(r) => r.on_segment(now, &seg, &mut segs),
            Side::Duplex(d) => d.on_segment(now, &seg, &mut segs),
        }
        self.segs = segs;
        self.flush(out);
    }

    /// When the endpoint next wants [`Endpoint::on_timeout`].
    pub fn next_timeout(&self) -> Option<SimTime> {
        if self.start.is_some() {
            return self.start;
        }
        match &self.side {
            Side::Sender(s) => s.next_timer(),
            Side::Receiver(r) => r.next_timer(),
            Side::Duplex(d) => d.next_timer(),
        }
    }

    /// Runs what is due: the opening SYN at the start time, else the timers.
    pub fn on_timeout(&mut self, now: SimTime, out: &mut impl PacketSink) {
        let mut segs = std::mem::take(&mut self.segs);
        match (&mut self.side, self.start) {
            (Side::Sender(s), Some(t)) if t <= now => {
                self.start = None;
                s.start(now, &mut segs);
            }
            (Side::Duplex(d), Some(t)) if t <= now => {
                self.start = None;
                d.start(now, &mut segs);
            }
            (_, Some(_)) => {}
            (Side::Sender(s), None) => s.on_timer(now, &mut segs),
            (Side::Receiver(r), None) => r.on_timer(now, &mut segs),
            (Side::Duplex(d), None) => d.on_timer(now, &mut segs),
        }
        self.segs = segs;
        self.flush(out);
    }

    /// Runs an application action on the sender (streaming data in, closing) and sends
    /// what it produces.
    pub fn with_sender(
        &mut self,
        out: &mut Vec<Packet>,
        f: impl FnOnce(&mut Sender, &mut Vec<Seg>),
    ) {
        let mut segs = std::mem::take(&mut self.segs);
        if let Side::Sender(s) = &mut self.side {
            f(s, &mut segs);
        }
        self.segs = segs;
        self.flush(out);
    }

    /// Runs an application action on the receiver (reading data) and sends what it
    /// produces.
    pub fn with_receiver(
        &mut self,
        out: &mut Vec<Packet>,
        f: impl FnOnce(&mut Receiver, &mut Vec<Seg>),
    ) {
        let mut segs = std::mem::take(&mut self.segs);
        if let Side::Receiver(r) = &mut self.side {
            f(r, &mut segs);
        }
        self.segs = segs;
        self.flush(out);
    }

    /// Runs an application action on a two-way connection (writing, closing) and sends
    /// what it produces.
    pub fn with_duplex(
        &mut self,
        out: &mut Vec<Packet>,
        f: impl FnOnce(&mut Duplex, &mut Vec<Seg>),
    ) {
        let mut segs = std::mem::take(&mut self.segs);
        if let Side::Duplex(d) = &mut self.side {
            f(d, &mut segs);
        }
        self.segs = segs;
        self.flush(out);
    }

    /// The counters of the side that sends (a two-way connection's sending half).
    pub fn metrics(&self) -> TcpMetrics {
        match &self.side {
            Side::Sender(s) => TcpMetrics::Sender(s.tx.stats.clone()),
            Side::Duplex(d) => TcpMetrics::Sender(d.tx.tx.stats.clone()),
            Side::Receiver(r) => TcpMetrics::Receiver(r.stats.clone()),
        }
    }
}

/// Where an endpoint's packets go, in the order it sends them: a vector of packets
/// (the gateway, applications), or the driver's out-vector (the endpoint element,
/// without a copy in between).
pub trait PacketSink {
    fn put(&mut self, p: Packet);
}

impl PacketSink for Vec<Packet> {
    #[inline]
    fn put(&mut self, p: Packet) {
        self.push(p);
    }
}

/// The endpoint element: port 0 leads to its host.
pub struct TcpElement {
    pub ep: Endpoint,
}

impl TcpElement {
    pub fn new(ep: Endpoint) -> Self {
        TcpElement { ep }
    }
}

/// An endpoint element's packets, each emitted now on port 0.
struct ToHost<'a>(&'a mut Vec<Emit<Unit>>);

impl PacketSink for ToHost<'_> {
    #[inline]
    fn put(&mut self, p: Packet) {
        self.0.push(Emit::Now {
            port: 0,
            unit: Unit::Packet(p),
        });
    }
}

impl Element<Unit> for TcpElement {
    type Metrics = TcpMetrics;

    fn handle(&mut self, now: SimTime, _port: PortId, unit: Unit, out: &mut Vec<Emit<Unit>>) {
        let Unit::Packet(p) = unit else {
            return; // cells end at ATM adapters, never at an endpoint
        };
        self.ep.on_packet(now, &p, &mut ToHost(out));
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.ep.next_timeout()
    }

    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<Unit>>) {
        self.ep.on_timeout(now, &mut ToHost(out));
    }

    fn metrics(&self, _now: SimTime) -> TcpMetrics {
        self.ep.metrics()
    }
}
