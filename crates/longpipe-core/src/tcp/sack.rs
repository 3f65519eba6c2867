//! The sender's record of segments in flight, and SACK loss recovery (RFC 6675).
//!
//! [`Scoreboard`] lists every segment in [snd_una, snd_max) in sequence order with its
//! send time, retransmission flag (Karn) and SACKed flag (RFC 2018). With SACK it
//! answers RFC 6675's questions: IsLost, SetPipe (`pipe`) and NextSeg.
//! Invariant: segments are contiguous, ordered, and none is below snd_una.
//!
//! (Over 600 lines with its tests: the randomized tests that hold the skip structures
//! to the plain walks they replace sit beside them.)
//!
//! Scans step over SACKed runs ([`Scoreboard::next_unsacked`]), as Linux's loss
//! detection walks a list that holds no SACKed skb (`tcp_rack_detect_loss` over
//! `tsorted_sent_queue`) and its SACK tagging skips what it has tagged: without that a
//! long SACKed run after a hole (a GEO window) is walked again on every ACK. For the
//! same reason RACK walks the segments never retransmitted in sequence order
//! ([`Scoreboard::next_fresh`]) and the retransmitted ones in the order they were resent
//! ([`Scoreboard::walk_resent`]), stopping at the first resent after RACK's segment, as
//! Linux's time-sorted list lets it: in sequence order every retransmission in flight
//! is stepped over on every ACK of a long recovery.

use super::seg::SackList;
use crate::time::SimTime;
use std::collections::VecDeque;

/// The rate state of one transmission (Linux `tcp_skb_cb.tx`), stamped when it is sent
/// ([`super::rate::stamp`]) and read when it is delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateStamp {
    /// `tp->delivered` when sent.
    pub delivered: u64,
    /// `tp->delivered_mstamp` when sent.
    pub delivered_time: SimTime,
    /// `tp->first_tx_mstamp` when sent: start of the send phase.
    pub first_tx: SimTime,
    pub app_limited: bool,
    /// Not yet used for a sample (Linux clears `delivered_mstamp` once SACKed).
    pub valid: bool,
}

/// RFC 6675 DupThresh.
pub const DUP_THRESH: u64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentSeg {
    pub seq: u64,
    pub end: u64,
    pub sent_at: SimTime,
    pub retx: bool,
    pub sacked: bool,
    /// Resent by the retransmission timer (RFC 5681 (4) reduces ssthresh only for a
    /// segment not yet resent that way).
    pub timer_retx: bool,
    /// Linux stack: marked lost (`TCPCB_LOST`), and a retransmission of it is in flight
    /// (`TCPCB_SACKED_RETRANS`).
    pub lost: bool,
    pub rtx_out: bool,
    /// Delivery-rate state at its last transmission (Linux `tcp_rate_skb_sent`).
    pub rate: RateStamp,
}

impl SentSeg {
    /// Sequence space covered (payload, plus 1 for a FIN).
    pub fn seq_len(&self) -> u64 {
        self.end - self.seq
    }
}

#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    pub(super) segs: VecDeque<SentSeg>,
    /// Beside `segs`: for a SACKed segment `i`, every segment in `[i, i + skip[i])` is
    /// SACKed (`skip[i] >= 1`; kept long by path compression in `next_unsacked`).
    /// Relative, so dropping acknowledged segments off the front keeps it true; only
    /// read for SACKed segments, and set to 1 whenever one becomes SACKed (a segment
    /// stops being SACKed only in `clear_sacked`, for all at once).
    skip: VecDeque<u32>,
    /// The same over segments SACKed or retransmitted (`next_fresh`): set to 1 when a
    /// segment becomes either, reset for all in `clear_sacked`.
    skip_fresh: VecDeque<u32>,
    /// (send time, seq) of each retransmission, in the order sent (`walk_resent`). An
    /// entry is current while its segment is unacknowledged, was last sent at that
    /// time, is not SACKed and is not lost waiting to be resent; one that is not is
    /// dropped when walked (only `clear_sacked` and `unmark_lost` can make a segment
    /// current again, and they rebuild the list).
    resent: VecDeque<(SimTime, u64)>,
    /// No segment below this index is lost, unSACKed and not being retransmitted (Linux
    /// `tp->retransmit_skb_hint`): where the retransmission of lost segments starts
    /// looking. Only `mark_lost_at` makes such a segment, and lowers it.
    lost_hint: usize,
    /// The end of the highest SACKed segment, 0 if none is SACKed (Linux
    /// `tp->highest_sack`): kept, not searched for on each ACK.
    high_sacked: u64,
    /// Bytes SACKed, marked lost, and retransmitted-and-outstanding (Linux
    /// `sacked_out`, `lost_out`, `retrans_out`, in bytes); kept by every method.
    pub(super) sacked_bytes: u64,
    pub(super) lost_bytes: u64,
    pub(super) rtx_bytes: u64,
}

