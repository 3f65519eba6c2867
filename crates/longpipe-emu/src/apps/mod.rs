//! The workload kinds (`web`, `request-response`, `onoff`, `stream`, `arrivals`) and
//! `read_rate` on real sockets, driven by the SAME sans-IO state machines as the
//! simulator ([`longpipe_core::app`]: the active application built by
//! [`longpipe_core::sim::workload::application`] from the run's seed, and the passive
//! [`Server`]); this module only carries their events and actions on sockets, as
//! [`longpipe_core::sim::apps`] does on the simulator's TCP endpoints.
//!
//! Processes: the unprivileged ferry runs one thread per application flow. The flow's
//! listening socket (at the passive node, the flow's receiver port) is made by the
//! privileged parent before the ferry starts; every connection the active application
//! opens needs a socket in the active node's namespace, which only the parent can
//! enter: the thread asks it over a Unix socket ([`request_socket`]), and the parent
//! ([`Broker::serve`]) makes one (the flow's congestion control, MSS and, at `dst`,
//! receive buffer), binds it to the node's address and an ephemeral port (port 0: each
//! connection its own 4-tuple) and passes it back with `SCM_RIGHTS`.
//!
//! Framing ([`Header`]): each message the active side writes is a 32-byte header
//! (magic `LPM1`, tag, length, reply size, birth time) followed by `len` payload bytes;
//! the passive side learns the message when its last payload byte is read, as the
//! simulator's frame queue tells it. Replies (passive to active) are raw bytes: the
//! active application counts them itself. Byte counts are the applications':
//! `bytes_delivered` and goodput count payload bytes read by the application at `dst`,
//! never header bytes (a request carries 32 bytes more on the wire than in the
//! records; the simulator carries none). `Unlimited` writes (onoff) go out as
//! 64 KiB data messages, one after another; switching off finishes the message being
//! written and leaves what the kernel holds in its send buffer to drain (the simulator
//! drops the unsent part).
//!
//! Time: ns since the ferry's time zero ([`Times`]) is the application's `SimTime`.
//! A timer event is handed over at the time the application asked for (or the last
//! time it saw, if later), not at the moment the thread woke up: an arrivals source or
//! a reading time schedules the next from it, and wake-up lateness does not accumulate
//! (arrival k happens at the simulator's time; the actions are carried out at once).
//!
//! `read_rate`: the end at `dst` reads each connection at that rate (a credit of
//! bytes that grows with time, capped at max(5 ms of reading, 1500 B)); what it leaves
//! unread fills the kernel's receive buffer, whose advertised window closes.
//!
//! Parts: [`frame`] (the header), [`broker`] (the parent's side: listeners, sockets
//! on request), [`conn`] (a connection end: writing, reading, the slow reader),
//! [`results`] (the result fields); here the thread that drives a flow.
//!
//! Counters: `segments_sent`, `retransmitted_segments`, `timeouts`, from `TCP_INFO`
//! of the `src` ends of the connections (read when a connection closes and at the
//! end, less what a connection open at the warmup had then); `fast_recoveries` and
//! `mean_rtt_s` from samples every 5 ms (flows.rs samples bulk flows every 1 ms).

mod broker;
mod conn;
mod frame;
mod results;

pub use broker::{ends, is_app, make_listener, request_socket, Broker};
pub use conn::Reader;
pub use frame::{Deframer, Header, HEADER_LEN};
pub use results::{flow_result, records, records_json};

use crate::flows::{TcpInfo, Times, TCP_CA_LOSS, TCP_CA_RECOVERY};
use crate::linux::FlowMap;
use crate::sys;
use conn::{read_in, write_out, Conn, End, Piece};
use longpipe_core::app::io::{Action, App, ConnId, Event, Msg, Record, Tag};
use longpipe_core::app::server::Server;
use longpipe_core::scenario::ValidScenario;
use longpipe_core::sim::workload;
use longpipe_core::time::SimTime;
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// TCP_INFO sampling period (recoveries, RTT), ns.
const SAMPLE_NS: u64 = 5_000_000;

#[derive(Default, Clone)]
pub(super) struct Counts {
    pub(super) read: u64,
    pub(super) segs: u64,
    pub(super) retrans: u64,
    pub(super) rto: u64,
    pub(super) loss_entries: u64,
    pub(super) recoveries: u64,
    pub(super) rtt_sum_us: u64,
    pub(super) rtt_n: u64,
}

/// What one application flow's thread reports.
#[derive(Default)]
pub struct AppOutcome {
    pub records: Vec<Record>,
    pub(super) counts: Counts,
    pub errors: Vec<String>,
}

