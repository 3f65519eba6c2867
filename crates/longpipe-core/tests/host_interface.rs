//! A host never loses its own segments at its own interface (issue 25 item 2): behind
//! a 100 Mbit/s access link with the default 100-packet queue to a 10 Mbit/s, 550 ms
//! hop, the sender's segments wait in its socket when the access queue is full
//! (Linux's qdisc back-pressure and TCP small queues), the router keeps drop-tail, and
//! the flow does about as well as on the single 10 Mbit/s link.

mod common;
use common::*;

/// server -(100 Mbit/s, 1 ms, default 100-packet queue)- router -(10 Mbit/s, 274 ms,
/// 500 packets: about one bandwidth-delay product, as in seed 004's setting)- client,
/// or the 10 Mbit/s, 275 ms link alone.
fn sc(access: bool, flow: &str, loss: &str) -> String {
    let links = if access {
        format!(
            r#"
[[node]]
name = "router"
kind = "router"
[[link]]
a = "server"
b = "router"
rate = "100Mbps"
delay = "1ms"
[[link]]
a = "router"
b = "client"
rate = "10Mbps"
delay = "274ms"
queue = {{ limit = "500pkt" }}
{loss}"#
        )
    } else {
        format!(
            r#"
[[link]]
a = "server"
b = "client"
rate = "10Mbps"
delay = "275ms"
queue = {{ limit = "500pkt" }}
{loss}"#
        )
    };
    format!(
        r#"
duration = "60s"
seed = 1
{links}
[[flow]]
src = "server"
dst = "client"
rwnd = "1MB"
{flow}
"#
    )
}

/// (goodput bit/s, drops at the server's interface, units held there, drops elsewhere)
fn measure(access: bool, flow: &str, loss: &str) -> (f64, u64, u64, u64) {
    let out = run(&sc(access, flow, loss));
    let r = &out.result;
    let own = r
        .links
        .iter()
        .find(|l| l.a == "server")
        .expect("server link");
    let other: u64 = r
        .links
        .iter()
        .filter(|l| l.a != "server")
        .map(|l| l.counters.drops_queue)
        .sum();
    (
        r.flows[0].goodput_bps,
        own.counters.drops_queue,
        own.counters.held,
        other,
    )
}

#[test]
fn classic_hybla_behind_an_access_link_loses_nothing_at_its_own_interface() {
    let flow = r#"tcp = "hybla"
stack = "classic""#;
    let (g1, _, _, _) = measure(false, flow, "");
    let (g2, own_drops, held, _) = measure(true, flow, "");
    eprintln!("hybla: single link {g1:.0} bit/s, with access {g2:.0} bit/s, held {held}");
    assert_eq!(
        own_drops, 0,
        "nothing dropped at the sender's own interface"
    );
    assert!(
        held > 0,
        "the access queue filled: segments waited in the socket"
    );
    assert!(g2 > 0.8 * g1, "goodput {g2} near the single link's {g1}");
}

#[test]
fn peach_at_one_percent_errors_behind_an_access_link() {
    let flow = r#"tcp = "peach"
stack = "classic""#;
    let loss = r#"loss = { kind = "bernoulli", p = 0.01 }"#;
    let (g1, _, _, _) = measure(false, flow, loss);
    let (g2, own_drops, held, _) = measure(true, flow, loss);
    eprintln!("peach 1%: single link {g1:.0} bit/s, with access {g2:.0} bit/s, held {held}");
    assert_eq!(own_drops, 0);
    assert!(g2 > 0.8 * g1, "goodput {g2} near the single link's {g1}");
}

#[test]
fn forwarded_traffic_still_meets_drop_tail_at_a_hosts_interface() {
    // the router's interface toward the client is a host's too (it could have
    // endpoints); a fast sender behind it overflows its queue, which drops
    let (_, _, _, other) = measure(
        true,
        r#"tcp = "hybla"
stack = "classic""#,
        "",
    );
    assert!(
        other > 0,
        "the router's drop-tail queue dropped forwarded segments"
    );
}
