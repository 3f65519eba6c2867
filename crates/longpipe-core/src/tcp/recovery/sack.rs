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
//! ([`super::prr`]), computed before the ACK's transmissions; the fast retransmission
//! is sent even when sndcnt is below one segment (and counts in prr_out); cwnd =
//! ssthresh when recovery ends.

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
        self.prr = tx.cfg.prr.then(|| Prr::start(tx.snd_max - tx.snd_una));
        if self.prr.is_none() {
            tx.st.cwnd = tx.st.ssthresh;
        }
        tx.in_recovery = true;
        self.rescue_done = false;
        self.high_rxt = tx.snd_una;
        cc.set_state(&mut tx.st, CaState::Recovery);
        // RFC 6937: this ACK's sndcnt is computed before anything is sent on it, the
        // fast retransmission included (which then counts in prr_out), as Linux's
        // `tcp_cwnd_reduction` and ns-3's `TcpPrrRecovery` do.
        self.prr_step(tx);
        if let Some((len, fin)) = tx.segment_at(tx.snd_una) {
            tx.emit(tx.snd_una, len, fin, out);
            self.high_rxt = tx.snd_una + len as u64 + fin as u64;
            if let Some(p) = &mut self.prr {
                p.out += len as u64 + fin as u64;
            }
        }
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

#[cfg(test)]
mod tests {
    //! Scripted ACK by ACK: what RFC 6675 (and RFC 6937 with PRR) say the sender sends
    //! in answer to each ACK. Reno growth: ssthresh = FlightSize / 2 (RFC 5681 (4)).
    use crate::tcp::script::{seq, Script, Setup, MSS};

    fn setup(iw: u64, prr: bool) -> Setup {
        Setup {
            iw,
            prr,
            ..Setup::default()
        }
    }

