//! The one-sided satellite TCP gateway of seed 003 (Miyake, Hasegawa, Hasegawa, Kato):
//! an ACK-spoofing performance-enhancing proxy (RFC 3135 "spoofing", integrated,
//! transparent) at the satellite uplink, and a split-connection mode (PEPsal-like) for
//! comparison.
//!
//! The gateway is sans-IO and works on real packets: connections are keyed by their
//! IPv4/TCP 4-tuple, sequence numbers are 32-bit and wrap, windows are scaled as both
//! SYNs negotiated (RFC 7323). What it needs from its surroundings is the direction of
//! each packet ([`Dir`]): toward the client over the satellite uplink, or back toward
//! the server. The simulator's node element ([`node::GatewayNode`]) takes it from the
//! routing table; a daemon takes it from the interface a packet arrived on.
//!
//! - [`spoof`]: the paper's gateway (spoofed ACKs, sending beyond the client's window,
//!   go-back-N without window reduction, duplicate-ACK suppression).
//! - [`split`]: terminate the server's connection, open a second one to the client.
//!
//! Connection table (spoof mode): a connection starts when the answer to its SYN passes
//! (an opening SYN leaves only an entry in the bounded, fast-ageing table of handshakes,
//! [`handshake`]); a RST forgets it only if it is the peer's (RFC 5961, `lifecycle.rs`);
//! a connection whose both FINs have passed and whose data is all delivered is
//! forgotten, one idle (no packet, nothing held) for `idle_timeout` is reaped, and one
//! whose client has acknowledged nothing new for `abandon_timeout` while data waits for
//! it is given up: both ends reset, the bytes the server saw acknowledged counted in
//! [`Gateway::abandoned_bytes`]. The table holds at most `max_conns` connections:
//! beyond that, new connections pass through unaccelerated (counted in
//! `conns_refused`). Split mode learns connections from the server's SYN.
//!
//! No event scans the table: each connection's next deadline sits in an ordered timer
//! set, and in shared mode the connections that may send under the current fair share
//! sit in an ordered set that the round robin walks from its cursor. A table of
//! thousands of connections costs O(log n) per packet (the fair share changes only when
//! a connection starts or stops holding data; then the set is rebuilt).
//!
//! The gateway is generic over what it carries ([`GwPacket`]): the simulator's
//! [`Packet`] (a header and a payload length), or a daemon's packet that also holds the
//! payload bytes it must resend.
//!
//! Files: [`config`] (the scenario's spec, its defaults and checks, the counters), this
//! one (the connection table, its timer and eligible sets, and the shared per-uplink
//! budget, which hands out and takes back window on every connection event),
//! [`handshake`] (handshakes in progress), `lifecycle.rs` (RSTs, expiry, removal, the
//! listing and resets a daemon asks for), [`spoof`] (one spoofed connection:
//! [`spoof::paper`]'s go-back-N, [`spoof::shared`]'s scoreboard), [`split`], [`node`]
//! (the simulator's element). Why ~700 lines here: the table's entry points
//! (`on_packet`, `on_timer`, the pump) each touch the timer index, the eligible set and
//! the shared sums together, and keep them consistent in one place.

pub mod config;
pub mod handshake;
mod lifecycle;
pub mod node;
pub mod split;
pub mod spoof;

pub use config::{
    default_window, GatewayConfig, GatewayCounters, GatewayMode, GatewaySpec, SplitConfig, Uplink,
};

use crate::net::packet::{Packet, ACK, RST, SYN};
use crate::stats::Last;
use crate::time::{Rate, SimTime};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound::{Excluded, Unbounded};

/// What the gateway holds and forwards: a packet whose header it reads and rewrites.
/// The simulator's [`Packet`] is its own header; a daemon's packet also carries the
/// payload bytes (shared by the copies the gateway resends).
pub trait GwPacket: Clone {
    fn hdr(&self) -> &Packet;
    /// The header, to be rewritten (a daemon re-encodes a packet it was asked for).
    fn hdr_mut(&mut self) -> &mut Packet;
    /// A packet the gateway originates (a spoofed ACK, a split connection's segment):
    /// no payload bytes.
    fn made(p: Packet) -> Self;
}

impl GwPacket for Packet {
    #[inline]
    fn hdr(&self) -> &Packet {
        self
    }
    #[inline]
    fn hdr_mut(&mut self) -> &mut Packet {
        self
    }
    #[inline]
    fn made(p: Packet) -> Self {
        p
    }
}

