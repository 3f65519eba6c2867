//! How a scenario's TCP options map onto Linux: per socket (`TCP_CONGESTION`,
//! `TCP_MAXSEG`, `TCP_WINDOW_CLAMP`), per route (`initcwnd`, `initrwnd`, `quickack`) and
//! per namespace (`tcp_sack`, `tcp_ecn`, `tcp_timestamps`, `tcp_rto_min_us`, `tcp_rto_max_ms`,
//! buffer limits) — one namespace per node, so a per-namespace setting must agree for
//! every flow of that node. What Linux cannot express is listed in
//! [`Mapping::unmapped`] (reported in the result), or refused when the run would not mean
//! what the scenario says (tahoe, an ATM switch or link, an unavailable congestion
//! control). A tcp-gateway node is a router here; its daemon is mapped in `gwnode`.
//! See docs/emulation.md.
//!
//! Why ~720 lines: one mapping over every TCP key of the scenario; half the file is its
//! unit tests.

use longpipe_core::l2::Layer2Config;
use longpipe_core::net::packet::node_addr;
use longpipe_core::scenario::{NodeRole, ScenarioError, ValidScenario};
use longpipe_core::tcp::config::TcpKind;
use longpipe_core::time::SimDuration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One flow as Linux runs it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlowMap {
    pub id: usize,
    pub src: usize,
    pub dst: usize,
    /// The kernel congestion control (`TCP_CONGESTION`).
    pub cc: String,
    pub mss: u32,
    pub rwnd: u64,
    pub app_bytes: Option<u64>,
    /// The application at `dst` reads at this rate, bit/s (`app.read_rate`).
    #[serde(default)]
    pub read_bps: Option<u64>,
    pub start_ns: u64,
    pub src_addr: [u8; 4],
    pub dst_addr: [u8; 4],
    pub sport: u16,
    pub dport: u16,
}

/// Host-wide settings (paths under /proc/sys/net) that bound every namespace and that a
/// namespace cannot change (`net.core.rmem_max` / `wmem_max` cap an unprivileged
/// socket's `SO_RCVBUF` / `SO_SNDBUF`; `tcp_mem` is the TCP memory of the whole host):
/// the emulator leaves them as the host has them and reports them.
pub const HOST_SYSCTLS: [&str; 3] = ["core/rmem_max", "core/wmem_max", "ipv4/tcp_mem"];

/// The smallest and largest `TCP_MAXSEG` Linux accepts (`TCP_MIN_MSS`, and
/// `MAX_TCP_WINDOW` in include/net/tcp.h).
pub const TCP_MIN_MSS: u32 = 88;
pub const MAX_TCP_MAXSEG: u32 = 32_767;

/// Everything the set-up applies.
#[derive(Debug, Clone, Default)]
pub struct Mapping {
    pub flows: Vec<FlowMap>,
    /// Per node: (path under /proc/sys/net, value).
    pub sysctls: Vec<Vec<(String, String)>>,
    /// (node, destination node) -> extra `ip route` attributes.
    pub routes: BTreeMap<(usize, usize), Vec<String>>,
    /// Scenario settings Linux cannot express, one line each.
    pub unmapped: Vec<String>,
    /// The MTU of every TUN device.
    pub mtu: u32,
}

/// A flow's ports: (sender's, receiver's), the simulator's own numbering
/// ([`longpipe_core::sim::ports`]), so an emulated flow has the simulated one's 4-tuple:
/// flow `i` sends from port 49 152 + (i mod 16 384) of its source's address to port
/// 5001 + ⌊i / 16 384⌋ of its destination's. The 4-tuple is unique per flow; the
/// receivers of one node share a listening socket per port ([`listen_groups`]).
pub fn ports(flow: usize) -> (u16, u16) {
    longpipe_core::sim::ports(flow)
}

/// The listening sockets the flows need: one per (destination node, destination port),
/// with the indices (into `flows`) of the flows it accepts, in order.
pub fn listen_groups(flows: &[FlowMap]) -> Vec<((usize, u16), Vec<usize>)> {
    let mut g: BTreeMap<(usize, u16), Vec<usize>> = BTreeMap::new();
    for (i, f) in flows.iter().enumerate() {
        g.entry((f.dst, f.dport)).or_default().push(i);
    }
    g.into_iter().collect()
}

