//! Speed benchmark driver: `bench SCENARIO.toml [--set-duration SECONDS]`.
//! Runs one scenario in this process and prints one JSON line with wall time, events,
//! events/s, peak resident memory (VmHWM) and the aggregate results.

use longpipe_core::{run_json, RunOptions};
use std::time::Instant;

/// The allocator the Python extension (`crates/longpipe-py`) runs the simulator with, so
/// that the benchmark measures what a user's run costs.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Anonymous memory in transparent huge pages now (0 where the kernel has them off).
fn huge_pages_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = s.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: bench SCENARIO.toml [DURATION_S]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("read scenario");
    let mut v: toml::Value = toml::from_str(&text).expect("TOML");
    if let Some(d) = args.get(2) {
        v.as_table_mut()
            .unwrap()
            .insert("duration".into(), toml::Value::String(format!("{d}s")));
    }
    let json = serde_json::to_string(&v).unwrap();
    let t0 = Instant::now();
    let out = run_json(&json, &RunOptions::default()).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[1]);
        std::process::exit(2)
    });
    let wall = t0.elapsed().as_secs_f64();
    let r = &out.result;
    // Aggregate goodput: all bytes delivered over the measured time (per-flow goodputs
    // use each flow's own span, so their sum over staggered starts is not a link rate).
    let bytes: u64 = r.flows.iter().map(|f| f.bytes_delivered).sum();
    let agg = bytes as f64 * 8.0 / (r.duration_s - r.warmup_s);
    // Packet-hops: transmissions started on the link directions (of the measured time;
    // all of it without a warm-up).
    let hops: u64 = r.links.iter().map(|l| l.counters.packets).sum();
    println!(
        "{{\"scenario\": \"{}\", \"flows\": {}, \"sim_s\": {}, \"wall_s\": {:.4}, \"events\": {}, \"events_per_s\": {:.0}, \"packet_hops\": {}, \"hops_per_s\": {:.0}, \"peak_rss_mib\": {:.1}, \"huge_pages_mib\": {:.0}, \"aggregate_goodput_mbps\": {:.3}, \"jain\": {:.4}}}",
        r.scenario,
        r.flows.len(),
        r.duration_s,
        wall,
        r.sim.events,
        r.sim.events as f64 / wall,
        hops,
        hops as f64 / wall,
        peak_rss_kib().unwrap_or(0) as f64 / 1024.0,
        huge_pages_kib().unwrap_or(0) as f64 / 1024.0,
        agg / 1e6,
        r.fairness_jain.unwrap_or(f64::NAN)
    );
}
