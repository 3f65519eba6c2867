//! AAL5 (ITU-T I.363.5) segmentation and reassembly, as a host adapter does it.
//!
//! A CPCS-PDU is the packet, optionally behind an 8-octet LLC/SNAP header (RFC 2684
//! §4.1), then 0–47 octets of padding and an 8-octet trailer (CPCS-UU, CPI, Length,
//! CRC-32), a multiple of 48 octets: ⌈(L + 8 [+ 8]) / 48⌉ cells, the last one marked
//! end-of-message in its PTI field. A 552 B packet takes 12 cells (16 octets of padding:
//! 512 B of TCP payload in 576 B of cell payload, the seed's 89 % cap); 1500 B with
//! LLC/SNAP takes 32.
//!
//! Reassembly collects a VC's cells up to an end-of-message cell and hands the packet up
//! only if the cells are exactly those of one PDU (the Length and CRC-32 checks): a PDU
//! that lost any cell is discarded, and one whose end-of-message cell was lost is glued
//! to the next PDU, which fails the check too, so both are discarded.
//!
//! Loss events ("simultaneous losses counted once", seed 002 §5.1): the sending adapter
//! numbers its VC's PDUs and counts the sender's loss responses — an *epoch* begins with
//! the first retransmission after new data (a fast retransmit or a timeout's go-back-N).
//! Every PDU carries its epoch and the number of the PDU that opened it; the receiving
//! adapter counts a loss event for each epoch in which at least one PDU was lost. So
//! packets lost from one window (sent before the sender reacted to the first of them)
//! count once, and a lost retransmission counts anew.

use super::cell::{Cell, VcId, CELL_PAYLOAD};
use crate::net::packet::Packet;

/// Octets of the AAL5 CPCS-PDU trailer.
pub const TRAILER: u32 = 8;
/// Octets of the LLC/SNAP encapsulation header (RFC 2684 §4.1).
pub const LLC_SNAP: u32 = 8;

/// Cells of the CPCS-PDU that carries a packet of `len` octets.
pub fn cells_for(len: u32, llc: bool) -> u32 {
    (len + TRAILER + if llc { LLC_SNAP } else { 0 }).div_ceil(CELL_PAYLOAD)
}

/// Padding octets in that PDU.
pub fn padding(len: u32, llc: bool) -> u32 {
    cells_for(len, llc) * CELL_PAYLOAD - len - TRAILER - if llc { LLC_SNAP } else { 0 }
}

/// What the segmenter decided for one packet: its PDU number, cells and epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PduHeader {
    pub pdu: u32,
    pub ncells: u16,
    pub epoch: u32,
    pub epoch_start: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct TxVc {
    next_pdu: u32,
    /// End of the highest TCP sequence sent on the VC (wrapping), once data was seen.
    high_end: Option<u32>,
    epoch: u32,
    epoch_start: u32,
    in_retx: bool,
}

/// The sending side of AAL5 on one adapter: PDU numbers and epochs per VC.
#[derive(Debug, Default)]
pub struct Segmenter {
    vcs: Vec<TxVc>,
}

impl Segmenter {
    /// Numbers the PDU that carries `p` on `vc` and tracks the sender's epochs.
    pub fn segment(&mut self, vc: VcId, p: &Packet, llc: bool) -> PduHeader {
        let i = vc as usize;
        if self.vcs.len() <= i {
            self.vcs.resize(i + 1, TxVc::default());
        }
        let v = &mut self.vcs[i];
        let pdu = v.next_pdu;
        v.next_pdu = v.next_pdu.wrapping_add(1);
        let seq_len = p.seg.seq_len();
        if seq_len > 0 {
            let end = p.seg.seq.wrapping_add(seq_len);
            let retx = v
                .high_end
                .is_some_and(|h| (end.wrapping_sub(h) as i32) <= 0);
            if retx {
                if !v.in_retx {
                    v.epoch += 1;
                    v.epoch_start = pdu;
                    v.in_retx = true;
                }
            } else {
                v.in_retx = false;
                v.high_end = Some(end);
            }
        }
        PduHeader {
            pdu,
            ncells: cells_for(p.size, llc) as u16,
            epoch: v.epoch,
            epoch_start: v.epoch_start,
        }
    }
}

