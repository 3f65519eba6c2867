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
//! server (a loss or reordering on the terrestrial path) is kept, as a receiver keeps
//! it, if it lies within the window already promised to the server and the buffer has
//! room; it is answered with a duplicate spoofed ACK — with SACK blocks when both SYNs
//! offered SACK (RFC 2018: the block of the segment just received first) — and joins
//! the in-order data, acknowledged then, when the hole is filled. (Before 2026-11-26 it
//! was dropped, and a server without SACK lost its whole window behind each hole.)
//!
//! Shared mode (`shared = true`, the default; docs/notes/gateway-sharing.md): the
//! gateway, not the connection, decides when to send ([`super::Gateway`] paces one
//! satellite budget over all connections); a connection only says whether it has
//! something to send and sends one segment when asked ([`Conn::send_one`]). Its
//! in-flight bytes (`pipe`: sent, not acknowledged, not SACKed, not known lost) count
//! against its fair share. A loss is inferred from the client's ACKs: the
//! `dupthresh`-th duplicate ACK, a partial ACK during recovery, SACK blocks, or a
//! resend that should have been acknowledged by now (one smoothed RTT and a quarter);
//! only the segments shown lost are resent — the hole, the SACK holes below the
//! highest SACKed byte, and what lies beyond the client's window (a receiver drops
//! out-of-order data beyond its window). The RTO still resends everything in flight.
//! Spoofed windows are limited by the gateway's free memory: a connection's promise
//! (held data + the window it advertised) never grows past its fair share of memory
//! or what is free.
//!
//! Timestamps (RFC 7323): when both SYNs carry the option, every segment must carry it
//! (§3.2), spoofed ACKs included: TSval is the newest the client has sent (never older
//! than what the server has seen from it, so PAWS at the server accepts it), TSecr the
//! TSval of the last in-order segment from the server (§4.3: the segment that advanced
//! the acknowledgement; a duplicate ACK for out-of-order data echoes it too). The
//! server then measures the RTT to the gateway, as it does from the ACKs' times.
//!
//! Sequence numbers: kept relative to each side's ISN (learned from its SYN) in 64 bits
//! ([`SeqSpace`]). Windows (RFC 7323): the gateway speaks for the client toward the
//! server, so it rewrites the window-scale option of the client's SYN to a shift large
//! enough for its own buffer (at least the client's), and converts the window field of
//! the client segments it passes to the server to that scale; the client's own window
//! fields are read with the client's shift. Without scaling (either SYN lacks the
//! option) all windows are at most 65535 B.
//!
//! Why one file of ~1100 lines: one connection's spoofing state machine (server side,
//! satellite side, go-back-N, FIN and RST), whose halves read each other's state on
//! every segment; its tests are in the gateway's `tests.rs`.

use super::{ConnKey, Dir, GatewayConfig, GatewayCounters, GwPacket};
use crate::net::packet::{Packet, Segment, ACK, FIN, SYN, TCPIP_HEADER};
use crate::tcp::receiver::window_shift;
use crate::tcp::rtt::RttEstimator;
use crate::tcp::seq::SeqSpace;
use crate::time::{SimDuration, SimTime};
use crate::wire::SackBlocks;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone)]
struct Held<P> {
    pkt: P,
    /// Relative sequence space the segment occupies (payload + FIN).
    seq_len: u64,
    sent_at: Option<SimTime>,
    retx: bool,
    /// Shared mode: counted in `pipe` (sent, not SACKed, not known lost).
    in_pipe: bool,
    /// Shared mode: the client reported holding it (SACK).
    sacked: bool,
}

impl<P> Held<P> {
    fn new(pkt: P, seq_len: u64) -> Self {
        Held {
            pkt,
            seq_len,
            sent_at: None,
            retx: false,
            in_pipe: false,
            sacked: false,
        }
    }
}

/// What the gateway's memory allows a connection's spoofed window (shared mode).
#[derive(Debug, Clone, Copy)]
pub struct MemShare {
    /// Bytes of memory not reserved by any connection.
    pub free: u64,
    /// One connection's fair share of the memory.
    pub fair: u64,
}

impl MemShare {
    /// No limit beyond the per-connection buffer (the paper's gateway).
    pub const UNLIMITED: MemShare = MemShare {
        free: u64::MAX,
        fair: u64::MAX,
    };
}

/// One side's identity as learned from its SYN.
#[derive(Debug, Clone, Copy, Default)]
struct Side {
    space: Option<SeqSpace>,
    wscale: Option<u8>,
    /// Its SYN carried the timestamps option.
    ts: bool,
    /// Its SYN carried SACK-permitted.
    sack: bool,
}

