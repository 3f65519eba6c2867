//! A `tcp-gateway` node in the emulator: the real gateway daemon (`longpipe-gateway run`,
//! crates/longpipe-gateway) in that node's namespace, started by the emulator before
//! the flows (or the command) start and stopped after they end.
//!
//! The daemon gets the node's `gateway` table as flags, from the configuration the core
//! resolved (so the daemon, which resolves the same `GatewaySpec`, ends with the
//! simulator's values, defaults included): spoof mode every option it has a flag for;
//! split mode `--cc` (the satellite leg's congestion control: the kernel's counterpart
//! of `tcp`, as for a flow), `--window`, `--relay-buffer` (= `buffer`), `--max-conns`,
//! `--abandon-timeout`, and the leg's SACK, timestamps, minimum RTO and initial window
//! as the gateway namespace's sysctls and routes (the relay's sockets are the kernel's).
//! `--uplink` is the node's device on its uplink link (the one the core chose), `--rate`
//! that link's rate toward the clients and `--rtt` its round-trip propagation delay (the
//! simulator's `Uplink`), `--clients` every node routed over the uplink (/32 each).
//! `fail_at` is refused (the emulator does not kill the daemon at a time); what has no
//! flag is listed as unmapped. Everything else about the node is a router's: the kernel
//! forwards.
//!
//! Invariants: a daemon is stopped (SIGTERM, then SIGKILL of its process group) by the
//! time its [`Running`] is dropped, and its state file (in a directory of the emulator's,
//! not the daemon's default) is removed; the namespace's teardown kills whatever a
//! SIGKILL of the emulator left. See docs/emulation.md, "The gateway node".
//!
//! (~750 lines: the mapping and the daemon's life cycle are one concern; the last ~210
//! lines are the tests of every mapping and refusal.)

use crate::linux::{self, Mapping};
use crate::netns::{dev_name, Setup};
use crate::sys;
use longpipe_core::middlebox::gateway::{GatewayConfig, GatewaySpec};
use longpipe_core::net::packet::node_addr;
use longpipe_core::net::routing::Routes;
use longpipe_core::results::{EmuGateway, EmuSplitCounters};
use longpipe_core::scenario::{NodeRole, ScenarioError, ValidScenario};
use longpipe_core::time::SimDuration;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The daemon's metrics endpoint, on the gateway namespace's own loopback:
/// `ip netns exec lpemu-…-NODE curl 127.0.0.1:9464/metrics` (the daemon's default).
pub const METRICS: &str = "127.0.0.1:9464";

/// How long a daemon may take to say it is ready (its set-up: TUN devices, rules,
/// nftables in split mode; well under a second here, more on a loaded machine).
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The relay buffer range the daemon accepts (`--relay-buffer`, 4 KB to 64 MiB).
const RELAY_BUFFER: std::ops::RangeInclusive<u64> = 4_096..=64 << 20;

/// One gateway node, as the daemon will run it.
#[derive(Debug, Clone, PartialEq)]
pub struct GwPlan {
    pub node: usize,
    pub name: String,
    /// "spoof" or "split".
    pub mode: &'static str,
    /// The daemon's arguments after `run` (without `--user`).
    pub args: Vec<String>,
    /// The gateway options the daemon has no flag for, one line each.
    pub unmapped: Vec<String>,
}

fn refuse<T>(path: String, msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError::new(path, msg))
}

fn ns(d: SimDuration) -> String {
    format!("{}ns", d.as_nanos())
}

/// The `node[j]` path of the scenario's node `n` (declared tables are numbered in the
/// file; the core's node list may hold undeclared ones first).
fn node_path(raw: &serde_json::Value, name: &str) -> String {
    let j = raw.get("node").and_then(|v| v.as_array()).and_then(|a| {
        a.iter()
            .position(|x| x.get("name").and_then(|n| n.as_str()) == Some(name))
    });
    match j {
        Some(j) => format!("node[{j}]"),
        None => format!("node {name:?}"),
    }
}

