//! Quantities with units, as written in scenario files.
//!
//! Units: `bps kbps Mbps Gbps` (decimal), `ns us ms s min`, `B KB MB GB` (decimal:
//! 1 KB = 1000 B) and `KiB MiB GiB` (binary), `pkt`.
//!
//! # Rules (every conversion is checked; nothing is rounded or truncated)
//!
//! * A **duration** or a **rate** must carry its unit: `delay = 290` or `"290"` is an
//!   error that names the units (is it 290 ms or 290 s?).
//! * A **size** may be a bare number, which means bytes (`rwnd = 65535`); a **queue
//!   limit** may be a bare number, which means packets (`limit = 20`).
//! * Numbers are decimal (`"1.5s"`, `"0.1s"`) or scientific (`"1e-3s"`), parsed exactly
//!   with integer arithmetic, never through a binary float. The value in the base unit
//!   (nanoseconds, bit/s, bytes, packets) must be a whole number: `"1.5pkt"`, `"0.5B"`
//!   and `"1.5ns"` are errors, not 2, 1 and 2.
//! * The value must fit the base unit's `u64`: `"18446744073709551617pkt"` is an error,
//!   not 1 packet. The largest duration is therefore 2^64 - 1 ns (about 584 years).
//! * Signs: no negative values (`"-1s"`); `+` is not accepted either.
//! * A JSON/TOML number given for a size or limit is read the same way: `65535.0` is
//!   65535 bytes, `1.5` is an error, a non-finite float is an error.

use crate::time::{Rate, SimDuration};
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject, SingleOrVec};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// Why a number could not be converted exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumErr {
    /// Not a non-negative decimal or scientific number.
    Syntax,
    /// Negative.
    Negative,
    /// The value in the base unit is not a whole number.
    Fraction,
    /// The value in the base unit does not fit in a u64.
    TooLarge,
}

/// An exact non-negative decimal: `digits × 10^exp` with no trailing zeros in `digits`
/// (zero is `(0, 0)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    digits: u128,
    exp: i64,
}

/// Parses `"12.5"`, `".5"`, `"5."`, `"1e-3"`, `"1.5E+6"` exactly.
fn parse_decimal(s: &str) -> Result<Decimal, NumErr> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(NumErr::Negative);
    }
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(NumErr::Syntax);
    }
    if !int.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return Err(NumErr::Syntax);
    }
    let mut e: i64 = match exp {
        None => 0,
        Some(x) => {
            let digits = x.strip_prefix(['+', '-']).unwrap_or(x);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return Err(NumErr::Syntax);
            }
            // Exponents beyond ±10^6 are either zero-valued (caught below) or errors.
            let mag: i64 = if digits.len() > 7 {
                10_000_000
            } else {
                digits.parse().map_err(|_| NumErr::Syntax)?
            };
            if x.starts_with('-') {
                -mag
            } else {
                mag
            }
        }
    };
    // Significant digits: strip leading zeros of the integer part and trailing zeros
    // of the whole digit string (moving them into the exponent).
    let all = format!("{int}{frac}");
    e -= frac.len() as i64;
    let trimmed_lead = all.trim_start_matches('0');
    if trimmed_lead.is_empty() {
        return Ok(Decimal { digits: 0, exp: 0 });
    }
    let sig = trimmed_lead.trim_end_matches('0');
    e += (trimmed_lead.len() - sig.len()) as i64;
    // More than 38 significant digits cannot be exact in any base unit we use, and is
    // either far too large or finer than the resolution.
    if sig.len() > 38 {
        return Err(if e + sig.len() as i64 > 20 {
            NumErr::TooLarge
        } else {
            NumErr::Fraction
        });
    }
    let digits: u128 = sig.parse().map_err(|_| NumErr::Syntax)?;
    Ok(Decimal { digits, exp: e })
}

