//! `longpipe-emu`: the live emulator's binary (the `longpipe emu` command runs it).
//!
//! ```text
//! longpipe-emu run --scenario FILE.json [--source NAME] [--seed N] [--cc NAME]
//!                  [--pcap A-B=PATH]... [--result PATH] [--user USER]
//!                  (--flows | [--node NODE] [--spawn NODE=CMD]... -- CMD [ARGS...])
//! longpipe-emu cleanup
//! longpipe-emu selftest [--quick]
//! ```
//!
//! Processes: this one, as root, sets up (namespaces, TUN devices, routes, the flows'
//! sockets, capture files), then starts the *ferry* (this binary again, `__ferry`, as an
//! unprivileged user, inheriting the descriptors it needs) and, with `-- CMD`, the
//! command in the client's namespace as that user. It waits, and tears everything down
//! at the end, on Ctrl-C or SIGTERM, and on a panic. Exit status: 0 (or the command's
//! status), 2 bad input or an unusable environment (one line on stderr), 1 internal
//! error, 130 interrupted.
//!
//! A `tcp-gateway` node's daemon (`gwnode`) is started after the set-up, before the
//! ferry, and stopped when the flows (or the command) have ended.
//!
//! Why one file of ~870 lines: argument parsing and the set-up and tear-down sequence of
//! one emulation, which must run in this order in this process.

use longpipe_core::scenario::{parse_json, ValidScenario};
use longpipe_emu::ferry::{EarlyWake, Ferry, MonoClock, Net};
use longpipe_emu::flows::{self, Listener};
use longpipe_emu::gwnode::{self, GwPlan};
use longpipe_emu::linux::{self, FlowMap};
use longpipe_emu::netns::{self, Setup};
use longpipe_emu::tun::TunIo;
use longpipe_emu::{apps, report, selftest, sys};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// SCHED_FIFO priority of the ferry thread.
const RT_PRIO: i32 = 10;

const USAGE: &str = "usage: longpipe-emu run --scenario FILE.json [--source NAME] [--seed N] [--cc NAME] \
[--pcap A-B=PATH]... [--result PATH] [--user USER] (--flows | [--node NODE] [--spawn NODE=CMD]... -- CMD [ARGS...])
       longpipe-emu cleanup
       longpipe-emu selftest [--quick]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("run") => match parse_run(&args[1..]) {
            Ok(a) => cmd_run(a),
            Err(e) => bad(e),
        },
        Some("cleanup") => {
            if let Err(e) = netns::preflight() {
                bad(e)
            } else {
                let r = netns::cleanup_stale();
                if r.is_empty() {
                    println!("nothing to clean up");
                }
                for n in r {
                    println!("removed network namespace {n}");
                }
                for f in gwnode::cleanup_states() {
                    println!("removed the gateway daemon's state of {f}");
                }
                0
            }
        }
        Some("selftest") => selftest::main(&args[1..]),
        Some("__ferry") => ferry_main(),
        Some("--help" | "-h") => {
            println!("{USAGE}");
            0
        }
        _ => bad(format!("expected a command\n{USAGE}")),
    };
    std::process::exit(code);
}

fn bad(msg: impl std::fmt::Display) -> i32 {
    eprintln!("error: {msg}");
    2
}

struct RunArgs {
    scenario: PathBuf,
    source: String,
    seed: Option<u64>,
    cc: Option<String>,
    flows: bool,
    pcaps: Vec<(String, PathBuf)>,
    result: Option<PathBuf>,
    user: Option<String>,
    node: Option<String>,
    spawns: Vec<(String, String)>,
    cmd: Vec<String>,
}

