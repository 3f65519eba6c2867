//! Split mode's relay (the unprivileged worker): a transparent split-connection proxy on
//! kernel sockets. TPROXY hands each client connection to the listener (its local
//! address is the server's: the original destination); the relay opens a second
//! connection to that destination from the client's own address (`IP_TRANSPARENT`,
//! bound to the client's address and, when free, its port: the server sees the client)
//! and copies bytes both ways in one `ppoll` loop over non-blocking sockets.
//!
//! - The satellite leg is the accepted socket (clients sit behind `--uplink`): its
//!   congestion control and buffers come from the listener, set as root.
//! - Bounded: at most `--relay-buffer` bytes wait per connection and direction; a full
//!   buffer stops reading that side (TCP's flow control does the rest).
//! - Half-close: end of file from one side shuts down writing toward the other once the
//!   buffer toward it is empty; the other direction goes on. Both shut: closed.
//! - Reset: an error on one side (reset, refused connect) closes the other with
//!   `SO_LINGER` 0, which sends a RST; buffered bytes are dropped (as a RST does).
//! - `--max-conns` concurrent connections; more are reset at once.
//! - Stopping (signal or the control pipe): the listener closes (connections not yet
//!   accepted are reset), the relay runs until its connections end or `--drain` has
//!   passed, then reports the connections and bytes it cut (stderr, one JSON line on
//!   stdout).
//!
//! Privileges: the worker keeps `CAP_NET_RAW` only — `IP_TRANSPARENT` on each new
//! server-side socket needs `CAP_NET_RAW` or `CAP_NET_ADMIN`, and `CAP_NET_RAW` is the
//! narrower (it cannot change routes, rules or nftables).
//!
//! Why one file of ~770 lines: the relay is one `ppoll` loop over pairs of sockets whose
//! states (half-closed, reset, buffers full) decide each other's poll events; its
//! metrics and snapshot are read from that state; its tests are the last ~120 lines.

use crate::metrics;
use crate::opts::Opts;
use crate::split_setup::IP_TRANSPARENT;
use crate::state::{ConnEntry, Snapshot};
use longpipe_sys::sys;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The relay's counters.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SplitStats {
    pub opened: u64,
    /// The most connections relayed at once (a high-water mark).
    pub peak: u64,
    pub closed: u64,
    /// Reset at once: over `--max-conns`, or while stopping.
    pub refused: u64,
    /// The server-side connection failed (refused, unreachable, timed out).
    pub connect_errors: u64,
    /// Connections ended by a reset or an error on either side.
    pub resets: u64,
    /// accept() failed for want of descriptors or memory (accepting pauses 100 ms).
    pub accept_errors: u64,
    /// Server-side connections bound to the client's own port (else an ephemeral one).
    pub same_port: u64,
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
}

impl SplitStats {
    /// A connection accepted and relayed; `now`: the connections relayed with it.
    fn relaying(&mut self, now: usize) {
        self.opened += 1;
        self.peak = self.peak.max(now as u64);
    }
}

/// One direction: bytes read from side `d`, waiting to be written to the other side.
#[derive(Default)]
struct Dir {
    buf: VecDeque<u8>,
    /// Side `d` sent its FIN.
    eof: bool,
    /// Writing toward the other side is shut down (FIN sent on).
    shut: bool,
}

struct Conn {
    /// 0: the client's (accepted; the satellite leg), 1: the server's.
    s: [TcpStream; 2],
    connecting: bool,
    /// 0: client to server, 1: server to client.
    d: [Dir; 2],
}

enum Fate {
    Open,
    Closed,
    /// Close the other side with a RST.
    Reset,
    ConnectFailed,
}

fn reset(s: &TcpStream) {
    // struct linger { l_onoff = 1, l_linger = 0 }: close() sends a RST
    let mut l = [0u8; 8];
    l[..4].copy_from_slice(&1i32.to_ne_bytes());
    let _ = sys::setsockopt_bytes(s, libc::SOL_SOCKET, libc::SO_LINGER, &l);
}

fn v4(a: SocketAddr) -> Option<([u8; 4], u16)> {
    match a {
        SocketAddr::V4(a) => Some((a.ip().octets(), a.port())),
        SocketAddr::V6(_) => None,
    }
}

