//! Split mode's set-up (root, in the parent): the transparent listener, an nftables
//! table of the daemon's own that diverts the clients' TCP to it (TPROXY), and the
//! policy routing that delivers the marked packets locally:
//!
//! ```text
//! table ip NAME {                                  # owned by the daemon: deleted at exit
//!   chain divert {
//!     type filter hook prerouting priority mangle; policy accept;
//!     meta l4proto tcp socket transparent 1 meta mark set MARK accept
//!     iifname "UPLINK" meta l4proto tcp ip saddr { CLIENTS } fib daddr type != local
//!         tproxy to 127.0.0.1:PORT meta mark set MARK accept
//!   }
//! }
//! ip rule add pref PREF fwmark MARK lookup TABLE
//! ip route add local 0.0.0.0/0 dev lo table TABLE
//! ```
//!
//! (`MARK` = `TABLE`, default 7450.) The first rule catches the packets of the relay's
//! own transparent sockets — the servers' answers to a client's address — the second
//! hands a client's connection to the listener. No sysctl changes: intercepted
//! connections end at the router; everything else is forwarded as before.
//!
//! The listener carries what the satellite leg needs, set as root so that the accepted
//! sockets inherit it: `IP_TRANSPARENT`, `TCP_CONGESTION` (root may pick any congestion
//! control the kernel has; an unprivileged process only those in
//! `tcp_allowed_congestion_control`), and `SO_SNDBUFFORCE`/`SO_RCVBUFFORCE` (above
//! `wmem_max`/`rmem_max`; set before `listen`, so the window scale fits).

use crate::opts::Opts;
use crate::path::Prefix;
use longpipe_sys::cmd::run;
use longpipe_sys::sys;
use std::io;
use std::os::fd::OwnedFd;

/// `IP_TRANSPARENT` (linux/in.h).
pub const IP_TRANSPARENT: i32 = 19;

/// The nftables ruleset the daemon loads (one table of its own).
pub fn ruleset(o: &Opts, clients: &[Prefix]) -> String {
    let set = clients
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "table ip {name} {{\n  chain divert {{\n    type filter hook prerouting priority mangle; policy accept;\n    \
         meta l4proto tcp socket transparent 1 meta mark set {mark} accept\n    \
         iifname \"{up}\" meta l4proto tcp ip saddr {{ {set} }} fib daddr type != local \
         tproxy to 127.0.0.1:{port} meta mark set {mark} accept\n  }}\n}}\n",
        name = o.name,
        mark = o.table,
        up = o.uplink,
        port = o.port,
    )
}

/// The congestion controls the kernel offers.
pub fn available_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The transparent listener on 127.0.0.1:PORT with the satellite leg's congestion
/// control and buffers (`window` bytes each way). Errors name the option.
pub fn listener(o: &Opts, window: u64) -> Result<OwnedFd, String> {
    let s = sys::tcp_socket().map_err(|e| format!("socket: {e}"))?;
    sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    sys::setsockopt_int(&s, libc::SOL_IP, IP_TRANSPARENT, 1)
        .map_err(|e| format!("IP_TRANSPARENT: {e}"))?;
    sys::setsockopt_bytes(&s, libc::IPPROTO_TCP, libc::TCP_CONGESTION, o.cc.as_bytes()).map_err(
        |e| {
            format!(
                "--cc {:?}: the kernel refuses it ({e}; available: {})",
                o.cc,
                available_cc()
            )
        },
    )?;
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

/// What was installed, to undo.
pub struct Installed {
    table: Option<String>,
    rule: Option<String>,
    route_table: u32,
    done: bool,
}

/// Loads the nftables table, adds the rule and the local route. On failure, undoes
/// what it did.
pub fn install(o: &Opts, clients: &[Prefix]) -> io::Result<Installed> {
    let mut inst = Installed {
        table: None,
        rule: None,
        route_table: o.table,
        done: false,
    };
    let r = (|| -> io::Result<()> {
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
        let args: Vec<&str> = ["rule", "add"]
            .into_iter()
            .chain(rule.split_whitespace())
            .collect();
        run("ip", &args, None)?;
        inst.rule = Some(rule);
        run("nft", &["-f", "-"], Some(&ruleset(o, clients)))?;
        inst.table = Some(o.name.clone());
        Ok(())
    })();
    if let Err(e) = r {
        inst.teardown();
        return Err(e);
    }
    Ok(inst)
}

impl Installed {
    /// The table deleted, the rule removed, the route table flushed. Errors reported.
    pub fn teardown(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if let Some(t) = &self.table {
            if let Err(e) = run("nft", &["delete", "table", "ip", t], None) {
                eprintln!("longpipe-gateway: teardown: {e}");
            }
        }
        if let Some(rule) = &self.rule {
            let args: Vec<&str> = ["rule", "del"]
                .into_iter()
                .chain(rule.split_whitespace())
                .collect();
            if let Err(e) = run("ip", &args, None) {
                eprintln!("longpipe-gateway: teardown: {e}");
            }
        }
        let _ = run(
            "ip",
            &["route", "flush", "table", &self.route_table.to_string()],
            None,
        );
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// After a crash: deletes the nftables table `ip NAME` if there is one (a table of that
/// name is the daemon's: it creates it whole and deletes it whole). `Ok(None)`: none,
/// or no `nft` command (then there cannot be one of ours either).
pub fn cleanup(o: &Opts) -> io::Result<Option<String>> {
    match run("nft", &["list", "table", "ip", &o.name], None) {
        Ok(_) => {
            run("nft", &["delete", "table", "ip", &o.name], None)?;
            Ok(Some(format!("nftables table ip {}", o.name)))
        }
        Err(_) => Ok(None),
    }
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
                "iifname \"sat0\" meta l4proto tcp ip saddr { 10.1.0.0/16, 10.2.0.7/32 } \
                 fib daddr type != local tproxy to 127.0.0.1:7001 meta mark set 7450 accept"
            ),
            "{r}"
        );
        assert!(r.contains("socket transparent 1 meta mark set 7450 accept"));
        assert!(r.contains("hook prerouting priority mangle"));
    }
}
