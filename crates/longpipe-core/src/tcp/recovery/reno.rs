//! RFC 5681 §3.2 fast retransmit / fast recovery: on the third duplicate ACK,
//! ssthresh = the loss reduction (step 2), retransmit (step 3), cwnd = ssthresh +
//! 3 SMSS; every further duplicate ACK inflates cwnd by SMSS (step 4); the first ACK of
//! new data deflates cwnd to ssthresh and ends recovery (step 6), even if it
//! acknowledges only part of the window.

use super::{Recovery, DUP_THRESH};
use crate::tcp::cc::{CaState, CongestionControl};
use crate::tcp::seg::Seg;
use crate::tcp::tx::Tx;

pub struct Reno;

/// Steps 2-3 of RFC 5681 §3.2 (shared with NewReno).
pub fn fast_retransmit(tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
    tx.st.ssthresh = tx.loss_ssthresh(cc);
    tx.retransmit_first(out);
    tx.st.cwnd = tx.st.ssthresh + 3 * tx.st.mss;
    tx.in_recovery = true;
    cc.set_state(&mut tx.st, CaState::Recovery);
    tx.count_recovery();
    tx.restart_rto();
}

/// Step 4: inflate by one SMSS for each further duplicate ACK while in fast recovery.
pub fn inflate(tx: &mut Tx) {
    if tx.in_recovery {
        tx.st.cwnd += tx.st.mss;
    }
}

impl Recovery for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn on_dupack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        if tx.in_recovery {
            inflate(tx);
        } else if tx.dupacks == DUP_THRESH {
            fast_retransmit(tx, cc, out);
        }
    }

    fn on_ack(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        _: u64,
        _: &mut Vec<Seg>,
    ) -> bool {
        // Step 6: deflate and leave on the first new ACK.
        tx.st.cwnd = tx.st.ssthresh;
        tx.exit_recovery(cc);
        true
    }
}
