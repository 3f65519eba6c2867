//! During fast recovery the inflated window (RFC 5681 §3.2 step 4, RFC 6582 §3.2 step 3)
//! lets Reno and NewReno send new data before the loss is repaired: one new segment per
//! duplicate ACK once the inflation exceeds the flight. A sender that only retransmits
//! in recovery (the survivor "Recovery::send does nothing" of `make mutants`) sends
//! none and then bursts at the recovery's end.

mod common;
use common::*;

/// (new-data segments sent between the fast retransmit and the ACK that repairs the
/// loss, retransmissions in that span, the flight at the fast retransmit in segments).
fn new_data_during_recovery(tcp: &str) -> (usize, usize, u64) {
    let out = run_traced(&scripted(tcp, false, &[40]));
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 3_000_000, "{tcp}");
    assert_eq!(f.sender.fast_recoveries, 1, "{tcp}");
    assert_eq!(f.sender.timeouts, 0, "{tcp}");
    let tr = &out.traces[0].1;
    let fr = tr
        .seg_retx
        .iter()
        .position(|&r| r)
        .expect("a retransmission");
    let (t_fr, lost) = (tr.seg_t_ns[fr], tr.seg_seq[fr]);
    let high = tr.seg_seq[..fr]
        .iter()
        .zip(&tr.seg_len[..fr])
        .map(|(s, l)| s + *l as u64)
        .max()
        .unwrap();
    // the first sender sample at which the lost segment is acknowledged
    let repaired = tr
        .t_ns
        .iter()
        .zip(&tr.snd_una)
        .find(|&(&t, &una)| t >= t_fr && una > lost)
        .map(|(&t, _)| t)
        .expect("the loss is repaired");
    let span = fr + 1..tr.seg_t_ns.len();
    let in_span = |i: &usize| tr.seg_t_ns[*i] < repaired;
    let new = span
        .clone()
        .filter(in_span)
        .filter(|&i| !tr.seg_retx[i] && tr.seg_seq[i] >= high)
        .count();
    let retx = span.filter(in_span).filter(|&i| tr.seg_retx[i]).count();
    (new, retx, (high - lost) / 1460)
}

#[test]
fn reno_and_newreno_send_new_data_on_inflated_window() {
    for tcp in ["reno", "newreno"] {
        let (new, retx, n) = new_data_during_recovery(tcp);
        // A flight of n segments with the first lost: n - 1 duplicate ACKs; ssthresh =
        // n/2 segments, the window inflates to n/2 + n - 1 against a flight of n, so
        // n/2 - 1 new segments go out before the repair's ACK.
        assert!(n >= 8, "{tcp}: flight {n}");
        let want = n / 2 - 1;
        assert!(
            new.abs_diff(want as usize) <= 1,
            "{tcp}: {new} new segments during recovery, flight {n}: want {want}"
        );
        assert_eq!(retx, 0, "{tcp}: only the one fast retransmission");
    }
}

/// RFC 6582 §3.2 step 3, full ACK, option (2): cwnd = min(ssthresh, max(FlightSize,
/// SMSS) + SMSS). Near the end of a transfer the full ACK leaves little in flight, so
/// the window falls well below ssthresh (the survivor "`+` → `*`" of `make mutants`
/// set ssthresh).
#[test]
fn newreno_full_ack_sets_flight_plus_one_segment() {
    let toml = path(
        "10Mbps",
        "50ms",
        "1000pkt",
        "loss = { kind = \"list\", drop = [20] }",
        "tcp = \"newreno\"\nsack = false\nrwnd = \"1MB\"\napp = { bytes = \"43800B\" }",
        "20s",
    );
    let out = run_traced(&toml);
    let f = &out.result.flows[0];
    assert_eq!(f.bytes_delivered, 43_800);
    assert_eq!((f.sender.fast_recoveries, f.sender.timeouts), (1, 0));
    let tr = &out.traces[0].1;
    let lost = tr.seg_seq[tr
        .seg_retx
        .iter()
        .position(|&r| r)
        .expect("a retransmission")];
    // the ACK that repairs the loss ends recovery (one loss: it is a full ACK)
    let k = tr
        .snd_una
        .iter()
        .position(|&u| u > lost)
        .expect("the loss is repaired");
    let flight = tr.snd_max[k] - tr.snd_una[k];
    let want = tr.ssthresh[k].min(flight.max(1460) + 1460);
    assert!(
        want < tr.ssthresh[k],
        "flight {flight}: the test needs a small flight"
    );
    assert_eq!(tr.cwnd[k], want, "cwnd after the full ACK, flight {flight}");
}
