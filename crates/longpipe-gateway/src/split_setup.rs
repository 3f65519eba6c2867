//! Split mode's set-up (root, in the parent): the transparent listener, an nftables
//! table of the daemon's own that diverts the clients' TCP to it (TPROXY), and the
//! policy routing that delivers the marked packets locally:
//!
//! ```text
//! table ip NAME {                                  # owned by the daemon: deleted at exit
//!   chain divert {
//!     type filter hook prerouting priority mangle; policy accept;
//!     meta l4proto tcp socket transparent 1 meta mark set MARK accept
//!     iifname "UPLINK" tcp flags & (syn | ack) == syn ip saddr { CLIENTS }
//!         [tcp dport != { EXCLUDED PORTS }] [ip daddr != { EXCLUDED HOSTS }]
//!         fib daddr type != local tproxy to 127.0.0.1:PORT meta mark set MARK accept
//!   }
//! }
//! ip rule add pref PREF fwmark MARK lookup TABLE
//! ip route add local 0.0.0.0/0 dev lo table TABLE
//! ```
//!
//! (`MARK` = `TABLE`, default 7450.) The first rule catches the packets of the relay's
//! own transparent sockets — the servers' answers to a client's address, and the
//! clients' packets of the connections the relay accepted — the second hands a
//! client's *new* connection (its opening SYN) to the listener. Connections already in
//! progress when the daemon starts have no socket here and are not SYNs: they are
//! forwarded as before (before 2026-12, every packet was diverted and their next
//! segments met a listener that reset them). Everything else is forwarded as before.
//!
//! The relay's sockets are the router's TCP: the namespace's `tcp_sack`,
//! `tcp_timestamps` and `tcp_window_scaling` apply to them and no socket option sets
//! them, so the daemon turns off ones on (recorded, restored at exit, said in one
//! line); with `tcp_sack = 0` a download took 156.7 s instead of 14.1 s.
//!
//! The listener carries what the satellite leg needs, set as root so that the accepted
//! sockets inherit it: `IP_TRANSPARENT`, `TCP_CONGESTION` (root may pick any congestion
//! control the kernel has; an unprivileged process only those in
//! `tcp_allowed_congestion_control`), and `SO_SNDBUFFORCE`/`SO_RCVBUFFORCE` (above
//! `wmem_max`/`rmem_max`; set before `listen`, so the window scale fits).

use crate::opts::Opts;
use crate::path::Prefix;
use crate::state::Record;
use longpipe_sys::cmd::run;
use longpipe_sys::sys;
use longpipe_sys::sysctl;
use std::io;
use std::os::fd::OwnedFd;

/// `IP_TRANSPARENT` (linux/in.h).
pub const IP_TRANSPARENT: i32 = 19;

/// The nftables ruleset the daemon loads (one table of its own).
pub fn ruleset(o: &Opts, clients: &[Prefix]) -> String {
    let join = |v: Vec<String>| v.join(", ");
    let set = join(clients.iter().map(|p| p.to_string()).collect());
    let mut excluded = String::new();
    if !o.exclude_ports.is_empty() {
        let ports = join(o.exclude_ports.iter().map(|p| p.to_string()).collect());
        excluded += &format!("tcp dport != {{ {ports} }} tcp sport != {{ {ports} }} ");
    }
    if !o.exclude_hosts.is_empty() {
        let hosts = join(o.exclude_hosts.iter().map(|p| p.to_string()).collect());
        excluded += &format!("ip daddr != {{ {hosts} }} ip saddr != {{ {hosts} }} ");
    }
    format!(
        "table ip {name} {{\n  chain divert {{\n    type filter hook prerouting priority mangle; policy accept;\n    \
         meta l4proto tcp socket transparent 1 meta mark set {mark} accept\n    \
         iifname \"{up}\" tcp flags & (syn | ack) == syn ip saddr {{ {set} }} {excluded}fib daddr type != local \
         tproxy to 127.0.0.1:{port} meta mark set {mark} accept\n  }}\n}}\n",
        name = o.name,
        mark = o.table,
        up = o.uplink,
        port = o.port,
    )
}

/// The router's TCP settings the relay's sockets need and cannot set for themselves:
/// (sysctl, value).
pub const ROUTER_TCP: [(&str, &str); 3] = [
    ("ipv4/tcp_sack", "1"),
    ("ipv4/tcp_timestamps", "1"),
    ("ipv4/tcp_window_scaling", "1"),
];

/// The congestion controls the kernel offers.
pub fn available_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `--cc auto` (the default): the congestion controls tried for the satellite leg, in
/// order; if the kernel has none of them the leg keeps the kernel's default
/// (`net.ipv4.tcp_congestion_control`, cubic unless changed).
/// - `hybla`: the simulated split leg's default (`node[].gateway.tcp`,
///   docs/notes/gateway-sharing.md), made for this leg: its window grows per round trip
///   as a 25 ms connection's would (Caini & Firrincieli, paper [001]; `tcp_hybla.c`).
///   Many kernels build it as a module only (`CONFIG_TCP_CONG_HYBLA=m`), some not at all.
/// - `bbr`: its growth does not depend on the round trip and it does not take a random
///   loss for congestion (Cardwell et al. 2016; `tcp_bbr.c`), the property that matters on
///   a long, lossy leg when Hybla is missing.
pub const AUTO_CC: [&str; 2] = ["hybla", "bbr"];