/// The server-side socket: transparent, bound to the client's address (its port if
/// free), connecting without blocking. Returns it and whether the port was kept.
fn connect_as(client: ([u8; 4], u16), server: ([u8; 4], u16)) -> io::Result<(TcpStream, bool)> {
    let mk = |port: u16| -> io::Result<OwnedFd> {
        let s = sys::tcp_socket()?;
        sys::setsockopt_int(&s, libc::SOL_IP, IP_TRANSPARENT, 1)?;
        sys::bind_v4(&s, client.0, port)?;
        Ok(s)
    };
    let (s, same) = match mk(client.1) {
        Ok(s) => (s, true),
        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => (mk(0)?, false),
        Err(e) => return Err(e),
    };
    sys::set_nonblocking(&s)?;
    match sys::connect_v4(&s, server.0, server.1) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok((TcpStream::from(s), same))
}

/// The congestion control a socket uses.
pub fn congestion_control(s: &impl AsRawFd) -> String {
    let mut b = [0u8; 16];
    match sys::getsockopt_bytes(s, libc::IPPROTO_TCP, libc::TCP_CONGESTION, &mut b) {
        Ok(n) => String::from_utf8_lossy(&b[..n])
            .trim_end_matches('\0')
            .to_string(),
        Err(e) => format!("? ({e})"),
    }
}

impl Conn {
    fn events(&self, side: usize, cap: usize) -> i16 {
        let mut ev = 0;
        if self.connecting {
            // the client's side waits until the server's answers
            return if side == 1 { libc::POLLOUT } else { 0 };
        }
        if !self.d[side].eof && self.d[side].buf.len() < cap {
            ev |= libc::POLLIN;
        }
        if !self.d[1 - side].buf.is_empty() {
            ev |= libc::POLLOUT;
        }
        ev
    }

