//! `longpipe-gateway`: the satellite TCP gateway daemon (`longpipe gateway run` runs it).
//!
//! Processes: this one starts as root, checks the options, opens the two TUN devices,
//! installs routes, rules and sysctls ([`setup`]), binds the metrics port, and starts
//! the packet loop — this binary again (`__worker`) — as an unprivileged user (`--user`,
//! the user behind sudo, or nobody; never root), handing it the descriptors by
//! inheritance. The worker checks that it holds no root id and no capability before
//! touching a packet. The parent only waits (passing SIGTERM/SIGINT/SIGHUP on) and
//! tears the set-up down when the worker ends. Exit status: 0, 2 bad input or an
//! unusable environment (one line on stderr), 1 internal error.

use longpipe_gateway::opts::{self, Mode, Opts, USAGE};
use longpipe_gateway::path::{PacketPath, Prefix};
use longpipe_gateway::setup;
use longpipe_gateway::worker::{self, Privileges, CAP_NET_RAW};
use longpipe_gateway::{split, split_setup};
use longpipe_sys::cmd::have;
use longpipe_sys::sys;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wants_help = args.iter().any(|a| a == "--help" || a == "-h");
    let code = match args.first().map(String::as_str) {
        Some("run" | "cleanup") if wants_help => help(),
        Some("run") => match opts::parse(&args[1..], false) {
            Ok(o) => cmd_run(o),
            Err(e) => bad(e),
        },
        Some("cleanup") => match opts::parse(&args[1..], true) {
            Ok(o) => cmd_cleanup(&o),
            Err(e) => bad(e),
        },
        Some("__worker") => worker_main(),
        Some("--help" | "-h") => help(),
        _ => bad(format!("expected a command\n{USAGE}")),
    };
    std::process::exit(code);
}

/// The usage on stdout, status 0 (`longpipe-gateway [run|cleanup] --help`).
fn help() -> i32 {
    // a closed pipe (| head) is not an error
    let _ = writeln!(io::stdout(), "{USAGE}");
    0
}

fn bad(msg: impl std::fmt::Display) -> i32 {
    eprintln!("error: {msg}");
    2
}

/// What the parent hands the worker (one JSON line on its stdin, which then stays open
/// as the stop channel).
#[derive(Serialize, Deserialize)]
struct Plan {
    opts: Opts,
    clients: Vec<Prefix>,
    /// Spoof mode: TUN descriptors: toward the client, toward the server.
    tuns: Option<[i32; 2]>,
    /// Split mode: the transparent listener.
    relay: Option<i32>,
    listener: Option<i32>,
}

/// Split mode's commands: nft (nftables) and setpriv (util-linux).
fn preflight_split() -> Result<(), String> {
    if !have("nft", "--version") {
        return Err("--mode split needs the nft command (package nftables)".into());
    }
    if !have("setpriv", "--version") {
        return Err("--mode split needs the setpriv command (package util-linux)".into());
    }
    Ok(())
}

fn preflight() -> Result<(), String> {
    if sys::geteuid() != 0 {
        return Err(
            "longpipe-gateway run needs root (CAP_NET_ADMIN) for the set-up; the \
                    packet loop then runs unprivileged"
                .into(),
        );
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("/dev/net/tun is missing: no TUN support here".into());
    }
    if Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        return Err("the ip command (iproute2) is missing".into());
    }
    Ok(())
}

/// The user the worker runs as: --user, the user behind sudo, or nobody.
fn target_user(arg: Option<&str>) -> Result<(u32, u32), String> {
    let (u, g) = if let Some(u) = arg {
        sys::lookup_user(u).ok_or_else(|| format!("--user: no user {u:?}"))?
    } else {
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
        match (env("SUDO_UID"), env("SUDO_GID")) {
            (Some(u), Some(g)) if u != 0 => (u, g),
            _ => sys::lookup_user("nobody").unwrap_or((65_534, 65_534)),
        }
    };
    if u == 0 || g == 0 {
        return Err("--user: the packet loop never runs as root (uid or gid 0)".into());
    }
    Ok((u, g))
}

