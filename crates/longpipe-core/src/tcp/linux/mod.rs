//! The Linux engine: the Linux stack's ACK processing, transmission and loss recovery
//! (`tcp_ack`, `tcp_fastretrans_alert`, `tcp_enter_loss` in `net/ipv4/tcp_input.c`,
//! `tcp_write_xmit` and `tcp_xmit_retransmit_queue` in `tcp_output.c`, Linux 6.x), the
//! sender engine of `stack = "linux"` when SACK is negotiated (without SACK the Linux
//! profile runs the classic engine with NewReno's recovery: [`super::classic`]).
//!
//! The engine decides every ACK ([`Linux::on_ack`]), every transmission
//! ([`Linux::send`]), its own timers (RACK's reordering window, the tail loss probe:
//! [`Linux::next_timer`], [`Linux::on_timer`]) and the retransmission timeout
//! ([`Linux::on_rto`]); it shares [`Tx`] (state, scoreboard, RTT, transmission) with the
//! classic engine. Files: `ack.rs` (tagging the scoreboard), `xmit.rs` (transmission and
//! the loss probe), `rack.rs` (RFC 8985 RACK), `tlp.rs` (tail loss probe); PRR is shared
//! with the classic engine ([`crate::tcp::recovery::prr`]).
//!
//! Congestion states (`tcp_ca_state`): Open, CWR (a reduction without recovery), Recovery
//! (fast recovery) and Loss (after an RTO). On every ACK:
//! 1. the scoreboard is tagged with SACK blocks (D-SACKs recognised, RFC 2883) and the
//!    cumulative ACK; each newly delivered segment advances RACK and the delivery-rate
//!    sample ([`super::rack`], [`crate::tcp::rate`]); the RTT is measured Linux's way
//!    (the oldest newly acknowledged segment if none was retransmitted, else a SACKed
//!    one, else the timestamp echo);
//! 2. a tail loss probe's outcome is processed ([`super::tlp`]);
//! 3. the state machine runs: undo of a spurious reduction (all retransmissions
//!    D-SACKed, or the timestamp echo shows the original arrived: `tcp_may_undo`), exit
//!    of recovery once everything outstanding at its start is acknowledged, RACK loss
//!    detection (or RFC 6675 IsLost when `rack = false`), entry into Recovery when a
//!    segment is marked lost (ssthresh from the congestion control, PRR from cwnd);
//! 4. cwnd: the control's `cong_control` (BBR) or PRR during Recovery/CWR
//!    ([`super::prr`]) or growth (`cong_avoid`) when snd_una advanced; Linux's default
//!    pacing rate is updated.
//!
//! Transmission ([`Linux::send`]): lost segments first (`tcp_xmit_retransmit_queue`:
//! those marked lost and not already retransmitted, within cwnd − in_flight), then new
//! data within cwnd − in_flight and the receiver's window, both subject to pacing; then a
//! tail loss probe is scheduled. An RTO marks every unSACKed segment lost (SACK
//! information is kept unless the receiver reneged), sets cwnd = in_flight + 1 and
//! retransmits the first segment (`tcp_enter_loss`, `tcp_retransmit_timer`). F-RTO
//! (RFC 5682) is not modelled.
//!
//! Why one file of ~680 lines (about 555 of code, the rest unit tests): the ACK path's
//! state machine (steps 1-4 above) acts on one state in one order, as `tcp_ack` and
//! `tcp_fastretrans_alert` do; its parts that stand alone are beside it (`ack.rs`,
//! `xmit.rs`, `rack.rs`, `tlp.rs`).

mod ack;
pub mod rack;
pub mod tlp;
mod xmit;

use crate::tcp::cc::{CaState, CongestionControl, RateSample};
use crate::tcp::pacing;
use crate::tcp::recovery::prr::Prr;
use crate::tcp::seg::Seg;
use crate::tcp::timestamps::ts_before;
use crate::tcp::tx::Tx;
use crate::time::SimTime;
use rack::{Rack, RECOVERY_THRESH};
use tlp::{ProbeAck, Tlp};

