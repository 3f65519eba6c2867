//! The privileged parent's watch over the packet loop: it starts the loop (this binary
//! again, `__worker`) as the unprivileged user with the descriptors it needs, passes
//! SIGTERM/SIGINT/SIGHUP on, and restarts a loop that dies.
//!
//! - **The devices outlive the loop.** The parent keeps its own copies of the TUN
//!   descriptors (spoof mode), the transparent listener (split mode) and the metrics
//!   listener, so a restarted loop finds them as they were; packets wait in the
//!   devices' queues meanwhile.
//! - **A loop that dies is restarted, loudly.** Its connections' state died with it: in
//!   spoof mode the servers saw bytes acknowledged that the clients never got, and the
//!   connections cannot complete. The parent reads the dead loop's last connection
//!   snapshot ([`crate::state::Snapshot`]) and hands it to the new loop, which resets
//!   both ends of each ([`crate::path::PacketPath::reset_dead`]); one line on stderr
//!   names the signal or status, the connections and the bytes. In split mode the
//!   kernel closes a dead relay's sockets itself (the peers get FINs or RSTs). At most
//!   [`RESTARTS`] restarts within [`RESTART_WINDOW`]: beyond, the daemon stops and
//!   undoes its set-up.
//! - **A hung loop is killed.** The loop writes its snapshot at least once a second; if
//!   it has not for [`HUNG_AFTER`], the parent kills it (and restarts it as above).
//! - **systemd.** Under `Type=notify` (`$NOTIFY_SOCKET`), the parent says `READY=1`
//!   once the first loop wrote its snapshot, `WATCHDOG=1` every half of
//!   `$WATCHDOG_USEC` while the loop is alive and not hung, `STATUS=` lines on
//!   restarts, and `STOPPING=1` (contrib/longpipe-gateway.service).

use crate::opts::{Mode, Opts};
use crate::path::Prefix;
use crate::state::{self, Record, Snapshot};
use longpipe_sys::{procs, sys};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Most restarts of the packet loop within [`RESTART_WINDOW`].
pub const RESTARTS: usize = 5;
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// A loop that has not written its snapshot for this long is hung (it writes one a
/// second at least).
pub const HUNG_AFTER: Duration = Duration::from_secs(10);

/// A connection a dead loop held, as handed to its successor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeadConn {
    pub key: longpipe_core::middlebox::gateway::ConnKey,
    pub client_rcv_nxt: Option<u32>,
    pub server_rcv_nxt: Option<u32>,
    /// Bytes its server saw acknowledged, at the snapshot.
    pub lost: u64,
}

/// What the parent hands the loop (one JSON line on its stdin, which then stays open as
/// the stop channel).
#[derive(Serialize, Deserialize)]
pub struct Plan {
    pub opts: Opts,
    pub clients: Vec<Prefix>,
    /// Spoof mode: TUN descriptors: toward the client, toward the server.
    pub tuns: Option<[i32; 2]>,
    /// Split mode: the transparent listener.
    pub relay: Option<i32>,
    pub listener: Option<i32>,
    /// The connection snapshot's file.
    pub snapshot: Option<i32>,
    /// Connections a loop that died held: reset them.
    pub dead: Vec<DeadConn>,
}

/// What the loop needs, held by the parent for the daemon's whole life.
pub struct Held {
    pub mode: Mode,
    /// TUN devices (spoof) or the relay's listener (split).
    pub work: Vec<OwnedFd>,
    pub metrics: Option<OwnedFd>,
    pub uid: u32,
    pub gid: u32,
}

/// systemd's notification socket, if the daemon runs under `Type=notify`.
struct Notify {
    sock: std::os::unix::net::UnixDatagram,
    addr: std::os::unix::net::SocketAddr,
    /// `WATCHDOG_USEC / 2`.
    ping: Option<Duration>,
    last: Instant,
}

impl Notify {
    fn from_env() -> Option<Notify> {
        use std::os::linux::net::SocketAddrExt;
        let path = std::env::var("NOTIFY_SOCKET").ok()?;
        let addr = match path.strip_prefix('@') {
            Some(abs) => std::os::unix::net::SocketAddr::from_abstract_name(abs).ok()?,
            None => std::os::unix::net::SocketAddr::from_pathname(&path).ok()?,
        };
        let sock = std::os::unix::net::UnixDatagram::unbound().ok()?;
        // never wait on the receiver: a full queue (net.unix.max_dgram_qlen, 10 by
        // default) would stop the supervisor; a dropped ping is systemd's to judge
        sock.set_nonblocking(true).ok()?;
        let ping = std::env::var("WATCHDOG_USEC")
            .ok()
            .and_then(|u| u.parse::<u64>().ok())
            .filter(|&u| u > 0)
            .map(|u| Duration::from_micros(u / 2));
        Some(Notify {
            sock,
            addr,
            ping,
            last: Instant::now(),
        })
    }

