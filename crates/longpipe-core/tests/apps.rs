//! Applications on simulated paths: closed forms on idle paths (the flow completion
//! time of a short transfer in slow start, a web page's load time in round trips), a
//! stream that rebuffers when the link stops, request-response over a PEP, and
//! determinism with random workloads.

mod common;
use common::*;
use longpipe_core::app::records::UNFINISHED;
use longpipe_core::{run_json, RunOptions};

/// A server and a client `rtt_ms` apart on a fast link (serialisation negligible).
fn idle_path(rtt_ms: u64, flow: &str, duration: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[[link]]
a = "server"
b = "client"
rate = "1Gbps"
delay = "{}ms"
queue = {{ limit = "10000pkt" }}
[[flow]]
src = "server"
dst = "client"
{}{flow}
"#,
        rtt_ms / 2,
        classic_unless_named(flow)
    )
}

#[test]
fn short_flow_in_slow_start_takes_the_handshake_and_ceil_log2_rounds() {
    // N segments with an initial window of w segments and an ACK per segment: round
    // k (from 1) sends w·2^(k−1); the last byte arrives half an RTT after the last round
    // begins: FCT = RTT (handshake) + (k − 1) RTT + RTT/2, k = ceil(log2(N/w + 1)).
    for (size, iw, mss) in [
        (100_000u64, 1u64, 1460u64),
        (100_000, 10, 1460),
        (14_600, 10, 1460),
        (1_000_000, 4, 1000),
    ] {
        let n = size.div_ceil(mss);
        let k = ((n as f64 / iw as f64) + 1.0).log2().ceil();
        let rtt = 0.2;
        let want = rtt * (k + 0.5);
        let sc = idle_path(
            200,
            &format!(
                r#"mss = {mss}
iw = {iw}
delayed_ack = false
rwnd = "16MB"
app = {{ kind = "arrivals", rate = "1/s", size = "{size}B" }}"#
            ),
            "30s",
        );
        let o = run(&sc);
        let r = &o.records;
        assert!(r.xfer_flow.len() >= 2, "{} transfers", r.xfer_flow.len());
        for i in 0..r.xfer_flow.len() {
            if r.xfer_end_ns[i] == UNFINISHED {
                continue;
            }
            let fct = (r.xfer_end_ns[i] - r.xfer_start_ns[i]) as f64 * 1e-9;
            // plus serialisation at 1 Gbit/s: the last round's segments back to back, and
            // as much again spread over the earlier rounds by the ACK clock
            let ser = 2.0 * (n * (mss + 40) * 8) as f64 / 1e9 + 0.001;
            assert!(
                fct >= want && fct < want + ser,
                "size {size}, iw {iw}: FCT {fct} s, closed form {want} s (k = {k})"
            );
        }
    }
}

#[test]
fn web_page_load_on_an_idle_path_is_its_round_trips() {
    // a 10 kB main object and 3 embedded objects of 5 kB, all within the initial
    // window; 6 connections. First page: handshake + main request (2 RTT), parsing,
    // then new connections' handshakes + requests (2 RTT). Later pages: 1 RTT each
    // for the main and the embedded objects on the open connections.
    let rtt = 0.6;
    let sc = idle_path(
        600,
        r#"stack = "linux"
app = { kind = "web", main_size = "10KB", embedded_size = "5KB", embedded_count = 3, parsing_time = "100ms", reading_time = "5s" }"#,
        "30s",
    );
    let o = run(&sc);
    let r = &o.records;
    let loads: Vec<f64> = (0..r.page_flow.len())
        .filter(|&i| r.page_end_ns[i] != UNFINISHED)
        .map(|i| (r.page_end_ns[i] - r.page_start_ns[i]) as f64 * 1e-9)
        .collect();
    assert!(loads.len() >= 3, "{loads:?}");
    let first = 4.0 * rtt + 0.1;
    assert!(
        (loads[0] - first).abs() < 0.003,
        "first page {} s, want {first}",
        loads[0]
    );
    for l in &loads[1..] {
        let want = 2.0 * rtt + 0.1;
        assert!((l - want).abs() < 0.003, "later page {l} s, want {want}");
    }
    assert!(r.page_bytes.iter().all(|&b| b == 25_000));
    assert!(r.page_objects.iter().all(|&n| n == 4));
    // the request order: main on connection 0, then 0, 1, 2 for the embedded objects
    let conns: Vec<u64> = r.req_conn.iter().take(4).copied().collect();
    assert_eq!(conns, vec![0, 0, 1, 2]);
    let res = &o.result;
    let app = res.flows[0].app.as_ref().unwrap();
    assert_eq!(app.kind, "web");
    assert_eq!(app.pages, Some(loads.len() as u64));
    let w = res.workload.as_ref().unwrap();
    assert_eq!(w.users, 1);
    assert_eq!(w.pages.as_ref().unwrap().count, loads.len() as u64);
    // the goodput counts the bytes the client read: the finished pages' and what has
    // arrived of the page still loading at the end
    let done: u64 = r.page_bytes.iter().sum();
    let read = res.flows[0].bytes_delivered;
    assert!(read >= done && read <= done + 25_000, "{read} vs {done}");
}

