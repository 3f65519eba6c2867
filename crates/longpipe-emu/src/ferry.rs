//! The ferry: the scenario's link directions (the core's [`LinkDirection`] and
//! [`RlcLink`], generic over the unit) run by the core's [`Driver`] from a monotonic
//! clock, fed with the packets that TUN devices hand over and writing out what leaves.
//!
//! Ports: every link has two ends, and end `side` (0 = `a`, 1 = `b`) of link `li` is port
//! `2 * li + side`, one TUN device in that node's namespace. What the kernel sends on
//! port `p` enters link direction `p` (direction 0 of a link is a->b, as in the
//! simulator); what leaves direction `d` is written to port `d ^ 1`, the far end.
//!
//! The loop, single-threaded: read every port until it has nothing (at most
//! [`BATCH`] packets per port per round, each injected at its own clock reading), run
//! the driver up to the present, write the packets whose time has come, then sleep in
//! `ppoll` until a device is readable or the driver's next deadline (nanosecond timeout;
//! the thread's timer slack is set to 1 ns by the caller). No busy waiting, no
//! allocation per packet: buffers come from a [`Pool`] and go back to it after the
//! write; the driver's exit list is drained into a reused vector.
//!
//! Capture (`--pcap A-B`): at node A's TUN device on link A-B, what A's kernel sends as
//! the ferry reads it and what arrives as the ferry writes it: what `tcpdump -i` on
//! that device would show (the simulator records a sent packet at the start of its
//! transmission instead, after the queue). Headers only, as in the simulator.

use crate::pkt::{Pkt, Pool};
use longpipe_core::element::{ElemId, Element, Emit, PortId};
use longpipe_core::engine::driver::{Dispatch, Driver};
use longpipe_core::l2::rlc::{RlcCounters, RlcLink};
use longpipe_core::l2::Layer2Config;
use longpipe_core::net::capture::SNAPLEN;
use longpipe_core::net::link::{LinkCounters, LinkDirection};
use longpipe_core::net::loss::LossState;
use longpipe_core::rng::RngStream;
use longpipe_core::scenario::ValidScenario;
use longpipe_core::sim::{loss_stream, queue_stream};
use longpipe_core::stats::Since;
use longpipe_core::time::SimTime;
use longpipe_core::wire::PcapWriter;
use std::io;

/// Most packets read from one port before the others get a turn.
pub const BATCH: usize = 64;

/// A link direction of the emulator (a handful per run: the common kind unboxed).
#[allow(clippy::large_enum_variant)]
pub enum Elem {
    Link(LinkDirection<Pkt>),
    Rlc(Box<RlcLink<Pkt>>),
}

impl Dispatch<Pkt> for Elem {
    #[inline]
    fn handle(&mut self, now: SimTime, port: PortId, unit: Pkt, out: &mut Vec<Emit<Pkt>>) {
        match self {
            Elem::Link(e) => e.handle(now, port, unit, out),
            Elem::Rlc(e) => e.handle(now, port, unit, out),
        }
    }
    #[inline]
    fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            Elem::Link(e) => e.poll_timeout(),
            Elem::Rlc(e) => e.poll_timeout(),
        }
    }
    #[inline]
    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<Pkt>>) {
        match self {
            Elem::Link(e) => e.handle_timeout(now, out),
            Elem::Rlc(e) => e.handle_timeout(now, out),
        }
    }
}

/// A link direction's counters.
#[derive(Debug, Clone)]
pub enum DirMetrics {
    Link(LinkCounters),
    Rlc(RlcCounters),
}

impl Since for DirMetrics {
    fn since(&self, base: &Self) -> Self {
        match (self, base) {
            (DirMetrics::Link(a), DirMetrics::Link(b)) => DirMetrics::Link(a.since(b)),
            (DirMetrics::Rlc(a), DirMetrics::Rlc(b)) => DirMetrics::Rlc(a.since(b)),
            _ => unreachable!("a direction keeps its kind"),
        }
    }
}

/// The scenario's link directions in a driver.
pub struct Net {
    pub d: Driver<Pkt, Elem>,
    /// Element of direction `2 * link + k`.
    pub dirs: Vec<ElemId>,
}

