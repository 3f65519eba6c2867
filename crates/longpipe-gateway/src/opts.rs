//! `longpipe-gateway run` options: parsed and checked before anything is set up, so bad
//! input exits 2 with one line naming the option. (~620 lines: the last ~165 are the
//! tests of every refusal.)
//!
//! The gateway's own settings are the scenario's `gateway = { ... }` keys (the core's
//! `GatewaySpec`, resolved by the core with its checks); the satellite link's rate and
//! round-trip time give the defaults the simulator derives from its links.

use crate::path::Prefix;
use longpipe_core::middlebox::gateway::{default_window, GatewayConfig, GatewaySpec, Uplink};
use longpipe_core::time::{Rate, SimDuration};
use longpipe_core::units::{parse_duration, parse_rate};
use serde::{Deserialize, Serialize};

pub const USAGE: &str = "usage: longpipe-gateway run --uplink IF --rate RATE --rtt TIME [--mode spoof|split] [--clients CIDR[,CIDR...]]
           [--exclude-ports PORT[,PORT...]] [--exclude-hosts CIDR[,CIDR...]]
           [--window BYTES] [--buffer BYTES] [--memory BYTES] [--link-window BYTES] [--shared true|false]
           [--pace RATE] [--dupthresh N] [--min-rto TIME] [--idle-timeout TIME] [--abandon-timeout TIME]
           [--max-conns N] [--max-half-open N] [--half-open-per-source N] [--half-open-timeout TIME]
           [--metrics ADDR:PORT|off] [--metrics-public] [--stats-interval TIME] [--drain TIME] [--user USER]
           [--name PREFIX] [--table N] [--pref N] [--mtu N] [--dev-queue PKTS] [--no-seccomp]
           split mode: [--cc NAME|auto] [--port N] [--relay-buffer BYTES] (and --window, --max-conns, --abandon-timeout)
       longpipe-gateway status [--name PREFIX] [--json]
       longpipe-gateway cleanup [--name PREFIX] [--table N] [--pref N]";

/// Everything the privileged parent and the unprivileged worker need (the worker gets
/// it as one JSON line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The core gateway on packets from TUN devices (ACK spoofing).
    Spoof,
    /// Kernel sockets: a transparent split-connection proxy (nftables TPROXY).
    Split,
}

/// The TUN devices' default queue, packets: the initial windows (10 segments) of 2000
/// connections opened at once, what the packet loop may have to take in while it is
/// busy (Linux's default, 500, dropped most of such a burst from 1000 connections:
/// docs/notes/gateway-daemon.md, "1000 concurrent connections"). Memory is used only by
/// what waits.
pub const DEV_QUEUE: u32 = 20_000;

/// The largest TUN queue the kernel accepts: its ring of packet pointers is one
/// allocation of at most `KMALLOC_MAX_SIZE` (4 MiB with 4 KiB pages) ÷ 8 B (measured:
/// Linux 6.18 refuses 524 289 with EPERM, "Operation not permitted").
pub const DEV_QUEUE_MAX: u32 = 524_288;

/// The shortest `--stats-interval`: a line a second at most (stderr goes to the
/// journal; 10 ms filled it with 100 lines a second).
pub const STATS_FLOOR_NS: u64 = 1_000_000_000;

/// How far behind its schedule the gateway's pacer may catch up (the core's
/// `pace_catchup`): the packet loop wakes after the due time — by the timer slack and the
/// scheduler's delay, tens of µs to ms — and a pacer that times each send from its late
/// wake-up loses that every time (a 50 Mbit/s satellite got 37). At most this much
/// (2 ms: 12.5 kB at 50 Mbit/s) goes out at once after a longer stall.
pub const PACE_CATCHUP: SimDuration = SimDuration::from_millis(2);

