//! Scripted-loss checks of five RFC rules an audit found broken (issue 9, part 1). Each
//! test drops chosen segments (`seq`: by relative sequence number, like ns-3's
//! TcpSeqErrorModel; `list`: by packet index) and checks what the RFC says must happen.

mod common;
use common::*;
use longpipe_core::wire::{ACK, FIN, SYN};

const MSS: u64 = 1000;

/// A 1000-B-segment flow over 10 Mbit/s, 50 ms one way, with `loss` on the data
/// direction and `loss_ba` on the ACK direction.
fn flow(loss: &str, loss_ba: &str, flow: &str, duration: &str) -> String {
    path(
        "10Mbps",
        "50ms",
        "1000pkt",
        &format!("{loss}\n{loss_ba}"),
        &format!("mss = 1000\n{flow}"),
        duration,
    )
}

/// IW 10 and ssthresh 10 segments (congestion avoidance from the start), no delayed
/// ACK, segment 16 (relative seq 15001) lost.
fn lt_scenario(lt: bool, sack: bool) -> String {
    flow(
        "loss = { kind = \"seq\", drop = [15001] }",
        "",
        &format!(
            "iw = 10\nssthresh = 10\ndelayed_ack = false\nlimited_transmit = {lt}\n\
             sack = {sack}\napp = {{ bytes = \"60KB\" }}"
        ),
        "20s",
    )
}

#[test]
fn limited_transmit_segments_do_not_count_in_flight_size() {
    // RFC 5681 §3.2 step 2 (with RFC 3042; RFC 6675 §5 (4.2) for SACK): the two segments
    // sent on the first two duplicate ACKs MUST NOT enter the ssthresh computation. At
    // the third duplicate ACK 28001 − 15001 = 13 segments are outstanding, 2 of them
    // Limited Transmit data: ssthresh = 11 / 2 = 5.5 segments (6.5 if they were
    // counted), the same as without Limited Transmit, where the flight is 11 segments.
    for sack in [false, true] {
        let lt = run_traced(&lt_scenario(true, sack));
        let f = &lt.result.flows[0];
        assert_eq!((f.sender.fast_recoveries, f.sender.timeouts), (1, 0));
        assert_eq!(f.bytes_delivered, 60_000);
        let tr = &lt.traces[0].1;
        // The two Limited Transmit segments went out just before the retransmission,
        // while the cumulative ACK stood at the hole.
        let rtx = tr.seg_retx.iter().position(|&r| r).unwrap();
        assert_eq!(tr.seg_seq[rtx], 15_001);
        assert_eq!(&tr.seg_seq[rtx - 2..rtx], &[26_001, 27_001]);
        let k = tr.ssthresh.iter().position(|&s| s < 10 * MSS).unwrap();
        assert_eq!(tr.snd_max[k] - tr.snd_una[k], 13 * MSS);
        assert_eq!(tr.ssthresh[k], 5_500, "sack {sack}");
        let plain = run_traced(&lt_scenario(false, sack));
        let tp = &plain.traces[0].1;
        let k = tp.ssthresh.iter().position(|&s| s < 10 * MSS).unwrap();
        assert_eq!(tp.snd_max[k] - tp.snd_una[k], 11 * MSS);
        assert_eq!(tp.ssthresh[k], 5_500);
    }
}

#[test]
fn newreno_every_duplicate_ack_after_a_partial_ack_inflates_cwnd() {
    // RFC 6582 §3.2 step 3 refers to RFC 5681 §3.2 step 4: during fast recovery every
    // duplicate ACK adds one SMSS, including the ones right after a partial ACK. Two
    // losses far apart in one window: the partial ACK (for the first hole) is followed
    // by the duplicate ACKs of the segments after the second hole.
    let sc = flow(
        "loss = { kind = \"seq\", drop = [30001, 45001] }",
        "",
        "iw = 10\nssthresh = 60\ndelayed_ack = false\nrwnd = \"1MB\"\napp = { bytes = \"300KB\" }",
        "30s",
    );
    let out = run_traced(&sc);
    let f = &out.result.flows[0];
    assert_eq!((f.sender.fast_recoveries, f.sender.timeouts), (1, 0));
    let tr = &out.traces[0].1;
    // The partial ACK: snd_una moves from 30001 to 45001 while in recovery.
    let p = (1..tr.snd_una.len())
        .find(|&i| tr.snd_una[i - 1] == 30_001 && tr.snd_una[i] == 45_001)
        .expect("a partial ACK for the first hole");
    // Every following record with snd_una still at 45001 is a duplicate ACK: each adds
    // one MSS to cwnd.
    let mut n = 0;
    let mut i = p + 1;
    while i < tr.snd_una.len() && tr.snd_una[i] == 45_001 {
        assert_eq!(
            tr.cwnd[i],
            tr.cwnd[i - 1] + MSS,
            "duplicate ACK {} after the partial ACK",
            i - p
        );
        n += 1;
        i += 1;
    }
    assert!(n >= 5, "{n} duplicate ACKs after the partial ACK");
}

