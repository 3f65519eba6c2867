//! The scenario's bulk flows with real sockets: a listening socket in the receiver's
//! namespace and a bound socket in the sender's, both made (and given their options)
//! by the privileged parent; the unprivileged ferry process then connects, writes and
//! reads on threads of its own, while a monitor thread samples the senders' `TCP_INFO`.
//!
//! What is measured, and how it maps onto the simulator's result fields:
//! - `bytes_delivered`: bytes the receiving application read in [warmup, end];
//!   `goodput_bps` and `completion_time_s` as in the simulator (the completion is the
//!   read that brings the count to the transfer size);
//! - `segments_sent` = `tcpi_data_segs_out`, `retransmitted_segments` =
//!   `tcpi_total_retrans`, `timeouts` = `tcpi_total_rto` (Linux 6.7+; else entries
//!   into the Loss state seen by the monitor), all as differences over [warmup, end];
//! - `fast_recoveries`: entries into `TCP_CA_Recovery` seen by the monitor (sampled
//!   every millisecond: an episode shorter than that may be missed);
//! - `mean_rtt_s`: the mean of the sampled smoothed RTT (`tcpi_rtt`), a time average of
//!   Linux's SRTT, where the simulator averages its RTT samples.
//!
//! Invariants: a flow's connection has the simulator's 4-tuple; a receiver never
//! advertises more than its flow's `rwnd` ([`Window`]).
//!
//! Why ~620 lines: the sockets, the threads of a run (acceptor, receiver, sender,
//! monitor) and the mapping of what they saw onto the simulator's fields belong together.

use crate::apps::Reader;
use crate::linux::{self, FlowMap};
use crate::sys;
use longpipe_core::results::FlowResult;
use longpipe_core::scenario::ValidScenario;
use longpipe_core::tcp::sender::SenderCounters;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// A listening socket in a receiving node's namespace and the flows it accepts
/// (indices into the mapping; they share the node's address and the receiver's port).
pub struct Listener {
    pub fd: OwnedFd,
    pub flows: Vec<usize>,
}

/// Socket buffer to ask for (`SO_RCVBUF`; the kernel doubles it) so that `sk_rcvbuf` is
/// `bytes`, within what `setsockopt` takes.
fn half(bytes: u64) -> i32 {
    (bytes / 2).clamp(1, i32::MAX as u64) as i32
}