/// Per-VC reassembly counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxCounts {
    /// Cells that arrived.
    pub cells: u64,
    pub pdus_delivered: u64,
    /// PDUs that did not arrive whole (any cell lost, or the whole PDU).
    pub pdus_lost: u64,
    /// Epochs with at least one lost PDU (see the module documentation).
    pub loss_events: u64,
}

#[derive(Debug, Clone, Default)]
struct RxVc {
    /// Cells collected since the last end-of-message cell, and the PDU of the first.
    count: u32,
    first: u32,
    /// The smallest PDU number not yet accounted for (delivered or lost).
    next: u32,
    /// Epoch of the last PDU accounted for.
    epoch: u32,
    /// The highest epoch already counted as a loss event, if any.
    lost_epoch: Option<u32>,
    c: RxCounts,
}

impl RxVc {
    fn mark(&mut self, epoch: u32) {
        if self.lost_epoch.is_none_or(|e| epoch > e) {
            self.lost_epoch = Some(epoch);
            self.c.loss_events += 1;
        }
    }

    /// PDUs `next..=hi` are lost; the end-of-message cell of PDU `at` (≥ hi) carried
    /// `epoch` and `start`.
    fn lose(&mut self, hi: u32, epoch: u32, start: u32) {
        let lo = self.next;
        if (hi.wrapping_sub(lo) as i32) < 0 {
            return;
        }
        self.c.pdus_lost += (hi.wrapping_sub(lo) as u64) + 1;
        if epoch == self.epoch {
            return self.mark(epoch);
        }
        // PDUs before `start` belong to earlier epochs: the tail of the last accounted
        // epoch (counted as that one) and any epochs in between, which were lost whole.
        if (lo.wrapping_sub(start) as i32) < 0 {
            self.mark(self.epoch);
            for e in self.epoch + 1..epoch {
                self.mark(e);
            }
        }
        if (hi.wrapping_sub(start) as i32) >= 0 {
            self.mark(epoch);
        }
    }
}

/// The receiving side of AAL5 on one adapter.
#[derive(Debug, Default)]
pub struct Reassembler {
    vcs: Vec<RxVc>,
}

impl Reassembler {
    /// A cell arrives; the packet when it completes a PDU that arrived whole.
    pub fn push(&mut self, cell: Cell) -> Option<Box<Packet>> {
        let i = cell.vc as usize;
        if self.vcs.len() <= i {
            self.vcs.resize(i + 1, RxVc::default());
        }
        let v = &mut self.vcs[i];
        v.c.cells += 1;
        if v.count == 0 {
            v.first = cell.pdu;
        }
        v.count += 1;
        if !cell.eom {
            return None;
        }
        let whole = v.first == cell.pdu && v.count == cell.ncells as u32;
        v.count = 0;
        let out = if whole {
            // PDUs between the last accounted and this one vanished whole.
            v.lose(cell.pdu.wrapping_sub(1), cell.epoch, cell.epoch_start);
            v.c.pdus_delivered += 1;
            cell.sdu
        } else {
            v.lose(cell.pdu, cell.epoch, cell.epoch_start);
            None
        };
        v.next = cell.pdu.wrapping_add(1);
        v.epoch = cell.epoch;
        out
    }

    /// Counters of VC `vc`.
    pub fn counts(&self, vc: VcId) -> RxCounts {
        self.vcs.get(vc as usize).map(|v| v.c).unwrap_or_default()
    }

