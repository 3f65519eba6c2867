//! Folded hops (`Driver::fold`) against the reference that runs every hop as an event
//! (`RunOptions::unfolded`, with the folded tie order: `Driver::fold_by_events`): on
//! every golden scenario (tests/golden/runs.jsonl) as recorded, and on every fourth
//! with each link's delay and rate moved by a few odd units, the two runs give the same
//! result, time series, application records and pcap bytes; only the number of events
//! differs.

mod common;
use longpipe_core::{run_json, RunOptions, RunOutput};
use serde_json::Value;

/// "50ms" -> 50_000_000 (ns); None if it is not one number and a unit.
fn duration_ns(s: &str) -> Option<u64> {
    let at = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = s.split_at(at);
    let scale = match unit.trim() {
        "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    Some((n.parse::<f64>().ok()? * scale).round() as u64)
}

/// "100Mbps" -> 100_000_000 (bit/s); None if it is not one number and a unit.
fn rate_bps(s: &str) -> Option<u64> {
    let at = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = s.split_at(at);
    let scale = match unit.trim() {
        "bps" => 1.0,
        "kbps" | "Kbps" => 1e3,
        "Mbps" => 1e6,
        "Gbps" => 1e9,
        _ => return None,
    };
    Some((n.parse::<f64>().ok()? * scale).round() as u64)
}

/// The scenario with each link's plain delays and rates moved by a few odd units
/// (link `i` by 2i + 1 ns and 2i + 3 parts per million of its rate, one direction
/// more than the other).
fn nudged(mut sc: Value) -> Value {
    if let Some(links) = sc.get_mut("link").and_then(Value::as_array_mut) {
        for (i, l) in links.iter_mut().enumerate() {
            let i = i as u64;
            let Some(l) = l.as_object_mut() else { continue };
            for (key, by) in [("delay", 2 * i + 1), ("delay_ba", 2 * i + 7)] {
                if let Some(ns) = l.get(key).and_then(Value::as_str).and_then(duration_ns) {
                    l.insert(key.into(), Value::String(format!("{}ns", ns + by)));
                }
            }
            // (parts per million: enough to move the nanoseconds of a transmission)
            for (key, by) in [("rate", 2 * i + 3), ("rate_ba", 2 * i + 11)] {
                if let Some(r) = l.get(key).and_then(Value::as_str).and_then(rate_bps) {
                    let r = r + (r / 1_000_000).max(1) * by;
                    l.insert(key.into(), Value::String(format!("{r}bps")));
                }
            }
        }
    }
    sc
}

/// Everything a run gives but its event count and wall time.
fn outputs(o: &RunOutput) -> (Value, String, String, Vec<(String, Vec<u8>)>) {
    let mut r: Value = serde_json::from_str(&o.result.to_json()).unwrap();
    let sim = r.get_mut("sim").and_then(Value::as_object_mut).unwrap();
    sim.remove("events");
    sim.remove("wall_s");
    (
        r,
        format!("{:?}", o.traces),
        format!("{:?}", o.records),
        o.pcaps.clone(),
    )
}

/// The paths where two JSON values differ (the first few).
fn differ(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    if out.len() >= 8 || a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                differ(
                    v,
                    y.get(k).unwrap_or(&Value::Null),
                    &format!("{at}.{k}"),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (k, (v, w)) in x.iter().zip(y).enumerate() {
                differ(v, w, &format!("{at}[{k}]"), out);
            }
        }
        _ => out.push(format!("{at}: {a} vs {b}")),
    }
}

// The golden runs in two halves, one test each: the test harness runs them on both
// cores.
#[test]
fn folded_hops_change_only_the_event_count_even_runs() {
    golden_half(0);
}

#[test]
fn folded_hops_change_only_the_event_count_odd_runs() {
    golden_half(1);
}

fn golden_half(half: usize) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/runs.jsonl");
    let text = std::fs::read_to_string(path).expect("the golden runs");
    let (mut checked, mut fewer) = (0, 0);
    for (i, line) in text.lines().enumerate().filter(|(i, _)| i % 2 == half) {
        let rec: Value = serde_json::from_str(line).unwrap();
        // (every fourth nudged too: the whole file twice takes over a minute)
        let mut scs = vec![rec["scenario"].clone()];
        if i % 4 == half {
            scs.push(nudged(rec["scenario"].clone()));
        }
        for sc in scs {
            checked += 1;
            fewer += same_but_events(i, &rec, &sc) as usize;
        }
    }
    assert!(checked > 300, "{checked} runs");
    // most scenarios have a hop to fold (a router or switch between two lines)
    assert!(fewer > checked / 3, "{fewer} of {checked} folded a hop");
}

