//! Hybla end to end: rho from the measured RTT, faster growth than NewReno on long RTTs.

mod common;
use common::*;

fn sc(tcp: &str, p: f64, extra: &str) -> String {
    format!(
        "warmup = \"20s\"\n{}",
        path(
            "40Mbps",
            "275ms",
            "1000pkt",
            &format!("loss = {{ kind = \"bernoulli\", p = {p} }}"),
            &format!("tcp = \"{tcp}\"\nmss = 1000\nrwnd = \"550KB\"\n{extra}"),
            "200s",
        )
    )
}

#[test]
fn hybla_initial_window_is_rho_and_slow_start_is_fast() {
    let out = run_traced(&sc("hybla", 0.0, ""));
    let tr = &out.traces[0].1;
    // RTT ≈ 550 ms + serialization: rho = 22 -> first cwnd 22 segments
    assert_eq!(tr.cwnd[0], 22_000);
    // one RTT later the window is at the 550-segment receiver limit region
    let f = &out.result.flows[0];
    let expect = 550_000.0 * 8.0 / 0.5503;
    assert!(
        f.goodput_bps > 0.95 * expect,
        "{} vs {}",
        f.goodput_bps,
        expect
    );
}

#[test]
fn hybla_beats_newreno_on_a_lossy_long_path() {
    let h = run(&sc("hybla", 1e-3, "")).result.flows[0].goodput_bps;
    let n = run(&sc("newreno", 1e-3, "")).result.flows[0].goodput_bps;
    println!("hybla {h:.0} newreno {n:.0}");
    assert!(h > 3.0 * n, "hybla {h} newreno {n}");
}

#[test]
fn hybla_options_parse_and_change_behaviour() {
    let fixed = run(&sc("hybla", 1e-3, "")).result.flows[0].goodput_bps;
    let float = run(&sc("hybla", 1e-3, "hybla = { arithmetic = \"float\" }"))
        .result
        .flows[0]
        .goodput_bps;
    let rtt0 = run(&sc("hybla", 1e-3, "hybla = { rtt0 = \"100ms\" }"))
        .result
        .flows[0]
        .goodput_bps;
    println!("fixed {fixed:.0} float {float:.0} rtt0=100ms {rtt0:.0}");
    assert!(
        (float / fixed - 1.0).abs() < 0.25,
        "same algorithm, other arithmetic"
    );
    assert!(
        rtt0 < fixed,
        "a larger RTT0 means a smaller rho and slower growth"
    );
}
