//! End-to-end TCP behaviour on simple paths.

mod common;
use common::*;

#[test]
fn window_limited_goodput_is_rwnd_over_rtt() {
    // rwnd 16 KB (16 000 B = 16 segments of 1000 B) over a 600 ms RTT at 10 Mbit/s.
    let sc = format!(
        "warmup = \"10s\"\n{}",
        path(
            "10Mbps",
            "300ms",
            "1000pkt",
            "",
            "tcp = \"newreno\"\nmss = 1000\nrwnd = \"16KB\"",
            "70s"
        )
    );
    let out = run(&sc);
    let f = &out.result.flows[0];
    // RTT = 600 ms propagation + serialization of one 1040 B segment and one 40 B ACK.
    let rtt = 0.6 + 1040.0 * 8.0 / 10e6 + 40.0 * 8.0 / 10e6;
    let expect = 16_000.0 * 8.0 / rtt;
    let err = (f.goodput_bps - expect).abs() / expect;
    println!(
        "goodput {} expected {} err {:.4}",
        f.goodput_bps, expect, err
    );
    assert!(
        err < 0.02,
        "goodput {} vs rwnd/RTT {}",
        f.goodput_bps,
        expect
    );
    assert_eq!(f.sender.retransmitted_segments, 0);
    assert_eq!(f.sender.timeouts, 0);
}

#[test]
fn window_limited_with_mss_not_dividing_rwnd() {
    // 16 KB with MSS 1460: the sender sends only whole segments (SWS avoidance), so
    // 10 segments (14 600 B) are in flight per RTT; an even count keeps delayed ACKs
    // from stalling the last segment.
    let sc = format!(
        "warmup = \"10s\"\n{}",
        path(
            "10Mbps",
            "300ms",
            "1000pkt",
            "",
            "mss = 1460\nrwnd = \"16KB\"",
            "70s"
        )
    );
    let f = &run(&sc).result.flows[0];
    let rtt = 0.6 + 1500.0 * 8.0 / 10e6 + 40.0 * 8.0 / 10e6;
    let expect = 14_600.0 * 8.0 / rtt;
    assert!(
        (f.goodput_bps - expect).abs() / expect < 0.02,
        "{} vs {}",
        f.goodput_bps,
        expect
    );
}

#[test]
fn capacity_limited_goodput_fills_the_link() {
    // BDP = 10 Mbit/s × 100 ms = 125 kB ≈ 83 packets; queue 200 packets ≥ BDP.
    for tcp in ["tahoe", "reno", "newreno"] {
        let sc = format!(
            "warmup = \"10s\"\n{}",
            path(
                "10Mbps",
                "50ms",
                "200pkt",
                "",
                &format!("tcp = \"{tcp}\"\nrwnd = \"4MB\""),
                "70s"
            )
        );
        let out = run(&sc);
        let f = &out.result.flows[0];
        let payload_rate = 10e6 * 1460.0 / 1500.0;
        println!(
            "{tcp}: goodput {:.0} ({:.3} of payload rate), fr {} to {}",
            f.goodput_bps,
            f.goodput_bps / payload_rate,
            f.sender.fast_recoveries,
            f.sender.timeouts
        );
        assert!(
            f.goodput_bps >= 0.95 * payload_rate,
            "{tcp}: {} < 95% of {}",
            f.goodput_bps,
            payload_rate
        );
    }
}

#[test]
fn sized_transfer_completes_with_handshake_and_fin() {
    let sc = path(
        "1Mbps",
        "100ms",
        "100pkt",
        "",
        "app = { bytes = \"100KB\" }\niw = 1",
        "60s",
    );
    let out = run(&sc);
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 100_000);
    let ct = f.completion_time_s.expect("completes");
    // At least handshake (1 RTT) + serialization of 100 kB at 1 Mbit/s (0.8 s payload).
    assert!(ct > 0.2 + 0.8, "{ct}");
    assert!(ct < 10.0, "{ct}");
    // Forward packets: SYN, handshake ACK, 69 data segments (68 × 1460 + 720), FIN piggybacked.
    let fwd = &out.result.links[0];
    assert_eq!(
        fwd.counters.packets,
        1 + 1 + 69 + 1,
        "SYN + ACK + data + ACK of the receiver's FIN"
    );
}

#[test]
fn handshake_rtt_counts_in_transfer_time() {
    let sc = path(
        "100Mbps",
        "250ms",
        "100pkt",
        "",
        "app = { bytes = 1000 }\nmss = 1000",
        "10s",
    );
    let f = &run(&sc).result.flows[0];
    // SYN (0.25 s) + SYN-ACK (0.25) + data (0.25) + serialization.
    let ct = f.completion_time_s.unwrap();
    assert!((ct - 0.75).abs() < 0.001, "{ct}");
}

#[test]
fn lost_syn_is_retransmitted_after_initial_rto_with_iw_one() {
    let sc = path(
        "10Mbps",
        "10ms",
        "100pkt",
        "loss = { kind = \"list\", drop = [0] }",
        "app = { bytes = \"10KB\" }\niw = 4",
        "10s",
    );
    let out = run_traced(&sc);
    let f = &out.result.flows[0];
    let ct = f.completion_time_s.unwrap();
    assert!(
        ct > 1.0 && ct < 1.3,
        "SYN retransmitted after the 1 s initial RTO: {ct}"
    );
    let tr = &out.traces[0].1;
    assert_eq!(tr.cwnd[0], 1460, "IW = 1 segment after a lost SYN");
}
