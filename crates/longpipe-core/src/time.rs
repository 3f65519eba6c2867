//! Simulated time: integer nanoseconds in typed wrappers.
//!
//! Invariant: simulation logic never uses floating point seconds; `f64` appears only
//! when results are reported.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of simulated time, nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn saturating_sub(self, other: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * 1_000_000_000)
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn saturating_mul(self, k: u64) -> Self {
        SimDuration(self.0.saturating_mul(k))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, o: SimTime) -> SimDuration {
        debug_assert!(self.0 >= o.0, "time went backwards");
        SimDuration(self.0 - o.0)
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(o.0))
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    fn sub(self, o: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(o.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}
/// The largest unit that shows the value exactly: "1s", "250ms", "1.5ms" as "1500us", "7ns".
impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        match () {
            _ if ns == 0 => write!(f, "0s"),
            _ if ns.is_multiple_of(1_000_000_000) => write!(f, "{}s", ns / 1_000_000_000),
            _ if ns.is_multiple_of(1_000_000) => write!(f, "{}ms", ns / 1_000_000),
            _ if ns.is_multiple_of(1_000) => write!(f, "{}us", ns / 1_000),
            _ => write!(f, "{ns}ns"),
        }
    }
}

/// A line rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(pub u64);

impl Rate {
    /// Serialization time of `bytes` octets, rounded up to the next nanosecond so that a
    /// link never transmits faster than its rate.
    #[inline]
    pub fn tx_time(self, bytes: u64) -> SimDuration {
        // Any unit shorter than 2.3 GB: in 64 bits, without the 128-bit division
        // routine (the same quotient).
        if let Some(bits) = bytes.checked_mul(8 * 1_000_000_000) {
            return SimDuration(bits.div_ceil(self.0));
        }
        let bits = bytes as u128 * 8 * 1_000_000_000u128;
        let r = self.0 as u128;
        SimDuration(bits.div_ceil(r) as u64)
    }
    pub fn bps(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tx_time_rounds_up() {
        assert_eq!(Rate(10_000_000).tx_time(1500), SimDuration(1_200_000));
        assert_eq!(Rate(3).tx_time(1), SimDuration(2_666_666_667));
        // both sides of the 64-bit path agree with the exact quotient
        for (rate, bytes) in [
            (1u64, 2_305_843_009u64),
            (7, 2_305_843_010),
            (u64::MAX, u64::MAX),
        ] {
            let exact = (bytes as u128 * 8_000_000_000).div_ceil(rate as u128) as u64;
            assert_eq!(
                Rate(rate).tx_time(bytes),
                SimDuration(exact),
                "{rate} {bytes}"
            );
        }
    }
    #[test]
    fn durations_display_in_their_largest_exact_unit() {
        let d = |ns| SimDuration(ns).to_string();
        assert_eq!(
            [d(0), d(2_000_000_000), d(250_000_000), d(1_500_000), d(1)],
            ["0s", "2s", "250ms", "1500us", "1ns"]
        );
    }

    #[test]
    fn arithmetic() {
        let t = SimTime(5) + SimDuration(7);
        assert_eq!(t, SimTime(12));
        assert_eq!(t - SimTime(2), SimDuration(10));
        assert_eq!(SimTime::MAX + SimDuration(1), SimTime::MAX);
    }
}
