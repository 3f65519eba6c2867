//! `longpipe-emu selftest`: how exact and how fast the emulator is, measured here.
//!
//! 1. *Engine*: the ferry's own cost per packet (fake devices, a clock that moves at the
//!    link's pace): 1500 B packets through a 1 Gbit/s link direction, on one core.
//! 2. *Delay*: UDP probes (100 B, 1 per ms) from namespace `a` to `b` over a 10 Mbit/s,
//!    10 ms link; one-way delay from the send time (CLOCK_REALTIME just before `send`)
//!    to the kernel's arrival timestamp at the receiver (SO_TIMESTAMPNS), minus the
//!    configured delay and the transmission time: the sender's and receiver's kernel
//!    paths included, the receiving thread's wake-up not.
//!    The ferry's own lateness (write time − due time) is reported beside it.
//! 3. *Rate*: 1500 B UDP datagrams offered at 1.1 × the link rate for each rate from
//!    1 Mbit/s to 1 Gbit/s; the rate at the receiver (IPv4 bytes between the first
//!    and last kernel arrival timestamps) against the configured one.
//! 4. *Loss*: 20,000 probes through a Bernoulli p = 1 % link; the observed loss
//!    against the 99.9 % binomial interval (and the ferry's count, which is the
//!    simulator's seeded stream).
//!
//! Why one file of ~680 lines: the four checks share the rig (namespaces, devices, the
//! ferry thread), the receiver and the report; each check is one function.

use crate::ferry::{Clock, EarlyWake, Ferry, FerryStats, Io, MonoClock, Net};
use crate::netns::{self, Setup};
use crate::sys;
use crate::tun::TunIo;
use longpipe_core::scenario::{parse_json, ValidScenario};
use std::cell::Cell;
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

fn scenario(rate: &str, delay: &str, loss: &str) -> ValidScenario {
    let loss = if loss.is_empty() {
        String::new()
    } else {
        format!(r#","loss":{loss}"#)
    };
    parse_json(&format!(
        r#"{{"name":"selftest","duration":"1000s","link":[{{"a":"a","b":"b","rate":"{rate}","delay":"{delay}","queue":{{"limit":"2000pkt"}}{loss}}}]}}"#
    ))
    .and_then(|s| s.validate())
    .expect("a valid self-test scenario")
}

/// Packets per second the ferry moves with fake devices (one core).
pub fn engine_pps(n: u64) -> f64 {
    struct C(Cell<u64>);
    impl Clock for C {
        fn now(&self) -> u64 {
            self.0.get()
        }
    }
    struct Src<'a> {
        c: &'a C,
        left: u64,
        step: u64,
        out: u64,
        pkt: Vec<u8>,
    }
    impl Io for Src<'_> {
        fn ports(&self) -> usize {
            2
        }
        fn recv(&mut self, p: usize, buf: &mut [u8]) -> io::Result<Option<usize>> {
            if p != 0 || self.left == 0 {
                return Ok(None);
            }
            self.left -= 1;
            // the clock moves one transmission time per packet: a saturated link
            self.c.0.set(self.c.0.get() + self.step);
            buf[..self.pkt.len()].copy_from_slice(&self.pkt);
            Ok(Some(self.pkt.len()))
        }
        fn send(&mut self, _: usize, _: &[u8]) -> io::Result<()> {
            self.out += 1;
            Ok(())
        }
        fn wait(&mut self, t: Option<u64>) -> io::Result<()> {
            self.c.0.set(self.c.0.get() + t.unwrap_or(0));
            Ok(())
        }
        fn stop_requested(&mut self) -> bool {
            self.left == 0 && self.out > 0
        }
    }
    let sc = scenario("1Gbps", "1ms", "");
    let c = C(Cell::new(0));
    let mut pkt = vec![0u8; 1500];
    pkt[0] = 0x45;
    pkt[2..4].copy_from_slice(&1500u16.to_be_bytes());
    let mut io = Src {
        c: &c,
        left: n,
        step: 12_000,
        out: 0,
        pkt,
    };
    let mut f = Ferry::new(Net::new(&sc, 1).unwrap(), 1500);
    let t0 = Instant::now();
    f.run(&mut io, &c, 0, Some(n * 12_000 + 10_000_000))
        .expect("fake devices");
    n as f64 / t0.elapsed().as_secs_f64()
}

