//! The simulator's element for one flow's application ([`AppElement`]): both ends of
//! the flow — the active application (a web client, a stream client, an arrivals
//! source) and the passive [`Server`] — each on its node, driven on two-way TCP
//! connections ([`Duplex`]).
//!
//! Ports: the flow has `slots` connection slots; slot k is port 2k at the active
//! application's node and port 2k + 1 at the passive one's, each a fixed 4-tuple (so a
//! node's forwarding table has one entry per slot). An opened connection takes a free
//! slot (an `arrivals` flow waits for one when all are busy); a slot is free again once
//! its connection is closed in both directions, and the next connection in it has a new
//! initial sequence number (TIME-WAIT is not modelled: its old segments cannot pass as
//! the new connection's, whose sequence space is elsewhere).
//!
//! Messages cross as the applications' framing would carry them: the active side's
//! messages wait beside the slot ([`Msg`] and where it ends in the byte stream) until
//! the passive side has read that far. Both applications see only events and answer
//! with actions ([`crate::app::io`]); nothing here decides what they do.
//!
//! Connections restart from a small window after an idle period (a web page after its
//! reading time), as the flow's stack does ([`Duplex::set_idle_restart`]).
//!
//! Counters: bytes the application at `dst` read (goodput), and the sending counters
//! (segments, retransmissions, timeouts, recoveries, RTT samples) of the connections'
//! `src` ends: the direction that carries the flow's data.

use crate::app::io::{Action, App, ConnId, Event, Msg, Record, Tag};
use crate::app::server::Server;
use crate::element::{Element, Emit, PortId};
use crate::net::packet::Packet;
use crate::rng::{stable_hash, RngStream};
use crate::tcp::config::TcpKind;
use crate::tcp::duplex::Duplex;
use crate::tcp::endpoint::{Addrs, Endpoint, Side};
use crate::tcp::profile::TcpProfile;
use crate::tcp::receiver::Receiver;
use crate::tcp::seg::{ACK, SYN};
use crate::tcp::sender::{Sender, SenderCounters};
use crate::time::{Rate, SimTime};
use crate::unit::Unit;
use std::collections::{BTreeMap, VecDeque};

crate::counters! {
    /// One application flow's counters.
    pub struct AppCounters {
        /// Bytes the application at `dst` read.
        pub read: u64,
        /// The `src` ends' sending counters, all connections.
        pub sender: SenderCounters,
    }
}

/// Adds `b`'s counts to `a` (connections come and go; their counts stay).
fn add(a: &mut SenderCounters, b: &SenderCounters) {
    a.segments_sent += b.segments_sent;
    a.retransmitted_segments += b.retransmitted_segments;
    a.timeouts += b.timeouts;
    a.fast_recoveries += b.fast_recoveries;
    a.extra.probe_segments += b.extra.probe_segments;
    a.extra.probe_acks += b.extra.probe_acks;
    a.extra.ecn_reductions += b.extra.ecn_reductions;
    a.rtt_sum_ns += b.rtt_sum_ns;
    a.rtt_samples += b.rtt_samples;
}

/// What the element needs to build a connection's ends.
pub struct ConnSpec {
    pub tcp: TcpProfile,
    pub seed: u64,
    /// The application at `dst` reads at this rate.
    pub read_rate: Option<Rate>,
}

struct Conn {
    ep: Endpoint,
    id: ConnId,
    /// Bytes read, as reported to the application.
    read: u64,
    /// Bytes written.
    written: u64,
    connected: bool,
    acked: bool,
    peer_closed: bool,
    closed: bool,
}

impl Conn {
    fn new(ep: Endpoint, id: ConnId) -> Self {
        Conn {
            ep,
            id,
            read: 0,
            written: 0,
            connected: false,
            acked: false,
            peer_closed: false,
            closed: false,
        }
    }
}

struct Slot {
    /// (active end, passive end)
    addrs: (Addrs, Addrs),
    /// Connections opened in this slot so far.
    gen: u32,
    active: Option<Conn>,
    passive: Option<Conn>,
    /// The generation the passive end belongs to.
    passive_gen: u32,
    /// Messages of the active side in flight to the passive one: (stream offset of
    /// their end, message).
    frames: VecDeque<(u64, Msg)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Active,
    Passive,
}

pub struct AppElement {
    pub flow: usize,
    spec: ConnSpec,
    /// The active application runs at `dst` (a client) rather than at `src`.
    dst_opens: bool,
    start: SimTime,
    started: bool,
    app: Box<dyn App>,
    server: Server,
    slots: Vec<Slot>,
    /// The slot of each open connection.
    conn_slot: BTreeMap<ConnId, usize>,
    free: VecDeque<usize>,
    /// Connections waiting for a free slot, with the actions that followed their opening.
    waiting: VecDeque<(ConnId, Vec<Action>)>,
    records: Vec<Record>,
    /// Counts of connections that are gone.
    retired: AppCounters,
    wake: Option<SimTime>,
    pkts: Vec<Packet>,
}