/// Maps every `tcp-gateway` node onto the daemon's flags, and the split leg's TCP onto
/// the gateway namespace (sysctls and routes in `m`). `raw`: the scenario as JSON (for
/// the paths of errors); `available`: the kernel's congestion controls; `flows`: the
/// scenario's flows will run (`--flows`: each opened by its sender).
pub fn plan(
    sc: &ValidScenario,
    raw: &serde_json::Value,
    m: &mut Mapping,
    available: &[String],
    flows: bool,
) -> Result<Vec<GwPlan>, ScenarioError> {
    let pairs: Vec<(usize, usize)> = sc.links.iter().map(|l| (l.a, l.b)).collect();
    let all: Vec<usize> = (0..sc.nodes.len()).collect();
    let routes = Routes::compute(sc.nodes.len(), &pairs, &all);
    let mut out = Vec::new();
    for (n, node) in sc.nodes.iter().enumerate() {
        let NodeRole::Gateway(g) = &node.role else {
            continue;
        };
        let p = format!("{}.gateway", node_path(raw, &node.name));
        let c: &GatewayConfig = &g.cfg;
        let up = &sc.links[g.uplink];
        let k = if up.a == n { 0 } else { 1 };
        // the simulator's Uplink (sim/mod.rs): the rate toward the client, the
        // round-trip propagation delay
        let rtt = up.dirs[0].link.delay + up.dirs[1].link.delay;
        let rate = up.dirs[k].link.rate;
        if rate.bps() == 0 || rtt.as_nanos() == 0 {
            return refuse(
                format!("{p}.uplink"),
                "the uplink needs a positive rate and delay (the daemon sizes its windows from them)",
            );
        }
        let clients: Vec<usize> = (0..sc.nodes.len())
            .filter(|&v| {
                v != n
                    && routes.next(n, v).is_some_and(|port| {
                        routes.ports(n)[port as usize].1 .0 as usize == g.uplink
                    })
            })
            .collect();
        if clients.is_empty() {
            return refuse(
                format!("{p}.uplink"),
                "no node is reached over the uplink: the gateway would have no clients",
            );
        }
        let cl: Vec<String> = clients
            .iter()
            .map(|&v| {
                let a = node_addr(v);
                format!("{}.{}.{}.{}/32", a[0], a[1], a[2], a[3])
            })
            .collect();
        let mut args: Vec<String> = vec![
            "--uplink".into(),
            dev_name(g.uplink),
            "--rate".into(),
            format!("{}bps", rate.bps()),
            "--rtt".into(),
            ns(rtt),
            "--clients".into(),
            cl.join(","),
            "--metrics".into(),
            METRICS.into(),
            // stopped once the flows have ended: nothing left to drain through the links
            "--drain".into(),
            "0s".into(),
        ];
        let mut unmapped = Vec::new();
        let mut flag = |f: &str, v: String| {
            args.push(format!("--{f}"));
            args.push(v);
        };
        if c.fail_at.is_some() {
            return refuse(
                format!("{p}.fail_at"),
                "the emulator does not fail the daemon at a time (simulated only: longpipe run)",
            );
        }
        if let Some(w) = c.window {
            flag("window", format!("{w}B"));
        }
        flag("max-conns", c.max_conns.to_string());
        flag("abandon-timeout", ns(c.abandon_timeout));
        let mode = match &c.split {
            None => {
                if c.buffer > 0 {
                    flag("buffer", format!("{}B", c.buffer));
                }
                if let Some(r) = c.pace {
                    flag("pace", format!("{}bps", r.bps()));
                }
                flag("dupthresh", c.dupthresh.to_string());
                flag("min-rto", ns(c.min_rto));
                flag("idle-timeout", ns(c.idle_timeout));
                flag("max-half-open", c.max_half_open.to_string());
                flag("half-open-per-source", c.half_open_per_source.to_string());
                flag("half-open-timeout", ns(c.half_open_timeout));
                flag("shared", c.shared.to_string());
                if let Some(w) = c.link_window {
                    flag("link-window", format!("{w}B"));
                }
                if let Some(w) = c.memory {
                    flag("memory", format!("{w}B"));
                }
                if !c.recover_guard {
                    unmapped.push(format!(
                        "{p}.recover_guard: the daemon has no switch for it (it keeps the guard on)"
                    ));
                }
                "spoof"
            }
            Some(s) => {
                // the daemon's TPROXY diverts connections its clients open (from the
                // uplink side); one a server opens toward a client passes unsplit
                if let Some(f) = sc
                    .flows
                    .iter()
                    .find(|f| flows && clients.contains(&f.dst) && !clients.contains(&f.src))
                {
                    return refuse(
                        format!("{p}.mode"),
                        format!(
                            "split: the daemon relays connections that its clients (behind the \
                             uplink) open, and flow[{}] is opened by {:?} toward {:?}; run it with \
                             mode = \"spoof\", or with a command in the client (longpipe emu ... -- CMD)",
                            f.spec_index, sc.nodes[f.src].name, sc.nodes[f.dst].name
                        ),
                    );
                }
                flag("mode", "split".into());
                let cc = linux::kernel_cc(s.leg.tcp, available).or_else(|e| {
                    refuse(
                        format!("{p}.tcp"),
                        format!("the split gateway's satellite leg: {e}"),
                    )
                })?;
                flag("cc", cc);
                if c.buffer > 0 {
                    if !RELAY_BUFFER.contains(&c.buffer) {
                        return refuse(
                            format!("{p}.buffer"),
                            format!(
                                "the split daemon's relay buffer is 4KB to 64MiB, got {} B",
                                c.buffer
                            ),
                        );
                    }
                    flag("relay-buffer", c.buffer.to_string());
                }
                // the leg's TCP: the gateway namespace's, as for a host's flows
                let sy = &mut m.sysctls[n];
                sy.retain(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "ipv4/tcp_sack" | "ipv4/tcp_timestamps" | "ipv4/tcp_rto_min_us"
                    )
                });
                sy.push(("ipv4/tcp_sack".into(), (s.leg.sack as u8).to_string()));
                sy.push((
                    "ipv4/tcp_timestamps".into(),
                    (s.leg.timestamps as u8).to_string(),
                ));
                sy.push((
                    "ipv4/tcp_rto_min_us".into(),
                    (s.leg.rto.min.as_nanos() / 1000)
                        .clamp(1, i32::MAX as u64)
                        .to_string(),
                ));
                for &v in &clients {
                    m.routes
                        .entry((n, v))
                        .or_default()
                        .push(format!("initcwnd {}", s.iw_segments));
                }
                // the defaults, resolved as for a table without these keys
                let def = GatewaySpec::default()
                    .resolve("gateway")
                    .expect("the default gateway resolves");
                for (set, what) in [
                    (c.pace.is_some(), "pace"),
                    (c.dupthresh != def.dupthresh, "dupthresh"),
                    (c.idle_timeout != def.idle_timeout, "idle_timeout"),
                    (c.max_half_open != def.max_half_open, "max_half_open"),
                    (
                        c.half_open_per_source != def.half_open_per_source,
                        "half_open_per_source",
                    ),
                    (
                        c.half_open_timeout != def.half_open_timeout,
                        "half_open_timeout",
                    ),
                ] {
                    if set {
                        unmapped.push(format!(
                            "{p}.{what}: the split daemon relays on kernel sockets and has no such option"
                        ));
                    }
                }
                "split"
            }
        };
        out.push(GwPlan {
            node: n,
            name: node.name.clone(),
            mode,
            args,
            unmapped,
        });
    }
    Ok(out)
}