/// Linux `sysctl_tcp_reordering`: DupThresh in segments.
const REORDERING: u64 = 3;

/// What one ACK did (a subset of Linux's `FLAG_*`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct AckFlags {
    pub(super) una_advanced: bool,
    pub(super) data_sacked: bool,
    pub(super) dsack: bool,
    pub(super) win_update: bool,
    /// ECN-Echo on a connection that negotiated ECN (Linux `FLAG_ECE`).
    pub(super) ece: bool,
}

pub struct Linux {
    pub(super) state: CaState,
    /// snd_nxt when the reduction started (`high_seq`).
    pub(super) high_seq: u64,
    pub(super) prior_ssthresh: u64,
    pub(super) prior_cwnd: u64,
    /// snd_una when the reduction started (`undo_marker`) and the retransmissions not
    /// yet shown spurious (`undo_retrans`; −1: none).
    pub(super) undo_marker: Option<u64>,
    pub(super) undo_retrans: i64,
    /// TSval of the first retransmission of the episode (`retrans_stamp`).
    pub(super) retrans_stamp: Option<u32>,
    pub(super) prr: Prr,
    pub rack: Rack,
    pub tlp: Tlp,
    /// Consecutive RTOs without progress (`icsk_retransmits`).
    pub(super) retransmits: u32,
    /// TSecr of the ACK being processed.
    pub(super) ack_tsecr: Option<u32>,
    /// Spurious reductions undone.
    pub undos: u64,
}

impl Default for Linux {
    fn default() -> Self {
        Linux {
            state: CaState::Open,
            high_seq: 0,
            prior_ssthresh: 0,
            prior_cwnd: 0,
            undo_marker: None,
            undo_retrans: -1,
            retrans_stamp: None,
            prr: Prr::default(),
            rack: Rack::default(),
            tlp: Tlp::default(),
            retransmits: 0,
            ack_tsecr: None,
            undos: 0,
        }
    }
}

impl Linux {
    fn set_state(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, s: CaState) {
        if self.state != s {
            cc.set_state(&mut tx.st, s);
        }
        self.state = s;
        tx.st.ca_state = s;
        tx.in_recovery = matches!(s, CaState::Recovery | CaState::Loss);
    }

