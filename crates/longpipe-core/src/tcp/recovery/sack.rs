//! RFC 6675 conservative SACK-based loss recovery, on the sender's scoreboard
//! ([`crate::tcp::sack::Scoreboard`]: IsLost, SetPipe, NextSeg).
//!
//! Enter (§5, steps (4.1)-(4.4)) on DupThresh duplicate ACKs or when the SACK
//! information shows the first segment lost, unless the cumulative ACK is still below
//! the last RecoveryPoint: RecoveryPoint = HighData, ssthresh = cwnd = the loss
//! reduction, retransmit the first segment. While in recovery, on every ACK: while
//! cwnd − pipe ≥ 1 SMSS, send NextSeg() (step (C)); leave once RecoveryPoint is
//! acknowledged. Partial ACKs only update the scoreboard.
//!
//! With `prr = true` (RFC 6937) the reduction is proportional instead: cwnd is not set
//! to ssthresh at entry; on every ACK in recovery (the one that starts it included)
//! cwnd = pipe + sndcnt, PRR-SSRB's allowance for the data the ACK reports delivered
//! ([`super::prr`]); cwnd = ssthresh when recovery ends.

use super::prr::Prr;
use super::{Recovery, DUP_THRESH};
use crate::tcp::cc::{CaState, CongestionControl};
use crate::tcp::sack::Next;
use crate::tcp::seg::Seg;
use crate::tcp::tx::Tx;

#[derive(Default)]
pub struct Sack {
    /// RFC 6675 HighRxt, as the end of the highest segment retransmitted in recovery.
    high_rxt: u64,
    /// RFC 6675 RescueRxt: this episode's rescue retransmission was sent.
    rescue_done: bool,
    /// RFC 6937 state when PRR is on.
    prr: Option<Prr>,
}

impl Sack {
    fn enter(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        tx.recover_end = tx.snd_max; // RecoveryPoint = HighData
        tx.sync_flight();
        tx.st.ssthresh = tx.loss_ssthresh(cc);
        // RFC 6937: RecoverFS = snd.nxt − snd.una
        self.prr = tx
            .cfg
            .stack
            .prr
            .then(|| Prr::start(tx.snd_max - tx.snd_una));
        if self.prr.is_none() {
            tx.st.cwnd = tx.st.ssthresh;
        }
        tx.in_recovery = true;
        self.rescue_done = false;
        self.high_rxt = tx.snd_una;
        cc.set_state(&mut tx.st, CaState::Recovery);
        if let Some((len, fin)) = tx.segment_at(tx.snd_una) {
            tx.emit(tx.snd_una, len, fin, out);
            self.high_rxt = tx.snd_una + len as u64 + fin as u64;
            if let Some(p) = &mut self.prr {
                p.out += len as u64 + fin as u64;
            }
        }
        self.prr_step(tx);
        tx.count_recovery();
        tx.restart_rto();
    }

    /// RFC 6937 on an ACK in recovery: cwnd = pipe + sndcnt.
    fn prr_step(&mut self, tx: &mut Tx) {
        let Some(p) = &mut self.prr else { return };
        let mss = tx.st.mss;
        let pipe = tx.board.pipe(mss, self.high_rxt);
        let sndcnt = p.rfc6937_sndcnt(tx.ack_delivered, pipe, tx.st.ssthresh, mss);
        tx.st.cwnd = pipe + sndcnt;
    }
}

impl Recovery for Sack {
    fn name(&self) -> &'static str {
        "sack"
    }

    fn on_dupack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        if !tx.in_recovery
            && (tx.dupacks >= DUP_THRESH || tx.board.first_is_lost(tx.st.mss))
            && tx.snd_una >= tx.recover_end
        {
            self.enter(tx, cc, out);
        } else if tx.in_recovery {
            self.prr_step(tx);
        }
    }

    fn on_ack(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        _: u64,
        _: &mut Vec<Seg>,
    ) -> bool {
        if tx.snd_una >= tx.recover_end {
            if self.prr.take().is_some() {
                tx.st.cwnd = tx.st.ssthresh; // RFC 6937: the reduction is complete
            }
            tx.exit_recovery(cc);
        } else {
            self.prr_step(tx);
        }
        true
    }

    /// Step (C): while cwnd − pipe ≥ 1 SMSS, send NextSeg().
    fn send(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        let mss = tx.st.mss;
        loop {
            let pipe = tx.board.pipe(mss, self.high_rxt);
            if tx.st.cwnd < pipe + mss {
                break;
            }
            let new_data = tx.new_data_fits();
            let before = tx.snd_max;
            let sent = match tx
                .board
                .next_seg(mss, self.high_rxt, new_data, self.rescue_done)
            {
                Next::Retransmit(seq) => {
                    let (len, fin) = tx.segment_at(seq).expect("segment in flight");
                    tx.emit(seq, len, fin, out);
                    self.high_rxt = self.high_rxt.max(seq + len as u64 + fin as u64);
                    len as u64 + fin as u64
                }
                Next::Rescue(seq) => {
                    let (len, fin) = tx.segment_at(seq).expect("segment in flight");
                    tx.emit(seq, len, fin, out);
                    self.rescue_done = true;
                    len as u64 + fin as u64
                }
                Next::NewData => {
                    tx.send_new(out);
                    tx.snd_max - before
                }
                Next::Nothing => break,
            };
            if let Some(p) = &mut self.prr {
                p.out += sent; // RFC 6937: prr_out counts everything sent in recovery
            }
        }
        tx.sync_flight();
    }
}