    /// Moves what it can after a wake-up (`rev`: the sides' revents).
    fn step(&mut self, rev: [i16; 2], cap: usize, tmp: &mut [u8], st: &mut SplitStats) -> Fate {
        if self.connecting {
            if rev[1] == 0 {
                // only an error or hang-up on the client's side wakes us here
                return Fate::Reset;
            }
            match self.s[1].take_error() {
                Ok(None) => self.connecting = false,
                _ => return Fate::ConnectFailed,
            }
        }
        if rev.iter().any(|&r| r & libc::POLLERR != 0) {
            return Fate::Reset;
        }
        for (side, &r) in rev.iter().enumerate() {
            // read side `side` while there is room
            while r != 0 && !self.d[side].eof && self.d[side].buf.len() < cap {
                let room = (cap - self.d[side].buf.len()).min(tmp.len());
                match self.s[side].read(&mut tmp[..room]) {
                    Ok(0) => self.d[side].eof = true,
                    Ok(n) => self.d[side].buf.extend(&tmp[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => return Fate::Reset,
                }
            }
        }
        for d in 0..2 {
            let to = 1 - d;
            while !self.d[d].buf.is_empty() {
                let (a, _) = self.d[d].buf.as_slices();
                match self.s[to].write(a) {
                    Ok(n) => {
                        self.d[d].buf.drain(..n);
                        if to == 1 {
                            st.bytes_to_server += n as u64;
                        } else {
                            st.bytes_to_client += n as u64;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => return Fate::Reset,
                }
            }
            if self.d[d].eof && self.d[d].buf.is_empty() && !self.d[d].shut {
                if self.s[to].shutdown(Shutdown::Write).is_err() {
                    return Fate::Reset;
                }
                self.d[d].shut = true;
            }
        }
        if self.d[0].shut && self.d[1].shut {
            Fate::Closed
        } else {
            Fate::Open
        }
    }

    fn buffered(&self) -> u64 {
        (self.d[0].buf.len() + self.d[1].buf.len()) as u64
    }
}

/// What the relay reports when it stops.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub event: &'static str,
    pub mode: &'static str,
    pub uptime_s: f64,
    pub drain_s: f64,
    /// Connections still open when the drain ended (closed with a RST).
    pub conns: usize,
    /// The most connections relayed at once.
    pub conns_peak: u64,
    /// Bytes the relay had read and not yet written when it stopped.
    pub buffered_bytes: u64,
    pub split: SplitStats,
}

/// Prometheus text for the relay.
pub fn render(st: &SplitStats, conns: usize, buffered: u64, uptime_s: f64) -> String {
    let mut s = String::with_capacity(2048);
    let mut m = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
        let _ = writeln!(s, "# HELP longpipe_gateway_{name} {help}");
        let _ = writeln!(s, "# TYPE longpipe_gateway_{name} {kind}");
        for (labels, v) in samples {
            if labels.is_empty() {
                let _ = writeln!(s, "longpipe_gateway_{name} {v}");
            } else {
                let _ = writeln!(s, "longpipe_gateway_{name}{{{labels}}} {v}");
            }
        }
    };
    m(
        "up",
        "gauge",
        "1 while the relay runs.",
        &[("mode=\"split\"", 1.0)],
    );
    m(
        "uptime_seconds",
        "gauge",
        "Seconds since the relay started.",
        &[("", uptime_s)],
    );
    m(
        "connections",
        "gauge",
        "Connections being relayed.",
        &[("", conns as f64)],
    );
    m(
        "connections_peak",
        "gauge",
        "The most connections relayed at once since the start.",
        &[("", st.peak as f64)],
    );
    m(
        "connections_opened_total",
        "counter",
        "Client connections accepted and relayed.",
        &[("", st.opened as f64)],
    );
    m(
        "connections_closed_total",
        "counter",
        "Relayed connections that ended (either way).",
        &[("", st.closed as f64)],
    );
    m(
        "connections_refused_total",
        "counter",
        "Connections reset at once (over --max-conns, or stopping).",
        &[("", st.refused as f64)],
    );
    m(
        "connect_errors_total",
        "counter",
        "Server-side connections that failed (the client was reset).",
        &[("", st.connect_errors as f64)],
    );
    m(
        "accept_errors_total",
        "counter",
        "accept() failures for want of descriptors or memory (accepting pauses 100 ms).",
        &[("", st.accept_errors as f64)],
    );
    m(
        "resets_total",
        "counter",
        "Connections ended by a reset or error on one side (passed on as a RST).",
        &[("", st.resets as f64)],
    );
    m(
        "bytes_relayed_total",
        "counter",
        "Bytes written by the relay, by direction.",
        &[
            ("dir=\"to_server\"", st.bytes_to_server as f64),
            ("dir=\"to_client\"", st.bytes_to_client as f64),
        ],
    );
    m(
        "relay_buffered_bytes",
        "gauge",
        "Bytes read and not yet written.",
        &[("", buffered as f64)],
    );
    s
}

/// The periodic stats line.
pub fn line(st: &SplitStats, conns: usize, buffered: u64) -> String {
    format!(
        "longpipe-gateway: conns {conns} peak {} opened {} closed {} refused {} connect_errors {} resets {}; \
         bytes to_client {} to_server {}; buffered {buffered}",
        st.peak, st.opened, st.closed, st.refused, st.connect_errors, st.resets, st.bytes_to_client,
        st.bytes_to_server
    )
}

fn pfd(fd: i32, events: i16) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// `TCP_USER_TIMEOUT` (linux/tcp.h): how long sent data may stay unacknowledged
/// before the kernel gives the connection up.
const TCP_USER_TIMEOUT: i32 = 18;

/// The relay's sockets give a silent peer up after `--abandon-timeout` (RFC 5482's
/// user timeout; Linux's own is `tcp_retries2`, about 15 minutes): a vanished client or
/// server ends its pair with a reset, not a silent hang.
fn user_timeout(s: &impl AsRawFd, ns: u64) {
    let ms = i32::try_from(ns / 1_000_000).unwrap_or(i32::MAX);
    let _ = sys::setsockopt_int(s, libc::IPPROTO_TCP, TCP_USER_TIMEOUT, ms);
}

/// The relay's connections for `longpipe gateway status`.
fn write_snapshot(f: &File, conns: &[Conn], uptime_s: f64, draining: bool) {
    let entries = conns
        .iter()
        .map(|c| {
            let addr = |s: &TcpStream, local: bool| {
                let a = if local { s.local_addr() } else { s.peer_addr() };
                a.map(|a| a.to_string()).unwrap_or_else(|_| "?".into())
            };
            let state = if c.connecting {
                "connecting"
            } else if c.d[0].eof || c.d[1].eof {
                "closing"
            } else {
                "established"
            };
            ConnEntry {
                server: addr(&c.s[0], true),
                client: addr(&c.s[0], false),
                state: state.into(),
                held: c.buffered(),
                acked_undelivered: c.d[1].buf.len() as u64,
                resent: 0,
                client_rcv_nxt: None,
                server_rcv_nxt: None,
            }
        })
        .collect();
    let s = Snapshot {
        pid: std::process::id(),
        mode: "split".into(),
        uptime_s,
        draining,
        half_open: 0,
        conns: entries,
    };
    if let Ok(b) = serde_json::to_vec(&s) {
        let _ = f.set_len(0);
        let _ = f.write_all_at(&b, 0);
    }
}

/// Runs until stopped: a signal, or the control pipe's end (`io.ctl`; without a
/// signal: the parent is gone, and the metrics port is closed at once).
pub fn run(
    o: &Opts,
    listener: TcpListener,
    max_conns: usize,
    io: crate::worker::LoopIo,
) -> io::Result<Summary> {
    let crate::worker::LoopIo {
        ctl,
        metrics: metrics_listener,
        snapshot: snap_file,
        harden,
        ..
    } = io;
    listener.set_nonblocking(true)?;
    if let Some(c) = &ctl {
        sys::set_nonblocking(c)?;
    }
    let mut listener = Some(listener);
    let mut ctl = ctl.map(File::from);
    let snapshot = Arc::new(Mutex::new(String::new()));
    let stop_metrics = Arc::new(AtomicBool::new(false));
    if let Some(l) = metrics_listener {
        let _ = metrics::serve(l, snapshot.clone(), stop_metrics.clone());
    }
    if harden {
        crate::harden::harden(true)?;
    }
    let mut parent_gone = false;
    let cap = o.relay_buffer as usize;
    let mut tmp = vec![0u8; 65_536];
    let mut conns: Vec<Conn> = Vec::new();
    let mut st = SplitStats::default();
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let second = 1_000_000_000u64;
    let (mut next_snap, mut next_stats) = (0u64, o.stats_interval_ns);
    let mut stop_at: Option<u64> = None;
    let mut pfds: Vec<libc::pollfd> = Vec::new();
    let mut accept_pause = 0u64;
    let buffered = |c: &[Conn]| c.iter().map(Conn::buffered).sum::<u64>();
    loop {
        let t = now();
        if t >= next_snap {
            let s = render(&st, conns.len(), buffered(&conns), t as f64 / 1e9);
            if let Ok(mut g) = snapshot.lock() {
                *g = s;
            }
            if let Some(f) = &snap_file {
                write_snapshot(f, &conns, t as f64 / 1e9, stop_at.is_some());
            }
            next_snap = t + second;
        }
        if t >= next_stats {
            eprintln!("{}", line(&st, conns.len(), buffered(&conns)));
            next_stats = t + o.stats_interval_ns;
        }
        if stop_at.is_none() && sys::SIGNALLED.load(Ordering::Relaxed) != 0 {
            stop_at = Some(t + o.drain_ns);
        }
        if let Some(s) = stop_at {
            if listener.take().is_some() {
                eprintln!(
                    "longpipe-gateway: stopping: no new connections; draining {} B of {} connections (at most {:.1} s)",
                    buffered(&conns),
                    conns.len(),
                    o.drain_ns as f64 / 1e9
                );
            }
            if t >= s || conns.is_empty() {
                let b = buffered(&conns);
                for c in &conns {
                    reset(&c.s[0]);
                    reset(&c.s[1]);
                }
                let sum = Summary {
                    event: "stopped",
                    mode: "split",
                    uptime_s: t as f64 / 1e9,
                    drain_s: (t + o.drain_ns - s) as f64 / 1e9,
                    conns: conns.len(),
                    conns_peak: st.peak,
                    buffered_bytes: b,
                    split: st.clone(),
                };
                eprintln!("{}", line(&st, conns.len(), b));
                eprintln!(
                    "longpipe-gateway: stopped: {} connections cut, {b} B buffered dropped",
                    conns.len()
                );
                return Ok(sum);
            }
        }
        // poll: control pipe, listener, then two descriptors per connection
        pfds.clear();
        pfds.push(pfd(
            ctl.as_ref().map_or(-1, |c| c.as_raw_fd()),
            libc::POLLIN,
        ));
        let accepting = listener.as_ref().filter(|_| now() >= accept_pause);
        pfds.push(pfd(accepting.map_or(-1, |l| l.as_raw_fd()), libc::POLLIN));
        for c in &conns {
            for side in 0..2 {
                // a side with nothing to read or write is left out (fd -1): its
                // hang-up would wake the loop again and again while the other side
                // catches up; an error on it shows when it is next read or written
                let ev = c.events(side, cap);
                let fd = if ev == 0 { -1 } else { c.s[side].as_raw_fd() };
                pfds.push(pfd(fd, ev));
            }
        }
        let mut wake = next_snap.min(next_stats);
        if accept_pause > t {
            wake = wake.min(accept_pause);
        }
        if stop_at.is_some() {
            wake = wake.min(t + 10_000_000);
        }
        match sys::ppoll(&mut pfds, Some(wake.saturating_sub(now()))) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if pfds[0].revents != 0 {
            if let Some(c) = &mut ctl {
                let mut b = [0u8; 64];
                let closed = loop {
                    match c.read(&mut b) {
                        Ok(0) => break true,
                        Ok(_) => continue,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => break true,
                    }
                };
                if closed {
                    ctl = None;
                    if sys::SIGNALLED.load(Ordering::Relaxed) == 0 && !parent_gone {
                        parent_gone = true;
                        stop_metrics.store(true, Ordering::Relaxed);
                        eprintln!(
                            "longpipe-gateway: the parent is gone: metrics closed; draining (at \
                             most {:.1} s), then the connections left are reset",
                            o.drain_ns as f64 / 1e9
                        );
                    }
                    stop_at.get_or_insert(now() + o.drain_ns);
                }
            }
        }
        // relay (before accepting: pfds[2..] are the current connections, in order)
        let mut dead: Vec<(usize, Fate)> = Vec::new();
        for (i, c) in conns.iter_mut().enumerate() {
            let rev = [pfds[2 + 2 * i].revents, pfds[3 + 2 * i].revents];
            if rev != [0, 0] {
                match c.step(rev, cap, &mut tmp, &mut st) {
                    Fate::Open => {}
                    f => dead.push((i, f)),
                }
            }
        }
        // highest index first: swap_remove only moves connections that stay
        for (i, f) in dead.into_iter().rev() {
            let c = conns.swap_remove(i);
            st.closed += 1;
            match f {
                Fate::Reset => {
                    st.resets += 1;
                    reset(&c.s[0]);
                    reset(&c.s[1]);
                }
                Fate::ConnectFailed => {
                    st.connect_errors += 1;
                    reset(&c.s[0]);
                }
                Fate::Open | Fate::Closed => {}
            }
        }
        if pfds[1].revents != 0 {
            if let Some(l) = &listener {
                for _ in 0..64 {
                    let (a, peer) = match l.accept() {
                        Ok(x) => x,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        // out of descriptors or memory: pause accepting (the
                        // listener stays readable: polling it now would spin)
                        Err(e)
                            if matches!(
                                e.raw_os_error(),
                                Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                            ) =>
                        {
                            st.accept_errors += 1;
                            accept_pause = now() + 100_000_000;
                            break;
                        }
                        // ECONNABORTED and the like: that connection only
                        Err(_) => continue,
                    };
                    let dst = a.local_addr().ok().and_then(v4);
                    let src = v4(peer);
                    let (Some(dst), Some(src)) = (dst, src) else {
                        reset(&a);
                        st.refused += 1;
                        continue;
                    };
                    if conns.len() >= max_conns || dst.0[0] == 127 {
                        reset(&a);
                        st.refused += 1;
                        continue;
                    }
                    let _ = a.set_nonblocking(true);
                    user_timeout(&a, o.abandon_ns);
                    match connect_as(src, dst) {
                        Ok((b, same)) => {
                            user_timeout(&b, o.abandon_ns);
                            st.same_port += same as u64;
                            conns.push(Conn {
                                s: [a, b],
                                connecting: true,
                                d: [Dir::default(), Dir::default()],
                            });
                            st.relaying(conns.len());
                        }
                        Err(e) => {
                            st.connect_errors += 1;
                            eprintln!(
                                "longpipe-gateway: cannot connect to {dst:?} as {src:?}: {e}"
                            );
                            reset(&a);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A loopback connection: (the far end, the relay's end).
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let far = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (near, _) = l.accept().unwrap();
        near.set_nonblocking(true).unwrap();
        far.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        (far, near)
    }

    /// A relay between a "client" and a "server" (both far ends returned).
    fn relay() -> (TcpStream, TcpStream, Conn) {
        let (client, a) = pair();
        let (server, b) = pair();
        let c = Conn {
            s: [a, b],
            connecting: false,
            d: [Dir::default(), Dir::default()],
        };
        (client, server, c)
    }

    fn pump(c: &mut Conn, cap: usize, st: &mut SplitStats, rounds: usize) -> Fate {
        let mut tmp = vec![0u8; 4096];
        for _ in 0..rounds {
            match c.step([libc::POLLIN, libc::POLLIN], cap, &mut tmp, st) {
                Fate::Open => std::thread::sleep(Duration::from_millis(2)),
                f => return f,
            }
        }
        Fate::Open
    }

    #[test]
    fn a_fin_one_way_keeps_the_other_way_open_and_both_close_the_connection() {
        let (mut client, mut server, mut c) = relay();
        let mut st = SplitStats::default();
        client.write_all(b"GET 5\n").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        assert!(matches!(pump(&mut c, 1 << 16, &mut st, 20), Fate::Open));
        let mut got = Vec::new();
        server.read_to_end(&mut got).unwrap(); // the request, then the client's FIN
        assert_eq!(got, b"GET 5\n");
        // the other direction still flows after the client's FIN
        let big = vec![7u8; 300_000];
        let w = std::thread::spawn(move || {
            server.write_all(&big).unwrap();
            server.shutdown(Shutdown::Write).unwrap();
            server
        });
        let r = std::thread::spawn(move || {
            let mut got = Vec::new();
            client.read_to_end(&mut got).unwrap();
            got
        });
        // a small buffer: the relay reads no more than it can hold
        let mut fate = Fate::Open;
        let mut tmp = vec![0u8; 4096];
        for _ in 0..5000 {
            fate = c.step([libc::POLLIN, libc::POLLIN], 8192, &mut tmp, &mut st);
            assert!(c.d[1].buf.len() <= 8192);
            if !matches!(fate, Fate::Open) {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(matches!(fate, Fate::Closed));
        let got = r.join().unwrap();
        w.join().unwrap();
        assert_eq!(got.len(), 300_000);
        assert!(got.iter().all(|&b| b == 7));
        assert_eq!((st.bytes_to_server, st.bytes_to_client), (6, 300_000));
    }

    #[test]
    fn a_reset_on_one_side_is_passed_on_as_a_reset() {
        let (mut client, server, mut c) = relay();
        let mut st = SplitStats::default();
        reset(&server);
        drop(server); // RST toward the relay's server side
        let fate = pump(&mut c, 1 << 16, &mut st, 200);
        assert!(matches!(fate, Fate::Reset));
        // what run() does with a reset: both relay ends closed with linger 0
        reset(&c.s[0]);
        reset(&c.s[1]);
        drop(c);
        let mut b = [0u8; 16];
        let e = client.read(&mut b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
    }

    #[test]
    fn metrics_name_the_relay_counters() {
        let mut st = SplitStats {
            bytes_to_client: 1234,
            ..SplitStats::default()
        };
        // three at once, two of them end, one more: the peak stays at three
        for n in 1..=3 {
            st.relaying(n);
        }
        st.relaying(2);
        assert_eq!((st.opened, st.peak), (4, 3));
        let m = render(&st, 2, 10, 1.5);
        assert!(m.contains("longpipe_gateway_connections 2\n"));
        assert!(m.contains("longpipe_gateway_connections_peak 3\n"));
        assert!(m.contains("longpipe_gateway_connections_opened_total 4\n"));
        assert!(m.contains("longpipe_gateway_bytes_relayed_total{dir=\"to_client\"} 1234\n"));
        assert!(m.contains("longpipe_gateway_relay_buffered_bytes 10\n"));
        assert!(line(&st, 2, 10).starts_with("longpipe-gateway: conns 2 peak 3 opened 4"));
    }
}