/// Makes the listening sockets of every receiver ([`linux::listen_groups`]), in the
/// receiving node's namespace, whose `tcp_rmem` gives them a buffer of rwnd
/// ([`linux::receive_buffers`]); each gets the largest `TCP_WINDOW_CLAMP` (rwnd) and
/// `TCP_MAXSEG` of its flows before `listen()`, so that the accepted sockets inherit
/// them and the SYN-ACK offers the smallest window scale that holds rwnd. The backlog
/// holds every flow of the group. `enter(node)` moves this thread into a node's
/// namespace, `leave()` back.
pub fn make_listeners(
    flows: &[FlowMap],
    enter: &dyn Fn(usize) -> io::Result<()>,
    leave: &dyn Fn() -> io::Result<()>,
) -> io::Result<Vec<Listener>> {
    let mut out = Vec::new();
    for ((node, port), members) in linux::listen_groups(flows) {
        let rwnd = members.iter().map(|&i| flows[i].rwnd).max().unwrap_or(0);
        let mss = members.iter().map(|&i| flows[i].mss).max().unwrap_or(0);
        let addr = flows[members[0]].dst_addr;
        enter(node)?;
        let l = (|| -> io::Result<OwnedFd> {
            let l = sys::tcp_socket()?;
            sys::setsockopt_int(&l, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
            sys::setsockopt_int(&l, libc::IPPROTO_TCP, libc::TCP_MAXSEG, mss as i32)?;
            let clamp = rwnd.min(i32::MAX as u64) as i32;
            sys::setsockopt_int(&l, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, clamp)?;
            sys::bind_v4(&l, addr, port)?;
            sys::listen(&l, (members.len() as i32).clamp(4, 65_535))?;
            Ok(l)
        })();
        leave()?;
        out.push(Listener {
            fd: l?,
            flows: members,
        });
    }
    Ok(out)
}

/// Makes a flow's sending socket in its source's namespace, bound to its port.
pub fn make_sender(
    f: &FlowMap,
    enter: &dyn Fn(usize) -> io::Result<()>,
    leave: &dyn Fn() -> io::Result<()>,
) -> io::Result<OwnedFd> {
    enter(f.src)?;
    let send = (|| -> io::Result<OwnedFd> {
        let s = sys::tcp_socket()?;
        sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
        sys::setsockopt_bytes(&s, libc::IPPROTO_TCP, libc::TCP_CONGESTION, f.cc.as_bytes())?;
        sys::setsockopt_int(&s, libc::IPPROTO_TCP, libc::TCP_MAXSEG, f.mss as i32)?;
        sys::bind_v4(&s, f.src_addr, f.sport)?;
        Ok(s)
    })();
    leave()?;
    send
}

/// The receive window of an accepted connection, in two steps around the kernel's
/// measurement of its segments' overhead.
///
/// Since Linux 6.5 (`tcp_measure_rcv_mss`), the first full-sized segment sets the
/// socket's `scaling_ratio` (payload / truesize: 160/256 for 1448 B segments from a TUN
/// device, measured here) and *replaces* `TCP_WINDOW_CLAMP` by `sk_rcvbuf` × that ratio,
/// which is why a clamp alone let the window grow to ~2.3 × rwnd, and a plain
/// `SO_RCVBUF` of rwnd to 1.24 × rwnd (measurements in docs/emulation.md). So the
/// socket starts with `sk_rcvbuf` = rwnd ([`linux::receive_buffers`]): the replaced clamp
/// (rwnd × ratio) is below rwnd. [`Window::settle`], once data has been read (the ratio
/// is measured, and does not change while segments keep their size), gives the buffer
/// room (`SO_RCVBUF` 2 × rwnd: `sk_rcvbuf` 4 × rwnd, so out-of-order data and the
/// kernel's overhead never limit the window; capped by the host's `net.core.rmem_max`,
/// global) and sets `TCP_WINDOW_CLAMP` back to rwnd, which then holds.
pub struct Window {
    rwnd: u64,
    settled: bool,
}

impl Window {
    pub fn new(rwnd: u64) -> Window {
        Window {
            rwnd,
            settled: false,
        }
    }

    pub fn settle(&mut self, s: &impl AsRawFd) -> io::Result<()> {
        if !self.settled {
            self.settled = true;
            sys::setsockopt_int(s, libc::SOL_SOCKET, libc::SO_RCVBUF, half(4 * self.rwnd))?;
            let clamp = self.rwnd.min(i32::MAX as u64) as i32;
            sys::setsockopt_int(s, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, clamp)?;
        }
        Ok(())
    }
}

/// The fields of `struct tcp_info` we read (byte offsets of the Linux UAPI layout).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub rtt_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub data_segs_out: u32,
    /// RTO expiries (Linux 6.7+).
    pub total_rto: Option<u16>,
    /// Congestion control name.
    pub len: usize,
}

pub const TCP_CA_RECOVERY: u8 = 3;
pub const TCP_CA_LOSS: u8 = 4;

impl TcpInfo {
    pub fn parse(b: &[u8]) -> TcpInfo {
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map_or(0, |x| u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
        };
        TcpInfo {
            state: b.first().copied().unwrap_or(0),
            ca_state: b.get(1).copied().unwrap_or(0),
            rtt_us: u32_at(68),
            snd_cwnd: u32_at(80),
            total_retrans: u32_at(100),
            data_segs_out: u32_at(156),
            total_rto: b.get(240..242).map(|x| u16::from_ne_bytes([x[0], x[1]])),
            len: b.len(),
        }
    }

    pub fn read(fd: &impl AsFd) -> io::Result<TcpInfo> {
        let mut b = [0u8; 256];
        let n = sys::getsockopt_bytes(&fd.as_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, &mut b)?;
        Ok(TcpInfo::parse(&b[..n]))
    }
}

/// What the receiving application saw.
#[derive(Debug, Default, Clone)]
pub struct RxStats {
    pub total: u64,
    /// Bytes read before the warmup.
    pub base: Option<u64>,
    pub completed_at: Option<u64>,
    pub error: Option<String>,
}

/// What the monitor saw of a sender.
#[derive(Debug, Default, Clone)]
pub struct TxStats {
    pub base: Option<TcpInfo>,
    pub last: Option<TcpInfo>,
    pub recoveries: u64,
    pub loss_entries: u64,
    pub rtt_sum_us: u64,
    pub rtt_n: u64,
    pub error: Option<String>,
}

/// Times of one run, in ns since the ferry's time zero.
#[derive(Clone, Copy)]
pub struct Times {
    pub t0: Instant,
    pub warmup: u64,
    pub end: u64,
}

