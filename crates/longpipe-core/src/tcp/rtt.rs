//! Retransmission timer per RFC 6298 (or, for the Linux profile, Linux's estimator:
//! [`super::rtt_linux`]).

use super::rtt_linux::LinuxRtt;
use crate::time::SimDuration;

/// Initial, minimum and maximum RTO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtoBounds {
    pub initial: SimDuration,
    pub min: SimDuration,
    pub max: SimDuration,
}

impl Default for RtoBounds {
    /// RFC 6298: 1 s initially and at least, at most 60 s.
    fn default() -> Self {
        RtoBounds {
            initial: SimDuration::from_secs(1),
            min: SimDuration::from_secs(1),
            max: SimDuration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone)]
pub struct RttEstimator {
    pub srtt: Option<SimDuration>,
    /// RFC 6298's RTTVAR (the Linux estimator keeps its own mdev and rttvar).
    pub rttvar: SimDuration,
    /// Smallest SRTT seen (Hybla's Linux rule uses it) and smallest sample.
    pub min_srtt: Option<SimDuration>,
    pub min_sample: Option<SimDuration>,
    rto: SimDuration,
    min_rto: SimDuration,
    max_rto: SimDuration,
    /// Number of consecutive doublings in force (Karn: kept until a valid sample).
    pub backoff: u32,
    /// Linux's estimator instead of RFC 6298's (the Linux profile).
    linux: Option<LinuxRtt>,
}

impl RttEstimator {
    /// RFC 6298 (2.1): RTO = initial value until the first sample.
    pub fn new(initial: SimDuration, min_rto: SimDuration, max_rto: SimDuration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: SimDuration::ZERO,
            min_srtt: None,
            min_sample: None,
            rto: initial,
            min_rto,
            max_rto,
            backoff: 0,
            linux: None,
        }
    }

    /// Linux's estimator and RTO (`tcp_rtt_estimator`): RTO = SRTT + max(min_rto, 4·mdev).
    pub fn new_linux(initial: SimDuration, min_rto: SimDuration, max_rto: SimDuration) -> Self {
        RttEstimator {
            linux: Some(LinuxRtt::default()),
            ..RttEstimator::new(initial, min_rto, max_rto)
        }
    }

    /// Adds a measurement; `snd_una` and `snd_nxt` delimit Linux's round trips (unused
    /// by RFC 6298).
    pub fn sample_at(&mut self, r: SimDuration, snd_una: u64, snd_nxt: u64) {
        let Some(l) = &mut self.linux else {
            return self.sample(r);
        };
        let (srtt, rto) = l.sample(r, self.min_rto, snd_una, snd_nxt);
        self.srtt = Some(srtt);
        self.min_srtt = Some(self.min_srtt.map_or(srtt, |m| m.min(srtt)));
        self.min_sample = Some(self.min_sample.map_or(r, |m| m.min(r)));
        self.rto = rto.min(self.max_rto);
        self.backoff = 0;
    }

    /// Adds a measurement from a segment that was not retransmitted (Karn).
    pub fn sample(&mut self, r: SimDuration) {
        match self.srtt {
            None => {
                // RFC 6298 (2.2)
                self.srtt = Some(r);
                self.rttvar = SimDuration(r.0 / 2);
            }
            Some(s) => {
                // RFC 6298 (2.3): beta = 1/4, alpha = 1/8
                let diff = s.0.abs_diff(r.0);
                self.rttvar = SimDuration((3 * self.rttvar.0 + diff) / 4);
                self.srtt = Some(SimDuration((7 * s.0 + r.0) / 8));
            }
        }
        let srtt = self.srtt.unwrap();
        self.min_srtt = Some(self.min_srtt.map_or(srtt, |m| m.min(srtt)));
        self.min_sample = Some(self.min_sample.map_or(r, |m| m.min(r)));
        // RFC 6298 (2.3)-(2.5); clock granularity G taken as 1 ns.
        let rto = srtt.0 + (4 * self.rttvar.0).max(1);
        self.rto = SimDuration(rto.clamp(self.min_rto.0, self.max_rto.0));
        self.backoff = 0;
    }

    /// RFC 6298 (5.7): the SYN (or SYN-ACK) timed out and no RTT sample was taken; once
    /// data transmission begins, an RTO below 3 s is re-initialised to 3 s (no backoff).
    pub fn syn_timed_out(&mut self) {
        let three = SimDuration::from_secs(3);
        if self.srtt.is_none() && self.rto < three {
            self.rto = three.min(self.max_rto);
            self.backoff = 0;
        }
    }

