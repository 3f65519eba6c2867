//! The packet loop, unprivileged: it owns the two TUN descriptors (opened by the
//! privileged parent and inherited), reads each device until it has nothing (at most
//! [`BATCH`] packets a round), feeds the packet path, runs the gateway's timers, writes
//! what the path returned in one burst at the end of the round ([`Pending`]),
//! publishes a metrics snapshot every second and a stats line every
//! `--stats-interval`. One thread (the metrics endpoint has its own).
//!
//! When a round finds nothing to do, the loop either sleeps in `ppoll` until a device
//! is readable or the next deadline, or polls the devices again at once, as
//! [`crate::idle`] decides.
//!
//! Stopping (SIGTERM, SIGINT, SIGHUP, or the parent's control pipe closing): new
//! connections pass through untouched, and the loop goes on until the gateway holds
//! nothing or `--drain` has passed; then it resets both ends of every connection that
//! cannot go on without it and reports what it had acknowledged to servers and not
//! delivered (`acked_undelivered_bytes`, exact), on stderr and as one JSON line on
//! stdout. A pipe that ends without a signal means the parent died: the metrics port is
//! closed at once and the loop stops the same way. It writes its connections to the
//! snapshot file ([`crate::state::Snapshot`]) every second and soon after they change,
//! and starts by resetting the connections a dead predecessor held.
//!
//! Why ~750 lines: ~540 of the loop (its I/O, its snapshot, its stop) and ~210 of tests
//! that run it between socket pairs (the end of the file).

use crate::idle::{Idle, Spin};
use crate::metrics;
use crate::opts::Opts;
use crate::path::{Dead, PacketPath};
use crate::state::{ConnEntry, Snapshot};
use longpipe_core::middlebox::gateway::ConnKey;
use longpipe_core::time::SimTime;
use longpipe_sys::sys;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The capability split mode's relay keeps (bit 13): `IP_TRANSPARENT` needs it.
pub const CAP_NET_RAW: u64 = 1 << 13;

/// The process's user, group and effective capabilities, from /proc/self/status.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Privileges {
    /// Real, effective, saved and filesystem user ids.
    pub uids: Vec<u32>,
    pub gids: Vec<u32>,
    /// CapEff and CapPrm as hexadecimal masks.
    pub cap_eff: u64,
    pub cap_prm: u64,
}

impl Privileges {
    pub fn of(status: &str) -> Privileges {
        let ids = |k: &str| -> Vec<u32> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| {
                    v.split_whitespace()
                        .filter_map(|x| x.parse().ok())
                        .collect()
                })
                .unwrap_or_default()
        };
        let cap = |k: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
                .unwrap_or(u64::MAX)
        };
        Privileges {
            uids: ids("Uid:"),
            gids: ids("Gid:"),
            cap_eff: cap("CapEff:"),
            cap_prm: cap("CapPrm:"),
        }
    }

    pub fn current() -> io::Result<Privileges> {
        Ok(Privileges::of(&std::fs::read_to_string(
            "/proc/self/status",
        )?))
    }

    /// No root id and no capability.
    pub fn dropped(&self) -> bool {
        self.only(0)
    }

    /// No root id, and exactly the capabilities `mask` (effective and permitted).
    pub fn only(&self, mask: u64) -> bool {
        !self.uids.is_empty()
            && !self.uids.contains(&0)
            && !self.gids.contains(&0)
            && self.cap_eff == mask
            && self.cap_prm == mask
    }
}

