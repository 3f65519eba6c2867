//! ACK tagging of the Linux stack (`tcp_sacktag_write_queue`, `tcp_clean_rtx_queue`,
//! `tcp_ack_update_rtt`): SACK blocks and the cumulative ACK mark segments delivered,
//! advance RACK and the rate sample, count `delivered`, recognise D-SACKs (RFC 2883 §4)
//! and reordering, and measure the RTT Linux's way.

use super::{AckFlags, Linux};
use crate::tcp::rate::RateAcc;
use crate::tcp::seg::Seg;
use crate::tcp::timestamps::ts_rtt;
use crate::tcp::tx::Tx;
use crate::time::{SimDuration, SimTime};

/// What tagging found: flags, data bytes delivered (the FIN's sequence number is not
/// data: an ACK of a full segment and the FIN delivered one segment, not two), the RTT
/// samples (`seq_rtt`, `ca_rtt`) and the rate sample under construction.
pub(super) type Tagged = (
    AckFlags,
    u64,
    Option<SimDuration>,
    Option<SimDuration>,
    RateAcc,
);

impl Linux {
    /// Tags the scoreboard with an ACK; returns the flags, the bytes newly delivered
    /// and the RTT samples (Linux's `seq_rtt`, `ca_rtt`) and rate state.
    pub(super) fn tag(&mut self, tx: &mut Tx, seg: &Seg) -> Tagged {
        let now = tx.st.now;
        let min_rtt = tx.st.min_rtt_sample;
        let mut f = AckFlags {
            win_update: seg.wnd != tx.peer_wnd,
            ece: tx.ece(seg.flags),
            ..Default::default()
        };
        tx.peer_wnd = seg.wnd;
        let mut acc = RateAcc::default();
        let mut first_tx = tx.first_tx.unwrap_or_default();
        let mut delivered = 0;
        let (mut sack_first, mut sack_last) = (None::<SimTime>, None::<SimTime>);
        let prior_una = tx.snd_una;
        if let (true, Some(b)) = (tx.sack_ok, &seg.sack) {
            let blocks = b.as_slice();
            if let Some(tr) = &mut tx.trace {
                for &(l, r) in blocks {
                    tr.sack_t_ns.push(now.0);
                    tr.sack_left.push(l);
                    tr.sack_right.push(r);
                }
            }
            // RFC 2883 §4: a D-SACK is a first block below the cumulative ACK or inside
            // the second block
            f.dsack = blocks.first().is_some_and(|&(l, r)| {
                l < seg.ack || blocks.get(1).is_some_and(|&(l1, r1)| l >= l1 && r <= r1)
            });
            let high_sacked = tx.board.high_sacked();
            for (i, &(l, r)) in blocks.iter().enumerate() {
                if i == 0 && f.dsack {
                    self.rack.dsack_seen = true;
                    self.dsack_undo(tx, l, r, prior_una);
                    continue;
                }
                let rack = &mut self.rack;
                let n = tx.board.sack_block_with(l, r, |s| {
                    rack.advance(s, now, min_rtt);
                    acc.delivered(s, &mut first_tx);
                    if !s.retx {
                        sack_first = Some(sack_first.map_or(s.sent_at, |t| t.min(s.sent_at)));
                        sack_last = Some(sack_last.map_or(s.sent_at, |t| t.max(s.sent_at)));
                        if s.end < high_sacked {
                            rack.reord_seen = true; // delivered out of its send order
                        }
                    }
                });
                delivered += n;
                f.data_sacked |= n > 0;
            }
        }
        let (mut first_ackt, mut last_ackt, mut retrans_acked) = (None::<SimTime>, None, false);
        if seg.ack > tx.snd_una {
            f.una_advanced = true;
            let rack = &mut self.rack;
            tx.board.ack_to_with(seg.ack, |s| {
                if !s.sacked {
                    delivered += s.seq_len();
                    rack.advance(s, now, min_rtt);
                    acc.delivered(s, &mut first_tx);
                }
                if s.retx {
                    retrans_acked = true;
                } else if !s.sacked {
                    first_ackt.get_or_insert(s.sent_at);
                    last_ackt = Some(s.sent_at);
                }
            });
            tx.snd_una = seg.ack;
            tx.snd_nxt = tx.snd_nxt.max(seg.ack);
            self.retransmits = 0;
        }
        if tx.first_tx.is_some() {
            tx.first_tx = Some(first_tx);
        }
        tx.st.delivered += delivered;
        // the FIN is in the sequence space, not in the data a control counts
        if tx
            .fin_seq
            .is_some_and(|fin| prior_una <= fin && tx.snd_una > fin)
        {
            delivered = delivered.saturating_sub(1);
        }
        // `tcp_ack_update_rtt`: sequence RTT unless retransmitted data was acknowledged,
        // then a SACK RTT, then the timestamp echo
        let mut seq_rtt = first_ackt.filter(|_| !retrans_acked).map(|t| now - t);
        let mut ca_rtt = last_ackt.filter(|_| !retrans_acked).map(|t| now - t);
        if let Some(t) = sack_first {
            seq_rtt = seq_rtt.or(Some(now - t));
            ca_rtt = sack_last.map(|t| now - t);
        }
        if seq_rtt.is_none() && f.una_advanced && tx.ts_ok {
            seq_rtt = self.ack_tsecr.and_then(|e| ts_rtt(now, e));
            ca_rtt = seq_rtt;
        }
        (f, delivered, seq_rtt, ca_rtt, acc)
    }

    /// A D-SACK for [l, r): retransmissions reported received twice are spurious.
    pub(super) fn dsack_undo(&mut self, tx: &Tx, l: u64, r: u64, prior_una: u64) {
        let Some(m) = self.undo_marker else { return };
        if self.undo_retrans <= 0 || r <= m {
            return;
        }
        let segs = if r <= prior_una {
            (r - l).div_ceil(tx.st.mss) as i64 // already acknowledged: count segments
        } else {
            tx.board
                .segs()
                .iter()
                .filter(|s| s.retx && s.seq >= l && s.end <= r)
                .count() as i64
        };
        self.undo_retrans = (self.undo_retrans - segs).max(0);
    }
}
