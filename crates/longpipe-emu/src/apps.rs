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
//! Counters: `segments_sent`, `retransmitted_segments`, `timeouts`, from `TCP_INFO`
//! of the `src` ends of the connections (read when a connection closes and at the
//! end, less what a connection open at the warmup had then); `fast_recoveries` and
//! `mean_rtt_s` from samples every 5 ms (flows.rs samples bulk flows every 1 ms).

use crate::flows::{TcpInfo, Times, TCP_CA_LOSS, TCP_CA_RECOVERY};
use crate::linux::FlowMap;
use crate::sys;
use longpipe_core::app::io::{Action, App, ConnId, Event, Msg, Record, Tag};
use longpipe_core::app::records::AppRecords;
use longpipe_core::app::server::Server;
use longpipe_core::results::FlowResult;
use longpipe_core::scenario::ValidScenario;
use longpipe_core::sim::workload;
use longpipe_core::tcp::sender::SenderCounters;
use longpipe_core::time::SimTime;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Bytes of a message header on the wire.
pub const HEADER_LEN: usize = 32;
const MAGIC: &[u8; 4] = b"LPM1";
/// The size of each message of an `Unlimited` write.
const UNLIMITED_MSG: u64 = 64 * 1024;
/// TCP_INFO sampling period (recoveries, RTT), ns.
const SAMPLE_NS: u64 = 5_000_000;

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

// ---------------------------------------------------------------- the parent's side

/// The parent's end of the socket channel, with the flows it makes sockets for.
pub struct Broker {
    pub sock: UnixStream,
    flows: Vec<FlowMap>,
    /// (active node, whether it is the flow's `dst`) by flow id.
    active: BTreeMap<usize, (usize, bool)>,
}

/// Whether flow `i` of `sc` is an application flow the emulator runs here.
pub fn is_app(sc: &ValidScenario, i: usize) -> bool {
    sc.flows[i].app.is_workload()
}

/// (active node, passive node) of an application flow.
pub fn ends(sc: &ValidScenario, i: usize) -> (usize, usize) {
    let f = &sc.flows[i];
    if f.app.dst_opens() {
        (f.dst, f.src)
    } else {
        (f.src, f.dst)
    }
}

/// The receive-buffer options of a socket at a flow's `dst`, as flows.rs gives the
/// bulk receiver (see there: the doubled buffer leaves room for Linux's overhead).
fn receive_window(s: &OwnedFd, f: &FlowMap) -> io::Result<()> {
    let clamp = f.rwnd.min(i32::MAX as u64 / 4) as i32;
    sys::setsockopt_int(s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 2 * clamp)?;
    sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, clamp)
}

/// Every application socket: the flow's congestion control and MSS, no Nagle (the
/// simulator sends a message's bytes at once; browsers, web servers and netperf's
/// TCP_RR set `TCP_NODELAY` too), and at `dst` the flow's receive window. (An accepted
/// socket inherits its listener's options.)
fn tcp_options(s: &OwnedFd, f: &FlowMap, at_dst: bool) -> io::Result<()> {
    sys::setsockopt_bytes(s, libc::IPPROTO_TCP, libc::TCP_CONGESTION, f.cc.as_bytes())?;
    sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_MAXSEG, f.mss as i32)?;
    if at_dst {
        receive_window(s, f)?;
    }
    Ok(())
}