/// The daemon binary: `$LONGPIPE_GATEWAY`, beside this binary (`target/release`), or
/// on `PATH`.
pub fn find_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LONGPIPE_GATEWAY") {
        return Some(p.into());
    }
    let exe = std::env::current_exe().ok()?;
    let beside = exe.parent()?.join("longpipe-gateway");
    if beside.is_file() {
        return Some(beside);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("longpipe-gateway"))
            .find(|p| p.is_file())
    })
}

/// A running daemon.
pub struct Running {
    pub plan: GwPlan,
    child: Option<Child>,
    /// Its stderr lines (read by a thread).
    err: mpsc::Receiver<String>,
    tail: Vec<String>,
    /// Its state directory (`LONGPIPE_GATEWAY_STATE`): one per namespace.
    state: PathBuf,
    pub args: Vec<String>,
}

impl Running {
    fn pull(&mut self) {
        while let Ok(l) = self.err.try_recv() {
            self.tail.push(l);
        }
        if self.tail.len() > 200 {
            self.tail.drain(..self.tail.len() - 200);
        }
    }

    /// SIGTERM, wait (at most 30 s, then SIGKILL of its process group); the report,
    /// and the core gateway's counters from the stop summary (spoof mode).
    pub fn stop(mut self) -> (EmuGateway, Option<serde_json::Value>) {
        let mut exit = None;
        let mut out = String::new();
        if let Some(mut c) = self.child.take() {
            let _ = sys::kill(c.id() as i32, libc::SIGTERM);
            let t0 = Instant::now();
            let st = loop {
                match c.try_wait() {
                    Ok(Some(st)) => break Some(st),
                    Ok(None) if t0.elapsed() < Duration::from_secs(30) => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => {
                        let _ = sys::kill(-(c.id() as i32), libc::SIGKILL);
                        break c.wait().ok();
                    }
                }
            };
            exit = st.and_then(|s| s.code());
            if let Some(mut o) = c.stdout.take() {
                let _ = o.read_to_string(&mut out);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
        self.pull();
        let summary: Option<serde_json::Value> = out
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l.trim()).ok());
        let u = |k: &str| {
            summary
                .as_ref()
                .and_then(|s| s.get(k))
                .and_then(|v| v.as_u64())
        };
        let split = summary
            .as_ref()
            .and_then(|s| s.get("split"))
            .and_then(|v| serde_json::from_value::<EmuSplitCounters>(v.clone()).ok());
        let counters = summary.as_ref().and_then(|s| s.get("gateway")).cloned();
        let report = EmuGateway {
            node: self.plan.name.clone(),
            mode: self.plan.mode.to_string(),
            args: self.args.clone(),
            unmapped: self.plan.unmapped.clone(),
            exit,
            uptime_s: summary
                .as_ref()
                .and_then(|s| s.get("uptime_s"))
                .and_then(|v| v.as_f64()),
            conns_peak: u("conns_peak"),
            acked_undelivered_bytes: u("acked_undelivered_bytes"),
            held_bytes: u("held_bytes").or(u("buffered_bytes")),
            reset_conns: u("reset_conns").or(u("conns")),
            split,
            stderr_tail: self.tail.iter().rev().take(5).rev().cloned().collect(),
        };
        (report, counters)
    }