#[test]
fn a_stream_rebuffers_when_the_link_stops() {
    // 2 Mbit/s video over 10 Mbit/s; the link is down from 40 s to 70 s: the 30 s
    // buffer... holds 24-30 s, so the video stalls a few seconds before the link returns
    let sc = r#"
duration = "120s"
[[link]]
a = "server"
b = "client"
rate = "10Mbps"
delay = "20ms"
queue = { limit = "1000pkt" }
[[link.schedule]]
at = "40s"
up = false
[[link.schedule]]
at = "75s"
up = true
[[flow]]
src = "server"
dst = "client"
stack = "linux"
app = { kind = "stream", bitrate = "2Mbps" }
"#;
    let o = run(sc);
    let r = &o.records;
    let startup: Vec<usize> = (0..r.stall_flow.len())
        .filter(|&i| r.stall_startup[i])
        .collect();
    assert_eq!(startup.len(), 1);
    let stalls: Vec<(f64, f64)> = (0..r.stall_flow.len())
        .filter(|&i| !r.stall_startup[i])
        .map(|i| {
            (
                r.stall_start_ns[i] as f64 * 1e-9,
                r.stall_end_ns[i] as f64 * 1e-9,
            )
        })
        .collect();
    assert_eq!(stalls.len(), 1, "{stalls:?}");
    let (s, e) = stalls[0];
    // the buffer holds at most 30 s when the link stops at 40 s, and at least 24 s
    // less what plays while a chunk downloads (1.5 MB at 10 Mbit/s after a request)
    assert!(s > 40.0 + 20.0 && s < 40.0 + 30.1, "stall from {s}");
    // it resumes once a chunk (6 s at 2 Mbit/s = 1.5 MB) has arrived after 75 s: after
    // the first retransmission that gets through (the RTO backed off during the outage:
    // 0.2 s doubled up to 25.6 s, the last retry before 75 s at about 51 s after 40 s)
    assert!(e > 75.0 && e < 110.0, "to {e}");
    let app = o.result.flows[0].app.as_ref().unwrap();
    assert_eq!(app.stalls, Some(1));
    assert!(app.rebuffer_ratio.unwrap() > 0.0);
    assert!(app.startup_s.unwrap() < 2.0, "{:?}", app.startup_s);
}