/// `number × scale` exactly, as a u64 in the base unit.
fn scaled(num: &str, scale: u128) -> Result<u64, NumErr> {
    let d = parse_decimal(num)?;
    if d.digits == 0 {
        return Ok(0);
    }
    let v = d.digits.checked_mul(scale).ok_or(NumErr::TooLarge)?;
    let v = if d.exp >= 0 {
        // u64::MAX < 10^20: any larger exponent of a non-zero value overflows.
        if d.exp > 20 {
            return Err(NumErr::TooLarge);
        }
        v.checked_mul(10u128.pow(d.exp as u32))
            .ok_or(NumErr::TooLarge)?
    } else {
        // v < 2^128 < 10^39: a divisor of 10^39 or more leaves a fraction.
        if -d.exp > 38 {
            return Err(NumErr::Fraction);
        }
        let div = 10u128.pow((-d.exp) as u32);
        if v % div != 0 {
            return Err(NumErr::Fraction);
        }
        v / div
    };
    u64::try_from(v).map_err(|_| NumErr::TooLarge)
}

/// Splits `"1.5 Mbps"` into `("1.5", "Mbps")`: the unit starts at the first letter that
/// is not an exponent marker.
fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let idx = s
        .char_indices()
        .find(|(i, c)| {
            (c.is_alphabetic() || *c == '/' || *c == 'µ')
                && !(matches!(c, 'e' | 'E') && is_exponent(s, *i))
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    (s[..idx].trim(), s[idx..].trim())
}

fn is_exponent(s: &str, i: usize) -> bool {
    // "1e-3s": an 'e' preceded by a digit or '.' and followed by a digit or sign
    let b = s.as_bytes();
    i > 0
        && (b[i - 1].is_ascii_digit() || b[i - 1] == b'.')
        && b.get(i + 1)
            .is_some_and(|c| c.is_ascii_digit() || *c == b'-' || *c == b'+')
}

/// Describes `e` for the quantity `what` in base unit `base` (e.g. "nanoseconds").
fn num_error(e: NumErr, s: &str, example: &str, base: &str) -> String {
    match e {
        NumErr::Syntax => format!("expected {example}, got {s:?}"),
        NumErr::Negative => format!("must not be negative, got {s:?}"),
        NumErr::Fraction => format!("{s:?} is not a whole number of {base}"),
        NumErr::TooLarge => format!("{s:?} is too large (at most {} {base})", u64::MAX),
    }
}

const DURATION_EXAMPLE: &str = "a duration with a unit, like \"275ms\" (units ns, us, ms, s, min)";
const RATE_EXAMPLE: &str = "a rate with a unit, like \"10Mbps\" (units bps, kbps, Mbps, Gbps)";
const SIZE_EXAMPLE: &str =
    "a size like \"64KB\" (units B, KB, MB, GB, KiB, MiB, GiB; a bare number is bytes)";
const LIMIT_EXAMPLE: &str = "a limit like \"1000pkt\" or \"64KB\" (a bare number is packets)";

/// A duration; the unit is required. Exact to the nanosecond.
pub fn parse_duration(s: &str) -> Result<SimDuration, String> {
    let (num, unit) = split_unit(s);
    let scale: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "min" => 60_000_000_000,
        "" if parse_decimal(num).is_ok() => {
            return Err(format!(
                "a bare number is ambiguous: write {num:?} with a unit, e.g. \"{num}ms\" or \"{num}s\" (units ns, us, ms, s, min)"
            ))
        }
        _ => return Err(format!("expected {DURATION_EXAMPLE}, got {s:?}")),
    };
    scaled(num, scale)
        .map(SimDuration)
        .map_err(|e| num_error(e, s, DURATION_EXAMPLE, "nanoseconds"))
}

