//! Transmission in the Linux stack: lost segments first (`tcp_xmit_retransmit_queue`),
//! new data within cwnd − in_flight (`tcp_write_xmit`), and the tail loss probe
//! (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`).

use super::tlp::Tlp;
use super::Linux;
use crate::tcp::cc::CaState;
use crate::tcp::seg::Seg;
use crate::tcp::timestamps::ts_clock;
use crate::tcp::tx::Tx;

impl Linux {
    /// `tcp_xmit_retransmit_queue`: retransmits segments marked lost, within cwnd. A
    /// retransmission of the first unacknowledged segment re-arms the retransmission
    /// timer from now (unless RACK's reordering timer is pending), which in Linux's one
    /// connection timer also cancels a pending loss probe.
    pub(super) fn retransmit_lost(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        let mut rearm = false;
        // below the hint nothing is to be resent (the scan from 0 would pass it by)
        let mut i = tx.board.lost_hint();
        while i < tx.board.segs().len() {
            if tx.board.rtx_bytes >= tx.board.lost_bytes {
                break;
            }
            if tx.in_flight() + tx.st.mss > tx.st.cwnd {
                break;
            }
            let s = tx.board.segs()[i];
            if !s.lost || s.sacked || s.rtx_out {
                i += 1;
                continue;
            }
            if !tx.pace_ok() {
                break;
            }
            i += 1;
            self.retransmit(tx, s.seq, out);
            rearm |= s.seq == tx.snd_una && self.rack.reo_deadline.is_none();
            if self.in_cwnd_reduction() {
                self.prr.out += 1;
            }
        }
        // everything below `i` was passed by or has just been resent
        tx.board.set_lost_hint(i.min(tx.board.segs().len()));
        if rearm {
            tx.restart_rto();
            self.tlp.deadline = None;
        }
    }

    /// Retransmits the segment at `seq` (`tcp_retransmit_skb`).
    pub(super) fn retransmit(&mut self, tx: &mut Tx, seq: u64, out: &mut Vec<Seg>) {
        let (len, fin) = tx.segment_at(seq).expect("segment in flight");
        tx.emit(seq, len, fin, out);
        if self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(ts_clock(tx.st.now));
        }
        self.undo_retrans = self.undo_retrans.max(0) + 1;
    }

    /// `tcp_write_xmit`: new data within cwnd − in_flight and the receiver's window.
    pub(super) fn send_new(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) -> bool {
        let mut sent = false;
        while let Some((len, fin)) = tx.segment_at(tx.snd_max) {
            if len == 0 && !fin {
                break;
            }
            let end = tx.snd_max + len as u64;
            if end > tx.snd_una + tx.peer_wnd {
                if tx.snd_una == tx.snd_max {
                    tx.arm_persist();
                }
                break;
            }
            if tx.in_flight() + tx.st.mss > tx.st.cwnd {
                break;
            }
            if !tx.pace_ok() {
                break;
            }
            tx.send_new(out);
            tx.persist_at = None;
            tx.persist_backoff = 0;
            if self.in_cwnd_reduction() {
                self.prr.out += 1;
            }
            sent = true;
        }
        sent
    }

    /// `tcp_schedule_loss_probe`
    pub(super) fn schedule_probe(&mut self, tx: &Tx, advancing: bool) {
        self.tlp.deadline = None;
        let packets_out = tx.packets_out();
        if !tx.cfg.rack || packets_out == 0 || !matches!(self.state, CaState::Open | CaState::Cwr) {
            return;
        }
        let now = tx.st.now;
        let rto_left = if advancing {
            tx.rtt.rto()
        } else {
            tx.rto_deadline
                .map_or(tx.rtt.rto(), |d| d.saturating_sub(now))
        };
        let pto = Tlp::pto(tx.st.srtt, packets_out, tx.cfg.rto.min, rto_left);
        self.tlp.deadline = Some(now + pto);
    }

    /// `tcp_send_loss_probe`
    pub(super) fn send_probe(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        self.tlp.deadline = None;
        if self.tlp.high_seq.is_none() {
            self.tlp.retrans = false;
            if tx.new_data_fits() {
                tx.send_new(out); // new data, regardless of cwnd
            } else if let Some(last) = tx.board.segs().back().map(|s| s.seq) {
                self.retransmit(tx, last, out);
                self.tlp.retrans = true;
            } else {
                return;
            }
            self.tlp.high_seq = Some(tx.snd_max);
            self.tlp.probes += 1;
        }
        tx.restart_rto();
    }
}
