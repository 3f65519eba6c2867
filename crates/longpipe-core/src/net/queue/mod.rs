//! Queue disciplines: where units wait for a transmitter, and which are dropped.
//!
//! [`discipline`] is the plug-in point (the [`Queue`] trait, [`Admission`],
//! [`QueueStats`], [`DisciplineSpec`]); each discipline is one file here, and one line in
//! [`disciplines!`] below, which makes the scenario's tagged `queue` table
//! ([`QueueSpec`]: `{ limit = "1000pkt" }` is drop-tail, `{ kind = "red", min_th = ... }`
//! another discipline with its own keys, read by [`crate::tagged`]), the resolved
//! [`Discipline`] and its [`QueueConfig::build`].

pub mod codel;
pub mod discipline;
pub mod droptail;
pub mod fq_codel;
pub mod peach_droptail;
pub mod priority;
pub mod red;

pub use discipline::{Admission, DisciplineSpec, Queue, QueueStats};

use crate::element::Frame;
use crate::error::{err, ScenarioError};
use crate::rng::RngStream;
use crate::tagged;
use crate::time::Rate;
use crate::units::{Limit, LimitQ};
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

/// The keys every discipline takes.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    /// Capacity: "1000pkt" or bytes ("64KB"). Default 100pkt. The packet in
    /// transmission is not counted.
    #[serde(default)]
    pub limit: Option<LimitQ>,
}

/// The registry: one line per discipline, `Variant = "kind" (| "other name") => its
/// spec type`. The first is the default (a `queue` without `kind`).
macro_rules! disciplines {
    ($($v:ident = $name:literal $(| $alias:literal)* => $spec:ty),+ $(,)?) => {
        tagged::registry! {
            /// A discipline's own keys, by kind.
            #[derive(Debug, Clone)]
            pub enum DisciplineKeys;
            /// A resolved discipline with its parameters.
            #[derive(Debug, Clone, Copy, PartialEq)]
            pub enum Discipline;
            $($v = $name $(| $alias)* => $spec),+
        }

        impl Discipline {
            fn build_with<U: Frame + Send + 'static>(
                &self,
                a: Admission,
                rate: Rate,
                rng: RngStream,
            ) -> Box<dyn Queue<U>> {
                match self { $(Discipline::$v(c) => <$spec>::build(c, a, rate, rng)),+ }
            }
        }
    };
}

disciplines! {
    Droptail = "droptail" => droptail::DropTailSpec,
    Priority = "priority" => priority::PrioritySpec,
    PeachDroptail = "peach-droptail" => peach_droptail::PeachDropTailSpec,
    Red = "red" => red::RedSpec,
    Codel = "codel" => codel::CodelSpec,
    FqCodel = "fq-codel" | "fq_codel" => fq_codel::FqCodelSpec,
}

/// The scenario's `queue = { ... }` of one link direction: the buffer `limit` and the
/// discipline's `kind` with its own keys, in one table.
#[derive(Debug, Clone)]
pub struct QueueSpec {
    pub buffer: Buffer,
    pub discipline: DisciplineKeys,
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec {
            buffer: Buffer::default(),
            discipline: DisciplineKeys::Droptail(droptail::DropTailSpec {}),
        }
    }
}

impl<'de> Deserialize<'de> for QueueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (buffer, discipline) = tagged::read(d, KINDS, Some(0), "queue")?;
        Ok(QueueSpec { buffer, discipline })
    }
}

impl JsonSchema for QueueSpec {
    fn schema_name() -> String {
        "QueueSpec".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        let doc = "The queue of a link direction: the buffer `limit` and the discipline's \
                   `kind` (default \"droptail\") with its own keys, in one table.";
        tagged::schema::<Buffer, _>(gen, doc, KINDS, Some(0))
    }
}

/// A resolved queue: its discipline and buffer limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueConfig {
    pub discipline: Discipline,
    pub admission: Admission,
}

impl QueueSpec {
    /// Defaults and checks; `path` is the spec's field path.
    pub fn resolve(spec: Option<&QueueSpec>, path: &str) -> Result<QueueConfig, ScenarioError> {
        let default = QueueSpec::default();
        let q = spec.unwrap_or(&default);
        // 100 packets: ns-3's DropTailQueue default (`MaxSize` = "100p",
        // src/network/utils/drop-tail-queue.h), docs/notes/defaults.md
        let limit = q.buffer.limit.map(|l| l.0).unwrap_or(Limit::Packets(100));
        if matches!(limit, Limit::Packets(0) | Limit::Bytes(0)) {
            return err(
                format!("{path}.limit"),
                "must be at least 1 packet or 1 byte",
            );
        }
        Ok(QueueConfig {
            discipline: q.discipline.resolve(path)?,
            admission: Admission { limit },
        })
    }
}

