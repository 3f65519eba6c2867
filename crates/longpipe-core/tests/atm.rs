//! Cell-level ATM under TCP: AAL5 overhead, switch buffers and discard policies, UPC
//! tagging, reassembly discards, and the scenario checks.

mod common;
use common::*;
use longpipe_core::results::LinkResult;
use longpipe_core::{run_json, RunOptions};

/// s -- sw -- r, both lines ATM at `rate`; one flow.
fn one_switch(rate: &str, flow: &str, extra_link: &str) -> String {
    format!(
        r#"
duration = "20s"
warmup = "5s"
[[node]]
name = "sw"
kind = "atm-switch"
[[link]]
a = "s"
b = "sw"
rate = "{rate}"
delay = "5ms"
layer2 = {{ kind = "atm" {extra_link} }}
[[link]]
a = "sw"
b = "r"
rate = "{rate}"
delay = "5ms"
layer2 = {{ kind = "atm" }}
[[flow]]
src = "s"
dst = "r"
rwnd = "1MB"
{classic}{flow}
"#,
        classic = classic_unless_named(flow)
    )
}

fn link<'a>(r: &'a longpipe_core::results::SimResult, a: &str, b: &str) -> &'a LinkResult {
    r.links.iter().find(|l| l.a == a && l.b == b).unwrap()
}

#[test]
fn goodput_is_the_cell_payload_rate_less_aal5_padding() {
    // 10 Mbit/s of cells: 23585 cells/s. A packet of L bytes takes ceil((L + 8)/48) cells.
    let cell_rate = 10e6 / 424.0;
    for (mtu, llc, cells) in [
        (1500, "", 32),
        (1500, ", llc = true", 32),
        (1528, "", 32),
        (1529, "", 33),
        (552, "", 12),
    ] {
        let out = run(&one_switch("10Mbps", &format!("mtu = {mtu}"), llc));
        let f = &out.result.flows[0];
        let expect = cell_rate / cells as f64 * (mtu - 40) as f64 * 8.0;
        println!("mtu {mtu}{llc}: {} vs {expect}", f.goodput_bps);
        assert!(
            f.goodput_bps > 0.99 * expect && f.goodput_bps < 1.001 * expect,
            "mtu {mtu}{llc}: {} vs {expect}",
            f.goodput_bps
        );
        let l = link(&out.result, "sw", "r");
        assert!(l.utilization > 0.99, "the line is full of cells");
        let l2 = l.l2.as_ref().and_then(|x| x.atm()).unwrap();
        assert_eq!(l2.sender, "port");
        assert_eq!(l2.port.as_ref().unwrap().cells_dropped, 0);
        let rx = l2.reassembly.as_ref().unwrap();
        assert!(rx.pdus_delivered > 0 && rx.pdus_lost == 0);
        assert!(
            l2.adapter.is_none() && l2.cells_tagged.is_none(),
            "no adapter, no UPC"
        );
    }
    // the seed's 89 % cap: 552 B packets carry 512 B of TCP payload in 12 × 48 B
    let out = run(&one_switch("10Mbps", "mtu = 552", ""));
    let eff = out.result.flows[0].goodput_bps / (10e6 * 48.0 / 53.0);
    assert!((eff - 512.0 / 576.0).abs() < 0.01, "{eff}");
}