    pub(super) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.state, CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_current_ssthresh`
    fn current_ssthresh(&self, tx: &Tx) -> u64 {
        if self.in_cwnd_reduction() {
            tx.st.ssthresh
        } else {
            let c = tx.st.cwnd_segs();
            tx.st.ssthresh.max(((c >> 1) + (c >> 2)) * tx.st.mss)
        }
    }

    /// `tcp_init_undo`
    fn init_undo(&mut self, tx: &Tx) {
        self.undo_marker = Some(tx.snd_una);
        let mut n = tx.board.segs().iter().filter(|s| s.rtx_out).count() as i64;
        if self.tlp.high_seq.is_some() && self.tlp.retrans {
            n += 1;
        }
        self.undo_retrans = if n == 0 { -1 } else { n };
    }

    /// `tcp_init_cwnd_reduction`
    fn init_cwnd_reduction(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) {
        self.high_seq = tx.snd_max;
        self.tlp.high_seq = None;
        self.prior_cwnd = tx.st.cwnd;
        self.prr = Prr::start(tx.st.cwnd_segs());
        tx.st.ssthresh = cc.ssthresh(&tx.st);
        tx.queue_cwr(); // `tcp_ecn_queue_cwr`: every reduction, when ECN is on
    }

    /// `tcp_enter_cwr`, on an ECN-Echo: ssthresh from the control, cwnd brought down
    /// by PRR over a round trip, nothing retransmitted; ignored while a reduction runs.
    /// A control with its own `cong_control` (BBR) sets cwnd regardless, so for it the
    /// echo changes nothing but the CWR flag (as in Linux) and is not counted as a
    /// reduction.
    fn enter_cwr(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) {
        self.prior_ssthresh = 0;
        if self.state < CaState::Cwr {
            self.undo_marker = None;
            self.init_cwnd_reduction(tx, cc);
            self.set_state(tx, cc, CaState::Cwr);
            if !cc.has_cong_control() {
                tx.stats.extra.ecn_reductions += 1;
            }
        }
    }

    /// `tcp_end_cwnd_reduction`
    fn end_cwnd_reduction(&mut self, tx: &mut Tx, cc: &dyn CongestionControl) {
        if cc.has_cong_control() {
            return;
        }
        if tx.st.ssthresh < u64::MAX / 4
            && (self.state == CaState::Cwr || self.undo_marker.is_some())
        {
            tx.st.cwnd = tx.st.ssthresh;
        }
    }

    /// `tcp_enter_recovery`
    fn enter_recovery(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) {
        self.prior_ssthresh = 0;
        self.init_undo(tx);
        if !self.in_cwnd_reduction() {
            self.prior_ssthresh = self.current_ssthresh(tx);
            self.init_cwnd_reduction(tx, cc);
        }
        self.set_state(tx, cc, CaState::Recovery);
        tx.count_recovery();
    }

    /// `tcp_packet_delayed`: the echo predates our first retransmission, so the
    /// original was received.
    fn packet_delayed(&self) -> bool {
        matches!((self.retrans_stamp, self.ack_tsecr), (Some(r), Some(e)) if ts_before(e, r))
    }

    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`
    fn undo(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, unmark_loss: bool) {
        if unmark_loss {
            tx.board.unmark_lost();
        }
        if self.prior_ssthresh > 0 {
            tx.st.cwnd = cc.undo_cwnd(&tx.st, self.prior_cwnd);
            tx.st.ssthresh = tx.st.ssthresh.max(self.prior_ssthresh);
        }
        self.undo_marker = None;
        self.rack.advanced = true; // re-examine losses
        self.undos += 1;
    }

