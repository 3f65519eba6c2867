//! Pacing in the sender (Linux's internal pacing: `tcp_pacing_check`,
//! `tcp_update_skb_after_send`, `tcp_update_pacing_rate`, Linux 6.x).
//!
//! Each transmission moves the earliest departure time of the next one by len / rate
//! (earliest departure time, EDT). A sender that fell behind (the next departure
//! time is in the past) gets back at most half of a segment's interval as credit, and
//! the first 10 segments of a connection are not paced, as in Linux. When pacing holds
//! a segment back the sender arms one timer for the departure time (no event per
//! segment when pacing is off).
//!
//! The rate is the congestion control's (BBR sets its own) or Linux's default:
//! rate = cwnd · MSS / SRTT · 200 % while cwnd < ssthresh / 2, 120 % after
//! (`tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio`).

use super::cc::CcState;
use crate::time::{SimDuration, SimTime};

/// Linux `tcp_pacing_ss_ratio` and `tcp_pacing_ca_ratio` (percent).
pub const SS_RATIO: u64 = 200;
pub const CA_RATIO: u64 = 120;
/// Segments sent before pacing starts (Linux: `tp->data_segs_out >= 10`).
const UNPACED_SEGS: u64 = 10;

#[derive(Debug, Clone, Default)]
pub struct Pacer {
    /// Earliest departure time of the next segment (`tcp_wstamp_ns`).
    pub next: SimTime,
    /// Data segments sent so far (`data_segs_out`).
    segs_out: u64,
    /// A segment is waiting for `next`.
    pub blocked: bool,
}

impl Pacer {
    /// Whether a segment may leave at `now` (`tcp_pacing_check`); records that one is
    /// waiting if not.
    pub fn ready(&mut self, now: SimTime) -> bool {
        let ok = self.next <= now;
        self.blocked = !ok;
        ok
    }

    /// `tcp_update_skb_after_send`: a segment of `len` bytes left at `now` with the
    /// pacing rate `rate` bytes/s.
    pub fn sent(&mut self, now: SimTime, len: u64, rate: u64) {
        let prior = self.next;
        self.next = self.next.max(now);
        self.segs_out += 1;
        if rate == 0 || rate == u64::MAX || self.segs_out < UNPACED_SEGS {
            return;
        }
        let mut len_ns = (len as u128 * 1_000_000_000 / rate as u128) as u64;
        // credit for the time the sender fell behind (OS jitter in Linux)
        let credit = self.next.0 - prior.0;
        len_ns -= (len_ns / 2).min(credit);
        self.next += SimDuration(len_ns);
    }

    /// The wake-up the sender needs, if a segment waits.
    pub fn deadline(&self) -> Option<SimTime> {
        self.blocked.then_some(self.next)
    }
}

/// `tcp_update_pacing_rate`: Linux's default pacing rate in bytes/s for `packets_out`
/// segments outstanding.
pub fn linux_rate(st: &CcState, packets_out: u64) -> u64 {
    let ratio = if st.cwnd < st.ssthresh / 2 {
        SS_RATIO
    } else {
        CA_RATIO
    };
    let segs = st.cwnd_segs().max(packets_out);
    match st.srtt {
        Some(s) if s.0 > 0 => {
            (st.mss as u128 * segs as u128 * ratio as u128 * 10_000_000 / s.0 as u128) as u64
        }
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn spacing_after_ten_segments() {
        let mut p = Pacer::default();
        let rate = 1_000_000; // 1 MB/s: 1 ms per 1000 B
        for _ in 0..9 {
            assert!(p.ready(SimTime(0)));
            p.sent(SimTime(0), 1000, rate);
        }
        assert_eq!(p.next, SimTime(0), "the first segments are not paced");
        p.sent(SimTime(0), 1000, rate);
        assert_eq!(p.next, SimTime(MS));
        assert!(!p.ready(SimTime(MS / 2)));
        assert_eq!(p.deadline(), Some(SimTime(MS)));
        assert!(p.ready(SimTime(MS)));
        p.sent(SimTime(MS), 1000, rate);
        assert_eq!(p.next, SimTime(2 * MS));
        // 10 ms late: half a segment's interval is given back as credit
        p.sent(SimTime(12 * MS), 1000, rate);
        assert_eq!(p.next, SimTime(12 * MS + MS / 2));
    }

    #[test]
    fn linux_default_rate() {
        let mut st = CcState::new(1000, 10_000);
        st.srtt = Some(SimDuration(100 * MS));
        // slow start: 200 % of 10 segments per 100 ms = 200 kB/s
        assert_eq!(linux_rate(&st, 0), 200_000);
        st.ssthresh = 15_000; // cwnd ≥ ssthresh / 2: 120 %
        assert_eq!(linux_rate(&st, 0), 120_000);
        assert_eq!(linux_rate(&st, 20), 240_000, "max(cwnd, packets out)");
        st.srtt = None;
        assert_eq!(linux_rate(&st, 0), u64::MAX);
        // no RTT measured yet (a sample of 0 on a link without delay): no pacing, and
        // no division by zero
        st.srtt = Some(SimDuration(0));
        assert_eq!(linux_rate(&st, 0), u64::MAX);
    }
}