/// What [`Scoreboard::walk_resent`] does after a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Walk no further (the segments after it were resent later).
    Stop,
    /// Go on.
    Keep,
    /// Mark it lost and go on.
    Lost,
}

/// What NextSeg chose (RFC 6675 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Rule 1 or 3: retransmit the segment starting here.
    Retransmit(u64),
    /// Rule 2: send new data.
    NewData,
    /// Rule 4: the rescue retransmission of the segment starting here.
    Rescue(u64),
    Nothing,
}

/// The first segment at or after `i` not in a set of segments (`segs.len()` if none),
/// where `skip[k] >= 1` for a member `k` says that `[k, k + skip[k])` are all members:
/// one jump over a run most often (it was compressed before), else a chain of jumps,
/// then compressed (union-find's path compression). Members may join the set at any
/// time with `skip = 1`; one that leaves it takes every `skip` with it (reset to 1).
#[inline]
fn skip_run(
    segs: &VecDeque<SentSeg>,
    skip: &mut VecDeque<u32>,
    i: usize,
    member: impl Fn(&SentSeg) -> bool,
) -> usize {
    let n = segs.len();
    if !segs.get(i).is_some_and(&member) {
        return i.min(n);
    }
    let j = i + skip[i] as usize;
    if !segs.get(j).is_some_and(&member) {
        return j.min(n);
    }
    let mut j = i;
    while j < n && member(&segs[j]) {
        j += skip[j] as usize;
    }
    let end = j.min(n);
    let mut k = i;
    while k < end {
        let next = k + skip[k] as usize;
        skip[k] = (end - k) as u32;
        k = next;
    }
    end
}

impl Scoreboard {
    pub fn push(&mut self, seq: u64, end: u64, now: SimTime) {
        self.push_stamped(seq, end, now, RateStamp::default());
    }

    /// A new segment with its delivery-rate stamp.
    pub fn push_stamped(&mut self, seq: u64, end: u64, now: SimTime, rate: RateStamp) {
        debug_assert!(self.segs.back().is_none_or(|s| s.end == seq));
        self.segs.push_back(SentSeg {
            seq,
            end,
            sent_at: now,
            retx: false,
            sacked: false,
            timer_retx: false,
            lost: false,
            rtx_out: false,
            rate,
        });
        self.skip.push_back(1);
        self.skip_fresh.push_back(1);
    }

    fn index(&self, seq: u64) -> Option<usize> {
        let i = self.segs.partition_point(|s| s.seq < seq);
        (self.segs.get(i)?.seq == seq).then_some(i)
    }

    pub fn get(&self, seq: u64) -> Option<&SentSeg> {
        self.index(seq).map(|i| &self.segs[i])
    }

    /// The most recently sent new segment still unacknowledged.
    pub fn last(&self) -> Option<&SentSeg> {
        self.segs.back()
    }

    /// Records a retransmission of the segment starting at `seq`.
    pub fn mark_retransmitted(&mut self, seq: u64, now: SimTime) {
        self.mark_retransmitted_stamped(seq, now, None);
    }