impl Times {
    pub fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }
    fn sleep_until(&self, t: u64, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let now = self.now();
            if now >= t {
                return;
            }
            thread::sleep(Duration::from_nanos((t - now).min(20_000_000)));
        }
    }
}

/// A connection accepted for a flow, with its window's state.
type Accepted = (TcpStream, Window);

/// Accepts the connections of one listening socket and hands each to its flow's
/// receiver, told by the peer's address and port (the flow's 4-tuple); a connection from
/// elsewhere is closed.
fn acceptor(
    l: Listener,
    flows: Vec<FlowMap>,
    to: Vec<mpsc::Sender<Accepted>>,
    tm: Times,
    stop: Arc<AtomicBool>,
) -> Option<String> {
    let fd = l.fd.as_raw_fd();
    let lis = TcpListener::from(l.fd);
    if let Err(e) = lis.set_nonblocking(true) {
        return Some(format!("listen: {e}"));
    }
    let mut waiting = l.flows.len();
    while waiting > 0 && !stop.load(Ordering::Relaxed) && tm.now() < tm.end {
        let mut p = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Err(e) = sys::ppoll(&mut p, Some(10_000_000)) {
            return Some(format!("poll: {e}"));
        }
        loop {
            match lis.accept() {
                Ok((s, peer)) => {
                    let std::net::SocketAddr::V4(peer) = peer else {
                        continue;
                    };
                    let k = l.flows.iter().position(|&i| {
                        flows[i].src_addr == peer.ip().octets() && flows[i].sport == peer.port()
                    });
                    let Some(k) = k else { continue }; // not one of ours: closed
                    let _ = to[k].send((s, Window::new(flows[l.flows[k]].rwnd)));
                    waiting -= 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(format!("accept: {e}")),
            }
        }
    }
    None
}

fn receiver(
    from: mpsc::Receiver<Accepted>,
    f: FlowMap,
    tm: Times,
    stop: Arc<AtomicBool>,
) -> RxStats {
    let mut st = RxStats::default();
    let go = || !stop.load(Ordering::Relaxed) && tm.now() < tm.end;
    let (mut s, mut window) = loop {
        match from.recv_timeout(Duration::from_millis(10)) {
            Ok(x) => break x,
            Err(mpsc::RecvTimeoutError::Timeout) if go() => {}
            Err(_) => return st,
        }
    };
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(10)));
    let mut buf = vec![0u8; 1 << 18];
    // `app.read_rate`: a slow reader, as the applications' (apps/conn.rs)
    let mut reader = f.read_bps.map(|bps| Reader::new(bps, tm.now()));
    while go() {
        let mut want = buf.len();
        if let Some(r) = &mut reader {
            r.refill(tm.now());
            want = want.min(r.bytes() as usize);
            if want == 0 {
                tm.sleep_until(r.wake(), &stop);
                continue;
            }
        }
        match s.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => {
                if let Err(e) = window.settle(&s) {
                    st.error = Some(format!("receive window: {e}"));
                }
                let t = tm.now();
                if t > tm.end {
                    break;
                }
                if st.base.is_none() && t >= tm.warmup {
                    st.base = Some(st.total);
                }
                st.total += n as u64;
                if let Some(r) = &mut reader {
                    r.take(n as u64);
                }
                if st.completed_at.is_none() && f.app_bytes == Some(st.total) {
                    st.completed_at = Some(t);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                st.error = Some(format!("read: {e}"));
                break;
            }
        }
    }
    if st.base.is_none() {
        st.base = Some(st.total);
    }
    st
}

fn sender(
    sock: OwnedFd,
    f: FlowMap,
    tm: Times,
    stop: Arc<AtomicBool>,
    slot: Arc<Mutex<Option<TcpStream>>>,
) -> Option<String> {
    tm.sleep_until(f.start_ns, &stop);
    if stop.load(Ordering::Relaxed) || tm.now() >= tm.end {
        return None;
    }
    if let Err(e) = sys::connect_v4(&sock, f.dst_addr, f.dport) {
        return Some(format!("connect: {e}"));
    }
    let s = TcpStream::from(sock);
    if let Ok(c) = s.try_clone() {
        *slot.lock().expect("monitor lock") = Some(c);
    }
    let _ = s.set_write_timeout(Some(Duration::from_millis(10)));
    let buf = vec![0x4cu8; 1 << 16];
    let mut left = f.app_bytes.unwrap_or(u64::MAX);
    let mut s = s;
    while !stop.load(Ordering::Relaxed) && tm.now() < tm.end {
        if left == 0 {
            let _ = s.shutdown(Shutdown::Write);
            break;
        }
        let n = (buf.len() as u64).min(left) as usize;
        match s.write(&buf[..n]) {
            Ok(k) => left -= k as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Some(format!("write: {e}")),
        }
    }
    // Keep the connection until the end (the monitor reads its TCP_INFO).
    tm.sleep_until(tm.end, &stop);
    None
}

