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
//! forwarding is on. Everything changed is undone at exit ([`Installed::teardown`]);
//! after a crash, `longpipe-gateway cleanup` removes the rules (the routes went with
//! the devices).

use crate::opts::Opts;
use crate::path::Prefix;
use longpipe_sys::cmd::ip;
use std::io;
use std::path::Path;

pub use longpipe_sys::cmd::link_exists;

/// The destinations the main table routes over `dev` (the clients behind it).
pub fn routes_over(dev: &str) -> io::Result<Vec<Prefix>> {
    let text = ip(&["-4", "route", "show", "dev", dev], None)?;
    Ok(parse_routes(&text))
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

/// The devices up with their MTU and queue length (`txqueuelen`: for a TUN device, the
/// ring of packets waiting for the reader), and one table per direction.
fn devices_batch(o: &Opts) -> String {
    let (c, s) = (o.dev_to_client(), o.dev_to_server());
    let mut batch = String::new();
    for d in [&c, &s] {
        batch += &format!(
            "link set dev {d} mtu {} txqueuelen {} up\n",
            o.mtu, o.dev_queue
        );
    }
    batch += &format!("route replace default dev {c} table {}\n", o.table);
    batch += &format!("route replace default dev {s} table {}\n", o.table + 1);
    batch
}

/// What was changed, to undo.
pub struct Installed {
    rules: Vec<String>,
    tables: [u32; 2],
    sysctls: Vec<(String, String)>,
    done: bool,
}

fn sysctl_path(k: &str) -> std::path::PathBuf {
    Path::new("/proc/sys/net").join(k)
}

fn set_sysctl(k: &str, v: &str, undo: &mut Vec<(String, String)>) -> io::Result<()> {
    let p = sysctl_path(k);
    let old = std::fs::read_to_string(&p)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
    let old = old.trim().to_string();
    if old == v {
        return Ok(());
    }
    std::fs::write(&p, v).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
    undo.push((k.to_string(), old));
    Ok(())
}

/// Devices up, tables, rules and sysctls (the devices must exist: open them first).
/// On failure, undoes what it did.
pub fn install(o: &Opts, clients: &[Prefix]) -> io::Result<Installed> {
    let mut inst = Installed {
        rules: vec![],
        tables: [o.table, o.table + 1],
        sysctls: vec![],
        done: false,
    };
    let r = (|| -> io::Result<()> {
        let (c, s) = (o.dev_to_client(), o.dev_to_server());
        ip(&["-batch", "-"], Some(&devices_batch(o)))?;
        for d in [&c, &s] {
            set_sysctl(&format!("ipv4/conf/{d}/rp_filter"), "0", &mut inst.sysctls)?;
        }
        let all = std::fs::read_to_string(sysctl_path("ipv4/conf/all/rp_filter"))?;
        if all.trim() == "1" {
            set_sysctl("ipv4/conf/all/rp_filter", "2", &mut inst.sysctls)?;
        }
        set_sysctl("ipv4/ip_forward", "1", &mut inst.sysctls)?;
        for rule in rules(o, clients) {
            let args: Vec<&str> = ["rule", "add"]
                .into_iter()
                .chain(rule.split_whitespace())
                .collect();
            ip(&args, None)?;
            inst.rules.push(rule);
        }
        Ok(())
    })();
    if let Err(e) = r {
        inst.teardown();
        return Err(e);
    }
    Ok(inst)
}

impl Installed {
    /// Rules out, tables flushed, sysctls back. Errors are reported, not fatal.
    pub fn teardown(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        for rule in self.rules.iter().rev() {
            let args: Vec<&str> = ["rule", "del"]
                .into_iter()
                .chain(rule.split_whitespace())
                .collect();
            if let Err(e) = ip(&args, None) {
                eprintln!("longpipe-gateway: teardown: {e}");
            }
        }
        for t in self.tables {
            let _ = ip(&["route", "flush", "table", &t.to_string()], None);
        }
        for (k, v) in self.sysctls.iter().rev() {
            if let Err(e) = std::fs::write(sysctl_path(k), v) {
                eprintln!("longpipe-gateway: teardown: {k}: {e}");
            }
        }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// After a crash: removes the rules a gateway with these options installed (those at
/// its preferences that look up its tables or name its devices, and its `iif lo` rule).
pub fn cleanup(o: &Opts) -> io::Result<Vec<String>> {
    let text = ip(&["rule", "show"], None)?;
    let mut removed = vec![];
    let (c, s) = (o.dev_to_client(), o.dev_to_server());
    for l in text.lines() {
        let Some((pref, rest)) = l.split_once(':') else {
            continue;
        };
        let Ok(pref) = pref.trim().parse::<u32>() else {
            continue;
        };
        if !(o.pref..=o.pref + 4).contains(&pref) {
            continue;
        }
        let rest = rest.trim();
        let ours = rest.ends_with(&format!("lookup {}", o.table))
            || rest.ends_with(&format!("lookup {}", o.table + 1))
            || rest.contains(&format!("iif {c} "))
            || rest.contains(&format!("iif {s} "))
            || (pref == o.pref && rest == "from all iif lo lookup main");
        if !ours {
            continue;
        }
        let mut args = vec![
            "rule".to_string(),
            "del".into(),
            "pref".into(),
            pref.to_string(),
        ];
        args.extend(rest.split_whitespace().map(String::from));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        ip(&a, None)?;
        removed.push(format!("{pref}: {rest}"));
    }
    for t in [o.table, o.table + 1] {
        let _ = ip(&["route", "flush", "table", &t.to_string()], None);
    }
    Ok(removed)
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
    fn the_devices_get_the_mtu_and_queue_asked_for() {
        let o = Opts {
            uplink: "sat0".into(),
            mtu: 1400,
            dev_queue: 4096,
            ..Opts::default()
        };
        assert_eq!(
            devices_batch(&o),
            "link set dev lpgwc mtu 1400 txqueuelen 4096 up\n\
             link set dev lpgws mtu 1400 txqueuelen 4096 up\n\
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