#[test]
fn cells_lost_on_a_line_cost_whole_packets_at_reassembly() {
    let sc = one_switch("10Mbps", "mtu = 1500\ntcp = \"newreno\"", "").replacen(
        "layer2 = { kind = \"atm\"  }",
        "layer2 = { kind = \"atm\" }\nloss = { kind = \"bernoulli\", p = 0.0005 }",
        1,
    );
    let out = run(&sc);
    let f = &out.result.flows[0];
    let l = link(&out.result, "s", "sw");
    let l2 = l.l2.as_ref().and_then(|x| x.atm()).unwrap();
    let down = link(&out.result, "sw", "r")
        .l2
        .as_ref()
        .and_then(|x| x.atm())
        .unwrap();
    println!("{l2:?}\n{down:?}\n{f:?}");
    assert!(l2.cells_lost > 0);
    assert_eq!(l.counters.drops_loss, l2.cells_lost);
    // every lost cell costs its packet: about 32 times the cell loss rate
    let down = down.reassembly.as_ref().unwrap();
    assert!(down.pdus_lost >= l2.cells_lost / 2 && down.pdus_lost <= l2.cells_lost);
    assert!(f.sender.retransmitted_segments >= down.pdus_lost / 2);
    assert_eq!(
        l2.cells_tagged,
        Some(0),
        "a line into a switch reports its tagging"
    );
    assert!(l2.adapter.as_ref().unwrap().pdus_in > 0 && l2.port.is_none());
    let atm = out.result.atm.as_ref().unwrap();
    let data = &atm.vcs[0];
    assert_eq!((data.vc, data.flow, data.dir), (0, 0, "data"));
    assert_eq!(data.counters.cells_lost, l2.cells_lost);
    assert!(data.counters.loss_events > 0 && data.counters.loss_events <= data.counters.pdus_lost);
}

/// n flows from hosts on two input lines through sw1 -> sw2 (the bottleneck).
fn bottleneck(policy: &str, buffer: u32, upc: bool) -> String {
    bottleneck_epd(policy, buffer, upc, "{ headroom = 320 }")
}

fn bottleneck_epd(policy: &str, buffer: u32, upc: bool, epd: &str) -> String {
    let mut s = format!(
        r#"
duration = "20s"
[atm]
policy = "{policy}"
[[node]]
name = "sw1"
kind = "atm-switch"
atm = {{ buffer = {buffer}, epd_threshold = {epd} }}
[[node]]
name = "sw2"
kind = "atm-switch"
atm = {{ buffer = 1000000 }}
[[node]]
name = "e0"
kind = "atm-switch"
atm = {{ buffer = 1000000 }}
[[node]]
name = "e1"
kind = "atm-switch"
atm = {{ buffer = 1000000 }}
[[link]]
a = "sw1"
b = "sw2"
rate = "10Mbps"
delay = "20ms"
layer2 = {{ kind = "atm" }}
"#
    );
    for (e, n, scr) in [(0, 2, 2_000_000), (1, 8, 8_000_000)] {
        let upc = if upc {
            format!(
                ", upc = {{ scr = \"{scr}bps\", mbs = {} }}",
                buffer * n / 10
            )
        } else {
            String::new()
        };
        s += &format!(
            "[[link]]\na = \"e{e}\"\nb = \"sw1\"\nrate = \"100Mbps\"\ndelay = \"10us\"\nlayer2 = {{ kind = \"atm\" {upc} }}\n"
        );
        for k in 0..n {
            s += &format!(
                r#"[[link]]
a = "s{e}{k}"
b = "e{e}"
rate = "100Mbps"
delay = "10us"
layer2 = {{ kind = "atm" }}
[[link]]
a = "sw2"
b = "r{e}{k}"
rate = "100Mbps"
delay = "10us"
layer2 = {{ kind = "atm" }}
[[flow]]
src = "s{e}{k}"
dst = "r{e}{k}"
tcp = "tahoe"
mtu = 1500
rwnd = "24820B"
start = "{}ms"
"#,
                k * 13 + e * 7
            );
        }
    }
    s
}

fn goodput(r: &longpipe_core::results::SimResult) -> f64 {
    r.flows.iter().map(|f| f.goodput_bps).sum()
}

