//! A cheap upper estimate of a run's work, taken before anything is built, so that a
//! scenario that would run for hours is refused (unless the user insists) instead of
//! silently taking them.
//!
//! Per flow: the rate it can reach is the smallest of its path's line rates and its
//! window over the round-trip propagation delay; flows crossing a link direction share
//! it in proportion to what they could reach alone; a sized transfer sends at most its
//! size. Each data packet costs about two events per hop (end of transmission,
//! delivery) on the way out and its ACK as many on the way back (counted without
//! delayed ACKs: an upper bound), plus the endpoints' timers; an RLC direction adds its
//! TTI wake-ups, a scheduled direction its changes (and flows are counted at its
//! fastest scheduled rate); an ATM direction into a switch adds one event per cell (a data
//! packet's AAL5 cells, an ACK's one). Losses, which add retransmissions but mostly cut the
//! rate, are ignored.
//! An application flow is counted as a bulk flow (an upper bound of its data), plus its
//! connections' set-ups and tear-downs (an `arrivals` flow opens `rate` a second) and an
//! `onoff` source's writes.
//! On the examples the estimate is 1 to 60 times the events actually run.

use crate::app::{AppConfig, KindConfig};
use crate::l2::atm::aal5::cells_for;
use crate::l2::Layer2Config;
use crate::net::routing::Routes;
use crate::scenario::ValidScenario;

/// What a run will cost, roughly (an upper estimate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Simulator events.
    pub events: f64,
    /// Packets transmitted, summed over hops.
    pub packets: f64,
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
            let window = f.tcp.receiver.buffer as f64 * 8.0 / rtt;
            let mss = f.tcp.sender.mss as f64;
            let cells = |i: usize, len: u32| -> f64 {
                let l = &sc.links[i / 2];
                let to = if i.is_multiple_of(2) { l.b } else { l.a };
                match &dir(i).layer2 {
                    Some(Layer2Config::Atm(c)) if sc.nodes[to].atm.is_some() => {
                        cells_for(len, c.llc) as f64
                    }
                    _ => 0.0,
                }
            };
            let size = f.tcp.sender.mss.saturating_add(40);
            let cell_events = fwd.iter().map(|&i| cells(i, size)).sum::<f64>()
                + rev.iter().map(|&i| cells(i, 40)).sum::<f64>();
            F {
                demand: bottleneck.min(window),
                pkt_bits: (mss + 40.0) * 8.0,
                cell_events,
                cap_pkts: f
                    .tcp
                    .sender
                    .app_bytes
                    .map_or(f64::INFINITY, |b| b as f64 / mss + 10.0),
                active: (duration - f.tcp.start.as_secs_f64()).max(0.0),
                churn: app_churn(&f.app, (duration - f.tcp.start.as_secs_f64()).max(0.0)),
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
    let (mut events, mut packets) = (0.0, 0.0);
    for f in &flows {
        let share = f
            .fwd
            .iter()
            .map(|&i| (max_rate(dir(i)) / load[i]).min(1.0))
            .fold(1.0f64, f64::min);
        let data = (f.demand * share * f.active / f.pkt_bits).min(f.cap_pkts);
        let hops = (f.fwd.len() + f.rev.len()) as f64;
        packets += data * hops;
        events += data * (2.0 * hops + 4.0 + f.cell_events);
        // applications: connections opened and closed (handshake, FINs, their ACKs and
        // timers) and the application's own wake-ups
        events += f.churn * (2.0 * hops + 4.0);
    }
    for (i, l) in sc.links.iter().enumerate() {
        for (k, d) in l.dirs.iter().enumerate() {
            if let Some(s) = &d.link.sched {
                events += s.changes(sc.duration);
            }
            if let Some(Layer2Config::RlcAm(c)) = &d.layer2 {
                if load[2 * i + k] > 0.0 {
                    events += 2.0 * duration / c.tti.as_secs_f64();
                }
            }
        }
    }
    Estimate { events, packets }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_json;

    fn est(link: &str, flows: &str, duration: &str) -> f64 {
        let sc = format!(
            r#"{{"duration":"{duration}","link":[{{"a":"s","b":"r","rate":"100Mbps","delay":"1ms"}},
            {{"a":"r","b":"c",{link}}}],"flow":[{flows}]}}"#
        );
        estimate(&parse_json(&sc).unwrap().validate().unwrap()).events
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
        let small = r#"{"src":"s","dst":"c"}"#;
        let r = est(far, small, "10s") / base;
        assert!((r - 65_536.0 * 8.0 / 0.24 / 10e6).abs() < 0.01, "{r}");
        // two flows share the bottleneck: the total stays that of one
        let two = format!("{one},{one}");
        assert!((est(link, &two, "10s") / base - 1.0).abs() < 0.01);
        // a sized transfer costs what it sends
        let sized = r#"{"src":"s","dst":"c","app":{"bytes":"146KB"}}"#;
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
                "flow":[{{"src":"s","dst":"r","rwnd":"1MB"}}]}}"#,
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
}