struct Driver {
    flow: FlowMap,
    tm: Times,
    ch: Arc<Mutex<UnixStream>>,
    app: Box<dyn App>,
    server: Server,
    dst_opens: bool,
    read_bps: Option<u64>,
    passive_addr: [u8; 4],
    /// The listener's port.
    port: u16,
    slots: usize,
    conns: Vec<Conn>,
    next_passive: ConnId,
    /// Opened connections waiting for a free slot, with their later actions.
    waiting: VecDeque<(ConnId, Vec<Action>)>,
    records: Vec<Record>,
    /// Transfers written and not yet recorded whole by the passive side.
    transfers: Vec<Msg>,
    counts: Counts,
    errors: Vec<String>,
    warm: bool,
    /// The latest time an application was handed (their clock never goes back).
    last: u64,
}

impl Driver {
    fn active_open(&self) -> usize {
        self.conns.iter().filter(|c| c.end == End::Active).count()
    }

    fn find(&mut self, id: ConnId, end: End) -> Option<&mut Conn> {
        self.conns.iter_mut().find(|c| c.id == id && c.end == end)
    }

    fn new_conn(&self, s: TcpStream, id: ConnId, end: End, connected: bool) -> Conn {
        let at_src = (end == End::Active) != self.dst_opens;
        Conn {
            s,
            id,
            end,
            connected,
            out: VecDeque::new(),
            unlimited: false,
            close_after: false,
            shut: false,
            peer_closed: false,
            told_peer_closed: false,
            deframer: Deframer::default(),
            at_src,
            reader: match (at_src, self.read_bps) {
                (false, Some(bps)) => Some(Reader::new(bps, self.tm.now())),
                _ => None,
            },
            base: (self.warm && at_src).then(TcpInfo::default),
            prev_ca: 0,
        }
    }

    fn dispatch(&mut self, now: u64, end: End, ev: Event) {
        self.last = self.last.max(now);
        let now = self.last;
        let mut acts = Vec::new();
        match end {
            End::Active => self.app.handle(SimTime(now), ev, &mut acts),
            End::Passive => self.server.handle(SimTime(now), ev, &mut acts),
        }
        self.act(end, acts);
    }

