//! The scenario file: its shape ([`spec`]: serde types), `validate()` ([`validate`]:
//! checks the references between its parts, lets each component resolve its own spec,
//! and assembles the [`ValidScenario`] of [`valid`] for a driver to build), and
//! [`parse_json`], the one entry from JSON text.
//!
//! Error messages name the field path (`link[2].loss.p: must be in [0, 1]`).

pub mod spec;
pub mod valid;
pub mod validate;

pub use crate::error::ScenarioError;
pub use spec::{LinkSpec, NodeKind, NodeSpec, Scenario, UserSpec, MAX_FLOWS, MAX_LINKS_PER_NODE};
pub use valid::{DirInfo, FlowInfo, GatewayInfo, LinkInfo, NodeInfo, NodeRole, ValidScenario};

use crate::tagged;

/// Parses a scenario from JSON text (the Python front end converts TOML and dicts to
/// JSON), with the field path in every error.
pub fn parse_json(text: &str) -> Result<Scenario, ScenarioError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let mut path = e.path().to_string();
        let mut msg = e.into_inner().to_string();
        // The JSON position means nothing to a user who wrote TOML: drop it.
        if let Some(i) = msg.rfind(" at line ") {
            msg.truncate(i);
        }
        // A tagged table names the key below it that the error is about.
        if let Some((sub, m)) = tagged::split_below(&msg) {
            (path, msg) = (tagged::join(&path, sub), m.to_string());
        }
        let path = if path == "." || path.is_empty() {
            "(top level)".to_string()
        } else {
            one_line(&path)
        };
        ScenarioError {
            path,
            msg: one_line(&plain_words(&msg)),
        }
    })
}