impl Net {
    /// Builds every link direction as the simulator does, with the same loss streams
    /// (seeded from `seed` and named by [`loss_stream`]).
    pub fn new(sc: &ValidScenario, seed: u64) -> Net {
        let mut d: Driver<Pkt, Elem> = Driver::new();
        let mut dirs = Vec::with_capacity(sc.links.len() * 2);
        for (li, l) in sc.links.iter().enumerate() {
            for (k, info) in l.dirs.iter().enumerate() {
                let (from, to) = if k == 0 { (l.a, l.b) } else { (l.b, l.a) };
                let stream = loss_stream(sc, li, from, to);
                let loss = LossState::new(info.link.loss.clone(), RngStream::new(seed, &stream));
                let e = match &info.layer2 {
                    None => Elem::Link(LinkDirection::build(
                        &info.link,
                        loss,
                        RngStream::new(seed, &queue_stream(&stream)),
                        seed,
                    )),
                    Some(Layer2Config::RlcAm(cfg)) => Elem::Rlc(Box::new(RlcLink::new(
                        cfg.clone(),
                        info.link.rate,
                        info.link.delay,
                        l.dirs[1 - k].link.delay,
                        info.link.queue.admission,
                        loss,
                    ))),
                    Some(Layer2Config::Atm(_)) => {
                        unreachable!("linux::map refuses ATM links before a run")
                    }
                };
                dirs.push(d.add(e));
            }
        }
        d.start();
        Net { d, dirs }
    }

    /// Every direction's counters at `now`.
    pub fn metrics(&self, now: SimTime) -> Vec<DirMetrics> {
        self.dirs
            .iter()
            .map(|&id| match self.d.elem(id) {
                Elem::Link(l) => DirMetrics::Link(l.metrics(now)),
                Elem::Rlc(r) => DirMetrics::Rlc(r.metrics(now)),
            })
            .collect()
    }
}

/// Nanoseconds since the emulation's time zero.
pub trait Clock {
    fn now(&self) -> u64;
}

/// CLOCK_MONOTONIC (through `Instant`), in ns since `t0`.
pub struct MonoClock(pub std::time::Instant);

impl Clock for MonoClock {
    #[inline]
    fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// The ferry's devices.
pub trait Io {
    fn ports(&self) -> usize;
    /// Reads one packet from port `p` into `buf`; its length, or None if nothing waits.
    fn recv(&mut self, p: usize, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// Writes one packet to port `p`.
    fn send(&mut self, p: usize, pkt: &[u8]) -> io::Result<()>;
    /// Blocks until a port is readable, a stop is requested, or `timeout_ns` passed.
    fn wait(&mut self, timeout_ns: Option<u64>) -> io::Result<()>;
    /// A stop was requested (the controlling process, a signal).
    fn stop_requested(&mut self) -> bool;
}

/// A histogram of how late packets were written (write time - due time), in 1 µs
/// buckets up to 100 ms.
#[derive(Clone)]
pub struct Lateness {
    buckets: Vec<u64>,
    pub n: u64,
    pub max_ns: u64,
    pub sum_ns: u128,
}

const LATE_BUCKETS: usize = 100_000;

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: vec![0; LATE_BUCKETS + 1],
            n: 0,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

impl Lateness {
    #[inline]
    pub fn add(&mut self, ns: u64) {
        self.buckets[((ns / 1000) as usize).min(LATE_BUCKETS)] += 1;
        self.n += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
    }

    /// The `q` quantile, in ns (upper edge of its 1 µs bucket).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let want = ((self.n as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Some(((i as u64 + 1) * 1000).min(self.max_ns.max(1)));
            }
        }
        Some(self.max_ns)
    }
}

/// The ferry's own counters.
#[derive(Default, Clone)]
pub struct FerryStats {
    pub read: u64,
    pub written: u64,
    pub send_errors: u64,
    pub late: Lateness,
    pub wakeups: u64,
}