impl AppElement {
    /// `addrs[k]` are slot k's (active, passive) addresses and ports.
    pub fn new(
        flow: usize,
        spec: ConnSpec,
        dst_opens: bool,
        start: SimTime,
        app: Box<dyn App>,
        addrs: Vec<(Addrs, Addrs)>,
    ) -> Self {
        let n = addrs.len();
        let mut e = AppElement {
            flow,
            spec,
            dst_opens,
            start,
            started: false,
            app,
            server: Server,
            slots: addrs
                .into_iter()
                .map(|a| Slot {
                    addrs: a,
                    gen: 0,
                    active: None,
                    passive: None,
                    passive_gen: 0,
                    frames: VecDeque::new(),
                })
                .collect(),
            conn_slot: BTreeMap::new(),
            free: (0..n).collect(),
            waiting: VecDeque::new(),
            records: Vec::new(),
            retired: AppCounters::default(),
            wake: None,
            pkts: Vec::new(),
        };
        e.wake = Some(start);
        e
    }

    /// The records so far, and those of what is unfinished at `now` (end of run).
    pub fn take_records(&mut self, now: SimTime) -> Vec<Record> {
        let mut r = std::mem::take(&mut self.records);
        self.app.unfinished(now, &mut r);
        // transfers written but not yet read whole, and those waiting for a slot
        let waiting = self.waiting.iter().flat_map(|(_, acts)| {
            acts.iter().filter_map(|a| match a {
                Action::Write { msg, .. } => Some(*msg),
                _ => None,
            })
        });
        let framed = self.slots.iter().flat_map(|s| s.frames.iter().map(|f| f.1));
        for m in framed.chain(waiting) {
            if m.tag == Tag::Transfer {
                r.push(Record::Transfer {
                    start: m.born,
                    end: None,
                    bytes: m.len,
                });
            }
        }
        r
    }

    fn isn(&self, k: usize, gen: u32, end: End) -> u32 {
        let e = if end == End::Active { "a" } else { "p" };
        stable_hash(&format!("app-isn/{}/{k}/{gen}/{e}", self.flow)) as u32
    }

    /// A connection end: the flow's TCP in both halves; the `dst` end reads at the
    /// application's rate.
    fn endpoint(&self, k: usize, end: End, now: SimTime) -> Endpoint {
        let s = &self.slots[k];
        let name = format!("flow/{}/slot/{k}/{}/{}/cc", self.flow, s.gen, end as u8);
        let cc = self
            .spec
            .tcp
            .cc
            .build_seeded(RngStream::new(self.spec.seed, &name).next_u64());
        let tx = Sender::new_streaming(self.spec.tcp, cc);
        let mut rx = Receiver::new(self.spec.tcp, None);
        let at_dst = (end == End::Active) == self.dst_opens;
        if let (true, Some(r)) = (at_dst, self.spec.read_rate) {
            rx.set_read_rate(r);
        }
        let (mut d, addrs, start) = match end {
            End::Active => (Duplex::active(tx, rx), s.addrs.0, Some(now)),
            End::Passive => (Duplex::passive(tx, rx), s.addrs.1, None),
        };
        // restart after idle, as the stack the flow models does (not for BBR, whose
        // own control handles idle periods, as in Linux)
        if self.spec.tcp.tcp != TcpKind::Bbr {
            d.set_idle_restart(self.spec.tcp.linux());
        }
        Endpoint::new(
            Side::Duplex(Box::new(d)),
            addrs,
            self.isn(k, s.gen, end),
            start,
        )
    }

    fn conn_mut(&mut self, k: usize, end: End) -> Option<&mut Conn> {
        let s = &mut self.slots[k];
        match end {
            End::Active => s.active.as_mut(),
            End::Passive => s.passive.as_mut(),
        }
    }

    fn port(k: usize, end: End) -> PortId {
        (2 * k + (end == End::Passive) as usize) as PortId
    }

    /// Moves what an endpoint of slot `k` sent to the element's output.
    fn emit(&mut self, k: usize, end: End, out: &mut Vec<Emit<Unit>>) {
        let port = Self::port(k, end);
        out.extend(self.pkts.drain(..).map(|p| Emit::Now {
            port,
            unit: Unit::Packet(p),
        }));
    }