fn monitor(
    flows: Vec<FlowMap>,
    slots: Vec<Arc<Mutex<Option<TcpStream>>>>,
    tm: Times,
    stop: Arc<AtomicBool>,
) -> Vec<TxStats> {
    let mut st: Vec<TxStats> = vec![TxStats::default(); flows.len()];
    let mut prev_ca = vec![0u8; flows.len()];
    loop {
        let t = tm.now();
        let last_round = stop.load(Ordering::Relaxed) || t >= tm.end;
        for (i, slot) in slots.iter().enumerate() {
            let g = slot.lock().expect("monitor lock");
            let Some(s) = g.as_ref() else { continue };
            let Ok(info) = TcpInfo::read(s) else { continue };
            drop(g);
            let x = &mut st[i];
            if x.base.is_none() {
                if flows[i].start_ns >= tm.warmup {
                    x.base = Some(TcpInfo::default());
                } else if t >= tm.warmup {
                    x.base = Some(info);
                }
            }
            if t >= tm.warmup {
                if info.ca_state == TCP_CA_RECOVERY && prev_ca[i] != TCP_CA_RECOVERY {
                    x.recoveries += 1;
                }
                if info.ca_state == TCP_CA_LOSS && prev_ca[i] != TCP_CA_LOSS {
                    x.loss_entries += 1;
                }
                if info.rtt_us > 0 {
                    x.rtt_sum_us += info.rtt_us as u64;
                    x.rtt_n += 1;
                }
            }
            prev_ca[i] = info.ca_state;
            x.last = Some(info);
        }
        if last_round {
            return st;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// The running flows of a ferry process.
pub struct Running {
    rx: Vec<thread::JoinHandle<RxStats>>,
    tx: Vec<thread::JoinHandle<Option<String>>>,
    acc: Vec<thread::JoinHandle<Option<String>>>,
    mon: thread::JoinHandle<Vec<TxStats>>,
    pub stop: Arc<AtomicBool>,
}

/// Starts every flow's threads (a receiver and a sender per flow, an acceptor per
/// listening socket, one monitor).
pub fn start(
    flows: &[FlowMap],
    senders: Vec<OwnedFd>,
    listeners: Vec<Listener>,
    tm: Times,
) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let mut rx = Vec::new();
    let mut tx = Vec::new();
    let mut slots = Vec::new();
    let mut inbox = Vec::new();
    for (f, send) in flows.iter().zip(senders) {
        let slot = Arc::new(Mutex::new(None));
        slots.push(slot.clone());
        let (f1, f2, st1, st2) = (f.clone(), f.clone(), stop.clone(), stop.clone());
        let (to, from) = mpsc::channel();
        inbox.push(Some(to));
        rx.push(thread::spawn(move || receiver(from, f1, tm, st1)));
        tx.push(thread::spawn(move || sender(send, f2, tm, st2, slot)));
    }
    let mut acc = Vec::new();
    for l in listeners {
        let to = l
            .flows
            .iter()
            .filter_map(|&i| inbox.get_mut(i)?.take())
            .collect();
        let (fl, st) = (flows.to_vec(), stop.clone());
        acc.push(thread::spawn(move || acceptor(l, fl, to, tm, st)));
    }
    let st = stop.clone();
    let fl = flows.to_vec();
    let mon = thread::spawn(move || monitor(fl, slots, tm, st));
    Running {
        rx,
        tx,
        acc,
        mon,
        stop,
    }
}

/// One flow's outcome.
pub struct Outcome {
    pub rx: RxStats,
    pub tx: TxStats,
    pub errors: Vec<String>,
}

fn join<T: Default>(h: thread::JoinHandle<T>, what: &str, errors: &mut Vec<String>) -> T {
    let t0 = Instant::now();
    while !h.is_finished() && t0.elapsed() < Duration::from_secs(2) {
        thread::sleep(Duration::from_millis(5));
    }
    if !h.is_finished() {
        errors.push(format!("{what}: still blocked at the end"));
        return T::default();
    }
    h.join().unwrap_or_else(|_| {
        errors.push(format!("{what}: panicked"));
        T::default()
    })
}

impl Running {
    /// Stops the threads and collects each flow's outcome.
    pub fn finish(self) -> Vec<Outcome> {
        self.stop.store(true, Ordering::Relaxed);
        let mut errs = Vec::new();
        let mon = join(self.mon, "monitor", &mut errs);
        for (i, a) in self.acc.into_iter().enumerate() {
            if let Some(e) = join(a, &format!("acceptor {i}"), &mut errs) {
                errs.push(format!("acceptor {i}: {e}"));
            }
        }
        let mut out = Vec::new();
        for (i, (r, t)) in self.rx.into_iter().zip(self.tx).enumerate() {
            let mut errors = errs.clone();
            let rx = join(r, &format!("flow {i} receiver"), &mut errors);
            if let Some(e) = join(t, &format!("flow {i} sender"), &mut errors) {
                errors.push(format!("flow {i} sender: {e}"));
            }
            if let Some(e) = &rx.error {
                errors.push(format!("flow {i} receiver: {e}"));
            }
            out.push(Outcome {
                rx,
                tx: mon.get(i).cloned().unwrap_or_default(),
                errors,
            });
        }
        out
    }
}

/// A flow's result, in the simulator's fields.
pub fn flow_result(sc: &ValidScenario, i: usize, o: &Outcome, warmup: u64, end: u64) -> FlowResult {
    let info = &sc.flows[i];
    let start = info.start.0;
    let delivered = o.rx.total - o.rx.base.unwrap_or(0);
    let t0 = start.max(warmup);
    let t1 = o.rx.completed_at.unwrap_or(end).max(t0);
    let span = (t1 - t0) as f64 * 1e-9;
    let zero = TcpInfo::default();
    let (b, l) = (
        o.tx.base.as_ref().unwrap_or(&zero),
        o.tx.last.as_ref().unwrap_or(&zero),
    );
    let timeouts = match (b.total_rto, l.total_rto) {
        (Some(x), Some(y)) if o.tx.base.is_some() => y.wrapping_sub(x) as u64,
        (_, Some(y)) => y as u64,
        _ => o.tx.loss_entries,
    };
    FlowResult {
        id: info.id,
        src: sc.nodes[info.src].name.clone(),
        dst: sc.nodes[info.dst].name.clone(),
        tcp: info.tcp.tcp.name().to_string(),
        // the scenario's profile, which the namespaces' sysctls and socket options
        // follow as far as Linux can (the rest is listed in the run's `unmapped` notes)
        profile: info.tcp.report(),
        goodput_bps: if span > 0.0 {
            delivered as f64 * 8.0 / span
        } else {
            0.0
        },
        bytes_delivered: delivered,
        sender: SenderCounters {
            segments_sent: l.data_segs_out.wrapping_sub(b.data_segs_out) as u64,
            retransmitted_segments: l.total_retrans.wrapping_sub(b.total_retrans) as u64,
            timeouts,
            fast_recoveries: o.tx.recoveries,
            rtt_sum_ns: o.tx.rtt_sum_us as u128 * 1000,
            rtt_samples: o.tx.rtt_n,
            extra: Default::default(),
        },
        extra: None,
        app: None,
        completion_time_s: o
            .rx
            .completed_at
            .map(|c| c.saturating_sub(start) as f64 * 1e-9),
        mean_rtt_s: (o.tx.rtt_n > 0).then(|| o.tx.rtt_sum_us as f64 / o.tx.rtt_n as f64 * 1e-6),
        mss: info.tcp.mss,
        start_s: start as f64 * 1e-9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_info_offsets() {
        let mut b = vec![0u8; 248];
        b[0] = 1;
        b[1] = 3;
        b[68..72].copy_from_slice(&600_000u32.to_ne_bytes());
        b[80..84].copy_from_slice(&42u32.to_ne_bytes());
        b[100..104].copy_from_slice(&7u32.to_ne_bytes());
        b[156..160].copy_from_slice(&1000u32.to_ne_bytes());
        b[240..242].copy_from_slice(&2u16.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!(
            (
                t.state,
                t.ca_state,
                t.rtt_us,
                t.snd_cwnd,
                t.total_retrans,
                t.data_segs_out
            ),
            (1, 3, 600_000, 42, 7, 1000)
        );
        assert_eq!(t.total_rto, Some(2));
        assert_eq!(TcpInfo::parse(&b[..232]).total_rto, None, "an older kernel");
    }
}