pub struct Ferry {
    pub net: Net,
    pub pool: Pool,
    exits: Vec<(SimTime, ElemId, PortId, Pkt)>,
    /// Direction index of each element.
    dir_of: Vec<usize>,
    /// A capture per port, if wanted.
    pub caps: Vec<Option<PcapWriter>>,
    pub stats: FerryStats,
    /// Counters at the start of the measured interval.
    pub base: Option<Vec<DirMetrics>>,
}

impl Ferry {
    /// A ferry over `net`, reading packets of at most `max_packet` bytes.
    pub fn new(net: Net, max_packet: usize) -> Ferry {
        let mut dir_of = vec![usize::MAX; net.dirs.len()];
        for (i, &e) in net.dirs.iter().enumerate() {
            dir_of[e as usize] = i;
        }
        let ports = net.dirs.len();
        Ferry {
            net,
            pool: Pool::new(max_packet, 256),
            exits: Vec::with_capacity(1024),
            dir_of,
            caps: (0..ports).map(|_| None).collect(),
            stats: FerryStats::default(),
            base: None,
        }
    }

    /// Records the packets crossing port `p` into a pcap.
    pub fn capture(&mut self, p: usize) {
        self.caps[p] = Some(PcapWriter::new(SNAPLEN));
    }

    /// Runs events due by the clock's present and writes out what left.
    fn flush<I: Io, C: Clock>(&mut self, io: &mut I, clock: &C) {
        let now = clock.now();
        self.net.d.advance_to(SimTime(now));
        self.net.d.drain_exits_into(&mut self.exits);
        let mut exits = std::mem::take(&mut self.exits);
        for (at, elem, _, pkt) in exits.drain(..) {
            let port = self.dir_of[elem as usize] ^ 1;
            let t = clock.now();
            if let Some(c) = &mut self.caps[port] {
                c.record(t, &pkt.buf, pkt.buf.len() as u32);
            }
            match io.send(port, &pkt.buf) {
                Ok(()) => self.stats.written += 1,
                Err(_) => self.stats.send_errors += 1,
            }
            self.stats.late.add(t.saturating_sub(at.0));
            self.pool.put(pkt.buf);
        }
        self.exits = exits;
    }

    /// Reads what the devices have; the number of packets read.
    fn read_all<I: Io, C: Clock>(&mut self, io: &mut I, clock: &C) -> io::Result<usize> {
        let mut n = 0;
        for p in 0..io.ports() {
            for _ in 0..BATCH {
                let mut buf = self.pool.get();
                match io.recv(p, &mut buf) {
                    Ok(Some(len)) => {
                        buf.truncate(len);
                        let t = clock.now();
                        self.net.d.advance_to(SimTime(t));
                        if let Some(c) = &mut self.caps[p] {
                            c.record(t, &buf, len as u32);
                        }
                        self.net.d.inject(self.net.dirs[p], 0, Pkt::new(buf));
                        self.stats.read += 1;
                        n += 1;
                    }
                    Ok(None) => {
                        self.pool.put(buf);
                        break;
                    }
                    Err(e) => {
                        self.pool.put(buf);
                        return Err(e);
                    }
                }
            }
        }
        Ok(n)
    }

    /// Ferries packets until `until` (ns; None: until a stop is requested), taking the
    /// counters' baseline at `warmup`. Returns the time it stopped.
    pub fn run<I: Io, C: Clock>(
        &mut self,
        io: &mut I,
        clock: &C,
        warmup: u64,
        until: Option<u64>,
    ) -> io::Result<u64> {
        loop {
            let now = clock.now();
            if self.base.is_none() && now >= warmup {
                // The measured interval opens before the first event at `warmup`.
                if warmup > 0 {
                    self.net.d.step_until(SimTime(warmup - 1));
                }
                self.base = Some(self.net.metrics(SimTime(warmup)));
            }
            if until.is_some_and(|u| now >= u) || io.stop_requested() {
                let end = until.map_or(now, |u| u.min(now));
                self.flush(io, clock);
                return Ok(end);
            }
            self.flush(io, clock);
            if self.read_all(io, clock)? > 0 {
                continue;
            }
            self.flush(io, clock);
            let mut wake = self.net.d.next_deadline().map(|t| t.0);
            if self.base.is_none() {
                wake = Some(wake.map_or(warmup, |w| w.min(warmup)));
            }
            if let Some(u) = until {
                wake = Some(wake.map_or(u, |w| w.min(u)));
            }
            let now = clock.now();
            let timeout = wake.map(|w| w.saturating_sub(now));
            if timeout == Some(0) {
                continue;
            }
            self.stats.wakeups += 1;
            io.wait(timeout)?;
        }
    }

