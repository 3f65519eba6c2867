//! TCP timestamps (RFC 7323 §3-§5): the TSopt clock, which timestamp to echo
//! (TS.Recent and Last.ACK.sent, §4.3) and PAWS (§5.3).
//!
//! Inside an endpoint a segment's timestamps are (TSval, TSecr) with our own clock
//! offset removed: the TSval of a segment we send and the TSecr of one we receive are
//! in our clock ([`ts_clock`], 1 ms per tick as Linux's `tcp_time_stamp_ms`); the
//! peer's TSval (which we echo) is passed on untouched. [`super::endpoint`] adds and
//! removes the per-connection random offset (Linux `ts_offset`) on the wire.

use crate::time::{SimDuration, SimTime};

/// TSopt clock tick (Linux: 1 ms).
pub const TS_TICK_NS: u64 = 1_000_000;

/// Our timestamp clock at `now` (without the connection's offset).
pub fn ts_clock(now: SimTime) -> u32 {
    (now.0 / TS_TICK_NS) as u32
}

/// RTT from an echoed timestamp of ours (RFC 7323 §4.1 RTTM), at tick resolution.
pub fn ts_rtt(now: SimTime, tsecr: u32) -> Option<SimDuration> {
    let ticks = ts_clock(now).wrapping_sub(tsecr);
    // an echo from the future or older than 2^31 ticks is not a measurement
    (ticks < 1 << 31).then(|| SimDuration(ticks as u64 * TS_TICK_NS))
}

/// `a` is earlier than `b` in 32-bit timestamp arithmetic (RFC 7323 §5.2).
pub fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// What to echo, and the PAWS test, for one direction of a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TsRecent {
    /// TS.Recent: the peer's timestamp to echo (None before the first).
    pub recent: Option<u32>,
    /// Last.ACK.sent: the acknowledgement number of our last ACK.
    pub last_ack_sent: u64,
}

/// The verdict on an arriving segment's timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paws {
    Accept,
    /// RFC 7323 §5.3 R1: TSval older than TS.Recent: discard the segment (and ACK it,
    /// unless it is a RST).
    Reject,
}

impl TsRecent {
    /// Processes an arriving segment's TSval: PAWS (§5.3 R1) and the TS.Recent update
    /// (§4.3 (2): only if SEG.TSval >= TS.Recent and SEG.SEQ <= Last.ACK.sent, so that
    /// the echo of a delayed ACK is the earliest unacknowledged segment's timestamp and
    /// an out-of-order segment does not advance it).
    pub fn on_segment(&mut self, seq: u64, tsval: u32) -> Paws {
        if let Some(r) = self.recent {
            if ts_before(tsval, r) {
                return Paws::Reject;
            }
        }
        if seq <= self.last_ack_sent {
            self.recent = Some(tsval);
        }
        Paws::Accept
    }

    /// The TSecr for a segment that acknowledges up to `ack` (records Last.ACK.sent).
    pub fn echo(&mut self, ack: u64) -> u32 {
        self.last_ack_sent = ack;
        self.recent.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_rtt() {
        assert_eq!(ts_clock(SimTime(2_999_999)), 2);
        assert_eq!(
            ts_rtt(SimTime(650_000_000), 100),
            Some(SimDuration(550_000_000))
        );
        assert_eq!(ts_rtt(SimTime(0), 5), None, "an echo from the future");
        // across the 32-bit wrap
        assert!(ts_before(u32::MAX, 3));
        assert!(!ts_before(3, u32::MAX));
    }

    #[test]
    fn delayed_ack_echoes_the_earliest_unacknowledged_segment() {
        // RFC 7323 §4.3 example: segments A (ts 1) and B (ts 2) arrive, one delayed
        // ACK acknowledges both: it echoes A's timestamp.
        let mut t = TsRecent::default();
        t.echo(1); // the handshake ACK: Last.ACK.sent = 1
        assert_eq!(t.on_segment(1, 1), Paws::Accept);
        assert_eq!(t.on_segment(1001, 2), Paws::Accept); // seq > Last.ACK.sent
        assert_eq!(t.echo(2001), 1);
        // out of order: seg at 4001 while 2001 is missing: TS.Recent stays
        assert_eq!(t.on_segment(4001, 4), Paws::Accept);
        assert_eq!(t.echo(2001), 1);
        // the hole is filled by a segment sent later: it updates TS.Recent
        assert_eq!(t.on_segment(2001, 5), Paws::Accept);
        assert_eq!(t.echo(5001), 5);
    }

    #[test]
    fn paws_rejects_an_old_timestamp() {
        let mut t = TsRecent::default();
        t.echo(1);
        t.on_segment(1, 100);
        assert_eq!(t.on_segment(1, 99), Paws::Reject);
        assert_eq!(t.on_segment(1, 100), Paws::Accept, "equal is not older");
        assert_eq!(t.recent, Some(100));
    }
}