/// A thread's scheduling counters (/proc/thread-self/schedstat): ns on a CPU, ns
/// runnable but waiting for one, and times it was put on a CPU.
#[derive(Clone, Copy, Default, Debug)]
pub struct Sched {
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
}

impl Sched {
    /// The calling thread's counters (zero if the kernel has no schedstat).
    pub fn now() -> Sched {
        let t = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let v: Vec<u64> = t
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        match v[..] {
            [r, w, s, ..] => Sched {
                run_ns: r,
                wait_ns: w,
                slices: s,
            },
            _ => Sched::default(),
        }
    }

    pub fn since(&self, b: &Sched) -> Sched {
        Sched {
            run_ns: self.run_ns.saturating_sub(b.run_ns),
            wait_ns: self.wait_ns.saturating_sub(b.wait_ns),
            slices: self.slices.saturating_sub(b.slices),
        }
    }
}

/// SCHED_FIFO priority of the ferry in the self-test (as `longpipe emu` runs it) and
/// of the self-test's own traffic generator and receiver (below it).
const FERRY_PRIO: i32 = 10;
const HARNESS_PRIO: i32 = 5;

/// The ferry thread's result: the ferry, its counters, its scheduling over the run.
type FerryOut = (Ferry, FerryStats, Sched);

struct Rig {
    setup: Setup,
    tx: UdpSocket,
    rx: UdpSocket,
    stop: Arc<AtomicBool>,
    ferry: Option<thread::JoinHandle<FerryOut>>,
    t0: Instant,
    /// CLOCK_REALTIME − the ferry's clock, ns.
    off_ns: i128,
}

impl Rig {
    fn new(sc: &ValidScenario) -> io::Result<Rig> {
        Rig::with_capture(sc, false)
    }