/// RFC 7323 timestamps for the spoofed ACKs.
#[derive(Debug, Clone, Copy, Default)]
struct Stamps {
    /// The newest TSval the client sent (serial-number order).
    client: Option<u32>,
    /// TSval of the last in-order segment from the server (`TS.Recent`).
    recent: Option<u32>,
    /// The newest TSval among the segments held for the client, in sequence order:
    /// the data goes on toward the client with TSvals that never decrease along the
    /// sequence (see [`Conn::accept_in_order`]).
    forward: Option<u32>,
}

/// `a` is newer than `b` (RFC 7323 §5.2: `a − b` positive as a 32-bit signed number).
fn newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

impl Stamps {
    /// Records a TSval from the client; the newest is kept (RFC 7323 §5.2 ordering:
    /// `a` is newer than `b` if `a − b` is positive as a 32-bit signed number).
    fn client_sent(&mut self, tsval: u32) {
        if self.client.is_none_or(|c| newer(tsval, c)) {
            self.client = Some(tsval);
        }
    }
}

#[derive(Debug)]
pub struct Conn<P = Packet> {
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
    held: BTreeMap<u64, Held<P>>,
    held_bytes: u64,
    /// Server segments received beyond a hole, keyed by relative sequence number, all
    /// above `rcv_nxt` and within the promised window: (packet, sequence space).
    ooo: BTreeMap<u64, (P, u64)>,
    ooo_bytes: u64,
    /// The out-of-order segment received last (its SACK block goes first).
    last_ooo: Option<u64>,
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
    /// RFC 7323 timestamps for the spoofed ACKs (used when both SYNs had the option).
    stamps: Stamps,
    fin_seen: bool,
    /// The client's FIN passed, and the client acknowledged the server's FIN.
    client_fin: bool,
    fin_acked: bool,
    /// The window last advertised to the server in a spoofed ACK.
    adv_wnd: u64,
    last_seen: SimTime,
    /// The right edge of the window promised to the server (relative): the server may
    /// send up to here.
    edge: u64,
    /// Shared mode: bytes in flight toward the client (see [`Held::in_pipe`]).
    pipe: u64,
    /// Shared mode: segments known lost, to resend (relative sequence numbers).
    lost: BTreeSet<u64>,
    /// Shared mode: the client sends SACK blocks to the gateway.
    sack_ok: bool,
    /// The client's SYN offered SACK.
    client_sack: bool,
    /// The gateway added SACK-permitted to the server's SYN: strip SACK blocks from the
    /// client segments it passes to the server.
    strip_sack: bool,
    /// Shared mode: in recovery until `client_una` reaches `recover`.
    in_recovery: bool,
    /// Some ACK of the server's SYN has reached the server (the client's SYN-ACK, a
    /// spoofed ACK or the client's own): until then the client's pure ACK (the last of
    /// a handshake the client opened) passes.
    syn_acked: bool,
    /// The server's cumulative ACK of the client's data (relative to the client's ISN):
    /// the ACK field of the data the gateway sends toward the client.
    server_ack: u64,
    /// When the client last acknowledged new data, or data first waited for it: with
    /// data held and no progress for `abandon_timeout`, the connection is abandoned.
    last_progress: SimTime,
    /// The deadline the gateway's timer index holds for this connection.
    pub(super) armed: Option<SimTime>,
}