/// Which way a packet crosses the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the server side toward the client, over the satellite uplink.
    ToClient,
    /// From the client (over the satellite) toward the server.
    ToServer,
}

/// A connection's key: (server address, server port, client address, client port).
pub type ConnKey = ([u8; 4], u16, [u8; 4], u16);

/// The key of a packet travelling in `dir`.
#[inline]
pub fn key(dir: Dir, p: &Packet) -> ConnKey {
    match dir {
        Dir::ToClient => (p.src, p.seg.sport, p.dst, p.seg.dport),
        Dir::ToServer => (p.dst, p.seg.dport, p.src, p.seg.sport),
    }
}

/// The gateway's connections: spoofing or split, one table.
enum Conns<P> {
    Spoof(BTreeMap<ConnKey, spoof::Conn<P>>),
    Split(BTreeMap<ConnKey, split::SplitConn>),
}

/// What spares the gateway a scan of its table: every connection's next deadline, and
/// (shared mode) the connections that may send under the current fair share.
#[derive(Default)]
struct Index {
    timers: BTreeSet<(SimTime, ConnKey)>,
    eligible: BTreeSet<ConnKey>,
    /// The fair share `eligible` was computed for.
    limit: u64,
}

impl Index {
    fn arm(&mut self, k: ConnKey, armed: &mut Option<SimTime>, t: Option<SimTime>) {
        if *armed == t {
            return;
        }
        if let Some(o) = *armed {
            self.timers.remove(&(o, k));
        }
        if let Some(t) = t {
            self.timers.insert((t, k));
        }
        *armed = t;
    }

    fn forget(&mut self, k: ConnKey, armed: Option<SimTime>) {
        if let Some(o) = armed {
            self.timers.remove(&(o, k));
        }
        self.eligible.remove(&k);
    }

    /// The connections due at `now`, in key order (their deadlines disarmed).
    fn due(&mut self, now: SimTime) -> Vec<ConnKey> {
        let mut v = Vec::new();
        while let Some(&(t, k)) = self.timers.first() {
            if t > now {
                break;
            }
            self.timers.pop_first();
            v.push(k);
        }
        v.sort_unstable();
        v
    }
}

/// Shared mode: one satellite budget and one memory for all connections. The sums
/// are kept up to date from each connection's change across every call into it.
#[derive(Debug)]
struct Shared {
    /// Bytes in flight over the satellite, all connections.
    budget: u64,
    /// One connection's most bytes in flight.
    cap: u64,
    pace: Option<Rate>,
    memory: u64,
    pipe: u64,
    reserved: u64,
    active: usize,
    next_send_at: SimTime,
    /// Round robin: the connection that sent last.
    cursor: Option<ConnKey>,
}

/// A connection's share of the sums, before a call into it.
#[derive(Clone, Copy)]
struct Part(u64, u64, bool);

impl Part {
    fn of<P: GwPacket>(c: &spoof::Conn<P>) -> Part {
        Part(c.pipe(), c.reserved(), c.active())
    }
}

impl Shared {
    /// The sums after a connection changed from `before` to `c`.
    fn account<P: GwPacket>(&mut self, before: Part, c: Option<&spoof::Conn<P>>) {
        let after = c.map_or(Part(0, 0, false), Part::of);
        self.pipe = self.pipe - before.0 + after.0;
        self.reserved = self.reserved - before.1 + after.1;
        self.active = self.active - before.2 as usize + after.2 as usize;
    }

    fn mem(&self, conns: usize) -> spoof::MemShare {
        spoof::MemShare {
            free: self.memory.saturating_sub(self.reserved),
            fair: self.memory / conns.max(1) as u64,
        }
    }

    /// A connection's fair share of the satellite budget (at most its cap).
    fn limit(&self) -> u64 {
        self.cap.min(self.budget / self.active.max(1) as u64).max(1)
    }
}

