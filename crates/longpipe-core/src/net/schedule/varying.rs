//! A value of a periodic schedule entry that may vary per tick: one value, a list
//! cycled through, or `{ min, max }` drawn uniformly.

use crate::tagged::below;
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

/// A value that may vary per tick of a periodic entry: one value, a list cycled
/// through, or `{ min, max }` drawn uniformly (rates and durations only).
#[derive(Debug, Clone, PartialEq)]
pub enum Varying<T> {
    One(T),
    Cycle(Vec<T>),
    Range(T, T),
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum VaryingSchema<T> {
    One(T),
    Cycle(Vec<T>),
    Range { min: T, max: T },
}

impl<T: JsonSchema> JsonSchema for Varying<T> {
    fn schema_name() -> String {
        format!("Varying_{}", T::schema_name())
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        VaryingSchema::<T>::json_schema(g)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Varying<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::Value;
        // read whole, so an item's error names its place below the key ([1], min)
        let one = |v: Value, at: &str| {
            T::deserialize(v).map_err(|e| match at {
                "" => D::Error::custom(e),
                _ => below::<D::Error>(at, e),
            })
        };
        match Value::deserialize(d)? {
            Value::Array(items) => {
                if items.is_empty() {
                    return Err(D::Error::custom("expected at least one value in the list"));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, v) in items.into_iter().enumerate() {
                    out.push(one(v, &format!("[{i}]"))?);
                }
                Ok(Varying::Cycle(out))
            }
            Value::Object(mut m) if m.contains_key("min") || m.contains_key("max") => {
                let (Some(lo), Some(hi)) = (m.remove("min"), m.remove("max")) else {
                    return Err(D::Error::custom(
                        "a range is a table of exactly two keys, min and max",
                    ));
                };
                if !m.is_empty() {
                    return Err(D::Error::custom(
                        "a range is a table of exactly two keys, min and max",
                    ));
                }
                Ok(Varying::Range(one(lo, "min")?, one(hi, "max")?))
            }
            v => Ok(Varying::One(one(v, "")?)),
        }
    }
}