    /// Counters of every VC seen, by VC number.
    pub fn all(&self) -> impl Iterator<Item = (VcId, RxCounts)> + '_ {
        self.vcs.iter().enumerate().map(|(i, v)| (i as VcId, v.c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::{node_addr, Segment, ACK};

    fn pkt(seq: u32, len: u32) -> Packet {
        Packet::new(
            node_addr(0),
            node_addr(1),
            Segment {
                seq,
                flags: ACK,
                len,
                ..Default::default()
            },
        )
    }

    #[test]
    fn cell_counts_include_trailer_padding_and_llc() {
        // the seed's sizes (TCP/IP packet lengths)
        assert_eq!(cells_for(552, false), 12);
        assert_eq!(padding(552, false), 16); // 552 + 8 = 560 = 11·48 + 32
        assert_eq!(cells_for(1500, false), 32);
        assert_eq!(cells_for(1500, true), 32); // ALGORITHMS.md §4
        assert_eq!(padding(1500, true), 20);
        assert_eq!(cells_for(4352, false), 91);
        // boundaries: 40 + 8 fills one cell exactly; one more octet needs a second
        assert_eq!((cells_for(40, false), padding(40, false)), (1, 0));
        assert_eq!(cells_for(41, false), 2);
        assert_eq!(cells_for(40, true), 2);
        assert_eq!(cells_for(1528, false), 32);
        assert_eq!(cells_for(1529, false), 33);
        // the 89 % cap: TCP payload of a 552 B packet over the cell payload it takes
        let cap = (552.0 - 40.0) / (12.0 * 48.0);
        assert!((cap - 0.8889f64).abs() < 1e-4);
    }

    fn cells(h: PduHeader, vc: VcId, p: Packet) -> Vec<Cell> {
        let n = h.ncells as usize;
        let mut v: Vec<Cell> = (0..n)
            .map(|k| Cell {
                vc,
                dst: 1,
                pdu: h.pdu,
                ncells: h.ncells,
                eom: k + 1 == n,
                clp: false,
                epoch: h.epoch,
                epoch_start: h.epoch_start,
                sdu: None,
            })
            .collect();
        v[n - 1].sdu = Some(Box::new(p));
        v
    }

    /// Segments the packets (seq, len) on VC 0; the cells of each PDU.
    fn send(seg: &mut Segmenter, pkts: &[(u32, u32)]) -> Vec<Vec<Cell>> {
        pkts.iter()
            .map(|&(s, l)| {
                let p = pkt(s, l);
                let h = seg.segment(0, &p, false);
                cells(h, 0, p)
            })
            .collect()
    }

    #[test]
    fn whole_pdus_are_delivered_and_a_lost_cell_discards_the_pdu() {
        let mut s = Segmenter::default();
        let pdus = send(&mut s, &[(1, 512), (513, 512), (1025, 512)]);
        let mut r = Reassembler::default();
        let mut got = vec![];
        for (k, pdu) in pdus.into_iter().enumerate() {
            for (j, c) in pdu.into_iter().enumerate() {
                if k == 1 && j == 3 {
                    continue; // one cell of the second PDU lost
                }
                if let Some(p) = r.push(c) {
                    got.push(p.seg.seq);
                }
            }
        }
        assert_eq!(got, [1, 1025]);
        let c = r.counts(0);
        assert_eq!((c.pdus_delivered, c.pdus_lost, c.loss_events), (2, 1, 1));
        assert_eq!(c.cells, 3 * 12 - 1);
    }

    #[test]
    fn a_lost_end_of_message_glues_two_pdus_and_both_are_discarded() {
        let mut s = Segmenter::default();
        let pdus = send(&mut s, &[(1, 512), (513, 512), (1025, 512)]);
        let mut r = Reassembler::default();
        let mut got = vec![];
        for (k, pdu) in pdus.into_iter().enumerate() {
            for c in pdu {
                if k == 0 && c.eom {
                    continue;
                }
                if let Some(p) = r.push(c) {
                    got.push(p.seg.seq);
                }
            }
        }
        // 11 cells of PDU 0 + 12 of PDU 1 end with PDU 1's EOM: neither is whole
        assert_eq!(got, [1025]);
        let c = r.counts(0);
        assert_eq!((c.pdus_delivered, c.pdus_lost, c.loss_events), (1, 2, 1));
    }

    #[test]
    fn a_glued_pdu_with_the_right_cell_count_still_fails_its_crc() {
        // PDU 0 loses its end-of-message cell (11 cells arrive), PDU 1 all but its last:
        // 11 + 1 cells end with PDU 1's EOM, as many as its Length field says, yet they
        // are not its cells (the CRC-32 check); both are lost
        let mut s = Segmenter::default();
        let pdus = send(&mut s, &[(1, 512), (513, 512), (1025, 512)]);
        let mut r = Reassembler::default();
        let mut got = vec![];
        for (k, pdu) in pdus.into_iter().enumerate() {
            for c in pdu {
                if (k == 0 && c.eom) || (k == 1 && !c.eom) {
                    continue;
                }
                if let Some(p) = r.push(c) {
                    got.push(p.seg.seq);
                }
            }
        }
        assert_eq!(got, [1025]);
        let c = r.counts(0);
        assert_eq!((c.pdus_delivered, c.pdus_lost, c.cells), (1, 2, 24));
    }

    #[test]
    fn pdus_lost_whole_are_counted_at_the_next_end_of_message() {
        let mut s = Segmenter::default();
        let pdus = send(&mut s, &[(1, 512), (513, 512), (1025, 512), (1537, 512)]);
        let mut r = Reassembler::default();
        let mut n = 0;
        for (k, pdu) in pdus.into_iter().enumerate() {
            if k == 1 || k == 2 {
                continue; // EPD: both PDUs discarded whole
            }
            for c in pdu {
                n += r.push(c).is_some() as u32;
            }
        }
        assert_eq!(n, 2);
        let c = r.counts(0);
        assert_eq!(
            (c.pdus_lost, c.loss_events),
            (2, 1),
            "one window: one event"
        );
    }

    #[test]
    fn epochs_begin_at_the_first_retransmission_after_new_data() {
        let mut s = Segmenter::default();
        let p = |seq, len| pkt(seq, len);
        let h: Vec<PduHeader> = [
            p(1, 100),   // pdu 0, new
            p(101, 100), // 1, new
            p(201, 100), // 2, new
            p(101, 100), // 3, retransmission: epoch 1 starts at pdu 3
            p(301, 100), // 4, new data again
            p(401, 0),   // 5, a pure ACK: no effect
            p(201, 100), // 6, retransmission: epoch 2 at pdu 6
            p(301, 100), // 7, go-back-N continues: still epoch 2
        ]
        .iter()
        .map(|x| s.segment(0, x, false))
        .collect();
        let e: Vec<(u32, u32, u32)> = h.iter().map(|h| (h.pdu, h.epoch, h.epoch_start)).collect();
        assert_eq!(
            e,
            [
                (0, 0, 0),
                (1, 0, 0),
                (2, 0, 0),
                (3, 1, 3),
                (4, 1, 3),
                (5, 1, 3),
                (6, 2, 6),
                (7, 2, 6)
            ]
        );
    }

    #[test]
    fn losses_in_two_epochs_count_twice_and_a_whole_lost_epoch_counts() {
        // epoch 0: pdus 0..=2; epoch 1 starts at 3 (a retransmission) ...
        let mut s = Segmenter::default();
        let pdus = send(
            &mut s,
            &[
                (1, 100),   // 0
                (101, 100), // 1 lost (epoch 0)
                (201, 100), // 2
                (101, 100), // 3 retransmission, epoch 1: lost
                (301, 100), // 4 epoch 1
                (401, 100), // 5 epoch 1: lost
                (201, 100), // 6 retransmission, epoch 2: lost
                (501, 100), // 7 epoch 2, new data: lost
                (301, 100), // 8 retransmission, epoch 3
            ],
        );
        let mut r = Reassembler::default();
        for (k, pdu) in pdus.into_iter().enumerate() {
            if [1, 3, 5, 6, 7].contains(&k) {
                continue;
            }
            for c in pdu {
                r.push(c);
            }
        }
        let c = r.counts(0);
        assert_eq!(c.pdus_lost, 5);
        assert_eq!(c.pdus_delivered, 4);
        // epochs 0, 1 and 2 each lost PDUs (2 entirely, seen only as a gap before pdu 8)
        assert_eq!(c.loss_events, 3);
    }
}