/// The listening socket of application flow `f` at its passive node (made in that
/// node's namespace: the caller has entered it), with its port: the flow's receiver
/// port, or an ephemeral one when another flow's socket holds that.
pub fn make_listener(sc: &ValidScenario, f: &FlowMap) -> io::Result<(OwnedFd, u16)> {
    let (_, p) = ends(sc, f.id);
    let l = sys::tcp_socket()?;
    sys::setsockopt_int(&l, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    tcp_options(&l, f, p == f.dst)?;
    let addr = longpipe_core::net::packet::node_addr(p);
    match sys::bind_v4(&l, addr, f.dport) {
        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => sys::bind_v4(&l, addr, 0)?,
        r => r?,
    }
    sys::listen(&l, 1024)?;
    let port = sys::local_port(&l)?;
    Ok((l, port))
}

impl Broker {
    /// The parent's end `sock`; the other goes to the ferry.
    pub fn new(sc: &ValidScenario, flows: &[FlowMap], sock: UnixStream) -> Broker {
        let active = flows
            .iter()
            .filter(|f| is_app(sc, f.id))
            .map(|f| {
                let (a, _) = ends(sc, f.id);
                (f.id, (a, a == f.dst))
            })
            .collect();
        Broker {
            sock,
            flows: flows.to_vec(),
            active,
        }
    }

    /// Answers the requests that arrive within `wait_ns`. `enter(node)` moves this
    /// thread into a node's namespace, `leave()` back.
    pub fn serve(
        &mut self,
        wait_ns: u64,
        enter: &dyn Fn(usize) -> io::Result<()>,
        leave: &dyn Fn() -> io::Result<()>,
    ) -> io::Result<()> {
        let mut pfd = [libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if sys::ppoll(&mut pfd, Some(wait_ns))? == 0 {
            return Ok(());
        }
        let mut b = [0u8; 4];
        let (n, _) = sys::recv_with_fd(&self.sock, &mut b)?;
        if n == 0 {
            // the ferry is gone; stop listening
            thread::sleep(Duration::from_nanos(wait_ns));
            return Ok(());
        }
        let id = u32::from_le_bytes(b) as usize;
        let made = match (self.active.get(&id), self.flows.iter().find(|f| f.id == id)) {
            (Some(&(node, at_dst)), Some(f)) => {
                enter(node)?;
                let s = (|| -> io::Result<OwnedFd> {
                    let s = sys::tcp_socket()?;
                    tcp_options(&s, f, at_dst)?;
                    sys::bind_v4(&s, longpipe_core::net::packet::node_addr(node), 0)?;
                    sys::set_nonblocking(&s)?;
                    Ok(s)
                })();
                leave()?;
                s.map_err(|e| e.to_string())
            }
            _ => Err(format!("flow {id} is not an application flow")),
        };
        match made {
            Ok(s) => sys::send_with_fd(&self.sock, &[0], Some(&s)),
            Err(e) => {
                let mut m = vec![1u8];
                m.extend_from_slice(e.as_bytes());
                sys::send_with_fd(&self.sock, &m, None::<&OwnedFd>)
            }
        }
    }
}

/// A new unconnected, non-blocking socket for flow `id`, bound at its active node.
pub fn request_socket(ch: &Mutex<UnixStream>, id: usize) -> io::Result<OwnedFd> {
    let c = ch
        .lock()
        .map_err(|_| io::Error::other("socket channel poisoned"))?;
    sys::send_with_fd(&*c, &(id as u32).to_le_bytes(), None::<&OwnedFd>)?;
    let mut b = [0u8; 512];
    let (n, fd) = sys::recv_with_fd(&*c, &mut b)?;
    match (n, fd) {
        (0, _) => Err(io::Error::other("the parent closed the socket channel")),
        (_, Some(fd)) if b[0] == 0 => Ok(fd),
        _ => Err(io::Error::other(
            String::from_utf8_lossy(&b[1..n]).into_owned(),
        )),
    }
}

// ---------------------------------------------------------------- the ferry's side

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum End {
    Active,
    Passive,
}

enum Piece {
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

struct Conn {
    s: TcpStream,
    id: ConnId,
    end: End,
    connected: bool,
    out: VecDeque<Piece>,
    unlimited: bool,
    close_after: bool,
    shut: bool,
    peer_closed: bool,
    told_peer_closed: bool,
    deframer: Deframer,
    /// This end is at the flow's `src` (its sends are the flow's data).
    at_src: bool,
    reader: Option<Reader>,
    /// TCP_INFO at the warmup (connections open then), for differences.
    base: Option<TcpInfo>,
    prev_ca: u8,
}

#[derive(Default, Clone)]
struct Counts {
    read: u64,
    segs: u64,
    retrans: u64,
    rto: u64,
    loss_entries: u64,
    recoveries: u64,
    rtt_sum_us: u64,
    rtt_n: u64,
}

/// What one application flow's thread reports.
#[derive(Default)]
pub struct AppOutcome {
    pub records: Vec<Record>,
    counts: Counts,
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
        self.act(now, end, acts);
    }

    /// Carries out actions as [`longpipe_core::sim::apps`] does: an `Open` beyond the
    /// flow's connection slots waits, with the actions on it that follow, for a
    /// connection to close.
    fn act(&mut self, now: u64, end: End, acts: Vec<Action>) {
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
        let _ = now; // (the simulator's element needs it to start a handshake)
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
                self.after_close(now, id, end);
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
                self.after_close(now, id, end);
                continue;
            }
            k += 1;
        }
    }

    /// A closed active connection frees a slot: the next waiting one opens.
    fn after_close(&mut self, now: u64, _id: ConnId, end: End) {
        if end != End::Active {
            return;
        }
        while self.active_open() < self.slots {
            let Some((wid, acts)) = self.waiting.pop_front() else {
                break;
            };
            let mut all = vec![Action::Open(wid)];
            all.extend(acts);
            self.act(now, End::Active, all);
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

/// Writes what the connection holds (and, unlimited, more) until the kernel takes no
/// more: headers and payloads gathered into one write (a message goes out in as few
/// segments as its size allows, as the simulator sends it).
fn write_out(c: &mut Conn) -> io::Result<()> {
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
fn read_in(c: &mut Conn, now: u64, msgs: &mut Vec<Msg>) -> Result<(u64, bool), String> {
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

/// The records of every application flow, as the simulator collects them.
pub fn records(outcomes: &BTreeMap<usize, AppOutcome>) -> AppRecords {
    let mut r = AppRecords::default();
    for (&id, o) in outcomes {
        for x in &o.records {
            r.push(id, x);
        }
    }
    r
}

/// The record tables as `{table: {column: [values]}}`, the layout the Python API
/// gives a simulated run's (`longpipe.workload.frame` reads both); the result's
/// `emu.records`.
pub fn records_json(r: &AppRecords) -> serde_json::Value {
    serde_json::json!({
        "pages": {"flow": r.page_flow, "start_ns": r.page_start_ns, "end_ns": r.page_end_ns,
                  "bytes": r.page_bytes, "objects": r.page_objects},
        "requests": {"flow": r.req_flow, "conn": r.req_conn, "start_ns": r.req_start_ns,
                     "end_ns": r.req_end_ns, "request": r.req_request, "response": r.req_response},
        "chunks": {"flow": r.chunk_flow, "index": r.chunk_index, "start_ns": r.chunk_start_ns,
                   "end_ns": r.chunk_end_ns, "bytes": r.chunk_bytes, "bitrate": r.chunk_bitrate},
        "stalls": {"flow": r.stall_flow, "start_ns": r.stall_start_ns, "end_ns": r.stall_end_ns,
                   "startup": r.stall_startup},
        "transfers": {"flow": r.xfer_flow, "start_ns": r.xfer_start_ns, "end_ns": r.xfer_end_ns,
                      "bytes": r.xfer_bytes},
    })
}

/// An application flow's result, in the simulator's fields (as its
/// `sim::Simulation::finish` makes them for an application flow).
pub fn flow_result(
    sc: &ValidScenario,
    i: usize,
    o: &AppOutcome,
    records: &AppRecords,
    by_flow: &[longpipe_core::app::records::Selection],
    end: u64,
) -> FlowResult {
    let info = &sc.flows[i];
    let start = info.start.0;
    let t0 = start.max(sc.warmup.0);
    let span = end.saturating_sub(t0) as f64 * 1e-9;
    let c = &o.counts;
    let app = records.flow_app(
        &by_flow[i],
        info.app.kind().name(),
        workload::fills(&info.app.kind),
        sc.warmup,
        SimTime(end),
    );
    FlowResult {
        id: info.id,
        src: sc.nodes[info.src].name.clone(),
        dst: sc.nodes[info.dst].name.clone(),
        tcp: info.tcp.tcp.name().to_string(),
        profile: info.tcp.report(),
        goodput_bps: if span > 0.0 {
            c.read as f64 * 8.0 / span
        } else {
            0.0
        },
        bytes_delivered: c.read,
        sender: SenderCounters {
            segments_sent: c.segs,
            retransmitted_segments: c.retrans,
            timeouts: if c.rto > 0 { c.rto } else { c.loss_entries },
            fast_recoveries: c.recoveries,
            rtt_sum_ns: c.rtt_sum_us as u128 * 1000,
            rtt_samples: c.rtt_n,
            extra: Default::default(),
        },
        extra: None,
        app: Some(app),
        completion_time_s: None,
        mean_rtt_s: (c.rtt_n > 0).then(|| c.rtt_sum_us as f64 / c.rtt_n as f64 * 1e-6),
        mss: info.tcp.mss,
        start_s: start as f64 * 1e-9,
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
