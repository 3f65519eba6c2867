//! The paper's gateway (seed 003, §3): per connection,
//! 1. each in-order data segment from the server is acknowledged at once in the
//!    client's name (spoofed ACK, window = the gateway's free buffer); the data is kept
//!    until the client's own ACK covers it; the client's ACKs are absorbed;
//! 2. toward the client it sends from its buffer beyond the client's advertised window,
//!    up to a satellite-side window, optionally paced at a given rate;
//! 3. on a timeout or the `dupthresh`-th duplicate ACK it goes back to the first
//!    unacknowledged segment and resends everything from there, without slow start or
//!    window reduction; after a go-back-N the next (client receive buffer ÷ MSS) ACKs
//!    are not counted as duplicates (they answer data the client already held).
//!
//! The FIN travels in sequence through the buffer and is not spoofed: the client's ACK
//! of it, and the client's own FIN, pass to the server. Out-of-order data from the
//! server is dropped with a duplicate spoofed ACK (the server repairs it over the short
//! terrestrial path).
//!
//! Sequence numbers: kept relative to each side's ISN (learned from its SYN) in 64 bits
//! ([`SeqSpace`]). Windows (RFC 7323): the gateway speaks for the client toward the
//! server, so it rewrites the window-scale option of the client's SYN to a shift large
//! enough for its own buffer (at least the client's), and converts the window field of
//! the client segments it passes to the server to that scale; the client's own window
//! fields are read with the client's shift. Without scaling (either SYN lacks the
//! option) all windows are at most 65535 B.

use super::{ConnKey, Dir, GatewayConfig, GatewayCounters};
use crate::net::packet::{Packet, Segment, ACK, FIN, SYN, TCPIP_HEADER};
use crate::tcp::receiver::window_shift;
use crate::tcp::rtt::RttEstimator;
use crate::tcp::seq::SeqSpace;
use crate::time::{SimDuration, SimTime};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
struct Held {
    pkt: Packet,
    /// Relative sequence space the segment occupies (payload + FIN).
    seq_len: u64,
    sent_at: Option<SimTime>,
    retx: bool,
}

/// One side's identity as learned from its SYN.
#[derive(Debug, Clone, Copy, Default)]
struct Side {
    space: Option<SeqSpace>,
    wscale: Option<u8>,
}

#[derive(Debug)]
pub struct Conn {
    key: ConnKey,
    server: Side,
    client: Side,
    /// The window-scale shift the server applies to the client's (the gateway's)
    /// windows: the client's SYN option as rewritten.
    gw_shift: u8,
    /// The data sender's segment size (its SYN's MSS option, else 536).
    mss: u64,
    /// Next in-order byte expected from the server (server's sequence space).
    rcv_nxt: u64,
    /// Segments held, keyed by relative sequence number, [client_una, rcv_nxt).
    held: BTreeMap<u64, Held>,
    held_bytes: u64,
    /// Client's cumulative ACK and advertised window (bytes).
    client_una: u64,
    client_wnd: u64,
    /// Next byte to send toward the client.
    snd_nxt: u64,
    dupacks: u32,
    suppress: u64,
    /// End of what had been sent at the last go-back-N.
    recover: u64,
    rtt: RttEstimator,
    rto_at: Option<SimTime>,
    next_send_at: SimTime,
    /// Client's next sequence number (relative; for the spoofed ACKs' seq field).
    client_seq: u64,
    fin_seen: bool,
    /// The client's FIN passed, and the client acknowledged the server's FIN.
    client_fin: bool,
    fin_acked: bool,
    /// The window last advertised to the server in a spoofed ACK.
    adv_wnd: u64,
    last_seen: SimTime,
}