    /// RFC 6298 (5.5): back off the timer.
    pub fn back_off(&mut self) {
        self.backoff += 1;
    }

    /// The current RTO including backoff, capped at the maximum.
    pub fn rto(&self) -> SimDuration {
        let mult = 1u64.checked_shl(self.backoff.min(40)).unwrap_or(u64::MAX);
        SimDuration(self.rto.0.saturating_mul(mult).min(self.max_rto.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rfc6298_sequence() {
        let mut e = RttEstimator::new(
            SimDuration::from_secs(1),
            SimDuration::from_millis(200),
            SimDuration::from_secs(60),
        );
        assert_eq!(e.rto(), SimDuration::from_secs(1));
        e.sample(SimDuration::from_millis(100));
        // SRTT 100, RTTVAR 50 -> RTO 300 ms
        assert_eq!(e.rto(), SimDuration::from_millis(300));
        e.sample(SimDuration::from_millis(200));
        // RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 112.5; RTO = 362.5 ms
        assert_eq!(e.rto(), SimDuration(362_500_000));
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), SimDuration(1_450_000_000));
        e.sample(SimDuration::from_millis(112));
        assert_eq!(e.backoff, 0);
    }
    #[test]
    fn three_seconds_after_a_syn_timeout() {
        let mut e = RttEstimator::new(
            SimDuration::from_secs(1),
            SimDuration::from_millis(200),
            SimDuration::from_secs(60),
        );
        e.back_off();
        assert_eq!(e.rto(), SimDuration::from_secs(2));
        e.syn_timed_out();
        assert_eq!((e.rto(), e.backoff), (SimDuration::from_secs(3), 0));
        // only when the RTO in use is below 3 s, and capped by the maximum
        let mut e = RttEstimator::new(
            SimDuration::from_secs(4),
            SimDuration::from_secs(1),
            SimDuration::from_secs(60),
        );
        e.back_off();
        e.syn_timed_out();
        assert_eq!(e.rto(), SimDuration::from_secs(8));
        // exactly 3 s is not "less than 3 seconds": the backed-off RTO stands
        let mut e = RttEstimator::new(
            SimDuration::from_secs(3),
            SimDuration::from_secs(1),
            SimDuration::from_secs(60),
        );
        e.back_off();
        e.syn_timed_out();
        assert_eq!(e.rto(), SimDuration::from_secs(6));
        let mut e = RttEstimator::new(
            SimDuration::from_secs(1),
            SimDuration::from_secs(1),
            SimDuration::from_secs(2),
        );
        e.syn_timed_out();
        assert_eq!(e.rto(), SimDuration::from_secs(2));
    }
    #[test]
    fn linux_estimator_keeps_min_rto_above_srtt() {
        // Steady 100 ms samples, one per round trip. RFC 6298: RTO = max(min_rto, SRTT +
        // 4·RTTVAR) decays towards the 200 ms floor. Linux (tcp_rtt_estimator,
        // tcp_set_rto): RTO = SRTT + rttvar with rttvar never below rto_min, so 300 ms.
        let ms = SimDuration::from_millis;
        let mut lin = RttEstimator::new_linux(
            SimDuration::from_secs(1),
            ms(200),
            SimDuration::from_secs(60),
        );
        let mut rfc = RttEstimator::new(
            SimDuration::from_secs(1),
            ms(200),
            SimDuration::from_secs(60),
        );
        for k in 0..40u64 {
            lin.sample_at(ms(100), 10 * k + 10, 10 * k + 20);
            rfc.sample_at(ms(100), 10 * k + 10, 10 * k + 20);
        }
        assert_eq!(lin.srtt, Some(ms(100)));
        assert_eq!(lin.rto(), ms(300));
        assert!(rfc.rto() < ms(210), "{:?}", rfc.rto());
    }
    #[test]
    fn floor_and_cap() {
        let mut e = RttEstimator::new(
            SimDuration::from_secs(1),
            SimDuration::from_secs(1),
            SimDuration::from_secs(60),
        );
        e.sample(SimDuration::from_millis(10));
        assert_eq!(e.rto(), SimDuration::from_secs(1));
        for _ in 0..10 {
            e.back_off();
        }
        assert_eq!(e.rto(), SimDuration::from_secs(60));
    }
}