    fn say(&self, msg: &str) {
        let _ = self.sock.send_to_addr(msg.as_bytes(), &self.addr);
    }
}

/// The loop's snapshot file (mode 0600 under the state directory), opened by the
/// parent and handed to each loop.
fn snapshot_file(name: &str) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(state::conns_path(name))
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT: a panic)",
        libc::SIGSYS => " (SIGSYS: a system call outside its seccomp filter; a bug)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

/// Starts one packet loop with `plan`.
fn spawn(o: &Opts, h: &Held, snap: &File, plan: &mut Plan) -> io::Result<Child> {
    let snap = OwnedFd::from(snap.try_clone()?);
    plan.snapshot = Some(snap.as_raw_fd());
    let passed: Vec<&OwnedFd> = h
        .work
        .iter()
        .chain(h.metrics.iter())
        .chain(std::iter::once(&snap))
        .collect();
    // Only the loop inherits these: close-on-exec is lifted just for its start (this
    // process has no other thread that could start a program meanwhile).
    for fd in &passed {
        sys::set_cloexec(*fd, false)?;
    }
    let exe = std::env::current_exe()?;
    let spawned = if o.mode == Mode::Split {
        // setpriv changes the ids keeping CAP_NET_RAW alone (inheritable, ambient and
        // bounding sets), then runs the loop in this same process
        Command::new("setpriv")
            .arg(format!("--reuid={}", h.uid))
            .arg(format!("--regid={}", h.gid))
            .args([
                "--clear-groups",
                "--inh-caps=-all,+net_raw",
                "--ambient-caps=-all,+net_raw",
                "--bounding-set=-all,+net_raw",
                "--no-new-privs",
                "--",
            ])
            .arg(&exe)
            .arg("__worker")
            .stdin(Stdio::piped())
            .spawn()
    } else {
        Command::new(&exe)
            .arg("__worker")
            .uid(h.uid)
            .gid(h.gid)
            .stdin(Stdio::piped())
            .spawn()
    };
    for fd in &passed {
        sys::set_cloexec(*fd, true)?;
    }
    let mut child = spawned?;
    let ctl = child.stdin.as_mut().expect("piped");
    ctl.write_all(serde_json::to_string(&*plan)?.as_bytes())?;
    ctl.write_all(b"\n")?;
    ctl.flush()?;
    Ok(child)
}