fn cmd_cleanup(o: &Opts) -> i32 {
    if let Err(e) = preflight() {
        return bad(e);
    }
    let table = match split_setup::cleanup(o) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    if let Some(t) = &table {
        println!("removed {t}");
    }
    match setup::cleanup(o) {
        Ok(r) => {
            if r.is_empty() && table.is_none() {
                println!("nothing to clean up");
            }
            for x in r {
                println!("removed rule {x}");
            }
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn cmd_run(o: Opts) -> i32 {
    if let Err(e) = preflight() {
        return bad(e);
    }
    if !setup::link_exists(&o.uplink) {
        return bad(format!("--uplink {:?}: no such interface", o.uplink));
    }
    let clients = if o.clients.is_empty() {
        match setup::routes_over(&o.uplink) {
            Ok(c) if !c.is_empty() => c,
            _ => {
                return bad(format!(
                    "--clients: no IPv4 route goes over {:?}; name the client networks",
                    o.uplink
                ))
            }
        }
    } else {
        o.clients.clone()
    };
    let (uid, gid) = match target_user(o.user.as_deref()) {
        Ok(x) => x,
        Err(e) => return bad(e),
    };
    let listener = match &o.metrics {
        Some(a) => match TcpListener::bind(a) {
            Ok(l) => Some(l),
            Err(e) => return bad(format!("--metrics {a}: cannot listen: {e}")),
        },
        None => None,
    };
    if let Err(e) = sys::catch_signals() {
        eprintln!("error: cannot install signal handlers: {e}");
        return 1;
    }
    if o.mode == Mode::Split {
        return run_split(&o, &clients, listener, uid, gid);
    }
    let _ = setup::cleanup(&o); // rules left by a crashed run with these names
    let tuns = match (
        sys::tun_open(&o.dev_to_client()),
        sys::tun_open(&o.dev_to_server()),
    ) {
        (Ok(c), Ok(s)) => [c, s],
        (Err(e), _) | (_, Err(e)) => {
            eprintln!(
                "error: cannot open the TUN devices {}/{}: {e}",
                o.dev_to_client(),
                o.dev_to_server()
            );
            return 1;
        }
    };
    let mut inst = match setup::install(&o, &clients) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: cannot set up routing: {e}");
            return 1;
        }
    };
    let code = match supervise(&o, &clients, Workload::Tuns(tuns), listener, uid, gid) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    };
    inst.teardown();
    code
}

/// Split mode: the transparent listener (errors in it are the user's: --cc, --port),
/// the nftables table and rule, then the relay as an unprivileged user keeping
/// CAP_NET_RAW.
fn run_split(
    o: &Opts,
    clients: &[Prefix],
    metrics: Option<TcpListener>,
    uid: u32,
    gid: u32,
) -> i32 {
    if let Err(e) = preflight_split() {
        return bad(e);
    }
    let (cfg, up) = match o.gateway_config() {
        Ok(x) => x,
        Err(e) => return bad(e),
    };
    let relay = match split_setup::listener(o, cfg.window.unwrap_or(up.bdp)) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    let _ = split_setup::cleanup(o); // a table left by a crashed run with this name
    let _ = setup::cleanup(o);
    let mut inst = match split_setup::install(o, clients) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: cannot set up nftables TPROXY: {e}");
            return 1;
        }
    };
    let code = match supervise(o, clients, Workload::Relay(relay), metrics, uid, gid) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    };
    inst.teardown();
    code
}

enum Workload {
    Tuns([OwnedFd; 2]),
    Relay(OwnedFd),
}

fn supervise(
    o: &Opts,
    clients: &[Prefix],
    work: Workload,
    listener: Option<TcpListener>,
    uid: u32,
    gid: u32,
) -> io::Result<i32> {
    let lfd: Option<OwnedFd> = listener.map(OwnedFd::from);
    let fds: Vec<OwnedFd> = match work {
        Workload::Tuns(t) => t.into(),
        Workload::Relay(r) => vec![r],
    };
    let plan = Plan {
        opts: o.clone(),
        clients: clients.to_vec(),
        tuns: (fds.len() == 2).then(|| [fds[0].as_raw_fd(), fds[1].as_raw_fd()]),
        relay: (fds.len() == 1).then(|| fds[0].as_raw_fd()),
        listener: lfd.as_ref().map(|l| l.as_raw_fd()),
    };
    let passed: Vec<&OwnedFd> = fds.iter().chain(lfd.iter()).collect();
    // Only the worker inherits these: close-on-exec is lifted just for its start (this
    // process has no other thread that could start a program meanwhile).
    for fd in &passed {
        sys::set_cloexec(*fd, false)?;
    }
    let exe = std::env::current_exe()?;
    let spawned = if o.mode == Mode::Split {
        // setpriv changes the ids keeping CAP_NET_RAW alone (inheritable, ambient and
        // bounding sets), then runs the worker in this same process
        Command::new("setpriv")
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
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
            .uid(uid)
            .gid(gid)
            .stdin(Stdio::piped())
            .spawn()
    };
    for fd in &passed {
        sys::set_cloexec(*fd, true)?;
    }
    let mut child = spawned?;
    // The devices (or the listener) live in the worker now: they vanish when it ends.
    drop(fds);
    drop(lfd);
    let mut ctl = child.stdin.take().expect("piped");
    ctl.write_all(serde_json::to_string(&plan)?.as_bytes())?;
    ctl.write_all(b"\n")?;
    ctl.flush()?;
    let mut ctl = Some(ctl);
    let mut stopping: Option<Instant> = None;
    let grace = Duration::from_nanos(o.drain_ns) + Duration::from_secs(10);
    let st = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        let sig = sys::SIGNALLED.swap(0, Ordering::SeqCst);
        if sig != 0 && stopping.is_none() {
            let _ = sys::kill(child.id() as i32, libc::SIGTERM);
            ctl = None; // end of file: stop
            stopping = Some(Instant::now());
        }
        if stopping.is_some_and(|t| t.elapsed() > grace) {
            eprintln!("longpipe-gateway: the packet loop did not stop in time: killed");
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(ctl);
    Ok(st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)))
}