#[test]
fn rto_is_three_seconds_once_data_starts_after_a_syn_timeout() {
    // RFC 6298 (5.7): the SYN is lost, so the handshake gives no RTT sample; once data
    // transmission begins the RTO MUST be 3 s (not the SYN's backed-off 2 s). The first
    // data segment is lost too and must wait 3 s for its retransmission. Forward packets:
    // 0 SYN (lost), 1 SYN again, 2 handshake ACK, 3 first data segment (lost).
    let sc = flow(
        "loss = { kind = \"list\", drop = [0, 3] }",
        "",
        "iw = 4\napp = { bytes = \"10KB\" }",
        "20s",
    );
    let out = run_traced(&sc);
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 10_000);
    assert_eq!(f.sender.timeouts, 1);
    let tr = &out.traces[0].1;
    let t: Vec<u64> = (0..tr.seg_seq.len())
        .filter(|&i| tr.seg_seq[i] == 1)
        .map(|i| tr.seg_t_ns[i])
        .collect();
    assert_eq!(t.len(), 2);
    assert_eq!(t[1] - t[0], 3_000_000_000);
    // and after a lost SYN the initial window is one segment (RFC 5681 §3.1): the
    // second transmission is the retransmission, segment 2 waits for its ACK
    assert_eq!(&tr.seg_seq[..3], &[1, 1, 1001]);
}