/// Runs packet loops until the daemon is told to stop; the last loop's exit status
/// (0: stopped cleanly). `dead`: connections a dead instance's loop held, for the
/// first loop to reset.
pub fn supervise(
    o: &Opts,
    clients: &[Prefix],
    h: Held,
    dead: Vec<DeadConn>,
    rec: &mut Record,
) -> io::Result<i32> {
    let snap = snapshot_file(&o.name)?;
    let mut plan = Plan {
        opts: o.clone(),
        clients: clients.to_vec(),
        tuns: (h.mode == Mode::Spoof).then(|| [h.work[0].as_raw_fd(), h.work[1].as_raw_fd()]),
        relay: (h.mode == Mode::Split).then(|| h.work[0].as_raw_fd()),
        listener: h.metrics.as_ref().map(|l| l.as_raw_fd()),
        // the loop gets a duplicate (spawn): its number is known only then
        snapshot: None,
        dead,
    };
    let mut notify = Notify::from_env();
    let mut ready = false;
    let mut restarts: Vec<Instant> = vec![];
    let mut stopping: Option<Instant> = None;
    let grace = Duration::from_nanos(o.drain_ns) + Duration::from_secs(10);
    loop {
        let mut child = spawn(o, &h, &snap, &mut plan)?;
        let started = Instant::now();
        rec.worker = Some((child.id(), procs::start_time(child.id()).unwrap_or(0)));
        rec.save()?;
        let mut ctl = child.stdin.take();
        let mut last_snap = (file_len(&snap), Instant::now());
        let mut hung = false;
        let st = loop {
            if let Some(st) = child.try_wait()? {
                break st;
            }
            let sig = sys::SIGNALLED.swap(0, Ordering::SeqCst);
            if sig != 0 && stopping.is_none() {
                if let Some(n) = &notify {
                    n.say("STOPPING=1");
                }
                let _ = sys::kill(child.id() as i32, libc::SIGTERM);
                ctl = None; // end of file: stop
                stopping = Some(Instant::now());
            }
            if stopping.is_some_and(|t| t.elapsed() > grace) {
                eprintln!("longpipe-gateway: the packet loop did not stop in time: killed");
                let _ = child.kill();
            }
            // the loop's heartbeat: its snapshot changes at least once a second
            let now_len = file_len(&snap);
            if now_len != last_snap.0 || snapshot_fresh(&o.name, &last_snap.1) {
                last_snap = (now_len, Instant::now());
                if !ready && now_len.is_some_and(|l| l > 0) {
                    ready = true;
                    if let Some(n) = &notify {
                        n.say("READY=1");
                    }
                }
            }
            let healthy = last_snap.1.elapsed() < HUNG_AFTER;
            if !healthy && stopping.is_none() && !hung && started.elapsed() > HUNG_AFTER {
                eprintln!(
                    "longpipe-gateway: the packet loop (pid {}) wrote no snapshot for {} s: \
                     hung; killed",
                    child.id(),
                    HUNG_AFTER.as_secs()
                );
                hung = true;
                let _ = child.kill();
            }
            if let Some(n) = &mut notify {
                if n.ping.is_some_and(|p| n.last.elapsed() >= p) && healthy {
                    n.say("WATCHDOG=1");
                    n.last = Instant::now();
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        drop(ctl);
        let code = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
        if stopping.is_some() || (st.success() && !hung) {
            return Ok(code);
        }
        // the loop died on its own: restart it, resetting what it held
        let now = Instant::now();
        restarts.retain(|t| now.duration_since(*t) < RESTART_WINDOW);
        let how = match st.signal() {
            Some(s) => format!("was killed by signal {s}{}", signal_name(s)),
            None => format!("exited with status {}", st.code().unwrap_or(-1)),
        };
        let dead = if o.mode == Mode::Spoof {
            dead_conns(&o.name)
        } else {
            vec![]
        };
        let lost: u64 = dead.iter().map(|d| d.lost).sum();
        let what = if o.mode == Mode::Spoof {
            format!(
                "the {} connections it held ({lost} B acknowledged to servers, not delivered, \
                 at its last snapshot) will be reset on both ends",
                dead.len()
            )
        } else {
            "the kernel closed its sockets (their peers saw a FIN or a RST)".to_string()
        };
        if restarts.len() >= RESTARTS {
            eprintln!(
                "longpipe-gateway: the packet loop (pid {}) {how}; {what}; it died {} times \
                 within {} s: giving up (the set-up is undone)",
                child.id(),
                restarts.len() + 1,
                RESTART_WINDOW.as_secs()
            );
            return Ok(1);
        }
        restarts.push(now);
        rec.restarts += 1;
        eprintln!(
            "longpipe-gateway: the packet loop (pid {}) {how}: restarting it (restart {}); {what}",
            child.id(),
            rec.restarts
        );
        if let Some(n) = &notify {
            n.say(&format!(
                "STATUS=packet loop {how}; restarted ({} connections reset)",
                dead.len()
            ));
        }
        plan.dead = dead;
    }
}

fn file_len(f: &File) -> Option<u64> {
    f.metadata().ok().map(|m| m.len())
}

/// The snapshot file was written since `since` (its modification time).
fn snapshot_fresh(name: &str, since: &Instant) -> bool {
    let Ok(m) = std::fs::metadata(state::conns_path(name)).and_then(|m| m.modified()) else {
        return false;
    };
    let age = m.elapsed().unwrap_or(Duration::MAX);
    age < since.elapsed()
}

/// The connections of a dead loop's last snapshot.
pub fn dead_conns(name: &str) -> Vec<DeadConn> {
    let Ok(Some(s)) = Snapshot::read(name) else {
        return vec![];
    };
    let sock = |a: &str| -> Option<([u8; 4], u16)> {
        let a: std::net::SocketAddrV4 = a.parse().ok()?;
        Some((a.ip().octets(), a.port()))
    };
    s.conns
        .iter()
        .filter_map(|c| {
            let (s, c2) = (sock(&c.server)?, sock(&c.client)?);
            Some(DeadConn {
                key: (s.0, s.1, c2.0, c2.1),
                client_rcv_nxt: c.client_rcv_nxt,
                server_rcv_nxt: c.server_rcv_nxt,
                lost: c.acked_undelivered,
            })
        })
        .collect()
}
