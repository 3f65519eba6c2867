//! RACK: time-based loss detection (RFC 8985 §6, as Linux `net/ipv4/tcp_recovery.c`,
//! Linux 6.x).
//!
//! RACK remembers the most recently *sent* segment that has been delivered (ACKed or
//! SACKed): its send time `xmit_ts`, end sequence and RTT. A segment sent before it
//! and still undelivered is lost once `RACK.rtt + reo_wnd` has passed since it was
//! sent; a later deadline arms the reordering timer. The reordering window is
//! min(min_rtt/4 · steps, SRTT), or 0 while no reordering has been seen and either
//! recovery is under way or DupThresh (3) segments are SACKed (Linux keeps the classic
//! DupThresh trigger this way). D-SACKs widen it by one step (at most once per round
//! trip), kept for 16 recoveries (`reo_wnd_persist`).

use crate::tcp::sack::{Scoreboard, SentSeg, Visit};
use crate::time::{SimDuration, SimTime};

/// Recoveries a widened reordering window persists for (`TCP_RACK_RECOVERY_THRESH`).
pub const RECOVERY_THRESH: u32 = 16;

#[derive(Debug, Clone)]
pub struct Rack {
    /// Send time and end of the most recently sent delivered segment.
    pub xmit_ts: SimTime,
    pub end_seq: u64,
    /// RTT of that segment's delivery.
    pub rtt: SimDuration,
    /// A delivery advanced RACK since the last loss check.
    pub advanced: bool,
    /// Reordering seen on this connection (`tp->reord_seen`).
    pub reord_seen: bool,
    pub reo_wnd_steps: u32,
    pub reo_wnd_persist: u32,
    pub dsack_seen: bool,
    /// `delivered` when the window was last widened.
    last_delivered: u64,
    /// The reordering timer.
    pub reo_deadline: Option<SimTime>,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit_ts: SimTime::ZERO,
            end_seq: 0,
            rtt: SimDuration::ZERO,
            advanced: false,
            reord_seen: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
            reo_deadline: None,
        }
    }
}

