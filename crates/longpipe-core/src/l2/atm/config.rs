//! The ATM keys of a scenario, their defaults and checks:
//! - `layer2 = { kind = "atm", llc = false, upc = { scr, mbs, pcr } }` on a link
//!   ([`AtmLineSpec`]): `layer2` makes the whole link ATM (its b→a direction gets the
//!   defaults unless `layer2_ba` says otherwise); `llc` is the LLC/SNAP encapsulation
//!   of a host adapter's PDUs; `upc` is the traffic contract policed where the direction
//!   enters an `atm-switch`;
//! - `atm = { policy, buffer, epd_threshold, scd_threshold }` on an `atm-switch` node and
//!   the scenario's `[atm]` table with the same keys, the defaults of every switch
//!   ([`SwitchSpec`]);
//! - the rules that tie them to the topology ([`check_topology`]).

use super::discard::{Policy, PortLimits};
use crate::error::{err, ScenarioError};
use crate::tagged::Resolve;
use crate::time::Rate;
use crate::units::RateQ;
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject, SingleOrVec};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// Output buffer of a switch port when none is given, cells.
pub const DEFAULT_BUFFER: u64 = 8000;
/// EPD threshold when none is given: this share of the buffer.
pub const DEFAULT_EPD_PERCENT: f64 = 50.0;
/// SCD threshold when none is given (seed 002: 90 % of the buffer).
pub const DEFAULT_SCD_PERCENT: f64 = 90.0;

