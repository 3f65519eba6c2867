//! What an instance set up, on disk: a state file per instance, so that a cleanup —
//! after a crash, by the next start, or by `longpipe gateway cleanup` — undoes exactly
//! what that instance did and nothing else, and so that no instance touches another's
//! set-up while it runs.
//!
//! An instance is named by its network namespace and `--name`: the file is
//! `STATE_DIR/NETNS-NAME.json` (`STATE_DIR`: `$LONGPIPE_GATEWAY_STATE` or
//! `/run/longpipe-gateway`, a tmpfs: gone after a reboot, as is the set-up). It holds the
//! parent's and the packet loop's identities (pid and start time: a reused pid is not
//! the instance) and everything changed: the policy rules as they were added, the
//! routing tables filled, each sysctl with the value it replaced and the value written,
//! the nftables table, the devices. It is written before anything is changed and after
//! each step (atomically: a new file renamed over the old).
//!
//! [`owner`] says who holds a name: nobody, a running instance (its parent lives: refuse
//! to start, refuse to clean up), a packet loop draining after its parent died (wait for
//! it), or a dead instance (undo what its file lists, [`undo`]). Undoing is idempotent:
//! a rule or table already gone is not an error, a sysctl someone changed since is left
//! alone.
//!
//! Beside it, `NETNS-NAME.conns` is the packet loop's snapshot of its connections
//! ([`Snapshot`]): written by the loop (through a descriptor the parent opened) once a
//! second and whenever connections came or went; read by `longpipe gateway status`,
//! and by the parent when the loop died, to have its successor reset them.

use crate::opts::{Mode, Opts};
use longpipe_sys::{cmd, procs, sysctl};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

pub const VERSION: u32 = 1;

/// Where state files are kept.
pub fn state_dir() -> PathBuf {
    std::env::var_os("LONGPIPE_GATEWAY_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/longpipe-gateway"))
}

/// This network namespace's part of a state file's name: the namespace's inode number.
pub fn netns_tag() -> String {
    let id = procs::netns_id().unwrap_or_default();
    let digits: String = id.chars().filter(char::is_ascii_digit).collect();
    if digits.is_empty() {
        "0".into()
    } else {
        digits
    }
}

/// The state file of instance `name` in this network namespace.
pub fn path(name: &str) -> PathBuf {
    state_dir().join(format!("{}-{name}.json", netns_tag()))
}

/// Its connection snapshot.
pub fn conns_path(name: &str) -> PathBuf {
    state_dir().join(format!("{}-{name}.conns", netns_tag()))
}

/// An instance's record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub version: u32,
    pub name: String,
    pub mode: Mode,
    pub uplink: String,
    pub table: u32,
    pub pref: u32,
    /// The namespace (`net:[INODE]`).
    pub netns: String,
    /// The privileged parent and the packet loop: (pid, start time in ticks).
    pub parent: procs::Pid,
    pub worker: Option<procs::Pid>,
    /// Wall-clock start, seconds since 1970.
    pub started: u64,
    /// Policy rules added, each as given to `ip rule add`, in order.
    pub rules: Vec<String>,
    /// Routing tables filled (flushed when undone).
    pub route_tables: Vec<u32>,
    /// Sysctls changed: (key under /proc/sys/net, value before, value written).
    pub sysctls: Vec<sysctl::Change>,
    /// The nftables table `ip NAME` (split mode).
    pub nft_table: Option<String>,
    /// TUN devices (they vanish with the last descriptor).
    pub devices: Vec<String>,
    pub metrics: Option<String>,
    /// Restarts of the packet loop so far.
    pub restarts: u32,
}

impl Record {
    /// A record for a new instance of `o`, by this process.
    pub fn new(o: &Opts) -> Record {
        Record {
            version: VERSION,
            name: o.name.clone(),
            mode: o.mode,
            uplink: o.uplink.clone(),
            table: o.table,
            pref: o.pref,
            netns: procs::netns_id().unwrap_or_default(),
            parent: procs::me(),
            worker: None,
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            rules: vec![],
            route_tables: vec![],
            sysctls: vec![],
            nft_table: None,
            devices: vec![],
            metrics: o.metrics.clone(),
            restarts: 0,
        }
    }

    /// Writes it atomically (a new file renamed over the old one).
    pub fn save(&self) -> io::Result<()> {
        let dir = state_dir();
        fs::create_dir_all(&dir)?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        let p = path(&self.name);
        let tmp = p.with_extension("json.tmp");
        fs::write(
            &tmp,
            serde_json::to_string_pretty(self).map_err(io::Error::other)?,
        )?;
        fs::rename(&tmp, &p)
    }

