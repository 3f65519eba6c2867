//! RFC 6582 NewReno: as Reno, but fast retransmit only if the cumulative ACK covers
//! more than `recover` (§3.2 step 2, avoiding multiple reductions per window); a
//! partial ACK retransmits the next hole, deflates cwnd by the bytes acknowledged
//! (+ SMSS if at least SMSS was acknowledged) and stays in recovery; a full ACK sets
//! cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS) (option 2) and ends recovery. The
//! RTO timer restarts on the first partial ACK only (Impatient), or on every one
//! (Slow-but-Steady) when so configured (§4).

use super::reno::{fast_retransmit, inflate};
use super::{Recovery, DUP_THRESH};
use crate::tcp::cc::CongestionControl;
use crate::tcp::seg::Seg;
use crate::tcp::tx::Tx;

pub struct NewReno {
    partial_ack_timer_every: bool,
    /// No partial ACK yet in this episode.
    first_partial: bool,
}

impl NewReno {
    pub fn new(partial_ack_timer_every: bool) -> Self {
        NewReno {
            partial_ack_timer_every,
            first_partial: false,
        }
    }
}

impl Recovery for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn on_dupack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        if tx.in_recovery {
            // Step 3 (partial ACK) sends us back to RFC 5681 §3.2 step 4: every duplicate
            // ACK inflates, including the first ones after a partial ACK (whose
            // cumulative ACK restarted the duplicate count).
            inflate(tx);
        } else if tx.dupacks == DUP_THRESH && tx.snd_una >= tx.recover_end {
            // Step 2: only if the ACK covers more than `recover`.
            tx.recover_end = tx.snd_max;
            self.first_partial = true;
            fast_retransmit(tx, cc, out);
        }
    }

    fn on_ack(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        acked: u64,
        out: &mut Vec<Seg>,
    ) -> bool {
        let mss = tx.st.mss;
        if tx.snd_una >= tx.recover_end {
            // Step 3, full ACK, option (2).
            tx.st.cwnd = tx.st.ssthresh.min(tx.st.flight.max(mss) + mss);
            tx.exit_recovery(cc);
            return true;
        }
        // Step 3, partial ACK.
        tx.retransmit_first(out);
        tx.st.cwnd = tx.st.cwnd.saturating_sub(acked).max(mss);
        if acked >= mss {
            tx.st.cwnd += mss;
        }
        let restart = self.first_partial || self.partial_ack_timer_every;
        self.first_partial = false;
        restart
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::recovery::RecoveryKind;
    use crate::tcp::script::{seq, Script, Setup, MSS};
    use crate::time::SimDuration;

    /// Without SACK, segments 0, 3 and 6 of ten lost: the fast retransmission, four
    /// more duplicate ACKs, then two partial ACKs 1 ms apart. Returns the RTO deadline
    /// after each partial ACK, and their times.
    fn two_partial_acks(every: bool) -> [(crate::time::SimTime, crate::time::SimTime); 2] {
        let (mut sc, _) = Script::new(Setup {
            recovery: RecoveryKind::NewReno {
                partial_ack_timer_every: every,
            },
            sack: false,
            ..Setup::default()
        });
        for _ in 0..2 {
            assert_eq!(sc.dupack(0, &[]), vec![]);
        }
        assert_eq!(sc.dupack(0, &[]), vec![(0, true)]);
        // RFC 5681 §3.2 step 4: each further duplicate ACK inflates cwnd by one SMSS
        // (5 + 3 = 8 segments, then 9..12): new data once cwnd exceeds the flight (10)
        assert_eq!(sc.dupack(0, &[]), vec![]);
        assert_eq!(sc.dupack(0, &[]), vec![]);
        assert_eq!(sc.dupack(0, &[]), vec![(10, false)]);
        assert_eq!(sc.dupack(0, &[]), vec![(11, false)]);
        let mut at = [(sc.now, sc.now); 2];
        for (i, (hole, new)) in [(3u64, 12u64), (6, 13)].into_iter().enumerate() {
            // RFC 6582 §3.2 step 3: a partial ACK retransmits the next hole, deflates
            // cwnd by the 3 segments acknowledged and adds one back (12 − 3 + 1 = 10,
            // then 10 − 3 + 1 = 8, each one segment above the flight left): one new
            // segment goes out
            assert_eq!(sc.ack(seq(hole), &[]), vec![(hole, true), (new, false)]);
            assert!(sc.s.tx.in_recovery);
            at[i] = (sc.now, sc.s.tx.rto_deadline.expect("armed"));
        }
        at
    }

    #[test]
    fn duplicate_acks_below_recover_after_a_timeout_allow_two_limited_transmits_only() {
        // Four segments out, no ACK: the RTO resends segment 0 and records
        // recover = HighData (RFC 6582 §4). The go-back-N catches up (segments 1-3 again,
        // then new segment 4) and segment 3's resend is lost: duplicate ACKs of
        // segment 3, below recover. RFC 3042 sends one new segment on each of the first
        // two; RFC 6582 §3.2 step 1 starts no fast retransmission on the third, and
        // Limited Transmit does not go on either (it is for the first two only).
        let (mut sc, init) = Script::new(Setup {
            sack: false,
            iw: 4,
            limited_transmit: true,
            ..Setup::default()
        });
        assert_eq!(init.len(), 4);
        sc.now = sc.now + SimDuration::from_secs(2);
        let mut out = vec![];
        sc.s.on_timer(sc.now, &mut out);
        assert_eq!(out.iter().map(|s| s.seq).collect::<Vec<_>>(), vec![seq(0)]);
        assert_eq!(sc.s.tx.recover_end, seq(4));
        assert_eq!(sc.ack(seq(1), &[]), vec![(1, true), (2, true)]);
        assert_eq!(sc.ack(seq(3), &[]), vec![(3, true), (4, false)]);
        // RFC 3042 also bounds the flight by cwnd + 2 segments, which alone would stop a
        // third transmission at this cwnd (2.5 segments): give cwnd room for it, as a
        // sender that was application-limited would have, so that only the duplicate
        // ACK count stands in the way
        assert_eq!(sc.s.tx.st.cwnd, 2500);
        sc.s.tx.st.cwnd = 3 * MSS;
        assert_eq!(sc.dupack(3, &[]), vec![(5, false)], "RFC 3042, first");
        assert_eq!(sc.dupack(3, &[]), vec![(6, false)], "RFC 3042, second");
        assert_eq!(
            sc.dupack(3, &[]),
            vec![],
            "third: below recover, no fast retransmit"
        );
        assert!(!sc.s.tx.in_recovery);
        assert_eq!(sc.dupack(3, &[]), vec![]);
    }

    #[test]
    fn impatient_restarts_the_timer_on_the_first_partial_ack_only() {
        // RFC 6582 §4, Impatient variant: "reset the retransmit timer only after the
        // first partial ACK"
        let rto = SimDuration::from_secs(1); // the 1 s minimum
        let [(t1, d1), (t2, d2)] = two_partial_acks(false);
        assert_eq!(d1, t1 + rto, "restarted by the first partial ACK");
        assert_eq!(d2, t1 + rto, "not by the second");
        assert!(t2 > t1);
    }

    #[test]
    fn slow_but_steady_restarts_the_timer_on_every_partial_ack() {
        let rto = SimDuration::from_secs(1);
        let [(t1, d1), (t2, d2)] = two_partial_acks(true);
        assert_eq!(d1, t1 + rto);
        assert_eq!(d2, t2 + rto);
    }
}