/// A buffer threshold: cells, a share of the buffer (`"90%"`), or the buffer less a
/// headroom (`{ headroom = 1280 }`: the threshold is reached when fewer than 1280 cells
/// are free; 0 if the headroom is the whole buffer or more).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Cells(u64),
    Percent(f64),
    Headroom(u64),
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const EXP: &str =
            "a number of cells (1280), a share of the buffer (\"90%\") or { headroom = CELLS }";
        impl<'v> Visitor<'v> for V {
            type Value = Threshold;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(EXP)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Threshold, E> {
                Ok(Threshold::Cells(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Threshold, E> {
                u64::try_from(v)
                    .map(Threshold::Cells)
                    .map_err(|_| E::custom(format!("expected {EXP}, got {v}")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Threshold, E> {
                let bad = || E::custom(format!("expected {EXP}, got {s:?}"));
                let p: f64 = s
                    .trim()
                    .strip_suffix('%')
                    .ok_or_else(bad)?
                    .trim()
                    .parse()
                    .map_err(|_| bad())?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(E::custom(format!(
                        "a share of the buffer must be 0% to 100%, got {s:?}"
                    )));
                }
                Ok(Threshold::Percent(p))
            }
            fn visit_map<A: de::MapAccess<'v>>(self, mut m: A) -> Result<Threshold, A::Error> {
                let mut h: Option<u64> = None;
                while let Some(k) = m.next_key::<String>()? {
                    if k != "headroom" || h.is_some() {
                        return Err(de::Error::custom(format!("expected {EXP}, got key {k:?}")));
                    }
                    h = Some(m.next_value()?);
                }
                h.map(Threshold::Headroom)
                    .ok_or_else(|| de::Error::custom(format!("expected {EXP}")))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Threshold {
    fn schema_name() -> String {
        "Threshold".to_string()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut s = SchemaObject {
            instance_type: Some(SingleOrVec::Vec(vec![
                InstanceType::Integer,
                InstanceType::String,
                InstanceType::Object,
            ])),
            ..Default::default()
        };
        s.metadata().description = Some(
            "cells, a share of the buffer such as \"90%\", or { headroom = CELLS } (the buffer less CELLS)"
                .into(),
        );
        Schema::Object(s)
    }
}

/// An `atm-switch`'s options (`[[node]] atm = { ... }`), and the scenario's `[atm]`
/// table of defaults for every switch (same keys).
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Cell discard policy of the output ports: "ubr" (default), "epd", "scd", "scd-epd".
    #[serde(default)]
    pub policy: Option<Policy>,
    /// Output buffer of each port, in cells (default 8000).
    #[serde(default)]
    pub buffer: Option<u64>,
    /// Early Packet Discard threshold: cells, a share of the buffer or `{ headroom =
    /// CELLS }` (default "50%").
    #[serde(default)]
    pub epd_threshold: Option<Threshold>,
    /// Selective Cell Discard threshold for tagged cells (default "90%").
    #[serde(default)]
    pub scd_threshold: Option<Threshold>,
}

/// The value of a switch option: the node's own, else the scenario default, else the
/// built-in one; with the field path to blame.
fn pick<T: Copy>(
    own: Option<&SwitchSpec>,
    defaults: Option<&SwitchSpec>,
    own_path: &str,
    field: &str,
    get: impl Fn(&SwitchSpec) -> Option<T>,
) -> Option<(T, String)> {
    if let Some(v) = own.and_then(&get) {
        return Some((v, format!("{own_path}.{field}")));
    }
    defaults.and_then(&get).map(|v| (v, format!("atm.{field}")))
}

fn threshold(
    t: Option<(Threshold, String)>,
    default_pct: f64,
    buffer: u64,
) -> Result<u64, ScenarioError> {
    match t {
        None => Ok((buffer as f64 * default_pct / 100.0).round() as u64),
        Some((Threshold::Percent(p), _)) => Ok((buffer as f64 * p / 100.0).round() as u64),
        Some((Threshold::Cells(c), path)) if c > buffer => err(
            path,
            format!("{c} cells is more than the buffer ({buffer} cells)"),
        ),
        Some((Threshold::Cells(c), _)) => Ok(c),
        Some((Threshold::Headroom(h), _)) => Ok(buffer.saturating_sub(h)),
    }
}

impl SwitchSpec {
    /// A switch's port limits from its own options (at `own_path`, e.g. `node[2].atm`)
    /// and the scenario's `[atm]` defaults.
    pub fn resolve(
        own: Option<&SwitchSpec>,
        defaults: Option<&SwitchSpec>,
        own_path: &str,
    ) -> Result<PortLimits, ScenarioError> {
        let policy = pick(own, defaults, own_path, "policy", |s| s.policy)
            .map(|p| p.0)
            .unwrap_or_default();
        let buffer = match pick(own, defaults, own_path, "buffer", |s| s.buffer) {
            Some((0, path)) => return err(path, "must be at least 1 cell"),
            Some((b, _)) => b,
            None => DEFAULT_BUFFER,
        };
        let epd = pick(own, defaults, own_path, "epd_threshold", |s| {
            s.epd_threshold
        });
        let scd = pick(own, defaults, own_path, "scd_threshold", |s| {
            s.scd_threshold
        });
        Ok(PortLimits {
            policy,
            buffer,
            epd_threshold: threshold(epd, DEFAULT_EPD_PERCENT, buffer)?,
            scd_threshold: threshold(scd, DEFAULT_SCD_PERCENT, buffer)?,
        })
    }
}

/// A value read as written and checked by `resolve`, where its field path is known.
/// `layer2 = { kind = "atm", ... }` is an internally tagged enum: serde buffers its
/// content, and an error inside it would otherwise name only `link[i].layer2`, not the
/// key that is wrong.
#[derive(Debug, Clone)]
pub struct Checked<T>(Result<T, String>);

impl<T: Clone> Checked<T> {
    /// The value, or the error naming `path`.
    pub fn get(&self, path: impl Into<String>) -> Result<T, ScenarioError> {
        self.0
            .clone()
            .map_err(|m| ScenarioError::new(path, crate::scenario::plain_words(&m)))
    }
}

impl<T> From<T> for Checked<T> {
    fn from(v: T) -> Self {
        Checked(Ok(v))
    }
}

impl<'de, T: de::DeserializeOwned> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(Checked(T::deserialize(v).map_err(|e| e.to_string())))
    }
}

impl<T: JsonSchema> JsonSchema for Checked<T> {
    fn schema_name() -> String {
        T::schema_name()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        T::json_schema(gen)
    }
    fn is_referenceable() -> bool {
        T::is_referenceable()
    }
}

/// A traffic contract policed at a switch's input line (VBR: SCR and MBS).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpcSpec {
    /// Sustainable cell rate, as a bit rate of 53-octet cells ("4.4736Mbps").
    pub scr: Checked<RateQ>,
    /// Maximum burst size, cells.
    pub mbs: Checked<u64>,
    /// Peak cell rate (default: the line rate).
    #[serde(default)]
    pub pcr: Option<Checked<RateQ>>,
}

/// ATM with AAL5 on one link direction (`layer2 = { kind = "atm", ... }`): cells at the
/// link rate; see docs/notes/atm.md.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct AtmLineSpec {
    /// LLC/SNAP encapsulation (RFC 2684, 8 octets per PDU) of the packets a host
    /// adapter sends on this direction (default false: VC multiplexing).
    #[serde(default)]
    pub llc: Option<Checked<bool>>,
    /// Usage parameter control where this direction enters an atm-switch (the line's
    /// VP, all its VCs together): GCRA(1/SCR, BT) tags non-conforming cells CLP = 1
    /// when that switch's policy is "scd" or "scd-epd".
    #[serde(default)]
    pub upc: Option<Checked<UpcSpec>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UpcConfig {
    pub scr: Rate,
    pub mbs: u64,
    /// None: the line rate.
    pub pcr: Option<Rate>,
}

/// A resolved ATM link direction.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AtmLineConfig {
    pub llc: bool,
    pub upc: Option<UpcConfig>,
}

impl Resolve for AtmLineSpec {
    type Config = AtmLineConfig;
    fn resolve(&self, path: &str) -> Result<AtmLineConfig, ScenarioError> {
        let upc = match &self.upc {
            None => None,
            Some(u) => {
                let u = u.get(format!("{path}.upc"))?;
                let scr = u.scr.get(format!("{path}.upc.scr"))?;
                let mbs = u.mbs.get(format!("{path}.upc.mbs"))?;
                if mbs == 0 {
                    return err(format!("{path}.upc.mbs"), "must be at least 1 cell");
                }
                let pcr = match &u.pcr {
                    Some(p) => Some(p.get(format!("{path}.upc.pcr"))?.0),
                    None => None,
                };
                Some(UpcConfig {
                    scr: scr.0,
                    mbs,
                    pcr,
                })
            }
        };
        let llc = match &self.llc {
            Some(l) => l.get(format!("{path}.llc"))?,
            None => false,
        };
        Ok(AtmLineConfig { llc, upc })
    }
}

/// What the topology check needs to know about one link.
pub struct LinkView<'a> {
    pub a: usize,
    pub b: usize,
    /// The ATM configuration of each direction (forward a→b, reverse b→a), if ATM.
    pub atm: [Option<&'a AtmLineConfig>; 2],
    /// Whether the direction has another link layer.
    pub other_layer2: [bool; 2],
    pub rates: [Rate; 2],
    /// Whether `queue` / `queue_ba` were written.
    pub queue_given: [bool; 2],
}

/// Checks the rules that tie ATM keys to the topology: switches only on ATM links, an
/// ATM link ATM both ways, UPC only into a switch and within the line's rate, `llc`
/// only at an adapter, no `queue` on a switch's port (its buffer is the switch's), no
/// TCP endpoint at a switch, `[atm]` only with switches.
pub fn check_topology(
    names: &[&str],
    switch: &[bool],
    links: &[LinkView],
    flows: &[(usize, usize, usize)],
    has_defaults: bool,
) -> Result<(), ScenarioError> {
    if has_defaults && !switch.iter().any(|&s| s) {
        return err(
            "atm",
            "sets defaults for atm-switch nodes, and the scenario has none",
        );
    }
    for (i, l) in links.iter().enumerate() {
        let key = |k: usize, f: &str| format!("link[{i}].{f}{}", if k == 0 { "" } else { "_ba" });
        let is_atm = l.atm[0].is_some() || l.atm[1].is_some();
        for k in 0..2 {
            if is_atm && l.atm[k].is_none() {
                return err(
                    key(k, "layer2"),
                    "an ATM link is ATM both ways: use { kind = \"atm\" } here too (or leave it out)",
                );
            }
        }
        for (end, other) in [(l.a, l.b), (l.b, l.a)] {
            if switch[end] && !is_atm {
                let k = if l.other_layer2[0] || !l.other_layer2[1] {
                    0
                } else {
                    1
                };
                return err(
                    key(k, "layer2"),
                    format!(
                        "the link between atm-switch {:?} and {:?} must be an ATM link: layer2 = {{ kind = \"atm\" }}",
                        names[end], names[other]
                    ),
                );
            }
        }
        for k in 0..2 {
            let Some(cfg) = l.atm[k] else { continue };
            let (from, to) = if k == 0 { (l.a, l.b) } else { (l.b, l.a) };
            if let Some(u) = &cfg.upc {
                let p = format!("{}.upc", key(k, "layer2"));
                if !switch[to] {
                    return err(
                        p,
                        format!(
                            "polices cells entering an atm-switch, and {:?} is not one",
                            names[to]
                        ),
                    );
                }
                let pcr = u.pcr.unwrap_or(l.rates[k]);
                if u.scr.bps() > pcr.bps() {
                    return err(
                        format!("{p}.scr"),
                        format!("must not exceed the peak cell rate ({} bit/s)", pcr.bps()),
                    );
                }
                if pcr.bps() > 100_000_000_000 {
                    return err(format!("{p}.pcr"), "must be at most 100Gbps");
                }
            }
            if cfg.llc && switch[from] {
                return err(
                    format!("{}.llc", key(k, "layer2")),
                    format!(
                        "applies to a host adapter, and {:?} is an atm-switch",
                        names[from]
                    ),
                );
            }
            if l.queue_given[k] && switch[from] {
                return err(
                    key(k, "queue"),
                    format!(
                        "the output buffer of atm-switch {:?} is set by its atm.buffer (cells), not by the link",
                        names[from]
                    ),
                );
            }
        }
    }
    for &(src, dst, spec) in flows {
        for (n, f) in [(src, "src"), (dst, "dst")] {
            if switch[n] {
                return err(
                    format!("flow[{spec}].{f}"),
                    format!("{:?} is an atm-switch; TCP runs on hosts", names[n]),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> SwitchSpec {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn switch_options_fall_back_to_the_scenario_defaults() {
        let d = spec(r#"{"policy":"epd","buffer":16000,"epd_threshold":1280}"#);
        let own = spec(r#"{"policy":"scd-epd","scd_threshold":"75%"}"#);
        let l = SwitchSpec::resolve(Some(&own), Some(&d), "node[1].atm").unwrap();
        assert_eq!(
            l,
            PortLimits {
                policy: Policy::ScdEpd,
                buffer: 16000,
                epd_threshold: 1280,
                scd_threshold: 12000
            }
        );
        let l = SwitchSpec::resolve(None, None, "node[0].atm").unwrap();
        assert_eq!(
            (l.policy, l.buffer, l.epd_threshold, l.scd_threshold),
            (Policy::Ubr, 8000, 4000, 7200)
        );
    }

    #[test]
    fn bad_line_options_name_their_key() {
        let sc = |l2: &str| {
            format!(
                r#"{{"duration":"1s","node":[{{"name":"sw","kind":"atm-switch"}}],
                "link":[{{"a":"s","b":"sw","rate":"10Mbps","delay":"1ms","layer2":{{"kind":"atm",{l2}}}}},
                {{"a":"sw","b":"r","rate":"10Mbps","delay":"1ms","layer2":{{"kind":"atm"}}}}]}}"#
            )
        };
        for (l2, path, words) in [
            (
                r#""upc":{"scr":"0bps","mbs":10}"#,
                "link[0].layer2.upc.scr",
                "positive",
            ),
            (
                r#""upc":{"scr":"1Mbps","mbs":-1}"#,
                "link[0].layer2.upc.mbs",
                "integer from 0",
            ),
            (
                r#""upc":{"scr":"1Mbps","mbs":1,"pcr":"x"}"#,
                "link[0].layer2.upc.pcr",
                "rate",
            ),
            (
                r#""upc":{"scr":"1Mbps"}"#,
                "link[0].layer2.upc",
                "missing field `mbs`",
            ),
            (r#""upc":5"#, "link[0].layer2.upc", "expected a table"),
            (r#""llc":"yes""#, "link[0].layer2.llc", "true or false"),
        ] {
            let e = crate::scenario::parse_json(&sc(l2))
                .and_then(|s| s.validate())
                .unwrap_err();
            assert_eq!(e.path, path, "{l2}: {e}");
            assert!(e.msg.contains(words), "{l2}: {e}");
        }
    }

    #[test]
    fn bad_switch_options_name_the_field_that_set_them() {
        let d = spec(r#"{"epd_threshold":9000}"#);
        let e = SwitchSpec::resolve(None, Some(&d), "node[1].atm").unwrap_err();
        assert_eq!(e.path, "atm.epd_threshold");
        let own = spec(r#"{"buffer":0}"#);
        let e = SwitchSpec::resolve(Some(&own), Some(&d), "node[3].atm").unwrap_err();
        assert_eq!(e.path, "node[3].atm.buffer");
        for bad in [
            r#"{"scd_threshold":"120%"}"#,
            r#"{"scd_threshold":"ninety"}"#,
            r#"{"scd_threshold":-1}"#,
            r#"{"scd_threshold":{"room":5}}"#,
            r#"{"scd_threshold":{}}"#,
        ] {
            let e = serde_json::from_str::<SwitchSpec>(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("share of the buffer"), "{bad}: {e}");
        }
        // the buffer less a headroom, at least 0
        let own = spec(
            r#"{"buffer":8000,"epd_threshold":{"headroom":1280},"scd_threshold":{"headroom":9000}}"#,
        );
        let l = SwitchSpec::resolve(Some(&own), None, "node[0].atm").unwrap();
        assert_eq!((l.epd_threshold, l.scd_threshold), (6720, 0));
        assert!(serde_json::from_str::<SwitchSpec>(r#"{"policy":"red"}"#).is_err());
    }
}