impl<P: GwPacket> Conn<P> {
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
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            last_ooo: None,
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
            stamps: Stamps::default(),
            fin_seen: false,
            client_fin: false,
            fin_acked: false,
            adv_wnd: cfg.buffer,
            last_seen: now,
            edge: 1,
            pipe: 0,
            lost: BTreeSet::new(),
            sack_ok: false,
            client_sack: false,
            strip_sack: false,
            in_recovery: false,
            syn_acked: false,
            server_ack: 1,
            last_progress: now,
            armed: None,
        }
    }

    /// Data has waited `timeout` for the client to acknowledge anything (the client is
    /// gone): checked when the satellite-side timer fires, which it keeps doing while
    /// data is held.
    pub fn abandoned(&self, now: SimTime, timeout: SimDuration) -> bool {
        !self.held.is_empty() && self.last_progress + timeout <= now
    }

    /// Shared mode: bytes in flight toward the client.
    pub fn pipe(&self) -> u64 {
        self.pipe
    }

    /// Memory this connection holds or has promised to the server.
    pub fn reserved(&self) -> u64 {
        self.held_bytes + self.edge.saturating_sub(self.rcv_nxt)
    }

    /// Holds data not yet acknowledged by the client (competes for the satellite).
    pub fn active(&self) -> bool {
        !self.held.is_empty()
    }

    /// Shared mode: something to send and room under `limit` bytes in flight.
    pub fn wants_send(&self, limit: u64) -> bool {
        self.pipe < limit
            && (!self.lost.is_empty() || self.held.range(self.snd_nxt..).next().is_some())
    }

    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Bytes the server considers delivered that only the gateway holds.
    pub fn unsent_acked_bytes(&self) -> u64 {
        self.held
            .range(..self.rcv_nxt)
            .map(|(_, h)| h.pkt.hdr().seg.len as u64)
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

    /// A client segment passing to the server: its window in the server's view (its
    /// promise is recorded), SACK blocks removed if the server did not negotiate SACK.
    ///
    /// Its ACK field never goes below what the gateway has acknowledged in the client's
    /// name (a real server drops a segment whose ACK is more than a window old).
    fn rescale(&mut self, mut pkt: P) -> P {
        let (cs, ss) = (self.client_shift(), self.server_view_shift());
        let (rcv_nxt, strip) = (self.rcv_nxt, self.strip_sack);
        let space = self.server.space;
        let p = pkt.hdr_mut();
        p.seg.window = (((p.seg.window as u64) << cs) >> ss).min(65_535) as u16;
        let wire = p.seg.window as u64;
        if let Some(space) = space {
            let mut ack = space.to_rel(p.seg.ack, rcv_nxt);
            if p.seg.flags & ACK != 0 && ack < rcv_nxt {
                ack = rcv_nxt;
                p.seg.ack = space.to_wire(ack);
            }
            self.edge = self.edge.max(ack + (wire << ss));
        }
        if strip && p.seg.opts.sack.is_some() {
            p.seg.opts.sack = None;
            p.size = TCPIP_HEADER + p.seg.opts.encoded_len() + p.seg.len;
        }
        self.syn_acked |= p.seg.flags & ACK != 0;
        pkt
    }

    /// A data segment of the client passing to the server: the gateway speaks for the
    /// client's receive side, so its ACK and window are those of a spoofed ACK.
    fn speak_for_client(&mut self, cfg: &GatewayConfig, mem: MemShare, mut pkt: P) -> P {
        let free = self.free_window(cfg, mem);
        self.adv_wnd = free;
        let shift = self.server_view_shift();
        let wire = (free >> shift).min(65_535);
        self.edge = self.edge.max(self.rcv_nxt + (wire << shift));
        let (strip, rcv_nxt) = (self.strip_sack, self.rcv_nxt);
        let space = self.server.space;
        let p = pkt.hdr_mut();
        if let Some(space) = space {
            let ack = space.to_rel(p.seg.ack, rcv_nxt).max(rcv_nxt);
            p.seg.ack = space.to_wire(ack);
            p.seg.flags |= ACK;
        }
        p.seg.window = wire as u16;
        if strip && p.seg.opts.sack.is_some() {
            p.seg.opts.sack = None;
            p.size = TCPIP_HEADER + p.seg.opts.encoded_len() + p.seg.len;
        }
        self.syn_acked = true;
        pkt
    }

    fn can_send(&self, window: u64) -> bool {
        self.held.range(self.snd_nxt..).next().is_some() && self.snd_nxt < self.client_una + window
    }

    pub fn next_timer(&self, cfg: &GatewayConfig, window: u64) -> Option<SimTime> {
        let mut t = self.rto_at;
        if !cfg.shared && self.next_send_at > SimTime::ZERO && self.can_send(window) {
            t = Some(t.map_or(self.next_send_at, |x| x.min(self.next_send_at)));
        }
        if self.held.is_empty() {
            let idle = self.last_seen + cfg.idle_timeout;
            t = Some(t.map_or(idle, |x| x.min(idle)));
        }
        t
    }

    /// The window to advertise to the server: the free per-connection buffer, and no
    /// more memory than this connection's fair share or what is free.
    pub fn free_window(&self, cfg: &GatewayConfig, mem: MemShare) -> u64 {
        if !cfg.shared {
            return cfg.buffer.saturating_sub(self.held_bytes);
        }
        let own = self.reserved();
        let allowed = cfg
            .buffer
            .min(own.saturating_add(mem.free))
            .min(own.max(mem.fair));
        // never below what was already promised (windows do not shrink)
        allowed
            .saturating_sub(self.held_bytes)
            .max(self.edge.saturating_sub(self.rcv_nxt))
    }

    /// An ACK in the client's name, to the server.
    fn spoof_ack(&mut self, cfg: &GatewayConfig, mem: MemShare, now: SimTime) -> P {
        let free = self.free_window(cfg, mem);
        self.adv_wnd = free;
        let shift = self.server_view_shift();
        let wire = (free >> shift).min(65_535);
        self.edge = self.edge.max(self.rcv_nxt + (wire << shift));
        let (server, server_port, client, client_port) = self.key;
        let mut seg = Segment {
            sport: client_port,
            dport: server_port,
            seq: self.client.space.map_or(0, |s| s.to_wire(self.client_seq)),
            ack: self.server.space.map_or(0, |s| s.to_wire(self.rcv_nxt)),
            flags: ACK,
            window: wire as u16,
            ..Default::default()
        };
        if self.client.ts && self.server.ts {
            seg.opts.timestamps = Some((
                self.stamps.client.unwrap_or(0),
                self.stamps.recent.unwrap_or(0),
            ));
        }
        if self.client.sack && self.server.sack && !self.ooo.is_empty() {
            let most = if seg.opts.timestamps.is_some() { 3 } else { 4 };
            seg.opts.sack = Some(Box::new(self.sack_blocks(most)));
        }
        self.syn_acked = true;
        P::made(Packet::new(now, client, server, seg))
    }

    /// A packet of this connection; in the paper's mode (`!cfg.shared`) the connection
    /// then sends what its window allows, in shared mode the gateway asks it to.
    #[allow(clippy::too_many_arguments)]
    pub fn on_packet(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        mem: MemShare,
        st: &mut GatewayCounters,
        now: SimTime,
        dir: Dir,
        mut pkt: P,
        out: &mut Vec<P>,
    ) {
        self.last_seen = now;
        let h = pkt.hdr();
        if h.seg.flags & SYN != 0 {
            let side = Side {
                space: Some(SeqSpace::new(h.seg.seq)),
                wscale: h.seg.opts.wscale,
                ts: h.seg.opts.timestamps.is_some(),
                sack: h.seg.opts.sack_permitted,
            };
            match (dir, h.seg.opts.timestamps) {
                (Dir::ToServer, Some((v, _))) => self.stamps.client_sent(v),
                (Dir::ToClient, Some((v, _))) => self.stamps.recent = Some(v),
                _ => {}
            }
            let seg = &h.seg;
            match dir {
                Dir::ToClient => {
                    self.server = side;
                    self.mss = seg.opts.mss.map_or(536, |m| m as u64);
                    self.client_wnd = self.mss;
                    if cfg.shared {
                        if self.client_sack && !seg.opts.sack_permitted {
                            // the client offered SACK: let it report to the gateway
                            let p = pkt.hdr_mut();
                            p.seg.opts.sack_permitted = true;
                            self.strip_sack = true;
                            p.size = TCPIP_HEADER + p.seg.opts.encoded_len() + p.seg.len;
                        }
                        self.sack_ok = self.client_sack;
                    }
                }
                Dir::ToServer => {
                    self.client = side;
                    self.client_wnd = seg.window as u64; // never scaled in a SYN
                    self.client_seq = 1;
                    self.client_sack = seg.opts.sack_permitted;
                    if seg.flags & ACK != 0 {
                        self.syn_acked = true; // the client's SYN-ACK
                        if cfg.shared {
                            // a SYN-ACK carries SACK-permitted only if the server's SYN did
                            self.sack_ok = seg.opts.sack_permitted;
                        }
                    }
                    self.edge = self.edge.max(1 + seg.window as u64);
                    if let Some(ws) = seg.opts.wscale {
                        // speak for the client with a scale that fits the buffer
                        self.gw_shift = ws.max(window_shift(cfg.buffer));
                        if self.gw_shift != ws {
                            pkt.hdr_mut().seg.opts.wscale = Some(self.gw_shift);
                        }
                    }
                }
            }
            out.push(pkt);
            return;
        }
        let seg = &h.seg;
        match dir {
            Dir::ToClient => {
                if seg.flags & ACK != 0 {
                    if let Some(space) = self.client.space {
                        let a = space.to_rel(seg.ack, self.server_ack);
                        self.server_ack = self.server_ack.max(a);
                    }
                }
                if seg.len == 0 && seg.flags & FIN == 0 {
                    // the server's pure ACKs (handshake, ACK of the client's FIN) pass
                    out.push(pkt);
                    return;
                }
                self.on_server_segment(cfg, mem, st, now, pkt, out);
            }
            Dir::ToServer => {
                let (flags, len) = (seg.flags, seg.len);
                if let Some((v, _)) = seg.opts.timestamps {
                    self.stamps.client_sent(v);
                }
                if let Some(space) = self.client.space {
                    let end = space.to_rel(seg.seq, self.client_seq) + len as u64;
                    self.client_seq = self.client_seq.max(end);
                }
                let data = len > 0 && flags & FIN == 0;
                if !self.syn_acked && flags & ACK != 0 && !data && flags & FIN == 0 {
                    // the last ACK of a handshake the client opened: the server needs it
                    let p = self.rescale(pkt);
                    out.push(p);
                    return;
                }
                let rest = if cfg.shared {
                    self.on_client_segment_shared(cfg, mem, st, now, pkt, data, out)
                } else {
                    self.on_client_segment(cfg, st, now, pkt, data, out)
                };
                if let (Some(p), true) = (rest, data) {
                    // the client's own data (a request, an upload) goes on to the server
                    let p = self.speak_for_client(cfg, mem, p);
                    out.push(p);
                }
            }
        }
        if !cfg.shared {
            self.send(cfg, window, st, now, out);
        }
    }

    fn hold(&mut self, seq: u64, pkt: P, seq_len: u64) {
        self.held.insert(seq, Held::new(pkt, seq_len));
    }

    /// The out-of-order data as at most `most` SACK blocks in the server's sequence
    /// numbers (RFC 2018 §4: the block holding the segment received last first, then
    /// the others from the highest down).
    fn sack_blocks(&self, most: usize) -> SackBlocks {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (&q, (p, _)) in &self.ooo {
            let end = q + p.hdr().seg.len as u64;
            match runs.last_mut() {
                Some(r) if q <= r.1 => r.1 = r.1.max(end),
                _ => runs.push((q, end)),
            }
        }
        runs.reverse();
        if let Some(k) = self
            .last_ooo
            .and_then(|l| runs.iter().position(|r| r.0 <= l && l < r.1))
        {
            let r = runs.remove(k);
            runs.insert(0, r);
        }
        let Some(space) = self.server.space else {
            return SackBlocks::default();
        };
        let wire: Vec<(u32, u32)> = runs
            .iter()
            .take(most)
            .map(|&(a, b)| (space.to_wire(a), space.to_wire(b)))
            .collect();
        SackBlocks::from_slice(&wire)
    }

    /// Whether `len` more bytes fit in the connection's buffer beside what it holds.
    fn room(&self, cfg: &GatewayConfig, len: u64) -> bool {
        self.held_bytes + self.ooo_bytes + len <= cfg.buffer
    }

    /// Takes the segment that filled `rcv_nxt` into the held data, then the out-of-order
    /// segments that now follow it in sequence; a stale or overlapping one is dropped
    /// (the server will resend what the next ACK does not cover).
    ///
    /// Timestamps: the client applies PAWS (RFC 7323 §5) to what the gateway sends it,
    /// in sequence order, but the segments that waited behind a hole carry older TSvals
    /// than the server's resend that filled it; sent as they are, after the resend, the
    /// client drops them as old duplicates, again at every resend (seen with Linux: the
    /// transfer stalled). So a held segment whose TSval is older than one before it in
    /// sequence carries that one's instead. (Only the client sees these TSvals; its
    /// echoes come back to the gateway, which absorbs them.)
    fn accept_in_order(&mut self, seq: u64, pkt: P, seq_len: u64) {
        let mut next = Some((seq, pkt, seq_len));
        while let Some((q, mut p, l)) = next.take() {
            if let Some((v, e)) = p.hdr().seg.opts.timestamps {
                match self.stamps.forward {
                    Some(f) if newer(f, v) => p.hdr_mut().seg.opts.timestamps = Some((f, e)),
                    _ => self.stamps.forward = Some(v),
                }
            }
            let len = p.hdr().seg.len as u64;
            if p.hdr().seg.flags & FIN != 0 {
                self.fin_seen = true;
            }
            self.rcv_nxt = q + len;
            self.held_bytes += len;
            self.hold(q, p, l);
            while let Some(e) = self.ooo.first_entry() {
                if *e.key() > self.rcv_nxt {
                    break;
                }
                let (k, (p, l)) = e.remove_entry();
                self.ooo_bytes -= p.hdr().seg.len as u64;
                if k == self.rcv_nxt && !self.fin_seen {
                    next = Some((k, p, l));
                    break;
                }
            }
        }
        if self.ooo.is_empty() {
            self.last_ooo = None;
        }
    }

    fn on_server_segment(
        &mut self,
        cfg: &GatewayConfig,
        mem: MemShare,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: P,
        out: &mut Vec<P>,
    ) {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return;
        };
        let seg = &pkt.hdr().seg;
        let seq = space.to_rel(seg.seq, self.rcv_nxt);
        if self.held.is_empty() {
            self.last_progress = now;
        }
        let fin = seg.flags & FIN != 0;
        let seq_len = seg.len as u64 + fin as u64;
        let len = seg.len as u64;
        if seq == self.rcv_nxt && seg.len > 0 {
            // shared mode: beyond what was promised, only if the memory has room
            let no_room = cfg.shared && seq + len > self.edge && len > mem.free;
            if !self.room(cfg, len) || no_room {
                st.dropped_buffer_full += 1;
                out.push(self.spoof_ack(cfg, mem, now));
                return;
            }
            if let Some((v, _)) = seg.opts.timestamps {
                self.stamps.recent = Some(v); // RFC 7323 §4.3: it advanced rcv_nxt
            }
            self.accept_in_order(seq, pkt, seq_len);
            st.max_buffer_bytes.update(self.held_bytes);
            st.spoofed_acks += 1;
            let ack = self.spoof_ack(cfg, mem, now);
            out.push(ack);
        } else if seg.len == 0 && fin && seq == self.rcv_nxt {
            // a bare FIN: forward in sequence (kept so that it is resent if lost)
            self.fin_seen = true;
            if let Some((v, _)) = seg.opts.timestamps {
                self.stamps.recent = Some(v);
            }
            self.hold(seq, pkt, seq_len);
        } else if seg.len > 0
            && seq > self.rcv_nxt
            && seq + len <= self.edge
            && !self.fin_seen
            && !self.ooo.contains_key(&seq)
            && self.room(cfg, len)
        {
            // beyond a hole, within the promised window: kept until the hole is filled
            self.ooo_bytes += len;
            self.ooo.insert(seq, (pkt, seq_len));
            self.last_ooo = Some(seq);
            st.out_of_order_held += 1;
            out.push(self.spoof_ack(cfg, mem, now));
        } else {
            // a duplicate, or beyond the window or the buffer: a duplicate spoofed ACK,
            // data not kept
            out.push(self.spoof_ack(cfg, mem, now));
        }
    }

    fn on_client_segment(
        &mut self,
        cfg: &GatewayConfig,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: P,
        data: bool,
        out: &mut Vec<P>,
    ) -> Option<P> {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return None;
        };
        let seg = &pkt.hdr().seg;
        let ack = space.to_rel(seg.ack, self.client_una);
        if seg.flags & FIN != 0 {
            // The client's FIN goes to the server; its ACK field still releases data.
            self.client_fin = true;
            if ack > self.client_una {
                self.release(st, now, ack);
            }
            if self.fin_seen && self.held.is_empty() && ack > self.rcv_nxt {
                self.fin_acked = true;
            }
            let p = self.rescale(pkt);
            out.push(p);
            return None;
        }
        self.client_wnd = (seg.window as u64) << self.client_shift();
        if ack > self.client_una {
            self.release(st, now, ack);
            self.suppress = self.suppress.saturating_sub(1);
            // Back-pressure release: a window update to the server once at least two
            // segments' worth of buffer has freed since the last advertisement.
            let free = cfg.buffer.saturating_sub(self.held_bytes);
            if free >= self.adv_wnd + 2 * self.mss {
                out.push(self.spoof_ack(cfg, MemShare::UNLIMITED, now));
            }
            if self.fin_seen && self.held.is_empty() && ack > self.rcv_nxt {
                self.fin_acked = true;
                let p = self.rescale(pkt); // the client's ACK of the FIN: the server may close
                out.push(p);
                return None;
            }
            return Some(pkt);
        }
        if ack == self.client_una && self.client_una < self.snd_nxt && !data {
            if self.suppress > 0 {
                self.suppress -= 1; // an echo of data resent by go-back-N
                return Some(pkt);
            }
            if cfg.recover_guard && self.client_una < self.recover {
                return Some(pkt); // echoes of the window the last go-back-N resends
            }
            self.dupacks += 1;
            if self.dupacks == cfg.dupthresh {
                self.go_back_n(st, now);
            }
        }
        Some(pkt)
    }

    /// Shared mode: a segment from the client. SACK blocks mark what it holds; a new
    /// cumulative ACK releases data; the loss of the segment at the hole is inferred
    /// from the `dupthresh`-th duplicate ACK, from a partial ACK in recovery, or from
    /// a resend that is overdue.
    #[allow(clippy::too_many_arguments)]
    fn on_client_segment_shared(
        &mut self,
        cfg: &GatewayConfig,
        mem: MemShare,
        st: &mut GatewayCounters,
        now: SimTime,
        pkt: P,
        data: bool,
        out: &mut Vec<P>,
    ) -> Option<P> {
        let Some(space) = self.server.space else {
            out.push(pkt);
            return None;
        };
        let seg = &pkt.hdr().seg;
        let ack = space.to_rel(seg.ack, self.client_una);
        let is_fin = seg.flags & FIN != 0;
        if !is_fin {
            self.client_wnd = (seg.window as u64) << self.client_shift();
        }
        if self.sack_ok {
            if let Some(sack) = seg.opts.sack.as_deref() {
                for &(l, r) in &sack.blocks[..sack.n.min(4) as usize] {
                    let (l, r) = (space.to_rel(l, ack), space.to_rel(r, ack));
                    self.mark_sacked(l, r);
                }
            }
        }
        let advanced = ack > self.client_una;
        if advanced {
            self.release(st, now, ack);
            if self.in_recovery {
                if self.client_una >= self.recover {
                    self.in_recovery = false;
                } else {
                    // a partial ACK: the client's next hole was lost too
                    self.mark_hole(now, false);
                }
            }
        } else if ack == self.client_una && self.client_una < self.snd_nxt && !is_fin && !data {
            if self.in_recovery {
                self.check_overdue_resend(now);
            } else {
                self.dupacks += 1;
                if self.dupacks >= cfg.dupthresh || self.sacked_beyond(cfg) {
                    st.go_back_n += 1;
                    self.in_recovery = true;
                    self.recover = self.snd_nxt;
                    self.mark_hole(now, true);
                }
            }
        }
        if is_fin {
            self.client_fin = true;
            if self.fin_seen && self.held.is_empty() && ack > self.rcv_nxt {
                self.fin_acked = true;
            }
            let p = self.rescale(pkt);
            out.push(p);
            return None;
        }
        if advanced {
            // Back-pressure release: a window update once at least two segments' worth
            // more can be promised than at the last advertisement.
            if self.free_window(cfg, mem) >= self.adv_wnd + 2 * self.mss {
                out.push(self.spoof_ack(cfg, mem, now));
            }
            if self.fin_seen && self.held.is_empty() && ack > self.rcv_nxt {
                self.fin_acked = true;
                let p = self.rescale(pkt); // the client's ACK of the FIN: the server may close
                out.push(p);
                return None;
            }
        }
        Some(pkt)
    }

    /// SACK blocks show `dupthresh` segments held above the hole (RFC 6675's rule).
    fn sacked_beyond(&self, cfg: &GatewayConfig) -> bool {
        self.sack_ok
            && self
                .held
                .range(self.client_una..self.snd_nxt)
                .filter(|(_, h)| h.sacked)
                .count()
                >= cfg.dupthresh as usize
    }

    fn mark_sacked(&mut self, l: u64, r: u64) {
        if l >= r || r > self.snd_nxt {
            return; // not a block of data the gateway sent
        }
        for (&s, h) in self.held.range_mut(l..r) {
            if s + h.seq_len > r || h.sacked {
                continue;
            }
            h.sacked = true;
            if h.in_pipe {
                h.in_pipe = false;
                self.pipe -= h.pkt.hdr().seg.len as u64;
            }
            self.lost.remove(&s);
        }
    }

    fn mark_lost(&mut self, s: u64) {
        let Some(h) = self.held.get_mut(&s) else {
            return;
        };
        if h.sacked || h.sent_at.is_none() {
            return;
        }
        if h.in_pipe {
            h.in_pipe = false;
            self.pipe -= h.pkt.hdr().seg.len as u64;
        }
        self.lost.insert(s);
    }

    /// The segment at the client's hole is lost (or, `first` = at the start of
    /// recovery, shown lost by duplicate ACKs). What else the client cannot hold is lost
    /// with it: SACK holes below the highest SACKed segment, and every segment sent
    /// beyond the client's window from the hole (a receiver drops out-of-order data
    /// beyond its window, and all of them reach it before the resent hole).
    fn mark_hole(&mut self, now: SimTime, first: bool) {
        let una = self.client_una;
        let Some((&s, h)) = self.held.range(una..).next() else {
            return;
        };
        // a partial ACK that reaches a segment resent in this recovery, still on its
        // way, shows nothing new
        if !first && h.retx && h.in_pipe && !self.overdue(now, h) {
            return;
        }
        self.mark_lost(s);
        let mut sack_top = una;
        if self.sack_ok {
            if let Some((&t, h)) = self.held.range(una..).rev().find(|(_, h)| h.sacked) {
                sack_top = t + h.seq_len;
            }
        }
        let beyond = una.saturating_add(self.client_wnd);
        let lost: Vec<u64> = self
            .held
            .range(una..self.snd_nxt)
            .filter(|&(&q, h)| h.in_pipe && (q < sack_top || q >= beyond))
            .map(|(&q, _)| q)
            .collect();
        for q in lost {
            self.mark_lost(q);
        }
    }

    /// A resent segment that should have been acknowledged by now (no reordering on
    /// the satellite: an ACK of anything sent after it shows it lost).
    fn overdue(&self, now: SimTime, h: &Held<P>) -> bool {
        let srtt = self.rtt.srtt.unwrap_or(self.rtt.rto());
        h.sent_at
            .is_some_and(|t| now > t + srtt + SimDuration(srtt.0 / 4))
    }

    fn check_overdue_resend(&mut self, now: SimTime) {
        if let Some((_, h)) = self.held.range(self.client_una..).next() {
            if h.in_pipe && h.retx && self.overdue(now, h) {
                self.mark_hole(now, true);
            }
        }
    }

    /// The client acknowledged up to `ack`: free the buffer, take an RTT sample from the
    /// newest released segment unless any released one was resent (Karn), restart the
    /// timer.
    fn release(&mut self, st: &mut GatewayCounters, now: SimTime, ack: u64) {
        let mut newest = None;
        let mut any_retx = false;
        while let Some((&s, h)) = self.held.iter().next() {
            if s + h.seq_len > ack {
                break;
            }
            any_retx |= h.retx;
            newest = h.sent_at;
            let len = h.pkt.hdr().seg.len as u64;
            if h.in_pipe {
                self.pipe -= len;
            }
            self.held_bytes -= len;
            st.sat_bytes_delivered += len;
            self.held.remove(&s);
            self.lost.remove(&s);
        }
        if let (Some(t), false) = (newest, any_retx) {
            self.rtt.sample(now - t);
        }
        self.client_una = ack;
        self.last_progress = now;
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

    /// The copy of held segment `seq` to send now, counted.
    /// Its ACK field is the server's latest acknowledgement of the client's data.
    fn transmit(&mut self, seq: u64, st: &mut GatewayCounters, now: SimTime) -> P {
        let server_ack = self.client.space.map_or(0, |s| s.to_wire(self.server_ack));
        let h = self.held.get_mut(&seq).expect("a held segment");
        let resend = h.sent_at.is_some();
        h.retx |= resend;
        h.sent_at = Some(now);
        let end = seq + h.seq_len;
        let mut p = h.pkt.clone();
        let q = p.hdr_mut();
        q.seg.ack = server_ack;
        q.created = now;
        q.uid = crate::net::packet::UNSTAMPED;
        let len = q.seg.len;
        st.sat_bytes_sent += len as u64;
        if resend {
            st.segments_resent += 1;
        }
        if end > self.client_una + self.client_wnd {
            st.client_overruns += 1;
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        p
    }

    /// The paper's mode: send what the connection's window allows.
    fn send(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<P>,
    ) {
        while self.can_send(window) && self.next_send_at <= now {
            let (&seq, h) = self.held.range(self.snd_nxt..).next().expect("can_send");
            debug_assert_eq!(seq, self.snd_nxt);
            self.snd_nxt = seq + h.seq_len;
            let p = self.transmit(seq, st, now);
            let size = p.hdr().seg.len;
            out.push(p);
            if let Some(r) = cfg.pace {
                self.next_send_at = now + r.tx_time((size + TCPIP_HEADER) as u64);
            }
        }
    }

    /// Shared mode: send one segment (a lost one first, else new data); its size on
    /// the wire, for the gateway's pacing.
    pub fn send_one(
        &mut self,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<P>,
    ) -> Option<u32> {
        let seq = match self.lost.pop_first() {
            Some(s) => s,
            None => {
                let (&s, h) = self.held.range(self.snd_nxt..).next()?;
                self.snd_nxt = s + h.seq_len;
                s
            }
        };
        let p = self.transmit(seq, st, now);
        let h = self.held.get_mut(&seq).expect("a held segment");
        h.in_pipe = true;
        self.pipe += p.hdr().seg.len as u64;
        let size = p.hdr().size;
        out.push(p);
        Some(size)
    }

    pub fn on_timer(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<P>,
    ) {
        if self.rto_at.is_some_and(|t| t <= now) {
            // No backoff: the satellite side is the gateway's own link, and the paper
            // recovers "without slow start or window reduction".
            self.rto_at = None;
            st.go_back_n_timeout += 1;
            if cfg.shared {
                // everything in flight is presumed lost
                st.go_back_n += 1;
                self.in_recovery = true;
                self.recover = self.snd_nxt;
                let inflight: Vec<u64> = self
                    .held
                    .range(self.client_una..self.snd_nxt)
                    .filter(|(_, h)| h.in_pipe)
                    .map(|(&q, _)| q)
                    .collect();
                for q in inflight {
                    self.mark_lost(q);
                }
                self.rto_at = Some(now + self.rtt.rto());
            } else {
                self.go_back_n(st, now);
            }
        }
        if !cfg.shared {
            self.send(cfg, window, st, now, out);
        }
    }
}
