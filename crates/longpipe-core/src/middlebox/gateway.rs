//! The one-sided satellite TCP gateway of seed 003 (Miyake, Hasegawa, Hasegawa, Kato):
//! an ACK-spoofing performance-enhancing proxy (RFC 3135 "spoofing", integrated,
//! transparent) at the satellite uplink.
//!
//! Per connection (learned from the SYN / SYN-ACK, which pass through):
//! 1. each in-order data segment from the server is acknowledged at once in the client's
//!    name (spoofed ACK, window = the gateway's free buffer); the data is kept until the
//!    client's own ACK covers it; the client's ACKs are absorbed;
//! 2. toward the client it sends from its buffer beyond the client's advertised window,
//!    up to a satellite-side window (default: the satellite bandwidth-delay product),
//!    optionally paced at a given rate;
//! 3. on a timeout or the 3rd duplicate ACK it goes back to the first unacknowledged
//!    segment and resends everything from there, without slow start or window reduction;
//!    after a go-back-N the next (client receive buffer ÷ MSS) ACKs are not counted as
//!    duplicates (they answer data the client already held).
//!
//! The FIN travels in sequence through the buffer and is not spoofed: the client's ACK of
//! it, and the client's own FIN, pass to the server. Out-of-order data from the server
//! is dropped with a duplicate spoofed ACK (the server repairs it over the short
//! terrestrial path). A gateway "failure" (`fail_at`) drops all state and traffic from
//! then on: data the server considers acknowledged is lost (RFC 3135 fate sharing).

use crate::net::packet::{Packet, Segment, ACK, FIN, SYN, TCPIP_HEADER};
use crate::scenario::TcpKind;
use crate::tcp::cc::hybla::HyblaConfig;
use crate::tcp::receiver::{Receiver, ReceiverConfig};
use crate::tcp::rtt::RttEstimator;
use crate::tcp::sender::{Sender, SenderConfig};
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::BTreeMap;

/// Split mode (PEPsal-like): the gateway terminates the server's connection and sends
/// the data on its own connection to the client.
#[derive(Debug, Clone)]
pub struct SplitConfig {
    pub tcp: TcpKind,
    pub hybla: HyblaConfig,
    pub sack: bool,
    pub iw_segments: u32,
}

#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// None: ACK spoofing (the paper's gateway); Some: split connections.
    pub split: Option<SplitConfig>,
    /// Gateway buffer per connection, bytes.
    pub buffer: u64,
    /// Satellite-side window, bytes.
    pub window: u64,
    /// Pace transmissions toward the client at this rate (None: send at once).
    pub pace: Option<Rate>,
    /// Duplicate ACKs that trigger go-back-N.
    pub dupthresh: u32,
    pub min_rto: SimDuration,
    pub initial_rto: SimDuration,
    /// The gateway stops working at this time (fate-sharing test).
    pub fail_at: Option<SimTime>,
    /// After a go-back-N, count no duplicate ACKs toward another one until everything
    /// outstanding at that moment is acknowledged (NewReno's `recover` rule). The paper
    /// only suppresses (client buffer ÷ MSS) echoes; without this guard, the duplicate
    /// ACKs of the rest of a satellite window larger than the client's buffer trigger a
    /// new go-back-N every three ACKs.
    pub recover_guard: bool,
}

#[derive(Debug, Clone, Default)]
pub struct GatewayStats {
    pub spoofed_acks: u64,
    pub go_back_n: u64,
    /// Of which started by the satellite-side retransmission timer.
    pub go_back_n_timeout: u64,
    pub segments_resent: u64,
    pub client_overruns: u64,
    pub max_buffer_bytes: u64,
    pub dropped_buffer_full: u64,
    pub lost_on_failure_bytes: u64,
}

#[derive(Debug, Clone)]
struct Held {
    seg: Segment,
    sent_at: Option<SimTime>,
    retx: bool,
}

