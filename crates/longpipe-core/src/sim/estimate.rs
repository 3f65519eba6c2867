//! A cheap upper estimate of a run's work and memory, taken before anything is built, so
//! that a scenario that would run for hours, or hold gigabytes, is refused (unless the
//! user insists) instead of silently taking them or exhausting the machine.
//!
//! Events. Per flow: the rate it can reach is the smallest of its path's line rates and
//! its window over the round-trip propagation delay (not through a `tcp-gateway`, which
//! answers the sender and paces the rest itself); flows crossing a link direction share
//! it in proportion to what they could reach alone; a sized transfer sends at most its
//! size (the TCP-Peach family's probe segments are not: they count at the rates). Each
//! data packet costs about two events per hop (end of transmission, delivery) on the
//! way out and its ACK as many on the way back (counted without delayed ACKs: an upper
//! bound), plus the endpoints' timers; an RLC direction adds its TTI wake-ups, a
//! scheduled direction the changes that are events of their own (none where they set
//! only the delay and the loss model: `DirSchedule::events`; flows are counted at its
//! fastest scheduled rate); an ATM direction into a switch adds one event per cell (a
//! data packet's AAL5 cells, an ACK's one). Losses, which add retransmissions but
//! mostly cut the rate, are ignored.
//!
//! Timers, which fire whether or not packets flow: each flow's retransmission timer is
//! counted as one chain of timeouts that never gets an answer (RFC 6298 (5.5): the first
//! after `initial_rto`, each later one after twice the last, at most `max_rto`), each
//! resending a segment; a `tcp-gateway` on the path, which retransmits without backing
//! off, as one timeout every `min_rto`. (Chains restarted by ACKs after losses are not
//! counted: each needs a delivered packet, and they end within log2(max_rto/min_rto)
//! timeouts.) So `min_rto = max_rto = 1ms` on 1 000 flows for an hour is 3.6e9
//! timeouts, whatever the rates.
//!
//! Memory. The packets alive at once (in flight on the wire or queued) on each link
//! direction: at most those that enter it over the whole run (data, resent segments,
//! ACKs), and at most the wire's rate × delay in packets of the smallest size crossing
//! it plus its queue's limit (a link layer's own buffers get a further
//! [`L2_BUFFER_ALLOWANCE`]); times [`BYTES_PER_PACKET`]; plus [`BYTES_PER_FLOW`] per flow.
//! ACKs are counted only for what can arrive before the end. A path whose delay
//! outlasts the run keeps every packet it is sent: 10 years over a 584-year delay hold
//! 5.3 million resent segments (594 MB).
//!
//! An application flow is counted as a bulk flow (an upper bound of its data), plus its
//! connections' set-ups and tear-downs (an `arrivals` flow opens `rate` a second) and an
//! `onoff` source's writes.
//!
//! On the examples the event estimate is 1 to 60 times the events actually run.

use crate::app::{AppConfig, KindConfig};
use crate::error::ScenarioError;
use crate::l2::atm::aal5::cells_for;
use crate::l2::Layer2Config;
use crate::net::routing::Routes;
use crate::scenario::ValidScenario;
use crate::tcp::config::TcpKind;
use crate::units::Limit;

/// What a run will cost, roughly (an upper estimate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Simulator events.
    pub events: f64,
    /// Packets transmitted, summed over hops.
    pub packets: f64,
    /// Retransmission timeouts (flows and gateways), included in `events`.
    pub timeouts: f64,
    /// Packets alive at once, at most (summed over link directions).
    pub packets_held: f64,
    /// Memory, bytes: packets held and per-flow state.
    pub memory: f64,
}

/// Memory of one packet in flight or queued, bytes: the packet and its event, measured
/// as 112 B per packet (RSS growth over 2.1 million packets held on a 584-year delay).
pub const BYTES_PER_PACKET: f64 = 128.0;
/// Memory of one flow's state (both endpoints, statistics), bytes: measured as 6.4 kB
/// per flow (RSS of 60 000 flows less that of one).
pub const BYTES_PER_FLOW: f64 = 8192.0;
/// Packets a link layer (ATM switch port, RLC entity) may buffer beyond the queue limit.
pub const L2_BUFFER_ALLOWANCE: f64 = 65_536.0;
/// The memory limit, bytes (4 GiB; the project's machines have 8 to 24 GB).
pub const MAX_MEMORY_BYTES: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;