fn parse_run(a: &[String]) -> Result<RunArgs, String> {
    let mut r = RunArgs {
        scenario: PathBuf::new(),
        source: String::new(),
        seed: None,
        cc: None,
        flows: false,
        pcaps: vec![],
        result: None,
        user: None,
        node: None,
        spawns: vec![],
        cmd: vec![],
    };
    let mut i = 0;
    let val = |i: &mut usize, what: &str| -> Result<String, String> {
        *i += 1;
        a.get(*i)
            .cloned()
            .ok_or_else(|| format!("{what}: expected a value"))
    };
    while i < a.len() {
        match a[i].as_str() {
            "--scenario" => r.scenario = val(&mut i, "--scenario")?.into(),
            "--source" => r.source = val(&mut i, "--source")?,
            "--seed" => {
                let v = val(&mut i, "--seed")?;
                r.seed = Some(v.parse().map_err(|_| {
                    format!("--seed: expected an integer from 0 to 2^64-1, got {v:?}")
                })?)
            }
            "--cc" => r.cc = Some(val(&mut i, "--cc")?),
            "--flows" => r.flows = true,
            "--pcap" => {
                let v = val(&mut i, "--pcap")?;
                let (s, p) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--pcap {v:?}: expected A-B=PATH"))?;
                r.pcaps.push((s.to_string(), p.into()));
            }
            "--result" => r.result = Some(val(&mut i, "--result")?.into()),
            "--user" => r.user = Some(val(&mut i, "--user")?),
            "--node" => r.node = Some(val(&mut i, "--node")?),
            "--spawn" => {
                let v = val(&mut i, "--spawn")?;
                let (n, c) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--spawn {v:?}: expected NODE=COMMAND"))?;
                r.spawns.push((n.to_string(), c.to_string()));
            }
            "--" => {
                r.cmd = a[i + 1..].to_vec();
                break;
            }
            x => return Err(format!("unknown option {x:?}\n{USAGE}")),
        }
        i += 1;
    }
    if r.scenario.as_os_str().is_empty() {
        return Err("run: --scenario is required".into());
    }
    if r.source.is_empty() {
        r.source = r.scenario.display().to_string();
    }
    if r.flows != r.cmd.is_empty() {
        return Err("run: give either --flows or -- COMMAND".into());
    }
    for (opt, v) in [("--cc", &r.cc), ("--user", &r.user), ("--node", &r.node)] {
        if v.as_ref().is_some_and(|v| v.trim().is_empty()) {
            return Err(format!("{opt}: expected a name, got an empty string"));
        }
    }
    if r.flows && r.node.is_some() {
        return Err(
            "run: --node goes with -- COMMAND, not --flows (--spawn NODE=CMD runs a \
                    command in any node while the flows run)"
                .into(),
        );
    }
    Ok(r)
}

/// What the parent hands the ferry process (one JSON line on its stdin).
#[derive(Serialize, Deserialize)]
struct Plan {
    scenario: String,
    seed: u64,
    flows: bool,
    mtu: u32,
    /// TUN descriptor of each port.
    tuns: Vec<i32>,
    /// (port, descriptor of its capture file)
    pcaps: Vec<(usize, i32)>,
    /// Descriptor of each bulk flow's sending socket.
    socks: Vec<i32>,
    /// (descriptor, bulk flows) of each listening socket.
    listeners: Vec<(i32, Vec<usize>)>,
    /// (flow id, listener descriptor, its port) of each application flow
    #[serde(default)]
    apps: Vec<(usize, i32, u16)>,
    /// The ferry's end of the socket channel (application flows), see apps/broker.rs
    #[serde(default)]
    broker: Option<i32>,
    mapping: Vec<FlowMap>,
    unmapped: Vec<String>,
}

/// The port of "A-B": node A's end of link A-B.
fn capture_port(sc: &ValidScenario, spec: &str) -> Option<usize> {
    for (i, _) in spec.match_indices('-') {
        let (a, b) = (&spec[..i], &spec[i + 1..]);
        if let (Some(na), Some(nb)) = (sc.node_index(a), sc.node_index(b)) {
            for (li, l) in sc.links.iter().enumerate() {
                if (l.a, l.b) == (na, nb) {
                    return Some(2 * li);
                }
                if (l.a, l.b) == (nb, na) {
                    return Some(2 * li + 1);
                }
            }
        }
    }
    None
}

/// The user the ferry and the command run as: --user, the user behind sudo, or nobody.
fn target_user(arg: Option<&str>) -> Result<(u32, u32), String> {
    if let Some(u) = arg {
        return sys::lookup_user(u).ok_or_else(|| format!("--user: no user {u:?}"));
    }
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    if let (Some(u), Some(g)) = (env("SUDO_UID"), env("SUDO_GID")) {
        return Ok((u, g));
    }
    Ok(sys::lookup_user("nobody").unwrap_or((65_534, 65_534)))
}