#[test]
fn early_packet_discard_beats_cell_tail_drop_with_a_small_buffer() {
    // Romanow & Floyd: with a buffer of a few packets per flow, UBR wastes the line on
    // the cells of packets already lost; EPD drops whole packets.
    let ubr = run(&bottleneck_epd("ubr", 400, false, "\"50%\"")).result;
    let epd = run(&bottleneck_epd("epd", 400, false, "\"50%\"")).result;
    let (gu, ge) = (goodput(&ubr), goodput(&epd));
    let p_ubr = link(&ubr, "sw1", "sw2").l2.clone().unwrap();
    let p_epd = link(&epd, "sw1", "sw2").l2.clone().unwrap();
    let (p_ubr, p_epd) = (
        p_ubr.atm().unwrap().port.clone().unwrap(),
        p_epd.atm().unwrap().port.clone().unwrap(),
    );
    println!("ubr {gu} {p_ubr:?}\nepd {ge} {p_epd:?}");
    assert!(ge > 1.05 * gu, "EPD {ge} vs UBR {gu}");
    assert_eq!(p_ubr.policy, "ubr");
    assert!(p_ubr.dropped_full > 0 && p_ubr.dropped_epd == 0);
    assert!(p_epd.pdus_discarded_whole > 0);
    // EPD drops whole PDUs: its dropped cells are (nearly all) multiples of 32
    assert!(p_epd.dropped_epd >= 31 * p_epd.pdus_discarded_whole);
    assert_eq!(p_epd.epd_threshold_cells, 200);
    // the receivers lose exactly the PDUs that lost cells: UBR loses many partial ones
    let lost = |r: &longpipe_core::results::SimResult| -> u64 {
        r.atm
            .as_ref()
            .unwrap()
            .vcs
            .iter()
            .map(|v| v.counters.pdus_lost)
            .sum()
    };
    assert!(lost(&ubr) > 0 && lost(&epd) > 0);
    // per-VC drops add up to the port's
    let vc_drops: u64 = epd
        .atm
        .as_ref()
        .unwrap()
        .vcs
        .iter()
        .map(|v| v.counters.cells_dropped)
        .sum();
    assert_eq!(vc_drops, p_epd.cells_dropped);
    let whole: u64 = epd
        .atm
        .as_ref()
        .unwrap()
        .vcs
        .iter()
        .map(|v| v.counters.pdus_discarded_whole)
        .sum();
    assert_eq!(whole, p_epd.pdus_discarded_whole);
}

#[test]
fn upc_tags_only_under_policies_that_look_at_clp_and_scd_drops_tagged_cells_first() {
    let ubr = run(&bottleneck("ubr", 2000, true)).result;
    let scd = run(&bottleneck("scd", 2000, true)).result;
    let tagged = |r: &longpipe_core::results::SimResult, e: &str| {
        link(r, e, "sw1")
            .l2
            .as_ref()
            .and_then(|x| x.atm())
            .unwrap()
            .cells_tagged
            .unwrap()
    };
    assert_eq!(
        tagged(&ubr, "e0") + tagged(&ubr, "e1"),
        0,
        "UBR has no contract"
    );
    // the line with 8 flows has 4x the SCR of the line with 2 but carries more than 4x
    // the traffic when the 2-flow line is window-limited: both get tagged cells
    let (t0, t1) = (tagged(&scd, "e0"), tagged(&scd, "e1"));
    println!("tagged e0 {t0} e1 {t1}");
    assert!(t0 + t1 > 0);
    let port = link(&scd, "sw1", "sw2").l2.clone().unwrap();
    let port = port.atm().unwrap().port.as_ref().unwrap();
    println!("{port:?}");
    assert!(port.dropped_tagged > 0);
    assert!(port.dropped_clp1 >= port.dropped_tagged);
    // tagged cells are dropped from 90 % of the buffer on, untagged ones only when full
    assert_eq!(port.scd_threshold_cells, 1800);
    assert!(port.dropped_full < port.dropped_tagged);
    let vcs = &scd.atm.as_ref().unwrap().vcs;
    assert_eq!(
        vcs.iter().map(|v| v.counters.cells_tagged).sum::<u64>(),
        t0 + t1
    );
}

