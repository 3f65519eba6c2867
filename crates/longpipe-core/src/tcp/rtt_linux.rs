//! Linux's RTT estimator and RTO (`tcp_rtt_estimator`, `__tcp_set_rto` in
//! `net/ipv4/tcp_input.c`, Linux 6.x), used by the `stack = "linux"` profile.
//!
//! SRTT is the RFC 6298 average (gain 1/8). The deviation differs: `mdev` is updated with
//! gain 1/4 when the sample is above SRTT, but with gain 1/32 when it is below (an
//! Eifel-like damping), and the RTO uses `rttvar`, the *largest* 4·mdev seen in the last
//! round trip, which decays by a quarter of its excess once per round trip and never
//! falls below `rto_min`:
//!
//! ```text
//! RTO = SRTT + rttvar,   rttvar = max(rto_min, max over the last RTT of 4·mdev)
//! ```
//!
//! So Linux's 200 ms minimum is added to SRTT rather than used as a floor of the RTO
//! (RFC 6298 (2.4)): on a 600 ms path the RTO is at least 800 ms. The first sample gives
//! SRTT = R and 4·mdev = 2R (RTO = 3R). Times are kept in ns with Linux's scaling
//! (8·SRTT and 4·mdev) so the integer arithmetic matches.

use crate::time::SimDuration;

#[derive(Debug, Clone, Default)]
pub struct LinuxRtt {
    /// 8·SRTT (Linux `srtt_us`), 0 before the first sample.
    pub srtt8: u64,
    /// 4·mdev (`mdev_us`), the largest this round trip (`mdev_max_us`), and the
    /// deviation the RTO uses (`rttvar_us`).
    pub mdev4: u64,
    pub mdev_max: u64,
    pub rttvar: u64,
    /// `rtt_seq`: the round trip ends when snd_una passes it.
    rtt_seq: u64,
}

impl LinuxRtt {
    /// Adds a sample `m`; `snd_una` and `snd_nxt` delimit the round trip; returns the new
    /// (SRTT, RTO before backoff and the maximum).
    pub fn sample(
        &mut self,
        m: SimDuration,
        rto_min: SimDuration,
        snd_una: u64,
        snd_nxt: u64,
    ) -> (SimDuration, SimDuration) {
        let m = m.0 as i64;
        let rto_min = rto_min.0;
        if self.srtt8 != 0 {
            let mut err = m - (self.srtt8 >> 3) as i64; // error in the estimate
            self.srtt8 = (self.srtt8 as i64 + err).max(1) as u64; // srtt += err/8
            if err < 0 {
                err = -err - (self.mdev4 >> 2) as i64;
                if err > 0 {
                    err >>= 3; // samples below SRTT move mdev with gain 1/32
                }
            } else {
                err -= (self.mdev4 >> 2) as i64;
            }
            self.mdev4 = (self.mdev4 as i64 + err).max(0) as u64; // mdev = 3/4 mdev + 1/4|err|
            if self.mdev4 > self.mdev_max {
                self.mdev_max = self.mdev4;
                self.rttvar = self.rttvar.max(self.mdev_max);
            }
            if snd_una > self.rtt_seq {
                // once per round trip: decay rttvar toward this round's largest mdev
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = rto_min;
            }
        } else {
            self.srtt8 = (m as u64) << 3;
            self.mdev4 = (m as u64) << 1;
            self.rttvar = self.mdev4.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        }
        self.srtt8 = self.srtt8.max(1);
        let srtt = self.srtt8 >> 3;
        (SimDuration(srtt), SimDuration(srtt + self.rttvar))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn first_sample_gives_three_rtts_or_srtt_plus_rto_min() {
        let mut e = LinuxRtt::default();
        let (s, rto) = e.sample(SimDuration(100 * MS), SimDuration(200 * MS), 1, 1000);
        assert_eq!(s, SimDuration(100 * MS));
        // rttvar = max(2·100 ms, 200 ms) = 200 ms: RTO = 300 ms
        assert_eq!(rto, SimDuration(300 * MS));
        let mut e = LinuxRtt::default();
        let (_, rto) = e.sample(SimDuration(600 * MS), SimDuration(200 * MS), 1, 1000);
        assert_eq!(rto, SimDuration(1800 * MS));
    }

    #[test]
    fn steady_rtt_converges_to_srtt_plus_rto_min() {
        // Constant 600 ms samples: mdev decays to 0 and rttvar decays by a quarter of its
        // excess over rto_min once per round trip: RTO -> 600 + 200 ms.
        let mut e = LinuxRtt::default();
        let min = SimDuration(200 * MS);
        let mut rto = SimDuration(0);
        for k in 0..200u64 {
            // one sample per round trip (snd_una passes rtt_seq each time)
            rto = e
                .sample(SimDuration(600 * MS), min, 1000 * k + 1001, 1000 * k + 2000)
                .1;
        }
        assert_eq!(e.srtt8 >> 3, 600 * MS);
        assert!(rto.0 - 800 * MS < MS, "{rto:?}");
        assert!(rto.0 >= 800 * MS);
    }

    #[test]
    fn falling_samples_move_mdev_slowly_rising_ones_quickly() {
        let min = SimDuration(MS);
        let mut a = LinuxRtt::default();
        a.sample(SimDuration(100 * MS), min, 1, 10);
        let m0 = a.mdev4;
        a.sample(SimDuration(60 * MS), min, 1, 10); // 40 ms below SRTT
                                                    // err = 40 − mdev(50) < 0 → mdev4 += err (not damped: only a positive excess is)
        assert_eq!(a.mdev4, m0 - 10 * MS);
        let mut b = LinuxRtt::default();
        b.sample(SimDuration(100 * MS), min, 1, 10);
        b.sample(SimDuration(20 * MS), min, 1, 10); // 80 ms below: excess 30 ms, /8
        assert_eq!(b.mdev4, m0 + (30 * MS >> 3));
        let mut c = LinuxRtt::default();
        c.sample(SimDuration(100 * MS), min, 1, 10);
        c.sample(SimDuration(180 * MS), min, 1, 10); // 80 ms above: full excess
        assert_eq!(c.mdev4, m0 + 30 * MS);
        // srtt moves by 1/8 of the error either way
        assert_eq!(c.srtt8 >> 3, 110 * MS);
    }
}