#[test]
fn random_workloads_are_deterministic_and_users_draw_their_own_pages() {
    let sc = |n: u32| {
        format!(
            r#"
duration = "60s"
[[link]]
a = "server"
b = "gw"
rate = "100Mbps"
delay = "5ms"
[[link]]
a = "gw"
b = "client"
rate = "5Mbps"
delay = "250ms"
queue = {{ limit = "200pkt" }}
loss = {{ kind = "bernoulli", p = 0.01 }}
[[flow]]
src = "server"
dst = "client"
count = {n}
app = {{ kind = "web", reading_time = {{ kind = "exponential", mean = "3s" }} }}
[[flow]]
src = "server"
dst = "client"
app = {{ kind = "arrivals", rate = "2/s", size = {{ kind = "pareto", shape = 1.2, scale = "10KB", max = "5MB" }} }}
"#
        )
    };
    let a = run_json(&to_json(&sc(3)), &RunOptions::default()).unwrap();
    let b = run_json(&to_json(&sc(3)), &RunOptions::default()).unwrap();
    assert_eq!(a.result.to_json(), b.result.to_json());
    assert_eq!(a.records.req_end_ns, b.records.req_end_ns);
    assert_eq!(a.records.xfer_end_ns, b.records.xfer_end_ns);
    assert!(a.records.page_flow.len() > 10);
    // a fourth user changes the network, not the first user's pages
    let c = run_json(&to_json(&sc(4)), &RunOptions::default()).unwrap();
    let pages = |o: &longpipe_core::RunOutput| -> Vec<(u64, u32)> {
        (0..o.records.page_flow.len())
            .filter(|&i| o.records.page_flow[i] == 0 && o.records.page_end_ns[i] != UNFINISHED)
            .map(|i| (o.records.page_bytes[i], o.records.page_objects[i]))
            .collect()
    };
    let (pa, pc) = (pages(&a), pages(&c));
    let k = pa.len().min(pc.len());
    assert!(k >= 3);
    assert_eq!(pa[..k], pc[..k]);
    assert_ne!(a.result.to_json(), c.result.to_json());
}

#[test]
fn user_groups_add_up_each_users_flows() {
    let sc = r#"
duration = "40s"
[[link]]
a = "server"
b = "client"
rate = "20Mbps"
delay = "100ms"
[[flow]]
src = "server"
dst = "client"
app = { kind = "bulk", bytes = "1MB" }
[[user]]
name = "home"
count = 3
[[user.flow]]
src = "server"
dst = "client"
app = { kind = "web", reading_time = "2s" }
[[user.flow]]
src = "server"
dst = "client"
app = { kind = "arrivals", rate = "1/s", size = "200KB" }
"#;
    let o = run(sc);
    let r = &o.result;
    // the [[flow]] first, then user 0's two flows, user 1's, user 2's
    assert_eq!(r.flows.len(), 7);
    assert_eq!(r.users.len(), 3);
    for (i, u) in r.users.iter().enumerate() {
        assert_eq!(u.name, format!("home#{i}"));
        assert_eq!(u.flows, vec![1 + 2 * i, 2 + 2 * i]);
        assert_eq!(u.app.kind, "web+arrivals");
        let g: f64 = u.flows.iter().map(|&f| r.flows[f].goodput_bps).sum();
        assert_eq!(u.goodput_bps, g);
        assert!(u.app.pages.unwrap() > 0 && u.app.transfers.unwrap() > 0);
        assert!(u.app.transfer_rate_mean_bps.unwrap() > 0.0);
    }
    // three users (the bulk flow is no user)
    let w = r.workload.as_ref().unwrap();
    assert_eq!(w.users, 3);
    assert_eq!(w.per_user.goodput_bps.as_ref().unwrap().users, 3);
    assert_eq!(w.per_user.transfer_rate_bps.as_ref().unwrap().users, 3);
    let json = r.to_json();
    assert!(json.contains("\"home#2\""));
    // errors name the user group's field
    for (bad, path) in [
        (sc.replace("count = 3", "count = 0"), "user[0].count"),
        (
            sc.replace(
                "kind = \"arrivals\", rate = \"1/s\",",
                "kind = \"arrivals\",",
            ),
            "user[0].flow[1].app.rate",
        ),
        (
            sc.replacen(
                "dst = \"client\"\napp = { kind = \"web\"",
                "dst = \"nowhere\"\napp = { kind = \"web\"",
                1,
            ),
            "user[0].flow[0].dst",
        ),
    ] {
        let e = run_json(&to_json(&bad), &RunOptions::default())
            .err()
            .unwrap();
        assert_eq!(e.path, path, "{e}");
    }
}