/// Control characters (a newline in a key, say) escaped as Python's `repr` does
/// (`\n`, `\x00`), so a message is one line and reads the same from either side.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// serde's messages name Rust types ("expected struct FlowSpec", "expected u32",
/// "untagged enum IwSpec"); a user wrote TOML, so say what the file may contain.
pub(crate) fn plain_words(msg: &str) -> String {
    const UNTAGGED: [(&str, &str); 1] = [(
        "data did not match any variant of untagged enum IwSpec",
        "expected a number of segments (1, 2, ...) or one of \"rfc2414\", \"rfc3390\", \"rfc6928\"",
    )];
    const TYPES: [(&str, &str); 11] = [
        ("expected u8", "expected an integer from 0 to 255"),
        ("expected u16", "expected an integer from 0 to 65535"),
        ("expected u32", "expected an integer from 0 to 4294967295"),
        (
            "expected u64",
            "expected an integer from 0 to 18446744073709551615",
        ),
        ("expected usize", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
        ("invalid type: map", "invalid type: table"),
        ("invalid type: sequence", "invalid type: list"),
    ];
    let mut m = msg.to_string();
    for (from, to) in UNTAGGED.iter().chain(TYPES.iter()) {
        m = m.replace(from, to);
    }
    // "expected struct FlowSpec" (a table of keys) -> "expected a table"
    while let Some(i) = m.find("expected struct ") {
        let rest = &m[i + "expected struct ".len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        m = format!("{}expected a table{}", &m[..i], &rest[end..]);
    }
    m
}

/// The JSON Schema of the scenario file.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Scenario);
    serde_json::to_string_pretty(&schema).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Rate;

    fn parse(s: &str) -> Result<ValidScenario, ScenarioError> {
        parse_json(s)?.validate()
    }

    const BASE: &str = r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"10ms"}],
        "flow":[{"src":"s","dst":"c"}]}"#;

    #[test]
    fn minimal_resolves() {
        let v = parse(BASE).unwrap();
        assert_eq!(v.nodes.len(), 2);
        assert_eq!(v.flows[0].tcp.mss, 1460);
        assert_eq!(v.links[0].dirs[1].link.rate, Rate(10_000_000));
    }

    #[test]
    fn unknown_key_names_path() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms","colour":1}]}"#)
            .unwrap_err();
        assert!(e.path.starts_with("link[0]"), "{e}");
        assert!(e.msg.contains("colour"), "{e}");
    }

    #[test]
    fn bad_probability_and_rate() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms","loss":{"kind":"bernoulli","p":1.5}}]}"#).unwrap_err();
        assert_eq!(e.path, "link[0].loss.p");
        let e = parse(
            r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"-10Mbps","delay":"1ms"}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.path, "link[0].rate");
    }

    #[test]
    fn a_node_has_at_most_65534_links() {
        // One more would wrap its 16-bit port numbers (and reach the no-route marker).
        let star = |n: usize| {
            let links: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"a":"h{i}","b":"hub","rate":"1Mbps","delay":"1ms"}}"#))
                .collect();
            format!(r#"{{"duration":"1s","link":[{}]}}"#, links.join(","))
        };
        assert!(parse(&star(MAX_LINKS_PER_NODE)).is_ok());
        let e = parse(&star(MAX_LINKS_PER_NODE + 1)).unwrap_err();
        assert_eq!(e.path, format!("link[{MAX_LINKS_PER_NODE}].b"), "{e}");
        assert!(e.msg.contains("\"hub\"") && e.msg.contains("65534"), "{e}");
        // flows' endpoints take ports too: one link plus 65533 flows fit, one more not
        let flows = |n: usize| {
            format!(
                r#"{{"duration":"1s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms"}}],
                "flow":[{{"src":"s","dst":"c","count":{n}}}]}}"#
            )
        };
        assert!(parse(&flows(MAX_LINKS_PER_NODE - 1)).is_ok());
        let e = parse(&flows(MAX_LINKS_PER_NODE)).unwrap_err();
        assert_eq!(e.path, "flow[0].count", "{e}");
        assert!(e.msg.contains("flow[0].src"), "{e}");
    }

    #[test]
    fn a_link_layer_takes_no_queue_discipline() {
        let l2 = r#""layer2":{"kind":"rlc-am"}"#;
        let link = |q: &str| {
            format!(
                r#"{{"duration":"10s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms",{l2}{q}}}]}}"#
            )
        };
        assert!(parse(&link("")).is_ok());
        assert!(parse(&link(r#","queue":{"limit":"50pkt","kind":"droptail"}"#)).is_ok());
        let e = parse(&link(r#","queue":{"kind":"codel"}"#)).unwrap_err();
        assert_eq!(e.path, "link[0].queue.kind");
        assert!(e.msg.contains("\"codel\""), "{e}");
        // the reverse direction takes queue_ba when given
        let e = parse(&link(
            r#","layer2_ba":{"kind":"rlc-am"},"queue_ba":{"kind":"red"}"#,
        ))
        .unwrap_err();
        assert_eq!(e.path, "link[0].queue_ba.kind");
    }

    #[test]
    fn tagged_tables_name_the_key_of_each_error() {
        let link = |l2: &str| {
            format!(
                r#"{{"duration":"10s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms","layer2":{l2}}}]}}"#
            )
        };
        let e = parse(&link(r#"{"kind":"rlc-am","tti":5}"#)).unwrap_err();
        assert_eq!(e.path, "link[0].layer2.tti", "{e}");
        let e = parse(&link(r#"{"llc":true,"kind":"rlc-am"}"#)).unwrap_err();
        assert_eq!(e.path, "link[0].layer2.llc", "{e}");
        assert!(e.msg.contains(r#"only applies to kind = "atm""#), "{e}");
        let e = parse(&link(r#"{"tti":"5ms"}"#)).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.msg.as_str()),
            ("link[0].layer2", "missing field `kind`")
        );
        // loss models too, also inside a schedule's list
        let loss = |l: &str| {
            format!(
                r#"{{"duration":"10s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms",{l}}}]}}"#
            )
        };
        let e = parse(&loss(r#""loss":{"kind":"bernoulli","p":"x"}"#)).unwrap_err();
        assert_eq!(e.path, "link[0].loss.p", "{e}");
        let e = parse(&loss(r#""loss":{"kind":"ber","p":0.1}"#)).unwrap_err();
        assert_eq!(e.path, "link[0].loss.p", "{e}");
        assert!(
            e.msg.contains(r#"only applies to kind = "bernoulli""#),
            "{e}"
        );
        let e = parse(&loss(
            r#""schedule":[{"every":"1s","loss":[{"kind":"none"},{"kind":"gilbert","p_gb":0.1}]}]"#,
        ))
        .unwrap_err();
        assert_eq!(e.path, "link[0].schedule[0].loss[1]", "{e}");
        assert!(e.msg.contains("missing field `p_bg`"), "{e}");
    }

    #[test]
    fn unknown_node() {
        let e = parse(r#"{"duration":"10s","link":[{"a":"s","b":"c","rate":"10Mbps","delay":"1ms"}],"flow":[{"src":"s","dst":"x"}]}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].dst");
    }

    #[test]
    fn iw_rules() {
        let v = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":"rfc3390""#)).unwrap();
        assert_eq!(v.flows[0].tcp.iw_bytes, 4380);
        let v =
            parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":"rfc6928","mss":1000"#)).unwrap();
        assert_eq!(v.flows[0].tcp.iw_bytes, 10_000);
        let v = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","iw":3,"count":4"#)).unwrap();
        assert_eq!(v.flows.len(), 4);
        assert_eq!(v.flows[3].tcp.iw_bytes, 3 * 1460);
    }

    #[test]
    fn messages_name_no_rust_types() {
        let bad = [
            (r#""iw":"bogus""#, "rfc3390"),
            (r#""iw":true"#, "rfc3390"),
            (r#""mss":"x""#, "integer from 0 to 4294967295"),
            (r#""mss":-1"#, "integer from 0 to 4294967295"),
            (r#""count":1.5"#, "integer"),
            (r#""sack":"yes""#, "true or false"),
        ];
        for (field, want) in bad {
            let e =
                parse(&BASE.replace(r#""dst":"c""#, &format!(r#""dst":"c",{field}"#))).unwrap_err();
            assert!(e.msg.contains(want), "{field}: {e}");
            for rust in ["untagged", "struct", "IwSpec", "u32", "f64", "i64"] {
                assert!(!e.msg.contains(rust), "{field}: {e}");
            }
        }
        let e = parse(r#"{"duration":"10s","link":[],"flow":[1]}"#).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.msg.contains("expected a table")),
            ("flow[0]", true),
            "{e}"
        );
        let e = parse(r#"{"duration":"10s","link":{}}"#).unwrap_err();
        assert!(e.msg.contains("table") && e.msg.contains("list"), "{e}");
    }

    #[test]
    fn messages_are_one_line_and_paths_never_empty() {
        let e = parse(r#"{"duration":"10s","link":[],"":1}"#).unwrap_err();
        assert!(!e.path.is_empty(), "{e:?}");
        let e = parse("{\"duration\":\"10s\",\"link\":[],\"a\\nb\":1}").unwrap_err();
        assert!(
            !e.to_string().contains('\n') && e.msg.contains("a\\nb"),
            "{e:?}"
        );
    }

    #[test]
    fn flow_count_is_bounded_before_allocation() {
        let e =
            parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","count":4294967295"#)).unwrap_err();
        assert_eq!(e.path, "flow[0].count");
        assert!(e.msg.contains("1000000"), "{e}");
        let ok = parse(&BASE.replace(r#""dst":"c""#, r#""dst":"c","count":1000"#)).unwrap();
        assert_eq!(ok.flows.len(), 1000);
    }

    #[test]
    fn timers_have_a_floor() {
        for key in ["initial_rto", "min_rto", "delayed_ack_timeout"] {
            for v in ["0s", "999us"] {
                let e =
                    parse(&BASE.replace(r#""dst":"c""#, &format!(r#""dst":"c","{key}":"{v}""#)))
                        .unwrap_err();
                assert_eq!(e.path, format!("flow[0].{key}"), "{e}");
            }
            parse(&BASE.replace(r#""dst":"c""#, &format!(r#""dst":"c","{key}":"1ms""#))).unwrap();
        }
    }

    #[test]
    fn schema_mentions_keys() {
        let s = json_schema();
        assert!(s.contains("delayed_ack") && s.contains("bernoulli"));
    }
}
