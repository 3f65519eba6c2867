//! `longpipe-gateway`: the satellite TCP gateway daemon (`longpipe gateway run` runs it).
//!
//! Processes: this one starts as root, checks the options, takes its instance name
//! (refusing one that runs; undoing what a dead one left, [`state`]), opens the two
//! TUN devices, installs routes, rules and sysctls ([`setup`], each recorded in the
//! state file first), binds the metrics port, and starts the packet loop — this binary
//! again (`__worker`) — as an unprivileged user (`--user`, the user behind sudo, or
//! nobody; never root), handing it the descriptors by inheritance. The worker checks
//! that it holds no root id and no capability before touching a packet, then sets no
//! new privileges and a seccomp filter. The parent supervises it ([`supervise`]:
//! signals passed on, a dead loop restarted and its connections reset, systemd's
//! watchdog) and undoes the set-up when it ends. `status` lists an instance's
//! connections; `cleanup` undoes a dead instance's set-up. Exit status: 0, 2 bad input
//! or an unusable environment (one line on stderr), 1 internal error.

use longpipe_core::time::SimTime;
use longpipe_gateway::opts::{self, Mode, Opts, USAGE};
use longpipe_gateway::path::{Dead, PacketPath, Prefix, DEAD_FOR};
use longpipe_gateway::state::{self, Owner, Record};
use longpipe_gateway::supervise::{self, Plan};
use longpipe_gateway::worker::{self, LoopIo, Privileges, CAP_NET_RAW};
use longpipe_gateway::{setup, split, split_setup};
use longpipe_sys::cmd::have;
use longpipe_sys::sys;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wants_help = args.iter().any(|a| a == "--help" || a == "-h");
    let code = match args.first().map(String::as_str) {
        Some("run" | "cleanup" | "status") if wants_help => help(),
        Some("run") => match opts::parse(&args[1..], false) {
            Ok(o) => cmd_run(o),
            Err(e) => bad(e),
        },
        Some("cleanup") => match opts::parse(&args[1..], true) {
            Ok(o) => cmd_cleanup(&o),
            Err(e) => bad(e),
        },
        Some("status") => match opts::parse_status(&args[1..]) {
            Ok((o, json)) => cmd_status(&o, json),
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

/// Who holds `--name` in this namespace, for `run`: refuse a running instance, wait
/// for a draining loop, undo a dead instance's set-up. Returns the connections a dead
/// instance's packet loop held at its last snapshot (killed whole, nothing reset
/// them: the first loop of this one does). Err: the line to exit 2 with.
fn take_name(o: &Opts) -> Result<Vec<supervise::DeadConn>, String> {
    let who = state::owner(&o.name).map_err(|e| format!("state file: {e}"))?;
    let dead = match who {
        Owner::Nobody => None,
        Owner::Running(r) => {
            return Err(format!(
                "another longpipe-gateway (pid {}) runs with --name {} in this network \
                 namespace; stop it (kill -TERM {}) or choose another --name, --table and --pref",
                r.parent.0, o.name, r.parent.0
            ))
        }
        Owner::Draining(r) => {
            let w = r.worker.expect("draining: a loop");
            let most = Duration::from_nanos(o.drain_ns) + Duration::from_secs(10);
            eprintln!(
                "longpipe-gateway: the packet loop (pid {}) of a previous instance whose parent \
                 died is draining: waiting for it (at most {} s)",
                w.0,
                most.as_secs()
            );
            if !state::wait_gone(w, most) {
                return Err(format!(
                    "the packet loop (pid {}) of a previous instance with --name {} still runs; \
                     stop it (kill -TERM {}) and start again",
                    w.0, o.name, w.0
                ));
            }
            Some(r)
        }
        Owner::Dead(r) => Some(r),
    };
    let mut held = vec![];
    if let Some(r) = dead {
        if r.mode == Mode::Spoof {
            held = supervise::dead_conns(&o.name);
        }
        match state::undo(&r) {
            Ok(done) => {
                for d in done {
                    eprintln!("longpipe-gateway: removed what a previous instance left: {d}");
                }
            }
            Err(e) => return Err(format!("cannot undo a previous instance's set-up: {e}")),
        }
    }
    if let Some(f) = state::foreign(o) {
        return Err(f);
    }
    Ok(held)
}

fn cmd_cleanup(o: &Opts) -> i32 {
    if let Err(e) = preflight() {
        return bad(e);
    }
    let who = match state::owner(&o.name) {
        Ok(w) => w,
        Err(e) => return bad(format!("state file: {e}")),
    };
    match who {
        Owner::Running(r) => bad(format!(
            "a running longpipe-gateway (pid {}) owns --name {} in this network namespace: stop \
             it with kill -TERM {} (its exit undoes its set-up)",
            r.parent.0, o.name, r.parent.0
        )),
        Owner::Draining(r) => bad(format!(
            "the packet loop (pid {}) of --name {} is still draining after its parent died: \
             wait for it (at most --drain) and run cleanup again",
            r.worker.map_or(0, |w| w.0),
            o.name
        )),
        Owner::Dead(r) => match state::undo(&r) {
            Ok(done) => {
                if done.is_empty() {
                    println!(
                        "nothing to clean up (the state file of --name {} is removed)",
                        o.name
                    );
                }
                for d in done {
                    println!("removed {d}");
                }
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        },
        Owner::Nobody => {
            // rules of an instance without a state file (an older version): not ours
            // to guess at; say what is there
            let prefs = o.pref..=o.pref + 4;
            match state::rules_at(prefs) {
                Ok(r) if !r.is_empty() => {
                    println!(
                        "nothing to clean up: no state file of --name {}; rules at preferences \
                         {}-{} that it does not list are left alone: {}",
                        o.name,
                        o.pref,
                        o.pref + 4,
                        r.join("; ")
                    );
                }
                _ => println!("nothing to clean up"),
            }
            0
        }
    }
}

fn cmd_status(o: &Opts, json: bool) -> i32 {
    let who = match state::owner(&o.name) {
        Ok(w) => w,
        Err(e) => return bad(format!("state file: {e}")),
    };
    let (r, note) = match who {
        Owner::Nobody => {
            return bad(format!(
                "no longpipe-gateway with --name {} in this network namespace (no state file \
                 in {})",
                o.name,
                state::state_dir().display()
            ))
        }
        Owner::Running(r) => (r, ""),
        Owner::Draining(r) => (r, "its parent is gone; the packet loop drains\n"),
        Owner::Dead(r) => (
            r,
            "not running: its set-up is left over (longpipe gateway cleanup removes it)\n",
        ),
    };
    let snap = state::Snapshot::read(&o.name).ok().flatten();
    if json {
        let v = serde_json::json!({ "instance": r, "connections": snap });
        println!("{v}");
        return 0;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    print!("{note}{}", state::render_status(&r, snap.as_ref(), now));
    0
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
    if o.mode == Mode::Split {
        if let Err(e) = preflight_split() {
            return bad(e);
        }
    }
    let dead = match take_name(&o) {
        Ok(d) => d,
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
    let v6 = setup::ipv6_routes_over(&o.uplink);
    if !v6.is_empty() {
        eprintln!(
            "longpipe-gateway: note: IPv6 routes over {} ({}): IPv6 traffic passes unaccelerated",
            o.uplink,
            v6.join(", ")
        );
    }
    let mut rec = Record::new(&o);
    if let Err(e) = rec.save() {
        eprintln!("error: cannot write the state file: {e}");
        return 1;
    }
    let code = match set_up_and_supervise(&o, &clients, listener, (uid, gid), dead, &mut rec) {
        Ok(c) => c,
        Err(Fail::User(e)) => {
            eprintln!("error: {e}");
            2
        }
        Err(Fail::Internal(e)) => {
            eprintln!("error: {e}");
            1
        }
    };
    // the record as it is now (the loop's pid, restarts): undo exactly what it lists
    let rec = Record::load(&o.name).ok().flatten().unwrap_or(rec);
    if let Err(e) = state::undo(&rec) {
        eprintln!("longpipe-gateway: teardown: {e}");
    }
    code
}

enum Fail {
    /// The user's choice did not work (exit 2).
    User(String),
    Internal(String),
}

fn set_up_and_supervise(
    o: &Opts,
    clients: &[Prefix],
    listener: Option<TcpListener>,
    (uid, gid): (u32, u32),
    dead: Vec<supervise::DeadConn>,
    rec: &mut Record,
) -> Result<i32, Fail> {
    let internal = |e: std::io::Error| Fail::Internal(e.to_string());
    let work = if o.mode == Mode::Split {
        let (cfg, up) = o.gateway_config().map_err(Fail::User)?;
        let relay = split_setup::listener(o, cfg.window.unwrap_or(up.bdp)).map_err(Fail::User)?;
        let changed = split_setup::install(o, clients, rec)
            .map_err(|e| Fail::Internal(format!("cannot set up nftables TPROXY: {e}")))?;
        for c in changed {
            eprintln!(
                "longpipe-gateway: note: the relay's sockets need {c} in this namespace (no \
                 socket option sets it): set, restored at exit"
            );
        }
        vec![relay]
    } else {
        let tuns =
            [o.dev_to_client(), o.dev_to_server()].map(|d| sys::tun_open(&d).map_err(|e| (d, e)));
        let [c, s] = tuns;
        let (c, s) = match (c, s) {
            (Ok(c), Ok(s)) => (c, s),
            (Err((d, e)), _) | (_, Err((d, e))) => {
                return Err(Fail::Internal(format!(
                    "cannot open the TUN device {d}: {e}"
                )))
            }
        };
        rec.devices = vec![o.dev_to_client(), o.dev_to_server()];
        rec.save().map_err(internal)?;
        setup::queue_len(o).map_err(Fail::User)?;
        setup::install(o, clients, rec)
            .map_err(|e| Fail::Internal(format!("cannot set up routing: {e}")))?;
        vec![c, s]
    };
    let held = supervise::Held {
        mode: o.mode,
        work,
        metrics: listener.map(OwnedFd::from),
        uid,
        gid,
    };
    supervise::supervise(o, clients, held, dead, rec).map_err(internal)
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
    let snapshot = match plan.snapshot {
        Some(fd) => Some(File::from(sys::own_inherited(fd)?)),
        None => None,
    };
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
            "longpipe-gateway: ready: pid {} uid {} gid {} capabilities net_raw{}; mode split; uplink {}; \
             satellite leg cc {}{} buffers {} B; listener {}; max conns {max_conns} (open files {nofile}); \
             clients {clients}; metrics {addr}",
            std::process::id(),
            privs.uids[0],
            privs.gids[0],
            if o.no_seccomp { "" } else { ", seccomp" },
            o.uplink,
            split::congestion_control(&relay),
            split_setup::cc_note(o, &split::congestion_control(&relay)),
            cfg.window.unwrap_or(up.bdp),
            relay.local_addr()?,
        );
        let io = LoopIo {
            ctl: Some(sys::own_inherited(0)?),
            metrics: listener,
            snapshot,
            dead: vec![],
            harden: !o.no_seccomp,
        };
        let sum = split::run(o, relay, max_conns, io)?;
        println!("{}", serde_json::to_string(&sum)?);
        io::stdout().flush()?;
        return Ok(());
    }
    let tuns = plan
        .tuns
        .ok_or_else(|| io::Error::other("spoof mode without devices"))?;
    let tuns = [sys::own_inherited(tuns[0])?, sys::own_inherited(tuns[1])?];
    eprintln!(
        "longpipe-gateway: ready: pid {} uid {} gid {} capabilities none{}; uplink {} ({} bit/s, rtt {} ms, \
         satellite window {} B); clients {}; devices {}/{}; metrics {addr}",
        std::process::id(),
        privs.uids[0],
        privs.gids[0],
        if o.no_seccomp { "" } else { ", seccomp" },
        o.uplink,
        o.rate_bps,
        o.rtt_ns / 1_000_000,
        up.bdp,
        clients,
        o.dev_to_client(),
        o.dev_to_server()
    );
    let mut path = PacketPath::new(cfg, up, plan.clients.clone());
    path.exclude(o.exclude_ports.clone(), o.exclude_hosts.clone());
    let until = SimTime::ZERO + DEAD_FOR;
    let dead = plan
        .dead
        .iter()
        .map(|d| {
            let dd = Dead {
                client_rcv_nxt: d.client_rcv_nxt,
                server_rcv_nxt: d.server_rcv_nxt,
                until,
            };
            (d.key, dd, d.lost)
        })
        .collect();
    let io = LoopIo {
        ctl: Some(sys::own_inherited(0)?),
        metrics: listener,
        snapshot,
        dead,
        harden: !o.no_seccomp,
    };
    let sum = worker::run(o, path, tuns, io)?;
    println!("{}", serde_json::to_string(&sum)?);
    io::stdout().flush()?;
    Ok(())
}