    /// Counters of the measured interval: from the warmup baseline to `end`.
    pub fn measured(&self, end: u64) -> Vec<DirMetrics> {
        let now = self.net.metrics(SimTime(end));
        match &self.base {
            Some(b) => now.iter().zip(b).map(|(e, b)| e.since(b)).collect(),
            None => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use longpipe_core::scenario::parse_json;
    use std::cell::Cell;
    use std::collections::VecDeque;

    /// A clock the test moves; and devices that are queues: each port has packets
    /// waiting to be read at given times, and records what is written with the time.
    struct FakeClock(Cell<u64>);
    impl Clock for FakeClock {
        fn now(&self) -> u64 {
            self.0.get()
        }
    }
    struct FakeIo<'a> {
        clock: &'a FakeClock,
        inbox: Vec<VecDeque<(u64, Vec<u8>)>>,
        sent: Vec<(u64, usize, Vec<u8>)>,
        end: u64,
    }
    impl Io for FakeIo<'_> {
        fn ports(&self) -> usize {
            self.inbox.len()
        }
        fn recv(&mut self, p: usize, buf: &mut [u8]) -> io::Result<Option<usize>> {
            let now = self.clock.now();
            match self.inbox[p].front() {
                Some((t, _)) if *t <= now => {
                    let (_, b) = self.inbox[p].pop_front().unwrap();
                    buf[..b.len()].copy_from_slice(&b);
                    Ok(Some(b.len()))
                }
                _ => Ok(None),
            }
        }
        fn send(&mut self, p: usize, pkt: &[u8]) -> io::Result<()> {
            self.sent.push((self.clock.now(), p, pkt.to_vec()));
            Ok(())
        }
        fn wait(&mut self, timeout: Option<u64>) -> io::Result<()> {
            // Sleep exactly until the next arrival or the timeout.
            let now = self.clock.now();
            let next_in = self
                .inbox
                .iter()
                .filter_map(|q| q.front().map(|x| x.0))
                .min();
            let t = [next_in, timeout.map(|d| now + d), Some(self.end)]
                .into_iter()
                .flatten()
                .min()
                .unwrap();
            self.clock.0.set(t.max(now));
            Ok(())
        }
        fn stop_requested(&mut self) -> bool {
            false
        }
    }

    fn scenario(extra: &str) -> ValidScenario {
        parse_json(&format!(
            r#"{{"duration":"1s","link":[{{"a":"s","b":"c","rate":"8Mbps","rate_ba":"800kbps","delay":"10ms","delay_ba":"20ms","queue":{{"limit":"3pkt"}}{extra}}}]}}"#
        ))
        .unwrap()
        .validate()
        .unwrap()
    }

