//! Set-up and teardown: one named network namespace per node of the scenario, one TUN
//! device per link end inside its node's namespace, addresses and routes as the
//! simulator assigns them, per-namespace TCP settings.
//!
//! Tools: namespaces and addresses with `ip` from iproute2 (`ip netns add`, then one
//! `ip -n NS -batch -` per namespace): the commands a user would type to inspect the
//! same namespaces (`ip netns exec lpemu-... tcpdump -i lpl1`), and no netlink code of
//! our own. The TUN devices are opened by this process inside each namespace
//! (`setns`, then `TUNSETIFF`), so they live exactly as long as the ferry holds them.
//! Sysctls are written through `/proc/sys/net` while this thread is in the namespace.
//!
//! Marking and recovery: every namespace is named `lpemu-RUN-INDEX-NODE` (RUN: 6 random
//! hex digits), and before any is made, a record `/run/longpipe-emu/RUN.json` lists
//! them with this process's pid and start time. Teardown (on exit, on Ctrl-C through the
//! signal flags, on a panic through `Drop`) stops the processes left inside them and
//! deletes them; after a crash (SIGKILL), [`cleanup_stale`] — run by `longpipe emu
//! cleanup` and at the start of every run — does the same for every record whose
//! process is gone. Nothing without a record, and nothing of a live run, is touched.

use crate::linux::Mapping;
use crate::sys;
use longpipe_core::net::packet::node_addr;
use longpipe_core::net::routing::Routes;
use longpipe_core::scenario::ValidScenario;
use longpipe_sys::cmd;
use longpipe_sys::procs::start_time;
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const PREFIX: &str = "lpemu-";

/// Where run records are kept (a tmpfs: gone after a reboot, as are namespaces).
pub fn state_dir() -> PathBuf {
    std::env::var_os("LONGPIPE_EMU_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/longpipe-emu"))
}

#[derive(Serialize, Deserialize, Debug)]
struct Record {
    pid: u32,
    /// Field 22 of /proc/PID/stat (start time in clock ticks): tells a reused pid.
    start: u64,
    netns: Vec<String>,
}

fn run_id() -> String {
    let mut b = [0u8; 3];
    if File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
            ^ std::process::id();
        b.copy_from_slice(&t.to_le_bytes()[..3]);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The namespace of node `i` named `name` in run `run`.
pub fn ns_name(run: &str, i: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    format!("{PREFIX}{run}-{i}-{clean}")
}

/// The TUN device of link `li` inside a node's namespace.
pub fn dev_name(li: usize) -> String {
    format!("lpl{li}")
}

/// The queue of every TUN device (`txqueuelen`, packets: the device's qdisc and the ring
/// the ferry reads). Linux's default, 500, dropped a host's bursts (1000 connections
/// opening at once) before the emulated link whenever the ferry fell behind for a
/// moment, out of the scenario's queue and out of its counters; the emulated link's
/// queue is the one that should decide. What still drops there is reported
/// ([`device_drops`]).
pub const DEV_QUEUE: u32 = 20_000;

/// Packets the kernel dropped at a node's TUN device: (transmit, receive). Transmit:
/// the host sent faster than the ferry read (the device's queue was full); receive: the
/// host did not take what the ferry wrote (its input backlog was full). Parsed from
/// `ip -s -j link show dev DEV`.
pub fn parse_drops(json: &str) -> Option<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let st = v.get(0)?.get("stats64")?;
    let n = |d: &str| st.get(d)?.get("dropped")?.as_u64();
    Some((n("tx")?, n("rx")?))
}

/// [`parse_drops`] for device `dev` of namespace `ns` (None if `ip` fails).
pub fn device_drops(ns: &str, dev: &str) -> Option<(u64, u64)> {
    let out = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", dev])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    parse_drops(&String::from_utf8_lossy(&out.stdout))
}

fn ip(args: &[&str], stdin: Option<&str>) -> io::Result<()> {
    cmd::ip(args, stdin).map(|_| ())
}