fn node_env(sc: &ValidScenario) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let mut all = Vec::new();
    for (i, n) in sc.nodes.iter().enumerate() {
        let a = longpipe_core::net::packet::node_addr(i);
        let ip = format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        let key: String = n
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        v.push((format!("LONGPIPE_NODE_{key}"), ip.clone()));
        all.push(format!("{}={ip}", n.name));
    }
    v.push(("LONGPIPE_NODES".into(), all.join(",")));
    v
}

fn stop_child(c: &mut Child) {
    let _ = sys::kill(c.id() as i32, libc::SIGTERM);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        if matches!(c.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = c.kill();
    let _ = c.wait();
}

fn cmd_run(a: RunArgs) -> i32 {
    let src = &a.source;
    let text = match fs::read_to_string(&a.scenario) {
        Ok(t) => t,
        Err(e) => return bad(format!("{src}: (file): cannot read: {e}")),
    };
    let sc = match parse_json(&text).and_then(|s| s.validate()) {
        Ok(s) => s,
        Err(e) => return bad(format!("{src}: {e}")),
    };
    let seed = a.seed.unwrap_or(sc.seed);
    let available = linux::available_ccs();
    let mut m = match linux::map(&sc, a.cc.as_deref(), &available) {
        Ok(m) => m,
        Err(e) => return bad(format!("{src}: {e}")),
    };
    if a.flows {
        linux::receive_buffers(&mut m);
        let rmem_max = fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|v| v.trim().parse().ok());
        if let Some(r) = rmem_max {
            m.unmapped.extend(linux::buffer_notes(&m, r));
        }
    }
    // tcp-gateway nodes: the real daemon's flags (and the split leg's namespace settings)
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let gws = match gwnode::plan(&sc, &raw, &mut m, &available, a.flows) {
        Ok(g) => g,
        Err(e) => return bad(format!("{src}: {e}")),
    };
    let mut cap_ports = Vec::new();
    for (spec, path) in &a.pcaps {
        match capture_port(&sc, spec) {
            Some(p) => cap_ports.push((p, path.clone())),
            None => {
                return bad(format!(
                    "--pcap {spec:?} names no link: expected \"A-B\" where A and B are the two nodes of a link"
                ))
            }
        }
    }
    let client = if a.flows {
        None
    } else {
        let n = a
            .node
            .clone()
            .or_else(|| sc.node_index("client").map(|_| "client".to_string()))
            .or_else(|| sc.flows.first().map(|f| sc.nodes[f.dst].name.clone()));
        match n.as_deref().map(|n| (n, sc.node_index(n))) {
            Some((_, Some(i))) => Some(i),
            Some((n, None)) => return bad(format!("--node: no node {n:?} in {src}")),
            None => return bad("name the node to run the command in with --node"),
        }
    };
    let mut spawn_nodes = Vec::new();
    for (n, c) in &a.spawns {
        match sc.node_index(n) {
            Some(i) => spawn_nodes.push((i, c.clone())),
            None => return bad(format!("--spawn: no node {n:?} in {src}")),
        }
    }
    if let Err(e) = netns::preflight() {
        return bad(e);
    }
    let (uid, gid) = match target_user(a.user.as_deref()) {
        Ok(x) => x,
        Err(e) => return bad(e),
    };
    if let Err(e) = sys::catch_signals() {
        eprintln!("error: cannot install signal handlers: {e}");
        return 1;
    }
    let mut setup = match Setup::create(&sc, &m) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => {
            eprintln!("interrupted");
            return 130;
        }
        Err(e) => {
            eprintln!("error: cannot set up the emulation: {e}");
            return 1;
        }
    };
    match run_emulation(
        &a,
        &sc,
        seed,
        &m,
        &mut setup,
        cap_ports,
        client,
        spawn_nodes,
        &gws,
        uid,
        gid,
    ) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
    // `setup` drops here: namespaces, devices and the record go.
}