    /// With `capture`, the ferry records both ports (read and write times per packet).
    fn with_capture(sc: &ValidScenario, capture: bool) -> io::Result<Rig> {
        let m = crate::linux::map(sc, None, &[]).map_err(|e| io::Error::other(e.to_string()))?;
        let mut setup = Setup::create(sc, &m)?;
        let mk = |u: usize, port: u16| -> io::Result<UdpSocket> {
            setup.enter(u)?;
            let s = sys::udp_socket();
            setup.leave()?;
            let s = s?;
            sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20)?;
            sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 8 << 20)?;
            sys::bind_v4(&s, [10, 0, 0, u as u8 + 1], port)?;
            Ok(UdpSocket::from(s))
        };
        let tx = mk(0, 9000)?;
        let rx = mk(1, 9001)?;
        tx.connect("10.0.0.2:9001")?;
        rx.set_nonblocking(true)?;
        // arrival times from the kernel, not from a receiver thread's wake-up
        sys::setsockopt_int(&rx, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        let stop = Arc::new(AtomicBool::new(false));
        let tuns = std::mem::take(&mut setup.tuns);
        let mut io = TunIo::new(tuns, None)?;
        io.on_signal = false;
        io.flag = Some(stop.clone());
        let mut f = Ferry::new(Net::new(sc, 1).unwrap(), 1500);
        f.spin_before_due(EarlyWake::DEFAULT_MAX_NS);
        if capture {
            f.capture(0);
            f.capture(1);
        }
        let t0 = Instant::now();
        let ferry = thread::spawn(move || {
            let _ = sys::set_timer_slack(1);
            // as `longpipe emu` runs it: the ferry's thread real-time (we are root here)
            let _ = sys::set_fifo(0, FERRY_PRIO);
            let clock = MonoClock(t0);
            let s0 = Sched::now();
            let _ = f.run(&mut io, &clock, 0, None);
            let st = f.stats.clone();
            (f, st, Sched::now().since(&s0))
        });
        // The offset between the two clocks: the closest of a few readings.
        let mut off_ns = 0i128;
        let mut best = u64::MAX;
        for _ in 0..20 {
            let a = t0.elapsed().as_nanos() as u64;
            let r = sys::realtime_ns();
            let b = t0.elapsed().as_nanos() as u64;
            if b - a < best {
                best = b - a;
                off_ns = r as i128 - (a / 2 + b / 2) as i128;
            }
        }
        Ok(Rig {
            setup,
            tx,
            rx,
            stop,
            ferry: Some(ferry),
            t0,
            off_ns,
        })
    }

    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// Runs `f` in node `u`'s namespace (this thread), for reading its counters.
    fn in_ns<T>(&self, u: usize, f: impl FnOnce() -> T) -> io::Result<T> {
        self.setup.enter(u)?;
        let r = f();
        self.setup.leave()?;
        Ok(r)
    }

    fn finish(mut self) -> FerryOut {
        self.stop.store(true, Ordering::Relaxed);
        let r = self.ferry.take().expect("running").join().expect("ferry");
        self.setup.teardown();
        r
    }
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Receives until `n` packets or 200 ms of quiet: per packet, the kernel's arrival time
/// (CLOCK_REALTIME ns) and its first `keep` bytes. Also the receiving thread's
/// scheduling counters. It drains the socket every millisecond rather than wait on it,
/// so the ferry's writes never have to wake it (a cost in the ferry's thread that
/// would be the harness's, not the emulator's); the arrival times are the kernel's.
fn receive(rig: &Rig, n: usize, keep: usize) -> (Vec<(u64, [u8; 8])>, Sched) {
    let s0 = Sched::now();
    let mut got = Vec::with_capacity(n);
    let mut b = vec![0u8; 2048];
    let keep = keep.min(8);
    let mut quiet = Instant::now();
    while got.len() < n {
        match sys::recv_timestamped(&rig.rx, &mut b) {
            Ok((_, ts)) => {
                let mut k = [0u8; 8];
                k[..keep].copy_from_slice(&b[..keep]);
                got.push((ts, k));
                quiet = Instant::now();
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if quiet.elapsed() > Duration::from_millis(200) {
                    break;
                }
                thread::sleep(Duration::from_millis(1));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (got, Sched::now().since(&s0))
}

/// The records of an in-memory pcap file (nanosecond format): (time, captured bytes).
fn pcap_records(b: &[u8]) -> Vec<(u64, &[u8])> {
    let mut v = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let u = |k: usize| u32::from_le_bytes(b[i + k..i + k + 4].try_into().expect("4 bytes"));
        let (sec, ns, cap) = (u(0) as u64, u(4) as u64, u(8) as usize);
        let end = (i + 16 + cap).min(b.len());
        v.push((sec * 1_000_000_000 + ns, &b[i + 16..end]));
        i = end;
    }
    v
}

/// p50, p99 and max of a sample, µs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spread {
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Spread {
    fn of(v: &mut [f64]) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        Spread {
            p50_us: quantile(v, 0.5),
            p99_us: quantile(v, 0.99),
            max_us: quantile(v, 1.0),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({"p50_us": self.p50_us, "p99_us": self.p99_us, "max_us": self.max_us})
    }
}

pub struct DelayResult {
    pub n: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub ferry_late_p99_us: f64,
    /// Where the error arises, per probe: send → the ferry's read (the sender's kernel
    /// path and the ferry's wake-up), the ferry's lateness (write − due), and the
    /// ferry's write → the receiver's kernel timestamp.
    pub inbound: Spread,
    pub late: Spread,
    pub outbound: Spread,
    /// The ferry thread's wake-ups and CPU time over the run.
    pub wakeups: u64,
    pub ferry_cpu_ms: f64,
}

/// Delay error at low load.
pub fn delay(n: usize) -> io::Result<DelayResult> {
    let sc = scenario("10Mbps", "10ms", "");
    let rig = Rig::with_capture(&sc, true)?;
    thread::sleep(Duration::from_millis(50));
    let (rx, _) = thread::scope(|s| {
        let h = s.spawn(|| receive(&rig, n, 8));
        let mut p = vec![0u8; 72]; // + 28 B of headers = 100 B
        let start = rig.now();
        for i in 0..n {
            p[..8].copy_from_slice(&sys::realtime_ns().to_le_bytes());
            let _ = rig.tx.send(&p);
            let next = start + (i as u64 + 1) * 1_000_000;
            let now = rig.now();
            if next > now {
                thread::sleep(Duration::from_nanos(next - now));
            }
        }
        h.join().expect("receiver")
    });
    let off = rig.off_ns;
    let (f, st, sched) = rig.finish();
    // 100 B at 10 Mbit/s: 80 us of transmission, plus 10 ms of propagation.
    let expect = 10_000_000u64 + 80_000;
    // The ferry's read (port 0) and write (port 1) time of each probe, by its send time
    // (the first 8 bytes after the IPv4 and UDP headers), on CLOCK_REALTIME.
    let times = |p: usize| -> std::collections::HashMap<u64, f64> {
        let Some(c) = &f.caps[p] else {
            return Default::default();
        };
        pcap_records(c.as_bytes())
            .into_iter()
            .filter(|(_, d)| d.len() >= 36)
            .map(|(t, d)| {
                let k = u64::from_le_bytes(d[28..36].try_into().expect("8 bytes"));
                (k, (t as i128 + off) as f64)
            })
            .collect()
    };
    let (read, written) = (times(0), times(1));
    let (mut err, mut inb, mut late, mut outb) = (vec![], vec![], vec![], vec![]);
    for (t, b) in &rx {
        let sent = u64::from_le_bytes(*b);
        err.push((*t as f64 - sent as f64 - expect as f64).abs() / 1000.0);
        if let (Some(r), Some(w)) = (read.get(&sent), written.get(&sent)) {
            inb.push((r - sent as f64) / 1000.0);
            late.push((w - r - expect as f64) / 1000.0);
            outb.push((*t as f64 - w) / 1000.0);
        }
    }
    if err.is_empty() {
        return Err(io::Error::other("no probe arrived"));
    }
    Ok(DelayResult {
        n: err.len(),
        p50_us: quantile(&mut err, 0.5),
        p99_us: quantile(&mut err, 0.99),
        max_us: quantile(&mut err, 1.0),
        ferry_late_p99_us: st.late.quantile_ns(0.99).unwrap_or(0) as f64 / 1000.0,
        inbound: Spread::of(&mut inb),
        late: Spread::of(&mut late),
        outbound: Spread::of(&mut outb),
        wakeups: st.wakeups,
        ferry_cpu_ms: sched.run_ns as f64 / 1e6,
    })
}

/// Counters of a rate run, to tell where packets were lost and time went.
#[derive(Debug, Default)]
pub struct RateResult {
    /// At the receiver: bit/s of IPv4 bytes between the first and last arrival.
    pub bps: f64,
    pub offered: u64,
    pub send_errors: u64,
    /// Dropped by the sender's kernel at its TUN device (the ferry read too slowly).
    pub tun_drops: u64,
    pub ferried: u64,
    pub queue_drops: u64,
    pub written: u64,
    pub received: u64,
    /// Dropped at the receiving socket (the self-test's receiver read too slowly).
    pub socket_drops: u64,
    pub secs: f64,
    pub sender: Sched,
    pub ferry: Sched,
    pub receiver: Sched,
    pub wakeups: u64,
    pub spins: u64,
    /// The ferry's spin time (ms), and its rests (number, ms).
    pub spin_ms: f64,
    pub rests: u64,
    pub rest_ms: f64,
    pub late_p99_us: f64,
}

/// A device's dropped transmissions, from the calling thread's namespace.
fn tx_dropped(dev: &str) -> u64 {
    let t = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap_or_default();
    t.lines()
        .find_map(|l| {
            let (name, rest) = l.split_once(':')?;
            (name.trim() == dev).then(|| rest.split_whitespace().nth(11)?.parse().ok())?
        })
        .unwrap_or(0)
}

/// UDP RcvbufErrors of the calling thread's namespace.
fn udp_rcvbuf_errors() -> u64 {
    let t = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
    let mut l = t.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(h), Some(v)) = (l.next(), l.next()) else {
        return 0;
    };
    h.split_whitespace()
        .zip(v.split_whitespace())
        .find_map(|(k, v)| (k == "RcvbufErrors").then(|| v.parse().ok())?)
        .unwrap_or(0)
}

/// Rate at the receiver for a link of `bps`, over `secs`, with counters.
pub fn rate(bps: u64, secs: f64) -> io::Result<RateResult> {
    let sc = scenario(&format!("{bps}bps"), "1ms", "");
    let rig = Rig::new(&sc)?;
    thread::sleep(Duration::from_millis(50));
    let offered = bps as f64 * 1.1 / (1500.0 * 8.0); // packets per second
    let total = (offered * secs) as usize;
    let dev = netns::dev_name(0);
    let (tun0, sock0) = (
        rig.in_ns(0, || tx_dropped(&dev))?,
        rig.in_ns(1, udp_rcvbuf_errors)?,
    );
    // The generator and the receiver run real-time too (below the ferry): on a busy
    // machine an ordinary thread is held off for milliseconds and then catches up in
    // a burst, and the link idles meanwhile: the figure would measure the generator.
    let ((rx, receiver), (sender, send_errors)) = thread::scope(|s| {
        let h = s.spawn(|| {
            let _ = sys::set_fifo(0, HARNESS_PRIO);
            receive(&rig, total, 0)
        });
        let g = s.spawn(|| {
            let _ = sys::set_fifo(0, HARNESS_PRIO);
            let _ = sys::set_timer_slack(1);
            let s0 = Sched::now();
            let p = vec![0u8; 1472];
            let t0 = rig.now();
            let mut sent = 0usize;
            let mut errors = 0u64;
            while sent < total {
                let due = ((rig.now() - t0) as f64 * 1e-9 * offered) as usize + 1;
                while sent < due.min(total) {
                    if rig.tx.send(&p).is_err() {
                        errors += 1;
                    }
                    sent += 1;
                }
                thread::sleep(Duration::from_micros(200));
            }
            (Sched::now().since(&s0), errors)
        });
        (h.join().expect("receiver"), g.join().expect("generator"))
    });
    let (tun1, sock1) = (
        rig.in_ns(0, || tx_dropped(&dev))?,
        rig.in_ns(1, udp_rcvbuf_errors)?,
    );
    let (f, st, ferry) = rig.finish();
    if rx.len() < 10 {
        return Err(io::Error::other("too few datagrams arrived"));
    }
    let span = (rx[rx.len() - 1].0 - rx[0].0) as f64 * 1e-9;
    let bytes = (rx.len() - 1) as f64 * 1500.0;
    let queue_drops = match &f.measured(0)[0] {
        longpipe_core::l2::DirCounters::Link(c) => c.drops_queue,
        _ => 0,
    };
    Ok(RateResult {
        bps: bytes * 8.0 / span,
        offered: total as u64,
        send_errors,
        tun_drops: tun1 - tun0,
        ferried: st.read,
        queue_drops,
        written: st.written,
        received: rx.len() as u64,
        socket_drops: sock1 - sock0,
        secs: span,
        sender,
        ferry,
        receiver,
        wakeups: st.wakeups,
        spins: st.spins,
        spin_ms: f.early.as_ref().map_or(0.0, |e| e.spun_ns as f64 / 1e6),
        rests: f.early.as_ref().map_or(0, |e| e.rests),
        rest_ms: f.early.as_ref().map_or(0.0, |e| e.rest_ns as f64 / 1e6),
        late_p99_us: st.late.quantile_ns(0.99).unwrap_or(0) as f64 / 1000.0,
    })
}

/// Loss fraction seen through a Bernoulli(p) link: (observed, ferry's count, n).
pub fn loss(p: f64, n: usize) -> io::Result<(f64, u64, usize)> {
    let sc = scenario(
        "100Mbps",
        "1ms",
        &format!(r#"{{"kind":"bernoulli","p":{p}}}"#),
    );
    let rig = Rig::new(&sc)?;
    thread::sleep(Duration::from_millis(50));
    let rx = thread::scope(|s| {
        let h = s.spawn(|| receive(&rig, n, 0).0);
        let b = vec![0u8; 172];
        for i in 0..n {
            let _ = rig.tx.send(&b);
            if i % 5 == 4 {
                thread::sleep(Duration::from_micros(100)); // gentle: no kernel drops
            }
        }
        h.join().expect("receiver")
    });
    let (f, _, _) = rig.finish();
    let drops = match &f.measured(0)[0] {
        longpipe_core::l2::DirCounters::Link(c) => c.drops_loss,
        _ => 0,
    };
    Ok((1.0 - rx.len() as f64 / n as f64, drops, n))
}

/// The rate check's lines: the figure, and where packets and CPU time went.
fn rate_line(bps: u64, r: &RateResult) -> String {
    let e = (r.bps / bps as f64 - 1.0) * 100.0;
    let pct = |s: &Sched| s.run_ns as f64 / (r.secs * 1e7);
    format!(
        "rate {:>5} Mbit/s: measured {:.3} Mbit/s ({e:+.2} %; {} packets ferried) (target: within 1 %)\n  \
         offered {} (send errors {}, dropped at the sender's TUN {}), ferried {}, queue drops {}, written {}, received {} (socket drops {}); \
         CPU over {:.2} s: sender {:.0} %, ferry {:.0} % (waited {:.0} %, {} sleeps, spun {:.0} ms, {} rests of {:.0} ms in all, late p99 {:.0} us), receiver {:.0} %",
        bps / 1_000_000,
        r.bps / 1e6,
        r.ferried,
        r.offered, r.send_errors, r.tun_drops, r.ferried, r.queue_drops, r.written, r.received,
        r.socket_drops, r.secs, pct(&r.sender), pct(&r.ferry), r.ferry.wait_ns as f64 / (r.secs * 1e7),
        r.wakeups, r.spin_ms, r.rests, r.rest_ms, r.late_p99_us, pct(&r.receiver)
    )
}

pub fn main(args: &[String]) -> i32 {
    let quick = args.iter().any(|a| a == "--quick");
    let json = args.iter().any(|a| a == "--json");
    // `--rate MBPS` (repeatable): only the rate check, at these rates (for profiling).
    let only: Vec<u64> = args
        .windows(2)
        .filter(|w| w[0] == "--rate")
        .filter_map(|w| w[1].parse::<u64>().ok().map(|m| m * 1_000_000))
        .collect();
    if let Err(e) = netns::preflight() {
        eprintln!("error: {e}");
        return 2;
    }
    let _ = sys::set_timer_slack(1);
    let mut out = serde_json::Map::new();
    let say = |s: String| {
        if !json {
            println!("{s}");
        }
    };
    let pps = engine_pps(if quick { 200_000 } else { 2_000_000 });
    say(format!(
        "engine: {:.2} M packets/s of 1500 B through a 1 Gbit/s link direction on one core = {:.1} Gbit/s (fake devices)",
        pps / 1e6,
        pps * 12_000.0 / 1e9
    ));
    out.insert("engine_pps".into(), pps.into());
    let r = (|| -> io::Result<()> {
        if !only.is_empty() {
            for &bps in &only {
                let r = rate(bps, 3.0)?;
                say(rate_line(bps, &r));
            }
            return Ok(());
        }
        let d = delay(if quick { 300 } else { 2000 })?;
        say(format!(
            "delay error (10 ms link, 100 B probes, n = {}): p50 {:.1} us, p99 {:.1} us, max {:.1} us; ferry lateness p99 {:.1} us (target: p99 < 200 us)",
            d.n, d.p50_us, d.p99_us, d.max_us, d.ferry_late_p99_us
        ));
        say(format!(
            "  p50/p99/max, us: send -> ferry read {:.1}/{:.1}/{:.1}; ferry late {:.1}/{:.1}/{:.1}; ferry write -> arrival {:.1}/{:.1}/{:.1}; {} wake-ups, ferry CPU {:.0} ms",
            d.inbound.p50_us, d.inbound.p99_us, d.inbound.max_us,
            d.late.p50_us, d.late.p99_us, d.late.max_us,
            d.outbound.p50_us, d.outbound.p99_us, d.outbound.max_us,
            d.wakeups, d.ferry_cpu_ms
        ));
        out.insert(
            "delay".into(),
            serde_json::json!({"n": d.n, "p50_us": d.p50_us, "p99_us": d.p99_us, "max_us": d.max_us,
                               "ferry_late_p99_us": d.ferry_late_p99_us,
                               "inbound": d.inbound.json(), "late": d.late.json(), "outbound": d.outbound.json(),
                               "wakeups": d.wakeups, "ferry_cpu_ms": d.ferry_cpu_ms}),
        );
        let mut rates = Vec::new();
        let list: &[u64] = if quick {
            &[1_000_000, 100_000_000]
        } else {
            &[1_000_000, 10_000_000, 100_000_000, 1_000_000_000]
        };
        for &bps in list {
            let secs = if quick { 1.0 } else { 3.0 };
            let r = rate(bps, secs)?;
            let e = (r.bps / bps as f64 - 1.0) * 100.0;
            say(rate_line(bps, &r));
            rates.push(serde_json::json!({"bps": bps, "measured_bps": r.bps, "error_pct": e,
                "offered": r.offered, "send_errors": r.send_errors, "tun_drops": r.tun_drops,
                "ferried": r.ferried, "queue_drops": r.queue_drops, "written": r.written,
                "received": r.received, "socket_drops": r.socket_drops,
                "cpu_ms": {"sender": r.sender.run_ns as f64 / 1e6, "ferry": r.ferry.run_ns as f64 / 1e6,
                           "ferry_waited": r.ferry.wait_ns as f64 / 1e6, "receiver": r.receiver.run_ns as f64 / 1e6},
                "ferry_wakeups": r.wakeups, "ferry_spins": r.spins, "ferry_spin_ms": r.spin_ms,
                "ferry_rests": r.rests, "ferry_rest_ms": r.rest_ms, "ferry_late_p99_us": r.late_p99_us}));
        }
        out.insert("rate".into(), rates.into());
        let (lf, drops, n) = loss(0.01, if quick { 5000 } else { 20_000 })?;
        let half = 3.29 * (0.01f64 * 0.99 / n as f64).sqrt();
        say(format!(
            "loss (Bernoulli p = 1 %, n = {n}): ferry dropped {drops} ({:.3} %), the receiver missed {:.3} %; 99.9 % interval {:.3}..{:.3} %",
            drops as f64 / n as f64 * 100.0,
            lf * 100.0,
            (0.01 - half) * 100.0,
            (0.01 + half) * 100.0
        ));
        out.insert(
            "loss".into(),
            serde_json::json!({"p": 0.01, "n": n, "observed": lf, "ferry_drops": drops, "ci999": [0.01 - half, 0.01 + half]}),
        );
        Ok(())
    })();
    if let Err(e) = r {
        eprintln!("error: selftest: {e}");
        return 1;
    }
    if json {
        println!("{}", serde_json::Value::Object(out));
    }
    0
}
