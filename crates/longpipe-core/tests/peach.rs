//! TCP-Peach / Peach+ / Cherry end to end: scripted losses (the `seq` loss model, as
//! ns-3's TcpSeqErrorModel) and the receiver's probe-ACK mechanism.

mod common;
use common::*;

/// server -> client over 10 Mbit/s with a one-way delay of 275 ms (RTT 550 ms, as
/// seed 004), a priority queue, the forward segments starting at `drop` lost once.
fn sat(tcp: &str, drop: &[u64], extra_flow: &str, duration: &str) -> String {
    let list = drop
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"
duration = "{duration}"
[[link]]
a = "server"
b = "client"
rate = "10Mbps"
delay = "275ms"
queue = {{ limit = "1000pkt", kind = "priority" }}
loss = {{ kind = "seq", drop = [{list}] }}
[[flow]]
src = "server"
dst = "client"
{classic}tcp = "{tcp}"
sack = true
{extra_flow}
"#,
        classic = classic_unless_named(extra_flow)
    )
}

#[test]
fn jump_start_nil_segments_repair_a_lost_first_segment() {
    // The first data segment (seq 1) is lost. NewReno has nothing else in flight and
    // waits for its RTO; Peach+'s Jump Start NIL segments are copies of it: the first
    // that arrives delivers it, and no retransmission or timeout is needed.
    let flow = "rwnd = \"64KiB\"\napp = { bytes = \"200KB\" }";
    let nr = run(&sat("newreno", &[1], flow, "30s"));
    let pp = run(&sat("peach+", &[1], flow, "30s"));
    let (n, p) = (&nr.result.flows[0], &pp.result.flows[0]);
    assert_eq!((n.sender.timeouts, p.sender.timeouts), (1, 0));
    assert_eq!(p.sender.retransmitted_segments, 0);
    assert_eq!(p.bytes_delivered, 200_000);
    // the SYN-ACK's unscaled window: 65535 B = 44 segments, so 43 NIL segments in the
    // first round trip, all answered
    let x = p.extra.as_ref().expect("peach+ reports probe counters");
    let l = pp.result.links[0].classes.as_ref().expect("class counters");
    assert!(x.probe_segments >= 43, "{x:?}");
    assert_eq!(l.packets_low, x.probe_segments);
    assert_eq!(x.probe_acks, x.probe_segments, "every probe got through");
    assert!(
        p.completion_time_s.unwrap() + 1.0 < n.completion_time_s.unwrap(),
        "peach+ {:?} newreno {:?}",
        p.completion_time_s,
        n.completion_time_s
    );
}

#[test]
fn quick_recovery_restores_the_window_after_a_link_error() {
    // One segment lost mid-transfer (link error, no congestion: the probes get
    // through). NewReno halves its window for good; Peach and Peach+ halve it, and the
    // dummy / NIL ACKs bring it back within a round trip of the recovery.
    let seg = 1 + 300 * 1460;
    let flow = "rwnd = \"2MB\"";
    let w0_and_after = |tcp: &str| {
        let out = run_traced(&sat(tcp, &[seg], flow, "20s"));
        let f = &out.result.flows[0];
        assert_eq!(
            (f.sender.fast_recoveries, f.sender.timeouts),
            (1, 0),
            "{tcp}"
        );
        let tr = &out.traces[0].1;
        // the reduction: the first sample whose cwnd is at most half the one before
        let i = (1..tr.cwnd.len())
            .find(|&i| tr.cwnd[i] * 2 <= tr.cwnd[i - 1] + 2920)
            .expect("a reduction");
        let w0 = tr.cwnd[i - 1];
        // the window 1.5 s (about 2.5 RTT) after the reduction
        let t1 = tr.t_ns[i] + 1_500_000_000;
        let j = tr.t_ns.iter().position(|&t| t >= t1).unwrap();
        (w0, tr.cwnd[j])
    };
    let (w0, after) = w0_and_after("newreno");
    assert!(after * 10 < w0 * 7, "newreno: {w0} -> {after}");
    for tcp in ["peach", "peach+"] {
        let (w0, after) = w0_and_after(tcp);
        assert!(after * 10 > w0 * 9, "{tcp}: {w0} -> {after}");
    }
}