/// The processes inside each of the named namespaces, found in one pass over `/proc`
/// (a process's `ns/net` link names its namespace's inode, as `/run/netns/NAME` does).
fn ns_pids(names: &[&str]) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let inodes: Vec<u64> = names
        .iter()
        .filter_map(|n| fs::metadata(Path::new("/run/netns").join(n)).ok())
        .map(|m| m.ino())
        .collect();
    let mut pids = Vec::new();
    if inodes.is_empty() {
        return pids;
    }
    let me = std::process::id() as i32;
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(link) = fs::read_link(e.path().join("ns/net")) else {
            continue;
        };
        let ino = link.to_str().and_then(|l| {
            l.strip_prefix("net:[")?
                .strip_suffix(']')?
                .parse::<u64>()
                .ok()
        });
        if pid != me && ino.is_some_and(|i| inodes.contains(&i)) {
            pids.push(pid);
        }
    }
    pids
}

/// Kills what runs in the named namespaces and deletes them (one `ip -batch`, so that
/// hundreds go in about a second); returns those that existed. Only marked names.
fn remove_ns(names: &[String]) -> Vec<String> {
    let ours: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with(PREFIX) && !n.contains('/'))
        .filter(|n| Path::new("/run/netns").join(n).exists())
        .collect();
    if ours.is_empty() {
        return Vec::new();
    }
    for pid in ns_pids(&ours) {
        let _ = sys::kill(pid, libc::SIGKILL);
    }
    let batch: String = ours.iter().map(|n| format!("netns delete {n}\n")).collect();
    let _ = ip(&["-force", "-batch", "-"], Some(&batch));
    ours.into_iter()
        .filter(|n| !Path::new("/run/netns").join(n).exists())
        .map(String::from)
        .collect()
}

/// Removes the namespaces of every run whose process is gone; returns their names.
pub fn cleanup_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = fs::read_dir(state_dir()) else {
        return removed;
    };
    for e in dir.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(rec) = fs::read_to_string(&p)
            .map_err(|_| ())
            .and_then(|t| serde_json::from_str::<Record>(&t).map_err(|_| ()))
        else {
            continue;
        };
        if start_time(rec.pid) == Some(rec.start) {
            continue; // a live run
        }
        removed.extend(remove_ns(&rec.netns));
        let _ = fs::remove_file(&p);
    }
    removed
}

/// The capabilities the set-up needs: (bit in `CapEff`, name).
const CAPS: [(u32, &str); 2] = [(12, "CAP_NET_ADMIN"), (21, "CAP_SYS_ADMIN")];

/// The capabilities of `CAPS` missing from the `CapEff` line of a `/proc/PID/status`.
pub fn missing_caps(status: &str) -> Vec<&'static str> {
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    CAPS.iter()
        .filter(|(bit, _)| eff & (1 << bit) == 0)
        .map(|(_, n)| *n)
        .collect()
}

/// Why an emulation cannot be set up here.
pub fn preflight() -> Result<(), String> {
    if sys::geteuid() != 0 {
        return Err(
            "longpipe emu needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create \
                    network namespaces and TUN devices: run it with sudo; the ferry and your \
                    command then run without privileges"
                .into(),
        );
    }
    let missing = missing_caps(&fs::read_to_string("/proc/self/status").unwrap_or_default());
    if !missing.is_empty() {
        return Err(format!(
            "longpipe emu runs as root but without {} (a container or capsh dropped it): \
             it needs CAP_NET_ADMIN and CAP_SYS_ADMIN to create network namespaces and TUN devices",
            missing.join(" and ")
        ));
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err("no /dev/net/tun: this kernel or container offers no TUN devices".into());
    }
    if File::open("/proc/self/ns/net").is_err() {
        return Err("network namespaces are not available here (/proc/self/ns/net)".into());
    }
    Ok(())
}

/// Closes TUN devices, many at once. Closing the last descriptor of a device
/// unregisters it, and each unregistration waits for an RCU grace period (≈ 19 ms on
/// this machine: 280 devices took 5.3 s one after the other, 0.19 s from 64 threads),
/// so a large emulation's teardown closes them from up to 64 threads.
fn close_tuns(fds: Vec<OwnedFd>) {
    const THREADS: usize = 64;
    if fds.len() <= 2 {
        return;
    }
    let per = fds.len().div_ceil(THREADS);
    let mut chunks: Vec<Vec<OwnedFd>> = Vec::new();
    let mut it = fds.into_iter().peekable();
    while it.peek().is_some() {
        chunks.push(it.by_ref().take(per).collect());
    }
    std::thread::scope(|s| {
        for c in chunks {
            s.spawn(move || drop(c));
        }
    });
}