/// Spoof mode: RSTs and SYNs that did not belong, and connections the gateway reset
/// (the daemon's metrics; kept out of the simulator's result).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct FaultCounters {
    /// RSTs that reset a connection (either side's), RSTs from servers answered with a
    /// challenge ACK or dropped (RFC 5961 §3.2), RSTs from clients passed on without
    /// resetting the gateway's state.
    pub rst_accepted: u64,
    pub rst_challenged: u64,
    pub rst_dropped: u64,
    pub rst_passed: u64,
    /// SYNs with another ISN on a connection holding data: passed, state kept.
    pub syn_conflicts: u64,
    /// Bytes servers saw acknowledged that connections reset by a RST still held.
    pub reset_bytes: u64,
    /// Connections the gateway reset on both sides itself (gave up, or stopped).
    pub resets_sent: u64,
    /// Of the connections reset (by a RST, given up, or at a stop), those whose FIN the
    /// gateway had acknowledged to the server and not delivered to the client.
    pub fins_undelivered: u64,
}

pub struct Gateway<P = Packet> {
    cfg: GatewayConfig,
    /// Satellite-side window in bytes (the paper's mode: per connection).
    window: u64,
    shared: Option<Shared>,
    conns: Conns<P>,
    idx: Index,
    /// Split mode: what a split connection emits, before conversion.
    scratch: Vec<Packet>,
    failed: bool,
    pub stats: GatewayCounters,
    /// Spoof mode: handshakes in progress.
    hs: handshake::Handshakes,
    /// What the gateway did about RSTs, SYNs and connections it gave up (the daemon's
    /// metrics; not in the simulator's result).
    pub faults: FaultCounters,
    /// Connections abandoned (their client acknowledged nothing for `abandon_timeout`
    /// while data waited), and the bytes the server considered delivered that they
    /// held. Not in the simulator's result (a run never lasts that long stuck).
    pub abandoned: u64,
    pub abandoned_bytes: u64,
}

impl<P: GwPacket> Gateway<P> {
    /// A gateway on an uplink: its default windows are the uplink's bandwidth-delay
    /// product, shared mode paces at its rate.
    pub fn new(mut cfg: GatewayConfig, up: Uplink) -> Self {
        if cfg.buffer == 0 {
            cfg.buffer = config::default_buffer(up.bdp);
        }
        let conns = if cfg.split.is_some() {
            Conns::Split(BTreeMap::new())
        } else {
            Conns::Spoof(BTreeMap::new())
        };
        let shared = cfg.shared.then(|| {
            // headroom of a quarter for the client's delayed ACKs
            let budget = cfg.link_window.unwrap_or(up.bdp.saturating_mul(5) / 4);
            Shared {
                budget,
                cap: cfg.window.unwrap_or(budget),
                pace: cfg.pace.or(up.rate),
                memory: cfg.memory.unwrap_or(budget.saturating_mul(4)),
                pipe: 0,
                reserved: 0,
                active: 0,
                next_send_at: SimTime::ZERO,
                cursor: None,
            }
        });
        Gateway {
            window: cfg.window.unwrap_or(up.bdp),
            shared,
            cfg,
            conns,
            idx: Index::default(),
            scratch: Vec::new(),
            failed: false,
            stats: GatewayCounters::default(),
            hs: handshake::Handshakes::default(),
            faults: FaultCounters::default(),
            abandoned: 0,
            abandoned_bytes: 0,
        }
    }

    /// The configuration (defaults resolved).
    pub fn config(&self) -> &GatewayConfig {
        &self.cfg
    }

    /// Bytes held for all connections, and of those the bytes the server considers
    /// delivered (what a stop now would lose). O(connections): for reports, not per
    /// packet.
    pub fn held_totals(&self) -> (u64, u64) {
        match &self.conns {
            Conns::Spoof(cs) => cs.values().fold((0, 0), |(h, u), c| {
                (h + c.held_bytes(), u + c.unsent_acked_bytes())
            }),
            Conns::Split(cs) => {
                let u: u64 = cs.values().map(|c| c.unsent_acked_bytes()).sum();
                (u, u)
            }
        }
    }

    /// Spoof mode: handshakes in progress (SYNs without their answer, and connections
    /// whose opener has not acknowledged the answer yet).
    pub fn half_open(&self) -> usize {
        self.hs.in_progress()
    }

    /// Of those, from client address `a`.
    pub fn half_open_from(&self, a: [u8; 4]) -> usize {
        self.hs.from(a)
    }

    /// Handshakes refused over the limits and forgotten unfinished.
    pub fn handshake_counters(&self) -> &handshake::HandshakeCounters {
        &self.hs.stats
    }

    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Connections in the table.
    pub fn conns(&self) -> usize {
        match &self.conns {
            Conns::Spoof(m) => m.len(),
            Conns::Split(m) => m.len(),
        }
    }