/// What the loop reports when it stops.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub event: &'static str,
    pub uptime_s: f64,
    pub drain_s: f64,
    pub conns: usize,
    /// The most connections held at once.
    pub conns_peak: u64,
    pub held_bytes: u64,
    /// Bytes the servers saw acknowledged that never reached the clients.
    pub acked_undelivered_bytes: u64,
    /// Connections reset on both ends at the stop (they could not go on without the
    /// gateway), and the bytes their servers saw acknowledged.
    pub reset_conns: u64,
    pub reset_bytes: u64,
    /// The loop stopped because its parent died.
    pub parent_gone: bool,
    pub path: crate::path::PathStats,
    pub gateway: longpipe_core::middlebox::gateway::GatewayCounters,
    pub faults: longpipe_core::middlebox::gateway::FaultCounters,
    pub handshakes: longpipe_core::middlebox::gateway::handshake::HandshakeCounters,
    /// The loop's own counters.
    #[serde(rename = "loop")]
    pub loop_stats: LoopStats,
}

/// Most packets read from one device before the other gets a turn.
pub const BATCH: usize = 64;

/// The packets to write, kept until the end of a round and then written in a burst.
///
/// Each write to a TUN device runs the kernel's receive path in the writer's thread,
/// and the kernel then hands the packet to the CPU that runs the receiving side (RPS,
/// a socket's wake-up): an inter-processor interrupt — a VM exit on a virtual machine
/// — unless that CPU is still busy with the previous one. Written back to back, the
/// packets of a round mostly find it busy. The bytes and their order on each device
/// are those of writing each packet at once; they only leave a round later (at most
/// [`BATCH`] reads per device and the path's work for them).
#[derive(Default)]
pub struct Pending {
    bytes: Vec<u8>,
    /// (device, start, end) in `bytes`.
    pkts: Vec<(usize, usize, usize)>,
}

impl Pending {
    pub fn push(&mut self, d: usize, b: &[u8]) {
        let s = self.bytes.len();
        self.bytes.extend_from_slice(b);
        self.pkts.push((d, s, self.bytes.len()));
    }

    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// Writes every packet in order with `write(device, bytes)` (true: written) and
    /// empties the queue; `failed(device, length)` for each that was not.
    pub fn flush(
        &mut self,
        write: &mut impl FnMut(usize, &[u8]) -> bool,
        failed: &mut impl FnMut(usize, usize),
    ) {
        for &(d, s, e) in &self.pkts {
            if !write(d, &self.bytes[s..e]) {
                failed(d, e - s);
            }
        }
        self.pkts.clear();
        self.bytes.clear();
    }
}

/// The packet loop's counters (the stop summary's `loop`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LoopStats {
    /// Rounds of reading the devices.
    pub rounds: u64,
    /// Reads that found nothing (a device's last read of a round, mostly).
    pub empty_reads: u64,
    /// Sleeps in `ppoll` (until a device is readable or the next deadline).
    pub sleeps: u64,
    /// Rounds that found nothing after which the loop polled again instead of sleeping.
    pub spins: u64,
    /// Time spent in them, ns.
    pub spin_ns: u64,
}

/// The transmit drops of devices `names` in `/proc/net/dev` text (the kernel's count of
/// packets it could not queue toward the reader of a TUN device); None for a device
/// not listed.
pub fn tx_dropped(text: &str, names: [&str; 2]) -> [Option<u64>; 2] {
    names.map(|n| {
        text.lines().find_map(|l| {
            let (name, rest) = l.split_once(':')?;
            if name.trim() != n {
                return None;
            }
            // receive: bytes packets errs drop fifo frame compressed multicast;
            // transmit: bytes packets errs drop ...
            rest.split_whitespace().nth(11)?.parse().ok()
        })
    })
}

/// Reads the devices' transmit drops into the path's counters (this network
/// namespace's devices: /proc/net/dev is the reader's own).
fn read_dev_dropped(path: &mut PacketPath, names: [&str; 2]) {
    if let Ok(text) = std::fs::read_to_string("/proc/net/dev") {
        for (d, v) in tx_dropped(&text, names).into_iter().enumerate() {
            if let Some(v) = v {
                path.stats.dev_dropped[d] = v;
            }
        }
    }
}

