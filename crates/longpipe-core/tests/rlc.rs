//! The 3GPP RLC AM link layer under TCP.

mod common;
use common::*;

fn radio(pdu_loss: f64, max_dat: u32, extra: &str) -> String {
    format!(
        r#"
duration = "120s"
warmup = "20s"
[[link]]
a = "server"
b = "rnc"
rate = "100Mbps"
delay = "20ms"
[[link]]
a = "rnc"
b = "ue"
rate = "384kbps"
rate_ba = "64kbps"
delay = "30ms"
queue = {{ limit = "200pkt" }}
loss = {{ kind = "bernoulli", p = {pdu_loss} }}
layer2 = {{ kind = "rlc-am", max_dat = {max_dat}, poll_timer = "200ms", status_prohibit = "50ms" {extra} }}
[[flow]]
src = "server"
dst = "ue"
tcp = "newreno"
mtu = 1500
rwnd = "64KB"
"#
    )
}

#[test]
fn no_pdu_loss_gives_the_payload_rate() {
    let out = run(&radio(0.0, 15, ""));
    let f = &out.result.flows[0];
    let l = out
        .result
        .links
        .iter()
        .find(|l| l.a == "rnc" && l.b == "ue")
        .unwrap();
    let l2 = l.l2.as_ref().and_then(|x| x.rlc()).unwrap();
    assert_eq!(l2.pdus_per_tti, 12, "384 kbit/s × 10 ms / 320 bit");
    assert_eq!(l2.counters.pdus_retransmitted, 0);
    // SDU payload rate 384 kbit/s; TCP goodput = that × MSS / MTU
    let expect = 384_000.0 * 1460.0 / 1500.0;
    println!(
        "goodput {} of {}; util {}",
        f.goodput_bps, expect, l.utilization
    );
    assert!(
        f.goodput_bps > 0.97 * expect && f.goodput_bps <= expect * 1.001,
        "{}",
        f.goodput_bps
    );
    assert!(l.utilization > 0.97);
}

#[test]
fn pdu_loss_with_persistent_arq_is_delay_not_loss_to_tcp() {
    let clean = run(&radio(0.0, 40, ""));
    let lossy = run(&radio(0.1, 40, ""));
    let f = &lossy.result.flows[0];
    let l = lossy
        .result
        .links
        .iter()
        .find(|l| l.a == "rnc" && l.b == "ue")
        .unwrap();
    let l2 = l.l2.as_ref().and_then(|x| x.rlc()).unwrap();
    println!("{:?}\n{:?}", f, l2);
    assert!(l2.counters.pdus_retransmitted > 0 && l2.counters.status_sent > 0);
    assert_eq!(l.counters.drops_loss, 0, "no SDU discarded");
    assert_eq!(f.sender.retransmitted_segments, 0, "TCP sees no loss");
    assert_eq!(f.sender.timeouts, 0);
    let rtt_clean = clean.result.flows[0].mean_rtt_s.unwrap();
    assert!(f.mean_rtt_s.unwrap() > rtt_clean, "but longer RTTs");
    assert!(
        l2.sdu_delay_p95_s.unwrap()
            > clean.result.links[2]
                .l2
                .as_ref()
                .and_then(|x| x.rlc())
                .unwrap()
                .sdu_delay_p95_s
                .unwrap()
    );
    // the radio still carries most of its payload rate: 10 % of PDUs are repeated
    assert!(f.goodput_bps > 0.8 * clean.result.flows[0].goodput_bps);
}

#[test]
fn max_dat_one_turns_pdu_loss_into_tcp_loss() {
    let out = run(&radio(0.02, 1, ""));
    let f = &out.result.flows[0];
    let l = out
        .result
        .links
        .iter()
        .find(|l| l.a == "rnc" && l.b == "ue")
        .unwrap();
    println!("{:?}\n{:?}", f, l);
    assert!(l.counters.drops_loss > 0, "SDUs discarded at MaxDAT");
    assert_eq!(
        l.l2.as_ref()
            .and_then(|x| x.rlc())
            .unwrap()
            .counters
            .pdus_retransmitted,
        0
    );
    assert!(
        f.sender.retransmitted_segments > 0,
        "TCP repairs the discarded SDUs"
    );
}

#[test]
fn delivery_is_in_sequence_and_complete() {
    // A sized transfer over a lossy bearer: every byte arrives once, in order.
    let sc = radio(0.15, 40, "").replace(
        "rwnd = \"64KB\"",
        "rwnd = \"64KB\"\napp = { bytes = \"1MB\" }",
    );
    let out = run(&sc);
    let f = &out.result.flows[0];
    assert_eq!(f.sender.retransmitted_segments, 0);
    assert!(f.completion_time_s.is_some());
}