    /// Bytes currently held for a connection (tests).
    pub fn held_bytes(&self, k: &ConnKey) -> Option<u64> {
        match &self.conns {
            Conns::Spoof(m) => m.get(k).map(|c| c.held_bytes()),
            Conns::Split(_) => None,
        }
    }

    /// The window a connection would now advertise to the server in the client's name,
    /// bytes (tests).
    pub fn advertised(&self, k: &ConnKey) -> Option<u64> {
        let Conns::Spoof(m) = &self.conns else {
            return None;
        };
        let mem = self
            .shared
            .as_ref()
            .map_or(spoof::MemShare::UNLIMITED, |sh| sh.mem(m.len()));
        m.get(k).map(|c| c.free_window(&self.cfg, mem))
    }

    /// Shared mode: bytes in flight over the satellite and bytes of memory reserved,
    /// all connections (tests, metrics).
    pub fn shared_use(&self) -> Option<(u64, u64)> {
        self.shared.as_ref().map(|s| (s.pipe, s.reserved))
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        let mut t = self.cfg.fail_at.filter(|_| !self.failed);
        let mut m = |x: SimTime| t = Some(t.map_or(x, |y: SimTime| y.min(x)));
        if let Some(&(x, _)) = self.idx.timers.first() {
            m(x);
        }
        if let Some(sh) = &self.shared {
            if sh.pace.is_some() && sh.pipe < sh.budget && !self.idx.eligible.is_empty() {
                m(sh.next_send_at);
            }
        }
        t
    }

    /// A packet crossing the gateway in direction `dir`; what to forward or originate
    /// goes to `out` (routed by destination address).
    pub fn on_packet(&mut self, now: SimTime, dir: Dir, pkt: P, out: &mut Vec<P>) {
        self.check_failure(now);
        if self.failed {
            return; // a dead box forwards nothing
        }
        let k = key(dir, pkt.hdr());
        let flags = pkt.hdr().seg.flags;
        let cfg = &self.cfg;
        let st = &mut self.stats;
        match &mut self.conns {
            Conns::Spoof(cs) => {
                Self::expire_handshakes(
                    cs,
                    &mut self.idx,
                    &mut self.shared,
                    &mut self.hs,
                    st,
                    cfg,
                    now,
                );
                if flags & RST != 0 {
                    Self::spoof_rst(
                        cs,
                        &mut self.idx,
                        &mut self.shared,
                        &mut self.hs,
                        &mut self.faults,
                        st,
                        cfg,
                        (k, dir),
                        pkt,
                        out,
                    );
                    return;
                }
                let mut pkt = pkt;
                if flags & SYN != 0 {
                    if let Some(c) = cs.get(&k) {
                        if c.syn_conflicts(dir, pkt.hdr()) {
                            if !c.holds_nothing() {
                                // RFC 5961 §4: the end host answers it (a challenge
                                // ACK); the gateway's state stays
                                self.faults.syn_conflicts += 1;
                                out.push(pkt);
                                return;
                            }
                            // nothing held: a new connection on the same ports
                            let c = cs.remove(&k).expect("present");
                            Self::unlink(&mut self.idx, &mut self.shared, &mut self.hs, st, k, &c);
                        }
                    }
                    if !cs.contains_key(&k) {
                        if flags & ACK == 0 {
                            // an opening SYN: no connection until its answer
                            if self.hs.syn(
                                k,
                                dir,
                                pkt.hdr(),
                                now,
                                cfg.max_half_open,
                                cfg.half_open_per_source,
                            ) {
                                spoof::rewrite_syn(cfg, dir, &mut pkt);
                            }
                            out.push(pkt);
                            Self::refresh_eligible(&mut self.idx, self.shared.as_ref(), cs);
                            return;
                        }
                        // the answer: the connection starts (embryonic)
                        let Some(h) = self.hs.answer(k, dir, now) else {
                            out.push(pkt); // not a handshake the gateway saw
                            return;
                        };
                        if cs.len() >= cfg.max_conns {
                            st.conns_refused += 1;
                            self.hs.embryo_gone(k);
                            out.push(pkt);
                            return;
                        }
                        let mut c = spoof::Conn::new(cfg, k, h.dir, now);
                        let mem = spoof::MemShare::UNLIMITED;
                        let mut learnt = Vec::new();
                        let syn = P::made(h.syn);
                        c.on_packet(cfg, self.window, mem, st, now, h.dir, syn, &mut learnt);
                        cs.insert(k, c);
                        st.conns_opened += 1;
                    }
                }
                let n = cs.len();
                let Some(c) = cs.get_mut(&k) else {
                    out.push(pkt); // not a connection we track: pass through
                    return;
                };
                let before = Part::of(c);
                let was_established = c.established();
                let mem = self
                    .shared
                    .as_ref()
                    .map_or(spoof::MemShare::UNLIMITED, |sh| sh.mem(n));
                c.on_packet(cfg, self.window, mem, st, now, dir, pkt, out);
                if !was_established && c.established() {
                    self.hs.embryo_gone(k);
                }
                let closed = c.closed();
                if let Some(sh) = &mut self.shared {
                    sh.account(before, (!closed).then_some(&*c));
                }
                if closed {
                    let armed = c.armed;
                    cs.remove(&k);
                    self.idx.forget(k, armed);
                    st.conns_closed += 1;
                } else {
                    let t = c.next_timer(cfg, self.window);
                    let mut armed = c.armed;
                    self.idx.arm(k, &mut armed, t);
                    c.armed = armed;
                    if self.shared.is_some() {
                        Self::mark_eligible(&mut self.idx, k, c);
                    }
                }
                Self::refresh_eligible(&mut self.idx, self.shared.as_ref(), cs);
                self.pump(now, out);
            }
            Conns::Split(cs) => {
                if flags & RST != 0 {
                    if let Some(c) = cs.remove(&k) {
                        st.conns_closed += 1;
                        self.idx.forget(k, c.armed);
                    }
                    out.push(pkt);
                    return;
                }
                let split = cfg.split.as_ref().expect("split mode");
                let scratch = &mut self.scratch;
                if flags & SYN != 0 && dir == Dir::ToClient && !cs.contains_key(&k) {
                    if cs.len() >= cfg.max_conns {
                        st.conns_refused += 1;
                    } else {
                        let c = split::SplitConn::new(cfg, split, k, pkt.hdr(), now, scratch);
                        cs.insert(k, c);
                        st.conns_opened += 1;
                    }
                }
                let Some(c) = cs.get_mut(&k) else {
                    out.extend(scratch.drain(..).map(P::made));
                    out.push(pkt);
                    return;
                };
                c.on_packet(st, now, dir, pkt.hdr(), scratch);
                out.extend(scratch.drain(..).map(P::made));
                let t = c.next_timer(cfg);
                let mut armed = c.armed;
                self.idx.arm(k, &mut armed, t);
                c.armed = armed;
            }
        }
    }

