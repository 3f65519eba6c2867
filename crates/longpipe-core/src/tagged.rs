//! Scenario tables tagged by `kind` (`queue = { kind = "red", min_th = "5pkt" }`), read
//! with the field path of every error.
//!
//! serde's internally tagged enums buffer the table and lose the path below it (a bad
//! value of `tti` in `layer2` is reported at `link[0].layer2`), cannot default the tag,
//! and call a key of another kind "unknown". [`read`] reads the table whole, finds its
//! kind (or takes the default), refuses a key of another kind by name with the kinds it
//! applies to, and reads the keys every kind shares (`C`, such as a queue's `limit`)
//! and the kind's own spec type (with `deny_unknown_fields`), keeping their key paths.
//! Which keys a kind takes is read from its spec type's own field list
//! ([`fields`]): there is no table of keys to keep by hand.
//!
//! [`schema`] writes the matching JSON Schema: one object per kind, its `kind`, the
//! shared keys and its own.
//!
//! [`registry!`] makes a component's registry of kinds from one line per kind: the spec
//! enum (each kind's spec type, which implements [`Resolve`]), the table [`read`] and
//! [`schema`] take, and the enum of resolved kinds.
//!
//! A deserializer that has read its whole table can no longer extend serde's path: it
//! raises [`below`]`(key path, message)`, and [`crate::scenario::parse_json`] moves the
//! key path into the error's path ([`split_below`]).

use crate::error::ScenarioError;
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Metadata, Schema, SchemaObject, SubschemaValidation};
use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::fmt::Display;

/// Marks the key path at the start of a [`below`] message (ASCII unit separator: never
/// in a message a user wrote or serde made).
const BELOW: char = '\u{1f}';

/// A deserialization error at `sub`, a key path below the value being read ("tti",
/// "loss.p", "[2]"). Nested: an error that is already below a key gets `sub` in front.
pub fn below<E: de::Error>(sub: &str, msg: impl Display) -> E {
    let msg = msg.to_string();
    let (sub, msg) = match split_below(&msg) {
        Some((inner, m)) => (join(sub, inner), m.to_string()),
        None => (sub.to_string(), msg),
    };
    E::custom(format_args!("{BELOW}{sub}{BELOW}{msg}"))
}

/// A [`below`] message as (key path, message); None for any other message.
pub fn split_below(msg: &str) -> Option<(&str, &str)> {
    let rest = msg.strip_prefix(BELOW)?;
    rest.split_once(BELOW)
}

/// `path` extended by `sub` (`a` + `b` = `a.b`, `a` + `[1]` = `a[1]`).
pub fn join(path: &str, sub: &str) -> String {
    match (path, sub) {
        ("" | ".", s) => s.to_string(),
        (p, "" | ".") => p.to_string(),
        (p, s) if s.starts_with('[') => format!("{p}{s}"),
        (p, s) => format!("{p}.{s}"),
    }
}

/// The field names of a struct that derives `Deserialize` (what serde hands to
/// `deserialize_struct`), or none for any other type.
pub fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Grab(Option<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("fields read")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for &mut Grab {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = Some(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
            enum identifier ignored_any
        }
    }
    let mut g = Grab(None);
    let _ = T::deserialize(&mut g);
    g.0.unwrap_or(&[])
}

/// A kind's spec type: its keys, resolved (defaults, checks) at the table's path.
pub trait Resolve: DeserializeOwned + JsonSchema {
    type Config;
    fn resolve(&self, path: &str) -> Result<Self::Config, ScenarioError>;
}