    /// Records a retransmission, with a new delivery-rate stamp if given.
    pub fn mark_retransmitted_stamped(&mut self, seq: u64, now: SimTime, rate: Option<RateStamp>) {
        if let Some(i) = self.index(seq) {
            let s = &mut self.segs[i];
            let again = s.retx && s.sent_at == now; // one entry per (time, segment)
            if !s.retx && !s.sacked {
                self.skip_fresh[i] = 1;
            }
            s.retx = true;
            s.sent_at = now;
            if !again {
                self.note_resent(now, seq);
            }
            let s = &mut self.segs[i];
            if let Some(r) = rate {
                s.rate = r;
            }
            if !s.rtx_out && !s.sacked {
                s.rtx_out = true;
                self.rtx_bytes += s.seq_len();
            }
        }
    }

    /// Records that the retransmission timer resent the segment starting at `seq`.
    pub fn mark_timer_retx(&mut self, seq: u64) {
        if let Some(i) = self.index(seq) {
            self.segs[i].timer_retx = true;
        }
    }

    /// Drops segments covered by the cumulative ACK. Returns the newest one removed and
    /// whether any removed segment had been retransmitted (which makes the ACK ambiguous
    /// for RTT measurement: Karn's rule, as Linux's FLAG_RETRANS_DATA_ACKED).
    pub fn ack_to(&mut self, ack: u64) -> (Option<SentSeg>, bool) {
        let mut newest = None;
        let mut any_retx = false;
        self.ack_to_with(ack, |s| {
            any_retx |= s.retx;
            newest = Some(*s);
        });
        (newest, any_retx)
    }

    /// Drops segments covered by the cumulative ACK, calling `f` on each first.
    pub fn ack_to_with(&mut self, ack: u64, mut f: impl FnMut(&SentSeg)) {
        while let Some(s) = self.segs.front() {
            if s.end > ack {
                break;
            }
            f(s);
            let s = self.segs.pop_front().expect("front");
            self.skip.pop_front();
            self.skip_fresh.pop_front();
            self.lost_hint = self.lost_hint.saturating_sub(1);
            self.forget(&s);
        }
        if self.high_sacked <= ack {
            self.high_sacked = 0; // every SACKed segment was below the ACK
        }
    }

    /// Takes a segment's flags out of the counters.
    fn forget(&mut self, s: &SentSeg) {
        let n = s.seq_len();
        if s.sacked {
            self.sacked_bytes -= n;
        }
        if s.lost {
            self.lost_bytes -= n;
        }
        if s.rtx_out {
            self.rtx_bytes -= n;
        }
    }

    /// Marks segments wholly inside a SACK block; returns the bytes newly SACKed.
    pub fn mark_sacked(&mut self, blocks: &SackList) -> u64 {
        let mut newly = 0;
        for &(l, r) in &blocks.blocks[..blocks.n as usize] {
            newly += self.sack_block_with(l, r, |_| {});
        }
        newly
    }

    /// Marks the segments wholly inside [l, r) SACKed, calling `f` on each newly SACKed
    /// one (before its flags change); returns the bytes newly SACKed. A SACKed segment
    /// is no longer lost nor a retransmission in flight.
    pub fn sack_block_with(&mut self, l: u64, r: u64, mut f: impl FnMut(&SentSeg)) -> u64 {
        let mut newly = 0;
        let mut i = self.segs.partition_point(|s| s.seq < l);
        while let Some(s) = self.segs.get_mut(i) {
            if s.end > r {
                break;
            }
            if s.sacked {
                // nothing to do for the run: step over it (a segment past `r` in it
                // would have ended the loop; the one after it ends it as well)
                i = self.next_unsacked(i);
                continue;
            }
            f(s);
            let n = s.seq_len();
            s.sacked = true;
            s.rate.valid = false; // its delivery is counted now, not again at the ACK
            newly += n;
            self.sacked_bytes += n;
            if s.lost {
                s.lost = false;
                self.lost_bytes -= n;
            }
            if s.rtx_out {
                s.rtx_out = false;
                self.rtx_bytes -= n;
            }
            self.skip[i] = 1;
            if !s.retx {
                self.skip_fresh[i] = 1;
            }
            self.high_sacked = self.high_sacked.max(s.end);
            i += 1;
        }
        newly
    }