#[test]
fn every_cell_sent_is_dropped_lost_or_received_once_the_transfers_end() {
    // sized transfers that finish well before the end, through a small SCD+EPD buffer
    // (tagged drops, EPD, PPD) and a lossy relay line
    let sc = bottleneck_epd("scd-epd", 600, true, "\"50%\"")
        .replace(
            "rwnd = \"24820B\"",
            "rwnd = \"24820B\"\napp = { kind = \"bulk\", bytes = \"200KB\" }",
        )
        .replacen(
            "delay = \"20ms\"\nlayer2 = { kind = \"atm\" }",
            "delay = \"20ms\"\nlayer2 = { kind = \"atm\" }\nloss = { kind = \"bernoulli\", p = 0.0003 }",
            1,
        );
    let r = run(&sc).result;
    assert!(r
        .flows
        .iter()
        .all(|f| f.completion_time_s.is_some_and(|t| t < 15.0)));
    let port = link(&r, "sw1", "sw2").l2.clone().unwrap();
    let port = port.atm().unwrap().port.clone().unwrap();
    println!("{port:?}");
    assert!(port.dropped_tagged > 0 && port.dropped_epd > 0 && port.dropped_ppd > 0);
    let vcs = &r.atm.as_ref().unwrap().vcs;
    assert_eq!(vcs.len(), 20, "a data and an ACK VC per flow");
    let mut lost = 0;
    for v in vcs {
        let c = &v.counters;
        assert_eq!(
            c.cells_sent,
            c.cells_dropped + c.cells_lost + c.cells_received,
            "vc {} {c:?}",
            v.vc
        );
        assert!(c.pdus_delivered + c.pdus_lost <= c.pdus_sent);
        assert!(c.cells_tagged <= c.cells_sent && c.loss_events <= c.pdus_lost);
        lost += c.cells_lost;
    }
    assert_eq!(lost, link(&r, "sw1", "sw2").counters.drops_loss);
    assert!(lost > 0);
}

#[test]
fn one_default_switches_the_policy_of_every_switch_but_those_that_override_it() {
    let base = bottleneck("scd-epd", 2000, true);
    let r = run(&base).result;
    for (a, b, pol) in [
        ("sw1", "sw2", "scd-epd"),
        ("sw2", "r00", "scd-epd"),
        ("e0", "sw1", "scd-epd"),
    ] {
        let l2 = link(&r, a, b).l2.clone().unwrap();
        assert_eq!(l2.atm().unwrap().port.as_ref().unwrap().policy, pol);
    }
    let over = base.replacen(
        "atm = { buffer = 1000000 }",
        "atm = { buffer = 1000000, policy = \"ubr\" }",
        1,
    );
    let r = run(&over).result;
    let policy = |a: &str, b: &str| {
        let l2 = link(&r, a, b).l2.clone().unwrap();
        l2.atm().unwrap().port.as_ref().map(|p| p.policy)
    };
    assert_eq!(policy("sw2", "r00"), Some("ubr"));
    assert_eq!(policy("sw1", "sw2"), Some("scd-epd"));
    // an adapter has no policy
    assert_eq!(policy("s00", "e0"), None);
    let l2 = link(&r, "s00", "e0").l2.clone().unwrap();
    assert_eq!(l2.atm().unwrap().sender, "adapter");
}

#[test]
fn same_scenario_same_bytes() {
    let j = to_json(&bottleneck("scd-epd", 1500, true));
    let a = run_json(&j, &RunOptions::default())
        .unwrap()
        .result
        .to_json();
    let b = run_json(&j, &RunOptions::default())
        .unwrap()
        .result
        .to_json();
    assert_eq!(a, b);
    assert!(a.contains("\"loss_events\""));
}