    fn ipv4(len: usize, id: u8) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        b[9] = 17;
        b[20] = id;
        b
    }

    #[test]
    fn each_direction_serialises_delays_and_drops_as_the_core_link() {
        let sc = scenario("");
        let clock = FakeClock(Cell::new(0));
        let mut io = FakeIo {
            clock: &clock,
            inbox: vec![VecDeque::new(), VecDeque::new()],
            sent: vec![],
            end: 100_000_000,
        };
        // a->b: 6 packets of 1000 B at t = 1 ms: 1 ms each at 8 Mbit/s; queue of 3
        // takes 3 more, 2 are dropped. b->a: one 100 B packet at 2 ms (1 ms at 800k).
        for i in 0..6 {
            io.inbox[0].push_back((1_000_000, ipv4(1000, i)));
        }
        io.inbox[1].push_back((2_000_000, ipv4(100, 99)));
        let mut f = Ferry::new(Net::new(&sc, 1), 1500);
        let end = f.run(&mut io, &clock, 0, Some(50_000_000)).unwrap();
        assert_eq!(end, 50_000_000);
        let got: Vec<(u64, usize, u8)> = io.sent.iter().map(|(t, p, b)| (*t, *p, b[20])).collect();
        assert_eq!(
            got,
            [
                (12_000_000, 1, 0), // 1 ms in, 1 ms transmission, 10 ms delay
                (13_000_000, 1, 1),
                (14_000_000, 1, 2),
                (15_000_000, 1, 3),
                (23_000_000, 0, 99), // 2 ms + 1 ms + 20 ms, to the a end
            ]
        );
        let m = f.measured(end);
        let DirMetrics::Link(fwd) = &m[0] else {
            panic!()
        };
        assert_eq!((fwd.packets, fwd.bytes, fwd.drops_queue), (4, 4000, 2));
        assert_eq!(f.stats.late.max_ns, 0, "a fake clock is never late");
        assert_eq!((f.stats.read, f.stats.written), (7, 5));
        assert!(f.pool.allocated <= 256, "buffers recycled");
    }

    #[test]
    fn seeded_loss_matches_the_simulators_stream_and_warmup_baseline() {
        // The same seed drops the same packets on every run; another seed others.
        let run = |seed: u64| {
            let sc = scenario(r#","loss":{"kind":"bernoulli","p":0.3}"#);
            let clock = FakeClock(Cell::new(0));
            let mut io = FakeIo {
                clock: &clock,
                inbox: vec![VecDeque::new(), VecDeque::new()],
                sent: vec![],
                end: 1_000_000_000,
            };
            for i in 0..200u64 {
                io.inbox[0].push_back((i * 2_000_000, ipv4(100, i as u8)));
            }
            let mut f = Ferry::new(Net::new(&sc, seed), 1500);
            let end = f
                .run(&mut io, &clock, 100_000_000, Some(500_000_000))
                .unwrap();
            let m = f.measured(end);
            let DirMetrics::Link(c) = &m[0] else { panic!() };
            let ids: Vec<u8> = io.sent.iter().map(|x| x.2[20]).collect();
            (ids, c.clone())
        };
        let (a, ca) = run(7);
        let (b, _) = run(7);
        let (c, _) = run(8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let lost = 200 - a.len();
        assert!((40..=80).contains(&lost), "p = 0.3 of 200: {lost}");
        // 50 packets (t = 0..98 ms) are before the warmup: not counted.
        assert_eq!(ca.packets, 150);
        // The loss decisions come from the simulator's stream "link/s->c/loss".
        let mut st = LossState::new(
            longpipe_core::net::loss::LossModel::Bernoulli { p: 0.3 },
            RngStream::new(7, "link/s->c/loss"),
        );
        let expect: Vec<u8> = (0..200u64)
            .filter(|_| !st.lose_bytes(100))
            .map(|i| i as u8)
            .collect();
        assert_eq!(a, expect);
    }

    #[test]
    fn rlc_direction_moves_raw_packets() {
        let sc = scenario(
            r#","layer2":{"kind":"rlc-am","pdu_payload":40,"header":2,"tti":"10ms"},"loss":{"kind":"bernoulli","p":0.1}"#,
        );
        let clock = FakeClock(Cell::new(0));
        let mut io = FakeIo {
            clock: &clock,
            inbox: vec![VecDeque::new(), VecDeque::new()],
            sent: vec![],
            end: 10_000_000_000,
        };
        for i in 0..20u64 {
            io.inbox[0].push_back((i * 10_000_000, ipv4(200, i as u8))); // one per TTI
        }
        let mut f = Ferry::new(Net::new(&sc, 3), 1500);
        let end = f.run(&mut io, &clock, 0, Some(5_000_000_000)).unwrap();
        // RLC AM retransmits lost PDUs: every SDU arrives, whole and in order.
        let ids: Vec<u8> = io.sent.iter().map(|x| x.2[20]).collect();
        assert_eq!(ids, (0..20).collect::<Vec<u8>>());
        assert!(io.sent.iter().all(|x| x.2 == ipv4(200, x.2[20])));
        let DirMetrics::Rlc(c) = &f.measured(end)[0] else {
            panic!()
        };
        assert!(c.pdus_retransmitted > 0 && c.sdus_delivered == 20);
    }
}
