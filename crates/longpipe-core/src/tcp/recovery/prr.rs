//! Proportional Rate Reduction (RFC 6937): during loss recovery, send in proportion
//! to what the receiver reports delivered, so that cwnd falls smoothly from the flight
//! at the loss to ssthresh instead of in one step (RFC 6675) or with a silence
//! (RFC 5681's inflation). Two forms:
//!
//! - [`Prr::rfc6937_sndcnt`]: RFC 6937 §3.1 in bytes with the Slow Start Reduction
//!   Bound (PRR-SSRB, the RFC's recommended variant), used by the classic stack's SACK
//!   recovery with `prr = true`.
//! - [`Prr::linux_cwnd`]: Linux `tcp_cwnd_reduction` (Linux 6.x), in segments, used by
//!   the Linux stack: RecoverFS is cwnd at the start (`prior_cwnd`); the reduction bound
//!   adds one segment only when the ACK advanced snd_una without new losses; at least
//!   one segment (the fast retransmission) goes out on entry; cwnd = in_flight + sndcnt.

/// PRR's state over one recovery episode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prr {
    /// Data delivered to the receiver since recovery started (`prr_delivered`).
    pub delivered: u64,
    /// Data sent since recovery started (`prr_out`).
    pub out: u64,
    /// RecoverFS (RFC 6937) / `prior_cwnd` (Linux): the flight, or cwnd, at the start.
    pub recover_fs: u64,
}

impl Prr {
    /// A new episode with RecoverFS `recover_fs`.
    pub fn start(recover_fs: u64) -> Self {
        Prr {
            delivered: 0,
            out: 0,
            recover_fs,
        }
    }

    /// RFC 6937 §3.1 (bytes): on an ACK that delivered `delivered_data` with `pipe`
    /// bytes in the network, how many bytes may be sent (PRR-SSRB).
    pub fn rfc6937_sndcnt(
        &mut self,
        delivered_data: u64,
        pipe: u64,
        ssthresh: u64,
        smss: u64,
    ) -> u64 {
        self.delivered += delivered_data;
        if pipe > ssthresh {
            // proportional rate reduction
            (self.delivered * ssthresh)
                .div_ceil(self.recover_fs.max(1))
                .saturating_sub(self.out)
        } else {
            // slow start reduction bound
            let limit = self.delivered.saturating_sub(self.out).max(delivered_data) + smss;
            (ssthresh - pipe).min(limit)
        }
    }