/// Runs golden record `rec` (number `i`) with scenario `sc` folded and as the reference;
/// asserts the same output; whether the folded run had fewer events.
fn same_but_events(i: usize, rec: &Value, sc: &Value) -> bool {
    {
        let opts = |unfolded| RunOptions {
            seed: rec["seed"].as_u64(),
            trace: match (&rec["trace_all"], &rec["trace_flows"]) {
                (Value::Bool(true), _) => longpipe_core::TraceSel::All,
                (_, Value::Array(v)) if !v.is_empty() => longpipe_core::TraceSel::Flows(
                    v.iter().map(|x| x.as_u64().unwrap() as usize).collect(),
                ),
                _ => longpipe_core::TraceSel::None,
            },
            pcap: rec["pcap"]
                .as_array()
                .map(|v| v.iter().map(|s| s.as_str().unwrap().to_string()).collect())
                .unwrap_or_default(),
            unfolded,
            ..Default::default()
        };
        let text = sc.to_string();
        let (Ok(a), Ok(b)) = (run_json(&text, &opts(false)), run_json(&text, &opts(true))) else {
            panic!("golden run {i} does not run when nudged");
        };
        let name = sc["name"].as_str().unwrap_or("?").to_string();
        let (oa, ob) = (outputs(&a), outputs(&b));
        if oa != ob {
            let mut d = vec![];
            differ(&oa.0, &ob.0, "result", &mut d);
            panic!(
                "golden run {i} ({name}): folding changed more than the event count: \
                 {d:?}; traces {}, records {}, pcaps {}",
                if oa.1 == ob.1 { "same" } else { "differ" },
                if oa.2 == ob.2 { "same" } else { "differ" },
                if oa.3 == ob.3 { "same" } else { "differ" },
            );
        }
        assert!(a.result.sim.events <= b.result.sim.events, "{name}");
        a.result.sim.events < b.result.sim.events
    }
}

/// Scenarios the golden runs lack, each where folding could go wrong: a measured
/// interval shorter than one hop (a unit folded past both snapshots at once); a host
/// that is a flow's end and other flows' transit (its own units share the line toward
/// c, not folded; the line toward a carries only transit, folded); a router handing
/// packets to an ATM adapter line (not folded) and the far switch's line into a host
/// (folded).
#[test]
fn folding_edge_cases_match_the_reference() {
    let short_window = r#"
name = "short-window"
duration = "10s"
warmup = "9.9s"
[[link]]
a = "s"
b = "r1"
rate = "100Mbps"
delay = "1ms"
[[link]]
a = "r1"
b = "r2"
rate = "10Mbps"
delay = "300ms"
queue = { limit = "200pkt" }
[[link]]
a = "r2"
b = "c"
rate = "100Mbps"
delay = "1ms"
[[flow]]
src = "s"
dst = "c"
count = 2
tcp = "cubic"
"#;
    let end_and_transit = r#"
name = "end-and-transit"
duration = "20s"
warmup = "2s"
[[link]]
a = "a"
b = "b"
rate = "10Mbps"
delay = "20ms"
queue = { limit = "30pkt" }
[[link]]
a = "b"
b = "c"
rate = "5Mbps"
delay = "30ms"
queue = { limit = "30pkt" }
[[flow]]
src = "a"
dst = "c"
[[flow]]
src = "b"
dst = "c"
[[flow]]
src = "c"
dst = "a"
"#;
    let router_to_atm = r#"
name = "router-to-atm"
duration = "10s"
warmup = "1s"
[atm]
policy = "epd"
[[node]]
name = "sw"
kind = "atm-switch"
atm = { buffer = 2000 }
[[link]]
a = "s"
b = "r"
rate = "100Mbps"
delay = "2ms"
[[link]]
a = "r"
b = "sw"
rate = "149.76Mbps"
delay = "10ms"
layer2 = { kind = "atm" }
[[link]]
a = "sw"
b = "c"
rate = "44.736Mbps"
delay = "40ms"
layer2 = { kind = "atm" }
[[flow]]
src = "s"
dst = "c"
count = 3
"#;
    for sc in [short_window, end_and_transit, router_to_atm] {
        let j = common::to_json(sc);
        let run = |unfolded| {
            run_json(
                &j,
                &RunOptions {
                    unfolded,
                    ..Default::default()
                },
            )
            .unwrap()
        };
        let (a, b) = (run(false), run(true));
        let (oa, ob) = (outputs(&a), outputs(&b));
        let mut d = vec![];
        differ(&oa.0, &ob.0, "result", &mut d);
        assert!(d.is_empty(), "{sc}: {d:?}");
        assert!(
            a.result.sim.events < b.result.sim.events,
            "{sc}: a hop is folded"
        );
    }
}