#[derive(Debug)]
struct Conn {
    /// Template addresses: server -> client direction.
    flow: u32,
    server: u32,
    client: u32,
    mss: u64,
    /// Next in-order byte expected from the server (server's sequence space).
    rcv_nxt: u64,
    /// Segments held, keyed by sequence number, [client_una, rcv_nxt).
    held: BTreeMap<u64, Held>,
    held_bytes: u64,
    /// Client's cumulative ACK and advertised window.
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
    /// Client's next sequence number (for the spoofed ACKs' seq field).
    client_seq: u64,
    fin_seen: bool,
    /// The window last advertised to the server in a spoofed ACK.
    adv_wnd: u64,
}

/// A split connection: a receiver facing the server, a sender facing the client.
struct SplitConn {
    server: u32,
    client: u32,
    rx: Receiver,
    tx: Sender,
    pushed: u64,
    closed: bool,
}

pub struct Gateway {
    cfg: GatewayConfig,
    conns: BTreeMap<u32, Conn>,
    splits: BTreeMap<u32, SplitConn>,
    failed: bool,
    pub stats: GatewayStats,
    warmup: SimTime,
}

impl Gateway {
    pub fn new(cfg: GatewayConfig, warmup: SimTime) -> Self {
        Gateway {
            cfg,
            conns: BTreeMap::new(),
            splits: BTreeMap::new(),
            failed: false,
            stats: GatewayStats::default(),
            warmup,
        }
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        let mut t = self.cfg.fail_at.filter(|_| !self.failed);
        for sc in self.splits.values() {
            for x in [sc.rx.next_timer(), sc.tx.next_timer()]
                .into_iter()
                .flatten()
            {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        }
        for c in self.conns.values() {
            for x in [
                c.rto_at,
                (c.next_send_at > SimTime::ZERO && Self::can_send(&self.cfg, c))
                    .then_some(c.next_send_at),
            ]
            .into_iter()
            .flatten()
            {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        }
        t
    }

    fn can_send(cfg: &GatewayConfig, c: &Conn) -> bool {
        c.held.range(c.snd_nxt..).next().is_some() && c.snd_nxt < c.client_una + cfg.window
    }

    fn packet(flow: u32, src: u32, dst: u32, now: SimTime, seg: Segment) -> Packet {
        Packet {
            uid: 0,
            flow,
            src,
            dst,
            size: TCPIP_HEADER + seg.options_len() + seg.len,
            prio: 0,
            created: now,
            seg,
        }
    }

    /// A packet in transit at the gateway node; what to forward or originate goes to `out`.
    pub fn on_packet(&mut self, now: SimTime, pkt: Packet, out: &mut Vec<Packet>) {
        self.check_failure(now);
        if self.failed {
            return; // a dead box forwards nothing
        }
        if self.cfg.split.is_some() {
            let (flow, n) = (pkt.flow, out.len());
            self.split_packet(now, pkt, out);
            for p in &mut out[n..] {
                if p.flow == u32::MAX {
                    p.flow = flow;
                }
            }
            return;
        }
        let seg = &pkt.seg;
        if seg.flags & SYN != 0 {
            if seg.from_sender {
                // server -> client SYN: learn the connection
                let mss = seg.syn_opts.map(|o| o.0 as u64).unwrap_or(536);
                self.conns.insert(
                    pkt.flow,
                    Conn {
                        flow: pkt.flow,
                        server: pkt.src,
                        client: pkt.dst,
                        mss,
                        rcv_nxt: 1,
                        held: BTreeMap::new(),
                        held_bytes: 0,
                        client_una: 1,
                        client_wnd: mss,
                        snd_nxt: 1,
                        dupacks: 0,
                        suppress: 0,
                        recover: 0,
                        rtt: RttEstimator::new(
                            self.cfg.initial_rto,
                            self.cfg.min_rto,
                            SimDuration::from_secs(60),
                        ),
                        rto_at: None,
                        next_send_at: SimTime::ZERO,
                        client_seq: 1,
                        fin_seen: false,
                        adv_wnd: self.cfg.buffer,
                    },
                );
            } else if let Some(c) = self.conns.get_mut(&pkt.flow) {
                c.client_wnd = seg.wnd;
                c.client_seq = seg.seq + 1;
            }
            out.push(pkt);
            return;
        }
        let Some(c) = self.conns.get_mut(&pkt.flow) else {
            out.push(pkt); // not a connection we learned: pass through
            return;
        };
        if seg.from_sender {
            if seg.len == 0 && seg.flags & FIN == 0 {
                // the server's pure ACKs (handshake, ACK of the client's FIN) pass
                out.push(pkt);
                return;
            }
            Self::from_server(&self.cfg, &mut self.stats, c, now, pkt, out, self.warmup);
        } else {
            Self::from_client(&self.cfg, &mut self.stats, c, now, pkt, out, self.warmup);
        }
        Self::send(&self.cfg, &mut self.stats, c, now, out, self.warmup);
    }

    fn spoof_ack(c: &mut Conn, cfg: &GatewayConfig, now: SimTime) -> Packet {
        let free = cfg.buffer.saturating_sub(c.held_bytes);
        c.adv_wnd = free;
        let seg = Segment {
            from_sender: false,
            flags: ACK,
            seq: c.client_seq,
            ack: c.rcv_nxt,
            wnd: free,
            ..Default::default()
        };
        Self::packet(c.flow, c.client, c.server, now, seg)
    }

    fn from_server(
        cfg: &GatewayConfig,
        st: &mut GatewayStats,
        c: &mut Conn,
        now: SimTime,
        pkt: Packet,
        out: &mut Vec<Packet>,
        warmup: SimTime,
    ) {
        let seg = pkt.seg;
        let data_end = seg.seq + seg.len as u64;
        if seg.seq == c.rcv_nxt && seg.len > 0 {
            if c.held_bytes + seg.len as u64 > cfg.buffer {
                st.dropped_buffer_full += 1;
                out.push(Self::spoof_ack(c, cfg, now));
                return;
            }
            c.rcv_nxt = data_end;
            c.held_bytes += seg.len as u64;
            st.max_buffer_bytes = st.max_buffer_bytes.max(c.held_bytes);
            if seg.flags & FIN != 0 {
                c.fin_seen = true;
            }
            c.held.insert(
                seg.seq,
                Held {
                    seg,
                    sent_at: None,
                    retx: false,
                },
            );
            if now >= warmup {
                st.spoofed_acks += 1;
            }
            out.push(Self::spoof_ack(c, cfg, now));
        } else if seg.len == 0 && seg.flags & FIN != 0 && seg.seq == c.rcv_nxt {
            // a bare FIN: forward in sequence (kept so that it is resent if lost)
            c.fin_seen = true;
            c.held.insert(
                seg.seq,
                Held {
                    seg,
                    sent_at: None,
                    retx: false,
                },
            );
        } else {
            // out of order or duplicate: a duplicate spoofed ACK, data not kept
            out.push(Self::spoof_ack(c, cfg, now));
        }
    }

    fn from_client(
        cfg: &GatewayConfig,
        st: &mut GatewayStats,
        c: &mut Conn,
        now: SimTime,
        pkt: Packet,
        out: &mut Vec<Packet>,
        warmup: SimTime,
    ) {
        let seg = &pkt.seg;
        let ack = seg.ack;
        if seg.flags & FIN != 0 {
            // The client's FIN goes to the server; its ACK field still releases data.
            if ack > c.client_una {
                Self::release(c, now, ack);
            }
            out.push(pkt);
            return;
        }
        c.client_wnd = seg.wnd;
        if ack > c.client_una {
            Self::release(c, now, ack);
            c.suppress = c.suppress.saturating_sub(1);
            // Back-pressure release: a window update to the server once at least two
            // segments' worth of buffer has freed since the last advertisement.
            let free = cfg.buffer.saturating_sub(c.held_bytes);
            if free >= c.adv_wnd + 2 * c.mss {
                out.push(Self::spoof_ack(c, cfg, now));
            }
            if c.fin_seen && c.held.is_empty() && ack > c.rcv_nxt {
                out.push(pkt); // the client's ACK of the FIN: the server may close
            }
            return;
        }
        if ack == c.client_una && c.client_una < c.snd_nxt {
            if c.suppress > 0 {
                c.suppress -= 1; // an echo of data resent by go-back-N
                return;
            }
            if cfg.recover_guard && c.client_una < c.recover {
                return; // echoes of the window that the last go-back-N already resends
            }
            c.dupacks += 1;
            if c.dupacks == cfg.dupthresh {
                Self::go_back_n(st, c, now, warmup);
            }
        }
    }

    /// The client acknowledged up to `ack`: free the buffer, take an RTT sample from the
    /// newest released segment unless any released one was resent (Karn), restart the timer.
    fn release(c: &mut Conn, now: SimTime, ack: u64) {
        let mut newest = None;
        let mut any_retx = false;
        while let Some((&s, h)) = c.held.iter().next() {
            if s + h.seg.seq_len() > ack {
                break;
            }
            any_retx |= h.retx;
            newest = h.sent_at;
            c.held_bytes -= h.seg.len as u64;
            c.held.remove(&s);
        }
        if let (Some(t), false) = (newest, any_retx) {
            c.rtt.sample(now - t);
        }
        c.client_una = ack;
        c.snd_nxt = c.snd_nxt.max(ack);
        c.dupacks = 0;
        c.rto_at = if c.client_una < c.snd_nxt {
            Some(now + c.rtt.rto())
        } else {
            None
        };
    }

    fn go_back_n(st: &mut GatewayStats, c: &mut Conn, now: SimTime, warmup: SimTime) {
        if now >= warmup {
            st.go_back_n += 1;
        }
        c.recover = c.recover.max(c.snd_nxt);
        c.snd_nxt = c.client_una;
        c.dupacks = 0;
        c.suppress = c.client_wnd / c.mss.max(1);
        c.next_send_at = now;
    }

    fn send(
        cfg: &GatewayConfig,
        st: &mut GatewayStats,
        c: &mut Conn,
        now: SimTime,
        out: &mut Vec<Packet>,
        warmup: SimTime,
    ) {
        while Self::can_send(cfg, c) && c.next_send_at <= now {
            let (&seq, h) = c.held.range_mut(c.snd_nxt..).next().expect("can_send");
            debug_assert_eq!(seq, c.snd_nxt);
            let resend = h.sent_at.is_some();
            h.retx |= resend;
            h.sent_at = Some(now);
            let mut seg = h.seg.clone();
            seg.ack = c.client_seq;
            c.snd_nxt = seq + seg.seq_len();
            if now >= warmup {
                if resend {
                    st.segments_resent += 1;
                }
                if c.snd_nxt > c.client_una + c.client_wnd {
                    st.client_overruns += 1;
                }
            }
            let size = seg.len;
            out.push(Self::packet(c.flow, c.server, c.client, now, seg));
            if c.rto_at.is_none() {
                c.rto_at = Some(now + c.rtt.rto());
            }
            if let Some(r) = cfg.pace {
                c.next_send_at = now + r.tx_time((size + TCPIP_HEADER) as u64);
            }
        }
    }

    fn split_packet(&mut self, now: SimTime, pkt: Packet, out: &mut Vec<Packet>) {
        let split = self.cfg.split.clone().expect("split mode");
        let flow = pkt.flow;
        if pkt.seg.flags & SYN != 0 && pkt.seg.from_sender && !self.splits.contains_key(&flow) {
            let mss = pkt.seg.syn_opts.map(|o| o.0 as u32).unwrap_or(536);
            let rx = Receiver::new(ReceiverConfig {
                mss,
                buffer: self.cfg.buffer,
                delayed_ack: true,
                delayed_ack_timeout: SimDuration::from_millis(200),
                sack: pkt.seg.syn_opts.is_some_and(|o| o.2),
                app_bytes: None,
                warmup: self.warmup,
            });
            let (cc, recovery) = crate::tcp::controller(split.tcp, split.hybla);
            let tx = Sender::new_streaming(
                SenderConfig {
                    mss,
                    iw_bytes: split.iw_segments as u64 * mss as u64,
                    initial_rto: self.cfg.initial_rto,
                    min_rto: self.cfg.min_rto,
                    max_rto: SimDuration::from_secs(60),
                    app_bytes: None,
                    recovery,
                    sack_permitted: split.sack,
                    warmup: self.warmup,
                    initial_ssthresh: None,
                    partial_ack_timer_every: false,
                    limited_transmit: false,
                },
                cc,
            );
            let mut c = SplitConn {
                server: pkt.src,
                client: pkt.dst,
                rx,
                tx,
                pushed: 0,
                closed: false,
            };
            let mut segs = Vec::new();
            c.tx.start(now, &mut segs);
            Self::emit_split(&c, now, segs, true, out);
            self.splits.insert(flow, c);
        }
        let Some(c) = self.splits.get_mut(&flow) else {
            out.push(pkt);
            return;
        };
        let mut segs = Vec::new();
        if pkt.seg.from_sender {
            // the server's connection ends here
            c.rx.on_segment(now, &pkt.seg, &mut segs);
            Self::emit_split(c, now, std::mem::take(&mut segs), false, out);
            let fresh = c.rx.delivered - c.pushed;
            if fresh > 0 {
                c.pushed += fresh;
                c.tx.push_data(now, fresh, &mut segs);
            }
            if c.rx.fin_received() && !c.closed {
                c.closed = true;
                c.tx.close(now, &mut segs);
            }
            Self::emit_split(c, now, segs, true, out);
        } else {
            // the client answers the gateway's own connection
            c.tx.on_segment(now, &pkt.seg, &mut segs);
            Self::emit_split(c, now, std::mem::take(&mut segs), true, out);
        }
        Self::split_window(c, now, out, &mut self.stats);
    }

    /// The server-side window: the buffer minus the data not yet acknowledged by the client.
    fn split_window(c: &mut SplitConn, now: SimTime, out: &mut Vec<Packet>, st: &mut GatewayStats) {
        let acked = c.tx.snd_una.saturating_sub(1).min(c.pushed);
        let unread = c.pushed - acked;
        st.max_buffer_bytes = st.max_buffer_bytes.max(unread);
        let mut segs = Vec::new();
        c.rx.set_unread(unread, &mut segs);
        Self::emit_split(c, now, segs, false, out);
    }

    fn emit_split(
        c: &SplitConn,
        now: SimTime,
        segs: Vec<Segment>,
        to_client: bool,
        out: &mut Vec<Packet>,
    ) {
        for seg in segs {
            let (src, dst) = if to_client {
                (c.server, c.client)
            } else {
                (c.client, c.server)
            };
            // the flow id is filled in by the caller
            out.push(Self::packet(u32::MAX, src, dst, now, seg));
        }
    }

    fn check_failure(&mut self, now: SimTime) {
        if !self.failed && self.cfg.fail_at.is_some_and(|f| now >= f) {
            self.failed = true;
            for c in self.conns.values() {
                self.stats.lost_on_failure_bytes += c
                    .held
                    .range(..c.rcv_nxt)
                    .map(|(_, h)| h.seg.len as u64)
                    .sum::<u64>();
            }
            self.conns.clear();
            for c in self.splits.values() {
                let acked = c.tx.snd_una.saturating_sub(1).min(c.pushed);
                self.stats.lost_on_failure_bytes += c.pushed - acked;
            }
            self.splits.clear();
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.check_failure(now);
        if self.failed {
            return;
        }
        let warmup = self.warmup;
        for (&flow, c) in self.splits.iter_mut() {
            let mut segs = Vec::new();
            c.rx.on_timer(now, &mut segs);
            let n = out.len();
            Self::emit_split(c, now, std::mem::take(&mut segs), false, out);
            c.tx.on_timer(now, &mut segs);
            Self::emit_split(c, now, segs, true, out);
            for p in &mut out[n..] {
                p.flow = flow;
            }
        }
        for c in self.conns.values_mut() {
            if c.rto_at.is_some_and(|t| t <= now) {
                // No backoff: the satellite side is the gateway's own link, and the paper
                // recovers "without slow start or window reduction".
                c.rto_at = None;
                if now >= warmup {
                    self.stats.go_back_n_timeout += 1;
                }
                Self::go_back_n(&mut self.stats, c, now, warmup);
            }
            Self::send(&self.cfg, &mut self.stats, c, now, out, warmup);
        }
    }

    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Bytes currently held for a connection (tests).
    pub fn held_bytes(&self, flow: u32) -> Option<u64> {
        self.conns.get(&flow).map(|c| c.held_bytes)
    }
}
