//! The packet loop, unprivileged: it owns the two TUN descriptors (opened by the
//! privileged parent and inherited), reads each device until it has nothing (at most
//! 64 packets a round), feeds the packet path, runs the gateway's timers, publishes a
//! metrics snapshot every second and a stats line every `--stats-interval`, and sleeps
//! in `ppoll` until a device is readable or the next deadline. One thread (the
//! metrics endpoint has its own).
//!
//! Stopping (SIGTERM, SIGINT, SIGHUP, or the parent's control pipe closing): new
//! connections pass through untouched, and the loop goes on until the gateway holds
//! nothing or `--drain` has passed; then it reports what it had acknowledged to servers
//! and not delivered (`acked_undelivered_bytes`), on stderr and as one JSON line on
//! stdout.

use crate::metrics;
use crate::opts::Opts;
use crate::path::PacketPath;
use longpipe_core::time::SimTime;
use longpipe_emu::sys;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
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
    pub path: crate::path::PathStats,
    pub gateway: longpipe_core::middlebox::gateway::GatewayCounters,
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

/// Runs until stopped. `ctl`: end of file means stop.
pub fn run(
    o: &Opts,
    mut path: PacketPath,
    devs: [OwnedFd; 2],
    ctl: Option<OwnedFd>,
    listener: Option<TcpListener>,
) -> io::Result<Summary> {
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
    if let Some(l) = listener {
        metrics::serve(l, snapshot.clone());
    }
    let t0 = Instant::now();
    let now = || SimTime(t0.elapsed().as_nanos() as u64);
    let mut buf = vec![0u8; 65_536];
    let second = 1_000_000_000u64;
    let (mut next_snap, mut next_stats) = (0u64, o.stats_interval_ns);
    let mut stop_at: Option<u64> = None;
    let mut stop = false;
    let write = |devs: &mut [File; 2], d: usize, b: &[u8]| devs[d].write(b).is_ok();
    let (dev_c, dev_s) = (o.dev_to_client(), o.dev_to_server());
    let names = [dev_c.as_str(), dev_s.as_str()];
    loop {
        for d in 0..2 {
            for _ in 0..64 {
                let n = match devs[d].read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                let t = now();
                path.input(t, d, &buf[..n], &mut |dd, bb| write(&mut devs, dd, bb));
            }
        }
        let t = now();
        for _ in 0..8 {
            if path.next_timer().is_none_or(|x| x > t) {
                break;
            }
            path.timeout(t, &mut |dd, bb| write(&mut devs, dd, bb));
        }
        if t.0 >= next_snap {
            read_dev_dropped(&mut path, names);
            let s = metrics::render(&path, t.0 as f64 / 1e9);
            if let Ok(mut g) = snapshot.lock() {
                *g = s;
            }
            next_snap = t.0 + second;
        }
        if t.0 >= next_stats {
            eprintln!("{}", metrics::line(&path));
            next_stats = t.0 + o.stats_interval_ns;
        }
        stop |= sys::SIGNALLED.load(Ordering::Relaxed) != 0;
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
            if t.0 >= s || path.gw.held_totals().0 == 0 {
                read_dev_dropped(&mut path, names);
                let (held, unsent) = path.gw.held_totals();
                let sum = Summary {
                    event: "stopped",
                    uptime_s: t.0 as f64 / 1e9,
                    drain_s: (t.0 + o.drain_ns - s) as f64 / 1e9,
                    conns: path.gw.conns(),
                    conns_peak: path.stats.conns_peak,
                    held_bytes: held,
                    acked_undelivered_bytes: unsent,
                    path: path.stats.clone(),
                    gateway: path.gw.stats.clone(),
                };
                eprintln!("{}", metrics::line(&path));
                eprintln!(
                    "longpipe-gateway: stopped: {unsent} B acknowledged to servers were not delivered \
                     ({held} B held, {} connections)",
                    path.gw.conns()
                );
                return Ok(sum);
            }
        }
        // sleep until a device is readable or the next deadline
        let t = now().0;
        let mut wake = next_snap.min(next_stats);
        if let Some(x) = path.next_timer() {
            wake = wake.min(x.0);
        }
        if stop_at.is_some() {
            wake = wake.min(t + 10_000_000);
        }
        for p in pfds.iter_mut() {
            p.revents = 0;
        }
        match sys::ppoll(&mut pfds, Some(wake.saturating_sub(t))) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        if let (Some(c), Some(p)) = (&mut ctl, pfds.get(2)) {
            if p.revents != 0 {
                let mut b = [0u8; 64];
                loop {
                    match c.read(&mut b) {
                        Ok(0) => {
                            stop = true;
                            break;
                        }
                        Ok(_) => continue,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => {
                            stop = true;
                            break;
                        }
                    }
                }
                if stop {
                    // no more events from a closed pipe
                    pfds.truncate(2);
                    ctl = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