/// Options that only spoof mode uses (refused with `--mode split`).
const SPOOF_ONLY: &[&str] = &[
    "--buffer",
    "--memory",
    "--link-window",
    "--shared",
    "--pace",
    "--dupthresh",
    "--min-rto",
    "--idle-timeout",
    "--mtu",
    "--dev-queue",
    "--max-half-open",
    "--half-open-per-source",
    "--half-open-timeout",
];
/// Options that only split mode uses.
const SPLIT_ONLY: &[&str] = &["--cc", "--port", "--relay-buffer"];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Opts {
    pub mode: Mode,
    pub uplink: String,
    /// Client prefixes (behind the satellite); empty: the routes over the uplink.
    pub clients: Vec<Prefix>,
    pub rate_bps: u64,
    pub rtt_ns: u64,
    /// The core's `GatewaySpec` as JSON.
    pub gateway: serde_json::Value,
    /// None: no metrics endpoint.
    pub metrics: Option<String>,
    pub stats_interval_ns: u64,
    pub drain_ns: u64,
    pub user: Option<String>,
    /// Device prefix: devices NAMEc (toward the client) and NAMEs (toward the server).
    pub name: String,
    /// Routing tables `table` (toward the client) and `table + 1`.
    pub table: u32,
    /// First rule preference.
    pub pref: u32,
    pub mtu: u32,
    /// Spoof mode: the TUN devices' queues (txqueuelen), packets: what the kernel holds
    /// for the packet loop while it is busy; beyond it the kernel drops.
    pub dev_queue: u32,
    /// Split mode: the satellite leg's congestion control (TCP_CONGESTION), or "auto"
    /// (the default: hybla if the kernel has it, else bbr, else the kernel's default;
    /// `split_setup::AUTO_CC`).
    pub cc: String,
    /// Split mode: the port of the transparent listener (127.0.0.1) TPROXY diverts to.
    pub port: u16,
    /// Split mode: the relay's buffer per connection and direction, bytes.
    pub relay_buffer: u32,
    /// Connections to or from these ports (either end) are not accelerated.
    pub exclude_ports: Vec<u16>,
    /// Connections to or from these hosts (either end) are not accelerated.
    pub exclude_hosts: Vec<Prefix>,
    /// The packet loop without its seccomp filter (debugging).
    pub no_seccomp: bool,
    /// Split mode: the relay's sockets give a silent peer up after this long
    /// (`TCP_USER_TIMEOUT`, from `--abandon-timeout`, default 300 s).
    pub abandon_ns: u64,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            mode: Mode::Spoof,
            uplink: String::new(),
            clients: vec![],
            rate_bps: 0,
            rtt_ns: 0,
            gateway: serde_json::json!({}),
            metrics: Some("127.0.0.1:9464".into()),
            stats_interval_ns: 10_000_000_000,
            drain_ns: 5_000_000_000,
            user: None,
            name: "lpgw".into(),
            table: 7450,
            pref: 7450,
            mtu: 1500,
            dev_queue: DEV_QUEUE,
            cc: "auto".into(),
            port: 7450,
            relay_buffer: 262_144,
            exclude_ports: vec![],
            exclude_hosts: vec![],
            no_seccomp: false,
            abandon_ns: 300_000_000_000,
        }
    }
}

/// A list of IPv4 prefixes (`--clients`, `--exclude-hosts`): IPv6 is refused in words.
fn prefixes(opt: &str, v: &str) -> Result<Vec<Prefix>, String> {
    let mut out = vec![];
    for c in v.split(',').map(str::trim) {
        if c.is_empty() {
            return Err(format!(
                "{opt}: expected IPv4 prefixes separated by commas (10.1.0.0/16,10.2.0.7), got {v:?}"
            ));
        }
        if c.contains(':') {
            return Err(format!(
                "{opt}: {c:?} is IPv6: the gateway accelerates IPv4 only (IPv6 traffic passes \
                 unaccelerated)"
            ));
        }
        out.push(Prefix::parse(c).ok_or_else(|| {
            format!("{opt}: {c:?} is not an IPv4 address or prefix (10.1.0.0/16)")
        })?);
    }
    Ok(out)
}

impl Opts {
    pub fn dev_to_client(&self) -> String {
        format!("{}c", self.name)
    }
    pub fn dev_to_server(&self) -> String {
        format!("{}s", self.name)
    }

    /// The core gateway's configuration and the uplink it serves.
    pub fn gateway_config(&self) -> Result<(GatewayConfig, Uplink), String> {
        let spec: GatewaySpec = serde_json::from_value(self.gateway.clone())
            .map_err(|e| format!("gateway options: {e}"))?;
        let mut cfg = spec.resolve("gateway").map_err(|e| {
            let opt = e.path.trim_start_matches("gateway").trim_start_matches('.');
            format!("--{}: {}", opt.replace('_', "-"), e.msg)
        })?;
        // a real loop's timers are late: the pacer keeps to its schedule
        cfg.pace_catchup = PACE_CATCHUP;
        let rate = Rate(self.rate_bps);
        let up = Uplink {
            rate: Some(rate),
            bdp: default_window(rate, SimDuration(self.rtt_ns)),
        };
        Ok((cfg, up))
    }
}