    /// `tcp_try_undo_recovery` (the SACK case): undo if possible, then Open.
    fn try_undo_recovery(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) {
        if self.may_undo() {
            self.undo(tx, cc, false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        self.set_state(tx, cc, CaState::Open);
    }

    /// `tcp_try_undo_dsack`: every retransmission was D-SACKed.
    fn try_undo_dsack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(RECOVERY_THRESH);
            self.undo(tx, cc, false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`: the hole was filled by the original, not our
    /// retransmission (reordering): undo once no retransmission is in flight.
    fn try_undo_partial(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) -> bool {
        if self.undo_marker.is_some() && self.packet_delayed() {
            self.rack.reord_seen = true;
            if tx.board.rtx_bytes > 0 {
                return true;
            }
            self.undo(tx, cc, true);
            self.set_state(tx, cc, CaState::Open);
            return true;
        }
        false
    }

    /// Marks losses: RACK (`tcp_rack_mark_lost`) or RFC 6675 IsLost; returns bytes
    /// newly lost.
    fn identify_loss(&mut self, tx: &mut Tx) -> u64 {
        let now = tx.st.now;
        let lost = if tx.cfg.rack {
            let sacked_segs = tx.board.sacked_bytes / tx.st.mss;
            let reo = self.rack.reo_wnd(
                tx.in_recovery,
                sacked_segs,
                REORDERING,
                tx.st.min_rtt_sample,
                tx.st.srtt,
            );
            self.rack.mark_lost(&mut tx.board, now, reo)
        } else {
            let flags = tx.board.lost_flags(tx.st.mss);
            let mut n = 0;
            for (i, l) in flags.into_iter().enumerate() {
                if l && !tx.board.segs()[i].lost {
                    n += tx.board.mark_lost_at(i);
                }
            }
            n
        };
        tx.st.lost += lost;
        lost
    }

    /// `tcp_fastretrans_alert`: the state machine on an ACK.
    fn alert(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, f: AckFlags) -> u64 {
        let mut lost = 0;
        if self.state == CaState::Open {
            self.retrans_stamp = None;
        } else if tx.snd_una >= self.high_seq {
            match self.state {
                CaState::Cwr if tx.snd_una != self.high_seq => {
                    self.end_cwnd_reduction(tx, cc);
                    self.set_state(tx, cc, CaState::Open);
                }
                CaState::Recovery => {
                    self.try_undo_recovery(tx, cc);
                    self.end_cwnd_reduction(tx, cc);
                }
                _ => {}
            }
        }
        match self.state {
            CaState::Recovery => {
                if f.una_advanced && self.try_undo_partial(tx, cc) {
                    return 0;
                }
                self.try_undo_dsack(tx, cc);
                lost += self.identify_loss(tx);
                if self.state != CaState::Recovery {
                    if tx.board.lost_bytes == 0 {
                        return lost;
                    }
                    self.enter_recovery(tx, cc);
                }
            }
            CaState::Loss => {
                // `tcp_process_loss` (without F-RTO)
                if f.una_advanced && self.may_undo() {
                    self.undo(tx, cc, true); // `tcp_try_undo_loss`
                    self.retransmits = 0;
                    self.set_state(tx, cc, CaState::Open);
                } else if tx.snd_una >= self.high_seq {
                    self.try_undo_recovery(tx, cc);
                }
                lost += self.identify_loss(tx);
                if self.state != CaState::Open {
                    return lost;
                }
                lost += self.open_alert(tx, cc, f);
            }
            _ => lost += self.open_alert(tx, cc, f),
        }
        lost
    }

    /// The Open/CWR branch of the state machine.
    fn open_alert(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, f: AckFlags) -> u64 {
        if self.state == CaState::Open {
            self.try_undo_dsack(tx, cc);
        }
        let lost = self.identify_loss(tx);
        // `tcp_time_to_recover`: a segment is marked lost
        if tx.board.lost_bytes > 0 {
            self.enter_recovery(tx, cc);
        } else if f.ece {
            self.enter_cwr(tx, cc); // `tcp_try_to_open`
        }
        lost
    }

    /// `tcp_rack_reo_timeout`
    fn reo_timeout(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl) {
        self.rack.reo_deadline = None;
        let before = tx.in_flight();
        let sacked_segs = tx.board.sacked_bytes / tx.st.mss;
        let reo = self.rack.reo_wnd(
            tx.in_recovery,
            sacked_segs,
            REORDERING,
            tx.st.min_rtt_sample,
            tx.st.srtt,
        );
        let lost = self.rack.detect_loss(&mut tx.board, tx.st.now, reo);
        tx.st.lost += lost;
        if tx.in_flight() != before && self.state != CaState::Recovery {
            self.enter_recovery(tx, cc);
            if !cc.has_cong_control() {
                self.prr_step(tx, tx.st.mss, lost, false);
            }
        }
    }

    /// PRR's cwnd for an ACK that delivered `delivered` bytes and marked `lost` bytes.
    fn prr_step(&mut self, tx: &mut Tx, delivered: u64, lost: u64, una_advanced: bool) {
        let mss = tx.st.mss;
        let in_flight = tx.in_flight().div_ceil(mss);
        let ssthresh = tx.st.ssthresh / mss;
        if let Some(c) = self.prr.linux_cwnd(
            delivered.div_ceil(mss),
            lost.div_ceil(mss),
            una_advanced,
            in_flight,
            ssthresh,
        ) {
            tx.st.cwnd = c * mss;
        }
    }
}

impl Linux {
    /// Processes an ACK (Linux `tcp_ack`): tagging, the state machine, cwnd.
    pub fn on_ack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, seg: &Seg) {
        if seg.ack > tx.snd_max || seg.ack < tx.snd_una {
            return; // never sent, or an old ACK (our links do not reorder)
        }
        self.ack_tsecr = seg.ts.filter(|_| tx.ts_ok).map(|t| t.1);
        let prior_in_flight = tx.in_flight();
        let (f, delivered, seq_rtt, ca_rtt, acc) = self.tag(tx, seg);
        if let Some(r) = seq_rtt {
            tx.take_sample(r);
        }
        tx.st.snd_una = tx.snd_una;
        tx.st.snd_nxt = tx.snd_max;
        tx.sync_flight();
        tx.st.in_flight = tx.in_flight();
        cc.pkts_acked(&mut tx.st, delivered, ca_rtt);
        // tail loss probe outcome
        let pure_dup = !f.una_advanced && !f.win_update && !f.data_sacked;
        if self.tlp.on_ack(seg.ack, f.dsack, pure_dup) == ProbeAck::Repaired {
            self.init_cwnd_reduction(tx, cc);
            self.set_state(tx, cc, CaState::Cwr);
            self.end_cwnd_reduction(tx, cc);
            self.set_state(tx, cc, CaState::Open);
        }
        // the state machine, when the ACK is "dubious"
        let dubious = (!f.una_advanced && !f.win_update)
            || f.data_sacked
            || f.ece
            || f.dsack
            || self.state != CaState::Open;
        let lost = if dubious { self.alert(tx, cc, f) } else { 0 };
        // rate sample and cwnd
        let mut acc = acc;
        let min_rtt = tx.st.min_rtt_sample;
        let mut rs: RateSample =
            std::mem::take(&mut acc).sample(&mut tx.st, delivered, lost, min_rtt);
        rs.rtt = ca_rtt;
        rs.prior_in_flight = prior_in_flight;
        rs.is_ack_delayed = delivered <= tx.st.mss && tx.snd_una == tx.snd_max;
        self.rack
            .update_reo_wnd(rs.prior_delivered, tx.st.delivered);
        tx.st.in_flight = tx.in_flight();
        if cc.has_cong_control() {
            tx.st.next_send = tx.pacer.as_ref().map_or(tx.st.now, |p| p.next);
            cc.cong_control(&mut tx.st, &rs);
        } else {
            if self.in_cwnd_reduction() {
                self.prr_step(tx, delivered, lost, f.una_advanced);
            } else if f.una_advanced {
                cc.cong_avoid(&mut tx.st, delivered);
            }
            tx.st.pacing_rate = pacing::linux_rate(&tx.st, tx.packets_out());
        }
        // timers (`tcp_set_xmit_timer`)
        if tx.snd_una == tx.snd_max {
            tx.rto_deadline = None;
            self.tlp.deadline = None;
        } else if f.una_advanced {
            tx.restart_rto();
            self.schedule_probe(tx, true);
        }
    }

    /// Sends what cwnd, the receiver's window and pacing allow: lost segments first,
    /// then new data; then schedules a tail loss probe.
    pub fn send(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        if let Some(p) = &mut tx.pacer {
            p.blocked = false;
        }
        if tx.in_recovery {
            self.retransmit_lost(tx, out);
        }
        let sent = self.send_new(tx, out);
        if sent && self.tlp.high_seq.is_none() {
            self.schedule_probe(tx, false);
        }
        if tx.rto_deadline.is_none() && tx.snd_una < tx.snd_max {
            tx.restart_rto();
        }
        // `tcp_rate_check_app_limited`: nothing more to send while cwnd has room
        if tx.segment_at(tx.snd_max).is_none_or(|(l, f)| l == 0 && !f)
            && tx.in_flight() < tx.st.cwnd
            && tx.board.lost_bytes <= tx.board.rtx_bytes
        {
            tx.st.app_limited = (tx.st.delivered + tx.in_flight()).max(1);
        }
        tx.sync_flight();
        tx.cwnd_validate();
    }

    /// The engine's own timer (RACK reordering window, tail loss probe), run while the
    /// connection is established and followed by a transmission.
    pub fn next_timer(&self) -> Option<SimTime> {
        match (self.tlp.deadline, self.rack.reo_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Its timer expired.
    pub fn on_timer(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        let now = tx.st.now;
        if self.rack.reo_deadline.is_some_and(|d| d <= now) {
            self.reo_timeout(tx, cc);
        }
        if self.tlp.deadline.is_some_and(|d| d <= now) {
            if matches!(self.state, CaState::Open | CaState::Cwr) {
                self.send_probe(tx, out);
            } else {
                // a probe scheduled before a recovery began: Linux's one timer was
                // re-armed as the retransmission timer when the episode started
                self.tlp.deadline = None;
            }
        }
    }

    /// The retransmission timeout: `tcp_retransmit_timer` with `tcp_enter_loss`.
    pub fn on_rto(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        let now = tx.st.now;
        // `tcp_timeout_mark_lost`: SACK information is kept unless the receiver reneged
        // (the first segment is SACKed); recently sent segments are not marked yet
        let reneged = tx.board.segs().front().is_some_and(|s| s.sacked);
        if reneged {
            tx.board.clear_sacked();
        }
        let rtt = self.rack.rtt;
        for i in 0..tx.board.segs().len() {
            let s = tx.board.segs()[i];
            if s.sacked {
                continue;
            }
            if !reneged && i > 0 && s.sent_at + rtt > now {
                continue;
            }
            tx.st.lost += tx.board.mark_lost_at(i);
        }
        if self.state == CaState::Open
            || tx.snd_una >= self.high_seq
            || (self.state == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh(tx);
            self.prior_cwnd = tx.st.cwnd;
            tx.st.ssthresh = cc.ssthresh(&tx.st);
            self.init_undo(tx);
        }
        tx.st.cwnd = tx.in_flight() + tx.st.mss;
        self.set_state(tx, cc, CaState::Loss);
        self.high_seq = tx.snd_max;
        tx.queue_cwr();
        self.tlp.high_seq = None;
        self.tlp.deadline = None;
        self.rack.reo_deadline = None;
        // retransmit the first segment regardless of cwnd and pacing
        if let Some(s) = tx.board.segs().front().copied() {
            if !s.sacked {
                self.retransmit(tx, s.seq, out);
            }
        }
        tx.rtt.back_off();
        self.retransmits += 1;
        tx.rto_deadline = Some(now + tx.rtt.rto());
        tx.sync_flight();
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::cc::CaState;
    use crate::tcp::script::{seq, Script, Setup, MSS};

    #[test]
    fn pacing_rate_follows_cwnd_and_the_segments_out() {
        // `tcp_update_pacing_rate` with a congestion control of its own (Reno): rate =
        // mss · max(cwnd, packets_out) · 200 % (slow start) / srtt, where packets_out
        // is what is outstanding (snd_nxt − snd_una), never more
        let (mut sc, init) = Script::new(Setup {
            linux: true,
            ..Setup::default()
        });
        assert_eq!(init.len(), 10);
        let sent = sc.ack(seq(1), &[]);
        let tx = &sc.s.tx;
        let outstanding = 9 + sent.len() as u64;
        assert_eq!(tx.snd_max - tx.snd_una, outstanding * MSS);
        let cwnd = tx.st.cwnd_segs();
        assert!(cwnd >= outstanding);
        let srtt = tx.st.srtt.expect("an RTT sample").0 as u128;
        let expect = (MSS as u128 * cwnd as u128 * 2 * 1_000_000_000 / srtt) as u64;
        assert_eq!(tx.st.pacing_rate, expect, "cwnd {cwnd}, srtt {srtt} ns");
    }

    /// A Linux-stack script of `app_bytes` with IW `iw`, SACK on.
    fn linux(app_bytes: u64, iw: u64, cc: crate::tcp::cc::CcConfig) -> (Script, Vec<(u64, bool)>) {
        Script::new(Setup {
            linux: true,
            app_bytes,
            iw,
            cc,
            ..Setup::default()
        })
    }

    #[test]
    fn the_loss_probe_counts_the_fin_segment_once() {
        // Linux `tcp_schedule_loss_probe`: with one packet out, PTO = 2 SRTT + TCP_RTO_MIN
        // (then capped by the RTO), not 2 SRTT + 2 ms; the last segment carries the FIN
        // and is one packet, not two
        let (mut sc, init) = linux(2000, 10, crate::tcp::cc::CcConfig::Reno);
        assert_eq!(init.len(), 2);
        sc.ack(seq(1), &[]);
        let tx = &sc.s.tx;
        assert_eq!(tx.packets_out(), 1, "1000 B and the FIN");
        let srtt = tx.st.srtt.unwrap();
        let one = (srtt.saturating_mul(2) + tx.cfg.rto.min).min(tx.rtt.rto());
        let e = sc.s.linux_engine().expect("the Linux engine");
        assert_eq!(e.tlp.deadline, Some(sc.now + one));
        let two = super::tlp::Tlp::pto(Some(srtt), 2, tx.cfg.rto.min, tx.rtt.rto());
        assert_ne!(one, two, "the test tells one packet from two");
    }

    #[test]
    fn an_ack_of_a_segment_and_the_fin_grows_slow_start_by_one_segment() {
        // `tcp_slow_start` counts packets: the FIN's sequence number is not a segment
        for cc in [
            crate::tcp::cc::CcConfig::LinuxReno,
            crate::tcp::cc::CcConfig::Cubic,
        ] {
            let (mut sc, init) = linux(2000, 2, cc);
            assert_eq!(init.len(), 2);
            assert_eq!(sc.s.tx.st.cwnd, 2 * MSS);
            sc.ack(seq(2) + 1, &[]); // both segments and the FIN
            assert_eq!(
                sc.s.tx.st.cwnd,
                4 * MSS,
                "{cc:?}: two segments acknowledged"
            );
        }
    }

    #[test]
    fn retransmitting_the_head_restarts_the_rto_and_cancels_the_loss_probe() {
        // `tcp_xmit_retransmit_queue` re-arms the retransmission timer when it resends
        // the first segment; Linux's one timer then holds no loss probe
        let (mut sc, init) = linux(100_000, 10, crate::tcp::cc::CcConfig::Reno);
        assert_eq!(init.len(), 10);
        sc.ack(seq(1), &[]); // segment 0 delivered: a loss probe is scheduled
        let probe_at =
            sc.s.linux_engine()
                .expect("the Linux engine")
                .tlp
                .deadline
                .expect("a loss probe");
        // segment 1 lost: SACKs of 2..5 mark it lost (RACK, no reordering seen)
        let sent = sc.dupack(1, &[(2, 5)]);
        assert!(sent.contains(&(1, true)), "the head resent: {sent:?}");
        let tx = &sc.s.tx;
        assert_eq!(
            tx.rto_deadline,
            Some(sc.now + tx.rtt.rto()),
            "re-armed from now"
        );
        assert_eq!(
            sc.s.linux_engine().expect("the Linux engine").tlp.deadline,
            None
        );
        // at the old probe time, during recovery: no probe
        let mut out = vec![];
        sc.s.on_timer(probe_at, &mut out);
        assert!(
            out.iter().all(|g| g.len == 0),
            "no probe in recovery: {out:?}"
        );
    }

    #[test]
    fn a_timeout_in_recovery_keeps_ssthresh() {
        // `tcp_enter_loss` recomputes ssthresh only in Open/Disorder, or once the recovery
        // point is reached: a timeout during recovery keeps the episode's value
        let (mut sc, _) = linux(100_000, 10, crate::tcp::cc::CcConfig::Reno);
        sc.ack(seq(1), &[]);
        sc.dupack(1, &[(2, 5)]);
        let e = sc.s.linux_engine().unwrap();
        assert_eq!(e.state, CaState::Recovery);
        let ssthresh = sc.s.tx.st.ssthresh;
        let t = sc.s.tx.rto_deadline.unwrap();
        let mut out = vec![];
        sc.s.on_timer(t, &mut out);
        assert_eq!(sc.s.tx.stats.timeouts, 1);
        assert_eq!(sc.s.linux_engine().unwrap().state, CaState::Loss);
        assert_eq!(sc.s.tx.st.ssthresh, ssthresh);
    }
}