/// The registry of a tagged table's kinds, one line per kind:
/// `Variant = "name" | "other name" => SpecType`. Makes `enum $spec` (one variant per
/// kind holding its spec type, with `From` each), `const KINDS` (for [`read`] and
/// [`schema`]), `enum $config` (each kind's resolved `Resolve::Config`, with the
/// attributes given), `$spec::resolve` and `$config::name`.
macro_rules! registry {
    (
        $(#[$sattr:meta])* $svis:vis enum $spec:ident;
        $(#[$cattr:meta])* $cvis:vis enum $config:ident;
        $($v:ident = $name:literal $(| $alias:literal)* => $t:ty),+ $(,)?
    ) => {
        $(#[$sattr])*
        $svis enum $spec { $($v($t)),+ }

        $(impl From<$t> for $spec {
            fn from(s: $t) -> Self {
                $spec::$v(s)
            }
        })+

        /// Every kind, in the registry's order.
        const KINDS: &[$crate::tagged::Kind<$spec>] =
            &[$($crate::tagged::Kind::of::<$t>(&[$name $(, $alias)*])),+];

        $(#[$cattr])*
        $cvis enum $config { $($v(<$t as $crate::tagged::Resolve>::Config)),+ }

        impl $spec {
            /// Resolves the kind's keys; `path` is the table's field path.
            pub fn resolve(&self, path: &str) -> Result<$config, $crate::error::ScenarioError> {
                use $crate::tagged::Resolve as _;
                Ok(match self { $($spec::$v(s) => $config::$v(s.resolve(path)?)),+ })
            }
        }

        impl $config {
            /// Its `kind` name.
            pub fn name(&self) -> &'static str {
                match self { $($config::$v(_) => $name),+ }
            }
        }
    };
}
pub(crate) use registry;

/// The shared keys of a tagged table whose kinds share none.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NoKeys {}

/// One kind of a tagged table.
pub struct Kind<T> {
    /// Its name in `kind = "..."`, then other accepted spellings.
    pub names: &'static [&'static str],
    /// The keys of its own spec type.
    pub keys: fn() -> &'static [&'static str],
    /// Reads its own keys.
    pub read: fn(Value) -> Result<T, serde_path_to_error::Error<serde_json::Error>>,
    /// Its own keys' schema.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
}

impl<T> Kind<T> {
    /// The kind `names` whose keys are those of `S`.
    pub const fn of<S: DeserializeOwned + JsonSchema + Into<T>>(
        names: &'static [&'static str],
    ) -> Self {
        Kind {
            names,
            keys: fields::<S>,
            read: read_as::<S, T>,
            schema: S::json_schema,
        }
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.names[0]
    }
}

fn read_as<S: DeserializeOwned + Into<T>, T>(
    v: Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize::<_, S>(v).map(Into::into)
}

/// An error of reading a part of the table, at its key path.
fn unfold<E: de::Error>(e: serde_path_to_error::Error<serde_json::Error>) -> E {
    let path = e.path().to_string();
    below(&path, e.into_inner())
}

fn quoted(names: impl IntoIterator<Item = impl Display>, sep: &str) -> String {
    let v: Vec<String> = names.into_iter().map(|n| format!("\"{n}\"")).collect();
    v.join(sep)
}

