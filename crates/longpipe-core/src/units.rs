//! Quantities with units, as written in scenario files.
//!
//! Units: `bps kbps Mbps Gbps` (decimal), `ns us ms s`, `B KB MB GB` (decimal: 1 KB =
//! 1000 B) and `KiB MiB GiB` (binary), `pkt`. A bare number means bit/s, seconds,
//! bytes and packets respectively. Parsing is exact: decimal strings are converted with
//! integer arithmetic where possible so that "0.1s" is exactly 100 000 000 ns.

use crate::time::{Rate, SimDuration};
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject, SingleOrVec};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// Parses a non-negative decimal like "12.5" into (mantissa, decimal places).
fn parse_decimal(s: &str) -> Option<(u128, u32)> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if int.len() + frac.len() > 30 {
        return None;
    }
    let digits = format!("{int}{frac}");
    let m: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    Some((m, frac.len() as u32))
}

/// value × scale, where value is a decimal string; None if not an integer after scaling
/// would require rounding beyond `round` (we round to nearest).
fn scaled(num: &str, scale: u128) -> Option<u128> {
    if let Some((m, dp)) = parse_decimal(num) {
        let denom = 10u128.checked_pow(dp)?;
        let v = m.checked_mul(scale)?;
        return Some((v + denom / 2) / denom);
    }
    // scientific notation such as 1e-3
    let f: f64 = num.trim().parse().ok()?;
    if !f.is_finite() || f < 0.0 {
        return None;
    }
    Some((f * scale as f64).round() as u128)
}

fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let idx = s
        .char_indices()
        .find(|(i, c)| c.is_ascii_alphabetic() && !(matches!(c, 'e' | 'E') && is_exponent(s, *i)))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    (s[..idx].trim(), s[idx..].trim())
}

fn is_exponent(s: &str, i: usize) -> bool {
    // "1e-3s": an 'e' followed by a digit or sign and preceded by a digit is an exponent
    let b = s.as_bytes();
    i > 0
        && b[i - 1].is_ascii_digit()
        && b.get(i + 1)
            .is_some_and(|c| c.is_ascii_digit() || *c == b'-' || *c == b'+')
}

pub fn parse_duration(s: &str) -> Result<SimDuration, String> {
    let (num, unit) = split_unit(s);
    let scale: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" | "" => 1_000_000_000,
        "min" => 60_000_000_000,
        _ => {
            return Err(format!(
                "expected a duration like \"275ms\" (units ns, us, ms, s), got {s:?}"
            ))
        }
    };
    if num.starts_with('-') {
        return Err(format!("must not be negative, got {s:?}"));
    }
    let v = scaled(num, scale).ok_or_else(|| {
        format!("expected a duration like \"275ms\" (units ns, us, ms, s), got {s:?}")
    })?;
    u64::try_from(v)
        .map(SimDuration)
        .map_err(|_| format!("duration too large: {s:?}"))
}

pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (num, unit) = split_unit(s);
    let scale: u128 = match unit {
        "bps" | "bit/s" | "" => 1,
        "kbps" | "Kbps" | "kbit/s" => 1_000,
        "Mbps" | "Mbit/s" => 1_000_000,
        "Gbps" | "Gbit/s" => 1_000_000_000,
        _ => {
            return Err(format!(
                "expected a rate like \"10Mbps\" (units bps, kbps, Mbps, Gbps), got {s:?}"
            ))
        }
    };
    if num.starts_with('-') {
        return Err(format!("must be positive, got {s:?}"));
    }
    let v = scaled(num, scale).ok_or_else(|| {
        format!("expected a rate like \"10Mbps\" (units bps, kbps, Mbps, Gbps), got {s:?}")
    })?;
    if v == 0 {
        return Err(format!("must be positive, got {s:?}"));
    }
    u64::try_from(v)
        .map(Rate)
        .map_err(|_| format!("rate too large: {s:?}"))
}

pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s);
    let scale: u128 = match unit {
        "B" | "" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => {
            return Err(format!(
                "expected a size like \"64KB\" (units B, KB, MB, GB, KiB, MiB, GiB), got {s:?}"
            ))
        }
    };
    if num.starts_with('-') {
        return Err(format!("must not be negative, got {s:?}"));
    }
    let v = scaled(num, scale).ok_or_else(|| {
        format!("expected a size like \"64KB\" (units B, KB, MB, GB, KiB, MiB, GiB), got {s:?}")
    })?;
    u64::try_from(v).map_err(|_| format!("size too large: {s:?}"))
}

