//! Scripted losses (the `list` loss model) and what RFC 5681 / RFC 6582 / 4.3BSD say
//! the sender must do. Forward packet indices: 0 = SYN, 1 = handshake ACK, then data
//! segment k (1-based) has index k + 1 until the first retransmission.

mod common;
use common::*;

fn scenario(tcp: &str, drops: &[u64]) -> String {
    scripted(tcp, false, drops)
}

#[test]
fn newreno_single_loss_one_fast_retransmit_no_timeout() {
    let out = run_traced(&scenario("newreno", &[40]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert_eq!(f.sender.fast_recoveries, 1);
    assert_eq!(f.sender.timeouts, 0);
    assert_eq!(f.sender.retransmitted_segments, 1);
    // cwnd after recovery = ssthresh = half the flight at the loss.
    let tr = &out.traces[0].1;
    let i = tr
        .ssthresh
        .iter()
        .position(|&s| s < u64::MAX / 8)
        .expect("ssthresh set");
    assert!(tr.ssthresh[i] >= 2 * 1460);
}

#[test]
fn tahoe_single_loss_falls_to_one_segment() {
    let out = run_traced(&scenario("tahoe", &[40]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert_eq!(f.sender.fast_recoveries, 1);
    assert_eq!(f.sender.timeouts, 0);
    let tr = &out.traces[0].1;
    let first_loss = tr.ssthresh.iter().position(|&s| s < u64::MAX / 8).unwrap();
    assert_eq!(
        tr.cwnd[first_loss], 1460,
        "Tahoe: cwnd = 1 MSS after fast retransmit"
    );
    // then slow start: cwnd grows by one MSS per ACK until ssthresh
    assert!(tr.cwnd[first_loss + 1] == 2920 || tr.cwnd[first_loss + 1] == 1460);
}

#[test]
fn newreno_two_losses_in_one_window_one_recovery() {
    let out = run_traced(&scenario("newreno", &[40, 43]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert_eq!(
        f.sender.fast_recoveries, 1,
        "RFC 6582: partial ACK keeps the sender in recovery"
    );
    assert_eq!(f.sender.timeouts, 0);
    assert_eq!(f.sender.retransmitted_segments, 2);
}

#[test]
fn reno_two_losses_in_one_window_exits_early() {
    let out = run_traced(&scenario("reno", &[40, 43]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    // RFC 5681 §3.2: the first new (partial) ACK ends recovery with cwnd = ssthresh; the
    // second loss then needs either a retransmission timeout or another fast retransmit,
    // which halves the window a second time.
    println!(
        "reno: fr {} to {} retx {}",
        f.sender.fast_recoveries, f.sender.timeouts, f.sender.retransmitted_segments
    );
    assert!(
        f.sender.timeouts >= 1 || f.sender.fast_recoveries >= 2,
        "fr {} to {}",
        f.sender.fast_recoveries,
        f.sender.timeouts
    );
    // The recovery ended at the partial ACK: between the two retransmissions the sender
    // was out of recovery with cwnd = ssthresh (RFC 5681 §3.2 step 6).
    let tr = &out.traces[0].1;
    let set = tr.ssthresh.iter().position(|&s| s < u64::MAX / 8).unwrap();
    assert!(
        (set..tr.cwnd.len()).any(|i| tr.cwnd[i] == tr.ssthresh[i]),
        "deflated to ssthresh"
    );
    // Note: RFC 5681 (4) takes FlightSize/2 at the second fast retransmit, and the
    // flight still spans the first loss's window, so ssthresh need not fall below the
    // first reduction (4.3BSD-Reno used cwnd/2 and would halve again).
}

#[test]
fn lost_fast_retransmission_needs_rto_and_backs_off() {
    // Find the forward index of the fast retransmission of the segment lost at index 40
    // (data segments are the only forward packets after the handshake ACK).
    let probe = run_traced(&scenario("newreno", &[40]));
    let tr = &probe.traces[0].1;
    let pos = tr.seg_retx.iter().position(|&r| r).unwrap() as u64;
    let rtx_index = pos + 2;
    let out = run_traced(&scenario("newreno", &[40, rtx_index]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000);
    assert_eq!(f.sender.fast_recoveries, 1);
    assert_eq!(
        f.sender.timeouts, 1,
        "the lost retransmission is repaired by the RTO"
    );
    // after the RTO cwnd is one segment (RFC 5681 §3.1 loss window)
    let tr = &out.traces[0].1;
    assert!(tr.cwnd.contains(&1460));
    // The same segment is sent three times; the RTO retransmission comes at least the
    // minimum RTO (1 s) after the lost fast retransmission (RFC 6298 (2.4), (5.4)).
    let lost_seq = tr.seg_seq[pos as usize];
    let times: Vec<u64> = (0..tr.seg_seq.len())
        .filter(|&i| tr.seg_seq[i] == lost_seq)
        .map(|i| tr.seg_t_ns[i])
        .collect();
    assert_eq!(times.len(), 3);
    assert!(times[2] - times[1] >= 1_000_000_000, "{times:?}");
}

#[test]
fn limited_transmit_turns_a_small_window_timeout_into_a_fast_retransmit() {
    // IW 3, the first data segment lost: only two duplicate ACKs can come back, so
    // without RFC 3042 the sender waits for the RTO; with it, each of the first two
    // duplicate ACKs releases a new segment, whose ACK is the third duplicate.
    let sc = |lt: bool| {
        path(
            "10Mbps",
            "50ms",
            "1000pkt",
            "loss = { kind = \"list\", drop = [2] }",
            &format!("iw = 3\nlimited_transmit = {lt}\napp = {{ bytes = \"100KB\" }}"),
            "30s",
        )
    };
    let plain = run(&sc(false));
    let lt = run(&sc(true));
    let (p, l) = (&plain.result.flows[0], &lt.result.flows[0]);
    assert_eq!((p.sender.timeouts, p.sender.fast_recoveries), (1, 0));
    assert_eq!((l.sender.timeouts, l.sender.fast_recoveries), (0, 1));
    assert_eq!(l.bytes_delivered, 100_000);
    assert!(l.completion_time_s.unwrap() + 0.5 < p.completion_time_s.unwrap());
}