    #[test]
    fn one_loss_fast_retransmit_then_one_segment_per_ack_once_pipe_is_below_cwnd() {
        // Ten segments out, the first lost. Three duplicate ACKs (RFC 6675 §5 (4)):
        // ssthresh = cwnd = 10/2 segments, retransmit segment 0. pipe = the
        // retransmission + the six segments not yet SACKed = 7: nothing more until
        // step (C)'s cwnd − pipe ≥ 1 SMSS, i.e. after three more duplicate ACKs; then one
        // new segment per duplicate ACK (each takes one out of the pipe).
        let (mut sc, init) = Script::new(setup(10, false));
        assert_eq!(init, (0..10).map(|k| (k, false)).collect::<Vec<_>>());
        assert_eq!(sc.dupack(0, &[(1, 2)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 3)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 4)]), vec![(0, true)]);
        assert_eq!(sc.s.tx.st.ssthresh, 5 * MSS, "FlightSize / 2");
        assert_eq!(sc.s.tx.st.cwnd, 5 * MSS, "cwnd = ssthresh at once");
        assert!(sc.s.tx.in_recovery);
        assert_eq!(sc.dupack(0, &[(1, 5)]), vec![], "pipe 6 > cwnd − 1");
        assert_eq!(sc.dupack(0, &[(1, 6)]), vec![], "pipe 5 > cwnd − 1");
        assert_eq!(sc.dupack(0, &[(1, 7)]), vec![(10, false)], "pipe 4");
        assert_eq!(sc.dupack(0, &[(1, 8)]), vec![(11, false)]);
        assert_eq!(sc.dupack(0, &[(1, 9)]), vec![(12, false)]);
        assert_eq!(sc.dupack(0, &[(1, 10)]), vec![(13, false)]);
        // the retransmission arrives: RecoveryPoint (HighData at entry) acknowledged
        assert_eq!(sc.ack(seq(10), &[(10, 14)]), vec![(14, false)]);
        assert!(!sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.st.cwnd, 5 * MSS);
        assert_eq!(sc.s.tx.stats.fast_recoveries, 1);
        assert_eq!(sc.s.tx.stats.retransmitted_segments, 1);
    }

    #[test]
    fn one_ack_showing_the_first_segment_lost_starts_recovery_without_three_duplicates() {
        // RFC 6675 §5 (4): recovery starts on the DupThresh-th duplicate ACK *or* when
        // IsLost(HighACK + 1). Two ACKs lost: the first to arrive already SACKs three
        // segments above the hole, so the hole is lost at once.
        let (mut sc, _) = Script::new(setup(10, false));
        assert_eq!(sc.dupack(0, &[(1, 4)]), vec![(0, true)]);
        assert!(sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.st.ssthresh, 5 * MSS);
        // and not before: two SACKed segments above the hole are not enough
        let (mut sc, _) = Script::new(setup(10, false));
        assert_eq!(sc.dupack(0, &[(1, 3)]), vec![]);
        assert!(!sc.s.tx.in_recovery);
    }

    #[test]
    fn a_second_hole_is_retransmitted_once_when_it_becomes_lost() {
        // Segments 0 and 2 lost. At entry segment 2 has only two SACKed segments above
        // it (not lost: IsLost needs more than (DupThresh − 1) · SMSS); one more SACK
        // makes it lost, and NextSeg rule (1) retransmits it when pipe allows — once:
        // HighRxt moves past it, and pipe counts its retransmission.
        let (mut sc, _) = Script::new(setup(10, false));
        assert_eq!(sc.dupack(0, &[(1, 2)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 4)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 5)]), vec![(0, true)]);
        // segment 2 lost now, but pipe = 0's retransmission + 6..9 = 5 = cwnd
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 6)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 7)]), vec![(2, true)]);
        // rule (1) finds nothing above HighRxt: new data (rule (2)), one per ACK
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 8)]), vec![(10, false)]);
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 9)]), vec![(11, false)]);
        assert_eq!(sc.dupack(0, &[(1, 2), (3, 10)]), vec![(12, false)]);
        // segment 0's retransmission arrives: a partial ACK, still in recovery; pipe =
        // 2's retransmission + 10..12 = 4: one new segment
        assert_eq!(sc.ack(seq(2), &[(3, 10)]), vec![(13, false)]);
        assert!(sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.stats.fast_recoveries, 1);
        // segment 2's retransmission arrives: recovery ends with cwnd = ssthresh
        assert_eq!(sc.ack(seq(10), &[]), vec![(14, false)]);
        assert!(!sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.st.cwnd, 5 * MSS);
        assert_eq!(sc.s.tx.stats.retransmitted_segments, 2);
    }

    #[test]
    fn rule_three_resends_a_hole_not_yet_lost_then_the_rescue_goes_out() {
        // A 12-segment transfer (11999 B: the last segment and its FIN fill 1000 of
        // sequence space), all of it out; 0, 5 and 8..11 lost. At entry ssthresh = cwnd
        // = 6. The partial ACK for 0's retransmission leaves pipe = 5 + 8..11 = 5:
        // NextSeg finds no lost segment (5 has only 6 and 7 SACKed above it), no new
        // data (rule (2)), so rule (3) resends 5, the hole below the highest SACK. Its
        // ACK leaves 8..11, nothing lost and nothing SACKed: the rescue (rule (4))
        // resends the highest segment, once.
        let (mut sc, init) = Script::new(Setup {
            iw: 12,
            app_bytes: 12 * MSS - 1,
            ..Setup::default()
        });
        assert_eq!(init.len(), 12);
        assert_eq!(sc.dupack(0, &[(1, 2)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 3)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 4)]), vec![(0, true)]);
        assert_eq!(sc.s.tx.st.cwnd, 6 * MSS);
        assert_eq!(sc.dupack(0, &[(1, 5)]), vec![], "pipe 8");
        assert_eq!(sc.dupack(0, &[(1, 5), (6, 7)]), vec![], "pipe 7");
        assert_eq!(sc.dupack(0, &[(1, 5), (6, 8)]), vec![], "pipe 6");
        assert_eq!(sc.ack(seq(5), &[(6, 8)]), vec![(5, true)], "rule (3)");
        assert!(sc.s.tx.in_recovery);
        assert_eq!(sc.ack(seq(8), &[]), vec![(11, true)], "rule (4)");
        assert_eq!(sc.ack(seq(9), &[]), vec![], "one rescue per episode");
        assert_eq!(sc.s.tx.stats.retransmitted_segments, 3);
        assert_eq!(sc.s.tx.stats.fast_recoveries, 1);
    }

    #[test]
    fn rescue_retransmission_once_per_episode_when_nothing_else_may_be_sent() {
        // A 10-segment transfer, segments 0 and 9 (with the FIN) lost: segment 9 is
        // never IsLost (nothing above it), there is no new data, and no hole below the
        // highest SACK after 0: NextSeg rule (4) resends it once.
        let (mut sc, _) = Script::new(Setup {
            iw: 10,
            app_bytes: 10 * MSS,
            ..Setup::default()
        });
        sc.dupack(0, &[(1, 2)]);
        sc.dupack(0, &[(1, 3)]);
        assert_eq!(sc.dupack(0, &[(1, 4)]), vec![(0, true)]);
        assert_eq!(sc.dupack(0, &[(1, 5)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 6)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 7)]), vec![]);
        assert_eq!(sc.dupack(0, &[(1, 8)]), vec![(9, true)], "the rescue");
        assert_eq!(sc.dupack(0, &[(1, 9)]), vec![], "once per episode");
        assert_eq!(sc.ack(seq(9), &[]), vec![]);
        assert!(sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.stats.retransmitted_segments, 2);
    }

    #[test]
    fn prr_sends_one_segment_per_two_delivered_while_pipe_exceeds_ssthresh() {
        // RFC 6937 §3.1 (PRR-SSRB), 20 segments out, the first lost: RecoverFS = 20,
        // ssthresh = 10, cwnd is not cut at entry. sndcnt = ⌈prr_delivered · ssthresh /
        // RecoverFS⌉ − prr_out, prr_out counting the fast retransmission: one new
        // segment for every two delivered while pipe > ssthresh; then PRR-SSRB lets
        // pipe grow back to ssthresh; at the end cwnd = ssthresh.
        let (mut sc, init) = Script::new(setup(20, true));
        assert_eq!(init.len(), 20);
        let mut sent = vec![];
        for j in 1..=19u64 {
            let s = sc.dupack(0, &[(1, 1 + j)]);
            if j < 3 {
                assert_eq!(s, vec![]);
                continue;
            }
            if j == 3 {
                assert_eq!(s, vec![(0, true)], "the fast retransmission");
                assert_eq!(sc.s.tx.st.ssthresh, 10 * MSS);
                // before the retransmission: pipe = 4..19, sndcnt = ⌈1000 · 10 / 20⌉
                // = 500 B (less than a segment; the retransmission goes out anyway)
                assert_eq!(sc.s.tx.st.cwnd, 16 * MSS + 500, "not cut at entry");
                continue;
            }
            sent.push(s.len());
        }
        // Duplicate ACK j delivers segment j, so prr_delivered = j − 2 segments (the
        // count starts with the ACK that entered recovery) and sndcnt = ⌈(j − 2) · 500⌉
        // B − prr_out: a whole segment every second ACK (j = 6, 8, 10, 12), prr_out
        // counting the retransmission. pipe = 1 + (19 − j) + the new segments; at j =
        // 14 it reaches ssthresh (1 + 5 + 4 = 10): PRR-SSRB sends ssthresh − pipe = 0;
        // from j = 15 every delivery takes one out of the pipe and one goes out.
        assert_eq!(
            sent,
            vec![0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1],
            "segments sent per duplicate ACK 4..19"
        );
        // the retransmission arrives: everything up to HighData at entry acknowledged
        sc.ack(seq(20), &[(20, 30)]);
        assert!(!sc.s.tx.in_recovery);
        assert_eq!(sc.s.tx.st.cwnd, 10 * MSS, "cwnd = ssthresh at the end");
    }

    #[test]
    fn prr_recover_fs_is_the_flight_at_entry_not_the_sequence_numbers() {
        // RFC 6937: RecoverFS = snd.nxt − snd.una. Ten segments acknowledged first (one
        // ACK: slow start adds a segment, 11 go out), then segment 10 is lost: RecoverFS
        // = 11 segments, ssthresh = 5.5; at entry pipe = 14..20 = 7, sndcnt =
        // ⌈1000 · 5500 / 11000⌉ = 500 B: cwnd = 7.5 segments.
        let (mut sc, _) = Script::new(setup(10, true));
        let sent = sc.ack(seq(10), &[]);
        assert_eq!(sent, (10..21).map(|k| (k, false)).collect::<Vec<_>>());
        sc.dupack(10, &[(11, 12)]);
        sc.dupack(10, &[(11, 13)]);
        assert_eq!(sc.dupack(10, &[(11, 14)]), vec![(10, true)]);
        assert_eq!(sc.s.tx.st.ssthresh, 5_500);
        assert_eq!(sc.s.tx.st.cwnd, 7_500);
    }

    #[test]
    fn prr_slow_start_bound_after_heavy_loss() {
        // Half of a 20-segment window lost (0..9): pipe falls below ssthresh at once,
        // and PRR-SSRB releases the data delivered plus one segment per ACK (never more
        // than ssthresh − pipe) instead of RFC 6675's burst up to cwnd.
        let (mut sc, _) = Script::new(setup(20, true));
        assert_eq!(sc.dupack(0, &[(10, 11)]), vec![]);
        assert_eq!(sc.dupack(0, &[(10, 12)]), vec![]);
        // the third: 0..9 are lost (3 segments SACKed above them); before anything is
        // sent pipe = 13..19 = 7 < ssthresh 10; delivered 1, out 0: limit = max(1, 1)
        // + 1 = 2 = min(ssthresh − pipe, limit): the retransmission and one more
        let s = sc.dupack(0, &[(10, 13)]);
        assert_eq!(s, vec![(0, true), (1, true)]);
        assert_eq!(sc.s.tx.st.cwnd, 9 * MSS);
        // the next delivers 1: pipe = 0, 1 resent + 14..19 = 8, out = delivered = 2:
        // limit = max(0, 1) + 1 = 2: two more, as slow start would
        let s = sc.dupack(0, &[(10, 14)]);
        assert_eq!(s, vec![(2, true), (3, true)]);
        // without PRR (RFC 6675): cwnd = ssthresh = 10 at once; the burst fills it
        let (mut plain, _) = Script::new(setup(20, false));
        plain.dupack(0, &[(10, 11)]);
        plain.dupack(0, &[(10, 12)]);
        assert_eq!(
            plain.dupack(0, &[(10, 13)]),
            vec![(0, true), (1, true), (2, true)]
        );
        assert_eq!(plain.dupack(0, &[(10, 14)]), vec![(3, true)]);
    }
}
