//! Mahimahi packet-delivery traces: a link direction whose transmitter is driven by a
//! list of delivery opportunities instead of a fixed rate (`rate = { trace = "x.up" }`).
//!
//! The file format is Mahimahi's (`mm-link`): one line per delivery opportunity, the
//! time in whole milliseconds since the link started, non-decreasing; several lines
//! with the same time are several opportunities at that instant; the trace repeats with
//! a period of its last time. Each opportunity lets [`OPPORTUNITY_BYTES`] bytes through
//! (Mahimahi's `PACKET_SIZE`, the largest TUN payload: a 1500-byte IPv4 packet plus the
//! 4-byte TUN header it counts with each packet, [`PACKET_OVERHEAD`]); a packet larger
//! than what is left of an opportunity continues in the next ones, and what an
//! opportunity does not use is lost. Equivalence and limits: docs/notes/traces.md.

use crate::error::{err, ScenarioError};
use crate::loaded::{loaded_text, Loaded};
use crate::time::{Rate, SimTime};
use crate::units::RateQ;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use std::sync::Arc;

/// A link's `rate`: a fixed rate (`"10Mbps"`) or a Mahimahi trace
/// (`{ trace = "file.up" }`).
#[derive(Debug, Clone, JsonSchema)]
#[serde(untagged)]
pub enum LinkRate {
    Fixed(RateQ),
    Trace(TraceSpec),
}

/// `rate = { trace = "file" }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// A Mahimahi trace file, relative to the scenario file.
    pub trace: String,
    /// Filled in by the front end: the content of `trace`.
    #[serde(default)]
    pub loaded: Option<Loaded>,
}

impl<'de> Deserialize<'de> for LinkRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A table is a trace; anything else is a rate, with the rate's own messages.
        let v = serde_json::Value::deserialize(d)?;
        let msg = |e: serde_json::Error| D::Error::custom(e.to_string());
        if v.is_object() {
            TraceSpec::deserialize(v).map(LinkRate::Trace).map_err(msg)
        } else {
            RateQ::deserialize(v).map(LinkRate::Fixed).map_err(msg)
        }
    }
}

impl LinkRate {
    /// The rate (a trace's mean rate) and the trace, if it is one.
    pub fn resolve(&self, path: &str) -> Result<(Rate, Option<MmTrace>), ScenarioError> {
        match self {
            LinkRate::Fixed(r) => Ok((r.0, None)),
            LinkRate::Trace(t) => {
                let p = format!("{path}.trace");
                let text = loaded_text(&t.trace, t.loaded.as_ref(), &p)?;
                let tr = MmTrace::parse(text, &p, &t.trace)?;
                Ok((tr.mean_rate(), Some(tr)))
            }
        }
    }
}

/// Bytes one delivery opportunity carries (Mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u32 = 1504;
/// Bytes Mahimahi counts per packet beyond its IPv4 length (the TUN packet header).
pub const PACKET_OVERHEAD: u32 = 4;
/// At most this many opportunities in a trace (a published cellular trace has a few
/// hundred thousand).
pub const MAX_LINES: usize = 10_000_000;

/// A parsed trace: opportunity offsets within one period, in ns, and the period.
#[derive(Debug, Clone, PartialEq)]
pub struct MmTrace {
    /// Offsets of the opportunities of one period, ns, non-decreasing, all ≤ `period`.
    pub offsets: Arc<[u64]>,
    /// The period, ns (the last offset; > 0).
    pub period: u64,
}