/// What the ready line adds after the satellite leg's congestion control `actual`: why
/// it is that one when `--cc auto` chose it.
pub fn cc_note(o: &Opts, actual: &str) -> String {
    if o.cc != "auto" {
        return String::new();
    }
    match AUTO_CC.iter().position(|&c| c == actual) {
        Some(0) => " (--cc auto)".to_string(),
        Some(i) => format!(
            " (--cc auto: this kernel has no {}; {actual} next)",
            AUTO_CC[..i].join(" nor ")
        ),
        None => format!(
            " (--cc auto: this kernel has no {}; its default)",
            AUTO_CC.join(" nor ")
        ),
    }
}

/// Sets the satellite leg's congestion control on the listener (`--cc`; see
/// [`AUTO_CC`] for `auto`). An explicit name the kernel refuses is an error naming it.
fn set_cc(s: &OwnedFd, o: &Opts) -> Result<(), String> {
    let set =
        |cc: &str| sys::setsockopt_bytes(s, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_bytes());
    if o.cc == "auto" {
        // the first the kernel has (setting one loads its module if it can); none: its
        // default stays
        let _ = AUTO_CC.iter().find(|cc| set(cc).is_ok());
        return Ok(());
    }
    set(&o.cc).map_err(|e| {
        format!(
            "--cc {:?}: the kernel refuses it ({e}; available: {})",
            o.cc,
            available_cc()
        )
    })
}

/// The transparent listener on 127.0.0.1:PORT with the satellite leg's congestion
/// control and buffers (`window` bytes each way). Errors name the option.
pub fn listener(o: &Opts, window: u64) -> Result<OwnedFd, String> {
    let s = sys::tcp_socket().map_err(|e| format!("socket: {e}"))?;
    sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    sys::setsockopt_int(&s, libc::SOL_IP, IP_TRANSPARENT, 1)
        .map_err(|e| format!("IP_TRANSPARENT: {e}"))?;
    set_cc(&s, o)?;
    let w = i32::try_from(window).unwrap_or(i32::MAX / 2);
    for opt in [libc::SO_SNDBUFFORCE, libc::SO_RCVBUFFORCE] {
        sys::setsockopt_int(&s, libc::SOL_SOCKET, opt, w)
            .map_err(|e| format!("--window: cannot set the socket buffers: {e}"))?;
    }
    sys::bind_v4(&s, [127, 0, 0, 1], o.port)
        .map_err(|e| format!("--port {}: cannot listen on 127.0.0.1: {e}", o.port))?;
    sys::listen(&s, 1024).map_err(|e| format!("--port {}: listen: {e}", o.port))?;
    Ok(s)
}

/// Loads the nftables table, adds the rule and the local route, and turns on the
/// router's TCP options the relay needs; each recorded in `rec` (saved) before it is
/// made. Returns the sysctls it changed, to say so. On failure the caller undoes what
/// `rec` lists.
pub fn install(o: &Opts, clients: &[Prefix], rec: &mut Record) -> io::Result<Vec<String>> {
    rec.route_tables = vec![o.table];
    rec.save()?;
    run(
        "ip",
        &[
            "route",
            "replace",
            "local",
            "0.0.0.0/0",
            "dev",
            "lo",
            "table",
            &o.table.to_string(),
        ],
        None,
    )?;
    let rule = format!("pref {} fwmark {} lookup {}", o.pref, o.table, o.table);
    crate::setup::add_rule(&rule, rec)?;
    rec.nft_table = Some(o.name.clone());
    rec.save()?;
    run("nft", &["-f", "-"], Some(&ruleset(o, clients)))?;
    let mut changed = vec![];
    for (k, v) in ROUTER_TCP {
        let old = sysctl::read(k)?;
        if old != v {
            rec.sysctls
                .push((k.to_string(), old.clone(), v.to_string()));
            rec.save()?;
            sysctl::write(k, v)?;
            changed.push(format!("{k} {old} -> {v}"));
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ruleset_diverts_only_the_clients_tcp_from_the_uplink() {
        let o = Opts {
            uplink: "sat0".into(),
            port: 7001,
            ..Opts::default()
        };
        let r = ruleset(&o, &[Prefix([10, 1, 0, 0], 16), Prefix([10, 2, 0, 7], 32)]);
        assert!(r.starts_with("table ip lpgw {"), "{r}");
        assert!(
            r.contains(
                "iifname \"sat0\" tcp flags & (syn | ack) == syn ip saddr { 10.1.0.0/16, 10.2.0.7/32 } \
                 fib daddr type != local tproxy to 127.0.0.1:7001 meta mark set 7450 accept"
            ),
            "{r}"
        );
        let o = Opts {
            exclude_ports: vec![22, 443],
            exclude_hosts: vec![Prefix([192, 0, 2, 0], 24)],
            ..o
        };
        let r = ruleset(&o, &[Prefix([10, 1, 0, 0], 16)]);
        assert!(
            r.contains(
                "ip saddr { 10.1.0.0/16 } tcp dport != { 22, 443 } tcp sport != { 22, 443 } \
                 ip daddr != { 192.0.2.0/24 } ip saddr != { 192.0.2.0/24 } fib daddr"
            ),
            "{r}"
        );
        assert!(r.contains("socket transparent 1 meta mark set 7450 accept"));
        assert!(r.contains("hook prerouting priority mangle"));
    }
}