    /// What changed on a connection end, as events.
    fn poll(&mut self, k: usize, end: End, evs: &mut Vec<Event>) {
        let Some(c) = self.conn_mut(k, end) else {
            return;
        };
        let id = c.id;
        let d = c.ep.duplex().expect("application connections are two-way");
        let mut msgs = 0;
        if !c.connected && d.established() {
            c.connected = true;
            evs.push(Event::Connected(id));
        }
        let read = d.rx.delivered();
        if read > c.read {
            let n = read - c.read;
            c.read = read;
            match end {
                End::Active => evs.push(Event::Received { conn: id, bytes: n }),
                End::Passive => msgs = read,
            }
        }
        let all_acked = c.written > 0 && d.tx.tx.snd_una > c.written;
        if all_acked && !c.acked {
            evs.push(Event::Acked(id));
        }
        c.acked = all_acked;
        if !c.peer_closed && d.rx.fin_received() {
            c.peer_closed = true;
            evs.push(Event::PeerClosed(id));
        }
        let closed = !c.closed && d.closed();
        if closed {
            c.closed = true;
        }
        if msgs > 0 {
            let f = &mut self.slots[k].frames;
            let mut new = Vec::new();
            while f.front().is_some_and(|m| m.0 <= msgs) {
                new.push(f.pop_front().expect("checked").1);
            }
            // messages before PeerClosed and Closed, as the bytes came first
            let at = evs
                .iter()
                .position(|e| matches!(e, Event::PeerClosed(_) | Event::Closed(_)))
                .unwrap_or(evs.len());
            for (i, m) in new.into_iter().enumerate() {
                evs.insert(at + i, Event::Message { conn: id, msg: m });
            }
        }
        if closed {
            evs.push(Event::Closed(id));
        }
    }

    /// Runs `f` on a connection end, then sends its packets and hands its events to its
    /// application.
    fn with_end(
        &mut self,
        now: SimTime,
        k: usize,
        end: End,
        out: &mut Vec<Emit<Unit>>,
        f: impl FnOnce(&mut Endpoint, &mut Vec<Packet>),
    ) {
        let mut pkts = std::mem::take(&mut self.pkts);
        if let Some(c) = self.conn_mut(k, end) {
            f(&mut c.ep, &mut pkts);
        }
        self.pkts = pkts;
        self.emit(k, end, out);
        let mut evs = Vec::new();
        self.poll(k, end, &mut evs);
        for ev in evs {
            self.dispatch(now, end, ev, out);
        }
    }

    /// Hands `ev` to the application at `end` and carries out its actions.
    fn dispatch(&mut self, now: SimTime, end: End, ev: Event, out: &mut Vec<Emit<Unit>>) {
        let mut acts = Vec::new();
        match end {
            End::Active => self.app.handle(now, ev, &mut acts),
            End::Passive => self.server.handle(now, ev, &mut acts),
        }
        self.act(now, end, acts, out);
        if let (End::Active, Event::Closed(id)) = (end, ev) {
            self.release(now, id, out);
        }
    }

    /// A closed connection frees its slot: the next waiting one takes it.
    fn release(&mut self, now: SimTime, id: ConnId, out: &mut Vec<Emit<Unit>>) {
        let Some(k) = self.conn_slot.remove(&id) else {
            return;
        };
        self.retire(k, End::Active);
        self.free.push_back(k);
        if let Some((wid, acts)) = self.waiting.pop_front() {
            let mut all = vec![Action::Open(wid)];
            all.extend(acts);
            self.act(now, End::Active, all, out);
        }
    }

    /// Keeps the counts of a connection end that is about to go.
    fn retire(&mut self, k: usize, end: End) {
        let at_src = (end == End::Active) != self.dst_opens;
        let c = match end {
            End::Active => self.slots[k].active.take(),
            End::Passive => self.slots[k].passive.take(),
        };
        let Some(c) = c else { return };
        let d = c.ep.duplex().expect("two-way");
        if at_src {
            add(&mut self.retired.sender, &d.tx.tx.stats);
        } else {
            self.retired.read += d.rx.delivered();
        }
    }