/// Reads a table tagged by `kind`: the keys every kind shares (`C`) and the kind's own
/// spec. `default`: the index in `kinds` of a table without `kind` (None: `kind` is
/// required); `what`: the table's noun in messages ("queue").
pub fn read<'de, D, C, T>(
    d: D,
    kinds: &[Kind<T>],
    default: Option<usize>,
    what: &str,
) -> Result<(C, T), D::Error>
where
    D: Deserializer<'de>,
    C: DeserializeOwned,
{
    let mut m = match Value::deserialize(d)? {
        Value::Object(m) => m,
        v => {
            return Err(de::Error::custom(format_args!(
                "invalid type: {}, expected a table",
                describe(&v)
            )))
        }
    };
    let kind = match m.remove("kind") {
        None => match default {
            Some(i) => &kinds[i],
            None => return Err(de::Error::missing_field("kind")),
        },
        Some(Value::String(s)) => kinds
            .iter()
            .find(|k| k.names.contains(&s.as_str()))
            .ok_or_else(|| {
                below(
                    "kind",
                    format_args!(
                        "unknown {what} kind \"{s}\", expected one of {}",
                        quoted(kinds.iter().map(Kind::name), ", ")
                    ),
                )
            })?,
        Some(v) => {
            return Err(below(
                "kind",
                format_args!("invalid type: {}, expected a string", describe(&v)),
            ))
        }
    };
    let common_keys = fields::<C>();
    let own = (kind.keys)();
    let mut common = Map::new();
    for key in m.keys().cloned().collect::<Vec<_>>() {
        if common_keys.contains(&key.as_str()) {
            common.insert(key.clone(), m.remove(&key).unwrap_or_default());
        } else if !own.contains(&key.as_str()) {
            let with: Vec<&str> = kinds
                .iter()
                .filter(|k| (k.keys)().contains(&key.as_str()))
                .map(Kind::name)
                .collect();
            return Err(if with.is_empty() {
                let mut known = vec!["kind"];
                known.extend(common_keys.iter().chain(own));
                below(
                    &key,
                    format_args!(
                        "unknown field `{key}`, expected one of {}",
                        known
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            } else {
                below(
                    &key,
                    format_args!(
                        "only applies to kind = {} (this {what} is \"{}\")",
                        quoted(with, " or "),
                        kind.name()
                    ),
                )
            });
        }
    }
    let c = serde_path_to_error::deserialize::<_, C>(Value::Object(common)).map_err(unfold)?;
    let t = (kind.read)(Value::Object(m)).map_err(unfold)?;
    Ok((c, t))
}

/// What a JSON value is, in the words of serde's "invalid type" messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "list".into(),
        Value::Object(_) => "table".into(),
    }
}