/// The namespaces and devices of one run.
pub struct Setup {
    pub run: String,
    /// Namespace of each node.
    pub ns: Vec<String>,
    record: PathBuf,
    home: File,
    /// TUN device of each port (2 × link + side).
    pub tuns: Vec<OwnedFd>,
    /// Per node: the TCP settings of the mapping as its namespace reads them back
    /// (path under /proc/sys/net, value).
    pub sysctls: Vec<Vec<(String, String)>>,
    /// The devices opened so far during the set-up, by port.
    partial: Vec<Option<OwnedFd>>,
    done: bool,
}

impl Setup {
    /// Creates everything; on any failure, removes what it made.
    pub fn create(sc: &ValidScenario, m: &Mapping) -> io::Result<Setup> {
        cleanup_stale();
        let run = run_id();
        let ns: Vec<String> = sc
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| ns_name(&run, i, &n.name))
            .collect();
        let dir = state_dir();
        fs::create_dir_all(&dir)?;
        let record = dir.join(format!("{run}.json"));
        let pid = std::process::id();
        let rec = Record {
            pid,
            start: start_time(pid).unwrap_or(0),
            netns: ns.clone(),
        };
        // The record first: a crash from here on leaves nothing unlisted.
        fs::write(&record, serde_json::to_string(&rec).expect("serializes"))?;
        let home = File::open("/proc/thread-self/ns/net")?;
        let mut s = Setup {
            run,
            ns,
            record,
            home,
            tuns: Vec::new(),
            sysctls: vec![Vec::new(); sc.nodes.len()],
            partial: Vec::new(),
            done: false,
        };
        s.build(sc, m)?; // Drop tears down on error
        Ok(s)
    }

    fn build(&mut self, sc: &ValidScenario, m: &Mapping) -> io::Result<()> {
        let batch: String = self.ns.iter().map(|n| format!("netns add {n}\n")).collect();
        ip(&["-batch", "-"], Some(&batch))?;
        let pairs: Vec<(usize, usize)> = sc.links.iter().map(|l| (l.a, l.b)).collect();
        let all: Vec<usize> = (0..sc.nodes.len()).collect();
        let routes = Routes::compute(sc.nodes.len(), &pairs, &all);
        self.partial = (0..2 * sc.links.len()).map(|_| None).collect();
        for u in 0..sc.nodes.len() {
            // Ctrl-C, SIGTERM or SIGHUP (the flags of `sys::catch_signals`) stop the
            // set-up between two nodes; the caller's Drop removes what was made.
            if sys::SIGNALLED.load(std::sync::atomic::Ordering::SeqCst) != 0 {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
            }
            self.enter(u)?;
            let r = (|| -> io::Result<()> {
                let mut sysctls: Vec<(String, String)> = vec![
                    ("ipv6/conf/all/disable_ipv6".into(), "1".into()),
                    ("ipv6/conf/default/disable_ipv6".into(), "1".into()),
                    ("ipv4/conf/all/rp_filter".into(), "0".into()),
                    ("ipv4/conf/default/rp_filter".into(), "0".into()),
                ];
                sysctls.extend(m.sysctls[u].iter().cloned());
                let mut took = Vec::new();
                for (k, v) in &sysctls {
                    let p = Path::new("/proc/sys/net").join(k);
                    if !p.exists() {
                        continue; // an older kernel: documented defaults apply
                    }
                    fs::write(&p, v)
                        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
                    if m.sysctls[u].iter().any(|x| &x.0 == k) {
                        // as the kernel reads it back (tabs between a vector's values)
                        let got = fs::read_to_string(&p).unwrap_or_default();
                        took.push((
                            k.clone(),
                            got.split_whitespace().collect::<Vec<_>>().join(" "),
                        ));
                    }
                }
                self.sysctls[u] = took;
                for (li, l) in sc.links.iter().enumerate() {
                    for (side, end) in [l.a, l.b].into_iter().enumerate() {
                        if end == u {
                            self.partial[2 * li + side] = Some(sys::tun_open(&dev_name(li))?);
                        }
                    }
                }
                Ok(())
            })();
            self.leave()?;
            r?;
            let a = node_addr(u);
            let addr = format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
            let mut batch = String::from("link set dev lo up\n");
            for &(_, (li, _)) in routes.ports(u) {
                let d = dev_name(li as usize);
                batch += &format!("link set dev {d} mtu {} txqueuelen {DEV_QUEUE} up\n", m.mtu);
                batch += &format!("addr add {addr}/32 dev {d}\n");
            }
            for v in 0..sc.nodes.len() {
                if v == u {
                    continue;
                }
                let Some(k) = routes.next(u, v) else { continue };
                let (_, (li, _)) = routes.ports(u)[k as usize];
                let b = node_addr(v);
                let extra = m
                    .routes
                    .get(&(u, v))
                    .map(|x| x.join(" "))
                    .unwrap_or_default();
                batch += &format!(
                    "route add {}.{}.{}.{}/32 dev {} src {addr} {extra}\n",
                    b[0],
                    b[1],
                    b[2],
                    b[3],
                    dev_name(li as usize)
                );
            }
            ip(&["-n", &self.ns[u], "-batch", "-"], Some(&batch))?;
        }
        self.tuns = std::mem::take(&mut self.partial)
            .into_iter()
            .map(|t| t.expect("every link end has its device"))
            .collect();
        Ok(())
    }

    /// Moves this thread into node `u`'s namespace.
    pub fn enter(&self, u: usize) -> io::Result<()> {
        let f = File::open(Path::new("/run/netns").join(&self.ns[u]))?;
        sys::setns_net(&f)
    }

    /// Back to the namespace this process started in.
    pub fn leave(&self) -> io::Result<()> {
        sys::setns_net(&self.home)
    }

    /// Removes the namespaces (killing what still runs in them) and the record.
    pub fn teardown(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let _ = self.leave();
        let mut fds = std::mem::take(&mut self.tuns);
        fds.extend(std::mem::take(&mut self.partial).into_iter().flatten());
        close_tuns(fds);
        remove_ns(&self.ns);
        let _ = fs::remove_file(&self.record);
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_marked_and_fit() {
        let n = ns_name("a1b2c3", 2, "ground station/1 ü");
        assert_eq!(n, "lpemu-a1b2c3-2-ground_station_1__");
        assert!(dev_name(99_999).len() < libc::IFNAMSIZ);
        assert_eq!(run_id().len(), 6);
        assert!(
            remove_ns(&["not-ours".into()]).is_empty(),
            "never touches unmarked names"
        );
        assert!(remove_ns(&["lpemu-../../etc".into()]).is_empty());
        let me = std::process::id();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(u32::MAX), None);
    }

    #[test]
    fn device_drops_are_read_from_ip_json() {
        let j = r#"[{"ifname":"lpl0","txqlen":20000,"stats64":{"rx":{"bytes":9,"packets":3,"dropped":7},"tx":{"bytes":5,"packets":2,"dropped":1181}}}]"#;
        assert_eq!(parse_drops(j), Some((1181, 7)), "(transmit, receive)");
        assert_eq!(parse_drops("[]"), None);
        assert_eq!(parse_drops("not json"), None);
        // the real command on a device of this namespace (lo always exists)
        if let Ok(out) = Command::new("ip")
            .args(["-s", "-j", "link", "show", "dev", "lo"])
            .output()
        {
            if out.status.success() {
                assert!(parse_drops(&String::from_utf8_lossy(&out.stdout)).is_some());
            }
        }
    }

    #[test]
    fn missing_capabilities_are_read_from_capeff() {
        let st = |eff: &str| format!("Name:\tx\nCapInh:\t0\nCapEff:\t{eff}\nCapBnd:\t0\n");
        assert!(missing_caps(&st("000001ffffffffff")).is_empty(), "root");
        // capsh --drop=cap_sys_admin clears bit 21
        assert_eq!(missing_caps(&st("000001ffffdfffff")), ["CAP_SYS_ADMIN"]);
        assert_eq!(missing_caps(&st("0")), ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"]);
        assert_eq!(missing_caps("garbage").len(), 2);
    }
}
