//! The Linux stack (`stack = "linux"`) end to end: timestamps on the wire, tail loss
//! probes, RACK, D-SACK, undo, PRR, CUBIC, BBR and pacing, with scripted losses.
//! Segments carry 1448 B (MSS 1460 less the 12-byte timestamp option), so data
//! segment k (1-based) starts at relative sequence number 1 + 1448·(k − 1).

mod common;
use common::*;
use longpipe_core::wire::ACK;

const SEG: u64 = 1448;

fn seq_of(k: u64) -> u64 {
    1 + SEG * (k - 1)
}

/// 10 Mbit/s, 50 ms one way, 1000-packet buffer.
fn lan(loss: &str, loss_ba: &str, flow: &str, duration: &str) -> String {
    path(
        "10Mbps",
        "50ms",
        "1000pkt",
        &format!("{loss}\n{loss_ba}"),
        flow,
        duration,
    )
}

#[test]
fn profile_defaults_on_the_wire() {
    // IW 10 segments of 1448 B, timestamps and SACK-permitted on the SYN, a timestamp
    // option on every segment, echoes that match.
    let sc = lan(
        "",
        "",
        "stack = \"linux\"\napp = { bytes = \"200KB\" }",
        "10s",
    );
    let (out, pk) = run_pcap(&sc, "server-client");
    let f = &out.result.flows[0];
    assert_eq!(f.tcp, "cubic");
    assert_eq!(f.bytes_delivered, 200_000);
    let syn = &pk[0].1;
    assert!(syn.options.sack_permitted && syn.options.timestamps.is_some());
    assert!(pk.iter().all(|(_, h)| h.options.timestamps.is_some()));
    let data: Vec<_> = pk.iter().filter(|(_, h)| h.payload_len > 0).collect();
    assert!(data.iter().all(|(_, h)| h.payload_len as u64 <= SEG));
    assert_eq!(data[0].1.payload_len as u64, SEG);
    // the initial window: 10 segments leave at once
    let tr = &out.traces[0].1;
    let t0 = tr.seg_t_ns[0];
    assert_eq!(tr.seg_t_ns.iter().filter(|&&t| t == t0).count(), 10);
    let t0 = data[0].0;
    // every ACK from the client echoes a TSval the server sent
    let sent: std::collections::HashSet<u32> = pk
        .iter()
        .filter(|(_, h)| h.src_ip == [10, 0, 0, 1])
        .map(|(_, h)| h.options.timestamps.unwrap().0)
        .collect();
    let acks: Vec<_> = pk
        .iter()
        .filter(|(_, h)| h.src_ip != [10, 0, 0, 1] && h.flags & ACK != 0)
        .collect();
    assert!(acks.len() > 20);
    assert!(acks
        .iter()
        .all(|(_, h)| sent.contains(&h.options.timestamps.unwrap().1)));
    // quick ACKs at the start: the 10 segments of the first round (serialised over
    // 12 ms) get 10 ACKs, not 5
    let first_round = acks
        .iter()
        .filter(|(t, _)| *t > t0 && *t < t0 + 114_000_000)
        .count();
    assert_eq!(first_round, 10, "ACKs in the first round");
}