/// `tcp_rack_sent_after`
fn sent_after(t1: SimTime, t2: SimTime, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// `tcp_rack_advance`: segment `s` was delivered at `now`. A retransmitted segment
    /// delivered faster than the minimum RTT is ambiguous (the original may have been
    /// delivered): ignored.
    pub fn advance(&mut self, s: &SentSeg, now: SimTime, min_rtt: Option<SimDuration>) {
        let rtt = now - s.sent_at;
        if s.retx && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(s.sent_at, self.xmit_ts, s.end, self.end_seq) {
            self.xmit_ts = s.sent_at;
            self.end_seq = s.end;
        }
    }

    /// `tcp_rack_reo_wnd`: `recovering` when in Recovery or Loss, `sacked_segs` SACKed
    /// segments, `reordering` the DupThresh in segments.
    pub fn reo_wnd(
        &self,
        recovering: bool,
        sacked_segs: u64,
        reordering: u64,
        min_rtt: Option<SimDuration>,
        srtt: Option<SimDuration>,
    ) -> SimDuration {
        if !self.reord_seen && (recovering || sacked_segs >= reordering) {
            return SimDuration::ZERO;
        }
        let base = min_rtt.map_or(0, |m| m.0 / 4) * self.reo_wnd_steps as u64;
        SimDuration(base.min(srtt.map_or(u64::MAX, |s| s.0)))
    }

    /// `tcp_rack_detect_loss`: marks lost every undelivered segment sent before RACK's
    /// segment whose RTT plus the reordering window has passed; returns the bytes newly
    /// lost and sets the reordering timer for the others.
    pub fn detect_loss(
        &mut self,
        board: &mut Scoreboard,
        now: SimTime,
        reo_wnd: SimDuration,
    ) -> u64 {
        let mut lost = 0;
        let mut wait = SimDuration::ZERO;
        let (xmit_ts, end_seq, rtt) = (self.xmit_ts, self.end_seq, self.rtt);
        // The segments never retransmitted, in sequence order (their send order), up to
        // the first one sent after RACK's.
        let mut i = 0;
        loop {
            i = board.next_fresh(i);
            let Some(s) = board.segs().get(i) else { break };
            i += 1;
            if s.lost {
                continue; // lost and not yet retransmitted
            }
            if !sent_after(xmit_ts, s.sent_at, end_seq, s.end) {
                break; // everything after it was sent later still
            }
            let deadline = s.sent_at + rtt + reo_wnd;
            if deadline <= now {
                lost += board.mark_lost_at(i - 1);
            } else {
                wait = wait.max(deadline - now);
            }
        }
        // The retransmitted ones, in the order they were resent, up to the first resent
        // after RACK's segment (as Linux walks its time-sorted list). The walk in
        // sequence order stopped at that first segment, but it skipped no resent one
        // sent before RACK's: one above it was first sent after it, so resent later
        // still.
        lost += board.walk_resent(|s| {
            if !sent_after(xmit_ts, s.sent_at, end_seq, s.end) {
                return if s.sent_at > xmit_ts {
                    Visit::Stop
                } else {
                    Visit::Keep // at RACK's instant, above its sequence
                };
            }
            let deadline = s.sent_at + rtt + reo_wnd;
            if deadline <= now {
                Visit::Lost
            } else {
                wait = wait.max(deadline - now);
                Visit::Keep
            }
        });
        self.reo_deadline = (wait > SimDuration::ZERO).then(|| now + wait);
        lost
    }

    /// `tcp_rack_mark_lost`: runs the detection if a delivery advanced RACK.
    pub fn mark_lost(&mut self, board: &mut Scoreboard, now: SimTime, reo_wnd: SimDuration) -> u64 {
        if !self.advanced {
            return 0;
        }
        self.advanced = false;
        self.detect_loss(board, now, reo_wnd)
    }

    /// `tcp_rack_update_reo_wnd`: a D-SACK widens the window by one step (at most once
    /// per round trip: `prior_delivered` of this ACK's sample must have passed the last
    /// widening); without D-SACKs it returns to one step once the persistence is used up.
    pub fn update_reo_wnd(&mut self, prior_delivered: u64, delivered: u64) {
        if prior_delivered == 0 {
            return;
        }
        if prior_delivered < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xff);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Ten 1000-B segments sent 1 ms apart from t = 0.
    fn board() -> Scoreboard {
        let mut b = Scoreboard::default();
        for k in 0..10u64 {
            b.push(1 + 1000 * k, 1001 + 1000 * k, SimTime(k * MS));
        }
        b
    }

    fn sack(b: &mut Scoreboard, r: &mut Rack, l: u64, rt: u64, now: SimTime) {
        b.sack_block_with(l, rt, |s| r.advance(s, now, Some(SimDuration(100 * MS))));
    }

    #[test]
    fn lost_once_rtt_plus_reo_wnd_has_passed() {
        // RFC 8985 §6.2 example: segment 1 (sent at 0) missing, segment 2 (sent at
        // 1 ms) SACKed at 101 ms: RACK.rtt = 100 ms. With a reordering window of 25 ms,
        // segment 1 is lost at 0 + 100 + 25 = 125 ms.
        let mut b = board();
        let mut r = Rack::default();
        let now = SimTime(101 * MS);
        sack(&mut b, &mut r, 1001, 2001, now);
        assert_eq!((r.xmit_ts, r.rtt), (SimTime(MS), SimDuration(100 * MS)));
        let reo = SimDuration(25 * MS);
        assert_eq!(r.mark_lost(&mut b, now, reo), 0);
        assert_eq!(r.reo_deadline, Some(SimTime(125 * MS)));
        assert_eq!(r.detect_loss(&mut b, SimTime(125 * MS), reo), 1000);
        assert!(b.segs()[0].lost);
        assert!(!b.segs()[2].lost, "sent after RACK's segment: not judged");
        assert_eq!(r.reo_deadline, None);
    }

    #[test]
    fn reordering_window_rules() {
        let mut r = Rack::default();
        let min = Some(SimDuration(100 * MS));
        let srtt = Some(SimDuration(120 * MS));
        // no reordering seen: 0 in recovery or with DupThresh segments SACKed
        assert_eq!(r.reo_wnd(true, 0, 3, min, srtt), SimDuration::ZERO);
        assert_eq!(r.reo_wnd(false, 3, 3, min, srtt), SimDuration::ZERO);
        assert_eq!(r.reo_wnd(false, 2, 3, min, srtt), SimDuration(25 * MS));
        r.reord_seen = true;
        assert_eq!(r.reo_wnd(true, 9, 3, min, srtt), SimDuration(25 * MS));
        // D-SACKs widen it by min_rtt/4 per step, capped at SRTT
        r.dsack_seen = true;
        r.update_reo_wnd(5000, 9000);
        assert_eq!(r.reo_wnd_steps, 2);
        assert_eq!(r.reo_wnd(true, 9, 3, min, srtt), SimDuration(50 * MS));
        r.reo_wnd_steps = 10;
        assert_eq!(r.reo_wnd(true, 9, 3, min, srtt), SimDuration(120 * MS));
        // a D-SACK within the same round trip does not widen it again
        r.reo_wnd_steps = 2;
        r.dsack_seen = true;
        r.update_reo_wnd(8000, 9500);
        assert_eq!(r.reo_wnd_steps, 2);
        // without D-SACKs it falls back to one step once persistence is used up
        r.reo_wnd_persist = 0;
        r.update_reo_wnd(10_000, 11_000);
        assert_eq!(r.reo_wnd_steps, 1);
    }

    #[test]
    fn fast_delivery_of_a_retransmission_is_ambiguous() {
        let mut b = board();
        b.mark_retransmitted(1, SimTime(150 * MS));
        let mut r = Rack::default();
        // SACKed 30 ms after the retransmission: faster than min RTT, ignored
        sack(&mut b, &mut r, 1, 1001, SimTime(180 * MS));
        assert!(!r.advanced);
    }

    #[test]
    fn lost_retransmission_is_detected_too() {
        // segment 1 lost and retransmitted at 50 ms; segment 2, sent at 60 ms, is
        // SACKed at 160 ms (RACK.rtt 100 ms): the retransmission, sent before it, is
        // lost since 50 + 100 ms with a zero reordering window.
        let mut b = Scoreboard::default();
        b.push(1, 1001, SimTime(0));
        b.push(1001, 2001, SimTime(60 * MS));
        b.mark_lost_at(0);
        b.mark_retransmitted(1, SimTime(50 * MS));
        let mut r = Rack::default();
        sack(&mut b, &mut r, 1001, 2001, SimTime(160 * MS));
        assert_eq!(
            r.mark_lost(&mut b, SimTime(160 * MS), SimDuration::ZERO),
            1000
        );
        assert!(b.segs()[0].lost && !b.segs()[0].rtx_out);
    }

    /// `detect_loss` as it was before it stepped over SACKed runs.
    fn detect_loss_plain(
        r: &mut Rack,
        board: &mut Scoreboard,
        now: SimTime,
        reo_wnd: SimDuration,
    ) -> u64 {
        let mut lost = 0;
        let mut wait = SimDuration::ZERO;
        for i in 0..board.segs().len() {
            let s = board.segs()[i];
            if s.sacked || (s.lost && !s.rtx_out) {
                continue;
            }
            if !sent_after(r.xmit_ts, s.sent_at, r.end_seq, s.end) {
                if !s.retx {
                    break;
                }
                continue;
            }
            let deadline = s.sent_at + r.rtt + reo_wnd;
            if deadline <= now {
                lost += board.mark_lost_at(i);
            } else {
                wait = wait.max(deadline - now);
            }
        }
        r.reo_deadline = (wait > SimDuration::ZERO).then(|| now + wait);
        lost
    }

    #[test]
    fn detection_over_sacked_runs_matches_the_plain_walk() {
        // Random sends, retransmissions (several at one instant too) and SACKs (RACK
        // advanced by each newly SACKed segment), ACKs, RTOs' SACK clearing, undos and
        // loss marks: the detection stepping over SACKed runs and walking the
        // retransmissions in send order marks exactly what the plain walk in sequence
        // order marks, with the same timer.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        let (mut fb, mut pb) = (Scoreboard::default(), Scoreboard::default());
        let (mut fr, mut pr) = (Rack::default(), Rack::default());
        let (mut next_seq, mut una, mut now) = (1u64, 1u64, 0u64);
        for _ in 0..100_000 {
            now += rnd(3) * MS;
            let t = SimTime(now);
            match rnd(10) {
                0..=2 => {
                    for _ in 0..1 + rnd(6) {
                        fb.push(next_seq, next_seq + 1000, t);
                        pb.push(next_seq, next_seq + 1000, t);
                        next_seq += 1000;
                    }
                }
                3..=5 if next_seq > una => {
                    let span = (next_seq - una) / 1000;
                    let a = una + 1000 * rnd(span);
                    let b = (a + 1000 * (1 + rnd(10))).min(next_seq);
                    let rtt = Some(SimDuration(100 * MS));
                    fb.sack_block_with(a, b, |s| fr.advance(s, t, rtt));
                    pb.sack_block_with(a, b, |s| pr.advance(s, t, rtt));
                }
                6 if next_seq > una => {
                    una += 1000 * rnd((next_seq - una) / 1000 / 4 + 1);
                    fb.ack_to(una);
                    pb.ack_to(una);
                }
                7 if !fb.is_empty() => {
                    let i = rnd(fb.len() as u64) as usize;
                    let seq = fb.segs()[i].seq;
                    fb.mark_retransmitted(seq, t);
                    pb.mark_retransmitted(seq, t);
                }
                8 if rnd(20) == 0 => {
                    fb.clear_sacked();
                    pb.clear_sacked();
                }
                8 if rnd(20) == 0 => {
                    fb.unmark_lost();
                    pb.unmark_lost();
                }
                9 if !fb.is_empty() => {
                    let i = rnd(fb.len() as u64) as usize;
                    assert_eq!(fb.mark_lost_at(i), pb.mark_lost_at(i));
                }
                _ => {}
            }
            let reo = SimDuration(rnd(30) * MS);
            assert_eq!(
                fr.detect_loss(&mut fb, t, reo),
                detect_loss_plain(&mut pr, &mut pb, t, reo)
            );
            assert_eq!(fr.reo_deadline, pr.reo_deadline);
            assert_eq!(fb.segs(), pb.segs());
        }
    }
}