/// For `--flows`: the receive buffer every socket of a receiving node starts with —
/// `tcp_rmem`'s default — is the largest `rwnd` of the flows to it, and autotuning is
/// off there (`tcp_moderate_rcvbuf` 0), so that an accepted socket has `sk_rcvbuf` =
/// rwnd from its first byte on, whenever its application gets to it. Linux replaces
/// `TCP_WINDOW_CLAMP` at the first full-sized segment by `sk_rcvbuf` × the segments'
/// payload/truesize ratio (< 1), so the window cannot pass rwnd then; once data has been
/// read the receiver enlarges its buffer and sets the clamp again ([`crate::flows::Window`]).
/// (Set by the listening socket itself, the buffer would be inherited, but a locked one
/// also halves the window and window scale the SYN-ACK offers; set on the accepted
/// socket, it came too late when the first data arrived with the handshake's last ACK.)
pub fn receive_buffers(m: &mut Mapping) {
    for (u, set) in m.sysctls.iter_mut().enumerate() {
        let Some(r) = m.flows.iter().filter(|f| f.dst == u).map(|f| f.rwnd).max() else {
            continue;
        };
        for (k, v) in set.iter_mut() {
            if k == "ipv4/tcp_rmem" {
                let max = v
                    .rsplit(' ')
                    .next()
                    .unwrap_or("0")
                    .parse::<u64>()
                    .unwrap_or(0);
                *v = format!("4096 {} {}", r.max(4096), max.max(r));
            } else if k == "ipv4/tcp_moderate_rcvbuf" {
                *v = "0".into();
            }
        }
    }
}

/// What the host's `net.core.rmem_max` (host-wide: a namespace cannot raise it) does to
/// the flows' windows, one line per flow it limits: the unprivileged ferry's receiver can
/// get `sk_rcvbuf` = 2 × rmem_max at most, and Linux counts about 160/256 of it as window
/// (the ratio measured here for 1448 B segments from a TUN device), so an rwnd above
/// 1.25 × rmem_max may not be reached.
pub fn buffer_notes(m: &Mapping, rmem_max: u64) -> Vec<String> {
    let reach = rmem_max * 2 * 160 / 256;
    m.flows
        .iter()
        .filter(|f| f.rwnd > reach)
        .map(|f| {
            format!(
                "flow {} rwnd: {} B may not be reached: the host's net.core.rmem_max ({rmem_max} B, \
                 host-wide) lets a receiver's window grow to about {reach} B",
                f.id, f.rwnd
            )
        })
        .collect()
}

/// The kernel's congestion control for a scenario's `tcp`; Err = the message.
pub fn kernel_cc(kind: TcpKind, available: &[String]) -> Result<String, String> {
    let want = match kind {
        TcpKind::Reno | TcpKind::Newreno => "reno",
        TcpKind::Hybla => "hybla",
        TcpKind::Peach | TcpKind::PeachPlus | TcpKind::Cherry => {
            return Err(format!(
                "{:?} has no Linux counterpart (it needs the simulator's sender and receiver); \
                 run it with longpipe run, or choose a kernel congestion control with --cc",
                kind.name()
            ))
        }
        TcpKind::Cubic => "cubic",
        TcpKind::Bbr => "bbr",
        TcpKind::Tahoe => {
            return Err("\"tahoe\" has no Linux counterpart (Linux's \"reno\" recovers as \
                        NewReno); use reno or newreno, or choose a kernel congestion control with --cc"
                .into())
        }
    };
    if available.iter().any(|a| a == want) {
        Ok(want.into())
    } else {
        Err(format!(
            "this kernel has no {want:?} congestion control (available: {}); choose one with --cc",
            available.join(", ")
        ))
    }
}

/// The congestion controls this kernel offers.
pub fn available_ccs() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

fn err<T>(path: String, msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError {
        path,
        msg: msg.into(),
    })
}

/// Why direction `k` of link `li`, an ATM link, cannot be emulated.
pub fn cells_refused(li: usize, k: usize) -> ScenarioError {
    ScenarioError::new(
        format!("link[{li}].layer2{}", if k == 0 { "" } else { "_ba" }),
        "an ATM link is simulated only: it carries 53-byte cells (AAL5), and longpipe emu \
         carries IP packets between TUN devices (run it with longpipe run)",
    )
}