#[test]
fn rto_of_new_segments_reduces_ssthresh_after_an_earlier_rto() {
    // RFC 5681 (4) applies to a segment "not yet resent by way of the retransmission
    // timer". A lost fast retransmission forces an RTO (ssthresh from the large flight);
    // its retransmission is ACKed without an RTT sample (Karn), so the timer stays backed
    // off. Then the two new segments sent next are lost: their RTO must set ssthresh from
    // their flight of 2 segments (max(FlightSize/2, 2 SMSS) = 2 SMSS).
    let base = |drops: &[u64]| {
        let l = drops
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        flow(
            &format!("loss = {{ kind = \"list\", drop = [{l}] }}"),
            "",
            "rwnd = \"1MB\"\ndelayed_ack = false\napp = { bytes = \"400KB\" }",
            "60s",
        )
    };
    // Forward packet index of data transmission k (0-based) is k + 2 (SYN, ACK first).
    let idx = |i: usize| i as u64 + 2;
    let probe = run_traced(&base(&[40]));
    let tr = &probe.traces[0].1;
    let fr = tr.seg_retx.iter().position(|&r| r).unwrap();
    let probe = run_traced(&base(&[40, idx(fr)]));
    let tr = &probe.traces[0].1;
    assert_eq!(probe.result.flows[0].sender.timeouts, 1);
    // The RTO retransmission (third transmission of that segment), then the first two
    // new segments beyond everything sent before the RTO.
    let lost_seq = tr.seg_seq[fr];
    let rto_tx = (0..tr.seg_seq.len())
        .filter(|&i| tr.seg_seq[i] == lost_seq)
        .nth(2)
        .unwrap();
    let high = tr.seg_seq[..rto_tx].iter().max().unwrap();
    let news: Vec<usize> = (rto_tx..tr.seg_seq.len())
        .filter(|&i| tr.seg_seq[i] > *high && !tr.seg_retx[i])
        .take(2)
        .collect();
    assert_eq!(news.len(), 2);
    let out = run_traced(&base(&[40, idx(fr), idx(news[0]), idx(news[1])]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 400_000);
    assert_eq!(f.sender.timeouts, 2);
    let tr = &out.traces[0].1;
    // ssthresh recorded right after each timeout: the records where cwnd is 1 MSS and
    // ssthresh changed.
    let rto_records: Vec<usize> = (1..tr.cwnd.len())
        .filter(|&i| tr.cwnd[i] == MSS && tr.cwnd[i - 1] != MSS)
        .collect();
    assert_eq!(rto_records.len(), 2, "{rto_records:?}");
    assert!(tr.ssthresh[rto_records[0]] > 10 * MSS);
    assert_eq!(tr.ssthresh[rto_records[1]], 2 * MSS);
}

/// Packets seen at the server's interface: (time, flags, from the server?).
fn server_view(sc: &str) -> Vec<(u64, u8, bool, u32)> {
    let (_, pkts) = run_pcap(sc, "server-client");
    pkts.iter()
        .map(|(t, h)| (*t, h.flags, h.src_ip == [10, 0, 0, 1], h.seq))
        .collect()
}

#[test]
fn lost_fin_ack_of_the_receiver_is_repaired() {
    // RFC 9293: the receiver's FIN must be retransmitted until acknowledged. Its FIN+ACK
    // (the last packet on the ACK direction) is lost: its retransmission timer repeats
    // it, and the sender's own retransmission (its FIN is unacknowledged) must be
    // answered with the FIN again, not a bare ACK. The sender acknowledges every FIN it
    // gets, and then both sides are closed: nothing more is sent.
    let sc = |loss_ba: &str| flow("", loss_ba, "iw = 4\napp = { bytes = \"20KB\" }", "30s");
    let clean = server_view(&sc(""));
    let from_client = clean.iter().filter(|p| !p.2).count() as u64;
    assert!(clean.iter().rev().find(|p| !p.2).unwrap().1 & FIN != 0);
    let lossy = server_view(&sc(&format!(
        "loss_ba = {{ kind = \"list\", drop = [{}] }}",
        from_client - 1
    )));
    let fins: Vec<_> = lossy.iter().filter(|p| !p.2 && p.1 & FIN != 0).collect();
    assert!(!fins.is_empty(), "a repeated FIN reaches the sender");
    for f in &fins {
        assert!(
            lossy
                .iter()
                .any(|p| p.2 && p.0 >= f.0 && p.0 < f.0 + 1_000 && p.1 & (ACK | FIN | SYN) == ACK),
            "the sender acknowledges the FIN at {}",
            f.0
        );
    }
    let last = lossy.last().unwrap();
    assert!(
        last.2 && last.1 & (ACK | FIN | SYN) == ACK,
        "the last packet is the sender's ACK"
    );
    assert!(last.0 < fins.last().unwrap().0 + 1_000);
}

#[test]
fn lost_final_ack_makes_the_receiver_repeat_its_fin() {
    // The sender's ACK of the receiver's FIN (the last packet on the data direction) is
    // lost: the receiver's FIN timer repeats the FIN+ACK and the sender acknowledges it
    // again (RFC 9293 §3.10.7.4, TIME-WAIT: acknowledge a retransmitted FIN).
    let sc = |loss: &str| flow(loss, "", "iw = 4\napp = { bytes = \"20KB\" }", "30s");
    let clean = server_view(&sc(""));
    let from_server = clean.iter().filter(|p| p.2).count() as u64;
    let lossy = server_view(&sc(&format!(
        "loss = {{ kind = \"list\", drop = [{}] }}",
        from_server - 1
    )));
    let fins: Vec<_> = lossy.iter().filter(|p| !p.2 && p.1 & FIN != 0).collect();
    assert_eq!(fins.len(), 2, "the receiver repeats its FIN");
    // after its retransmission timer (RFC 6298: at least the 1 s minimum)
    assert!(fins[1].0 - fins[0].0 >= 1_000_000_000);
    let acks_after: Vec<_> = lossy
        .iter()
        .filter(|p| p.2 && p.0 >= fins[1].0 && p.1 & (ACK | FIN | SYN) == ACK)
        .collect();
    assert_eq!(
        acks_after.len(),
        1,
        "the sender acknowledges the repeated FIN"
    );
    assert_eq!(
        lossy.last().unwrap().0,
        acks_after[0].0,
        "then both sides are closed"
    );
}