    /// Shared mode: whether connection `k` may send under the index's fair share.
    fn mark_eligible(idx: &mut Index, k: ConnKey, c: &spoof::Conn<P>) {
        if c.wants_send(idx.limit) {
            idx.eligible.insert(k);
        } else {
            idx.eligible.remove(&k);
        }
    }

    /// Shared mode: after the fair share changed (a connection started or stopped
    /// holding data), which connections may send — the only pass over the table, and
    /// only then.
    fn refresh_eligible(
        idx: &mut Index,
        sh: Option<&Shared>,
        cs: &BTreeMap<ConnKey, spoof::Conn<P>>,
    ) {
        let Some(sh) = sh else { return };
        let limit = sh.limit();
        if limit == idx.limit {
            return;
        }
        idx.limit = limit;
        idx.eligible.clear();
        for (&k, c) in cs {
            if c.wants_send(limit) {
                idx.eligible.insert(k);
            }
        }
    }

    /// Shared mode: send while the pacer, the budget and some connection's fair share
    /// allow, one segment at a time, the connections in round robin.
    fn pump(&mut self, now: SimTime, out: &mut Vec<P>) {
        let (Some(sh), Conns::Spoof(cs)) = (&mut self.shared, &mut self.conns) else {
            return;
        };
        let idx = &mut self.idx;
        while sh.next_send_at <= now && sh.pipe < sh.budget {
            let pick = match sh.cursor {
                Some(cur) => idx
                    .eligible
                    .range((Excluded(cur), Unbounded))
                    .next()
                    .or_else(|| idx.eligible.range(..=cur).next()),
                None => idx.eligible.first(),
            };
            let Some(&k) = pick else { break };
            let c = cs
                .get_mut(&k)
                .expect("an eligible connection is in the table");
            let before = Part::of(c);
            let sent = c.send_one(&mut self.stats, now, out);
            sh.account(before, Some(c));
            let t = c.next_timer(&self.cfg, self.window);
            let mut armed = c.armed;
            idx.arm(k, &mut armed, t);
            c.armed = armed;
            Self::mark_eligible(idx, k, c);
            Self::refresh_eligible(idx, Some(sh), cs);
            sh.cursor = Some(k);
            match (sent, sh.pace) {
                (Some(size), Some(r)) => {
                    // from the schedule, unless it is further behind than the catch-up
                    // allows (with none: from now, as the pacer always did)
                    let behind = SimTime(now.0.saturating_sub(self.cfg.pace_catchup.0));
                    sh.next_send_at = sh.next_send_at.max(behind) + r.tx_time(size as u64);
                }
                (Some(_), None) => {}
                (None, _) => break,
            }
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<P>) {
        self.check_failure(now);
        if self.failed {
            return;
        }
        let idle = self.cfg.idle_timeout;
        let abandon = self.cfg.abandon_timeout;
        let st = &mut self.stats;
        // Only the connections whose deadline has come: in key order, as a pass over
        // the whole table would visit them (the others have nothing due).
        let due = self.idx.due(now);
        match &mut self.conns {
            Conns::Spoof(cs) => {
                for &k in &due {
                    let c = cs.get_mut(&k).expect("an armed connection is in the table");
                    c.armed = None;
                    let before = Part::of(c);
                    c.on_timer(&self.cfg, self.window, st, now, out);
                    if let Some(sh) = &mut self.shared {
                        sh.account(before, Some(c));
                    }
                }
                for &k in &due {
                    let c = cs.get_mut(&k).expect("in the table");
                    let idle_gone = c.idle(now, idle);
                    let abandoned = !idle_gone && c.abandoned(now, abandon);
                    if idle_gone || abandoned {
                        if abandoned {
                            // given up: both sides reset, at the numbers they expect
                            c.rsts(out);
                            self.faults.resets_sent += 1;
                            self.abandoned += 1;
                            self.abandoned_bytes += c.unsent_acked_bytes();
                            self.faults.fins_undelivered += c.fin_undelivered() as u64;
                        }
                        c.armed = None; // disarmed by `due`
                        let c = cs.remove(&k).expect("present");
                        Self::unlink(&mut self.idx, &mut self.shared, &mut self.hs, st, k, &c);
                        continue;
                    }
                    let t = c.next_timer(&self.cfg, self.window);
                    let mut armed = None;
                    self.idx.arm(k, &mut armed, t);
                    c.armed = armed;
                    if self.shared.is_some() {
                        Self::mark_eligible(&mut self.idx, k, c);
                    }
                }
                Self::refresh_eligible(&mut self.idx, self.shared.as_ref(), cs);
                self.pump(now, out);
            }
            Conns::Split(cs) => {
                let scratch = &mut self.scratch;
                for &k in &due {
                    let c = cs.get_mut(&k).expect("an armed connection is in the table");
                    c.armed = None;
                    c.on_timer(st, now, scratch);
                    out.extend(scratch.drain(..).map(P::made));
                }
                for &k in &due {
                    let c = cs.get_mut(&k).expect("in the table");
                    if c.idle(now, idle) {
                        cs.remove(&k);
                        st.conns_closed += 1;
                        continue;
                    }
                    let t = c.next_timer(&self.cfg);
                    let mut armed = None;
                    self.idx.arm(k, &mut armed, t);
                    c.armed = armed;
                }
            }
        }
    }

    fn check_failure(&mut self, now: SimTime) {
        if self.failed || self.cfg.fail_at.is_none_or(|f| now < f) {
            return;
        }
        self.failed = true;
        self.stats.failed = Last(true);
        self.stats.lost_on_failure_bytes += match &self.conns {
            Conns::Spoof(cs) => cs.values().map(|c| c.unsent_acked_bytes()).sum::<u64>(),
            Conns::Split(cs) => cs.values().map(|c| c.unsent_acked_bytes()).sum::<u64>(),
        };
        match &mut self.conns {
            Conns::Spoof(cs) => cs.clear(),
            Conns::Split(cs) => cs.clear(),
        }
        self.idx = Index::default();
        self.hs.clear();
        if let Some(sh) = &mut self.shared {
            (sh.pipe, sh.reserved, sh.active) = (0, 0, 0);
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_faults;