/// A queue limit: packets ("1000pkt", or a bare number) or bytes ("64KB").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

pub fn parse_limit(s: &str) -> Result<Limit, String> {
    let (num, unit) = split_unit(s);
    match unit {
        "pkt" | "pkts" | "p" | "" => {
            let v = scaled(num, 1)
                .filter(|_| !num.starts_with('-'))
                .ok_or_else(|| {
                    format!("expected a limit like \"1000pkt\" or \"64KB\", got {s:?}")
                })?;
            Ok(Limit::Packets(v as u64))
        }
        _ => parse_bytes(s)
            .map(Limit::Bytes)
            .map_err(|_| format!("expected a limit like \"1000pkt\" or \"64KB\", got {s:?}")),
    }
}

macro_rules! unit_type {
    ($name:ident, $inner:ty, $parse:ident, $num:expr, $desc:expr, $pattern:expr) => {
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($desc)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$name, E> {
                        $parse(s).map($name).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        self.visit_str(&format!("{}{}", v, $num))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        self.visit_str(&format!("{}{}", v, $num))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        if !v.is_finite() {
                            return Err(E::custom(format!("expected a finite number, got {v}")));
                        }
                        self.visit_str(&format!("{}{}", v, $num))
                    }
                }
                d.deserialize_any(V)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> String {
                stringify!($name).to_string()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                let mut s = SchemaObject {
                    instance_type: Some(SingleOrVec::Vec(vec![
                        InstanceType::String,
                        InstanceType::Number,
                    ])),
                    ..Default::default()
                };
                s.metadata().description = Some($desc.to_string());
                s.string().pattern = Some($pattern.to_string());
                Schema::Object(s)
            }
        }
    };
}

unit_type!(
    Duration,
    SimDuration,
    parse_duration,
    "s",
    "a duration: \"275ms\", \"1.5s\" (units ns, us, ms, s); a bare number is seconds",
    r"^\s*[0-9.eE+-]+\s*(ns|us|ms|s|min)?\s*$"
);
unit_type!(
    RateQ,
    Rate,
    parse_rate,
    "bps",
    "a rate: \"10Mbps\" (units bps, kbps, Mbps, Gbps; decimal); a bare number is bit/s",
    r"^\s*[0-9.eE+-]+\s*(bps|kbps|Kbps|Mbps|Gbps|bit/s|kbit/s|Mbit/s|Gbit/s)?\s*$"
);
unit_type!(
    Bytes,
    u64,
    parse_bytes,
    "B",
    "a size: \"64KB\" (units B, KB, MB, GB decimal; KiB, MiB, GiB binary); a bare number is bytes",
    r"^\s*[0-9.eE+-]+\s*(B|KB|kB|MB|GB|KiB|MiB|GiB)?\s*$"
);
unit_type!(
    LimitQ,
    Limit,
    parse_limit,
    "pkt",
    "a queue limit: \"1000pkt\" or a size such as \"64KB\"; a bare number is packets",
    r"^\s*[0-9.eE+-]+\s*(pkt|pkts|p|B|KB|kB|MB|GB|KiB|MiB|GiB)?\s*$"
);

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("275ms").unwrap(),
            SimDuration::from_millis(275)
        );
        assert_eq!(parse_duration("0.1s").unwrap(), SimDuration(100_000_000));
        assert_eq!(parse_duration("1e-3s").unwrap(), SimDuration(1_000_000));
        assert_eq!(parse_duration("500").unwrap(), SimDuration::from_secs(500));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }
    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbps").unwrap(), Rate(10_000_000));
        assert_eq!(parse_rate("1.5 Gbps").unwrap(), Rate(1_500_000_000));
        assert_eq!(parse_rate("384kbps").unwrap(), Rate(384_000));
        assert!(parse_rate("-10Mbps").is_err());
        assert!(parse_rate("0bps").is_err());
        assert!(parse_rate("10 furlongs").is_err());
    }
    #[test]
    fn sizes_and_limits() {
        assert_eq!(parse_bytes("64KB").unwrap(), 64_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65_536);
        assert_eq!(parse_bytes("1.5MB").unwrap(), 1_500_000);
        assert_eq!(parse_limit("1000pkt").unwrap(), Limit::Packets(1000));
        assert_eq!(parse_limit("64KB").unwrap(), Limit::Bytes(64_000));
        assert_eq!(parse_limit("20").unwrap(), Limit::Packets(20));
    }
}
