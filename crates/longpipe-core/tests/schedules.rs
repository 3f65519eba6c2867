//! Links that change over time, end to end: an outage during the handshake, random
//! schedules are deterministic per seed, the result carries `drops_outage` only where
//! a schedule runs, and a trace-driven link's capacity is the trace's.

mod common;
use common::*;
use longpipe_core::{run_json, RunOptions};
use serde_json::Value;

fn result(toml_text: &str, seed: u64) -> (String, Value) {
    let o = run_json(
        &to_json(toml_text),
        &RunOptions {
            seed: Some(seed),
            ..Default::default()
        },
    )
    .expect("scenario runs");
    let js = o.result.to_json();
    let v: Value = serde_json::from_str(&js).unwrap();
    (js, v)
}

fn outage(mode: &str) -> String {
    path(
        "10Mbps",
        "50ms",
        "100pkt",
        &format!(
            r#"outage = "{mode}"
[[link.schedule]]
at = "0s"
up = false
[[link.schedule]]
at = "2500ms"
up = true"#
        ),
        r#"app = { kind = "bulk", bytes = "10KB" }"#,
        "10s",
    )
}

#[test]
fn an_outage_during_the_handshake() {
    // The link is down from 0 to 2.5 s. With "drop" the SYN (0 s) and its first
    // retransmission (1 s, the initial RTO) are dropped, both ways of the link; the
    // second retransmission (3 s, after the RTO doubled) opens the connection.
    let (_, d) = result(&outage("drop"), 1);
    let t = d["flows"][0]["completion_time_s"]
        .as_f64()
        .expect("completes");
    assert_eq!(d["links"][0]["drops_outage"], 2, "{}", d["links"][0]);
    assert_eq!(d["links"][1]["drops_outage"], 0);
    // With "hold" the SYN (and its retransmission) wait in the queue and leave when
    // the link comes back: the connection opens at 2.5 s, before the second
    // retransmission would have been sent.
    let (_, h) = result(&outage("hold"), 1);
    let th = h["flows"][0]["completion_time_s"]
        .as_f64()
        .expect("completes");
    assert_eq!(h["links"][0]["drops_outage"], 0);
    assert_eq!(h["flows"][0]["bytes_delivered"], 10_000);
    // After the opening the transfer is the same (handshake, slow start with delayed
    // ACKs: well under a second on a 100 ms RTT), so the two differ by the 0.5 s
    // between the link's return and the SYN's second retransmission.
    let (after_drop, after_hold) = (t - 3.0, th - 2.5);
    assert!((0.2..1.0).contains(&after_drop), "{t}");
    assert!((after_drop - after_hold).abs() < 0.001, "{t} {th}");
}

const LEO: &str = r#"
duration = "40s"
[[link]]
a = "s"
b = "c"
rate = "20Mbps"
rate_ba = "2Mbps"
delay = "20ms"
queue = { limit = "200pkt" }
[[link.schedule]]
every = "5s"
delay = { min = "10ms", max = "30ms" }
down_for = { min = "100ms", max = "200ms" }
down_p = 0.5
[[link.schedule]]
every = "3s"
start = "1s"
rate = { min = "10Mbps", max = "30Mbps" }
[[flow]]
src = "s"
dst = "c"
rwnd = "1MB"
"#;

#[test]
fn random_schedules_are_deterministic_per_seed() {
    // No loss model: every difference between seeds comes from the schedule's draws.
    let (a, va) = result(LEO, 1);
    let (b, _) = result(LEO, 1);
    assert_eq!(a, b, "same seed, same bytes");
    let (c, vc) = result(LEO, 2);
    assert_ne!(a, c, "another seed draws another schedule");
    for v in [&va, &vc] {
        assert!(v["flows"][0]["goodput_bps"].as_f64().unwrap() > 5e6);
    }
    // the outages drop packets in both directions, and the counts differ by seed
    let drops = |v: &Value| {
        (
            v["links"][0]["drops_outage"].as_u64().unwrap(),
            v["links"][1]["drops_outage"].as_u64().unwrap(),
        )
    };
    assert!(drops(&va).0 > 0 && drops(&va).1 > 0, "{:?}", drops(&va));
}

#[test]
fn drops_outage_only_on_scheduled_directions() {
    let sc = path(
        "10Mbps",
        "10ms",
        "100pkt",
        "[[link.schedule]]\nat = \"1s\"\nloss_ba = { kind = \"bernoulli\", p = 0.01 }\nrate_ba = \"1Mbps\"\n[[link]]\na = \"client\"\nb = \"x\"\nrate = \"1Mbps\"\ndelay = \"1ms\"",
        "",
        "2s",
    );
    let (_, v) = result(&sc, 1);
    let has = |i: usize| v["links"][i].get("drops_outage").is_some();
    // rate_ba on a link without rate_ba changes b->a only; a->b has no stage
    assert_eq!(
        [has(0), has(1), has(2), has(3)],
        [false, true, false, false]
    );
}

#[test]
fn a_trace_link_carries_the_traces_capacity() {
    // one 1504-byte opportunity every 2 ms: 6 Mbit/s of 1500-byte IPv4 packets
    let trace: String = (1..=500).map(|i| format!("{}\n", 2 * i)).collect();
    let sc = format!(
        r#"
duration = "20s"
warmup = "5s"
[[link]]
a = "s"
b = "c"
rate = {{ trace = "t.down", loaded = {{ file = "t.down", text = "{}" }} }}
rate_ba = "10Mbps"
delay = "20ms"
queue = {{ limit = "100pkt" }}
[[flow]]
src = "s"
dst = "c"
rwnd = "1MB"
"#,
        trace.replace('\n', "\\n")
    );
    let (_, v) = result(&sc, 1);
    let l = &v["links"][0];
    // 15 s measured at 500 opportunities a second, one full packet each
    let pkts = l["packets"].as_u64().unwrap();
    assert!((7490..=7501).contains(&pkts), "{pkts}");
    let g = v["flows"][0]["goodput_bps"].as_f64().unwrap();
    assert!((g - 500.0 * 1460.0 * 8.0).abs() < 0.01 * g, "{g}");
    assert!(
        (l["utilization"].as_f64().unwrap() - 1.0).abs() < 0.01,
        "{l}"
    );
}