    /// The simulator's `gateways[]` entry (spoof mode: the core gateway's counters,
    /// the same fields), from the stop summary's `gateway`.
    pub fn result_entry(node: &str, summary_gateway: &serde_json::Value) -> serde_json::Value {
        let mut e = serde_json::Map::new();
        e.insert("node".into(), node.into());
        if let Some(o) = summary_gateway.as_object() {
            for (k, v) in o {
                e.insert(k.clone(), v.clone());
            }
        }
        let g = |k: &str| summary_gateway.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        let (sent, delivered) = (g("sat_bytes_sent"), g("sat_bytes_delivered"));
        e.insert(
            "satellite_efficiency".into(),
            if sent > 0 {
                (delivered as f64 / sent as f64).into()
            } else {
                serde_json::Value::Null
            },
        );
        serde_json::Value::Object(e)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = sys::kill(c.id() as i32, libc::SIGTERM);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = sys::kill(-(c.id() as i32), libc::SIGKILL);
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

/// The daemons' reports into the result: `emu.gateways[]` (typed: results.rs
/// `EmuGateway`) and, in spoof mode, the simulator's `gateways[]` entry from the core
/// gateway's counters in the daemon's stop summary.
pub fn into_result(
    v: &mut serde_json::Value,
    reports: Vec<(EmuGateway, Option<serde_json::Value>)>,
) -> serde_json::Result<()> {
    if reports.is_empty() {
        return Ok(());
    }
    let mut sim_like = Vec::new();
    let mut emu = Vec::new();
    for (r, counters) in reports {
        if let Some(c) = counters {
            sim_like.push(Running::result_entry(&r.node, &c));
        }
        emu.push(r);
    }
    if !sim_like.is_empty() {
        v["gateways"] = serde_json::Value::Array(sim_like);
    }
    if let Some(e) = v.get_mut("emu") {
        e["gateways"] = serde_json::to_value(&emu)?;
    }
    Ok(())
}

/// The directory of the daemons' state directories (`LONGPIPE_GATEWAY_STATE`, one per
/// namespace, named after it): the emulator's own, so that an emulated gateway never
/// meets a real one's records.
pub fn state_dir() -> PathBuf {
    crate::netns::state_dir().join("gateway")
}

/// Removes the daemons' state directories whose namespace is gone (an emulation killed
/// with SIGKILL: `longpipe emu cleanup` removed its namespaces, and the daemons with
/// them); the names of those removed.
pub fn cleanup_states() -> Vec<String> {
    let live: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir(state_dir()) else {
        return removed;
    };
    for e in dir.flatten() {
        let ns = e.file_name().to_string_lossy().into_owned();
        if ns.starts_with("lpemu-")
            && !live.contains(&ns)
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            removed.push(ns);
        }
    }
    removed
}

/// Starts the daemon of every plan in its node's namespace and waits until each says
/// it is ready; Err (with the daemon's last words) if one does not. `user`: the
/// emulator's `--user` (the daemon's packet loop runs as that user; without it the
/// daemon's own default, the user behind sudo or nobody).
pub fn start(plans: &[GwPlan], setup: &Setup, user: Option<&str>) -> Result<Vec<Running>, String> {
    if plans.is_empty() {
        return Ok(vec![]);
    }
    let exe = find_binary().ok_or(
        "a tcp-gateway node runs the longpipe-gateway daemon, which is not built: run `make build` \
         (cargo build -p longpipe-gateway --release) or set LONGPIPE_GATEWAY",
    )?;
    cleanup_states();
    let mut running = Vec::new();
    for p in plans {
        let mut args = p.args.clone();
        if let Some(u) = user {
            args.push("--user".into());
            args.push(u.into());
        }
        let state = state_dir().join(&setup.ns[p.node]);
        std::fs::create_dir_all(&state).map_err(|e| format!("{}: {e}", state.display()))?;
        setup.enter(p.node).map_err(|e| e.to_string())?;
        let spawned = Command::new(&exe)
            .arg("run")
            .args(&args)
            .env("LONGPIPE_GATEWAY_STATE", &state)
            // its own process group: Ctrl-C is the emulator's to handle, and a
            // SIGKILL of the group reaches the packet loop too
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        setup.leave().map_err(|e| e.to_string())?;
        let mut child = spawned.map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut r = Running {
            plan: p.clone(),
            child: Some(child),
            err: rx,
            tail: vec![],
            state,
            args,
        };
        let t0 = Instant::now();
        loop {
            match r.err.recv_timeout(Duration::from_millis(50)) {
                Ok(l) => {
                    let ready = l.contains(": ready: pid");
                    r.tail.push(l);
                    if ready {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(failed(&mut r, "ended before it was ready"))
                }
            }
            if t0.elapsed() > READY_TIMEOUT {
                return Err(failed(&mut r, "was not ready within 30 s"));
            }
        }
        running.push(r);
    }
    Ok(running)
}

fn failed(r: &mut Running, what: &str) -> String {
    r.pull();
    let last = r
        .tail
        .iter()
        .rev()
        .find(|l| l.starts_with("error:"))
        .or(r.tail.last())
        .cloned()
        .unwrap_or_default();
    format!(
        "the gateway daemon of node {:?} {what}: {}",
        r.plan.name,
        last.trim_start_matches("error: ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use longpipe_core::scenario::parse_json;

    fn sc(gw: &str) -> (ValidScenario, serde_json::Value) {
        let text = format!(
            r#"{{"duration":"5s","node":[{{"name":"g","kind":"tcp-gateway","gateway":{gw}}}],
            "link":[{{"a":"s","b":"g","rate":"100Mbps","delay":"2ms"}},
                    {{"a":"g","b":"t","rate":"10Mbps","rate_ba":"1Mbps","delay":"300ms"}},
                    {{"a":"t","b":"c1","rate":"100Mbps","delay":"1ms"}},
                    {{"a":"t","b":"c2","rate":"100Mbps","delay":"1ms"}}],
            "flow":[{{"src":"s","dst":"c1"}},{{"src":"s","dst":"c2"}}]}}"#
        );
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        (parse_json(&text).unwrap().validate().unwrap(), raw)
    }

    fn avail() -> Vec<String> {
        vec!["reno".into(), "cubic".into(), "bbr".into()]
    }

    fn arg<'a>(p: &'a GwPlan, f: &str) -> Option<&'a str> {
        let i = p.args.iter().position(|a| a == f)?;
        Some(p.args[i + 1].as_str())
    }

