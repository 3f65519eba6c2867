//! The router's side of the set-up, with iproute2 (`ip`), as a user would type it:
//! the two TUN devices up, one routing table per direction whose only route is the
//! device, and policy rules that send transit TCP through them:
//!
//! ```text
//! PREF+0  iif lo        lookup main                  # the router's own traffic
//! PREF+1  iif NAMEc     lookup main                  # what the daemon writes
//! PREF+2  iif NAMEs     lookup main
//! PREF+3  iif UPLINK ipproto tcp lookup TABLE+1      # from the satellite: NAMEs
//! PREF+4  to CLIENT ipproto tcp  lookup TABLE        # toward the clients: NAMEc
//! ```
//!
//! Reverse-path filtering is off on the two devices (a packet written there has the
//! far end's source address) and at most loose overall (`all` = 1 becomes 2);
//! forwarding is on. Every change is recorded in the instance's state file before it
//! is made ([`crate::state`]); at exit, after a crash (by the next start or
//! `longpipe-gateway cleanup`) exactly what it lists is undone.

use crate::opts::Opts;
use crate::path::Prefix;
use crate::state::Record;
use longpipe_sys::cmd::ip;
use longpipe_sys::sysctl;
use std::io;

pub use longpipe_sys::cmd::link_exists;

/// The destinations the main table routes over `dev` (the clients behind it).
pub fn routes_over(dev: &str) -> io::Result<Vec<Prefix>> {
    let text = ip(&["-4", "route", "show", "dev", dev], None)?;
    Ok(parse_routes(&text))
}

/// IPv6 destinations routed over `dev` other than link-local ones: traffic the gateway
/// does not accelerate (it passes unchanged).
pub fn ipv6_routes_over(dev: &str) -> Vec<String> {
    ip(&["-6", "route", "show", "dev", dev], None)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|d| !d.starts_with("fe80:") && !d.starts_with("ff00:") && *d != "multicast")
        .map(String::from)
        .collect()
}

fn parse_routes(text: &str) -> Vec<Prefix> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|d| {
            if d == "default" {
                Some(Prefix([0, 0, 0, 0], 0))
            } else {
                Prefix::parse(d)
            }
        })
        .collect()
}

fn rules(o: &Opts, clients: &[Prefix]) -> Vec<String> {
    let (p, t) = (o.pref, o.table);
    let mut v = vec![
        format!("pref {p} iif lo lookup main"),
        format!("pref {} iif {} lookup main", p + 1, o.dev_to_client()),
        format!("pref {} iif {} lookup main", p + 2, o.dev_to_server()),
        format!(
            "pref {} iif {} ipproto tcp lookup {}",
            p + 3,
            o.uplink,
            t + 1
        ),
    ];
    for c in clients {
        v.push(format!("pref {} to {c} ipproto tcp lookup {t}", p + 4));
    }
    v
}

/// The devices up with their MTU, and one table per direction. (Their queue length is
/// set apart: [`queue_len`].)
fn devices_batch(o: &Opts) -> String {
    let (c, s) = (o.dev_to_client(), o.dev_to_server());
    let mut batch = String::new();
    for d in [&c, &s] {
        batch += &format!("link set dev {d} mtu {} up\n", o.mtu);
    }
    batch += &format!("route replace default dev {c} table {}\n", o.table);
    batch += &format!("route replace default dev {s} table {}\n", o.table + 1);
    batch
}

/// The devices' queues (`txqueuelen`: for a TUN device, the ring of packets waiting for
/// the reader): the user's choice, so a refusal is the user's error (one line).
pub fn queue_len(o: &Opts) -> Result<(), String> {
    for d in [o.dev_to_client(), o.dev_to_server()] {
        let q = o.dev_queue.to_string();
        ip(&["link", "set", "dev", &d, "txqueuelen", &q], None).map_err(|e| {
            format!(
                "--dev-queue {q}: the kernel refused it for the TUN device {d} ({}); at most \
                 {} on this kernel",
                e.to_string().rsplit(": ").next().unwrap_or("").trim(),
                crate::opts::DEV_QUEUE_MAX
            )
        })?;
    }
    Ok(())
}

/// Sets a sysctl, recording the change in the instance's record before it is made (a
/// crash in between leaves nothing unrecorded; undoing a change that was not made
/// leaves the value alone).
fn set_sysctl(key: &str, v: &str, rec: &mut Record) -> io::Result<()> {
    let old = sysctl::read(key)?;
    if old == v {
        return Ok(());
    }
    rec.sysctls.push((key.to_string(), old, v.to_string()));
    rec.save()?;
    sysctl::write(key, v)
}

/// Adds a policy rule, recorded first.
pub fn add_rule(rule: &str, rec: &mut Record) -> io::Result<()> {
    rec.rules.push(rule.to_string());
    rec.save()?;
    let args: Vec<&str> = ["rule", "add"]
        .into_iter()
        .chain(rule.split_whitespace())
        .collect();
    ip(&args, None).map(|_| ())
}

/// Devices up, tables, rules and sysctls (the devices must exist: open them first),
/// each recorded in `rec` (saved) before it is made. On failure the caller undoes what
/// `rec` lists ([`crate::state::undo`]).
pub fn install(o: &Opts, clients: &[Prefix], rec: &mut Record) -> io::Result<()> {
    let (c, s) = (o.dev_to_client(), o.dev_to_server());
    rec.devices = vec![c.clone(), s.clone()];
    rec.route_tables = vec![o.table, o.table + 1];
    rec.save()?;
    ip(&["-batch", "-"], Some(&devices_batch(o)))?;
    for d in [&c, &s] {
        set_sysctl(&format!("ipv4/conf/{d}/rp_filter"), "0", rec)?;
    }
    if sysctl::read("ipv4/conf/all/rp_filter")? == "1" {
        set_sysctl("ipv4/conf/all/rp_filter", "2", rec)?;
    }
    set_sysctl("ipv4/ip_forward", "1", rec)?;
    for rule in rules(o, clients) {
        add_rule(&rule, rec)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_over_the_uplink_are_the_clients() {
        let text = "10.0.0.3 scope link src 10.0.0.1\n10.1.0.0/16 via 10.0.0.3\ndefault via 192.0.2.1 proto static\n";
        assert_eq!(
            parse_routes(text),
            vec![
                Prefix([10, 0, 0, 3], 32),
                Prefix([10, 1, 0, 0], 16),
                Prefix([0, 0, 0, 0], 0)
            ]
        );
    }

    #[test]
    fn the_devices_get_the_mtu_asked_for() {
        let o = Opts {
            uplink: "sat0".into(),
            mtu: 1400,
            dev_queue: 4096,
            ..Opts::default()
        };
        assert_eq!(
            devices_batch(&o),
            "link set dev lpgwc mtu 1400 up\n\
             link set dev lpgws mtu 1400 up\n\
             route replace default dev lpgwc table 7450\n\
             route replace default dev lpgws table 7451\n"
        );
    }

    #[test]
    fn the_rules_send_transit_tcp_through_the_devices_and_nothing_else() {
        let o = Opts {
            uplink: "sat0".into(),
            ..Opts::default()
        };
        let r = rules(&o, &[Prefix([10, 1, 0, 0], 16)]);
        assert_eq!(
            r,
            vec![
                "pref 7450 iif lo lookup main",
                "pref 7451 iif lpgwc lookup main",
                "pref 7452 iif lpgws lookup main",
                "pref 7453 iif sat0 ipproto tcp lookup 7451",
                "pref 7454 to 10.1.0.0/16 ipproto tcp lookup 7450",
            ]
        );
    }
}
