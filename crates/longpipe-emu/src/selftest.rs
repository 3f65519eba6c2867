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

use crate::ferry::{Clock, Ferry, FerryStats, Io, MonoClock, Net};
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
    let mut f = Ferry::new(Net::new(&sc, 1), 1500);
    let t0 = Instant::now();
    f.run(&mut io, &c, 0, Some(n * 12_000 + 10_000_000))
        .expect("fake devices");
    n as f64 / t0.elapsed().as_secs_f64()
}

struct Rig {
    setup: Setup,
    tx: UdpSocket,
    rx: UdpSocket,
    stop: Arc<AtomicBool>,
    ferry: Option<thread::JoinHandle<(Ferry, FerryStats)>>,
    t0: Instant,
}

impl Rig {
    fn new(sc: &ValidScenario) -> io::Result<Rig> {
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
        rx.set_read_timeout(Some(Duration::from_millis(200)))?;
        // arrival times from the kernel, not from a receiver thread's wake-up
        sys::setsockopt_int(&rx, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        let stop = Arc::new(AtomicBool::new(false));
        let tuns = std::mem::take(&mut setup.tuns);
        let mut io = TunIo::new(tuns, None)?;
        io.on_signal = false;
        io.flag = Some(stop.clone());
        let mut f = Ferry::new(Net::new(sc, 1), 1500);
        let t0 = Instant::now();
        let ferry = thread::spawn(move || {
            let _ = sys::set_timer_slack(1);
            // as `longpipe emu` runs it: the ferry's thread real-time (we are root here)
            let _ = sys::set_fifo(0, 10);
            let clock = MonoClock(t0);
            let _ = f.run(&mut io, &clock, 0, None);
            let st = f.stats.clone();
            (f, st)
        });
        Ok(Rig {
            setup,
            tx,
            rx,
            stop,
            ferry: Some(ferry),
            t0,
        })
    }

    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    fn finish(mut self) -> (Ferry, FerryStats) {
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

/// Receives until `n` packets or a quiet period; (kernel arrival time, CLOCK_REALTIME
/// ns, and the bytes) per packet.
fn receive(rig: &Rig, n: usize) -> Vec<(u64, Vec<u8>)> {
    let mut got = Vec::with_capacity(n);
    let mut b = vec![0u8; 2048];
    while got.len() < n {
        match sys::recv_timestamped(&rig.rx, &mut b) {
            Ok((k, ts)) => got.push((ts, b[..k].to_vec())),
            Err(_) => break,
        }
    }
    got
}

pub struct DelayResult {
    pub n: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub ferry_late_p99_us: f64,
}

/// Delay error at low load.
pub fn delay(n: usize) -> io::Result<DelayResult> {
    let sc = scenario("10Mbps", "10ms", "");
    let rig = Rig::new(&sc)?;
    thread::sleep(Duration::from_millis(50));
    let rx = thread::scope(|s| {
        let h = s.spawn(|| receive(&rig, n));
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
    let (_, st) = rig.finish();
    // 100 B at 10 Mbit/s: 80 us of transmission, plus 10 ms of propagation.
    let expect = 10_000_000u64 + 80_000;
    let mut err: Vec<f64> = rx
        .iter()
        .map(|(t, b)| {
            let sent = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
            (*t as f64 - sent as f64 - expect as f64).abs() / 1000.0
        })
        .collect();
    if err.is_empty() {
        return Err(io::Error::other("no probe arrived"));
    }
    Ok(DelayResult {
        n: err.len(),
        p50_us: quantile(&mut err, 0.5),
        p99_us: quantile(&mut err, 0.99),
        max_us: quantile(&mut err, 1.0),
        ferry_late_p99_us: st.late.quantile_ns(0.99).unwrap_or(0) as f64 / 1000.0,
    })
}

/// Rate at the receiver (bit/s of IPv4 bytes) for a link of `bps`, over `secs`.
pub fn rate(bps: u64, secs: f64) -> io::Result<(f64, u64)> {
    let sc = scenario(&format!("{bps}bps"), "1ms", "");
    let rig = Rig::new(&sc)?;
    thread::sleep(Duration::from_millis(50));
    let offered = bps as f64 * 1.1 / (1500.0 * 8.0); // packets per second
    let total = (offered * secs) as usize;
    let rx = thread::scope(|s| {
        let h = s.spawn(|| receive(&rig, total));
        let p = vec![0u8; 1472];
        let t0 = rig.now();
        let mut sent = 0usize;
        while sent < total {
            let due = ((rig.now() - t0) as f64 * 1e-9 * offered) as usize + 1;
            while sent < due.min(total) {
                let _ = rig.tx.send(&p);
                sent += 1;
            }
            thread::sleep(Duration::from_micros(200));
        }
        h.join().expect("receiver")
    });
    let (_, st) = rig.finish();
    if rx.len() < 10 {
        return Err(io::Error::other("too few datagrams arrived"));
    }
    let span = (rx[rx.len() - 1].0 - rx[0].0) as f64 * 1e-9;
    let bytes = (rx.len() - 1) as f64 * 1500.0;
    Ok((bytes * 8.0 / span, st.read))
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
        let h = s.spawn(|| receive(&rig, n));
        let b = vec![0u8; 172];
        for i in 0..n {
            let _ = rig.tx.send(&b);
            if i % 5 == 4 {
                thread::sleep(Duration::from_micros(100)); // gentle: no kernel drops
            }
        }
        h.join().expect("receiver")
    });
    let (f, _) = rig.finish();
    let drops = match &f.measured(0)[0] {
        crate::ferry::DirMetrics::Link(c) => c.drops_loss,
        _ => 0,
    };
    Ok((1.0 - rx.len() as f64 / n as f64, drops, n))
}

pub fn main(args: &[String]) -> i32 {
    let quick = args.iter().any(|a| a == "--quick");
    let json = args.iter().any(|a| a == "--json");
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
        let d = delay(if quick { 300 } else { 2000 })?;
        say(format!(
            "delay error (10 ms link, 100 B probes, n = {}): p50 {:.1} us, p99 {:.1} us, max {:.1} us; ferry lateness p99 {:.1} us (target: p99 < 200 us)",
            d.n, d.p50_us, d.p99_us, d.max_us, d.ferry_late_p99_us
        ));
        out.insert(
            "delay".into(),
            serde_json::json!({"n": d.n, "p50_us": d.p50_us, "p99_us": d.p99_us, "max_us": d.max_us,
                               "ferry_late_p99_us": d.ferry_late_p99_us}),
        );
        let mut rates = Vec::new();
        let list: &[u64] = if quick {
            &[1_000_000, 100_000_000]
        } else {
            &[1_000_000, 10_000_000, 100_000_000, 1_000_000_000]
        };
        for &bps in list {
            let secs = if quick { 1.0 } else { 3.0 };
            let (got, read) = rate(bps, secs)?;
            let e = (got / bps as f64 - 1.0) * 100.0;
            say(format!(
                "rate {:>5} Mbit/s: measured {:.3} Mbit/s ({e:+.2} %; {read} packets ferried) (target: within 1 %)",
                bps / 1_000_000,
                got / 1e6
            ));
            rates.push(serde_json::json!({"bps": bps, "measured_bps": got, "error_pct": e}));
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