fn pollfd(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// What the packet loop is given besides its devices.
#[derive(Default)]
pub struct LoopIo {
    /// The parent's pipe: end of file means stop (a signal does too).
    pub ctl: Option<OwnedFd>,
    /// The metrics endpoint's listener (its thread closes it when the loop stops, or at
    /// once if the parent is gone).
    pub metrics: Option<TcpListener>,
    /// Where the connection snapshot goes ([`crate::state::Snapshot`]).
    pub snapshot: Option<File>,
    /// Connections a packet loop that died held: reset at the start.
    pub dead: Vec<(ConnKey, Dead, u64)>,
    /// No new privileges and the seccomp filter once the metrics thread runs.
    pub harden: bool,
}

/// How often the snapshot is written at most while connections come and go: every
/// 50 ms (a connection opened later than that before a crash may be missed by the next
/// loop's resets), or 1 ms per 20 connections with many (65 536: every 3.3 s); and once
/// a second regardless (the byte counts for `status`).
fn snapshot_gap_ns(conns: usize) -> u64 {
    50_000_000u64.max(conns as u64 * 50_000)
}

/// Writes the snapshot over the file's contents (a reader that finds it torn reads it
/// again).
fn write_snapshot(f: &File, path: &PacketPath, uptime_s: f64, draining: bool) {
    let conns = path
        .gw
        .connections()
        .into_iter()
        .map(|(k, c)| ConnEntry {
            server: format!("{}:{}", std::net::Ipv4Addr::from(k.0), k.1),
            client: format!("{}:{}", std::net::Ipv4Addr::from(k.2), k.3),
            state: c.state.to_string(),
            held: c.held,
            acked_undelivered: c.acked_undelivered,
            resent: c.resent,
            client_rcv_nxt: Some(c.client_rcv_nxt),
            server_rcv_nxt: Some(c.server_rcv_nxt),
        })
        .collect();
    let s = Snapshot {
        pid: std::process::id(),
        mode: "spoof".into(),
        uptime_s,
        draining,
        half_open: path.gw.half_open() as u64,
        conns,
    };
    if let Ok(b) = serde_json::to_vec(&s) {
        let _ = f.set_len(0);
        let _ = f.write_all_at(&b, 0);
    }
}

/// Runs until stopped: a signal, or the control pipe's end. Stopping: new connections
/// pass untouched; the loop goes on until the gateway holds nothing or `--drain` has
/// passed; then every connection that cannot go on without the gateway is reset on
/// both sides (each at the number it expects) and counted. If the pipe ended without a
/// signal, the parent is gone: the metrics port is closed at once (a restarted daemon
/// binds it) and the loop drains the same way.
pub fn run(o: &Opts, mut path: PacketPath, devs: [OwnedFd; 2], io: LoopIo) -> io::Result<Summary> {
    let LoopIo {
        ctl,
        metrics: listener,
        snapshot: snap_file,
        dead,
        harden: hardened,
    } = io;
    for d in devs.iter().chain(ctl.iter()) {
        sys::set_nonblocking(d)?;
    }
    let mut pfds: Vec<libc::pollfd> = devs
        .iter()
        .chain(ctl.iter())
        .map(|d| pollfd(d.as_raw_fd()))
        .collect();
    let mut devs = devs.map(File::from);
    let mut ctl = ctl.map(File::from);
    let snapshot = Arc::new(Mutex::new(String::new()));
    let stop_metrics = Arc::new(AtomicBool::new(false));
    if let Some(l) = listener {
        // detached: it ends when the flag is set, or with the process
        let _ = metrics::serve(l, snapshot.clone(), stop_metrics.clone());
    }
    if hardened {
        crate::harden::harden(false)?;
    }
    let t0 = Instant::now();
    let now = || SimTime(t0.elapsed().as_nanos() as u64);
    let mut pending = Pending::default();
    if !dead.is_empty() {
        let n = dead.len();
        let lost: u64 = dead.iter().map(|d| d.2).sum();
        path.reset_dead(dead, &mut |dd, bb| {
            pending.push(dd, bb);
            true
        });
        eprintln!(
            "longpipe-gateway: the previous packet loop died holding {n} connections ({lost} B \
             acknowledged to servers, not delivered, at its last snapshot): both ends of each reset"
        );
    }
    let mut parent_gone = false;
    let mut last_write = 0u64;
    let mut table_sig = (u64::MAX, u64::MAX);
    let mut buf = vec![0u8; 65_536];
    let second = 1_000_000_000u64;
    let (mut next_snap, mut next_stats) = (0u64, o.stats_interval_ns);
    let mut stop_at: Option<u64> = None;
    let mut stop = false;
    let (dev_c, dev_s) = (o.dev_to_client(), o.dev_to_server());
    let names = [dev_c.as_str(), dev_s.as_str()];
    let mut ls = LoopStats::default();
    let mut spin = Spin::default();
    loop {
        let round = now();
        let mut worked = false;
        ls.rounds += 1;
        for (d, dev) in devs.iter_mut().enumerate() {
            for _ in 0..BATCH {
                let n = match dev.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        ls.empty_reads += 1;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                worked = true;
                let t = now();
                path.input(t, d, &buf[..n], &mut |dd, bb| {
                    pending.push(dd, bb);
                    true
                });
            }
        }
        let t = now();
        for _ in 0..8 {
            if path.next_timer().is_none_or(|x| x > t) {
                break;
            }
            worked = true;
            path.timeout(t, &mut |dd, bb| {
                pending.push(dd, bb);
                true
            });
        }
        // the connection snapshot: when connections came or went (written before this
        // round's packets, spoofed ACKs among them, leave), and every second
        if let Some(f) = &snap_file {
            let g = &path.gw.stats;
            let sig = (g.conns_opened, g.conns_closed);
            let due = t.0 >= next_snap
                || (sig != table_sig && t.0 >= last_write + snapshot_gap_ns(path.gw.conns()));
            if due {
                write_snapshot(f, &path, t.0 as f64 / 1e9, stop_at.is_some());
                table_sig = sig;
                last_write = t.0;
            }
        }
        pending.flush(&mut |d, b| devs[d].write(b).is_ok(), &mut |d, n| {
            path.stats.unwritten(d, n)
        });
        if t.0 >= next_snap {
            read_dev_dropped(&mut path, names);
            path.gw.housekeeping(t);
            let s = metrics::render(&path, t.0 as f64 / 1e9);
            if let Ok(mut g) = snapshot.lock() {
                *g = s;
            }
            next_snap = t.0 + second;
            // a busy loop may not sleep for long: look at the control pipe here too
            if let Some(c) = &mut ctl {
                if ctl_closed(c) {
                    stop = true;
                    pfds.truncate(2);
                    ctl = None;
                }
            }
        }
        if t.0 >= next_stats {
            eprintln!("{}", metrics::line(&path));
            next_stats = t.0 + o.stats_interval_ns;
        }
        let signalled = sys::SIGNALLED.load(Ordering::Relaxed) != 0;
        if stop && !signalled && !parent_gone && stop_at.is_none() {
            // the pipe ended without a signal: the parent died (SIGKILL)
            parent_gone = true;
            stop_metrics.store(true, Ordering::Relaxed);
            eprintln!(
                "longpipe-gateway: the parent is gone: metrics closed; draining (at most {:.1} s), \
                 then the connections left are reset; its rules stay until the next start or \
                 `longpipe gateway cleanup`",
                o.drain_ns as f64 / 1e9
            );
        }
        stop |= signalled;
        if stop && stop_at.is_none() {
            path.draining = true;
            stop_at = Some(t.0 + o.drain_ns);
            let (held, _) = path.gw.held_totals();
            eprintln!(
                "longpipe-gateway: stopping: draining {held} B held for {} connections (at most {:.1} s)",
                path.gw.conns(),
                o.drain_ns as f64 / 1e9
            );
        }
        if let Some(s) = stop_at {
            // done when nothing needs the gateway any more: no bytes held, and every
            // rescaled connection's server side finished (its FIN acknowledged)
            if t.0 >= s || path.gw.needed() == 0 {
                read_dev_dropped(&mut path, names);
                let (held, unsent) = path.gw.held_totals();
                // what cannot go on without the gateway: reset on both sides, counted
                let mut out = Vec::new();
                let (reset, reset_bytes) = path.gw.reset_all(&mut out);
                path.write_made(&mut out, &mut |dd, bb| {
                    pending.push(dd, bb);
                    true
                });
                pending.flush(&mut |d, b| devs[d].write(b).is_ok(), &mut |d, n| {
                    path.stats.unwritten(d, n)
                });
                if let Some(f) = &snap_file {
                    write_snapshot(f, &path, t.0 as f64 / 1e9, true);
                }
                ls.spins = spin.spins;
                ls.spin_ns = spin.spun_ns;
                let sum = Summary {
                    event: "stopped",
                    uptime_s: t.0 as f64 / 1e9,
                    drain_s: (t.0 + o.drain_ns - s) as f64 / 1e9,
                    conns: path.gw.conns(),
                    conns_peak: path.stats.conns_peak,
                    held_bytes: held,
                    acked_undelivered_bytes: unsent,
                    reset_conns: reset,
                    reset_bytes,
                    parent_gone,
                    path: path.stats.clone(),
                    gateway: path.gw.stats.clone(),
                    faults: path.gw.faults.clone(),
                    handshakes: path.gw.handshake_counters().clone(),
                    loop_stats: ls,
                };
                eprintln!("{}", metrics::line(&path));
                eprintln!(
                    "longpipe-gateway: stopped: {unsent} B acknowledged to servers were not delivered \
                     ({held} B held); {reset} connections reset on both ends ({reset_bytes} B), \
                     {} continue end to end",
                    path.gw.conns()
                );
                return Ok(sum);
            }
        }
        if worked {
            spin.worked(round.0);
            continue;
        }
        // nothing to do: poll again, or sleep until a device is readable or the next
        // deadline
        let t = now().0;
        let mut wake = next_snap.min(next_stats);
        if let Some(x) = path.next_timer() {
            wake = wake.min(x.0);
        }
        if stop_at.is_some() {
            wake = wake.min(t + 10_000_000);
        }
        let timeout = wake.saturating_sub(t);
        if timeout == 0 {
            continue;
        }
        let Idle::Sleep(timeout) = spin.plan(t, Some(timeout)) else {
            continue;
        };
        for p in pfds.iter_mut() {
            p.revents = 0;
        }
        ls.sleeps += 1;
        match sys::ppoll(&mut pfds, timeout) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if let (Some(c), Some(p)) = (&mut ctl, pfds.get(2)) {
            if p.revents != 0 && ctl_closed(c) {
                stop = true;
                // no more events from a closed pipe
                pfds.truncate(2);
                ctl = None;
            }
        }
    }
}

/// Drains the control pipe (non-blocking); true once it is closed (or broken).
fn ctl_closed(c: &mut File) -> bool {
    let mut b = [0u8; 64];
    loop {
        match c.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_writes_go_out_in_order_and_failures_are_counted_back() {
        let mut q = Pending::default();
        q.push(0, b"data-1");
        q.push(1, b"ack-1");
        q.push(0, b"data-22");
        q.push(1, b"");
        assert_eq!(q.len(), 4);
        let mut out = vec![];
        let mut failed = vec![];
        // the device toward the server refuses
        q.flush(
            &mut |d, b| {
                out.push((d, b.to_vec()));
                d == 0
            },
            &mut |d, n| failed.push((d, n)),
        );
        assert_eq!(
            out,
            vec![
                (0, b"data-1".to_vec()),
                (1, b"ack-1".to_vec()),
                (0, b"data-22".to_vec()),
                (1, vec![])
            ]
        );
        assert_eq!(failed, vec![(1, 5), (1, 0)]);
        assert!(q.is_empty());
        q.flush(&mut |_, _| panic!("written twice"), &mut |_, _| {});
        // what the path counted as written is taken back
        let mut st = crate::path::PathStats {
            packets_out: [3, 2],
            bytes_out: [4500, 80],
            ..Default::default()
        };
        for (d, n) in failed {
            st.unwritten(d, n);
        }
        assert_eq!(
            (st.packets_out, st.bytes_out, st.write_errors),
            ([3, 0], [4500, 75], 2)
        );
    }

    /// The loop itself, with datagram socket pairs for devices (one packet per read and
    /// write, as a TUN device) and a stream pair for the control pipe: packets go
    /// through to the right device, the loop sleeps when idle, spins within its budget,
    /// and stops when the control pipe closes.
    #[test]
    fn the_loop_moves_packets_between_devices_and_stops_when_the_pipe_closes() {
        use crate::path::{Prefix, DEV_TO_CLIENT, DEV_TO_SERVER};
        use crate::pkt::build_packet;
        use longpipe_core::middlebox::gateway::{GatewaySpec, Uplink};
        use longpipe_core::time::Rate;
        use longpipe_core::wire::{self, TcpIpHeader, TcpOptions, ACK, SYN};
        use std::os::unix::net::{UnixDatagram, UnixStream};
        use std::time::Duration;

        let (server, client) = ([10, 0, 0, 1], [10, 0, 0, 3]);
        let hdr = |from_client: bool, flags: u8, seq: u32, ack: u32| {
            let (src_ip, dst_ip, src_port, dst_port) = if from_client {
                (client, server, 40_000, 80)
            } else {
                (server, client, 80, 40_000)
            };
            TcpIpHeader {
                src_ip,
                dst_ip,
                ip_id: 9,
                tos: 0,
                ttl: 63,
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window: 8000,
                options: TcpOptions::default(),
                payload_len: 0,
            }
        };
        let o = Opts {
            drain_ns: 10_000_000_000,
            ..Opts::default()
        };
        let (dev_c, peer_c) = UnixDatagram::pair().unwrap();
        let (dev_s, peer_s) = UnixDatagram::pair().unwrap();
        let (ctl, ctl_peer) = UnixStream::pair().unwrap();
        let devs = [OwnedFd::from(dev_c), OwnedFd::from(dev_s)];
        let worker = std::thread::spawn(move || {
            // built here: the path holds Rc payloads (one thread)
            let spec: GatewaySpec = serde_json::from_str("{}").unwrap();
            let up = Uplink {
                rate: Some(Rate(10_000_000)),
                bdp: 750_000,
            };
            let path = PacketPath::new(
                spec.resolve("gateway").unwrap(),
                up,
                vec![Prefix::parse("10.0.0.3").unwrap()],
            );
            let io = LoopIo {
                ctl: Some(OwnedFd::from(ctl)),
                ..LoopIo::default()
            };
            run(&o, path, devs, io)
        });
        let peers = [peer_c, peer_s];
        for p in &peers {
            // a bound on a broken loop, not a measurement
            p.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        }
        let mut buf = vec![0u8; 2048];
        let mut exchange = |dev: usize, pkt: &[u8], expect: &[usize]| -> Vec<TcpIpHeader> {
            peers[dev].send(pkt).unwrap();
            expect
                .iter()
                .map(|&d| {
                    let n = peers[d].recv(&mut buf).expect("a packet out");
                    wire::parse(&buf[..n]).unwrap().0
                })
                .collect()
        };
        let mut syn = hdr(true, SYN, 1000, 0);
        syn.options.mss = Some(1448);
        let out = exchange(DEV_TO_SERVER, &build_packet(&syn, &[]), &[DEV_TO_SERVER]);
        assert_eq!(out[0].flags, SYN);
        let out = exchange(
            DEV_TO_CLIENT,
            &build_packet(&hdr(false, SYN | ACK, 5000, 1001), &[]),
            &[DEV_TO_CLIENT],
        );
        assert_eq!(out[0].flags, SYN | ACK);
        exchange(
            DEV_TO_SERVER,
            &build_packet(&hdr(true, ACK, 1001, 5001), &[]),
            &[DEV_TO_SERVER],
        );
        // the server's data: on toward the client, and a spoofed ACK back to the server
        let out = exchange(
            DEV_TO_CLIENT,
            &build_packet(&hdr(false, ACK, 5001, 1001), &[7; 1448]),
            &[DEV_TO_CLIENT, DEV_TO_SERVER],
        );
        assert_eq!((out[0].payload_len, out[1].ack), (1448, 5001 + 1448));
        // the client acknowledges it: absorbed (nothing held any more), and the freed
        // buffer announced to the server
        let out = exchange(
            DEV_TO_SERVER,
            &build_packet(&hdr(true, ACK, 1001, 5001 + 1448), &[]),
            &[DEV_TO_SERVER],
        );
        assert_eq!((out[0].ack, out[0].payload_len), (5001 + 1448, 0));
        drop(ctl_peer); // the parent went away: stop (nothing held: at once)
        let sum = worker.join().unwrap().unwrap();
        assert_eq!(sum.event, "stopped");
        assert_eq!(sum.path.packets_in, [2, 3]);
        assert_eq!(sum.path.packets_out, [2, 4]);
        assert_eq!((sum.path.absorbed, sum.held_bytes), (1, 0));
        let l = &sum.loop_stats;
        // the pipe's end is seen by a sleep (or the once-a-second look): it slept
        assert!(l.sleeps >= 1 && l.rounds > l.sleeps, "{l:?}");
        // never more than its share of the time polling in vain
        let up_ns = (sum.uptime_s * 1e9) as u64;
        assert!(
            l.spin_ns <= up_ns / 100 * Spin::SHARE_PCT + Spin::WINDOW_NS,
            "{l:?} in {up_ns} ns"
        );
    }

    #[test]
    fn device_drops_are_the_transmit_drops_of_the_named_devices() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo:     100       2    0    7    0     0          0         0      100       2    0    8    0     0       0          0\n \
lpgwc: 66178420   47197    0    3    0     0          0         0 102637600   71679    0 1888    0     0       0          0\n\
lpgws:3184250   79159    0    4    0     0          0         0  1642530   40616    0   17    0     0       0          0\n";
        assert_eq!(tx_dropped(text, ["lpgwc", "lpgws"]), [Some(1888), Some(17)]);
        assert_eq!(tx_dropped(text, ["lpgw", "nosuch"]), [None, None]);
    }

    #[test]
    fn privileges_are_read_from_proc_status() {
        let root = "Name:\tx\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n";
        let p = Privileges::of(root);
        assert_eq!((p.uids[0], p.cap_eff), (0, 0x1ff_ffff_ffff));
        assert!(!p.dropped());
        let nobody = "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n";
        assert!(Privileges::of(nobody).dropped());
        // a saved root uid would allow getting root back
        let saved =
            "Uid:\t1000\t1000\t0\t1000\nGid:\t1000\t1000\t1000\t1000\nCapPrm:\t0\nCapEff:\t0\n";
        assert!(!Privileges::of(saved).dropped());
        let caps = "Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nCapPrm:\t0000000000001000\nCapEff:\t0000000000001000\n";
        assert!(!Privileges::of(caps).dropped(), "CAP_NET_ADMIN kept");
        assert!(
            !Privileges::of(caps).only(CAP_NET_RAW),
            "CAP_NET_ADMIN is not CAP_NET_RAW"
        );
        let raw = "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nCapPrm:\t0000000000002000\nCapEff:\t0000000000002000\n";
        assert!(Privileges::of(raw).only(CAP_NET_RAW) && !Privileges::of(raw).dropped());
        assert!(!Privileges::of(nobody).only(CAP_NET_RAW));
    }
}