impl MmTrace {
    /// Parses a trace's text; `path` is the field path, `file` the name for messages.
    pub fn parse(text: &str, path: &str, file: &str) -> Result<MmTrace, ScenarioError> {
        let mut offsets = Vec::new();
        let mut last = 0u64;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() {
                continue;
            }
            let ms: u64 = match l.parse() {
                Ok(v) if v <= u64::MAX / 1_000_000 => v,
                _ => {
                    return err(
                        path,
                        format!(
                            "{file} line {}: expected a whole number of milliseconds, got {l:?}",
                            i + 1
                        ),
                    )
                }
            };
            if ms < last {
                return err(
                    path,
                    format!(
                        "{file} line {}: {ms} is before the line above ({last}); the times must not decrease",
                        i + 1
                    ),
                );
            }
            if offsets.len() == MAX_LINES {
                return err(
                    path,
                    format!("{file}: more than {MAX_LINES} opportunities (docs/limits.md)"),
                );
            }
            last = ms;
            offsets.push(ms * 1_000_000);
        }
        if offsets.is_empty() {
            return err(path, format!("{file}: the trace has no opportunities"));
        }
        if last == 0 {
            return err(
                path,
                format!(
                    "{file}: the trace must last longer than 0 ms (its last time is its period)"
                ),
            );
        }
        Ok(MmTrace {
            offsets: offsets.into(),
            period: last * 1_000_000,
        })
    }

    /// The mean rate the trace offers, counting a full opportunity as 1500 bytes of
    /// IPv4 (for the work estimate and the defaults that need a rate); at least 1 bit/s.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.offsets.len() as u128 * 1500 * 8 * 1_000_000_000;
        Rate(((bits / self.period as u128) as u64).max(1))
    }

    /// Opportunities per second, on average.
    pub fn per_second(&self) -> f64 {
        self.offsets.len() as f64 * 1e9 / self.period as f64
    }
}

/// A position in a looping trace: the next opportunity is offset `i` of period `k`.
#[derive(Debug, Clone)]
pub struct Cursor {
    trace: MmTrace,
    k: u64,
    i: usize,
}

impl Cursor {
    pub fn new(trace: MmTrace) -> Self {
        Cursor { trace, k: 0, i: 0 }
    }

    /// The time of the next opportunity.
    pub fn next(&self) -> SimTime {
        SimTime(
            self.k
                .saturating_mul(self.trace.period)
                .saturating_add(self.trace.offsets[self.i]),
        )
    }

    /// Moves past the next opportunity.
    pub fn advance(&mut self) {
        self.i += 1;
        if self.i == self.trace.offsets.len() {
            self.i = 0;
            self.k += 1;
        }
    }

    /// Moves to the first opportunity after `t` (Mahimahi lets a packet use only the
    /// opportunities after its arrival); jumps whole periods, then searches one.
    pub fn skip_to_after(&mut self, t: SimTime) {
        if self.next() > t {
            return;
        }
        let p = self.trace.period;
        self.k = t.0 / p;
        let within = t.0 % p;
        self.i = self.trace.offsets.partition_point(|&o| o <= within);
        if self.i == self.trace.offsets.len() {
            self.i = 0;
            self.k += 1;
        }
        debug_assert!(self.next() > t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_what_mahimahi_refuses() {
        let t = MmTrace::parse("0\n1\n1\n\n5\n", "r", "f").unwrap();
        assert_eq!(&*t.offsets, &[0, 1_000_000, 1_000_000, 5_000_000]);
        assert_eq!(t.period, 5_000_000);
        // 4 opportunities of 1500 B per 5 ms = 9.6 Mbit/s
        assert_eq!(t.mean_rate(), Rate(9_600_000));
        for (text, want) in [
            ("", "no opportunities"),
            ("0\n0\n", "longer than 0 ms"),
            ("3\n2\n", "line 2: 2 is before"),
            ("1\n1.5\n", "line 2: expected a whole number"),
            ("-1\n", "line 1"),
        ] {
            let e = MmTrace::parse(text, "link[0].rate.trace", "f.up").unwrap_err();
            assert_eq!(e.path, "link[0].rate.trace");
            assert!(
                e.msg.contains(want) && e.msg.contains("f.up"),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn cursor_loops_and_skips() {
        let t = MmTrace::parse("2\n2\n7\n10\n", "r", "f").unwrap();
        let mut c = Cursor::new(t);
        let mut seen = vec![];
        for _ in 0..9 {
            seen.push(c.next().0 / 1_000_000);
            c.advance();
        }
        assert_eq!(seen, [2, 2, 7, 10, 12, 12, 17, 20, 22]);
        let mut c2 = c.clone();
        c2.skip_to_after(SimTime(12_000_000)); // at 22 already: no move backwards
        assert_eq!(c2.next(), SimTime(22_000_000));
        c2.skip_to_after(SimTime(1_007_000_000)); // period 100: 1002, 1002, 1007, 1010
        assert_eq!(c2.next(), SimTime(1_010_000_000));
        c2.skip_to_after(SimTime(1_010_000_000));
        assert_eq!(c2.next(), SimTime(1_012_000_000));
        c2.skip_to_after(SimTime(1_011_999_999));
        assert_eq!(c2.next(), SimTime(1_012_000_000));
    }
}
