//! The satellite TCP gateway (seed 003): ACK spoofing, satellite-side go-back-N,
//! reliability, fate sharing.

mod common;
use common::*;

/// server -(2 ms)- gw -(sat 300 ms down / 50 ms terrestrial return)- client.
fn sc(gw: bool, sat_loss: &str, size: &str, duration: &str, gw_opts: &str) -> String {
    let kind = if gw { "tcp-gateway" } else { "router" };
    let opts = if gw && !gw_opts.is_empty() {
        format!("gateway = {{ {gw_opts} }}")
    } else {
        String::new()
    };
    format!(
        r#"
duration = "{duration}"
[[node]]
name = "gw"
kind = "{kind}"
{opts}
[[link]]
a = "server"
b = "gw"
rate = "100Mbps"
delay = "2ms"
queue = {{ limit = "1000pkt" }}
[[link]]
a = "gw"
b = "client"
rate = "4.5Mbps"
delay = "300ms"
delay_ba = "50ms"
queue = {{ limit = "1000pkt" }}
{sat_loss}
[[flow]]
src = "server"
dst = "client"
tcp = "newreno"
rwnd = "8760B"
app = {{ bytes = "{size}" }}
"#
    )
}

#[test]
fn spoofing_shortens_the_servers_rtt_and_lifts_the_window_limit() {
    let plain = run(&sc(false, "", "5MB", "300s", ""));
    let with = run(&sc(true, "", "5MB", "300s", ""));
    let (p, g) = (&plain.result.flows[0], &with.result.flows[0]);
    println!(
        "without {:.3} with {:.3} Mbit/s",
        p.goodput_bps / 1e6,
        g.goodput_bps / 1e6
    );
    // the server measures the server-gateway RTT (4 ms + serialization), not 350 ms
    assert!(p.mean_rtt_s.unwrap() > 0.35);
    assert!(g.mean_rtt_s.unwrap() < 0.02, "{:?}", g.mean_rtt_s);
    // window-limited without the gateway: 8760 B per 350 ms
    assert!((p.goodput_bps - 8760.0 * 8.0 / 0.352).abs() / p.goodput_bps < 0.1);
    assert!(g.goodput_bps > 10.0 * p.goodput_bps);
    assert_eq!(g.bytes_delivered, 5_000_000);
    let gw = &with.result.gateways[0];
    assert!(gw.counters.spoofed_acks >= 5_000_000 / 1460);
}

#[test]
fn one_lost_satellite_segment_one_go_back_n() {
    // forward indices on gw->client: SYN 0, handshake ACK 1, then data
    let out = run(&sc(
        true,
        "loss = { kind = \"list\", drop = [300] }",
        "3MB",
        "120s",
        "",
    ));
    let gw = &out.result.gateways[0];
    let f = &out.result.flows[0];
    println!("{gw:?}");
    assert_eq!(
        gw.counters.go_back_n, 1,
        "one go-back-N; duplicate ACKs of the old window are suppressed"
    );
    assert!(gw.counters.segments_resent >= 1);
    // the server never noticed: its counters are those of a run without the loss (its
    // only retransmission, if any, is the FIN segment, which the gateway does not spoof)
    let clean = run(&sc(true, "", "3MB", "120s", ""));
    let c = &clean.result.flows[0];
    assert_eq!(clean.result.gateways[0].counters.go_back_n, 0);
    assert_eq!(
        (
            f.sender.retransmitted_segments,
            f.sender.fast_recoveries,
            f.sender.timeouts
        ),
        (
            c.sender.retransmitted_segments,
            c.sender.fast_recoveries,
            c.sender.timeouts
        )
    );
    assert_eq!(f.sender.fast_recoveries, 0);
    assert_eq!(f.bytes_delivered, 3_000_000);
    // without the recover guard the old window's duplicate ACKs trigger more episodes
    let literal = run(&sc(
        true,
        "loss = { kind = \"list\", drop = [300] }",
        "3MB",
        "120s",
        "recover_guard = false",
    ));
    assert!(literal.result.gateways[0].counters.go_back_n > 1);
    assert_eq!(literal.result.flows[0].bytes_delivered, 3_000_000);
}

#[test]
fn every_byte_arrives_once_in_order_at_ber_1e6_and_the_buffer_holds() {
    let out = run(&sc(
        true,
        "loss = { kind = \"ber\", ber = 1e-6 }",
        "10MB",
        "900s",
        "buffer = \"500KB\"",
    ));
    let f = &out.result.flows[0];
    let gw = &out.result.gateways[0];
    println!("{f:?}\n{gw:?}");
    assert_eq!(f.bytes_delivered, 10_000_000);
    assert!(f.completion_time_s.is_some());
    assert!(gw.counters.max_buffer_bytes.0 <= 500_000);
    assert!(gw.counters.go_back_n > 0);
}

#[test]
fn a_failed_gateway_loses_what_it_acknowledged() {
    let out = run(&sc(true, "", "5MB", "60s", "fail_at = \"5s\""));
    let f = &out.result.flows[0];
    let gw = &out.result.gateways[0];
    println!("{f:?}\n{gw:?}");
    assert!(gw.counters.failed.0);
    assert!(
        gw.counters.lost_on_failure_bytes > 0,
        "data spoofed-acked but not yet delivered"
    );
    assert!(
        f.completion_time_s.is_none(),
        "the transfer cannot finish through a dead box"
    );
    assert!(f.bytes_delivered < 5_000_000);
}

#[test]
fn split_mode_delivers_everything_and_keeps_the_client_window_limit() {
    let small = run(&sc(
        true,
        "loss = { kind = \"ber\", ber = 1e-7 }",
        "1MB",
        "300s",
        "mode = \"split\"",
    ));
    let f = &small.result.flows[0];
    assert_eq!(f.bytes_delivered, 1_000_000);
    assert!(
        f.mean_rtt_s.unwrap() < 0.1,
        "the server talks to the gateway"
    );
    // the second connection respects the 8760 B client window over ~350 ms
    assert!(f.goodput_bps < 0.25e6, "{}", f.goodput_bps);
    // with a large client window the split connection (Hybla toward the client) is fast
    let big = sc(
        true,
        "",
        "5MB",
        "300s",
        "mode = \"split\", tcp = \"hybla\", sack = true",
    )
    .replace("rwnd = \"8760B\"", "rwnd = \"1MB\"");
    let fast = run(&big);
    let e2e = run(&sc(false, "", "5MB", "300s", "").replace("rwnd = \"8760B\"", "rwnd = \"1MB\""));
    let (g, n) = (
        fast.result.flows[0].goodput_bps,
        e2e.result.flows[0].goodput_bps,
    );
    println!("split+hybla {g:.0} end-to-end newreno {n:.0}");
    assert_eq!(fast.result.flows[0].bytes_delivered, 5_000_000);
    assert!(g > n, "split {g} vs end-to-end {n}");
}
