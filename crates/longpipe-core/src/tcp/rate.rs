//! Delivery-rate estimation (Linux `net/ipv4/tcp_rate.c`; draft-cheng-iccrg-delivery-
//! rate-estimation), in bytes, for BBR and for Linux's app-limited bookkeeping.
//!
//! Each transmission is stamped with the connection's `delivered` count, the time of
//! the last delivery and the start of the current send phase ([`RateStamp`]). When
//! an ACK delivers segments, the most recently sent of them gives the sample:
//! delivered = now's count − its stamp's count, over max(send phase, ACK phase); a
//! sample whose interval is shorter than the minimum RTT is not valid (it would
//! overestimate the rate).

use super::cc::{CcState, RateSample};
use super::sack::{RateStamp, SentSeg};
use crate::time::{SimDuration, SimTime};

/// `tcp_rate_skb_sent`: the stamp of a transmission at `now`; `nothing_out` when no
/// segment is outstanding, which starts a new send phase.
pub fn stamp(st: &mut CcState, first_tx: &mut SimTime, nothing_out: bool) -> RateStamp {
    if nothing_out {
        *first_tx = st.now;
        st.delivered_time = st.now;
    }
    RateStamp {
        delivered: st.delivered,
        delivered_time: st.delivered_time,
        first_tx: *first_tx,
        app_limited: st.app_limited != 0,
        valid: true,
    }
}

/// The sample being assembled over one ACK (`struct rate_sample` before `tcp_rate_gen`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RateAcc {
    found: bool,
    prior_delivered: u64,
    prior_time: SimTime,
    is_app_limited: bool,
    is_retrans: bool,
    last_end: u64,
    send_phase: SimDuration,
}

impl RateAcc {
    /// `tcp_rate_skb_delivered`: a segment delivered (ACKed or SACKed) by this ACK;
    /// `first_tx` is the connection's send-phase start.
    pub fn delivered(&mut self, s: &SentSeg, first_tx: &mut SimTime) {
        if !s.rate.valid {
            return;
        }
        let sent_after = s.sent_at > *first_tx || (s.sent_at == *first_tx && s.end > self.last_end);
        if !self.found || sent_after {
            self.found = true;
            self.prior_delivered = s.rate.delivered;
            self.prior_time = s.rate.delivered_time;
            self.is_app_limited = s.rate.app_limited;
            self.is_retrans = s.retx;
            self.last_end = s.end;
            *first_tx = s.sent_at;
            self.send_phase = s.sent_at - s.rate.first_tx;
        }
    }

    /// `tcp_rate_gen`: the sample of this ACK, which delivered `acked_sacked` bytes and
    /// marked `losses` bytes lost (`st.delivered` already counts it).
    pub fn sample(
        self,
        st: &mut CcState,
        acked_sacked: u64,
        losses: u64,
        min_rtt: Option<SimDuration>,
    ) -> RateSample {
        if st.app_limited != 0 && st.delivered > st.app_limited {
            st.app_limited = 0; // the app-limited bubble is acknowledged and gone
        }
        if acked_sacked > 0 {
            st.delivered_time = st.now;
        }
        let mut rs = RateSample {
            acked_sacked,
            losses,
            prior_delivered: self.prior_delivered,
            is_app_limited: self.is_app_limited,
            is_retrans: self.is_retrans,
            ..Default::default()
        };
        if !self.found {
            return rs;
        }
        rs.delivered = Some(st.delivered - self.prior_delivered);
        let ack_phase = st.now - self.prior_time;
        let interval = self.send_phase.max(ack_phase);
        if min_rtt.is_some_and(|m| interval < m) {
            return rs; // shorter than a round trip: not a valid interval
        }
        rs.interval = Some(interval);
        rs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn seg(seq: u64, sent_ms: u64, r: RateStamp) -> SentSeg {
        SentSeg {
            seq,
            end: seq + 1000,
            sent_at: SimTime(sent_ms * MS),
            retx: false,
            sacked: false,
            timer_retx: false,
            lost: false,
            rtx_out: false,
            rate: r,
        }
    }

    #[test]
    fn a_window_delivered_over_a_round_trip() {
        // 10 segments sent 1 ms apart from t = 0 with nothing outstanding before; the
        // ACK of the last one arrives at t = 109 ms when all 10 (10 000 B) are delivered.
        let mut st = CcState::new(1000, 10_000);
        let mut first_tx = SimTime::ZERO;
        let mut segs = vec![];
        for k in 0..10u64 {
            st.now = SimTime(k * MS);
            let r = stamp(&mut st, &mut first_tx, k == 0);
            segs.push(seg(1 + 1000 * k, k, r));
        }
        st.now = SimTime(109 * MS);
        let mut acc = RateAcc::default();
        for s in &segs {
            acc.delivered(s, &mut first_tx);
            st.delivered += 1000;
        }
        let rs = acc.sample(&mut st, 10_000, 0, Some(SimDuration(100 * MS)));
        assert_eq!(rs.delivered, Some(10_000));
        // send phase 9 ms (first_tx 0 → last sent at 9), ACK phase 109 ms: the longer
        assert_eq!(rs.interval, Some(SimDuration(109 * MS)));
        assert_eq!(first_tx, SimTime(9 * MS));
        assert_eq!(st.delivered_time, SimTime(109 * MS));
        // an interval shorter than min RTT is not valid
        let mut acc = RateAcc::default();
        acc.delivered(&segs[9], &mut first_tx);
        let rs = acc.sample(&mut st, 1000, 0, Some(SimDuration(200 * MS)));
        assert_eq!(rs.interval, None);
    }

    #[test]
    fn delivered_time_moves_only_when_the_ack_delivered_something() {
        // `tcp_rate_gen`: `if (delivered) tp->delivered_mstamp = tp->tcp_mstamp`
        let mut st = CcState::new(1000, 10_000);
        st.now = SimTime(5 * MS);
        RateAcc::default().sample(&mut st, 1000, 0, None);
        assert_eq!(st.delivered_time, SimTime(5 * MS));
        st.now = SimTime(9 * MS);
        RateAcc::default().sample(&mut st, 0, 0, None);
        assert_eq!(
            st.delivered_time,
            SimTime(5 * MS),
            "nothing delivered: kept"
        );
    }

    #[test]
    fn app_limited_mark_clears_once_delivered_passes_it() {
        let mut st = CcState::new(1000, 10_000);
        st.app_limited = 5000;
        st.delivered = 5000;
        RateAcc::default().sample(&mut st, 0, 0, None);
        assert_eq!(st.app_limited, 5000);
        st.delivered = 5001;
        RateAcc::default().sample(&mut st, 1, 0, None);
        assert_eq!(st.app_limited, 0);
    }
}