impl QueueConfig {
    /// A drop-tail queue of `limit`.
    pub fn droptail(limit: Limit) -> Self {
        QueueConfig {
            discipline: Discipline::Droptail(droptail::DropTailSpec {}),
            admission: Admission { limit },
        }
    }

    /// Whether it is plain drop-tail (what a link layer's SDU buffer is).
    pub fn is_droptail(&self) -> bool {
        matches!(self.discipline, Discipline::Droptail(_))
    }

    /// The discipline, ready to use on a link of `rate`; `rng` is its own random
    /// stream (RED's drop decisions, fq_codel's hash perturbation).
    pub fn build<U: Frame + Send + 'static>(
        &self,
        rate: Rate,
        rng: RngStream,
    ) -> Box<dyn Queue<U>> {
        self.discipline.build_with(self.admission, rate, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_json;

    /// `queue` as written in a scenario: the resolved queue, or (path, message).
    fn queue(q: &str) -> Result<QueueConfig, (String, String)> {
        let text = format!(
            r#"{{"duration":"1s","link":[{{"a":"s","b":"c","rate":"1Mbps","delay":"1ms","queue":{q}}}]}}"#
        );
        parse_json(&text)
            .and_then(|s| s.validate())
            .map(|v| v.links[0].dirs[0].link.queue)
            .map_err(|e| (e.path, e.msg))
    }

    #[test]
    fn zero_limits_are_rejected_with_their_path() {
        let e = queue(r#"{"limit":"0pkt"}"#).unwrap_err();
        assert_eq!(e.0, "link[0].queue.limit");
        let c = QueueSpec::resolve(None, "x").unwrap();
        assert_eq!(c.admission.limit, Limit::Packets(100));
        assert_eq!((c.is_droptail(), c.discipline.name()), (true, "droptail"));
    }

    #[test]
    fn a_queue_without_kind_is_droptail_and_limit_goes_with_any_kind() {
        let c = queue(r#"{"limit":"1000pkt"}"#).unwrap();
        assert_eq!(c, QueueConfig::droptail(Limit::Packets(1000)));
        let c = queue(r#"{"kind":"codel","limit":"64KB"}"#).unwrap();
        assert_eq!(c.admission.limit, Limit::Bytes(64_000));
        assert_eq!(c.discipline.name(), "codel");
    }

    #[test]
    fn fq_codel_is_also_accepted_under_its_linux_name() {
        for name in ["fq-codel", "fq_codel"] {
            let c = queue(&format!(r#"{{"kind":"{name}"}}"#)).unwrap();
            assert_eq!(c.discipline.name(), "fq-codel");
        }
        let e = queue(r#"{"kind":"fqcodel"}"#).unwrap_err();
        assert_eq!(e.0, "link[0].queue.kind");
        assert!(e.1.contains("\"fq-codel\""), "{}", e.1);
    }

    #[test]
    fn keys_of_another_discipline_are_errors_naming_their_path_and_kinds() {
        let e = queue(r#"{"max_p":0.2,"kind":"codel"}"#).unwrap_err();
        assert_eq!(e.0, "link[0].queue.max_p");
        assert_eq!(
            e.1,
            r#"only applies to kind = "red" (this queue is "codel")"#
        );
        let e = queue(r#"{"ecn":true}"#).unwrap_err();
        assert_eq!(e.0, "link[0].queue.ecn");
        assert_eq!(
            e.1,
            r#"only applies to kind = "red" or "codel" or "fq-codel" (this queue is "droptail")"#
        );
        let e = queue(r#"{"kind":"red","colour":1}"#).unwrap_err();
        assert_eq!(e.0, "link[0].queue.colour");
        assert!(
            e.1.contains("`min_th`") && e.1.contains("`limit`"),
            "{}",
            e.1
        );
        // a value's own error keeps its path
        let e = queue(r#"{"kind":"red","min_th":"x"}"#).unwrap_err();
        assert_eq!(e.0, "link[0].queue.min_th");
        let e = queue(r#""x""#).unwrap_err();
        assert_eq!(
            (e.0.as_str(), e.1.contains("expected a table")),
            ("link[0].queue", true)
        );
    }

    #[test]
    fn every_kind_resolves_by_its_name() {
        for k in KINDS {
            let c = queue(&format!(r#"{{"kind":"{}"}}"#, k.name())).unwrap();
            assert_eq!(c.discipline.name(), k.name());
        }
    }

    #[test]
    fn the_schema_shows_each_kinds_own_keys() {
        let s: serde_json::Value = serde_json::from_str(&crate::json_schema()).unwrap();
        let q = &s["definitions"]["QueueSpec"]["oneOf"];
        let keys = |name: &str| -> Vec<String> {
            let k = q
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["properties"]["kind"]["enum"][0] == name)
                .unwrap();
            k["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(keys("droptail"), ["kind", "limit"]);
        assert_eq!(
            keys("codel"),
            ["ecn", "interval", "kind", "limit", "target"]
        );
        assert!(keys("red").contains(&"min_th".to_string()));
    }
}