impl Conn {
    pub fn new(cfg: &GatewayConfig, key: ConnKey, now: SimTime) -> Self {
        Conn {
            key,
            server: Side::default(),
            client: Side::default(),
            gw_shift: 0,
            mss: 536,
            rcv_nxt: 1,
            held: BTreeMap::new(),
            held_bytes: 0,
            client_una: 1,
            client_wnd: 536,
            snd_nxt: 1,
            dupacks: 0,
            suppress: 0,
            recover: 0,
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, SimDuration::from_secs(60)),
            rto_at: None,
            next_send_at: SimTime::ZERO,
            client_seq: 1,
            fin_seen: false,
            client_fin: false,
            fin_acked: false,
            adv_wnd: cfg.buffer,
            last_seen: now,
        }
    }

    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Bytes the server considers delivered that only the gateway holds.
    pub fn unsent_acked_bytes(&self) -> u64 {
        self.held
            .range(..self.rcv_nxt)
            .map(|(_, h)| h.pkt.seg.len as u64)
            .sum()
    }

    /// Both FINs have passed and everything is delivered: the gateway can forget it.
    pub fn closed(&self) -> bool {
        self.client_fin && self.fin_acked && self.held.is_empty()
    }

    pub fn idle(&self, now: SimTime, timeout: SimDuration) -> bool {
        self.held.is_empty() && self.last_seen + timeout <= now
    }

    fn scaling(&self) -> bool {
        self.server.wscale.is_some() && self.client.wscale.is_some()
    }

    fn client_shift(&self) -> u8 {
        if self.scaling() {
            self.client.wscale.unwrap_or(0)
        } else {
            0
        }
    }

    /// The shift the server applies to windows in the client's name.
    fn server_view_shift(&self) -> u8 {
        if self.scaling() {
            self.gw_shift
        } else {
            0
        }
    }

    /// A client segment passing to the server: its window in the server's view.
    fn rescale(&self, mut pkt: Packet) -> Packet {
        let bytes = (pkt.seg.window as u64) << self.client_shift();
        pkt.seg.window = (bytes >> self.server_view_shift()).min(65_535) as u16;
        pkt
    }

    fn can_send(&self, window: u64) -> bool {
        self.held.range(self.snd_nxt..).next().is_some() && self.snd_nxt < self.client_una + window
    }

    pub fn next_timer(&self, cfg: &GatewayConfig, window: u64) -> Option<SimTime> {
        let mut t = self.rto_at;
        if self.next_send_at > SimTime::ZERO && self.can_send(window) {
            t = Some(t.map_or(self.next_send_at, |x| x.min(self.next_send_at)));
        }
        if self.held.is_empty() {
            let idle = self.last_seen + cfg.idle_timeout;
            t = Some(t.map_or(idle, |x| x.min(idle)));
        }
        t
    }

    /// An ACK in the client's name, to the server.
    fn spoof_ack(&mut self, cfg: &GatewayConfig, now: SimTime) -> Packet {
        let free = cfg.buffer.saturating_sub(self.held_bytes);
        self.adv_wnd = free;
        let (server, server_port, client, client_port) = self.key;
        let seg = Segment {
            sport: client_port,
            dport: server_port,
            seq: self.client.space.map_or(0, |s| s.to_wire(self.client_seq)),
            ack: self.server.space.map_or(0, |s| s.to_wire(self.rcv_nxt)),
            flags: ACK,
            window: (free >> self.server_view_shift()).min(65_535) as u16,
            ..Default::default()
        };
        Packet::new(now, client, server, seg)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn on_packet(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        dir: Dir,
        mut pkt: Packet,
        out: &mut Vec<Packet>,
    ) {
        self.last_seen = now;
        if pkt.seg.flags & SYN != 0 {
            let side = Side {
                space: Some(SeqSpace::new(pkt.seg.seq)),
                wscale: pkt.seg.opts.wscale,
            };
            let seg = &mut pkt.seg;
            match dir {
                Dir::ToClient => {
                    self.server = side;
                    self.mss = seg.opts.mss.map_or(536, |m| m as u64);
                    self.client_wnd = self.mss;
                }
                Dir::ToServer => {
                    self.client = side;
                    self.client_wnd = seg.window as u64; // never scaled in a SYN
                    self.client_seq = 1;
                    if let Some(ws) = seg.opts.wscale {
                        // speak for the client with a scale that fits the buffer
                        self.gw_shift = ws.max(window_shift(cfg.buffer));
                        seg.opts.wscale = Some(self.gw_shift);
                    }
                }
            }
            out.push(pkt);
            return;
        }
        let seg = &pkt.seg;
        match dir {
            Dir::ToClient => {
                if seg.len == 0 && seg.flags & FIN == 0 {
                    // the server's pure ACKs (handshake, ACK of the client's FIN) pass
                    out.push(pkt);
                    return;
                }
                self.on_server_segment(cfg, st, now, pkt, out);
            }
            Dir::ToServer => self.on_client_segment(cfg, st, now, pkt, out),
        }
        self.send(cfg, window, st, now, out);
    }

    fn on_server_segment(
        &mut self,
        cfg: &GatewayConfig,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: Packet,
        out: &mut Vec<Packet>,
    ) {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return;
        };
        let seg = &pkt.seg;
        let seq = space.to_rel(seg.seq, self.rcv_nxt);
        let fin = seg.flags & FIN != 0;
        let seq_len = seg.len as u64 + fin as u64;
        if seq == self.rcv_nxt && seg.len > 0 {
            if self.held_bytes + seg.len as u64 > cfg.buffer {
                st.dropped_buffer_full += 1;
                out.push(self.spoof_ack(cfg, now));
                return;
            }
            self.rcv_nxt = seq + seg.len as u64;
            self.held_bytes += seg.len as u64;
            st.max_buffer_bytes.update(self.held_bytes);
            if fin {
                self.fin_seen = true;
            }
            st.spoofed_acks += 1;
            let ack = self.spoof_ack(cfg, now);
            self.held.insert(
                seq,
                Held {
                    pkt,
                    seq_len,
                    sent_at: None,
                    retx: false,
                },
            );
            out.push(ack);
        } else if seg.len == 0 && fin && seq == self.rcv_nxt {
            // a bare FIN: forward in sequence (kept so that it is resent if lost)
            self.fin_seen = true;
            self.held.insert(
                seq,
                Held {
                    pkt,
                    seq_len,
                    sent_at: None,
                    retx: false,
                },
            );
        } else {
            // out of order or duplicate: a duplicate spoofed ACK, data not kept
            out.push(self.spoof_ack(cfg, now));
        }
    }

    fn on_client_segment(
        &mut self,
        cfg: &GatewayConfig,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: Packet,
        out: &mut Vec<Packet>,
    ) {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return;
        };
        let seg = &pkt.seg;
        let ack = space.to_rel(seg.ack, self.client_una);
        if seg.flags & FIN != 0 {
            // The client's FIN goes to the server; its ACK field still releases data.
            self.client_fin = true;
            if ack > self.client_una {
                self.release(now, ack);
            }
            if self.fin_seen && self.held.is_empty() && ack > self.rcv_nxt {
                self.fin_acked = true;
            }
            out.push(self.rescale(pkt));
            return;
        }
        self.client_wnd = (seg.window as u64) << self.client_shift();
        if ack > self.client_una {
            self.release(now, ack);
            self.suppress = self.suppress.saturating_sub(1);
            // Back-pressure release: a window update to the server once at least two
            // segments' worth of buffer has freed since the last advertisement.
            let free = cfg.buffer.saturating_sub(self.held_bytes);
            if free >= self.adv_wnd + 2 * self.mss {
                out.push(self.spoof_ack(cfg, now));
            }
            if self.fin_seen && self.held.is_empty() && ack > self.rcv_nxt {
                self.fin_acked = true;
                out.push(self.rescale(pkt)); // the client's ACK of the FIN: the server may close
            }
            return;
        }
        if ack == self.client_una && self.client_una < self.snd_nxt {
            if self.suppress > 0 {
                self.suppress -= 1; // an echo of data resent by go-back-N
                return;
            }
            if cfg.recover_guard && self.client_una < self.recover {
                return; // echoes of the window that the last go-back-N already resends
            }
            self.dupacks += 1;
            if self.dupacks == cfg.dupthresh {
                self.go_back_n(st, now);
            }
        }
    }

    /// The client acknowledged up to `ack`: free the buffer, take an RTT sample from the
    /// newest released segment unless any released one was resent (Karn), restart the
    /// timer.
    fn release(&mut self, now: SimTime, ack: u64) {
        let mut newest = None;
        let mut any_retx = false;
        while let Some((&s, h)) = self.held.iter().next() {
            if s + h.seq_len > ack {
                break;
            }
            any_retx |= h.retx;
            newest = h.sent_at;
            self.held_bytes -= h.pkt.seg.len as u64;
            self.held.remove(&s);
        }
        if let (Some(t), false) = (newest, any_retx) {
            self.rtt.sample(now - t);
        }
        self.client_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;
        self.rto_at = if self.client_una < self.snd_nxt {
            Some(now + self.rtt.rto())
        } else {
            None
        };
    }

    fn go_back_n(&mut self, st: &mut GatewayCounters, now: SimTime) {
        st.go_back_n += 1;
        self.recover = self.recover.max(self.snd_nxt);
        self.snd_nxt = self.client_una;
        self.dupacks = 0;
        self.suppress = self.client_wnd / self.mss.max(1);
        self.next_send_at = now;
    }

    fn send(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<Packet>,
    ) {
        let client_seq = self.client.space.map_or(0, |s| s.to_wire(self.client_seq));
        while self.can_send(window) && self.next_send_at <= now {
            let (&seq, h) = self
                .held
                .range_mut(self.snd_nxt..)
                .next()
                .expect("can_send");
            debug_assert_eq!(seq, self.snd_nxt);
            let resend = h.sent_at.is_some();
            h.retx |= resend;
            h.sent_at = Some(now);
            let mut p = h.pkt.clone();
            p.seg.ack = client_seq;
            p.created = now;
            p.uid = crate::net::packet::UNSTAMPED;
            self.snd_nxt = seq + h.seq_len;
            if resend {
                st.segments_resent += 1;
            }
            if self.snd_nxt > self.client_una + self.client_wnd {
                st.client_overruns += 1;
            }
            let size = p.seg.len;
            out.push(p);
            if self.rto_at.is_none() {
                self.rto_at = Some(now + self.rtt.rto());
            }
            if let Some(r) = cfg.pace {
                self.next_send_at = now + r.tx_time((size + TCPIP_HEADER) as u64);
            }
        }
    }

    pub fn on_timer(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<Packet>,
    ) {
        if self.rto_at.is_some_and(|t| t <= now) {
            // No backoff: the satellite side is the gateway's own link, and the paper
            // recovers "without slow start or window reduction".
            self.rto_at = None;
            st.go_back_n_timeout += 1;
            self.go_back_n(st, now);
        }
        self.send(cfg, window, st, now, out);
    }
}