    /// Records a retransmission in `resent`; drops the entries that can never be
    /// current again (acknowledged, or resent since) once they outnumber the segments,
    /// so a flow whose engine never walks the list keeps it bounded.
    fn note_resent(&mut self, t: SimTime, seq: u64) {
        self.resent.push_back((t, seq));
        if self.resent.len() > 2 * self.segs.len() + 64 {
            let segs = &self.segs;
            self.resent.retain(|&(t, seq)| {
                let i = segs.partition_point(|s| s.seq < seq);
                segs.get(i).is_some_and(|s| s.seq == seq && s.sent_at == t)
            });
        }
    }

    /// `resent` from the segments: every retransmitted one, by send time.
    fn rebuild_resent(&mut self) {
        let mut v: Vec<(SimTime, u64)> = (self.segs.iter().filter(|s| s.retx))
            .map(|s| (s.sent_at, s.seq))
            .collect();
        v.sort_unstable();
        self.resent = v.into();
    }

    /// Walks the current retransmissions in the order they were sent, handing each
    /// segment to `visit` until it says [`Visit::Stop`]; marks lost those it says
    /// [`Visit::Lost`] of (`mark_lost_at`) and returns the bytes newly lost. Entries
    /// found not current on the way are dropped.
    pub fn walk_resent(&mut self, mut visit: impl FnMut(&SentSeg) -> Visit) -> u64 {
        let mut lost = 0;
        let (mut r, mut w) = (0, 0);
        while let Some(&(t, seq)) = self.resent.get(r) {
            let current = self.index(seq).filter(|&i| {
                let s = &self.segs[i];
                s.sent_at == t && !s.sacked && (!s.lost || s.rtx_out)
            });
            let Some(i) = current else {
                r += 1;
                continue;
            };
            match visit(&self.segs[i]) {
                Visit::Stop => break,
                Visit::Keep => {}
                Visit::Lost => lost += self.mark_lost_at(i),
            }
            self.resent[w] = (t, seq);
            w += 1;
            r += 1;
        }
        if w < r {
            self.resent.drain(w..r);
        }
        lost
    }

    /// The first segment at or after `i` neither SACKed nor retransmitted (`len()` if
    /// none), as [`Scoreboard::next_unsacked`] over `skip_fresh`.
    #[inline]
    pub fn next_fresh(&mut self, i: usize) -> usize {
        skip_run(&self.segs, &mut self.skip_fresh, i, |s| s.sacked || s.retx)
    }

    /// The end of the highest SACKed segment; 0 if none is SACKed.
    pub fn high_sacked(&self) -> u64 {
        self.high_sacked
    }

    /// The first segment at or after `i` that is not SACKed (`len()` if none): one step
    /// over each SACKed run, amortised (union-find's path compression on `skip`).
    #[inline]
    pub fn next_unsacked(&mut self, i: usize) -> usize {
        skip_run(&self.segs, &mut self.skip, i, |s| s.sacked)
    }

    /// RFC 2018 §8 / RFC 6675 §5.1: after an RTO, forget SACK information (the receiver
    /// may have reneged).
    pub fn clear_sacked(&mut self) {
        for s in &mut self.segs {
            s.sacked = false;
        }
        self.sacked_bytes = 0;
        self.high_sacked = 0;
        self.skip_fresh.iter_mut().for_each(|k| *k = 1);
        self.rebuild_resent();
    }

    /// Linux `tcp_mark_skb_lost` for segment `i`: a retransmission of a lost segment
    /// is lost again (no longer in flight); otherwise the segment becomes lost. Returns
    /// the bytes that count as newly lost (`tp->lost`).
    pub fn mark_lost_at(&mut self, i: usize) -> u64 {
        let s = &mut self.segs[i];
        let n = s.seq_len();
        if s.sacked {
            return 0;
        }
        if s.lost {
            if s.rtx_out {
                s.rtx_out = false;
                self.rtx_bytes -= n;
                self.lost_hint = self.lost_hint.min(i);
                return n;
            }
            0
        } else {
            s.lost = true;
            self.lost_bytes += n;
            if !s.rtx_out {
                self.lost_hint = self.lost_hint.min(i);
            }
            n
        }
    }