/// A rate; the unit is required and the rate must be positive. Exact to the bit/s.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (num, unit) = split_unit(s);
    let scale: u128 = match unit {
        "bps" | "bit/s" => 1,
        "kbps" | "Kbps" | "kbit/s" => 1_000,
        "Mbps" | "Mbit/s" => 1_000_000,
        "Gbps" | "Gbit/s" => 1_000_000_000,
        "" if parse_decimal(num).is_ok() => {
            return Err(format!(
                "a bare number is ambiguous: write {num:?} with a unit, e.g. \"{num}kbps\" or \"{num}Mbps\" (units bps, kbps, Mbps, Gbps)"
            ))
        }
        _ => return Err(format!("expected {RATE_EXAMPLE}, got {s:?}")),
    };
    match scaled(num, scale) {
        Ok(0) => Err(format!("must be positive, got {s:?}")),
        Ok(v) => Ok(Rate(v)),
        Err(NumErr::Negative) => Err(format!("must be positive, got {s:?}")),
        Err(e) => Err(num_error(e, s, RATE_EXAMPLE, "bit/s")),
    }
}

/// A size in bytes; a bare number is bytes. Exact to the byte.
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
        _ => return Err(format!("expected {SIZE_EXAMPLE}, got {s:?}")),
    };
    scaled(num, scale).map_err(|e| num_error(e, s, SIZE_EXAMPLE, "bytes"))
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
        "pkt" | "pkts" | "p" | "" => scaled(num, 1)
            .map(Limit::Packets)
            .map_err(|e| num_error(e, s, LIMIT_EXAMPLE, "packets")),
        "B" | "KB" | "kB" | "MB" | "GB" | "KiB" | "MiB" | "GiB" => parse_bytes(s).map(Limit::Bytes),
        _ => Err(format!("expected {LIMIT_EXAMPLE}, got {s:?}")),
    }
}

/// Renders a JSON/TOML float exactly as the shortest decimal that reads back as it
/// (Rust's `Display` for f64 never uses an exponent, so this is plain digits).
fn float_text(v: f64) -> Result<String, String> {
    if !v.is_finite() {
        return Err(format!("expected a finite number, got {v}"));
    }
    Ok(format!("{v}"))
}

