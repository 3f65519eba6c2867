#![allow(dead_code)]
//! Shared helpers for the integration tests: scenarios written as TOML, as users write them.

use longpipe_core::{run_json, RunOptions, RunOutput, TraceSel};

pub fn to_json(toml_text: &str) -> String {
    let v: toml::Value = toml::from_str(toml_text).expect("test scenario is valid TOML");
    serde_json::to_string(&v).unwrap()
}

pub fn run(toml_text: &str) -> RunOutput {
    run_json(&to_json(toml_text), &RunOptions::default()).expect("scenario runs")
}

pub fn run_traced(toml_text: &str) -> RunOutput {
    let opts = RunOptions {
        trace: TraceSel::All,
        ..Default::default()
    };
    run_json(&to_json(toml_text), &opts).expect("scenario runs")
}

/// A two-node path: server -> client, one link. The flow runs on the classic stack
/// unless `flow` names a stack or BBR: these tests were written for the papers' TCP,
/// which was the default before issue 25 made the Linux stack the default.
pub fn path(
    rate: &str,
    delay: &str,
    queue: &str,
    extra_link: &str,
    flow: &str,
    duration: &str,
) -> String {
    let classic = classic_unless_named(flow);
    format!(
        r#"
duration = "{duration}"
[[link]]
a = "server"
b = "client"
rate = "{rate}"
delay = "{delay}"
queue = {{ limit = "{queue}" }}
{extra_link}
[[flow]]
src = "server"
dst = "client"
{classic}{flow}
"#
    )
}

/// `stack = "classic"` for a flow's keys that name neither a stack nor BBR (which needs
/// the Linux stack): the integration tests were written for the papers' TCP, the default
/// before issue 25 made the Linux stack the default.
pub fn classic_unless_named(flow: &str) -> &'static str {
    if flow.contains("stack") || flow.contains("\"bbr\"") {
        ""
    } else {
        "stack = \"classic\"\n"
    }
}

/// A 3 MB transfer over 10 Mbit/s, 50 ms, with the listed forward packets dropped
/// (0 = SYN, 1 = handshake ACK, then data segments in transmission order).
pub fn scripted(tcp: &str, sack: bool, drops: &[u64]) -> String {
    let list = drops
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    path(
        "10Mbps",
        "50ms",
        "1000pkt",
        &format!("loss = {{ kind = \"list\", drop = [{list}] }}"),
        &format!("tcp = \"{tcp}\"\nsack = {sack}\nrwnd = \"1MB\"\napp = {{ bytes = \"3MB\" }}"),
        "60s",
    )
}

/// The packets of a pcap written by the simulator (nanosecond LINKTYPE_RAW records):
/// (time in ns, parsed IPv4/TCP header).
pub fn pcap_packets(bytes: &[u8]) -> Vec<(u64, longpipe_core::wire::TcpIpHeader)> {
    let mut out = vec![];
    let mut i = 24;
    while i + 16 <= bytes.len() {
        let u = |k: usize| u32::from_le_bytes(bytes[k..k + 4].try_into().unwrap()) as u64;
        let t = u(i) * 1_000_000_000 + u(i + 4);
        let caplen = u(i + 8) as usize;
        let data = &bytes[i + 16..i + 16 + caplen];
        let (h, _) = longpipe_core::wire::parse(data).expect("simulator pcap parses");
        out.push((t, h));
        i += 16 + caplen;
    }
    out
}

/// Runs with a capture at `spec` ("A-B") and returns the result and its packets.
pub fn run_pcap(
    toml_text: &str,
    spec: &str,
) -> (RunOutput, Vec<(u64, longpipe_core::wire::TcpIpHeader)>) {
    let opts = RunOptions {
        trace: TraceSel::All,
        pcap: vec![spec.to_string()],
        ..Default::default()
    };
    let out = run_json(&to_json(toml_text), &opts).expect("scenario runs");
    let pkts = pcap_packets(&out.pcaps[0].1);
    (out, pkts)
}