#[test]
fn plain_receiver_turns_dummies_into_duplicate_acks() {
    // No loss at all. With flagged probe ACKs Peach never enters recovery; with an
    // unmodified receiver its dummy segments (old data) draw duplicate ACKs that the
    // sender cannot tell apart: spurious fast retransmits, and no window growth from
    // the probes.
    let flow = |mode: &str| format!("rwnd = \"1MB\"\npeach = {{ probe_ack = \"{mode}\" }}");
    let flagged = run(&sat("peach", &[], &flow("flagged"), "20s"));
    let plain = run(&sat("peach", &[], &flow("plain"), "20s"));
    let (f, p) = (&flagged.result.flows[0], &plain.result.flows[0]);
    assert_eq!(f.sender.fast_recoveries, 0);
    assert!(f.extra.as_ref().unwrap().probe_acks > 0);
    assert!(p.sender.fast_recoveries > 0, "{:?}", p.sender);
    assert!(p.sender.retransmitted_segments > 0);
    assert_eq!(p.extra.as_ref().unwrap().probe_acks, 0);
    assert!(f.goodput_bps > p.goodput_bps);
    // and the reverse link carried low-priority ACKs only in the flagged mode
    let low_acks =
        |o: &longpipe_core::RunOutput| o.result.links[1].classes.as_ref().unwrap().packets_low;
    assert!(low_acks(&flagged) > 0);
    assert_eq!(low_acks(&plain), 0);
}

#[test]
fn probes_yield_to_normal_traffic_at_a_priority_queue() {
    // A congested 2 Mbit/s bottleneck (a router's queue: the server's own interface
    // holds its segments back instead) shared with a NewReno flow: Peach+'s NIL
    // segments are dropped (or pushed out) before any normal packet.
    let text = r#"
duration = "40s"
[[link]]
a = "router"
b = "client"
rate = "2Mbps"
delay = "49ms"
queue = { limit = "30pkt", kind = "priority" }
[[link]]
a = "server"
b = "router"
rate = "100Mbps"
delay = "1ms"
queue = { limit = "1000pkt" }
[[flow]]
src = "server"
dst = "client"
stack = "classic"
tcp = "newreno"
sack = true
rwnd = "1MB"
[[flow]]
src = "server"
dst = "client"
tcp = "peach+"
sack = true
rwnd = "1MB"
start = "2s"
"#;
    let out = run(text);
    let l = &out.result.links[0];
    let c = l.classes.as_ref().unwrap();
    assert!(c.drops_queue_low > 0, "{c:?}");
    // a priority queue drops a normal packet only when no low one is left to push out
    assert!(c.packets_low > 0);
    assert!(l.counters.drops_queue >= c.drops_queue_low);
    // nothing is lost on the link, so every loss either flow saw is a queue drop
    assert_eq!(l.counters.drops_loss, 0);
}

#[test]
fn every_member_is_deterministic_and_completes_a_lossy_transfer() {
    for tcp in ["peach", "peach+", "cherry"] {
        let text = format!(
            r#"
duration = "120s"
seed = 3
[[link]]
a = "server"
b = "client"
rate = "10Mbps"
delay = "275ms"
queue = {{ limit = "1000pkt", kind = "peach-droptail" }}
loss = {{ kind = "bernoulli", p = 0.05 }}
[[flow]]
src = "server"
dst = "client"
tcp = "{tcp}"
sack = true
rwnd = "1MB"
app = {{ bytes = "2MB" }}
"#
        );
        let a = run(&text);
        let b = run(&text);
        assert_eq!(a.result.to_json(), b.result.to_json(), "{tcp}");
        assert_eq!(a.result.flows[0].bytes_delivered, 2_000_000, "{tcp}");
    }
}
