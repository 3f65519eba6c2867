//! SACK (RFC 2018) and RFC 6675 loss recovery.

mod common;
use common::*;
use longpipe_core::{run_json, RunOptions, TraceSel};

fn scenario(tcp: &str, sack: bool, drops: &[u64]) -> String {
    scripted(tcp, sack, drops)
}

/// Times of the retransmissions, and the time of the first one.
fn retx_times(out: &longpipe_core::RunOutput) -> Vec<f64> {
    let tr = &out.traces[0].1;
    (0..tr.seg_t_ns.len())
        .filter(|&i| tr.seg_retx[i])
        .map(|i| tr.seg_t_ns[i] as f64 * 1e-9)
        .collect()
}

#[test]
fn three_losses_in_one_window_recovered_in_about_one_rtt() {
    let drops = [40, 43, 46];
    let sack = run_traced(&scenario("newreno", true, &drops));
    let f = &sack.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert_eq!(f.sender.timeouts, 0);
    assert_eq!(f.sender.fast_recoveries, 1);
    assert_eq!(f.sender.retransmitted_segments, 3);
    let t = retx_times(&sack);
    // all three holes are retransmitted within one RTT (~100 ms) of the first
    assert!(t[2] - t[0] < 0.1, "{t:?}");
    // NewReno without SACK needs one RTT per hole
    let plain = run_traced(&scenario("newreno", false, &drops));
    let tp = retx_times(&plain);
    assert_eq!(plain.result.flows[0].sender.retransmitted_segments, 3);
    assert!(tp[2] - tp[0] > 0.19, "{tp:?}");
    assert!(f.completion_time_s.unwrap() < plain.result.flows[0].completion_time_s.unwrap());
}

#[test]
fn sack_blocks_appear_only_when_both_ends_agree() {
    let out = run_traced(&scenario("reno", true, &[40, 43, 46]));
    assert_eq!(out.result.flows[0].sender.timeouts, 0);
    assert_eq!(
        out.result.flows[0].sender.fast_recoveries, 1,
        "SACK recovery serves the Reno family too"
    );
    // Tahoe ignores SACK information and keeps its own recovery
    let t = run(&scenario("tahoe", true, &[40, 43, 46]));
    assert_eq!(t.result.flows[0].bytes_delivered, 3_000_000);
}

#[test]
fn scoreboard_cleared_after_rto_and_transfer_completes() {
    // Lose a hole and its SACK retransmission: only the RTO can repair it, after
    // which the sender must not trust old SACK information (it could have been reneged).
    let probe = run_traced(&scenario("newreno", true, &[40, 43]));
    let tr = &probe.traces[0].1;
    let pos = tr.seg_retx.iter().position(|&r| r).unwrap() as u64;
    let out = run_traced(&scenario("newreno", true, &[40, 43, pos + 2]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert!(
        f.sender.timeouts >= 1,
        "the lost retransmission needs the RTO"
    );
}

#[test]
fn random_losses_always_deliver_every_byte_once_in_order() {
    // A property test over many loss patterns, data and ACK directions, bursty and not.
    // (The Gilbert chain steps once per packet, so a sparse flow can sit in the bad
    // state across several backed-off RTOs; the run is long enough for the worst seeds.)
    let mut checked = 0;
    for seed in 1..=40u64 {
        for (fwd, rev) in [
            (
                "{ kind = \"bernoulli\", p = 0.05 }",
                "{ kind = \"bernoulli\", p = 0.02 }",
            ),
            (
                "{ kind = \"gilbert\", p_gb = 0.02, p_bg = 0.4, loss_bad = 0.6 }",
                "{ kind = \"bernoulli\", p = 0.01 }",
            ),
        ] {
            for tcp in ["newreno", "hybla", "reno"] {
                let sc = format!(
                    r#"
duration = "1000s"
[[link]]
a = "s"
b = "c"
rate = "5Mbps"
delay = "60ms"
queue = {{ limit = "40pkt" }}
loss = {fwd}
loss_ba = {rev}
[[flow]]
src = "s"
dst = "c"
tcp = "{tcp}"
sack = true
rwnd = "200KB"
app = {{ bytes = "300KB" }}
"#
                );
                let o = run_json(
                    &to_json(&sc),
                    &RunOptions {
                        seed: Some(seed),
                        trace: TraceSel::None,
                        ..Default::default()
                    },
                )
                .unwrap();
                let f = &o.result.flows[0];
                assert_eq!(f.bytes_delivered, 300_000, "seed {seed} {tcp} {fwd}");
                assert!(f.completion_time_s.is_some(), "seed {seed} {tcp}: finished");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 240);
}

#[test]
fn a_lost_tail_before_the_fin_segment_is_repaired_without_a_timeout() {
    // 20 segments of 1000 B, the FIN on the last; segments 5 and 18 lost (packets 7 and
    // 20: the SYN and the handshake ACK come first). The FIN-carrying segment 19 arrives
    // out of order: the receiver's SACK block must cover it, FIN included (as Linux's
    // `tcp_sack_new_ofo_skb` does with `end_seq`), or the sender can never count it
    // delivered and RFC 6675 waits for a retransmission timeout.
    // the classic stack also sends RFC 6675's rescue retransmission (NextSeg rule 4: the
    // highest unSACKed segment, 19, once per episode) before the FIN segment's SACK
    // block arrives; Linux has no rescue
    for (stack, retx) in [("classic", 3), ("linux", 2)] {
        let sc = path(
            "10Mbps",
            "50ms",
            "1000pkt",
            "loss = { kind = \"list\", drop = [7, 20] }",
            &format!(
                "tcp = \"newreno\"\nstack = \"{stack}\"\nsack = true\nmss = 1000\n\
                 timestamps = false\niw = 20\nrwnd = \"1MB\"\napp = {{ bytes = \"20KB\" }}"
            ),
            "10s",
        );
        let out = run(&sc);
        let f = &out.result.flows[0];
        assert_eq!(f.bytes_delivered, 20_000, "{stack}");
        assert_eq!(f.sender.timeouts, 0, "{stack}: repaired by SACK recovery");
        assert_eq!(f.sender.retransmitted_segments, retx, "{stack}");
        // handshake, the window, one round trip of recovery: about 3 RTTs of ~100 ms
        let done = f.completion_time_s.unwrap();
        assert!(done < 0.4, "{stack}: done at {done} s");
    }
}