    fn act(&mut self, now: SimTime, end: End, acts: Vec<Action>, out: &mut Vec<Emit<Unit>>) {
        let mut held: Option<ConnId> = None;
        for a in acts {
            let conn = match a {
                Action::Open(c) | Action::Close(c) => Some(c),
                Action::Write { conn, .. } | Action::Unlimited { conn, .. } => Some(conn),
                Action::Record(_) => None,
            };
            if held.is_some() && conn == held {
                self.waiting.back_mut().expect("held").1.push(a);
                continue;
            }
            match a {
                Action::Record(r) => self.records.push(r),
                Action::Open(id) => {
                    if end != End::Active {
                        continue;
                    }
                    let Some(k) = self.free.pop_front() else {
                        self.waiting.push_back((id, Vec::new()));
                        held = Some(id);
                        continue;
                    };
                    self.slots[k].gen += 1;
                    self.slots[k].frames.clear();
                    let ep = self.endpoint(k, End::Active, now);
                    self.slots[k].active = Some(Conn::new(ep, id));
                    self.conn_slot.insert(id, k);
                    self.with_end(now, k, End::Active, out, |ep, p| ep.on_timeout(now, p));
                }
                Action::Write { conn, msg } => {
                    let Some(k) = self.slot_of(conn, end) else {
                        continue;
                    };
                    let Some(c) = self.conn_mut(k, end) else {
                        continue;
                    };
                    c.written += msg.len;
                    let w = c.written;
                    if end == End::Active {
                        self.slots[k].frames.push_back((w, msg));
                    }
                    self.with_end(now, k, end, out, |ep, p| {
                        ep.with_duplex(p, |d, segs| d.write(now, msg.len, segs))
                    });
                }
                Action::Unlimited { conn, on } => {
                    let Some(k) = self.slot_of(conn, end) else {
                        continue;
                    };
                    self.with_end(now, k, end, out, |ep, p| {
                        ep.with_duplex(p, |d, segs| d.set_unlimited(now, on, segs))
                    });
                }
                Action::Close(conn) => {
                    let Some(k) = self.slot_of(conn, end) else {
                        continue;
                    };
                    self.with_end(now, k, end, out, |ep, p| {
                        ep.with_duplex(p, |d, segs| d.close(now, segs))
                    });
                }
            }
        }
    }

    /// The slot of connection `id` at `end`, if that end is still this connection's.
    fn slot_of(&self, id: ConnId, end: End) -> Option<usize> {
        let k = *self.conn_slot.get(&id)?;
        let s = &self.slots[k];
        let c = match end {
            End::Active => s.active.as_ref(),
            End::Passive => s.passive.as_ref(),
        }?;
        (c.id == id).then_some(k)
    }

    fn update_wake(&mut self) {
        let mut t = if self.started {
            self.app.next_timer()
        } else {
            Some(self.start)
        };
        for s in &self.slots {
            for c in [&s.active, &s.passive].into_iter().flatten() {
                if let Some(x) = c.ep.next_timeout() {
                    t = Some(t.map_or(x, |y| y.min(x)));
                }
            }
        }
        self.wake = t;
    }

    /// The counters as of now.
    pub fn counters(&self) -> AppCounters {
        let mut c = self.retired.clone();
        for s in &self.slots {
            for (conn, end) in [(&s.active, End::Active), (&s.passive, End::Passive)] {
                let Some(conn) = conn else { continue };
                let d = conn.ep.duplex().expect("two-way");
                if (end == End::Active) != self.dst_opens {
                    add(&mut c.sender, &d.tx.tx.stats);
                } else {
                    c.read += d.rx.delivered();
                }
            }
        }
        c
    }
}

impl Element<Unit> for AppElement {
    type Metrics = AppCounters;

    fn handle(&mut self, now: SimTime, port: PortId, unit: Unit, out: &mut Vec<Emit<Unit>>) {
        let Unit::Packet(p) = unit else { return };
        let k = port as usize / 2;
        let end = if port.is_multiple_of(2) {
            End::Active
        } else {
            End::Passive
        };
        if k >= self.slots.len() {
            return;
        }
        if end == End::Passive && p.seg.flags & SYN != 0 && p.seg.flags & ACK == 0 {
            // a new connection of the slot's current generation, or its SYN again
            let s = &self.slots[k];
            let fresh = s.passive.is_none() || s.passive_gen != s.gen;
            match s.active.as_ref().map(|a| a.id) {
                Some(id) if fresh && s.gen > 0 => {
                    self.retire(k, End::Passive);
                    let ep = self.endpoint(k, End::Passive, now);
                    let s = &mut self.slots[k];
                    s.passive_gen = s.gen;
                    s.passive = Some(Conn::new(ep, id));
                }
                _ if fresh => return, // no connection opened here
                _ => {}
            }
        }
        self.with_end(now, k, end, out, |ep, o| ep.on_packet(now, &p, o));
        self.update_wake();
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.wake
    }

    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<Unit>>) {
        for k in 0..self.slots.len() {
            for end in [End::Active, End::Passive] {
                let due = match end {
                    End::Active => self.slots[k].active.as_ref(),
                    End::Passive => self.slots[k].passive.as_ref(),
                }
                .and_then(|c| c.ep.next_timeout())
                .is_some_and(|t| t <= now);
                if due {
                    self.with_end(now, k, end, out, |ep, o| ep.on_timeout(now, o));
                }
            }
        }
        if !self.started && self.start <= now {
            self.started = true;
            self.dispatch(now, End::Active, Event::Start, out);
        } else if self.started && self.app.next_timer().is_some_and(|t| t <= now) {
            self.dispatch(now, End::Active, Event::Timer, out);
        }
        self.update_wake();
    }

    fn metrics(&self, _now: SimTime) -> AppCounters {
        self.counters()
    }
}
