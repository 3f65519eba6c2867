//! One spoofed connection (seed 003, §3): each in-order data segment from the server
//! is acknowledged at once in the client's name (spoofed ACK, window = the gateway's
//! free buffer); the data is kept until the client's own ACK covers it; the client's
//! ACKs are absorbed. Toward the client, two algorithms share this state: the paper's
//! per-connection window and go-back-N ([`paper`], `shared = false`) and the shared
//! budget's scoreboard ([`shared`], the default), which resends only what the client's
//! ACKs show lost. Spoofed windows are limited by the gateway's free memory in shared
//! mode: a connection's promise (held data + the window it advertised) never grows past
//! its fair share of memory or what is free.
//!
//! The FIN travels in sequence through the buffer and, once the gateway holds it (all
//! data before it taken in order), is acknowledged in the client's name like the data
//! (issue 25): a server whose FIN waited for the client's ACK across the satellite,
//! behind the data queued for the client, timed out on it 3 times per connection (a
//! Linux server's RTO toward the gateway is ~200 ms). The FIN is then a promise like a
//! spoofed byte: held and resent until the client acknowledges it, and counted
//! ([`Conn::fin_undelivered`]) if the gateway gives the connection up. The client's
//! ACK of it, and the client's own FIN, pass to the server. Out-of-order data from the
//! server (a loss or reordering on the terrestrial path) is kept, as a receiver keeps
//! it, if it lies within the window already promised to the server and the buffer has
//! room; it is answered with a duplicate spoofed ACK — with SACK blocks when both SYNs
//! offered SACK (RFC 2018: the block of the segment just received first) — and joins
//! the in-order data, acknowledged then, when the hole is filled. (Before 2026-11-26 it
//! was dropped, and a server without SACK lost its whole window behind each hole.)
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
//! Faults (issue 26; tests in the gateway's `tests_faults.rs`, the rest in `tests.rs`):
//! - *The FIN.* A retransmission of the server's FIN never replaces the gateway's own
//!   copy and never goes to the client: it means the server did not see the spoofed
//!   ACK of it, which the gateway sends again (the copy for the client is resent by the
//!   gateway's own timer until the client acknowledges it). A client ACK that covers
//!   the FIN always reaches the server. A
//!   client ACK inside a held segment (a receiver keeps the part of a segment within
//!   its window: a FIN beyond it is dropped) leaves that segment to be resent.
//! - *RST and SYN* (RFC 5961 §3, §4). A RST from the server resets the connection only
//!   at the next byte the gateway expects from it; elsewhere in the window promised to
//!   the server it is answered with a challenge ACK, outside it dropped. The client
//!   gets the accepted RST at the byte *it* expects next (what it acknowledged). A RST
//!   from the client is always passed on (the server judges it) but resets the
//!   gateway's state only between what the server acknowledged and what the client
//!   sent. A SYN with another ISN never replaces a connection's state
//!   ([`Conn::syn_conflicts`]).
//! - *A shut window* (RFC 1122 §4.2.2.17): while the client advertises zero, no new
//!   data goes out and of what is in flight only the first segment the client lacks is
//!   resent (Linux's `__tcp_retransmit_skb` alike: nothing at or beyond the window's
//!   end but the head) — by fast recovery, or by the retransmission timer, whose
//!   backoff makes it the probe of a persist timer (intervals doubling up to 60 s). A
//!   client whose buffer fills behind a hole advertises zero until the hole is filled:
//!   the head's resend fills it at once.
//! - *The retransmission timer backs off* (RFC 6298 §5.5) until the client acknowledges
//!   new data (as Linux with timestamps: every such ACK is an RTT sample). The paper
//!   recovers "by the same procedure as TCP" on a timeout. In shared mode a timeout also sends
//!   one segment at a time until the client answers (as TCP's loss window of one
//!   segment, RFC 5681 §3.1): a dead link gets one segment per timeout, not the window.
//! - *Giving up*: a connection whose client acknowledged nothing new for
//!   `abandon_timeout` while data waited is reset on both sides ([`Conn::rsts`]), each
//!   at the sequence number its peer expects; the bytes the server saw acknowledged and
//!   the client never did are counted exactly (`rcv_nxt − client_una`).
//!
//! Files: this one (the connection's state: SYNs, release, transmit, timers, FIN),
//! `server.rs` (the server's side), [`paper`] and [`shared`] (the two satellite sides),
//! `faults.rs` (RST and SYN checks, resets, the listing). Why ~700 lines here: the
//! state's fields and their invariants, which every other file reads.