/// Refuses (path `(work)`) a run estimated above `max_events` events or
/// [`MAX_MEMORY_BYTES`] of memory; returns the estimate otherwise.
pub fn check(sc: &ValidScenario, max_events: f64) -> Result<Estimate, ScenarioError> {
    let e = estimate(sc);
    let how = "or run it anyway with --force (Python: force=True); see docs/limits.md";
    if e.events > max_events {
        return Err(ScenarioError::new(
            "(work)",
            format!(
                "this run would take about {:.1e} events (about {:.0} minutes{}), above the limit of \
                 {max_events:.0e}: shorten the duration or the rates, lengthen short timers, {how}",
                e.events,
                e.events / 6e6 / 60.0,
                if e.timeouts > 0.1 * e.events {
                    format!(", {:.1e} of them retransmission timeouts", e.timeouts)
                } else {
                    String::new()
                },
            ),
        ));
    }
    if e.memory > MAX_MEMORY_BYTES {
        return Err(ScenarioError::new(
            "(work)",
            format!(
                "this run would need about {:.1} GB of memory ({:.1e} packets held at once, {} flow(s)), \
                 above the limit of {:.0} GiB: shorten the duration or the delays, or use fewer flows, {how}",
                e.memory / 1e9,
                e.packets_held,
                sc.flows.len(),
                MAX_MEMORY_BYTES / (1024.0 * 1024.0 * 1024.0)
            ),
        ));
    }
    Ok(e)
}

/// Timeouts of one retransmission timer that never gets an answer within `active`
/// seconds: RFC 6298 (5.5) backs off from `initial` by doubling, at most `max`, never
/// below `min`.
fn rto_chain(active: f64, initial: f64, min: f64, max: f64) -> f64 {
    let (max, mut rto) = (max.max(min).max(1e-9), initial.max(min).max(1e-9));
    let (mut t, mut n) = (0.0, 0.0);
    while rto < max && t + rto <= active {
        t += rto;
        n += 1.0;
        rto = (2.0 * rto).min(max);
    }
    n + ((active - t) / rto).max(0.0).floor()
}

/// A direction's fastest rate (a schedule may raise it), bit/s.
fn max_rate(d: &crate::scenario::DirInfo) -> f64 {
    match &d.link.sched {
        Some(s) => s.max_rate(d.link.rate).bps() as f64,
        None => d.link.rate.bps() as f64,
    }
}

/// Packets (and wake-ups) an application adds beyond its data over `active` seconds:
/// 8 packets per connection (SYN, SYN-ACK, ACK, two FINs and their ACKs, a spare) and
/// one event per write of an `onoff` source at its rate.
fn app_churn(app: &AppConfig, active: f64) -> f64 {
    match &app.kind {
        KindConfig::Arrivals(a) => 8.0 * a.rate * active,
        KindConfig::OnOff(o) => {
            o.rate.map_or(0.0, |r| {
                r.bps() as f64 / (8.0 * crate::app::onoff::WRITE as f64)
            }) * active
        }
        KindConfig::Web(w) => 8.0 * w.connections as f64,
        KindConfig::RequestResponse(_) | KindConfig::Stream(_) => 8.0,
        KindConfig::Bulk => 0.0,
    }
}