#[allow(clippy::too_many_arguments)]
fn run_emulation(
    a: &RunArgs,
    sc: &ValidScenario,
    seed: u64,
    m: &linux::Mapping,
    setup: &mut Setup,
    cap_ports: Vec<(usize, PathBuf)>,
    client: Option<usize>,
    spawn_nodes: Vec<(usize, String)>,
    gws: &[GwPlan],
    uid: u32,
    gid: u32,
) -> io::Result<i32> {
    // the gateway daemons, before the ferry's clock (and the flows) start
    let mut daemons = match gwnode::start(gws, setup, a.user.as_deref()) {
        Ok(d) => d,
        Err(e) => return Ok(bad(e)),
    };
    let mut socks: Vec<OwnedFd> = Vec::new();
    let mut listeners: Vec<Listener> = Vec::new();
    // application flows: a listener each, and a channel for the sockets they open
    let mut app_listeners: Vec<(usize, OwnedFd, u16)> = Vec::new();
    let mut broker: Option<(apps::Broker, OwnedFd)> = None;
    if a.flows {
        let (enter, leave) = (|u| setup.enter(u), || setup.leave());
        // the bulk flows' listeners: their flow indices count bulk flows only, in
        // mapping order, as the ferry's `bulk` list does
        let bulk: Vec<FlowMap> = m
            .flows
            .iter()
            .filter(|f| !apps::is_app(sc, f.id))
            .cloned()
            .collect();
        listeners = flows::make_listeners(&bulk, &enter, &leave)?;
        for f in &m.flows {
            if apps::is_app(sc, f.id) {
                let (_, p) = apps::ends(sc, f.id);
                setup.enter(p)?;
                let l = apps::make_listener(sc, f);
                setup.leave()?;
                let (l, port) = l?;
                app_listeners.push((f.id, l, port));
                continue;
            }
            socks.push(flows::make_sender(f, &enter, &leave)?);
        }
        if !app_listeners.is_empty() {
            let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
            broker = Some((apps::Broker::new(sc, &m.flows, ours), theirs.into()));
        }
    }
    let mut pcap_files: Vec<(usize, OwnedFd)> = Vec::new();
    for (p, path) in &cap_ports {
        let f = File::create(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        pcap_files.push((*p, f.into()));
    }
    let plan = Plan {
        scenario: serde_json::to_string(&parse_json_value(&a.scenario)?)?,
        seed,
        flows: a.flows,
        mtu: m.mtu,
        tuns: setup.tuns.iter().map(|t| t.as_raw_fd()).collect(),
        pcaps: pcap_files
            .iter()
            .map(|(p, f)| (*p, f.as_raw_fd()))
            .collect(),
        socks: socks.iter().map(|s| s.as_raw_fd()).collect(),
        listeners: listeners
            .iter()
            .map(|l| (l.fd.as_raw_fd(), l.flows.clone()))
            .collect(),
        apps: app_listeners
            .iter()
            .map(|(i, l, port)| (*i, l.as_raw_fd(), *port))
            .collect(),
        broker: broker.as_ref().map(|b| b.1.as_raw_fd()),
        mapping: m.flows.clone(),
        unmapped: m.unmapped.clone(),
    };
    // Only the ferry inherits these descriptors: close-on-exec is lifted just for its
    // start (this process has no other thread that could start a program meanwhile).
    let passed: Vec<&OwnedFd> = setup
        .tuns
        .iter()
        .chain(pcap_files.iter().map(|(_, f)| f))
        .chain(socks.iter())
        .chain(listeners.iter().map(|l| &l.fd))
        .chain(app_listeners.iter().map(|(_, l, _)| l))
        .chain(broker.iter().map(|b| &b.1))
        .collect();
    for fd in &passed {
        sys::set_cloexec(*fd, false)?;
    }
    let spawned = Command::new(std::env::current_exe()?)
        .arg("__ferry")
        .uid(uid)
        .gid(gid)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    for fd in &passed {
        sys::set_cloexec(*fd, true)?;
    }
    let mut ferry = spawned?;
    // The descriptors now live in the ferry; ours can go.
    drop(socks);
    drop(listeners);
    drop(pcap_files);
    drop(app_listeners);
    let mut broker = broker.map(|(b, theirs)| {
        drop(theirs);
        b
    });
    let mut ctl = ferry.stdin.take().expect("piped");
    ctl.write_all(serde_json::to_string(&plan)?.as_bytes())?;
    ctl.write_all(b"\n")?;
    ctl.flush()?;
    let out = ferry.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(l) = line else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let ready = rx.recv_timeout(Duration::from_secs(30));
    if ready.as_deref() != Ok("ready") {
        stop_child(&mut ferry);
        return Err(io::Error::other("the ferry process did not start"));
    }
    // Real-time scheduling for the ferry's thread (its main thread): wake-ups on time
    // on a busy machine. It sleeps in ppoll between packets, and the kernel's RT
    // throttling keeps 5 % of each second for others even if it were saturated.
    let rt = sys::set_fifo(ferry.id() as i32, RT_PRIO).is_ok();
    ctl.write_all(if rt { b"R" } else { b"N" })?;
    ctl.flush()?;
    let mut code = 0;
    let mut interrupted = false;
    let env = node_env(sc);
    // --spawn: with the command, or while the flows run
    let mut spawned = Vec::new();
    for (n, c) in &spawn_nodes {
        setup.enter(*n)?;
        let s = Command::new("sh")
            .arg("-c")
            .arg(c)
            .uid(uid)
            .gid(gid)
            .envs(env.iter().cloned())
            .stdin(Stdio::null())
            .spawn();
        setup.leave()?;
        match s {
            Ok(s) => spawned.push(s),
            Err(e) => {
                for s in &mut spawned {
                    stop_child(s);
                }
                drop(ctl);
                stop_child(&mut ferry);
                return Err(e);
            }
        }
    }
    let reports: Vec<_>;
    if let Some(cn) = client {
        setup.enter(cn)?;
        let cmd = Command::new(&a.cmd[0])
            .args(&a.cmd[1..])
            .uid(uid)
            .gid(gid)
            .envs(env.iter().cloned())
            .spawn();
        setup.leave()?;
        let mut cmd = match cmd {
            Ok(c) => c,
            Err(e) => {
                for s in &mut spawned {
                    stop_child(s);
                }
                drop(ctl);
                stop_child(&mut ferry);
                eprintln!("error: cannot run {:?}: {e}", a.cmd[0]);
                return Ok(127);
            }
        };
        // Ctrl-C goes to the command (it is in our process group); SIGTERM and SIGHUP
        // to us are passed on to it.
        let status = loop {
            if let Some(st) = cmd.try_wait()? {
                break st;
            }
            let sig = sys::SIGNALLED.swap(0, Ordering::SeqCst);
            if sig == libc::SIGTERM || sig == libc::SIGHUP {
                let _ = sys::kill(cmd.id() as i32, libc::SIGTERM);
            }
            if let Some(st) = ferry.try_wait()? {
                let _ = sys::kill(cmd.id() as i32, libc::SIGTERM);
                let _ = cmd.wait();
                return Err(io::Error::other(format!(
                    "the ferry process ended early ({st})"
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        code = status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        for s in &mut spawned {
            stop_child(s);
        }
        // the daemons stop while the links still run (their resets reach the hosts)
        reports = daemons.drain(..).map(gwnode::Running::stop).collect();
        drop(ctl); // end of file: the ferry stops and reports
    } else {
        loop {
            if ferry.try_wait()?.is_some() {
                break;
            }
            let sig = sys::SIGNALLED.swap(0, Ordering::SeqCst);
            if sig != 0 {
                interrupted = true;
                let _ = sys::kill(ferry.id() as i32, libc::SIGTERM);
            }
            match &mut broker {
                // the application flows' sockets, made as they ask (apps/broker.rs); if this
                // fails, closing our end tells the ferry (its openings fail, reported)
                Some(b) => {
                    if let Err(e) = b.serve(10_000_000, &|u| setup.enter(u), &|| setup.leave()) {
                        eprintln!("error: the application flows' sockets: {e}");
                        broker = None;
                        setup.leave()?;
                    }
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        for s in &mut spawned {
            stop_child(s);
        }
        reports = daemons.drain(..).map(gwnode::Running::stop).collect();
        drop(ctl);
    }
    let result = rx.recv_timeout(Duration::from_secs(30));
    let st = ferry.wait()?;
    let Ok(result) = result else {
        return Err(io::Error::other(format!(
            "the ferry process gave no result ({st})"
        )));
    };
    let mut v: serde_json::Value = serde_json::from_str(&result)?;
    if v.get("interrupted").and_then(|x| x.as_bool()) == Some(true) {
        interrupted = true;
    }
    // what the kernel dropped at the TUN devices, outside the emulated links
    let mut drops = Vec::new();
    for (li, l) in sc.links.iter().enumerate() {
        for end in [l.a, l.b] {
            let dev = netns::dev_name(li);
            let (tx, rx) = netns::device_drops(&setup.ns[end], &dev).unwrap_or((0, 0));
            drops.push(serde_json::json!({
                "node": sc.nodes[end].name, "link": li, "dev": dev, "tx": tx, "rx": rx,
            }));
        }
    }
    if let Some(e) = v.get_mut("emu") {
        e["device_dropped"] = serde_json::Value::Array(drops);
        e["sysctls"] = sysctl_report(sc, setup);
    }
    gwnode::into_result(&mut v, reports)?;
    let result = serde_json::to_string(&v)?;
    match &a.result {
        Some(p) => fs::write(p, result + "\n")
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?,
        None => write_line(&result)?,
    }
    if interrupted && a.flows {
        eprintln!("interrupted");
        code = 130;
    }
    Ok(code)
}

/// The TCP settings of the run: per node, as each namespace read them back
/// (`net.` + path), and the host-wide ones a namespace cannot set (they bound socket
/// buffers and TCP memory in every namespace), as the host has them.
fn sysctl_report(sc: &ValidScenario, setup: &Setup) -> serde_json::Value {
    let key = |k: &str| format!("net.{}", k.replace('/', "."));
    let mut nodes = serde_json::Map::new();
    for (u, set) in setup.sysctls.iter().enumerate() {
        let m: serde_json::Map<_, _> = set
            .iter()
            .map(|(k, v)| (key(k), v.clone().into()))
            .collect();
        nodes.insert(sc.nodes[u].name.clone(), m.into());
    }
    let mut host = serde_json::Map::new();
    for k in linux::HOST_SYSCTLS {
        let v =
            fs::read_to_string(std::path::Path::new("/proc/sys/net").join(k)).unwrap_or_default();
        host.insert(
            key(k),
            v.split_whitespace().collect::<Vec<_>>().join(" ").into(),
        );
    }
    serde_json::json!({ "nodes": nodes, "host": host })
}

/// One line on stdout; a reader that went away (a closed pipe) is not an error to panic
/// over: the line is dropped.
fn write_line(s: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match writeln!(out, "{s}").and_then(|_| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

fn parse_json_value(p: &PathBuf) -> io::Result<serde_json::Value> {
    Ok(serde_json::from_str(&fs::read_to_string(p)?)?)
}

/// The unprivileged ferry process.
fn ferry_main() -> i32 {
    match ferry_inner() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: ferry: {e}");
            1
        }
    }
}

fn ferry_inner() -> io::Result<()> {
    // One line of plan; stdin then stays open as the stop channel.
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    let mut stdin = io::stdin().lock();
    while stdin.read(&mut b)? == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    let plan: Plan = serde_json::from_slice(&line)?;
    sys::catch_signals()?;
    if !plan.flows {
        // Ctrl-C is for the command; the parent says when to stop.
        sys::ignore_signal(libc::SIGINT)?;
    }
    sys::set_timer_slack(1)?;
    let sc = parse_json(&plan.scenario)
        .and_then(|s| s.validate())
        .map_err(|e| io::Error::other(e.to_string()))?;
    let net = Net::new(&sc, plan.seed).map_err(|e| io::Error::other(e.to_string()))?;
    let mut ferry = Ferry::new(net, plan.mtu as usize);
    ferry.spin_before_due(EarlyWake::DEFAULT_MAX_NS);
    for &(p, _) in &plan.pcaps {
        ferry.capture(p);
    }
    let tuns = plan
        .tuns
        .iter()
        .map(|&fd| sys::own_inherited(fd))
        .collect::<io::Result<Vec<_>>>()?;
    let mut io = TunIo::new(tuns, Some(sys::own_inherited(0)?))?;
    let socks = plan
        .socks
        .iter()
        .map(|&s| sys::own_inherited(s))
        .collect::<io::Result<Vec<_>>>()?;
    let listeners = plan
        .listeners
        .iter()
        .map(|(l, flows)| {
            Ok(Listener {
                fd: sys::own_inherited(*l)?,
                flows: flows.clone(),
            })
        })
        .collect::<io::Result<Vec<_>>>()?;
    let app_socks = plan
        .apps
        .iter()
        .map(|&(i, l, port)| Ok((i, sys::own_inherited(l)?, port)))
        .collect::<io::Result<Vec<_>>>()?;
    let channel = match plan.broker {
        Some(fd) => Some(std::os::unix::net::UnixStream::from(sys::own_inherited(
            fd,
        )?)),
        None => None,
    };
    // the bulk flows, in mapping order (their sockets' order)
    let bulk: Vec<FlowMap> = plan
        .mapping
        .iter()
        .filter(|f| !apps::is_app(&sc, f.id))
        .cloned()
        .collect();
    let t0 = Instant::now();
    let clock = MonoClock(t0);
    let (warmup, until) = if plan.flows {
        (sc.warmup.0, Some(sc.duration.0))
    } else {
        (0, None)
    };
    let times = flows::Times {
        t0,
        warmup,
        end: sc.duration.0,
    };
    let running = plan
        .flows
        .then(|| flows::start(&bulk, socks, listeners, times));
    let app_running = match (plan.flows, channel) {
        (true, Some(ch)) => {
            let fl = app_socks
                .into_iter()
                .filter_map(|(i, l, port)| {
                    let f = plan.mapping.iter().find(|f| f.id == i)?;
                    Some((f.clone(), l, port))
                })
                .collect();
            Some(apps::start(&sc, plan.seed, fl, ch, times))
        }
        _ => None,
    };
    // The parent now raises this (main, ferry) thread to SCHED_FIFO; the flow threads,
    // already started, keep the normal policy.
    write_line("ready")?;
    let mut ack = [0u8; 1];
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        match stdin.read(&mut ack) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let realtime = ack[0] == b'R';
    let end = ferry.run(&mut io, &clock, warmup, until)?;
    let outcomes = running.map(|r| r.finish()).unwrap_or_default();
    let app_outcomes = app_running.map(|r| r.finish()).unwrap_or_default();
    let dirs = ferry.measured(end);
    // every flow in scenario order: bulk ones from their threads, application ones
    // from theirs, with the records and summaries the simulator computes
    let records = apps::records(&app_outcomes);
    let by_flow = records.by_flow(sc.flows.len());
    let mut flows = Vec::new();
    for (j, o) in outcomes.iter().enumerate() {
        flows.push(flows::flow_result(&sc, bulk[j].id, o, warmup, end));
    }
    for (&i, o) in &app_outcomes {
        flows.push(apps::flow_result(&sc, i, o, &records, &by_flow, end));
    }
    flows.sort_by_key(|f| f.id);
    let mut res = report::result(&sc, plan.seed, end, &dirs, flows, ferry.net.d.events());
    if !app_outcomes.is_empty() {
        let (users, wl) =
            longpipe_core::sim::workload::summary(&sc, &res.flows, &records, &by_flow);
        res.users = users;
        res.workload = wl;
    }
    let mut v = serde_json::to_value(&res)?;
    let st = &ferry.stats;
    let us = |x: Option<u64>| x.map(|n| n as f64 / 1000.0);
    let errors: Vec<String> = outcomes
        .iter()
        .flat_map(|o| o.errors.clone())
        .chain(app_outcomes.values().flat_map(|o| o.errors.clone()))
        .collect();
    v["emu"] = serde_json::json!({
        "kernel": fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "linux_cc": plan.mapping.iter().map(|f| f.cc.clone()).collect::<Vec<_>>(),
        "unmapped": plan.unmapped,
        "realtime": realtime,
        "ferry": {
            "packets_read": st.read,
            "packets_written": st.written,
            "send_errors": st.send_errors,
            "late_p50_us": us(st.late.quantile_ns(0.5)),
            "late_p99_us": us(st.late.quantile_ns(0.99)),
            "late_max_us": st.late.max_ns as f64 / 1000.0,
            "wakeups": st.wakeups,
            "spins": st.spins,
            "spin_ms": ferry.early.as_ref().map_or(0.0, |e| e.spun_ns as f64 / 1e6),
            "rests": ferry.early.as_ref().map_or(0, |e| e.rests),
            "buffers_allocated": ferry.pool.allocated,
        },
        "errors": errors,
    });
    if !app_outcomes.is_empty() {
        v["emu"]["records"] = apps::records_json(&records);
    }
    v["interrupted"] = serde_json::json!(plan.flows && end < sc.duration.0);
    for &(p, fd) in &plan.pcaps {
        let mut f = File::from(sys::own_inherited(fd)?);
        if let Some(c) = &ferry.caps[p] {
            f.write_all(c.as_bytes())?;
        }
    }
    // (the parent may be gone: killed, its pipe closed; nothing to report to then)
    write_line(&serde_json::to_string(&v)?)
}