#[test]
fn tail_loss_is_repaired_by_a_probe_not_a_timeout() {
    // RFC 8985 §7: the last segment of a 100 KB transfer is lost; no duplicate ACK can
    // follow. The Linux stack probes after 2·SRTT + 200 ms (one segment outstanding)
    // instead of waiting for the RTO; the classic stack (SACK) needs its RTO (≥ 1 s).
    let last = seq_of(70); // 100 000 B = 69 full segments + 88 B
    let linux = run_traced(&lan(
        &format!("loss = {{ kind = \"seq\", drop = [{last}] }}"),
        "",
        "stack = \"linux\"\napp = { bytes = \"100KB\" }",
        "10s",
    ));
    let f = &linux.result.flows[0];
    assert_eq!((f.sender.timeouts, f.sender.retransmitted_segments), (0, 1));
    let tr = &linux.traces[0].1;
    let orig = tr.seg_seq.iter().position(|&s| s == last).unwrap();
    let probe = tr.seg_retx.iter().position(|&r| r).unwrap();
    assert_eq!(tr.seg_seq[probe], last);
    // the probe timeout is 2·SRTT + 200 ms (one segment outstanding) ≈ 420 ms, capped by
    // the RTO, SRTT + 200 ms ≈ 310 ms: the probe leaves then, as a probe, not an RTO
    let last_ack = *tr
        .t_ns
        .iter()
        .zip(&tr.snd_una)
        .filter(|(t, _)| **t < tr.seg_t_ns[probe])
        .map(|(t, _)| t)
        .last()
        .unwrap();
    let gap = tr.seg_t_ns[probe] - last_ack;
    assert!(
        (300_000_000..=340_000_000).contains(&gap),
        "probe {gap} ns after the last ACK"
    );
    assert!(tr.seg_t_ns[probe] - tr.seg_t_ns[orig] < 1_000_000_000);
    // a repaired tail loss at the probe's own sequence is not a congestion signal here
    assert!(tr.ssthresh.iter().all(|&s| s > u64::MAX / 8));

    let classic = run_traced(&lan(
        &format!("loss = {{ kind = \"seq\", drop = [{}] }}", 1 + 1460 * 68),
        "",
        "sack = true\niw = 10\napp = { bytes = \"100KB\" }",
        "10s",
    ));
    assert_eq!(classic.result.flows[0].sender.timeouts, 1);
    assert!(linux.result.flows[0].completion_time_s < classic.result.flows[0].completion_time_s);
}

#[test]
fn rack_repairs_a_loss_with_too_few_duplicate_acks() {
    // Segment 9 of a 10-segment transfer is lost: only one SACK follows, never three
    // duplicate ACKs. RACK marks it lost min_rtt/4 after segment 10 is SACKed (RFC 8985
    // §6.2) and it is retransmitted without a timeout.
    let lost = seq_of(9);
    let out = run_traced(&lan(
        &format!("loss = {{ kind = \"seq\", drop = [{lost}] }}"),
        "",
        "stack = \"linux\"\napp = { bytes = \"14480B\" }",
        "10s",
    ));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 14_480);
    assert_eq!(f.sender.timeouts, 0);
    assert_eq!(f.sender.fast_recoveries, 1);
    let tr = &out.traces[0].1;
    let rtx = tr.seg_retx.iter().position(|&r| r).unwrap();
    assert_eq!(tr.seg_seq[rtx], lost);
    let sack_t = tr.sack_t_ns[0];
    let wait = tr.seg_t_ns[rtx] - sack_t;
    // min RTT ≈ 100 ms: a quarter of it, within the timer's granularity
    assert!((24_000_000..=28_000_000).contains(&wait), "{wait}");
}

#[test]
fn spurious_probe_is_recognised_by_its_dsack() {
    // The ACKs of the last window are lost (data direction clean): the tail loss probe
    // retransmits the last segment, which the receiver already has, so it reports a
    // D-SACK (RFC 2883). The probe then signals no loss (RFC 8985 §7.4.2): no cwnd
    // reduction. The classic stack meets the same ACK loss with an RTO and cwnd = 1.
    let sc = |stack: &str, drops: &str| {
        lan(
            "",
            &format!("loss_ba = {{ kind = \"list\", drop = [{drops}] }}"),
            &format!("stack = \"{stack}\"\nsack = true\niw = 10\napp = {{ bytes = \"20KB\" }}"),
            "10s",
        )
    };
    // reverse packets: the SYN-ACK, one ACK per segment (quick ACKs), the FIN+ACK;
    // the last four (the ACKs of segments 12-14 and the FIN+ACK) are lost
    let clean = run(&sc("linux", "999"));
    let n = clean.result.links[1].counters.packets;
    let drops: Vec<String> = (n - 4..n).map(|i| i.to_string()).collect();
    let linux = run_traced(&sc("linux", &drops.join(", ")));
    let f = &linux.result.flows[0];
    assert_eq!(f.bytes_delivered, 20_000);
    assert_eq!(f.sender.timeouts, 0);
    assert_eq!(f.sender.retransmitted_segments, 1, "the probe");
    let f = &f.sender;
    let tr = &linux.traces[0].1;
    // the probe's answer carries a D-SACK block for the probed segment (the last, with
    // the FIN: its block ends after the FIN, 20 002, as Linux's `end_seq`), below its
    // cumulative ACK (which covers everything)
    let probe = tr.seg_retx.iter().position(|&r| r).unwrap();
    let k = tr.sack_t_ns.len() - 1;
    assert_eq!(tr.sack_left[k], tr.seg_seq[probe]);
    assert_eq!(tr.sack_right[k], 20_002);
    assert!(
        tr.ssthresh.iter().all(|&s| s > u64::MAX / 8),
        "no reduction"
    );
    assert_eq!(f.fast_recoveries, 0);
    // the classic stack (SACK, no probe) times out on the same ACK loss
    let classic = run(&lan(
        "",
        &format!(
            "loss_ba = {{ kind = \"list\", drop = [{}] }}",
            drops.join(", ")
        ),
        "sack = true\niw = 10\ndelayed_ack = false\napp = { bytes = \"20KB\" }",
        "10s",
    ));
    assert_eq!(classic.result.flows[0].sender.timeouts, 1);
}