    /// No segment below index `lost_hint()` is lost, unSACKed and not being
    /// retransmitted.
    pub fn lost_hint(&self) -> usize {
        self.lost_hint
    }

    /// Raises the hint to `i`: the caller found no such segment below `i`.
    pub fn set_lost_hint(&mut self, i: usize) {
        debug_assert!((self.lost_hint..i).all(|j| {
            let s = &self.segs[j];
            !s.lost || s.sacked || s.rtx_out
        }));
        self.lost_hint = i;
    }

    /// Linux stack: forgets every loss mark (an undo: `tcp_undo_cwnd_reduction` with
    /// `unmark_loss`).
    pub fn unmark_lost(&mut self) {
        for s in &mut self.segs {
            s.lost = false;
        }
        self.lost_bytes = 0;
        self.rebuild_resent();
    }

    /// The segments, in sequence order.
    pub fn segs(&self) -> &VecDeque<SentSeg> {
        &self.segs
    }

    pub fn any_sacked(&self) -> bool {
        self.segs.iter().any(|s| s.sacked)
    }

    /// RFC 6675 IsLost for every segment, in one backward pass: a segment is lost when
    /// DupThresh discontiguous SACKed runs lie above it, or more than
    /// (DupThresh − 1) · SMSS SACKed bytes do. SACKed segments are never lost.
    pub fn lost_flags(&self, smss: u64) -> Vec<bool> {
        let mut out = vec![false; self.segs.len()];
        let mut sacked_bytes = 0u64;
        let mut runs = 0u64;
        let mut in_run = false;
        for (i, s) in self.segs.iter().enumerate().rev() {
            if s.sacked {
                sacked_bytes += s.seq_len();
                if !in_run {
                    runs += 1;
                    in_run = true;
                }
            } else {
                in_run = false;
                out[i] = runs >= DUP_THRESH || sacked_bytes > (DUP_THRESH - 1) * smss;
            }
        }
        out
    }

    /// IsLost(first unacknowledged segment).
    pub fn first_is_lost(&self, smss: u64) -> bool {
        self.lost_flags(smss).first().copied().unwrap_or(false)
    }

    /// RFC 6675 SetPipe: bytes believed in the network.
    pub fn pipe(&self, smss: u64, high_rxt: u64) -> u64 {
        let lost = self.lost_flags(smss);
        let mut pipe = 0;
        for (s, l) in self.segs.iter().zip(lost) {
            if s.sacked {
                continue;
            }
            if !l {
                pipe += s.seq_len();
            }
            if s.seq < high_rxt {
                pipe += s.seq_len();
            }
        }
        pipe
    }

    /// RFC 6675 NextSeg. `high_rxt` is the end of the highest retransmitted segment of
    /// this recovery, `new_data` whether rule 2 may send new data, `rescue_done` whether
    /// this episode's rescue retransmission was already sent.
    pub fn next_seg(&self, smss: u64, high_rxt: u64, new_data: bool, rescue_done: bool) -> Next {
        let lost = self.lost_flags(smss);
        let high_sacked = self
            .segs
            .iter()
            .rev()
            .find(|s| s.sacked)
            .map(|s| s.end)
            .unwrap_or(0);
        // Rule 1: the lowest lost, un-SACKed segment above HighRxt.
        for (s, l) in self.segs.iter().zip(&lost) {
            if !s.sacked && s.seq >= high_rxt && s.seq < high_sacked && *l {
                return Next::Retransmit(s.seq);
            }
        }
        // Rule 2: new data.
        if new_data {
            return Next::NewData;
        }
        // Rule 3: an un-SACKed hole below the highest SACKed byte, not (yet) lost.
        for s in &self.segs {
            if !s.sacked && s.seq >= high_rxt && s.seq < high_sacked {
                return Next::Retransmit(s.seq);
            }
        }
        // Rule 4: one rescue retransmission of the highest un-SACKed segment.
        if !rescue_done {
            if let Some(s) = self.segs.iter().rev().find(|s| !s.sacked) {
                return Next::Rescue(s.seq);
            }
        }
        Next::Nothing
    }