/// Maps the scenario onto Linux. `cc` overrides every flow's congestion control.
pub fn map(
    sc: &ValidScenario,
    cc: Option<&str>,
    available: &[String],
) -> Result<Mapping, ScenarioError> {
    for (i, n) in sc.nodes.iter().enumerate() {
        match n.role {
            // a tcp-gateway forwards in the kernel and runs the real daemon (gwnode.rs)
            NodeRole::Host | NodeRole::Router | NodeRole::Gateway(_) => continue,
            NodeRole::AtmSwitch(_) => {
                return err(
                    format!("node[{i}].kind"),
                    "an atm-switch node is simulated only: it switches 53-byte cells, and \
                     longpipe emu carries IP packets between TUN devices (run it with longpipe run)",
                )
            }
        }
    }
    for (i, l) in sc.links.iter().enumerate() {
        for (k, d) in l.dirs.iter().enumerate() {
            if matches!(d.layer2, Some(Layer2Config::Atm(_))) {
                return Err(cells_refused(i, k));
            }
        }
    }
    if let Some(c) = cc {
        if !available.iter().any(|a| a == c) {
            return err(
                "--cc".into(),
                format!(
                    "this kernel has no {c:?} congestion control (available: {})",
                    available.join(", ")
                ),
            );
        }
    }
    let n = sc.nodes.len();
    let mut m = Mapping {
        sysctls: vec![Vec::new(); n],
        mtu: 1500,
        ..Default::default()
    };
    let mut note = |s: String| {
        if !m.unmapped.contains(&s) {
            m.unmapped.push(s);
        }
    };
    // Per node: SACK wanted, timestamps and D-SACK (per flow: who set them), min RTO
    // (sender side), largest buffer.
    let mut sack = vec![false; n];
    // Per node: whether its flows ask for ECN (tcp_ecn 1) or not (2: accept only).
    let mut ecn: Vec<Option<(bool, usize)>> = vec![None; n];
    let mut ts: Vec<Option<(bool, usize)>> = vec![None; n];
    let mut dsack: Vec<Option<(bool, usize)>> = vec![None; n];
    let mut rto_min: Vec<Option<(SimDuration, usize)>> = vec![None; n];
    let mut rto_max: Vec<Option<(SimDuration, usize)>> = vec![None; n];
    let mut buf = vec![4u64 << 20; n];
    let mut flows = Vec::new();
    let mut routes: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
    let mut iw_of: BTreeMap<(usize, usize), (u64, usize)> = BTreeMap::new();
    for f in &sc.flows {
        let p = format!("flow[{}]", f.spec_index);
        if f.user.is_some() && !f.app.is_workload() {
            return err(
                f.path.clone(),
                "user groups with bulk flows are simulated only (longpipe run): write [[flow]] \
                 tables",
            );
        }
        let t = &f.tcp;
        let kcc = match cc {
            Some(c) => c.to_string(),
            None => kernel_cc(t.tcp, available).or_else(|e| err(format!("{p}.tcp"), e))?,
        };
        let mss = t.mss;
        if !(TCP_MIN_MSS..=MAX_TCP_MAXSEG).contains(&mss) {
            return err(
                format!("{p}.mss"),
                format!(
                    "{mss} B: Linux takes an MSS from {TCP_MIN_MSS} to {MAX_TCP_MAXSEG} B \
                     (TCP_MAXSEG); the simulator runs larger ones (longpipe run)"
                ),
            );
        }
        m.mtu = m.mtu.max(mss + 40);
        if t.sack {
            sack[f.src] = true;
            sack[f.dst] = true;
        }
        match ecn[f.src] {
            Some((o, j)) if o != t.ecn => {
                return err(
                    format!("{p}.ecn"),
                    format!(
                        "differs from flow {j}'s on node {:?}; Linux sets it per host \
                         (one namespace per node)",
                        sc.nodes[f.src].name
                    ),
                )
            }
            _ => ecn[f.src] = Some((t.ecn, f.id)),
        }
        for (slots, v, what) in [
            (&mut ts, Some(t.timestamps), "timestamps"),
            // D-SACK: the kernel's default (on) unless a Linux-stack flow says
            (&mut dsack, t.linux().then_some(t.dsack), "dsack"),
        ] {
            let Some(v) = v else { continue };
            for u in [f.src, f.dst] {
                match slots[u] {
                    Some((o, j)) if o != v => {
                        return err(
                            format!("{p}.{what}"),
                            format!(
                                "differs from flow {j}'s on node {:?}; Linux sets it per host \
                                 (one namespace per node)",
                                sc.nodes[u].name
                            ),
                        )
                    }
                    _ => slots[u] = Some((v, f.id)),
                }
            }
        }
        if t.pacing && t.tcp != TcpKind::Bbr {
            note(format!(
                "{p}.pacing: Linux paces {} only under the fq qdisc, which is not set up",
                t.tcp.name()
            ));
        }
        if t.linux() && !t.rack {
            note(format!(
                "{p}.rack: Linux's RACK-TLP stays on (tcp_recovery is not changed)"
            ));
        }
        for (slot, v, what) in [
            (&mut rto_min[f.src], t.rto.min, "min_rto"),
            (&mut rto_max[f.src], t.rto.max, "max_rto"),
        ] {
            match slot {
                Some((o, j)) if *o != v => {
                    return err(
                        format!("{p}.{what}"),
                        format!(
                            "differs from flow {j}'s on node {:?}; Linux sets it per host \
                             (one namespace per node)",
                            sc.nodes[f.src].name
                        ),
                    )
                }
                _ => *slot = Some((v, f.id)),
            }
        }
        buf[f.src] = buf[f.src].max(4 * t.rwnd);
        buf[f.dst] = buf[f.dst].max(4 * t.rwnd);
        // Initial window: per route from the sender to the receiver.
        let iw = t.iw_bytes.div_ceil(mss as u64);
        match iw_of.get(&(f.src, f.dst)) {
            Some(&(o, j)) if o != iw => {
                return err(
                    format!("{p}.iw"),
                    format!(
                        "differs from flow {j}'s between the same nodes; Linux sets it per route"
                    ),
                )
            }
            Some(_) => {}
            None => {
                iw_of.insert((f.src, f.dst), (iw, f.id));
                routes
                    .entry((f.src, f.dst))
                    .or_default()
                    .push(format!("initcwnd {iw}"));
            }
        }
        // The receiver advertises its whole buffer from the start, as in the simulator.
        let rw = t.rwnd.div_ceil(mss as u64).max(1);
        let r = routes.entry((f.dst, f.src)).or_default();
        let initrwnd = format!("initrwnd {rw}");
        if !r.iter().any(|x| x.starts_with("initrwnd")) {
            r.push(initrwnd);
        }
        if !t.delayed_ack && !r.iter().any(|x| x == "quickack 1") {
            r.push("quickack 1".into());
        }
        // the stack profile's default: 200 ms classic, 40 ms (Linux's minimum) linux
        let ato = SimDuration::from_millis(if t.linux() { 40 } else { 200 });
        if t.delayed_ack && t.delayed_ack_timeout != ato {
            note(format!(
                "{p}.delayed_ack_timeout: Linux's delayed-ACK timer adapts between 40 and 200 ms"
            ));
        }
        if t.rto.initial != SimDuration::from_secs(1) {
            note(format!("{p}.initial_rto: Linux's initial RTO is 1 s"));
        }
        if t.initial_ssthresh.is_some() {
            note(format!(
                "{p}.ssthresh: Linux starts with an unlimited ssthresh (or a cached one)"
            ));
        }
        if t.limited_transmit {
            note(format!("{p}.limited_transmit: Linux has no switch for it"));
        }
        let (sport, dport) = ports(f.id);
        flows.push(FlowMap {
            id: f.id,
            src: f.src,
            dst: f.dst,
            cc: kcc,
            mss,
            rwnd: t.rwnd,
            app_bytes: f.app_bytes,
            read_bps: f.app.read_rate.map(|r| r.bps()),
            start_ns: f.start.0,
            src_addr: node_addr(f.src),
            dst_addr: node_addr(f.dst),
            sport,
            dport,
        });
    }
    // SACK is per host: a flow without it must have at least one end without it.
    for f in &sc.flows {
        if !f.tcp.sack && sack[f.src] && sack[f.dst] {
            return err(
                format!("flow[{}].sack", f.spec_index),
                "false, but other flows need SACK on both its nodes; Linux sets SACK per host \
                 (one namespace per node)",
            );
        }
    }
    for u in 0..n {
        let s = &mut m.sysctls[u];
        s.push(("ipv4/ip_forward".into(), "1".into()));
        s.push(("ipv4/tcp_sack".into(), (sack[u] as u8).to_string()));
        // ECN (RFC 3168): senders with `ecn` ask for it; every host accepts it
        let e = if ecn[u].is_some_and(|(on, _)| on) {
            "1"
        } else {
            "2"
        };
        s.push(("ipv4/tcp_ecn".into(), e.into()));
        // Timestamps as the flows of this node have them (the classic stack has none: its
        // MSS is all payload; with timestamps both carry MSS - 12 B per segment).
        let on = |x: Option<(bool, usize)>| x.is_some_and(|(v, _)| v) as u8;
        s.push(("ipv4/tcp_timestamps".into(), on(ts[u]).to_string()));
        // D-SACK as Linux-stack flows say, else Linux's default (on, RFC 2883), which
        // the classic stack leaves
        let d = dsack[u].map_or(1, |(v, _)| v as u8);
        s.push(("ipv4/tcp_dsack".into(), d.to_string()));
        s.push(("ipv4/tcp_no_metrics_save".into(), "1".into()));
        let b = buf[u];
        s.push(("ipv4/tcp_rmem".into(), format!("4096 131072 {b}")));
        s.push(("ipv4/tcp_wmem".into(), format!("4096 16384 {b}")));
        // Every other TCP setting at Linux's default, written out so that the host's
        // own settings (a namespace starts from the kernel's defaults, but a tuned host
        // is no guide) cannot change a run, and reported in the result:
        for (k, v) in [
            // RFC 7323 window scaling (the scenario's rwnd may exceed 64 KiB)
            ("ipv4/tcp_window_scaling", "1"),
            // receive-buffer autotuning: the receivers lock their buffers (flows.rs)
            ("ipv4/tcp_moderate_rcvbuf", "1"),
            // RACK-TLP loss detection (`rack = false` is listed as unmapped)
            ("ipv4/tcp_recovery", "1"),
            ("ipv4/tcp_early_retrans", "3"),
            // F-RTO, RFC 5682
            ("ipv4/tcp_frto", "2"),
            // RFC 5681 4.1: restart from the initial window after an idle RTO
            ("ipv4/tcp_slow_start_after_idle", "1"),
            ("ipv4/tcp_mtu_probing", "0"),
            ("ipv4/tcp_syncookies", "1"),
            ("ipv4/tcp_fastopen", "1"),
        ] {
            s.push((k.into(), v.into()));
        }
        // room for every flow's SYN at once (Linux's default follows the memory size)
        let backlog = sc.flows.iter().filter(|f| f.dst == u).count().max(1024) as u64 * 2;
        s.push(("ipv4/tcp_max_syn_backlog".into(), backlog.to_string()));
        s.push(("core/somaxconn".into(), backlog.max(4096).to_string()));
        // (a node without a sender: Linux's defaults, 200 ms and 120 s, RFC 6298 2.4)
        let min_us = rto_min[u].map_or(200_000, |(v, _)| v.as_nanos() / 1000);
        s.push((
            "ipv4/tcp_rto_min_us".into(),
            min_us.clamp(1, i32::MAX as u64).to_string(),
        ));
        let (v, j) = rto_max[u].unwrap_or((SimDuration::from_secs(120), 0));
        let ms = v.as_nanos() / 1_000_000;
        if (1000..=120_000).contains(&ms) {
            s.push(("ipv4/tcp_rto_max_ms".into(), ms.to_string()));
        } else {
            note(format!(
                "flow {j} max_rto: Linux allows 1 s to 120 s, keeps its default"
            ));
        }
    }
    m.flows = flows;
    m.routes = routes;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use longpipe_core::scenario::parse_json;

    fn sc(flows: &str) -> ValidScenario {
        parse_json(&format!(
            r#"{{"duration":"5s","link":[{{"a":"s","b":"r","rate":"10Mbps","delay":"5ms"}},{{"a":"r","b":"c","rate":"1Mbps","delay":"50ms"}}],"flow":[{flows}]}}"#
        ))
        .unwrap()
        .validate()
        .unwrap()
    }

    fn avail() -> Vec<String> {
        vec!["reno".into(), "cubic".into(), "bbr".into()]
    }

    #[test]
    fn options_become_sockets_routes_and_sysctls() {
        let v = sc(
            r#"{"src":"s","dst":"c","tcp":"newreno","stack":"classic","mss":1000,"rwnd":"256KB","iw":4,"sack":true,"delayed_ack":false,"min_rto":"200ms","app":{"bytes":"1MB"},"start":"1s"}"#,
        );
        let m = map(&v, None, &avail()).unwrap();
        let f = &m.flows[0];
        assert_eq!((f.cc.as_str(), f.mss, f.rwnd), ("reno", 1000, 256_000));
        assert_eq!((f.app_bytes, f.start_ns), (Some(1_000_000), 1_000_000_000));
        assert_eq!((f.src_addr, f.dst_addr), ([10, 0, 0, 1], [10, 0, 0, 3]));
        assert_eq!((f.sport, f.dport), (49152, 5001));
        assert_eq!(m.routes[&(0, 2)], ["initcwnd 4"]);
        assert_eq!(m.routes[&(2, 0)], ["initrwnd 256", "quickack 1"]);
        let get = |u: usize, k: &str| m.sysctls[u].iter().find(|x| x.0 == k).map(|x| x.1.clone());
        assert_eq!(get(0, "ipv4/tcp_sack").unwrap(), "1");
        assert_eq!(
            get(1, "ipv4/tcp_sack").unwrap(),
            "0",
            "the router has no flow"
        );
        assert_eq!(get(0, "ipv4/tcp_rto_min_us").unwrap(), "200000");
        assert_eq!(get(0, "ipv4/tcp_rto_max_ms").unwrap(), "60000");
        assert_eq!(get(2, "ipv4/tcp_timestamps").unwrap(), "0");
        assert_eq!(get(0, "ipv4/tcp_ecn").unwrap(), "2", "no ECN asked for");
        assert!(m.unmapped.is_empty(), "{:?}", m.unmapped);
        let m = map(&sc(r#"{"src":"s","dst":"c","ecn":true}"#), None, &avail()).unwrap();
        let get = |u: usize, k: &str| m.sysctls[u].iter().find(|x| x.0 == k).map(|x| x.1.clone());
        assert_eq!(get(0, "ipv4/tcp_ecn").unwrap(), "1", "the sender asks");
        assert_eq!(get(2, "ipv4/tcp_ecn").unwrap(), "2", "the receiver accepts");
        assert_eq!(m.mtu, 1500);
    }

    #[test]
    fn the_linux_stack_maps_its_cc_timestamps_and_dsack() {
        let get = |m: &Mapping, u: usize, k: &str| {
            m.sysctls[u].iter().find(|x| x.0 == k).map(|x| x.1.clone())
        };
        for (tcp, cc) in [("cubic", "cubic"), ("bbr", "bbr"), ("reno", "reno")] {
            let m = map(
                &sc(&format!(
                    r#"{{"src":"s","dst":"c","stack":"linux","tcp":"{tcp}"}}"#
                )),
                None,
                &avail(),
            )
            .unwrap();
            assert_eq!(m.flows[0].cc, cc);
            assert_eq!(m.routes[&(0, 2)], ["initcwnd 10"]);
            for u in [0, 2] {
                assert_eq!(get(&m, u, "ipv4/tcp_timestamps").unwrap(), "1");
                assert_eq!(get(&m, u, "ipv4/tcp_dsack").unwrap(), "1");
                assert_eq!(get(&m, u, "ipv4/tcp_sack").unwrap(), "1");
            }
            assert_eq!(get(&m, 0, "ipv4/tcp_rto_min_us").unwrap(), "200000");
            assert!(m.unmapped.is_empty(), "{:?}", m.unmapped);
        }
        // the classic stack leaves D-SACK at the kernel's default and has no timestamps
        let m = map(
            &sc(r#"{"src":"s","dst":"c","stack":"classic"}"#),
            None,
            &avail(),
        )
        .unwrap();
        assert_eq!(get(&m, 0, "ipv4/tcp_timestamps").unwrap(), "0");
        assert_eq!(
            get(&m, 0, "ipv4/tcp_dsack").unwrap(),
            "1",
            "Linux's default"
        );
        let m = map(
            &sc(r#"{"src":"s","dst":"c","stack":"linux","dsack":false,"pacing":true}"#),
            None,
            &avail(),
        )
        .unwrap();
        assert_eq!(get(&m, 2, "ipv4/tcp_dsack").unwrap(), "0");
        assert!(m.unmapped[0].contains("flow[0].pacing"), "{:?}", m.unmapped);
        // timestamps are per host
        let e = map(
            &sc(r#"{"src":"s","dst":"c","stack":"linux"},{"src":"s","dst":"c","stack":"classic"}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[1].timestamps");
    }

    #[test]
    fn what_linux_cannot_do_is_refused_or_listed() {
        let e = map(
            &sc(r#"{"src":"s","dst":"c","tcp":"tahoe"}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[0].tcp");
        assert!(e.msg.contains("tahoe"), "{e}");
        // tahoe is fine with an explicit kernel congestion control
        let m = map(
            &sc(r#"{"src":"s","dst":"c","tcp":"tahoe"}"#),
            Some("cubic"),
            &avail(),
        )
        .unwrap();
        assert_eq!(m.flows[0].cc, "cubic");
        let e = map(
            &sc(r#"{"src":"s","dst":"c","tcp":"hybla"}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert!(e.msg.contains("available: reno, cubic, bbr"), "{e}");
        let e = map(&sc(r#"{"src":"s","dst":"c"}"#), Some("vegas"), &avail()).unwrap_err();
        assert_eq!(e.path, "--cc");
        // per-host settings that disagree
        let e = map(
            &sc(r#"{"src":"s","dst":"c","min_rto":"1s"},{"src":"s","dst":"r","min_rto":"200ms"}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[1].min_rto");
        let e = map(
            &sc(r#"{"src":"s","dst":"c","sack":true},{"src":"s","dst":"c","sack":false}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[1].sack");
        let e = map(
            &sc(r#"{"src":"s","dst":"c","ecn":true},{"src":"s","dst":"r"}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[1].ecn");
        let e = map(
            &sc(r#"{"src":"s","dst":"c","tcp":"peach+"}"#),
            None,
            &avail(),
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[0].tcp");
        assert!(e.msg.contains("peach+"), "{e}");
        let m = map(
            &sc(r#"{"src":"s","dst":"c","initial_rto":"3s","ssthresh":10,"mss":8960}"#),
            None,
            &avail(),
        )
        .unwrap();
        assert_eq!(m.unmapped.len(), 2, "{:?}", m.unmapped);
        assert_eq!(m.mtu, 9000);
        let g = parse_json(r#"{"duration":"5s","node":[{"name":"g","kind":"tcp-gateway"}],"link":[{"a":"s","b":"g","rate":"1Mbps","delay":"1ms"},{"a":"g","b":"c","rate":"1Mbps","delay":"100ms"}]}"#)
            .unwrap()
            .validate()
            .unwrap();
        // a tcp-gateway node is a router to the kernel (the daemon: gwnode.rs)
        let m = map(&g, None, &avail()).unwrap();
        assert!(m.sysctls[1].contains(&("ipv4/ip_forward".into(), "1".into())));
        // cell-level ATM is simulated only: switches and links alike
        let atm = |node: &str| {
            parse_json(&format!(r#"{{"duration":"5s","node":[{node}],"link":[{{"a":"s","b":"x","rate":"1Mbps","delay":"1ms","layer2":{{"kind":"atm"}}}},{{"a":"x","b":"c","rate":"1Mbps","delay":"1ms","layer2":{{"kind":"atm"}}}}]}}"#))
                .unwrap()
                .validate()
                .unwrap()
        };
        let e = map(&atm(r#"{"name":"x","kind":"atm-switch"}"#), None, &avail()).unwrap_err();
        assert_eq!(e.path, "node[0].kind");
        let e = map(&atm(r#"{"name":"x","kind":"router"}"#), None, &avail()).unwrap_err();
        assert_eq!(e.path, "link[0].layer2");
    }

    #[test]
    fn flows_have_the_simulators_4_tuples_and_share_a_listener_per_node_and_port() {
        for i in [0, 1, 99, 16_383, 16_384, 40_000] {
            assert_eq!(ports(i), longpipe_core::sim::ports(i));
        }
        assert_eq!(ports(1), (49_153, 5001));
        assert_eq!(ports(16_384), (49_152, 5002));
        let m = map(
            &sc(r#"{"src":"s","dst":"c","count":3},{"src":"r","dst":"c"},{"src":"c","dst":"s"}"#),
            None,
            &avail(),
        )
        .unwrap();
        let tuples: std::collections::BTreeSet<_> = m
            .flows
            .iter()
            .map(|f| (f.src_addr, f.sport, f.dst_addr, f.dport))
            .collect();
        assert_eq!(tuples.len(), 5, "one 4-tuple per flow");
        // node c listens once on 5001 for its four flows, node s once for its one
        assert_eq!(
            listen_groups(&m.flows),
            vec![((0, 5001), vec![4]), ((2, 5001), vec![0, 1, 2, 3])]
        );
    }

    #[test]
    fn every_tcp_sysctl_is_explicit_and_an_impossible_mss_is_refused() {
        let m = map(&sc(r#"{"src":"s","dst":"c","count":3000}"#), None, &avail()).unwrap();
        for u in 0..3 {
            let keys: Vec<&str> = m.sysctls[u].iter().map(|x| x.0.as_str()).collect();
            for k in [
                "ipv4/tcp_sack",
                "ipv4/tcp_timestamps",
                "ipv4/tcp_dsack",
                "ipv4/tcp_ecn",
                "ipv4/tcp_window_scaling",
                "ipv4/tcp_rmem",
                "ipv4/tcp_wmem",
                "ipv4/tcp_rto_min_us",
                "ipv4/tcp_rto_max_ms",
                "ipv4/tcp_recovery",
                "ipv4/tcp_frto",
                "ipv4/tcp_slow_start_after_idle",
            ] {
                assert!(keys.contains(&k), "node {u}: {k} missing");
            }
            let n = keys.len();
            keys.iter().for_each(|k| assert!(!k.is_empty()));
            assert_eq!(
                keys.iter().collect::<std::collections::BTreeSet<_>>().len(),
                n,
                "each once"
            );
        }
        let get = |u: usize, k: &str| m.sysctls[u].iter().find(|x| x.0 == k).map(|x| x.1.clone());
        assert_eq!(
            get(2, "ipv4/tcp_max_syn_backlog").unwrap(),
            "6000",
            "3000 SYNs at once"
        );
        assert_eq!(get(1, "ipv4/tcp_max_syn_backlog").unwrap(), "2048");
        for (mss, ok) in [
            (87, false),
            (88, true),
            (32_767, true),
            (32_768, false),
            (65_000, false),
        ] {
            let r = map(
                &sc(&format!(
                    r#"{{"src":"s","dst":"c","mss":{mss},"rwnd":"4MB"}}"#
                )),
                None,
                &avail(),
            );
            match r {
                Ok(_) => assert!(ok, "{mss}"),
                Err(e) => {
                    assert!(!ok, "{mss}: {e}");
                    assert_eq!(e.path, "flow[0].mss");
                }
            }
        }
    }

    #[test]
    fn flow_receivers_start_with_a_buffer_of_rwnd_and_no_autotuning() {
        let mut m = map(
            &sc(r#"{"src":"s","dst":"c","rwnd":"8760B"},{"src":"s","dst":"c","rwnd":"100000B"}"#),
            None,
            &avail(),
        )
        .unwrap();
        receive_buffers(&mut m);
        let get = |m: &Mapping, u: usize, k: &str| {
            m.sysctls[u].iter().find(|x| x.0 == k).map(|x| x.1.clone())
        };
        assert_eq!(get(&m, 2, "ipv4/tcp_rmem").unwrap(), "4096 100000 4194304");
        assert_eq!(get(&m, 2, "ipv4/tcp_moderate_rcvbuf").unwrap(), "0");
        // the sender keeps Linux's defaults
        assert_eq!(get(&m, 0, "ipv4/tcp_rmem").unwrap(), "4096 131072 4194304");
        assert_eq!(get(&m, 0, "ipv4/tcp_moderate_rcvbuf").unwrap(), "1");
    }

    #[test]
    fn a_window_beyond_the_hosts_rmem_max_is_listed() {
        let m = map(
            &sc(r#"{"src":"s","dst":"c","rwnd":"4MB"},{"src":"s","dst":"c","rwnd":"8MB"}"#),
            None,
            &avail(),
        )
        .unwrap();
        let n = buffer_notes(&m, 4 << 20);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].starts_with("flow 1 rwnd: 8000000 B"), "{n:?}");
        assert!(buffer_notes(&m, 8 << 20).is_empty());
    }
}
