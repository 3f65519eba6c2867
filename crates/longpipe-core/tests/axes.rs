//! Every kind of every plug-in axis the scenario schema offers runs in a small
//! scenario: queue disciplines, loss models, link layers and node kinds (congestion
//! controls: `tests/ecn.rs`). The kinds are read from `longpipe schema`, so a kind added
//! later is covered without editing this file; one that needs a key or a topology this
//! file does not know yet fails here with a message that says what to add.

mod common;
use common::*;
use longpipe_core::results::SimResult;
use longpipe_core::{run_json, RunOptions};
use serde_json::Value;

/// The scenario schema's definitions.
fn definitions() -> Value {
    let schema: Value = serde_json::from_str(&longpipe_core::json_schema()).unwrap();
    schema
        .get("definitions")
        .or_else(|| schema.get("$defs"))
        .cloned()
        .unwrap()
}

/// The names a definition offers: the `kind` of each object of a tagged table, or the
/// values of a string enum; with the keys each object requires besides `kind`.
fn kinds(def: &str) -> Vec<(String, Vec<String>)> {
    let d = definitions();
    let mut out = vec![];
    for v in d[def]["oneOf"].as_array().unwrap() {
        let names = match v["properties"]["kind"]["enum"].as_array() {
            Some(k) => k[..1].to_vec(), // the name, not its other spellings
            None => v["enum"].as_array().unwrap().clone(),
        };
        let required: Vec<String> = v["required"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|k| k.as_str().unwrap().to_string())
                    .filter(|k| k != "kind")
                    .collect()
            })
            .unwrap_or_default();
        for n in names {
            out.push((n.as_str().unwrap().to_string(), required.clone()));
        }
    }
    assert!(out.len() >= 2, "{def}: {out:?}");
    out
}

/// A valid value for a required key, by its name.
fn example(axis: &str, kind: &str, key: &str) -> &'static str {
    match key {
        "p" => "0.01",
        "ber" => "1e-6",
        "p_gb" => "0.01",
        "p_bg" => "0.3",
        // a segment's relative sequence number (the first data byte is 1) or a packet index
        "drop" if kind == "seq" => "[1, 2921]",
        "drop" => "[5, 9]",
        _ => panic!("{axis} kind {kind:?} requires {key:?}: add an example value to tests/axes.rs"),
    }
}

/// A table `{ kind = "k", required keys }`.
fn table(axis: &str, kind: &str, required: &[String], extra: &str) -> String {
    let mut keys = vec![format!("kind = \"{kind}\"")];
    for k in required {
        keys.push(format!("{k} = {}", example(axis, kind, k)));
    }
    if !extra.is_empty() {
        keys.push(extra.to_string());
    }
    format!("{{ {} }}", keys.join(", "))
}

fn run_toml(what: &str, toml_text: &str) -> SimResult {
    run_json(&to_json(toml_text), &RunOptions::default())
        .unwrap_or_else(|e| panic!("{what}: {e}\n{toml_text}"))
        .result
}

/// Two bulk flows from `server` to `client` over a 10 Mbit/s, 20 ms bottleneck with
/// `link_keys`, behind a 100 Mbit/s access link; `nodes` declares nodes.
fn dumbbell(nodes: &str, link_keys: &str, access_keys: &str) -> String {
    format!(
        r#"
duration = "5s"
{nodes}
[[link]]
a = "server"
b = "mid"
rate = "100Mbps"
delay = "1ms"
{access_keys}
[[link]]
a = "mid"
b = "client"
rate = "10Mbps"
delay = "20ms"
{link_keys}
[[flow]]
src = "server"
dst = "client"
count = 2
"#
    )
}

fn delivered(r: &SimResult) -> u64 {
    r.flows.iter().map(|f| f.bytes_delivered).sum()
}

#[test]
fn every_queue_discipline_runs_and_holds_its_limit() {
    for (kind, required) in kinds("QueueSpec") {
        let q = table("queue", &kind, &required, "limit = \"20pkt\"");
        let r = run_toml(&kind, &dumbbell("", &format!("queue = {q}"), ""));
        assert!(delivered(&r) > 1_000_000, "{kind}: {:?}", r.flows);
        let l = &r.links[2]; // mid -> client
        assert!(l.counters.max_queue.0 <= 20, "{kind}: {l:?}");
        assert!(
            l.counters.drops_queue > 0,
            "{kind}: a 20-packet buffer overflows"
        );
    }
}

#[test]
fn every_loss_model_runs_and_loses_what_it_should() {
    for (kind, required) in kinds("LossSpec") {
        let loss = table("loss", &kind, &required, "");
        let r = run_toml(&kind, &dumbbell("", &format!("loss = {loss}"), ""));
        assert!(delivered(&r) > 100_000, "{kind}: {:?}", r.flows);
        let drops = r.links[2].counters.drops_loss;
        match kind.as_str() {
            "none" => assert_eq!(drops, 0, "{kind}"),
            _ => assert!(drops > 0, "{kind}: no loss"),
        }
        assert_eq!(r.links[3].counters.drops_loss, 0, "{kind}: a->b only");
    }
}

#[test]
fn every_link_layer_runs_both_ways() {
    for (kind, required) in kinds("Layer2Spec") {
        let l2 = table("layer2", &kind, &required, "");
        let both = format!("layer2 = {l2}\nlayer2_ba = {l2}");
        let r = run_toml(&kind, &dumbbell("", &both, ""));
        assert!(delivered(&r) > 100_000, "{kind}: {:?}", r.flows);
        for l in &r.links[2..] {
            let report =
                l.l2.as_ref()
                    .unwrap_or_else(|| panic!("{kind}: no l2 report"));
            let v = serde_json::to_value(report).unwrap();
            assert_eq!(v["kind"], kind.as_str(), "{kind}: {v}");
        }
    }
}

#[test]
fn every_node_kind_runs_in_the_middle_of_a_path() {
    for (kind, _) in kinds("NodeKind") {
        // what each kind needs of the links around it
        let (node, l2) = match kind.as_str() {
            "host" | "router" | "tcp-gateway" => (format!("name = \"mid\"\nkind = \"{kind}\""), ""),
            "atm-switch" => (
                format!("name = \"mid\"\nkind = \"{kind}\""),
                "layer2 = { kind = \"atm\" }",
            ),
            _ => panic!("node kind {kind:?}: say in tests/axes.rs what its links need"),
        };
        let sc = dumbbell(&format!("[[node]]\n{node}"), l2, l2);
        let r = run_toml(&kind, &sc);
        assert!(delivered(&r) > 1_000_000, "{kind}: {:?}", r.flows);
        let mid = r.nodes.iter().find(|n| n.name == "mid").unwrap();
        assert_eq!(mid.kind, kind);
        assert_eq!(r.gateways.len(), (kind == "tcp-gateway") as usize, "{kind}");
        assert_eq!(r.atm.is_some(), kind == "atm-switch", "{kind}");
    }
}
