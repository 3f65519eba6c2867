//! Same scenario + seed -> identical output bytes; another seed -> different losses.

mod common;
use common::*;
use longpipe_core::{run_json, RunOptions, RunOutput};

const SC: &str = r#"
duration = "20s"
[[link]]
a = "s"
b = "r"
rate = "100Mbps"
delay = "1ms"
[[link]]
a = "r"
b = "c"
rate = "10Mbps"
delay = "40ms"
queue = { limit = "50pkt" }
loss = { kind = "bernoulli", p = 0.005 }
[[flow]]
src = "s"
dst = "c"
count = 3
rwnd = "256KB"
"#;

#[test]
fn same_seed_same_bytes_other_seed_differs() {
    let j = to_json(SC);
    let mk = |seed| {
        let o = run_json(
            &j,
            &RunOptions {
                seed: Some(seed),
                pcap: vec!["r-c".into()],
                ..Default::default()
            },
        )
        .unwrap();
        (o.result.to_json(), o.pcaps[0].1.clone())
    };
    let (a, pa) = mk(1);
    let (b, pb) = mk(1);
    let (c, _) = mk(2);
    assert_eq!(a, b);
    assert_eq!(pa, pb);
    assert_ne!(a, c);
}

#[test]
fn adding_a_flow_does_not_change_link_loss_stream() {
    // The loss stream of a link is derived from its name, not from the number or order
    // of flows: with a second flow that starts at 10 s, the first 10 s of the first
    // flow are the same packet for packet (same losses, same retransmissions).
    let one = SC.replace("count = 3", "count = 1");
    let two = format!("{one}\n[[flow]]\nsrc = \"s\"\ndst = \"c\"\nstart = \"10s\"\n");
    let a = run_traced(&one);
    let b = run_traced(&two);
    let early = |o: &RunOutput| {
        let t = &o.traces.iter().find(|(f, _)| *f == 0).unwrap().1;
        let n = t
            .seg_t_ns
            .iter()
            .take_while(|&&x| x < 10_000_000_000)
            .count();
        (
            t.seg_t_ns[..n].to_vec(),
            t.seg_seq[..n].to_vec(),
            t.seg_retx[..n].to_vec(),
        )
    };
    let (ea, eb) = (early(&a), early(&b));
    assert!(
        ea.2.iter().filter(|&&r| r).count() > 3,
        "the first 10 s have losses"
    );
    assert_eq!(ea, eb);
    // and the whole runs differ afterwards (the second flow is there)
    assert_ne!(a.result.to_json(), b.result.to_json());
}

#[test]
fn streamed_time_series_equal_the_held_ones() {
    // A run that hands its time series to a sink in chunks gives, concatenated per
    // flow, exactly the samples a run that holds them gives: none lost or doubled at
    // a chunk boundary, none missing at the end; and it keeps none itself.
    use longpipe_core::sim::TraceSink;
    use longpipe_core::tcp::FlowTrace;
    use longpipe_core::TraceSel;
    use std::sync::{Arc, Mutex};
    // 160 s: about 160 000 events (hops into the last link are folded), so chunks go
    // out during the run (every 65 536 events).
    let j = to_json(&SC.replace("20s", "160s"));
    let held = run_json(
        &j,
        &RunOptions {
            trace: TraceSel::All,
            ..Default::default()
        },
    )
    .unwrap();
    let got: Arc<Mutex<Vec<(usize, FlowTrace)>>> = Arc::default();
    let chunks = Arc::new(Mutex::new(0usize));
    let (g, c) = (got.clone(), chunks.clone());
    let streamed = run_json(
        &j,
        &RunOptions {
            trace: TraceSel::All,
            trace_sink: Some(TraceSink {
                write: Arc::new(move |i, t: FlowTrace| {
                    *c.lock().unwrap() += 1;
                    let mut g = g.lock().unwrap();
                    match g.iter_mut().find(|(j, _)| *j == i) {
                        None => g.push((i, t)),
                        Some((_, acc)) => {
                            acc.t_ns.extend(t.t_ns);
                            acc.cwnd.extend(t.cwnd);
                            acc.ssthresh.extend(t.ssthresh);
                            acc.snd_una.extend(t.snd_una);
                            acc.snd_max.extend(t.snd_max);
                            acc.rtt_t_ns.extend(t.rtt_t_ns);
                            acc.rtt_ns.extend(t.rtt_ns);
                            acc.seg_t_ns.extend(t.seg_t_ns);
                            acc.seg_seq.extend(t.seg_seq);
                            acc.seg_len.extend(t.seg_len);
                            acc.seg_retx.extend(t.seg_retx);
                            acc.sack_t_ns.extend(t.sack_t_ns);
                            acc.sack_left.extend(t.sack_left);
                            acc.sack_right.extend(t.sack_right);
                        }
                    }
                }),
                chunk_rows: 500,
            }),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(streamed.traces.is_empty());
    assert_eq!(streamed.result.to_json(), held.result.to_json());
    let mut got = std::mem::take(&mut *got.lock().unwrap());
    got.sort_by_key(|(i, _)| *i);
    assert_eq!(got.len(), 3);
    assert!(
        *chunks.lock().unwrap() >= 3 * 3,
        "several chunks per flow, not one at the end: {}",
        chunks.lock().unwrap()
    );
    for ((i, a), (j, b)) in got.iter().zip(&held.traces) {
        assert_eq!(i, j);
        assert!(a.t_ns.len() > 1000);
        assert_eq!(a.t_ns, b.t_ns);
        assert_eq!(a.cwnd, b.cwnd);
        assert_eq!(a.ssthresh, b.ssthresh);
        assert_eq!(a.snd_una, b.snd_una);
        assert_eq!(a.rtt_ns, b.rtt_ns);
        assert_eq!(a.seg_seq, b.seg_seq);
        assert_eq!(a.seg_retx, b.seg_retx);
        assert_eq!(a.sack_left, b.sack_left);
    }
}