#[test]
fn prr_spreads_the_reduction_over_the_recovery() {
    // RFC 6937 with the classic SACK recovery: the window shrinks ACK by ACK to
    // ssthresh instead of dropping to it at once (RFC 6675).
    let sc = |prr: bool| {
        path(
            "10Mbps",
            "50ms",
            "1000pkt",
            "loss = { kind = \"seq\", drop = [40001] }",
            &format!(
                "mss = 1000\nsack = true\niw = 10\nssthresh = 40\ndelayed_ack = false\n\
                 prr = {prr}\napp = {{ bytes = \"200KB\" }}"
            ),
            "10s",
        )
    };
    let rfc6675 = run_traced(&sc(false));
    let prr = run_traced(&sc(true));
    for o in [&rfc6675, &prr] {
        let f = &o.result.flows[0];
        assert_eq!((f.sender.fast_recoveries, f.sender.timeouts), (1, 0));
    }
    let first = |o: &longpipe_core::RunOutput| {
        let tr = &o.traces[0].1;
        let k = tr.ssthresh.iter().position(|&s| s < 40_000).unwrap();
        (tr.ssthresh[k], tr.cwnd[k], tr.cwnd.clone(), k)
    };
    let (ss, cwnd0, _, _) = first(&rfc6675);
    assert_eq!(cwnd0, ss, "RFC 6675: cwnd = ssthresh at once");
    let (ss_p, cwnd_p, cw, k) = first(&prr);
    assert_eq!(ss_p, ss);
    assert!(cwnd_p > ss, "PRR starts from the flight: {cwnd_p} vs {ss}");
    // and it decreases steadily to ssthresh by the end of recovery
    let end = (k..cw.len())
        .find(|&i| cw[i] == ss)
        .expect("reaches ssthresh");
    assert!(end - k > 10, "over many ACKs");
}

#[test]
fn cubic_and_bbr_fill_a_clean_path_bbr_with_a_small_queue() {
    // 10 Mbit/s, 100 ms RTT, a deep buffer: both fill the link; CUBIC fills the buffer
    // too (no loss to stop it until it overflows), BBR keeps the queue near its
    // 2·BDP cwnd cap and paces.
    let sc = |tcp: &str| {
        path(
            "10Mbps",
            "50ms",
            "2000pkt",
            "",
            &format!("stack = \"linux\"\ntcp = \"{tcp}\""),
            "30s",
        )
    };
    let cubic = run(&sc("cubic"));
    let bbr = run(&sc("bbr"));
    let (c, b) = (&cubic.result, &bbr.result);
    assert!(c.links[0].utilization > 0.9, "{}", c.links[0].utilization);
    assert!(b.links[0].utilization > 0.9, "{}", b.links[0].utilization);
    let (qc, qb) = (
        c.links[0].counters.max_queue.0,
        b.links[0].counters.max_queue.0,
    );
    assert!(qb * 3 < qc, "max queue: bbr {qb}, cubic {qc}");
    assert!(qb < 300, "bbr {qb}");
}