    /// Linux `tcp_cwnd_reduction` (segments): cwnd after an ACK that delivered
    /// `newly_acked_sacked` and newly marked `newly_lost` segments, with `in_flight`
    /// segments in the network; `una_advanced` when snd_una moved. None if nothing was
    /// delivered (cwnd unchanged).
    pub fn linux_cwnd(
        &mut self,
        newly_acked_sacked: u64,
        newly_lost: u64,
        una_advanced: bool,
        in_flight: u64,
        ssthresh: u64,
    ) -> Option<u64> {
        if newly_acked_sacked == 0 || self.recover_fs == 0 {
            return None;
        }
        self.delivered += newly_acked_sacked;
        let delta = ssthresh as i64 - in_flight as i64;
        let mut sndcnt = if delta < 0 {
            let dividend = ssthresh * self.delivered + self.recover_fs - 1;
            (dividend / self.recover_fs) as i64 - self.out as i64
        } else {
            let mut c = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                c += 1;
            }
            c.min(delta)
        };
        // force a fast retransmission on entering recovery
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        Some((in_flight as i64 + sndcnt).max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6937_proportional_part_spreads_the_reduction() {
        // RFC 6937 §5 example shape: RecoverFS 20 segments, ssthresh 10: while pipe is
        // above ssthresh, one segment is sent for every two delivered.
        let mss = 1000;
        let mut p = Prr::start(20 * mss);
        let mut sent = 0;
        for k in 1..=10u64 {
            let pipe = 19 * mss - k * mss / 2;
            let n = p.rfc6937_sndcnt(mss, pipe, 10 * mss, mss);
            let segs = n / mss;
            p.out += segs * mss;
            sent += segs;
        }
        assert_eq!(sent, 5, "10 deliveries release 5 segments");
        assert_eq!(p.delivered, 10 * mss);
    }

    #[test]
    fn rfc6937_slow_start_bound_when_pipe_below_ssthresh() {
        // Heavy losses left pipe far below ssthresh: PRR-SSRB allows the delivered data
        // plus one segment, no more than ssthresh − pipe.
        let mss = 1000;
        let mut p = Prr::start(20 * mss);
        p.out = 2 * mss;
        p.delivered = 2 * mss;
        assert_eq!(p.rfc6937_sndcnt(mss, 3 * mss, 10 * mss, mss), 2 * mss);
        // and never more than ssthresh − pipe
        let mut p = Prr::start(20 * mss);
        assert_eq!(p.rfc6937_sndcnt(5 * mss, 9 * mss, 10 * mss, mss), mss);
    }

    #[test]
    fn linux_forces_the_fast_retransmission_then_halves_the_rate() {
        // prior_cwnd 20, ssthresh 14 (CUBIC's 0.7): in flight 19 after the dupacks
        let mut p = Prr::start(20);
        // the ACK that starts recovery SACKs one segment: ceil(14·1/20) − 0 = 1
        assert_eq!(p.linux_cwnd(1, 1, false, 18, 14), Some(19));
        p.out = 1;
        // the next: ceil(14·2/20) − 1 = 1 → cwnd = in flight + 1
        assert_eq!(p.linux_cwnd(1, 0, false, 18, 14), Some(19));
        p.out = 2;
        // ceil(14·3/20) − 2 = 1; ceil(14·4/20) − 2 = 1 (not yet sent): sending settles
        // at 14 segments per 20 delivered
        assert_eq!(p.linux_cwnd(1, 0, false, 18, 14), Some(19));
        assert_eq!(p.linux_cwnd(0, 0, false, 18, 14), None);
        // below ssthresh: the reduction bound (+1 when snd_una advanced, no new loss)
        let p5 = Prr {
            delivered: 5,
            out: 5,
            recover_fs: 20,
        };
        let f = |acked, lost, una| {
            let mut p = p5;
            p.linux_cwnd(acked, lost, una, 8, 14)
        };
        assert_eq!(f(2, 0, true), Some(8 + 3));
        assert_eq!(f(2, 1, true), Some(8 + 2));
        assert_eq!(f(2, 0, false), Some(8 + 2));
        assert_eq!(f(10, 0, true), Some(14), "capped at ssthresh");
        // in flight exactly ssthresh: the reduction bound (nothing to send), not the
        // proportional part (⌈14 · 7 / 20⌉ − 3 = 2 more)
        let mut p = Prr {
            delivered: 5,
            out: 3,
            recover_fs: 20,
        };
        assert_eq!(p.linux_cwnd(2, 0, true, 14, 14), Some(14));
        // … but on entering recovery (nothing sent yet) the fast retransmission is forced
        assert_eq!(Prr::start(20).linux_cwnd(1, 0, false, 14, 14), Some(15));
        // the proportional part rounds up, and is exact on a multiple: ⌈14 · 10 / 20⌉ = 7
        let mut p = Prr {
            delivered: 9,
            out: 5,
            recover_fs: 20,
        };
        assert_eq!(p.linux_cwnd(1, 0, false, 16, 14), Some(16 + 7 - 5));
        let mut p = Prr {
            delivered: 10,
            out: 5,
            recover_fs: 20,
        };
        assert_eq!(
            p.linux_cwnd(1, 0, false, 16, 14),
            Some(16 + 8 - 5),
            "⌈154 / 20⌉ = 8"
        );
    }
}