fn worker_main() -> i32 {
    match worker_inner() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: packet loop: {e}");
            1
        }
    }
}

fn worker_inner() -> io::Result<()> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    let mut stdin = io::stdin().lock();
    while stdin.read(&mut b)? == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    drop(stdin);
    let plan: Plan = serde_json::from_slice(&line)?;
    sys::catch_signals()?;
    let privs = Privileges::current()?;
    let split = plan.opts.mode == Mode::Split;
    let keep = if split { CAP_NET_RAW } else { 0 };
    if !privs.only(keep) {
        return Err(io::Error::other(format!(
            "refusing to handle {} with privileges: {privs:?}",
            if split { "connections" } else { "packets" }
        )));
    }
    let listener = match plan.listener {
        Some(fd) => {
            let l = TcpListener::from(sys::own_inherited(fd)?);
            l.set_nonblocking(false)?;
            Some(l)
        }
        None => None,
    };
    let addr = listener
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map_or("off".to_string(), |a| format!("http://{a}/metrics"));
    let (cfg, up) = plan.opts.gateway_config().map_err(io::Error::other)?;
    let o = &plan.opts;
    let clients = plan
        .clients
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",");
    if split {
        let relay = TcpListener::from(sys::own_inherited(
            plan.relay
                .ok_or_else(|| io::Error::other("split mode without a listener"))?,
        )?);
        // two descriptors a connection, a few for the rest
        let nofile = sys::raise_nofile()?;
        let max_conns = cfg
            .max_conns
            .min((nofile.saturating_sub(64) / 2) as usize)
            .max(1);
        eprintln!(
            "longpipe-gateway: ready: pid {} uid {} gid {} capabilities net_raw; mode split; uplink {}; \
             satellite leg cc {} buffers {} B; listener {}; max conns {max_conns} (open files {nofile}); \
             clients {clients}; metrics {addr}",
            std::process::id(),
            privs.uids[0],
            privs.gids[0],
            o.uplink,
            split::congestion_control(&relay),
            cfg.window.unwrap_or(up.bdp),
            relay.local_addr()?,
        );
        let ctl = sys::own_inherited(0)?;
        let sum = split::run(o, relay, max_conns, Some(ctl), listener)?;
        println!("{}", serde_json::to_string(&sum)?);
        io::stdout().flush()?;
        return Ok(());
    }
    let tuns = plan
        .tuns
        .ok_or_else(|| io::Error::other("spoof mode without devices"))?;
    let tuns = [sys::own_inherited(tuns[0])?, sys::own_inherited(tuns[1])?];
    eprintln!(
        "longpipe-gateway: ready: pid {} uid {} gid {} capabilities none; uplink {} ({} bit/s, rtt {} ms, \
         satellite window {} B); clients {}; devices {}/{}; metrics {addr}",
        std::process::id(),
        privs.uids[0],
        privs.gids[0],
        o.uplink,
        o.rate_bps,
        o.rtt_ns / 1_000_000,
        up.bdp,
        clients,
        o.dev_to_client(),
        o.dev_to_server()
    );
    let path = PacketPath::new(cfg, up, plan.clients.clone());
    let ctl = sys::own_inherited(0)?;
    let sum = worker::run(o, path, tuns, Some(ctl), listener)?;
    println!("{}", serde_json::to_string(&sum)?);
    io::stdout().flush()?;
    Ok(())
}