    pub fn load(name: &str) -> io::Result<Option<Record>> {
        match fs::read_to_string(path(name)) {
            Ok(t) => serde_json::from_str(&t)
                .map(Some)
                .map_err(|e| io::Error::other(format!("{}: {e}", path(name).display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Who holds an instance name in this namespace.
#[derive(Debug, Clone, PartialEq)]
pub enum Owner {
    /// No state file.
    Nobody,
    /// Its parent runs.
    Running(Record),
    /// Its parent is gone, its packet loop still runs (draining, then it stops).
    Draining(Record),
    /// Neither runs: its set-up is left over.
    Dead(Record),
}

pub fn owner(name: &str) -> io::Result<Owner> {
    let Some(r) = Record::load(name)? else {
        return Ok(Owner::Nobody);
    };
    Ok(if procs::alive(r.parent) {
        Owner::Running(r)
    } else if r.worker.is_some_and(procs::alive) {
        Owner::Draining(r)
    } else {
        Owner::Dead(r)
    })
}

/// Waits up to `most` for a draining packet loop to end; true if it did.
pub fn wait_gone(w: procs::Pid, most: Duration) -> bool {
    let t = std::time::Instant::now();
    while procs::alive(w) {
        if t.elapsed() > most {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Whether an `ip` error says the thing is not there (undoing is idempotent).
fn absent(e: &io::Error) -> bool {
    let m = e.to_string();
    m.contains("No such file or directory")
        || m.contains("No such process")
        || m.contains("does not exist")
        || m.contains("Cannot find device")
}

/// Undoes what `r` lists, in reverse order, and removes its files; what was undone, one
/// line each. Errors other than "already gone" are collected and returned after
/// everything else was tried.
pub fn undo(r: &Record) -> Result<Vec<String>, String> {
    let mut done = vec![];
    let mut errs = vec![];
    if let Some(t) = &r.nft_table {
        match cmd::nft(&["delete", "table", "ip", t], None) {
            Ok(_) => done.push(format!("nftables table ip {t}")),
            Err(e) if absent(&e) || !cmd::have("nft", "--version") => {}
            Err(e) => errs.push(e.to_string()),
        }
    }
    for rule in r.rules.iter().rev() {
        let args: Vec<&str> = ["rule", "del"]
            .into_iter()
            .chain(rule.split_whitespace())
            .collect();
        match cmd::ip(&args, None) {
            Ok(_) => done.push(format!("rule {rule}")),
            Err(e) if absent(&e) => {}
            Err(e) => errs.push(e.to_string()),
        }
    }
    for t in &r.route_tables {
        let t = t.to_string();
        let had = cmd::ip(&["route", "show", "table", &t], None)
            .map(|o| !o.trim().is_empty())
            .unwrap_or(false);
        match cmd::ip(&["route", "flush", "table", &t], None) {
            Ok(_) if had => done.push(format!("routes of table {t}")),
            Ok(_) => {}
            Err(e) if absent(&e) => {}
            Err(e) => errs.push(e.to_string()),
        }
    }
    for c in r.sysctls.iter().rev() {
        match sysctl::restore(c) {
            Ok(true) => done.push(format!("sysctl {} = {} (was {})", c.0, c.1, c.2)),
            Ok(false) => {}
            Err(e) => errs.push(e.to_string()),
        }
    }
    let _ = fs::remove_file(conns_path(&r.name));
    match fs::remove_file(path(&r.name)) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => errs.push(format!("{}: {e}", path(&r.name).display())),
    }
    if errs.is_empty() {
        Ok(done)
    } else {
        Err(errs.join("; "))
    }
}

/// Policy rules at preferences `prefs` in this namespace (`ip rule show` lines).
pub fn rules_at(prefs: std::ops::RangeInclusive<u32>) -> io::Result<Vec<String>> {
    let text = cmd::ip(&["rule", "show"], None)?;
    Ok(text
        .lines()
        .filter(|l| {
            l.split_once(':')
                .and_then(|(p, _)| p.trim().parse::<u32>().ok())
                .is_some_and(|p| prefs.contains(&p))
        })
        .map(|l| l.trim().to_string())
        .collect())
}

/// What would be another's: rules at this instance's preferences, an nftables table or
/// devices of its names, that no state file of it lists. None: the way is clear.
pub fn foreign(o: &Opts) -> Option<String> {
    let prefs = match o.mode {
        Mode::Spoof => o.pref..=o.pref + 4,
        Mode::Split => o.pref..=o.pref,
    };
    if let Ok(r) = rules_at(prefs.clone()) {
        if !r.is_empty() {
            return Some(format!(
                "policy rules at preferences {}-{} exist ({}) and no state file of --name {} \
                 lists them: choose another --pref, or remove them",
                prefs.start(),
                prefs.end(),
                r.join("; "),
                o.name
            ));
        }
    }
    for t in [o.table, o.table + 1] {
        let out = cmd::ip(&["route", "show", "table", &t.to_string()], None).unwrap_or_default();
        if !out.trim().is_empty() {
            return Some(format!(
                "routing table {t} is not empty and no state file of --name {} lists it: \
                 choose another --table",
                o.name
            ));
        }
    }
    if o.mode == Mode::Spoof {
        for d in [o.dev_to_client(), o.dev_to_server()] {
            if cmd::link_exists(&d) {
                return Some(format!(
                    "a device {d} exists: choose another --name (another program's, or a \
                     packet loop still running)"
                ));
            }
        }
    }
    if o.mode == Mode::Split
        && cmd::have("nft", "--version")
        && cmd::nft(&["list", "table", "ip", &o.name], None).is_ok()
    {
        return Some(format!(
            "an nftables table ip {} exists and no state file lists it: choose another --name",
            o.name
        ));
    }
    None
}

/// A connection in the packet loop's snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConnEntry {
    /// "10.0.0.1:8080".
    pub server: String,
    pub client: String,
    pub state: String,
    /// Spoof mode: bytes held for the client; split mode: bytes buffered both ways.
    pub held: u64,
    /// Bytes the server saw acknowledged that the client has not (spoof mode; split
    /// mode: the same as `held` toward the client).
    pub acked_undelivered: u64,
    /// Segments resent toward the client (spoof mode).
    pub resent: u64,
    /// Spoof mode: the sequence number each side expects next (what a RST to it must
    /// carry).
    #[serde(default)]
    pub client_rcv_nxt: Option<u32>,
    #[serde(default)]
    pub server_rcv_nxt: Option<u32>,
}

/// The packet loop's snapshot of its connections.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Snapshot {
    pub pid: u32,
    pub mode: String,
    pub uptime_s: f64,
    /// Stopping (a signal, or the parent is gone).
    pub draining: bool,
    /// Handshakes in progress (spoof mode).
    pub half_open: u64,
    pub conns: Vec<ConnEntry>,
}

impl Snapshot {
    /// Reads a snapshot; a torn one (the loop was writing) is read again, a few times.
    pub fn read(name: &str) -> io::Result<Option<Snapshot>> {
        for _ in 0..10 {
            match fs::read(conns_path(name)) {
                Ok(b) if b.is_empty() => {}
                Ok(b) => {
                    if let Ok(s) = serde_json::from_slice(&b) {
                        return Ok(Some(s));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        Ok(None)
    }
}

/// `longpipe gateway status`: the instance and its connections as a table.
pub fn render_status(r: &Record, s: Option<&Snapshot>, now_unix: u64) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let up = now_unix.saturating_sub(r.started);
    let _ = write!(
        o,
        "longpipe-gateway --name {}: pid {}{}, mode {}, uplink {}, up {up} s, {} restart(s)",
        r.name,
        r.parent.0,
        r.worker
            .map_or(String::new(), |w| format!(" (packet loop {})", w.0)),
        match r.mode {
            Mode::Spoof => "spoof",
            Mode::Split => "split",
        },
        r.uplink,
        r.restarts,
    );
    let Some(s) = s else {
        o.push_str("; no connection snapshot yet\n");
        return o;
    };
    let held: u64 = s.conns.iter().map(|c| c.held).sum();
    let undelivered: u64 = s.conns.iter().map(|c| c.acked_undelivered).sum();
    let _ = writeln!(
        o,
        "; {} connection(s), {} handshake(s) in progress, {held} B held, {undelivered} B \
         acknowledged and not delivered{}",
        s.conns.len(),
        s.half_open,
        if s.draining { "; draining" } else { "" }
    );
    if !s.conns.is_empty() {
        let _ = writeln!(
            o,
            "{:<21} {:<21} {:<12} {:>10} {:>12} {:>7}",
            "server", "client", "state", "held B", "acked,undel", "resent"
        );
        for c in &s.conns {
            let _ = writeln!(
                o,
                "{:<21} {:<21} {:<12} {:>10} {:>12} {:>7}",
                c.server, c.client, c.state, c.held, c.acked_undelivered, c.resent
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_its_namespace_and_survives_a_round_trip() {
        let o = Opts {
            uplink: "sat0".into(),
            ..Opts::default()
        };
        let r = Record::new(&o);
        assert_eq!(r.parent, procs::me());
        assert!(r.netns.starts_with("net:["));
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&j).unwrap(), r);
        assert!(path("lpgw")
            .to_string_lossy()
            .ends_with(&format!("{}-lpgw.json", netns_tag())));
        assert!(netns_tag().chars().all(|c| c.is_ascii_digit()));
    }

    #[test]
    fn status_lists_every_connection() {
        let o = Opts {
            uplink: "sat0".into(),
            ..Opts::default()
        };
        let mut r = Record::new(&o);
        r.started = 1000;
        let s = Snapshot {
            pid: 7,
            mode: "spoof".into(),
            uptime_s: 5.0,
            draining: false,
            half_open: 2,
            conns: vec![ConnEntry {
                server: "10.0.0.1:8080".into(),
                client: "10.0.0.3:40000".into(),
                state: "zero-window".into(),
                held: 5000,
                acked_undelivered: 4000,
                resent: 3,
                client_rcv_nxt: Some(1),
                server_rcv_nxt: Some(2),
            }],
        };
        let t = render_status(&r, Some(&s), 1035);
        assert!(t.contains("up 35 s"), "{t}");
        assert!(t.contains("1 connection(s), 2 handshake(s) in progress, 5000 B held, 4000 B"));
        assert!(
            t.contains("10.0.0.1:8080         10.0.0.3:40000        zero-window"),
            "{t}"
        );
        assert!(render_status(&r, None, 1035).contains("no connection snapshot yet"));
    }
}