/// Parses the arguments after `run` (or `cleanup` and `status`: `for_cleanup`; the
/// naming options only, and `--json` for status).
pub fn parse(a: &[String], for_cleanup: bool) -> Result<Opts, String> {
    parse_for(a, for_cleanup, false)
}

/// The arguments of `status` (`--name` and `--json`).
pub fn parse_status(a: &[String]) -> Result<(Opts, bool), String> {
    let o = parse_for(a, true, true)?;
    Ok((o, a.iter().any(|x| x == "--json")))
}

fn parse_for(a: &[String], for_cleanup: bool, status: bool) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut metrics_public = false;
    let mut gw = serde_json::Map::new();
    gw.insert("mode".into(), "spoof".into());
    let (mut rate, mut rtt) = (None, None);
    let mut i = 0;
    let mut seen: Vec<&str> = vec![];
    while i < a.len() {
        let opt = a[i].as_str();
        seen.push(opt);
        let val = || -> Result<String, String> {
            a.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{opt}: expected a value"))
        };
        let dur = |v: &str| parse_duration(v).map_err(|e| format!("{opt} {v:?}: {e}"));
        match opt {
            "--uplink" if !for_cleanup => o.uplink = val()?,
            "--clients" if !for_cleanup => o.clients = prefixes(opt, &val()?)?,
            "--exclude-hosts" if !for_cleanup => o.exclude_hosts = prefixes(opt, &val()?)?,
            "--exclude-ports" if !for_cleanup => {
                let v = val()?;
                for p in v.split(',').map(str::trim) {
                    let n: u16 = p.parse().ok().filter(|&n| n != 0).ok_or_else(|| {
                        format!("{opt}: expected ports 1 to 65535 separated by commas, got {v:?}")
                    })?;
                    o.exclude_ports.push(n);
                }
            }
            "--rate" if !for_cleanup => {
                let v = val()?;
                let r = parse_rate(&v).map_err(|e| format!("--rate {v:?}: {e}"))?;
                if r.0 == 0 {
                    return Err("--rate: must be positive".into());
                }
                rate = Some(r.0);
            }
            "--rtt" if !for_cleanup => {
                let v = val()?;
                let d = dur(&v)?;
                if d.0 == 0 {
                    return Err("--rtt: must be positive".into());
                }
                rtt = Some(d.0);
            }
            "--mode" if !for_cleanup => {
                let v = val()?;
                o.mode = match v.as_str() {
                    "spoof" => Mode::Spoof,
                    "split" => Mode::Split,
                    _ => return Err(format!("--mode: expected spoof or split, got {v:?}")),
                };
            }
            "--abandon-timeout" if !for_cleanup => {
                let v = val()?;
                o.abandon_ns = dur(&v)?.0;
                gw.insert("abandon_timeout".into(), v.into());
            }
            "--window"
            | "--buffer"
            | "--memory"
            | "--link-window"
            | "--pace"
            | "--min-rto"
            | "--idle-timeout"
            | "--half-open-timeout"
                if !for_cleanup =>
            {
                gw.insert(opt[2..].replace('-', "_"), val()?.into());
            }
            "--dupthresh" | "--max-conns" | "--max-half-open" | "--half-open-per-source"
                if !for_cleanup =>
            {
                let v = val()?;
                let n: u32 = v
                    .parse()
                    .map_err(|_| format!("{opt}: expected a whole number, got {v:?}"))?;
                gw.insert(opt[2..].replace('-', "_"), n.into());
            }
            "--shared" if !for_cleanup => {
                let v = val()?;
                let b = match v.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("--shared: expected true or false, got {v:?}")),
                };
                gw.insert("shared".into(), b.into());
            }
            "--metrics" if !for_cleanup => {
                let v = val()?;
                o.metrics = if v == "off" {
                    None
                } else {
                    v.parse::<std::net::SocketAddr>()
                        .map_err(|_| format!("--metrics: expected ADDR:PORT or off, got {v:?}"))?;
                    Some(v)
                };
            }
            "--metrics-public" if !for_cleanup => {
                metrics_public = true;
                i += 1;
                continue;
            }
            "--no-seccomp" if !for_cleanup => {
                o.no_seccomp = true;
                i += 1;
                continue;
            }
            "--json" if status => {
                i += 1;
                continue;
            }
            "--stats-interval" if !for_cleanup => {
                let v = val()?;
                let d = dur(&v)?;
                if d.0 < STATS_FLOOR_NS {
                    return Err(format!(
                        "--stats-interval: at least 1s (a line a second at most), got {v:?}"
                    ));
                }
                o.stats_interval_ns = d.0;
            }
            "--drain" if !for_cleanup => o.drain_ns = dur(&val()?)?.0,
            "--cc" if !for_cleanup => {
                let v = val()?;
                if v.is_empty()
                    || v.len() > 15
                    || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    return Err(format!(
                        "--cc: expected a congestion control name (cubic, bbr, reno, ...), got {v:?}"
                    ));
                }
                o.cc = v;
            }
            "--port" if !for_cleanup => {
                let v = val()?;
                o.port = v
                    .parse()
                    .ok()
                    .filter(|&p: &u16| p != 0)
                    .ok_or_else(|| format!("--port: expected 1 to 65535, got {v:?}"))?;
            }
            "--relay-buffer" if !for_cleanup => {
                let v = val()?;
                let b = longpipe_core::units::parse_bytes(&v)
                    .map_err(|e| format!("--relay-buffer {v:?}: {e}"))?;
                if !(4_096..=64 << 20).contains(&b) {
                    return Err(format!("--relay-buffer: expected 4KB to 64MiB, got {v:?}"));
                }
                o.relay_buffer = b as u32;
            }
            "--user" if !for_cleanup => o.user = Some(val()?),
            "--mtu" if !for_cleanup => {
                let v = val()?;
                o.mtu = v
                    .parse()
                    .ok()
                    .filter(|m| (576..=65_535).contains(m))
                    .ok_or_else(|| format!("--mtu: expected 576 to 65535, got {v:?}"))?;
            }
            "--dev-queue" if !for_cleanup => {
                let v = val()?;
                o.dev_queue = v
                    .parse()
                    .ok()
                    .filter(|q| (16..=DEV_QUEUE_MAX).contains(q))
                    .ok_or_else(|| {
                        format!(
                            "--dev-queue: expected 16 to {DEV_QUEUE_MAX} packets (the kernel's \
                             largest TUN queue), got {v:?}"
                        )
                    })?;
            }
            "--name" => {
                let v = val()?;
                if v.is_empty()
                    || v.len() > 13
                    || !v
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(format!(
                        "--name: expected 1 to 13 letters, digits, - or _, got {v:?}"
                    ));
                }
                o.name = v;
            }
            "--table" | "--pref" => {
                let v = val()?;
                let n: u32 = v
                    .parse()
                    .ok()
                    .filter(|&n| (1..=32_000).contains(&n) && n != 253 && n != 254 && n != 255)
                    .ok_or_else(|| {
                        format!("{opt}: expected 1 to 32000 (not 253-255), got {v:?}")
                    })?;
                if opt == "--table" {
                    o.table = n;
                } else {
                    o.pref = n;
                }
            }
            _ => return Err(format!("unknown option {opt:?}\n{USAGE}")),
        }
        i += 2;
    }
    o.gateway = serde_json::Value::Object(gw);
    if !for_cleanup {
        let given = |x: &&&str| seen.contains(*x);
        let (wrong, mode) = match o.mode {
            Mode::Spoof => (SPLIT_ONLY, "split"),
            Mode::Split => (SPOOF_ONLY, "spoof"),
        };
        if let Some(x) = wrong.iter().find(given) {
            return Err(format!("{x}: only with --mode {mode}"));
        }
    }
    if for_cleanup {
        return Ok(o);
    }
    if let Some(m) = &o.metrics {
        let ip = m.parse::<std::net::SocketAddr>().map(|a| a.ip());
        if ip.is_ok_and(|ip| !ip.is_loopback()) && !metrics_public {
            return Err(format!(
                "--metrics {m}: not a loopback address: the endpoint has no authentication; \
                 add --metrics-public to serve it there"
            ));
        }
    }
    if o.uplink.is_empty() {
        return Err("run: --uplink IF is required (the interface toward the satellite)".into());
    }
    let (Some(r), Some(t)) = (rate, rtt) else {
        return Err(
            "run: --rate and --rtt are required (the satellite link's rate toward \
                    the clients and its round-trip time: pacing and default windows)"
                .into(),
        );
    };
    (o.rate_bps, o.rtt_ns) = (r, t);
    o.gateway_config()?;
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_reach_the_core_gateway_and_errors_name_the_option() {
        let o = parse(
            &args("--uplink eth1 --rate 20Mbps --rtt 600ms --window 200KB --max-conns 5000 --clients 10.1.0.0/16,10.2.0.7"),
            false,
        )
        .unwrap();
        let (cfg, up) = o.gateway_config().unwrap();
        assert_eq!(
            (cfg.window, cfg.max_conns, cfg.shared),
            (Some(200_000), 5000, true)
        );
        assert_eq!(up.bdp, 20_000_000 * 6 / 10 / 8);
        assert_eq!(
            cfg.pace_catchup, PACE_CATCHUP,
            "a late loop's pacer catches up"
        );
        assert!(PACE_CATCHUP > SimDuration::ZERO);
        assert_eq!(
            o.clients,
            vec![Prefix([10, 1, 0, 0], 16), Prefix([10, 2, 0, 7], 32)]
        );
        let e = |s: &str| parse(&args(s), false).unwrap_err();
        let base = "--uplink eth1 --rate 20Mbps --rtt 600ms";
        assert_eq!(
            e(&format!("{base} --window 0B")),
            "--window: must be positive (omit it for the uplink's bandwidth-delay product)"
        );
        assert!(
            e(&format!("{base} --window lots")).starts_with("gateway options:"),
            "{}",
            e(&format!("{base} --window lots"))
        );
        assert!(e(&format!("{base} --idle-timeout 0s")).starts_with("--idle-timeout:"));
        assert_eq!(
            parse(&args(&format!("{base} --mode split")), false)
                .unwrap()
                .mode,
            Mode::Split
        );
        let o = parse(
            &args(&format!(
                "{base} --mode split --cc bbr --port 7001 --relay-buffer 64KB --window 1MB"
            )),
            false,
        )
        .unwrap();
        assert_eq!(
            (o.cc.as_str(), o.port, o.relay_buffer),
            ("bbr", 7001, 64_000)
        );
        assert_eq!(o.gateway_config().unwrap().0.window, Some(1_000_000));
        let o = parse(&args(&format!("{base} --mode split")), false).unwrap();
        assert_eq!(o.cc, "auto", "hybla if the kernel has it, else bbr");
        assert_eq!(
            e(&format!("{base} --mode split --min-rto 1s")),
            "--min-rto: only with --mode spoof"
        );
        assert_eq!(
            e(&format!("{base} --cc bbr")),
            "--cc: only with --mode split"
        );
        assert!(e(&format!("{base} --mode split --cc 'b b'")).starts_with("--cc:"));
        assert!(e(&format!("{base} --mode split --port 0")).starts_with("--port:"));
        assert!(e(&format!("{base} --mode split --relay-buffer 1B")).starts_with("--relay-buffer:"));
        assert!(e(&format!("{base} --mode splat")).starts_with("--mode: expected spoof or split"));
        assert!(e(&format!("{base} --clients 10.0.0.300")).starts_with("--clients:"));
        assert!(e(&format!("{base} --bogus 1")).starts_with("unknown option \"--bogus\""));
        assert!(e("--uplink eth1 --rate 20Mbps").starts_with("run: --rate and --rtt"));
        assert!(e("--rate 1Mbps --rtt 1s").starts_with("run: --uplink"));
        assert!(e(&format!("{base} --metrics nowhere")).starts_with("--metrics:"));
        assert!(e(&format!("{base} --name way-too-long-name")).starts_with("--name:"));
        assert!(e(&format!("{base} --shared false --memory 1MB")).starts_with("--shared:"));
        assert_eq!(parse(&args(base), false).unwrap().dev_queue, DEV_QUEUE);
        let o = parse(&args(&format!("{base} --dev-queue 4096")), false).unwrap();
        assert_eq!(o.dev_queue, 4096);
        assert!(e(&format!("{base} --dev-queue 0")).starts_with("--dev-queue: expected 16"));
        assert!(e(&format!("{base} --dev-queue lots")).starts_with("--dev-queue: expected 16"));
        assert_eq!(
            e(&format!("{base} --mode split --dev-queue 4096")),
            "--dev-queue: only with --mode spoof"
        );
    }

    /// Issue 29 item 15 and issue 26 item 8: each refused in one line naming the option.
    #[test]
    fn limits_and_lists_are_checked_in_one_line() {
        let e = |s: &str| parse(&args(s), false).unwrap_err();
        let ok = |s: &str| parse(&args(s), false).unwrap();
        let base = "--uplink eth1 --rate 20Mbps --rtt 600ms";
        // the kernel's largest TUN queue is the documented maximum
        assert_eq!(
            ok(&format!("{base} --dev-queue 524288")).dev_queue,
            DEV_QUEUE_MAX
        );
        let m = e(&format!("{base} --dev-queue 1000000"));
        assert!(m.starts_with("--dev-queue: expected 16 to 524288 packets") && !m.contains('\n'));
        // an empty list is not "the routes over the uplink"
        let a: Vec<String> = vec![
            "--uplink".into(),
            "eth1".into(),
            "--rate".into(),
            "1Mbps".into(),
            "--rtt".into(),
            "1s".into(),
            "--clients".into(),
            "".into(),
        ];
        assert!(parse(&a, false)
            .unwrap_err()
            .starts_with("--clients: expected IPv4 prefixes"));
        assert!(e(&format!("{base} --clients 10.1.0.0/16,,10.2.0.0/16")).starts_with("--clients:"));
        assert!(e(&format!("{base} --clients 2001:db8::/32")).contains("is IPv6"));
        assert!(e(&format!("{base} --exclude-hosts fe80::1")).contains("is IPv6"));
        // metrics on a public address only when asked
        assert!(e(&format!("{base} --metrics 0.0.0.0:9464")).contains("--metrics-public"));
        let o = ok(&format!("{base} --metrics 0.0.0.0:9464 --metrics-public"));
        assert_eq!(o.metrics.as_deref(), Some("0.0.0.0:9464"));
        ok(&format!("{base} --metrics [::1]:9464"));
        // a floor on the stats line's interval
        assert!(e(&format!("{base} --stats-interval 10ms"))
            .starts_with("--stats-interval: at least 1s"));
        assert_eq!(
            ok(&format!("{base} --stats-interval 1s")).stats_interval_ns,
            STATS_FLOOR_NS
        );
        // exclusions
        let o = ok(&format!(
            "{base} --exclude-ports 22,443 --exclude-hosts 192.0.2.0/24"
        ));
        assert_eq!(o.exclude_ports, vec![22, 443]);
        assert_eq!(o.exclude_hosts, vec![Prefix([192, 0, 2, 0], 24)]);
        assert!(e(&format!("{base} --exclude-ports 0")).starts_with("--exclude-ports:"));
        // handshake limits reach the core
        let o = ok(&format!(
            "{base} --max-half-open 100 --half-open-per-source 10 --half-open-timeout 2s"
        ));
        let (cfg, _) = o.gateway_config().unwrap();
        assert_eq!((cfg.max_half_open, cfg.half_open_per_source), (100, 10));
        assert!(e(&format!("{base} --max-half-open 0")).starts_with("--max-half-open:"));
        // the split relay takes the abandon timeout too (its sockets' user timeout)
        let o = ok(&format!("{base} --mode split --abandon-timeout 20s"));
        assert_eq!(o.abandon_ns, 20_000_000_000);
        // flags take no value
        assert!(ok(&format!("{base} --no-seccomp --metrics off")).no_seccomp);
        let (o, json) = parse_status(&args("--name gw2 --json")).unwrap();
        assert_eq!((o.name.as_str(), json), ("gw2", true));
    }

    #[test]
    fn prefixes_match_as_routes_do() {
        let p = Prefix::parse("10.1.0.0/16").unwrap();
        assert!(p.contains([10, 1, 255, 3]) && !p.contains([10, 2, 0, 1]));
        assert!(Prefix::parse("0.0.0.0/0").unwrap().contains([8, 8, 8, 8]));
        assert!(Prefix::parse("10.0.0.3").unwrap().contains([10, 0, 0, 3]));
        assert!(!Prefix::parse("10.0.0.3").unwrap().contains([10, 0, 0, 4]));
        assert!(Prefix::parse("10.0.0.0/33").is_none());
    }
}