macro_rules! unit_type {
    ($name:ident, $inner:ty, $parse:ident, $bare:expr, $desc:expr, $pattern:expr) => {
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name(pub $inner);

        impl $name {
            /// A number (not a string) in a scenario: `$bare` is the unit it means, or
            /// `None` if a bare number is refused.
            fn from_number(text: &str) -> Result<$name, String> {
                let bare: Option<&str> = $bare;
                match bare {
                    // errors quote the number as written, not the text made from it
                    Some(u) => $parse(&format!("{text}{u}"))
                        .map($name)
                        .map_err(|e| e.replace(&format!("\"{text}{u}\""), text)),
                    None => $parse(text).map($name),
                }
            }
        }

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
                        $name::from_number(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        $name::from_number(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        float_text(v)
                            .and_then(|t| $name::from_number(&t))
                            .map_err(E::custom)
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
                let bare: Option<&str> = $bare;
                let types = if bare.is_some() {
                    SingleOrVec::Vec(vec![InstanceType::String, InstanceType::Number])
                } else {
                    SingleOrVec::Single(Box::new(InstanceType::String))
                };
                let mut s = SchemaObject {
                    instance_type: Some(types),
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
    None,
    "a duration with a unit: \"275ms\", \"1.5s\" (units ns, us, ms, s, min); exact to 1 ns",
    r"^\s*[0-9.eE+-]+\s*(ns|us|µs|ms|s|min)\s*$"
);
unit_type!(
    RateQ,
    Rate,
    parse_rate,
    None,
    "a rate with a unit: \"10Mbps\" (units bps, kbps, Mbps, Gbps; decimal); exact to 1 bit/s",
    r"^\s*[0-9.eE+-]+\s*(bps|kbps|Kbps|Mbps|Gbps|bit/s|kbit/s|Mbit/s|Gbit/s)\s*$"
);
unit_type!(
    Bytes,
    u64,
    parse_bytes,
    Some("B"),
    "a size: \"64KB\" (units B, KB, MB, GB decimal; KiB, MiB, GiB binary); a bare number is bytes",
    r"^\s*[0-9.eE+-]+\s*(B|KB|kB|MB|GB|KiB|MiB|GiB)?\s*$"
);
unit_type!(
    LimitQ,
    Limit,
    parse_limit,
    Some("pkt"),
    "a queue limit: \"1000pkt\" or a size such as \"64KB\"; a bare number is packets",
    r"^\s*[0-9.eE+-]+\s*(pkt|pkts|p|B|KB|kB|MB|GB|KiB|MiB|GiB)?\s*$"
);

#[cfg(test)]
mod tests {
    use super::*;

    fn de<T: for<'de> Deserialize<'de>>(json: &str) -> Result<T, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn durations() {
        assert_eq!(
            parse_duration("275ms").unwrap(),
            SimDuration::from_millis(275)
        );
        assert_eq!(parse_duration("0.1s").unwrap(), SimDuration(100_000_000));
        assert_eq!(parse_duration("1e-3s").unwrap(), SimDuration(1_000_000));
        assert_eq!(
            parse_duration("1.5E3ms").unwrap(),
            SimDuration(1_500_000_000)
        );
        assert_eq!(parse_duration(".5s").unwrap(), SimDuration(500_000_000));
        assert_eq!(parse_duration("2min").unwrap(), SimDuration::from_secs(120));
        assert_eq!(parse_duration("3 us").unwrap(), SimDuration(3_000));
        assert_eq!(parse_duration("0s").unwrap(), SimDuration::ZERO);
        assert_eq!(parse_duration("0e99999999999s").unwrap(), SimDuration::ZERO);
        assert_eq!(
            parse_duration("1.000000000000000000000000000000000000000000s").unwrap(),
            SimDuration::from_secs(1)
        );
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("+1s").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1e").is_err());
        assert!(parse_duration("1..2s").is_err());
        assert!(parse_duration("nan s").is_err());
        assert!(parse_duration("infs").is_err());
    }

    #[test]
    fn bare_numbers_for_time_and_rate_are_refused_naming_the_units() {
        let e = parse_duration("290").unwrap_err();
        assert!(e.contains("290ms") && e.contains("unit"), "{e}");
        let e = parse_rate("384000").unwrap_err();
        assert!(e.contains("kbps") && e.contains("unit"), "{e}");
        let e = de::<Duration>("290").unwrap_err();
        assert!(e.contains("ambiguous") && e.contains("ms"), "{e}");
        assert!(de::<Duration>("0.5").unwrap_err().contains("ambiguous"));
        assert!(de::<RateQ>("1000000").unwrap_err().contains("ambiguous"));
        assert!(de::<Duration>("-3").is_err());
    }

    #[test]
    fn durations_are_exact_or_refused() {
        // below the 1 ns resolution: refused, never rounded
        let e = parse_duration("1.5ns").unwrap_err();
        assert!(e.contains("whole number of nanoseconds"), "{e}");
        assert!(parse_duration("1e-10s").is_err());
        assert!(parse_duration("0.0000000001s").is_err());
        // largest representable, and one past it
        assert_eq!(
            parse_duration("18446744073709551615ns").unwrap(),
            SimDuration(u64::MAX)
        );
        let e = parse_duration("18446744073709551616ns").unwrap_err();
        assert!(e.contains("too large"), "{e}");
        assert!(parse_duration("1e9999s").unwrap_err().contains("too large"));
        assert!(parse_duration("1e300s").unwrap_err().contains("too large"));
        assert!(parse_duration("1e9s").is_ok()); // large but representable (~31.7 years)
        assert!(parse_duration("1e12s").unwrap_err().contains("too large"));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbps").unwrap(), Rate(10_000_000));
        assert_eq!(parse_rate("1.5 Gbps").unwrap(), Rate(1_500_000_000));
        assert_eq!(parse_rate("384kbps").unwrap(), Rate(384_000));
        assert_eq!(parse_rate("2.5e6bps").unwrap(), Rate(2_500_000));
        assert_eq!(parse_rate("64kbit/s").unwrap(), Rate(64_000));
        assert!(parse_rate("-10Mbps").unwrap_err().contains("positive"));
        assert!(parse_rate("0bps").unwrap_err().contains("positive"));
        assert!(parse_rate("10 furlongs").is_err());
        assert!(parse_rate("1.5bps")
            .unwrap_err()
            .contains("whole number of bit/s"));
        assert!(parse_rate("1.0000001kbps").is_err());
        assert!(parse_rate("18446744073709551616bps")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_rate("20000000000Gbps")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn sizes_and_limits() {
        assert_eq!(parse_bytes("64KB").unwrap(), 64_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65_536);
        assert_eq!(parse_bytes("1.5MB").unwrap(), 1_500_000);
        assert_eq!(parse_bytes("65535").unwrap(), 65_535);
        assert_eq!(parse_bytes("0.5KiB").unwrap(), 512);
        assert_eq!(parse_limit("1000pkt").unwrap(), Limit::Packets(1000));
        assert_eq!(parse_limit("64KB").unwrap(), Limit::Bytes(64_000));
        assert_eq!(parse_limit("20").unwrap(), Limit::Packets(20));
        assert_eq!(parse_limit("1e3pkt").unwrap(), Limit::Packets(1000));
        assert!(parse_bytes("0.5B")
            .unwrap_err()
            .contains("whole number of bytes"));
        assert!(parse_bytes("1.0001KB").is_err());
        assert!(parse_bytes("-1KB").unwrap_err().contains("negative"));
        assert!(parse_bytes("18446744073709551616B")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_bytes("17179869184GiB")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_bytes("5 furlongs").is_err());
        assert!(parse_limit("5 furlongs").is_err());
    }

    #[test]
    fn limits_never_wrap_or_round() {
        // the issue's cases: 2^64 + 1 used to wrap to 1 packet, 1.5 to round to 2
        let e = parse_limit("18446744073709551617pkt").unwrap_err();
        assert!(e.contains("too large"), "{e}");
        let e = parse_limit("1.5pkt").unwrap_err();
        assert!(e.contains("whole number of packets"), "{e}");
        assert!(parse_limit("-1pkt").unwrap_err().contains("negative"));
        assert_eq!(
            parse_limit("18446744073709551615pkt").unwrap(),
            Limit::Packets(u64::MAX)
        );
        assert!(parse_limit("1e20pkt").unwrap_err().contains("too large"));
        assert!(parse_limit("1e-1pkt").is_err());
    }

    #[test]
    fn numbers_in_json() {
        assert_eq!(de::<Bytes>("65535").unwrap(), Bytes(65_535));
        assert_eq!(de::<Bytes>("65535.0").unwrap(), Bytes(65_535));
        assert!(de::<Bytes>("1.5").unwrap_err().contains("whole number"));
        assert!(de::<Bytes>("-1").unwrap_err().contains("negative"));
        assert_eq!(de::<LimitQ>("20").unwrap(), LimitQ(Limit::Packets(20)));
        let e = de::<LimitQ>("1.5").unwrap_err();
        assert!(e.starts_with("1.5 is not a whole number of packets"), "{e}");
        // beyond u64: serde_json reads it as a float; still refused, never wrapped
        assert!(de::<LimitQ>("18446744073709551617")
            .unwrap_err()
            .contains("too large"));
        assert!(de::<Bytes>("1e300").unwrap_err().contains("too large"));
        assert!(de::<LimitQ>("\"1.5pkt\"").is_err());
        assert_eq!(
            de::<Duration>("\"275ms\"").unwrap(),
            Duration(SimDuration::from_millis(275))
        );
        assert!(de::<Duration>("true")
            .unwrap_err()
            .contains("a duration with a unit"));
        assert!(de::<Bytes>("[1]").is_err());
    }

    #[test]
    fn float_text_is_exact_decimal() {
        assert_eq!(float_text(0.1).unwrap(), "0.1");
        assert_eq!(float_text(1e21).unwrap(), "1000000000000000000000");
        assert!(float_text(f64::NAN).is_err());
        assert!(float_text(f64::INFINITY).is_err());
    }
}