/// The JSON Schema of a tagged table described by `doc`: one object per kind with
/// `kind` (optional for the default kind), the shared keys of `C` and the kind's own.
pub fn schema<C: JsonSchema, T>(
    gen: &mut SchemaGenerator,
    doc: &str,
    kinds: &[Kind<T>],
    default: Option<usize>,
) -> Schema {
    let common = C::json_schema(gen).into_object();
    let one_of = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let mut s = (k.schema)(gen).into_object();
            let obj = s.object();
            if let Some(c) = &common.object {
                for (key, v) in &c.properties {
                    obj.properties.insert(key.clone(), v.clone());
                }
            }
            let tag = SchemaObject {
                instance_type: Some(InstanceType::String.into()),
                enum_values: Some(k.names.iter().map(|n| Value::from(*n)).collect()),
                ..Default::default()
            };
            obj.properties.insert("kind".into(), tag.into());
            if default != Some(i) {
                obj.required.insert("kind".into());
            }
            Schema::Object(s)
        })
        .collect();
    SchemaObject {
        metadata: Some(Box::new(Metadata {
            description: Some(doc.to_string()),
            ..Default::default()
        })),
        subschemas: Some(Box::new(SubschemaValidation {
            one_of: Some(one_of),
            ..Default::default()
        })),
        ..Default::default()
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Spec {
        A(A),
        B(B),
    }
    /// Kind a.
    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct A {
        #[serde(default)]
        x: Option<u32>,
    }
    /// Kind b.
    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct B {
        y: u32,
        #[serde(default)]
        x: Option<u32>,
    }
    impl From<A> for Spec {
        fn from(a: A) -> Spec {
            Spec::A(a)
        }
    }
    impl From<B> for Spec {
        fn from(b: B) -> Spec {
            Spec::B(b)
        }
    }
    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Common {
        #[serde(default)]
        n: Option<u8>,
    }
    const KINDS: [Kind<Spec>; 2] = [Kind::of::<A>(&["a", "alpha"]), Kind::of::<B>(&["b"])];

    /// Reads `json` as the field `t` of a table, as the scenario does: (path, message).
    fn rd(json: &str) -> Result<(Common, Spec), (String, String)> {
        struct W((Common, Spec));
        impl<'de> Deserialize<'de> for W {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<W, D::Error> {
                read(d, &KINDS, Some(0), "thing").map(W)
            }
        }
        #[derive(Deserialize)]
        struct Outer {
            t: W,
        }
        let text = format!(r#"{{"t":{json}}}"#);
        let de = &mut serde_json::Deserializer::from_str(&text);
        match serde_path_to_error::deserialize::<_, Outer>(de) {
            Ok(o) => Ok(o.t.0),
            Err(e) => {
                let path = e.path().to_string();
                let msg = e.into_inner().to_string();
                let msg = msg.split(" at line ").next().unwrap().to_string();
                Err(match split_below(&msg) {
                    Some((sub, m)) => (join(&path, sub), m.to_string()),
                    None => (path, msg),
                })
            }
        }
    }

    #[test]
    fn kinds_defaults_aliases_and_shared_keys() {
        assert_eq!(fields::<B>(), ["y", "x"]);
        assert!(fields::<u32>().is_empty());
        let (c, s) = rd(r#"{"x":1,"n":2}"#).unwrap();
        assert_eq!((c.n, s), (Some(2), Spec::A(A { x: Some(1) })));
        assert_eq!(rd(r#"{"kind":"alpha"}"#).unwrap().1, Spec::A(A { x: None }));
        let s = rd(r#"{"y":3,"kind":"b"}"#).unwrap().1;
        assert_eq!(s, Spec::B(B { y: 3, x: None }));
    }

    #[test]
    fn every_error_names_its_key() {
        for (json, path, want) in [
            (
                r#"{"y":3}"#,
                "t.y",
                r#"only applies to kind = "b" (this thing is "a")"#,
            ),
            (
                r#"{"z":3,"kind":"b"}"#,
                "t.z",
                "unknown field `z`, expected one of `kind`, `n`, `y`, `x`",
            ),
            (
                r#"{"kind":"c"}"#,
                "t.kind",
                r#"unknown thing kind "c", expected one of "a", "b""#,
            ),
            (
                r#"{"kind":1}"#,
                "t.kind",
                "invalid type: number 1, expected a string",
            ),
            (r#"{"kind":"b"}"#, "t", "missing field `y`"),
            (
                r#"{"kind":"b","y":"x"}"#,
                "t.y",
                "invalid type: string \"x\", expected u32",
            ),
            (
                r#"{"n":300}"#,
                "t.n",
                "invalid value: integer `300`, expected u8",
            ),
            ("[1]", "t", "invalid type: list, expected a table"),
        ] {
            assert_eq!(rd(json).unwrap_err(), (path.into(), want.into()), "{json}");
        }
    }

    #[test]
    fn paths_join_and_nest() {
        assert_eq!(join("a", "b"), "a.b");
        assert_eq!(join("a", "[1]"), "a[1]");
        assert_eq!(join(".", "b"), "b");
        assert_eq!(join("a", "."), "a");
        let e: serde_json::Error = below("p", below::<serde_json::Error>("q", "m"));
        assert_eq!(split_below(&e.to_string()), Some(("p.q", "m")));
        assert_eq!(split_below("plain"), None);
    }

    #[test]
    fn schema_has_one_object_per_kind() {
        let mut g = SchemaGenerator::default();
        let s = schema::<Common, Spec>(&mut g, "A thing.", &KINDS, Some(0));
        let s = serde_json::to_value(s).unwrap();
        assert_eq!(s["description"], "A thing.");
        let kinds = s["oneOf"].as_array().unwrap();
        assert_eq!(
            kinds[0]["properties"]["kind"]["enum"],
            serde_json::json!(["a", "alpha"])
        );
        assert!(kinds[0]["properties"]["n"].is_object());
        assert!(
            kinds[0].get("required").is_none(),
            "the default kind needs no kind"
        );
        assert_eq!(kinds[1]["required"], serde_json::json!(["kind", "y"]));
        assert_eq!(kinds[1]["additionalProperties"], false);
        assert_eq!(kinds[1]["description"], "Kind b.");
    }
}