/// Estimates the work of simulating `sc`.
pub fn estimate(sc: &ValidScenario) -> Estimate {
    let pairs: Vec<(usize, usize)> = sc.links.iter().map(|l| (l.a, l.b)).collect();
    let mut dests: Vec<usize> = sc.flows.iter().flat_map(|f| [f.dst, f.src]).collect();
    dests.sort_unstable();
    dests.dedup();
    let routes = Routes::compute(sc.nodes.len(), &pairs, &dests);
    // The link directions (2 × link + dir) of a path, following the routes.
    let path = |from: usize, to: usize| -> Vec<usize> {
        let mut v = Vec::new();
        let mut n = from;
        while n != to {
            let Some(port) = routes.next(n, to) else {
                break;
            };
            let (li, d) = routes.ports(n)[port as usize].1;
            v.push(2 * li as usize + d as usize);
            let l = &sc.links[li as usize];
            n = if d == 0 { l.b } else { l.a };
            if v.len() > sc.links.len() * 2 {
                break; // no route loops, but never spin on a bad table
            }
        }
        v
    };
    let dir = |i: usize| &sc.links[i / 2].dirs[i % 2];
    let duration = sc.duration.as_secs_f64();
    struct F {
        fwd: Vec<usize>,
        rev: Vec<usize>,
        demand: f64,
        pkt_bits: f64,
        /// Events per data packet and its ACK for the cells entering ATM switches.
        cell_events: f64,
        cap_pkts: f64,
        active: f64,
        /// Retransmission timeouts (see the module doc), each resending a segment.
        timeouts: f64,
        /// Packets of an application's connection set-ups and tear-downs and its
        /// timer events, over the run.
        churn: f64,
    }
    let flows: Vec<F> = sc
        .flows
        .iter()
        .map(|f| {
            let (fwd, rev) = (path(f.src, f.dst), path(f.dst, f.src));
            let bottleneck = fwd
                .iter()
                .map(|&i| max_rate(dir(i)))
                .fold(f64::INFINITY, f64::min);
            let rtt: f64 = fwd
                .iter()
                .chain(&rev)
                .map(|&i| dir(i).link.delay.as_secs_f64())
                .sum::<f64>()
                .max(1e-6);
            // A `tcp-gateway` on the path answers the sender itself and sends on at a
            // pace of its own (toward a slow reader it may keep the line full past the
            // receiver's window: the gateway reproduction's 8760-byte window carries
            // 4 Mbit/s over 350 ms): then only the line rates bound the flow.
            let gateway = fwd.iter().any(|&i| {
                let l = &sc.links[i / 2];
                let to = if i.is_multiple_of(2) { l.b } else { l.a };
                matches!(sc.nodes[to].role, crate::scenario::NodeRole::Gateway(_))
            });
            let window = if gateway {
                f64::INFINITY
            } else {
                f.tcp.rwnd as f64 * 8.0 / rtt
            };
            let mss = f.tcp.mss as f64;
            let cells = |i: usize, len: u32| -> f64 {
                let l = &sc.links[i / 2];
                let to = if i.is_multiple_of(2) { l.b } else { l.a };
                match &dir(i).layer2 {
                    Some(Layer2Config::Atm(c)) if sc.nodes[to].role.atm_switch().is_some() => {
                        cells_for(len, c.llc) as f64
                    }
                    // cells into a host are reassembled by its adapter: no events
                    _ => 0.0,
                }
            };
            let size = f.tcp.mss.saturating_add(40);
            let cell_events = fwd.iter().map(|&i| cells(i, size)).sum::<f64>()
                + rev.iter().map(|&i| cells(i, 40)).sum::<f64>();
            let active = (duration - f.start.as_secs_f64()).max(0.0);
            let rto = &f.tcp.rto;
            let mut timeouts = rto_chain(
                active,
                rto.initial.as_secs_f64(),
                rto.min.as_secs_f64(),
                rto.max.as_secs_f64(),
            );
            for &i in &fwd {
                let l = &sc.links[i / 2];
                let to = if i.is_multiple_of(2) { l.b } else { l.a };
                if let crate::scenario::NodeRole::Gateway(g) = &sc.nodes[to].role {
                    timeouts += active / g.cfg.min_rto.as_secs_f64().max(1e-9);
                }
            }
            F {
                // a flow without a route sends nothing (the simulator refuses it, naming
                // the flow, when it builds the routes: sim/mod.rs)
                demand: if fwd.is_empty() {
                    0.0
                } else {
                    bottleneck.min(window)
                },
                pkt_bits: (mss + 40.0) * 8.0,
                cell_events,
                // the TCP-Peach family also sends low-priority segments that carry no new
                // data (dummies, NIL and supplement segments), up to a window on each
                // start and recovery: a sized transfer does not bound its packets, only
                // the rates do
                cap_pkts: match f.tcp.tcp {
                    TcpKind::Peach | TcpKind::PeachPlus | TcpKind::Cherry => f64::INFINITY,
                    _ => f.app_bytes.map_or(f64::INFINITY, |b| b as f64 / mss + 10.0),
                },
                active,
                timeouts,
                churn: app_churn(&f.app, active),
                fwd,
                rev,
            }
        })
        .collect();
    let mut load = vec![0.0f64; sc.links.len() * 2];
    for f in &flows {
        for &i in &f.fwd {
            load[i] += f.demand;
        }
    }
    let (mut events, mut packets, mut timeouts) = (0.0, 0.0, 0.0);
    // per direction: packets entering it over the run, and the smallest packet's bits
    let mut entering = vec![0.0f64; sc.links.len() * 2];
    let mut min_bits = vec![f64::INFINITY; sc.links.len() * 2];
    for f in &flows {
        let share = f
            .fwd
            .iter()
            .map(|&i| (max_rate(dir(i)) / load[i]).min(1.0))
            .fold(1.0f64, f64::min);
        let data = (f.demand * share * f.active / f.pkt_bits).min(f.cap_pkts);
        let hops = (f.fwd.len() + f.rev.len()) as f64;
        let sent = data + f.timeouts;
        packets += sent * hops;
        events += sent * (2.0 * hops + 4.0 + f.cell_events) + f.timeouts;
        timeouts += f.timeouts;
        // applications: connections opened and closed (handshake, FINs, their ACKs and
        // timers) and the application's own wake-ups
        events += f.churn * (2.0 * hops + 4.0);
        for &i in &f.fwd {
            entering[i] += sent;
            min_bits[i] = min_bits[i].min(f.pkt_bits);
        }
        // ACKs: only for what arrives before the end (none over a path whose delay
        // outlasts the run)
        let one_way: f64 = f.fwd.iter().map(|&i| dir(i).link.delay.as_secs_f64()).sum();
        let answered = if f.active > 0.0 {
            ((f.active - one_way) / f.active).clamp(0.0, 1.0)
        } else {
            0.0
        };
        for &i in &f.rev {
            entering[i] += sent * answered;
            min_bits[i] = min_bits[i].min(320.0);
        }
    }
    let mut held = 0.0;
    for (i, n) in entering.iter().enumerate() {
        if *n <= 0.0 {
            continue;
        }
        let d = dir(i);
        let wire = max_rate(d) * d.link.delay.as_secs_f64() / min_bits[i];
        let queue = match d.link.queue.admission.limit {
            Limit::Packets(p) => p as f64,
            Limit::Bytes(b) => b as f64 / 40.0,
        };
        let l2 = if d.layer2.is_some() {
            L2_BUFFER_ALLOWANCE
        } else {
            0.0
        };
        held += n.min(wire + queue + l2 + 1.0);
    }
    for (i, l) in sc.links.iter().enumerate() {
        for (k, d) in l.dirs.iter().enumerate() {
            if let Some(s) = &d.link.sched {
                events += s.events(sc.duration);
            }
            // a link layer's own wake-ups while it carries traffic
            let busy = load[2 * i + k] > 0.0;
            match &d.layer2 {
                Some(Layer2Config::RlcAm(c)) if busy => {
                    events += 2.0 * duration / c.tti.as_secs_f64();
                }
                None | Some(Layer2Config::RlcAm(_) | Layer2Config::Atm(_)) => {}
            }
        }
    }
    Estimate {
        events,
        packets,
        timeouts,
        packets_held: held,
        memory: held * BYTES_PER_PACKET + sc.flows.len() as f64 * BYTES_PER_FLOW,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_json;

    /// Retransmission timers that cannot fire within these tests' runs (timers have
    /// their own tests below).
    const NO_TIMEOUTS: &str = r#""initial_rto":"100s","min_rto":"100s","max_rto":"100s","src""#;

    fn est(link: &str, flows: &str, duration: &str) -> f64 {
        let flows = flows.replace(r#""src""#, NO_TIMEOUTS);
        let sc = format!(
            r#"{{"duration":"{duration}","link":[{{"a":"s","b":"r","rate":"100Mbps","delay":"1ms"}},
            {{"a":"r","b":"c",{link}}}],"flow":[{flows}]}}"#
        );
        estimate(&parse_json(&sc).unwrap().validate().unwrap()).events
    }

    fn valid(json: &str) -> ValidScenario {
        parse_json(json).unwrap().validate().unwrap()
    }

    #[test]
    fn a_timeout_chain_backs_off_to_max_rto() {
        // 1, 2, 4, ..., 32 s (63 s), then every 60 s: 6 + 8 in 10 minutes
        assert_eq!(rto_chain(600.0, 1.0, 1.0, 60.0), 14.0);
        assert_eq!(rto_chain(0.5, 1.0, 1.0, 60.0), 0.0);
        // no backoff room: one every millisecond
        assert!((rto_chain(10.0, 1e-3, 1e-3, 1e-3) - 10_000.0).abs() <= 1.0);
        // a 584-year max_rto: doubling until the run ends (at 1 s and 3 s)
        assert_eq!(rto_chain(3.0, 1.0, 1.0, 1.8e10), 2.0);
    }

    /// 1 000 flows on a 1 bit/s link (no packet ever arrives), for `duration`, with
    /// these retransmission timers.
    fn stalled(duration: &str, rto: &str) -> String {
        format!(
            r#"{{"duration":"{duration}","link":[{{"a":"s","b":"c","rate":"1bps","delay":"1ms"}}],
            "flow":[{{"src":"s","dst":"c","count":1000,{rto}}}]}}"#
        )
    }

    #[test]
    fn timers_that_fire_without_packets_are_counted_and_bound_the_events_run() {
        let fast = r#""min_rto":"1ms","initial_rto":"1ms","max_rto":"1ms""#;
        // an hour: 3.6e9 timeouts, refused (the estimate used to be 2.4 events)
        let e = check(&valid(&stalled("60min", fast)), 1e9).unwrap_err();
        assert_eq!(e.path, "(work)");
        assert!(e.msg.contains("retransmission timeouts"), "{}", e.msg);
        // ten seconds: the estimate is above what the simulator runs
        let sc = valid(&stalled("10s", fast));
        let est = estimate(&sc);
        let ran = crate::sim::Sim::new(&sc, &Default::default())
            .unwrap()
            .run(&Default::default())
            .result
            .sim
            .events as f64;
        assert!(
            est.events >= ran && est.events < 20.0 * ran,
            "{est:?} vs {ran}"
        );
        assert!((est.timeouts - 1e7).abs() <= 1000.0, "{est:?}");
        // backed-off timers (1 ms, doubling to 60 s) fire about 75 times an hour
        let backed = r#""min_rto":"1ms","initial_rto":"1ms""#;
        let e = check(&valid(&stalled("60min", backed)), 1e9).unwrap();
        assert!(e.timeouts < 1000.0 * 80.0, "{e:?}");
    }

    /// A flow over a path of the largest delay (584 years) for `duration` (the classic
    /// stack: its 60 s maximum RTO).
    fn far(duration: &str) -> String {
        format!(
            r#"{{"duration":"{duration}","link":[{{"a":"s","b":"c","rate":"10Mbps",
            "delay":"18446744073709551615ns"}}],"flow":[{{"src":"s","dst":"c","stack":"classic"}}]}}"#
        )
    }

    #[test]
    fn packets_that_never_arrive_are_held_and_bound_the_memory() {
        // 10 years: a resent segment a minute, none delivered: 5.3 million held
        // (594 MB measured); allowed
        let ten = check(&valid(&far("5256000min")), 1e9).unwrap();
        assert!((ten.packets_held - 5_256_000.0).abs() < 100.0, "{ten:?}");
        assert!(ten.memory > 594e6 && ten.memory < 1e9, "{ten:?}");
        // 100 years: 5.7 GB measured; refused for its memory
        let e = check(&valid(&far("52560000min")), 1e9).unwrap_err();
        assert!(e.msg.contains("GB of memory"), "{}", e.msg);
        // the whole 584 years (a SIGABRT when run): refused
        assert!(check(&valid(&far("307445734min")), 1e9).is_err());
        // a long run on an ordinary path holds what its wire and queue hold
        let ok = valid(
            r#"{"duration":"10000s","link":[{"a":"s","b":"c","rate":"100Mbps","delay":"50ms"}],
            "flow":[{"src":"s","dst":"c","rwnd":"1MB"}]}"#,
        );
        let e = check(&ok, 1e12).unwrap();
        assert!(e.packets_held < 100_000.0, "{e:?}");
    }

    /// A flow without a route is refused by the simulator naming it ("no route"); the
    /// estimate must not refuse the run first as work without bound (its window over the
    /// floor RTT: 6 MiB / 1 µs on the Linux stack).
    #[test]
    fn a_flow_without_a_route_costs_nothing() {
        let sc = valid(
            r#"{"duration":"5s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"50ms"},
            {"a":"x","b":"y","rate":"1Mbps","delay":"1ms"}],
            "flow":[{"src":"s","dst":"c"},{"src":"s","dst":"y"}]}"#,
        );
        let e = check(&sc, 1e9).unwrap();
        let one = estimate(&valid(
            r#"{"duration":"5s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"50ms"},
            {"a":"x","b":"y","rate":"1Mbps","delay":"1ms"}],
            "flow":[{"src":"s","dst":"c"}]}"#,
        ));
        assert!(e.events < 2.0 * one.events, "{e:?} vs {one:?}");
    }

    #[test]
    fn flows_cost_memory() {
        let sc = |n: u32| {
            valid(&format!(
                r#"{{"duration":"1s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms"}}],
                "flow":[{{"src":"s","dst":"c","count":{n}}}]}}"#
            ))
        };
        let (one, many) = (estimate(&sc(1)), estimate(&sc(60_000)));
        // 60 000 flows: 373 MB measured
        assert!(many.memory - one.memory > 373e6, "{many:?}");
    }

    #[test]
    fn scales_with_rate_duration_window_and_sharing() {
        let link = r#""rate":"10Mbps","delay":"10ms""#;
        let one = r#"{"src":"s","dst":"c","rwnd":"1MB"}"#;
        let base = est(link, one, "10s");
        // 10 Mbit/s of 1500 B packets for 10 s, 4 hops, 12 events a data packet
        let want = 10e6 / 12_000.0 * 10.0 * 12.0;
        assert!((base - want).abs() / want < 0.01, "{base} vs {want}");
        assert!((est(link, one, "20s") / base - 2.0).abs() < 0.01);
        let fast = r#""rate":"20Mbps","delay":"10ms""#;
        assert!((est(fast, one, "10s") / base - 2.0).abs() < 0.01);
        // a 64 KiB window over 24 ms reaches ~21.8 Mbit/s: above 10, no limit; over
        // 240 ms it reaches 2.2 Mbit/s
        let far = r#""rate":"10Mbps","delay":"119ms""#;
        let small = r#"{"src":"s","dst":"c","stack":"classic"}"#;
        let r = est(far, small, "10s") / base;
        assert!((r - 65_536.0 * 8.0 / 0.24 / 10e6).abs() < 0.01, "{r}");
        // two flows share the bottleneck: the total stays that of one
        let two = format!("{one},{one}");
        assert!((est(link, &two, "10s") / base - 1.0).abs() < 0.01);
        // a sized transfer costs what it sends
        let sized = r#"{"src":"s","dst":"c","stack":"classic","app":{"bytes":"146KB"}}"#;
        assert!((est(link, sized, "10s") - 110.0 * 12.0).abs() < 1.0);
        // an arrivals flow adds 8 packets a connection: a million a second for 100 s is
        // above the default limit
        let churn =
            r#"{"src":"s","dst":"c","app":{"kind":"arrivals","rate":"1000000/s","size":"1B"}}"#;
        assert!(est(link, churn, "100s") > 1e9);
    }

    #[test]
    fn atm_hops_into_a_switch_add_one_event_per_cell() {
        let sc = |l2: &str| {
            format!(
                r#"{{"duration":"10s","node":[{{"name":"sw","kind":"{}"}}],
                "link":[{{"a":"s","b":"sw","rate":"10Mbps","delay":"1ms"{l2}}},
                {{"a":"sw","b":"r","rate":"10Mbps","delay":"1ms"{l2}}}],
                "flow":[{{"dst":"r","rwnd":"1MB",{NO_TIMEOUTS}:"s"}}]}}"#,
                if l2.is_empty() {
                    "router"
                } else {
                    "atm-switch"
                }
            )
        };
        let e = |t: String| estimate(&parse_json(&t).unwrap().validate().unwrap()).events;
        let plain = e(sc(""));
        let atm = e(sc(r#","layer2":{"kind":"atm"}"#));
        // 4 hops: 12 events a data packet; s -> sw carries its 32 cells into the switch,
        // r -> sw its ACK's one cell; the hops into hosts add nothing
        assert!(
            (atm / plain - (12.0 + 33.0) / 12.0).abs() < 1e-9,
            "{atm} vs {plain}"
        );
    }

    #[test]
    fn a_gateway_on_the_path_lifts_the_window_bound() {
        // the gateway reproduction's shape: an 8760-byte window over 350 ms would allow
        // 0.2 Mbit/s, but the gateway keeps the 4.5 Mbit/s line busy
        let sc = |kind: &str| {
            valid(&format!(
                r#"{{"duration":"20s","node":[{{"name":"gw","kind":"{kind}"}}],
                "link":[{{"a":"s","b":"gw","rate":"100Mbps","delay":"2ms"}},
                {{"a":"gw","b":"c","rate":"4.5Mbps","delay":"300ms","delay_ba":"50ms"}}],
                "flow":[{{"src":"s","dst":"c","rwnd":"8760B","tcp":"newreno"}}]}}"#
            ))
        };
        let (router, gateway) = (sc("router"), sc("tcp-gateway"));
        assert!(estimate(&gateway).events > 10.0 * estimate(&router).events);
        for v in [router, gateway] {
            let ran = crate::sim::Sim::new(&v, &Default::default())
                .unwrap()
                .run(&Default::default())
                .result
                .sim
                .events as f64;
            let est = estimate(&v).events;
            assert!(est >= ran, "{est} < {ran}");
        }
    }

    #[test]
    fn the_peach_familys_probes_are_not_bounded_by_a_sized_transfer() {
        // the golden run `matrix-classic-peach+-sack-2MB`: 2 MB over a lossy GEO link;
        // its NIL segments took the events run to 1.5 times the sized-transfer estimate
        let sc = |tcp: &str| {
            valid(&format!(
                r#"{{"duration":"30s","link":[{{"a":"s","b":"r","rate":"100Mbps","delay":"1ms"}},
                {{"a":"r","b":"c","rate":"10Mbps","rate_ba":"1Mbps","delay":"299ms",
                "queue":{{"limit":"100pkt"}},"loss":{{"kind":"bernoulli","p":0.01}}}}],
                "flow":[{{"src":"s","dst":"c","stack":"classic","tcp":"{tcp}","sack":true,
                "rwnd":"4MB","app":{{"kind":"bulk","bytes":"2MB"}}}}],"seed":1}}"#
            ))
        };
        for tcp in ["newreno", "peach", "peach+"] {
            let v = sc(tcp);
            let ran = crate::sim::Sim::new(&v, &Default::default())
                .unwrap()
                .run(&Default::default())
                .result
                .sim
                .events as f64;
            let est = estimate(&v).events;
            assert!(est >= ran, "{tcp}: {est} < {ran}");
        }
    }

    #[test]
    fn a_schedule_counts_only_the_changes_that_are_events() {
        let sc = |sched: &str| {
            valid(&format!(
                r#"{{"duration":"10s","link":[{{"a":"s","b":"c","rate":"10Mbps","delay":"20ms",
                "schedule":[{sched}]}}],"flow":[{{"src":"s","dst":"c","rwnd":"1MB"}}]}}"#
            ))
        };
        let none = estimate(&valid(
            r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"20ms"}],
            "flow":[{"src":"s","dst":"c","rwnd":"1MB"}]}"#,
        ))
        .events;
        // jitter and loss periods are applied when a transmission ends (link_sched.rs):
        // no event of their own, in either direction
        let lazy = r#"{"every":"1ms","delay":{"min":"10ms","max":"30ms"}},
            {"every":"1s","loss":[{"kind":"bernoulli","p":0.01},{"kind":"none"}]},
            {"at":"5s","delay":"25ms"}"#;
        assert_eq!(estimate(&sc(lazy)).events, none);
        // a rate tick is an event in each direction (the link's one rate): 10 001 ticks
        // in 10 s (at 0, 1 ms, ..., 10 s) each; the same rate, so the flows cost the same
        let rate = r#"{"every":"1ms","rate":"10Mbps"}"#;
        assert_eq!(estimate(&sc(rate)).events - none, 2.0 * 10_001.0);
        // with it the other changes are events too: the jitter's ticks and the one-off
        // delay in both directions, the loss periods' 11 ticks only a->b (no `loss_ba`)
        let eager = format!("{rate},{lazy}");
        assert_eq!(
            estimate(&sc(&eager)).events - none,
            2.0 * (10_001.0 + 10_001.0 + 1.0) + 11.0
        );
        // an outage entry: down and up again, in each direction
        let outage = r#"{"every":"100ms","start":"1s","down_for":"10ms"}"#;
        assert_eq!(estimate(&sc(outage)).events - none, 2.0 * 2.0 * 91.0);
        // and the estimate stays above what the simulator runs
        for s in [lazy, rate, &eager, outage] {
            let v = sc(s);
            let ran = crate::sim::Sim::new(&v, &Default::default())
                .unwrap()
                .run(&Default::default())
                .result
                .sim
                .events as f64;
            let est = estimate(&v).events;
            assert!(est >= ran, "{s}: {est} < {ran}");
        }
    }
}