    pub fn len(&self) -> usize {
        self.segs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten 100-byte segments from seq 1.
    fn board() -> Scoreboard {
        let mut b = Scoreboard::default();
        for k in 0..10u64 {
            b.push(1 + 100 * k, 101 + 100 * k, SimTime(k));
        }
        b
    }

    fn sack(blocks: &[(u64, u64)]) -> SackList {
        let mut s = SackList {
            n: blocks.len() as u8,
            ..Default::default()
        };
        s.blocks[..blocks.len()].copy_from_slice(blocks);
        s
    }

    #[test]
    fn is_lost_by_bytes_and_by_runs() {
        let mut b = board();
        // segments 2 and 3 SACKed (200 B <= 2*SMSS): nothing lost yet
        assert_eq!(b.mark_sacked(&sack(&[(201, 401)])), 200);
        assert!(!b.first_is_lost(100));
        // a third SACKed segment: 300 B > 2 SMSS -> segments 0 and 1 are lost
        b.mark_sacked(&sack(&[(401, 501)]));
        let l = b.lost_flags(100);
        assert_eq!(&l[..2], &[true, true]);
        assert!(!l[5]);
        // three discontiguous runs above a segment, even with large SMSS
        let mut b = board();
        b.mark_sacked(&sack(&[(101, 201), (301, 401), (501, 601)]));
        let l = b.lost_flags(1000);
        assert!(l[0] && !l[2]);
    }

    #[test]
    fn pipe_and_next_seg() {
        let mut b = board();
        b.mark_sacked(&sack(&[(301, 601)])); // 3 segments SACKed above holes 0..2
                                             // holes 0, 1, 2 lost (300 B SACKed above); 6..9 outstanding, not lost
        assert_eq!(b.pipe(100, 0), 400);
        assert_eq!(b.next_seg(100, 0, true, false), Next::Retransmit(1));
        // after retransmitting segment 0 (HighRxt = 101): pipe counts it again
        assert_eq!(b.pipe(100, 101), 500);
        assert_eq!(b.next_seg(100, 101, true, false), Next::Retransmit(101));
        // all holes retransmitted: new data (rule 2), or rule 3 / rescue without it
        assert_eq!(b.next_seg(100, 301, true, false), Next::NewData);
        assert_eq!(b.next_seg(100, 301, false, false), Next::Rescue(901));
        assert_eq!(b.next_seg(100, 301, false, true), Next::Nothing);
        // rule 3: a hole not yet lost
        let mut b = board();
        b.mark_sacked(&sack(&[(201, 301)]));
        assert_eq!(b.next_seg(100, 0, false, false), Next::Retransmit(1));
    }

    #[test]
    fn ack_clears_and_reneging_reset() {
        let mut b = board();
        b.mark_sacked(&sack(&[(501, 701)]));
        assert_eq!(
            b.ack_to(301),
            (
                Some(SentSeg {
                    seq: 201,
                    end: 301,
                    sent_at: SimTime(2),
                    retx: false,
                    sacked: false,
                    timer_retx: false,
                    lost: false,
                    rtx_out: false,
                    rate: RateStamp::default(),
                }),
                false
            )
        );
        assert_eq!(b.len(), 7);
        assert!(b.any_sacked());
        b.clear_sacked();
        assert!(!b.any_sacked());
        b.mark_retransmitted(301, SimTime(99));
        assert!(b.get(301).unwrap().retx);
        assert!(
            b.ack_to(501).1,
            "an ACK covering a retransmission is ambiguous"
        );
    }

    /// `sack_block_with` without the skip structure: the plain walk it replaced.
    fn sack_block_plain(b: &mut Scoreboard, l: u64, r: u64) -> u64 {
        let mut newly = 0;
        let i0 = b.segs.partition_point(|s| s.seq < l);
        for i in i0..b.segs.len() {
            let s = b.segs[i];
            if s.end > r {
                break;
            }
            if !s.sacked {
                let n = s.seq_len();
                let s = &mut b.segs[i];
                s.sacked = true;
                s.rate.valid = false;
                newly += n;
                b.sacked_bytes += n;
                if s.lost {
                    s.lost = false;
                    b.lost_bytes -= n;
                }
                if s.rtx_out {
                    s.rtx_out = false;
                    b.rtx_bytes -= n;
                }
            }
        }
        newly
    }

    #[test]
    fn stepping_over_sacked_runs_matches_the_plain_walk() {
        // Random sends, SACK blocks, cumulative ACKs, retransmissions, loss marks and
        // SACK clearing, applied to a board that steps over SACKed runs and to a copy
        // walked plainly: same flags and counters, and next_unsacked is the first
        // segment at or after i that is not SACKed, from every i.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        let (mut fast, mut plain) = (Scoreboard::default(), Scoreboard::default());
        let (mut next_seq, mut una) = (1u64, 1u64);
        for step in 0..20_000u64 {
            match rnd(100) {
                0..=29 => {
                    for _ in 0..1 + rnd(8) {
                        fast.push(next_seq, next_seq + 100, SimTime(step));
                        plain.push(next_seq, next_seq + 100, SimTime(step));
                        next_seq += 100;
                    }
                }
                30..=69 if next_seq > una => {
                    let span = (next_seq - una) / 100;
                    let a = una + 100 * rnd(span);
                    let b = (a + 100 * (1 + rnd(12))).min(next_seq);
                    assert_eq!(
                        fast.sack_block_with(a, b, |_| {}),
                        sack_block_plain(&mut plain, a, b)
                    );
                }
                70..=79 if next_seq > una => {
                    una += 100 * rnd((next_seq - una) / 100 + 1);
                    fast.ack_to(una);
                    plain.ack_to(una);
                }
                80..=87 if !fast.is_empty() => {
                    let i = rnd(fast.len() as u64) as usize;
                    let seq = fast.segs[i].seq;
                    fast.mark_retransmitted(seq, SimTime(step));
                    plain.mark_retransmitted(seq, SimTime(step));
                }
                88..=97 if !fast.is_empty() => {
                    let i = rnd(fast.len() as u64) as usize;
                    assert_eq!(fast.mark_lost_at(i), plain.mark_lost_at(i));
                }
                98 => {
                    fast.clear_sacked();
                    plain.clear_sacked();
                }
                _ => {}
            }
            assert_eq!(fast.segs, plain.segs);
            let hint = fast.lost_hint().min(fast.len());
            assert!(
                fast.segs
                    .iter()
                    .take(hint)
                    .all(|s| !s.lost || s.sacked || s.rtx_out),
                "step {step}: a lost segment to resend below the hint"
            );
            if rnd(4) == 0 {
                // what retransmit_lost does: scan from the hint, raise it to the first found
                let first = (hint..fast.len())
                    .find(|&j| fast.segs[j].lost && !fast.segs[j].sacked && !fast.segs[j].rtx_out)
                    .unwrap_or(fast.len());
                fast.set_lost_hint(first);
            }
            let high = plain
                .segs
                .iter()
                .rev()
                .find(|s| s.sacked)
                .map_or(0, |s| s.end);
            assert_eq!(fast.high_sacked(), high, "step {step}");
            assert_eq!(
                (fast.sacked_bytes, fast.lost_bytes, fast.rtx_bytes),
                (plain.sacked_bytes, plain.lost_bytes, plain.rtx_bytes)
            );
            if step % 7 == 0 {
                for i in 0..=fast.len() {
                    let want = (i..plain.len())
                        .find(|&j| !plain.segs[j].sacked)
                        .unwrap_or(plain.len());
                    assert_eq!(fast.next_unsacked(i), want, "step {step}, from {i}");
                }
            }
        }
    }
}
