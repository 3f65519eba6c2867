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