mod faults;
pub mod paper;
mod server;
pub mod shared;

pub use faults::{ConnInfo, RstVerdict};

use super::{ConnKey, Dir, GatewayConfig, GatewayCounters, GwPacket};
use crate::net::packet::{Packet, ACK, FIN, SYN, TCPIP_HEADER};
use crate::tcp::receiver::window_shift;
use crate::tcp::rtt::RttEstimator;
use crate::tcp::seq::SeqSpace;
use crate::time::{SimDuration, SimTime};
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
    /// The server's FIN has come (it sits at `rcv_nxt`, which no data passes after it).
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
    /// Who opened the connection (the direction of its SYN), and when the answer to that
    /// SYN passed.
    opener: Dir,
    born: SimTime,
    /// The handshake is complete: the opener acknowledged the answer, or data flowed.
    established: bool,
    /// Shared mode: after a retransmission timeout, one segment at a time until the
    /// client answers.
    rto_probe: bool,
    /// Segments resent toward the client.
    resent: u64,
}

/// The window scale the gateway speaks for the client with: the client's own, or a
/// larger one that fits the gateway's buffer.
pub fn gw_shift(cfg: &GatewayConfig, client_ws: u8) -> u8 {
    client_ws.max(window_shift(cfg.buffer))
}

/// The options of an opening SYN from the client as the gateway passes it while the
/// handshake is in progress (the same the connection then learns it from): a window
/// scale that fits the gateway's buffer.
pub fn rewrite_syn<P: GwPacket>(cfg: &GatewayConfig, dir: Dir, pkt: &mut P) {
    if dir != Dir::ToServer {
        return;
    }
    if let Some(ws) = pkt.hdr().seg.opts.wscale {
        let g = gw_shift(cfg, ws);
        if g != ws {
            pkt.hdr_mut().seg.opts.wscale = Some(g);
        }
    }
}