#[test]
fn pacing_spaces_the_segments_of_a_window() {
    // Without pacing a window leaves back to back at the 10 Mbit/s line rate (1.2 ms per
    // 1500 B packet); with pacing the gaps follow the pacing rate, which is far below it
    // early in slow start. Pacing is a flow option of either stack.
    for (stack, tcp) in [
        ("linux", "cubic"),
        ("classic", "hybla"),
        ("classic", "newreno"),
    ] {
        let sc = |pacing: bool| {
            path(
                "10Mbps",
                "50ms",
                "1000pkt",
                "",
                &format!(
                    "stack = \"{stack}\"\ntcp = \"{tcp}\"\niw = 10\npacing = {pacing}\n\
                     app = {{ bytes = \"100KB\" }}"
                ),
                "10s",
            )
        };
        let gaps = |o: &longpipe_core::RunOutput| {
            let t = &o.traces[0].1.seg_t_ns;
            t.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
        };
        let plain = run_traced(&sc(false));
        let paced = run_traced(&sc(true));
        // after the unpaced first 10 segments, no two paced segments leave together
        assert!(gaps(&paced)[10..].iter().all(|&g| g > 0), "{stack} {tcp}");
        assert!(
            gaps(&plain).iter().filter(|&&g| g == 0).count() > 10,
            "{stack} {tcp}"
        );
        assert_eq!(
            paced.result.flows[0].bytes_delivered, 100_000,
            "{stack} {tcp}"
        );
    }
}

#[test]
fn spurious_timeout_is_undone_by_its_dsack() {
    // A run of lost ACKs (13 in a row, all of the second round's) leaves the sender
    // without feedback: its RTO fires although every segment arrived (RACK-TLP off, so
    // no probe comes first). The RTO retransmission is reported back as a D-SACK, every
    // retransmission of the episode is thus spurious, and Linux undoes the reduction
    // (`tcp_try_undo_loss`): cwnd and ssthresh return to their values before the RTO.
    // The classic stack keeps its reduction (and, with delayed ACKs, loses the ACK of
    // its retransmission too in this script).
    let drops = (11..24)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let sc = |flow: &str| {
        lan(
            "",
            &format!("loss_ba = {{ kind = \"list\", drop = [{drops}] }}"),
            flow,
            "3s",
        )
    };
    let linux = run_traced(&sc("stack = \"linux\"\nrack = false"));
    let f = &linux.result.flows[0];
    assert_eq!((f.sender.timeouts, f.sender.retransmitted_segments), (1, 1));
    let tr = &linux.traces[0].1;
    let rto = tr
        .cwnd
        .iter()
        .position(|&c| c == SEG)
        .expect("the loss window");
    let before = tr.cwnd[rto - 1];
    assert!(tr.ssthresh[rto] < u64::MAX / 8, "the RTO reduced ssthresh");
    assert!(
        tr.ssthresh[rto + 1] > u64::MAX / 8,
        "undone: ssthresh restored"
    );
    assert!(
        tr.cwnd[rto + 1] >= before,
        "undone: cwnd {} vs {before}",
        tr.cwnd[rto + 1]
    );
    let classic = run_traced(&sc("sack = true\niw = 10"));
    let tc = &classic.traces[0].1;
    assert!(classic.result.flows[0].sender.timeouts >= 1);
    let k = tc.cwnd.iter().position(|&c| c == 1460).unwrap();
    assert!(
        tc.ssthresh[k..].iter().all(|&s| s < u64::MAX / 8),
        "not undone"
    );
    assert!(linux.result.flows[0].bytes_delivered > 2 * classic.result.flows[0].bytes_delivered);
}

#[test]
fn a_real_loss_keeps_cubics_reduction() {
    // Two segments lost in one window: one recovery, ssthresh = ⌊0.7·cwnd⌋ segments
    // (CUBIC's β = 717/1024 on the 30-segment cwnd), nothing undone, and cwnd is
    // ssthresh when recovery ends.
    let out = run_traced(&lan(
        &format!(
            "loss = {{ kind = \"seq\", drop = [{}, {}] }}",
            seq_of(21),
            seq_of(31)
        ),
        "",
        "stack = \"linux\"\napp = { bytes = \"300KB\" }",
        "10s",
    ));
    let f = &out.result.flows[0];
    assert_eq!(
        (
            f.sender.fast_recoveries,
            f.sender.timeouts,
            f.sender.retransmitted_segments
        ),
        (1, 0, 2)
    );
    let tr = &out.traces[0].1;
    let k = tr.ssthresh.iter().position(|&s| s < u64::MAX / 8).unwrap();
    assert_eq!(tr.cwnd[k - 1], 30 * SEG);
    assert_eq!(tr.ssthresh[k], 30 * 717 / 1024 * SEG);
    let end = tr.snd_una.iter().position(|&u| u > seq_of(31)).unwrap();
    assert_eq!(tr.cwnd[end], tr.ssthresh[k]);
    assert!(tr.ssthresh[k..].iter().all(|&s| s == tr.ssthresh[k]));
}