    /// Carries out actions as [`longpipe_core::sim::apps`] does: an `Open` beyond the
    /// flow's connection slots waits, with the actions on it that follow, for a
    /// connection to close.
    fn act(&mut self, end: End, acts: Vec<Action>) {
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
                Action::Record(r) => {
                    if let Record::Transfer {
                        start,
                        end: Some(_),
                        bytes,
                    } = r
                    {
                        if let Some(i) = self
                            .transfers
                            .iter()
                            .position(|m| m.born == start && m.len == bytes)
                        {
                            self.transfers.swap_remove(i);
                        }
                    }
                    self.records.push(r)
                }
                Action::Open(id) => {
                    if end != End::Active {
                        continue;
                    }
                    if self.active_open() >= self.slots {
                        self.waiting.push_back((id, Vec::new()));
                        held = Some(id);
                        continue;
                    }
                    if let Err(e) = self.open(id) {
                        self.errors
                            .push(format!("flow {}: open: {e}", self.flow.id));
                    }
                }
                Action::Write { conn, msg } => {
                    let framed = end == End::Active;
                    if framed && msg.tag == Tag::Transfer {
                        self.transfers.push(msg);
                    }
                    if let Some(c) = self.find(conn, end) {
                        if framed {
                            c.out.push_back(Piece::Bytes(Header(msg).encode(), 0));
                        }
                        c.out.push_back(Piece::Zeros(msg.len));
                    }
                }
                Action::Unlimited { conn, on } => {
                    if let Some(c) = self.find(conn, end) {
                        c.unlimited = on;
                    }
                }
                Action::Close(conn) => {
                    if let Some(c) = self.find(conn, end) {
                        c.close_after = true;
                    }
                }
            }
        }
    }

    fn open(&mut self, id: ConnId) -> io::Result<()> {
        let fd = request_socket(&self.ch, self.flow.id)?;
        let connected = match sys::connect_v4(&fd, self.passive_addr, self.port) {
            Ok(()) => true,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => false,
            Err(e) => return Err(e),
        };
        let c = self.new_conn(TcpStream::from(fd), id, End::Active, connected);
        self.conns.push(c);
        Ok(())
    }

    /// Adds what a connection's `src` end sent since its base to the counts.
    fn retire_counts(&mut self, k: usize) {
        let c = &self.conns[k];
        if !c.at_src || c.base.is_none() && !self.warm {
            return;
        }
        let Ok(l) = TcpInfo::read(&c.s) else { return };
        let b = c.base.unwrap_or_default();
        self.counts.segs += l.data_segs_out.wrapping_sub(b.data_segs_out) as u64;
        self.counts.retrans += l.total_retrans.wrapping_sub(b.total_retrans) as u64;
        if let (Some(x), Some(y)) = (b.total_rto.or(Some(0)), l.total_rto) {
            self.counts.rto += y.wrapping_sub(x) as u64;
        }
    }

    /// One pass over the connections: connects, writes, reads, closes. Events go to
    /// the applications as they happen.
    fn pump(&mut self) {
        let mut k = 0;
        while k < self.conns.len() {
            let now = self.tm.now();
            let (id, end) = (self.conns[k].id, self.conns[k].end);
            let mut evs: Vec<Event> = Vec::new();
            let mut msgs = Vec::new();
            let mut err = None;
            {
                let c = &mut self.conns[k];
                if !c.connected {
                    match c.s.take_error() {
                        Ok(Some(e)) => err = Some(format!("connect: {e}")),
                        Err(e) => err = Some(format!("connect: {e}")),
                        Ok(None) => {
                            if c.s.peer_addr().is_ok() {
                                c.connected = true;
                                evs.push(Event::Connected(id));
                            }
                        }
                    }
                }
                if c.connected && err.is_none() {
                    if let Err(e) = write_out(c) {
                        err = Some(format!("write: {e}"));
                    }
                    if err.is_none() && !c.peer_closed {
                        match read_in(c, now, &mut msgs) {
                            Ok((n, eof)) => {
                                if n > 0 {
                                    if !c.at_src && now >= self.tm.warmup {
                                        self.counts.read += n;
                                    }
                                    if end == End::Active {
                                        evs.push(Event::Received { conn: id, bytes: n });
                                    }
                                }
                                if eof {
                                    c.peer_closed = true;
                                }
                            }
                            Err(e) => err = Some(e),
                        }
                    }
                }
            }
            if let Some(e) = err {
                self.errors
                    .push(format!("flow {} connection {id}: {e}", self.flow.id));
                self.retire_counts(k);
                self.conns.remove(k);
                self.after_close(end);
                continue;
            }
            for m in msgs {
                evs.push(Event::Message { conn: id, msg: m });
            }
            // the peer's FIN after the bytes before it, reported once
            if self.conns[k].peer_closed && !self.conns[k].told_peer_closed {
                self.conns[k].told_peer_closed = true;
                evs.push(Event::PeerClosed(id));
            }
            for ev in evs {
                self.dispatch(now, end, ev);
            }
            // our direction closes once everything written has gone to the kernel
            let c = &mut self.conns[k];
            if c.close_after && !c.shut && c.out.is_empty() && !c.unlimited {
                let _ = c.s.shutdown(Shutdown::Write);
                c.shut = true;
            }
            if c.shut && c.peer_closed {
                self.retire_counts(k);
                self.conns.remove(k);
                self.dispatch(now, end, Event::Closed(id));
                self.after_close(end);
                continue;
            }
            k += 1;
        }
    }

    /// A closed active connection frees a slot: the next waiting one opens.
    fn after_close(&mut self, end: End) {
        if end != End::Active {
            return;
        }
        while self.active_open() < self.slots {
            let Some((wid, acts)) = self.waiting.pop_front() else {
                break;
            };
            let mut all = vec![Action::Open(wid)];
            all.extend(acts);
            self.act(End::Active, all);
        }
    }

    fn accept(&mut self, l: &TcpListener) {
        loop {
            match l.accept() {
                Ok((s, _)) => {
                    if let Err(e) = s.set_nonblocking(true) {
                        self.errors.push(format!("accept: {e}"));
                        continue;
                    }
                    let id = self.next_passive;
                    self.next_passive += 1;
                    let c = self.new_conn(s, id, End::Passive, true);
                    self.conns.push(c);
                    self.dispatch(self.tm.now(), End::Passive, Event::Connected(id));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.errors.push(format!("accept: {e}"));
                    return;
                }
            }
        }
    }

    /// Samples the `src` ends: recoveries, RTT; the base of each at the warmup.
    fn sample(&mut self, now: u64) {
        let crossing = !self.warm && now >= self.tm.warmup;
        if crossing {
            self.warm = true;
        }
        for c in self.conns.iter_mut().filter(|c| c.at_src) {
            let Ok(info) = TcpInfo::read(&c.s) else {
                continue;
            };
            if crossing {
                c.base = Some(info);
            }
            if self.warm {
                if info.ca_state == TCP_CA_RECOVERY && c.prev_ca != TCP_CA_RECOVERY {
                    self.counts.recoveries += 1;
                }
                if info.ca_state == TCP_CA_LOSS && c.prev_ca != TCP_CA_LOSS {
                    self.counts.loss_entries += 1;
                }
                if info.rtt_us > 0 && c.connected {
                    self.counts.rtt_sum_us += info.rtt_us as u64;
                    self.counts.rtt_n += 1;
                }
            }
            c.prev_ca = info.ca_state;
        }
    }

    fn run(mut self, listen: OwnedFd, stop: Arc<AtomicBool>) -> AppOutcome {
        let l = TcpListener::from(listen);
        if let Err(e) = l.set_nonblocking(true) {
            self.errors.push(format!("listen: {e}"));
        }
        let mut started = false;
        let mut next_sample = 0;
        loop {
            let now = self.tm.now();
            if stop.load(Ordering::Relaxed) || now >= self.tm.end {
                break;
            }
            if now >= next_sample {
                self.sample(now);
                next_sample = now + SAMPLE_NS;
            }
            if !started && now >= self.flow.start_ns {
                started = true;
                // (at its start time, as a timer below)
                self.dispatch(self.flow.start_ns, End::Active, Event::Start);
            } else if let Some(t) = self.app.next_timer().filter(|t| started && t.0 <= now) {
                // at the time it asked for (never before an event it has seen): what it
                // schedules from it keeps its own clock, not the wake-up's lateness
                self.dispatch(t.0.max(self.last), End::Active, Event::Timer);
            }
            self.accept(&l);
            self.pump();
            // wait for the sockets, the application's timer, a reader's credit
            let mut wake = next_sample.min(self.tm.end);
            if !started {
                wake = wake.min(self.flow.start_ns);
            } else if let Some(t) = self.app.next_timer() {
                wake = wake.min(t.0);
            }
            let mut fds = vec![libc::pollfd {
                fd: l.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            for c in &self.conns {
                let mut ev = 0;
                if !c.connected || !c.out.is_empty() || c.unlimited {
                    ev |= libc::POLLOUT;
                }
                if !c.peer_closed {
                    match &c.reader {
                        Some(r) if r.bytes() == 0 => wake = wake.min(r.wake()),
                        _ => ev |= libc::POLLIN,
                    }
                }
                fds.push(libc::pollfd {
                    fd: c.s.as_raw_fd(),
                    events: ev,
                    revents: 0,
                });
            }
            let now = self.tm.now();
            if wake > now {
                if let Err(e) = sys::ppoll(&mut fds, Some(wake - now)) {
                    self.errors.push(format!("poll: {e}"));
                    break;
                }
            }
        }
        let end = self.tm.now().min(self.tm.end);
        for k in 0..self.conns.len() {
            self.retire_counts(k);
        }
        self.app.unfinished(SimTime(end), &mut self.records);
        for (_, acts) in &self.waiting {
            for a in acts {
                if let Action::Write { msg, .. } = a {
                    if msg.tag == Tag::Transfer {
                        self.transfers.push(*msg);
                    }
                }
            }
        }
        for m in &self.transfers {
            self.records.push(Record::Transfer {
                start: m.born,
                end: None,
                bytes: m.len,
            });
        }
        AppOutcome {
            records: self.records,
            counts: self.counts,
            errors: self.errors,
        }
    }
}

/// The running application flows of a ferry process.
pub struct Running {
    threads: Vec<(usize, thread::JoinHandle<AppOutcome>)>,
    stop: Arc<AtomicBool>,
}

/// Starts a thread for each application flow (`flows` with their listening sockets
/// and ports);
/// `ch` is the ferry's end of the socket channel, `seed` the run's.
pub fn start(
    sc: &ValidScenario,
    seed: u64,
    flows: Vec<(FlowMap, OwnedFd, u16)>,
    ch: UnixStream,
    tm: Times,
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let ch = Arc::new(Mutex::new(ch));
    let mut threads = Vec::new();
    for (f, listen, port) in flows {
        let info = &sc.flows[f.id];
        let (_, p) = ends(sc, f.id);
        let d = Driver {
            tm,
            ch: ch.clone(),
            app: workload::application(info, seed),
            server: Server,
            dst_opens: info.app.dst_opens(),
            read_bps: info.app.read_rate.map(|r| r.bps()),
            passive_addr: longpipe_core::net::packet::node_addr(p),
            port,
            slots: info.app.slots() as usize,
            conns: Vec::new(),
            next_passive: 0,
            waiting: VecDeque::new(),
            records: Vec::new(),
            transfers: Vec::new(),
            counts: Counts::default(),
            errors: Vec::new(),
            warm: tm.warmup == 0,
            last: 0,
            flow: f,
        };
        let st = stop.clone();
        let id = d.flow.id;
        threads.push((id, thread::spawn(move || d.run(listen, st))));
    }
    Running { threads, stop }
}

impl Running {
    /// Stops the threads; each flow's outcome by flow id.
    pub fn finish(self) -> BTreeMap<usize, AppOutcome> {
        self.stop.store(true, Ordering::Relaxed);
        let mut out = BTreeMap::new();
        for (id, h) in self.threads {
            let o = h.join().unwrap_or_else(|_| AppOutcome {
                errors: vec![format!("flow {id} application: panicked")],
                ..Default::default()
            });
            out.insert(id, o);
        }
        out
    }
}
