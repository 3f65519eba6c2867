//! 4.3BSD-Tahoe (`tcp_input.c`): on the third duplicate ACK, ssthresh = the congestion
//! control's loss reduction, cwnd = 1 SMSS and the first unacknowledged segment is
//! retransmitted; there is no fast recovery (the window then grows by slow start, and
//! further duplicate ACKs do nothing).

use super::{Recovery, DUP_THRESH};
use crate::tcp::cc::CongestionControl;
use crate::tcp::seg::Seg;
use crate::tcp::tx::Tx;

pub struct Tahoe;

impl Recovery for Tahoe {
    fn name(&self) -> &'static str {
        "tahoe"
    }

    fn on_dupack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        if tx.dupacks != DUP_THRESH {
            return;
        }
        tx.st.ssthresh = tx.loss_ssthresh(cc);
        tx.st.cwnd = tx.st.mss;
        tx.retransmit_first(out);
        tx.count_recovery();
        tx.restart_rto();
    }

    fn on_ack(
        &mut self,
        _: &mut Tx,
        _: &mut dyn CongestionControl,
        _: u64,
        _: &mut Vec<Seg>,
    ) -> bool {
        unreachable!("Tahoe has no fast recovery")
    }
}