fn err(toml_text: &str) -> String {
    match run_json(&to_json(toml_text), &RunOptions::default()) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn atm_keys_are_checked_against_the_topology() {
    let ok = one_switch("10Mbps", "", "");
    let cases: Vec<(String, &str)> = vec![
        // a switch on a packet link
        (ok.replacen("layer2 = { kind = \"atm\"  }\n", "", 1), "link[0].layer2: the link between atm-switch \"sw\" and \"s\" must be an ATM link"),
        // ATM one way only
        (
            ok.replacen("layer2 = { kind = \"atm\"  }\n", "layer2 = { kind = \"atm\"  }\nlayer2_ba = { kind = \"rlc-am\" }\n", 1),
            "link[0].layer2_ba: an ATM link is ATM both ways",
        ),
        // UPC into a host
        (
            ok.replace("b = \"r\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\nlayer2 = { kind = \"atm\" }", "b = \"r\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\nlayer2 = { kind = \"atm\", upc = { scr = \"1Mbps\", mbs = 10 } }"),
            "link[1].layer2.upc: polices cells entering an atm-switch, and \"r\" is not one",
        ),
        // SCR above the line rate
        (ok.replacen("layer2 = { kind = \"atm\"  }", "layer2 = { kind = \"atm\", upc = { scr = \"20Mbps\", mbs = 10 } }", 1), "link[0].layer2.upc.scr: must not exceed"),
        (ok.replacen("layer2 = { kind = \"atm\"  }", "layer2 = { kind = \"atm\", upc = { scr = \"1Mbps\", mbs = 0 } }", 1), "link[0].layer2.upc.mbs: must be at least 1 cell"),
        // a queue on a switch's port
        (ok.replace("a = \"sw\"\nb = \"r\"\nrate = \"10Mbps\"", "a = \"sw\"\nb = \"r\"\nqueue = { limit = 100 }\nrate = \"10Mbps\""), "link[1].queue: the output buffer of atm-switch \"sw\" is set by its atm.buffer"),
        // llc at a switch
        (ok.replace("a = \"sw\"\nb = \"r\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\nlayer2 = { kind = \"atm\" }", "a = \"sw\"\nb = \"r\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\nlayer2 = { kind = \"atm\", llc = true }"), "link[1].layer2.llc: applies to a host adapter"),
        // TCP at a switch
        (ok.replace("dst = \"r\"", "dst = \"sw\""), "flow[0].dst: \"sw\" is an atm-switch"),
        // switch options
        (ok.replace("kind = \"atm-switch\"", "kind = \"atm-switch\"\natm = { buffer = 0 }"), "node[0].atm.buffer: must be at least 1 cell"),
        (ok.replace("kind = \"atm-switch\"", "kind = \"router\"\natm = { buffer = 10 }"), "node[0].atm: only applies to kind = \"atm-switch\""),
        (ok.replace("kind = \"atm-switch\"", "kind = \"atm-switch\"\natm = { buffer = 10, epd_threshold = 11 }"), "node[0].atm.epd_threshold: 11 cells is more than the buffer (10 cells)"),
        (format!("{}\n[atm]\nbuffer = 100\n", ok.replace("kind = \"atm-switch\"", "kind = \"router\"").replace("layer2 = { kind = \"atm\"  }", "").replace("layer2 = { kind = \"atm\" }", "")), "atm: sets defaults for atm-switch nodes, and the scenario has none"),
        (format!("{ok}\n[atm]\npolicy = \"red\"\n"), "atm.policy: unknown variant"),
    ];
    for (sc, want) in cases {
        let e = err(&sc);
        assert!(
            e.starts_with(want) || e.contains(want),
            "want {want:?}\ngot  {e:?}"
        );
    }
    // no capture on an ATM link
    let e = run_json(
        &to_json(&ok),
        &RunOptions {
            pcap: vec!["s-sw".into()],
            ..Default::default()
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("pcap: \"s-sw\" is an ATM link"), "{e}");
}