impl<P: GwPacket> Conn<P> {
    /// A connection whose SYN went in direction `opener` (its answer passes `now`).
    pub fn new(cfg: &GatewayConfig, key: ConnKey, opener: Dir, now: SimTime) -> Self {
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
            opener,
            born: now,
            established: false,
            rto_probe: false,
            resent: 0,
        }
    }

    /// The handshake is complete.
    pub fn established(&self) -> bool {
        self.established
    }

    /// A handshake not completed `timeout` after the answer to its SYN: forget it.
    pub fn half_open_expired(&self, now: SimTime, timeout: SimDuration) -> bool {
        !self.established && self.born + timeout <= now
    }

    /// When the answer to its SYN passed.
    pub fn born(&self) -> SimTime {
        self.born
    }

    /// Holds nothing the server considers delivered or the client still needs.
    pub fn holds_nothing(&self) -> bool {
        self.held.is_empty() && self.ooo.is_empty()
    }

    /// Data has waited `timeout` for the client to acknowledge anything new (the client
    /// stopped reading, or is gone): its deadline is among the connection's timers.
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

    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Bytes the server considers delivered (spoofed ACKs covered them) that the client
    /// has not acknowledged: exactly, also when the client's ACK ends inside a segment.
    pub fn unsent_acked_bytes(&self) -> u64 {
        self.rcv_nxt.saturating_sub(self.client_una)
    }

    /// What the gateway has acknowledged to the server in the client's name: the data
    /// it took in order and, once it holds it, the server's FIN.
    fn acked_to_server(&self) -> u64 {
        self.rcv_nxt + self.fin_seen as u64
    }

    /// The gateway acknowledged the server's FIN in the client's name and the client has
    /// not acknowledged it: a connection given up now loses the close the server saw
    /// done (counted beside the bytes, [`super::FaultCounters::fins_undelivered`]).
    pub fn fin_undelivered(&self) -> bool {
        self.fin_seen && self.client_una <= self.rcv_nxt
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

    pub fn next_timer(&self, cfg: &GatewayConfig, window: u64) -> Option<SimTime> {
        let mut t = self.rto_at;
        let mut m = |x: SimTime| t = Some(t.map_or(x, |y: SimTime| y.min(x)));
        if !cfg.shared && self.next_send_at > SimTime::ZERO && self.can_send(window) {
            m(self.next_send_at);
        }
        if self.held.is_empty() {
            m(self.last_seen + cfg.idle_timeout);
        } else {
            m(self.last_progress + cfg.abandon_timeout);
        }
        t
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
                        self.gw_shift = gw_shift(cfg, ws);
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
        if seg.len > 0 || (dir == self.opener && seg.flags & ACK != 0) {
            self.established = true;
        }
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

    /// Keeps a segment for the client (a copy already held is kept: its send state
    /// says whether it must be resent).
    fn hold(&mut self, seq: u64, pkt: P, seq_len: u64) {
        self.held
            .entry(seq)
            .or_insert_with(|| Held::new(pkt, seq_len));
    }

    /// The first segment the client has not acknowledged whole (the client's ACK may end
    /// inside it).
    fn first_held(&self) -> Option<u64> {
        self.held.keys().next().copied()
    }

    /// The client advertises a zero window: nothing new may go, and of what is in flight
    /// only the head (see the module's documentation).
    fn shut(&self) -> bool {
        self.client_wnd == 0
    }

    /// A server segment carrying the FIN the gateway already holds (`fin_seen`): the
    /// server did not see the spoofed ACK of it (lost on the ground, or its timer was
    /// quicker), so it is acknowledged again; the client's copy is the gateway's to
    /// resend (its timer), and the retransmission goes nowhere.
    fn fin_again(
        &mut self,
        cfg: &GatewayConfig,
        mem: MemShare,
        st: &mut GatewayCounters,
        out: &mut Vec<P>,
    ) {
        st.spoofed_acks += 1;
        out.push(self.spoof_ack(cfg, mem));
    }

    /// A client segment whose ACK covers the server's FIN: the server must see it
    /// (pushed to `out`; true), even if it acknowledges nothing new.
    fn pass_fin_ack(&mut self, ack: u64, pkt: &mut Option<P>, out: &mut Vec<P>) -> bool {
        if !(self.fin_seen && ack > self.rcv_nxt) {
            return false;
        }
        if self.held.is_empty() {
            self.fin_acked = true;
        }
        if let Some(p) = pkt.take() {
            let p = self.rescale(p);
            out.push(p);
        }
        true
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
        // The client acknowledged new data: the timer's backoff ends (as Linux's does:
        // with timestamps every ACK of new data is an RTT sample, even of resent data,
        // and tcp_ack_update_rtt clears icsk_backoff). Without it, Karn's rule would
        // keep a backed-off timer as long as the client acknowledges only resent data,
        // which the paper's go-back-N makes the rule.
        self.rtt.backoff = 0;
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

    /// The copy of held segment `seq` to send now, counted.
    /// Its ACK field is the server's latest acknowledgement of the client's data.
    fn transmit(&mut self, seq: u64, st: &mut GatewayCounters, now: SimTime) -> P {
        let server_ack = self.client.space.map_or(0, |s| s.to_wire(self.server_ack));
        let h = self.held.get_mut(&seq).expect("a held segment");
        let resend = h.sent_at.is_some();
        h.retx |= resend;
        self.resent += resend as u64;
        h.sent_at = Some(now);
        let end = seq + h.seq_len;
        let mut p = h.pkt.clone();
        let q = p.hdr_mut();
        q.seg.ack = server_ack;
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

    pub fn on_timer(
        &mut self,
        cfg: &GatewayConfig,
        window: u64,
        st: &mut GatewayCounters,
        now: SimTime,
        out: &mut Vec<P>,
    ) {
        if self.rto_at.is_some_and(|t| t <= now) {
            // RFC 6298 §5.5: the timer backs off (the paper's gateway resent a window
            // every second into a dead link); the paper still goes back N without
            // slow start or window reduction
            self.rto_at = None;
            self.rtt.back_off();
            st.go_back_n_timeout += 1;
            if cfg.shared {
                // everything in flight is presumed lost; one segment at a time until
                // the client answers
                st.go_back_n += 1;
                self.in_recovery = true;
                self.recover = self.snd_nxt;
                self.presume_lost();
                self.rto_probe = true;
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