    /// The daemon's own parsing of the gateway flags (opts.rs): each `--a-b V` becomes
    /// the key `a_b` of a `GatewaySpec` with the string V, resolved by the core.
    fn daemon_resolves(p: &GwPlan) -> GatewayConfig {
        let mut gw = serde_json::Map::new();
        gw.insert("mode".into(), p.mode.into());
        let mut i = 0;
        while i < p.args.len() {
            let f = &p.args[i][2..];
            let v = &p.args[i + 1];
            match f {
                "window" | "buffer" | "memory" | "link-window" | "pace" | "min-rto"
                | "idle-timeout" | "half-open-timeout" | "abandon-timeout" => {
                    gw.insert(f.replace('-', "_"), v.as_str().into());
                }
                "dupthresh" | "max-conns" | "max-half-open" | "half-open-per-source" => {
                    gw.insert(f.replace('-', "_"), v.parse::<u32>().unwrap().into());
                }
                "shared" => {
                    gw.insert("shared".into(), (v == "true").into());
                }
                _ => {}
            }
            i += 2;
        }
        let spec: GatewaySpec = serde_json::from_value(gw.into()).unwrap();
        spec.resolve("gateway").unwrap()
    }

    #[test]
    fn a_spoofing_node_gets_the_simulators_configuration() {
        let (v, raw) = sc(
            r#"{"window":"256KB","pace":"9Mbps","dupthresh":4,"min_rto":"500ms","max_conns":100}"#,
        );
        let mut m = linux::map(&v, None, &avail()).unwrap();
        let p = plan(&v, &raw, &mut m, &avail(), false).unwrap();
        assert_eq!(p.len(), 1);
        let p = &p[0];
        assert_eq!((p.name.as_str(), p.mode), ("g", "spoof"));
        assert_eq!(
            arg(p, "--uplink"),
            Some("lpl1"),
            "the satellite link's device"
        );
        assert_eq!(arg(p, "--rate"), Some("10000000bps"), "toward the clients");
        assert_eq!(arg(p, "--rtt"), Some("600000000ns"));
        // the nodes behind the uplink: t, c1, c2
        let addr = |n: &str| {
            let a = node_addr(v.node_index(n).unwrap());
            format!("{}.{}.{}.{}/32", a[0], a[1], a[2], a[3])
        };
        let want = [addr("t"), addr("c1"), addr("c2")];
        let got: Vec<&str> = arg(p, "--clients").unwrap().split(',').collect();
        assert_eq!(got.len(), 3);
        for w in &want {
            assert!(got.contains(&w.as_str()), "{got:?}");
        }
        assert_eq!(arg(p, "--mode"), None);
        assert!(p.unmapped.is_empty(), "{:?}", p.unmapped);
        let NodeRole::Gateway(g) = &v.nodes[v.node_index("g").unwrap()].role else {
            panic!()
        };
        let d = daemon_resolves(p);
        let c = &g.cfg;
        assert_eq!(
            (d.window, d.pace, d.dupthresh, d.min_rto, d.max_conns),
            (c.window, c.pace, c.dupthresh, c.min_rto, c.max_conns)
        );
        assert_eq!(
            (d.buffer, d.shared, d.idle_timeout, d.abandon_timeout),
            (c.buffer, c.shared, c.idle_timeout, c.abandon_timeout)
        );
        assert_eq!(
            (d.max_half_open, d.half_open_per_source, d.half_open_timeout),
            (c.max_half_open, c.half_open_per_source, c.half_open_timeout)
        );
        assert_eq!((d.link_window, d.memory), (c.link_window, c.memory));
        // the paper's gateway: shared = false, and its guard
        let (v, raw) = sc(r#"{"shared":false,"recover_guard":false,"buffer":"2MB"}"#);
        let mut m = linux::map(&v, None, &avail()).unwrap();
        let p = &plan(&v, &raw, &mut m, &avail(), false).unwrap()[0];
        assert_eq!(arg(p, "--shared"), Some("false"));
        assert_eq!(arg(p, "--buffer"), Some("2000000B"));
        assert_eq!(daemon_resolves(p).buffer, 2_000_000);
        assert!(p.unmapped[0].starts_with("node[0].gateway.recover_guard"));
    }

    #[test]
    fn a_split_node_maps_its_leg_onto_the_namespace() {
        let (v, raw) = sc(
            r#"{"mode":"split","tcp":"cubic","iw":4,"sack":false,"min_rto":"300ms","buffer":"1MB","dupthresh":5}"#,
        );
        let mut m = linux::map(&v, None, &avail()).unwrap();
        let p = &plan(&v, &raw, &mut m, &avail(), false).unwrap()[0];
        assert_eq!(
            (arg(p, "--mode"), arg(p, "--cc")),
            (Some("split"), Some("cubic"))
        );
        assert_eq!(arg(p, "--relay-buffer"), Some("1000000"));
        assert_eq!(arg(p, "--dupthresh"), None, "spoof only");
        assert!(p.unmapped[0].contains("dupthresh"), "{:?}", p.unmapped);
        let (gi, c1) = (v.node_index("g").unwrap(), v.node_index("c1").unwrap());
        let get = |k: &str| {
            m.sysctls[gi]
                .iter()
                .rfind(|x| x.0 == k)
                .map(|x| x.1.clone())
        };
        assert_eq!(get("ipv4/tcp_sack").as_deref(), Some("0"));
        assert_eq!(get("ipv4/tcp_timestamps").as_deref(), Some("1"));
        assert_eq!(get("ipv4/tcp_rto_min_us").as_deref(), Some("300000"));
        assert_eq!(m.routes[&(gi, c1)], ["initcwnd 4"]);
        // the default leg is hybla: refused where the kernel has none, naming the key
        let (v, raw) = sc(r#"{"mode":"split"}"#);
        let mut m = linux::map(&v, None, &avail()).unwrap();
        let e = plan(&v, &raw, &mut m, &avail(), false).unwrap_err();
        assert_eq!(e.path, "node[0].gateway.tcp");
        assert!(e.msg.contains("hybla"), "{e}");
        let mut with_hybla = avail();
        with_hybla.push("hybla".into());
        let p = &plan(&v, &raw, &mut m, &with_hybla, false).unwrap()[0];
        assert_eq!(arg(p, "--cc"), Some("hybla"));
    }

    #[test]
    fn a_split_node_refuses_flows_opened_toward_its_clients() {
        let (v, raw) = sc(r#"{"mode":"split","tcp":"cubic"}"#);
        let mut m = linux::map(&v, None, &avail()).unwrap();
        let e = plan(&v, &raw, &mut m, &avail(), true).unwrap_err();
        assert_eq!(e.path, "node[0].gateway.mode");
        assert!(
            e.msg.contains("flow[0] is opened by \"s\" toward \"c1\""),
            "{e}"
        );
    }

    #[test]
    fn what_the_daemon_cannot_do_is_refused() {
        let (v, raw) = sc(r#"{"fail_at":"2s"}"#);
        let mut m = linux::map(&v, None, &avail()).unwrap();
        assert_eq!(
            plan(&v, &raw, &mut m, &avail(), false).unwrap_err().path,
            "node[0].gateway.fail_at"
        );
        let (v, raw) = sc(r#"{"mode":"split","tcp":"cubic","buffer":"100MB"}"#);
        let mut m = linux::map(&v, None, &avail()).unwrap();
        assert_eq!(
            plan(&v, &raw, &mut m, &avail(), false).unwrap_err().path,
            "node[0].gateway.buffer"
        );
    }
}
