//! The sender's connection state and transmission machinery ([`Tx`]): handshake
//! segments, emitting data and retransmissions onto the scoreboard, the send loop
//! (cwnd, the receiver's window, sender-side SWS avoidance, zero-window probing), RTT
//! samples and the retransmission timer (RFC 9293, RFC 6298, RFC 5681 §3.1, RFC 3042).
//! The congestion control and the recovery scheme act on it; [`super::sender::Sender`]
//! orchestrates.

use super::cc::{CaState, CcState, CongestionControl};
use super::ecn::EcnSender;
use super::pacing::Pacer;
use super::profile::TcpProfile;
use super::rate;
use super::rtt::RttEstimator;
use super::sack::Scoreboard;
use super::seg::{Seg, ACK, ECE, FIN, SYN};
use super::timestamps::{ts_clock, TsRecent};
use super::FlowTrace;
use crate::element::Class;
use crate::time::{SimDuration, SimTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderState {
    Closed,
    SynSent,
    Established,
    /// All data and our FIN acknowledged.
    Done,
}

crate::counters! {
    /// Counters of a data sender.
    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct SenderCounters {
        /// Data segments sent, including retransmissions.
        pub segments_sent: u64,
        pub retransmitted_segments: u64,
        pub timeouts: u64,
        /// Fast-retransmit episodes (for Tahoe: fast retransmits).
        pub fast_recoveries: u64,
        /// Probe and ECN counters (reported only for flows that use them).
        #[serde(skip)]
        pub extra: ExtraCounters,
        #[serde(skip)]
        pub rtt_sum_ns: u128,
        #[serde(skip)]
        pub rtt_samples: u64,
    }
}

crate::counters! {
    /// Counters of low-priority probes (TCP-Peach family) and of ECN.
    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct ExtraCounters {
        /// Low-priority segments sent (dummy, NIL, supplement segments); not in
        /// `segments_sent`.
        pub probe_segments: u64,
        /// ACKs that answered probes (flagged by the receiver).
        pub probe_acks: u64,
        /// Window reductions in response to ECN-Echo (RFC 3168 §6.1.2).
        pub ecn_reductions: u64,
    }
}

/// Our own receive window, advertised on our segments (we receive no data).
pub const OWN_WINDOW: u64 = 65_535;

/// The sender's state and transmission machinery, shared by the congestion control and
/// the recovery scheme.
pub struct Tx {
    /// The flow's TCP profile.
    pub cfg: TcpProfile,
    pub st: CcState,
    pub state: SenderState,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub snd_max: u64,
    /// Relative sequence number of the FIN (= 1 + app bytes), if the transfer is sized.
    pub(crate) fin_seq: Option<u64>,
    /// End of the data the application has handed over so far (streaming sources such
    /// as a split gateway); unlimited bulk and sized transfers have it all from the start.
    pub(crate) avail_end: u64,
    pub peer_wnd: u64,
    /// Next sequence number expected from the peer (its SYN and FIN).
    pub(crate) peer_rcv_nxt: u64,
    /// Duplicate ACKs in a row (RFC 5681 §2).
    pub dupacks: u32,
    /// Bytes sent by Limited Transmit since the last ACK of new data (RFC 3042); they
    /// do not count in the FlightSize of the loss reduction (RFC 5681 §3.2 step 2).
    pub lt_bytes: u64,
    /// A recovery episode (fast recovery, RFC 6675 loss recovery) is running.
    pub in_recovery: bool,
    /// After an RTO, until everything sent before it is acknowledged (Linux
    /// TCP_CA_Loss).
    pub(crate) in_loss: bool,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint, stored as an exclusive end (highest
    /// sequence sent + 1).
    pub recover_end: u64,
    pub rtt: RttEstimator,
    pub(crate) rto_deadline: Option<SimTime>,
    /// Zero-window probe timer (RFC 9293 §3.8.6.1, RFC 1122 §4.2.2.17) and its backoff.
    pub(crate) persist_at: Option<SimTime>,
    pub(crate) persist_backoff: u32,
    pub board: Scoreboard,
    /// SACK was negotiated (both SYNs carried SACK-permitted).
    pub sack_ok: bool,
    /// RFC 3168 sender state.
    pub ecn: EcnSender,
    pub(crate) syn_sent_at: SimTime,
    pub(crate) syn_retx: bool,
    pub stats: SenderCounters,
    pub trace: Option<FlowTrace>,
    /// Timestamps negotiated (RFC 7323), and the peer's timestamp to echo.
    pub ts_ok: bool,
    pub ts: TsRecent,
    /// Pacing (Linux internal pacing) when on.
    pub pacer: Option<Pacer>,
    /// Delivery-rate sampling (the Linux stack): the start of the current send phase
    /// (Linux `first_tx_mstamp`); None when the profile does not sample rates.
    pub(crate) first_tx: Option<SimTime>,
    /// Bytes delivered (cumulatively or newly SACKed) by the ACK being processed
    /// (RFC 6937 DeliveredData).
    pub ack_delivered: u64,
    /// Linux cwnd validation (`tcp_cwnd_validate`) when the profile has it; None: the
    /// classic rule (cwnd counts as used unless the receiver's window is smaller).
    pub(crate) cwnd_use: Option<CwndUse>,
}

/// Linux `is_cwnd_limited`, `max_packets_out` (bytes), `cwnd_usage_seq`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CwndUse {
    pub limited: bool,
    pub max_out: u64,
    pub usage_seq: u64,
}

/// TCP option bytes of a timestamp option on every segment (NOP, NOP, TS: RFC 7323
/// Appendix A); data segments carry that much less payload (RFC 6691).
pub const TS_OPT_LEN: u64 = 12;

impl Tx {
    /// (payload length, FIN) of the segment starting at `seq`, or None if nothing is left.
    pub fn segment_at(&self, seq: u64) -> Option<(u32, bool)> {
        let mss = self.st.mss;
        match self.fin_seq {
            None if seq >= self.avail_end => None,
            None => Some(((self.avail_end - seq).min(mss) as u32, false)),
            Some(fin) if seq > fin => None,
            Some(fin) => {
                let len = (fin - seq).min(mss);
                Some((len as u32, seq + len == fin))
            }
        }
    }

    /// Whether new data (or the FIN) can be sent within the receiver's window. (What
    /// `segment_at` returns always has data or the FIN.)
    pub fn new_data_fits(&self) -> bool {
        self.segment_at(self.snd_max)
            .is_some_and(|(len, _)| self.snd_max + len as u64 <= self.snd_una + self.peer_wnd)
    }

    /// Segments outstanding (Linux `tp->packets_out`): the scoreboard's entries, so a
    /// segment that carries the FIN counts once.
    pub fn packets_out(&self) -> u64 {
        self.board.segs().len() as u64
    }

    pub fn sync_flight(&mut self) {
        self.st.flight = self.snd_max - self.snd_una;
    }

    pub(crate) fn record(&mut self) {
        if let Some(tr) = &mut self.trace {
            tr.t_ns.push(self.st.now.0);
            tr.cwnd.push(self.st.cwnd);
            tr.ssthresh.push(self.st.ssthresh.min(u64::MAX / 4));
            tr.snd_una.push(self.snd_una);
            tr.snd_max.push(self.snd_max);
        }
    }

    pub(crate) fn syn(&self) -> Seg {
        Seg {
            flags: SYN | self.ecn.syn_flags(),
            seq: 0,
            ack: 0,
            wnd: OWN_WINDOW,
            syn_opts: Some((self.cfg.mss.min(65_535) as u16, 0, self.cfg.sack)),
            ts: self.cfg.timestamps.then(|| (ts_clock(self.st.now), 0)),
            ..Default::default()
        }
    }

    /// Our timestamps for a segment acknowledging up to `ack` (RFC 7323 §3.2).
    pub(crate) fn ts_opt(&mut self, ack: u64) -> Option<(u32, u32)> {
        self.ts_ok
            .then(|| (ts_clock(self.st.now), self.ts.echo(ack)))
    }

    pub(crate) fn pure_ack(&mut self) -> Seg {
        let ack = self.peer_rcv_nxt;
        Seg {
            flags: ACK,
            seq: self.snd_nxt,
            ack,
            wnd: OWN_WINDOW,
            ts: self.ts_opt(ack),
            ..Default::default()
        }
    }

    /// Whether pacing lets a segment leave now (always, when pacing is off).
    pub fn pace_ok(&mut self) -> bool {
        let now = self.st.now;
        self.pacer.as_mut().is_none_or(|p| p.ready(now))
    }

    /// Emits the data segment starting at `seq` (new data or a retransmission).
    pub fn emit(&mut self, seq: u64, len: u32, fin: bool, out: &mut Vec<Seg>) {
        self.emit_as(seq, len, fin, Class::Normal, out);
    }

    /// [`Tx::emit`] in traffic class `class`: a low-priority segment is a probe
    /// (counted in `probe_segments`, not `segments_sent`; Not-ECT) that otherwise
    /// updates the sending state like any transmission (TCP-Cherry's supplement
    /// segments carrying new data).
    pub fn emit_as(&mut self, seq: u64, len: u32, fin: bool, class: Class, out: &mut Vec<Seg>) {
        let now = self.st.now;
        let end = seq + len as u64 + fin as u64;
        let retx = seq < self.snd_max;
        let nothing_out = self.snd_una == self.snd_max;
        let stamp = self
            .first_tx
            .as_mut()
            .map(|first_tx| rate::stamp(&mut self.st, first_tx, nothing_out));
        if retx {
            self.board.mark_retransmitted_stamped(seq, now, stamp);
        } else {
            self.board
                .push_stamped(seq, end, now, stamp.unwrap_or_default());
            self.snd_max = end;
        }
        let probe = class == Class::Low;
        if probe {
            // probes are paced by their scheme, not by the stack
            self.stats.extra.probe_segments += 1;
        } else {
            if let Some(p) = &mut self.pacer {
                p.sent(now, len as u64, self.st.pacing_rate);
            }
            self.stats.segments_sent += 1;
            if retx {
                self.stats.retransmitted_segments += 1;
            }
        }
        let (ecn, ecn_flags) = if probe {
            (0, 0)
        } else {
            self.ecn.data_marks(retx)
        };
        // the segment trace lists normal-priority transmissions only
        if let (Some(tr), false) = (&mut self.trace, probe) {
            tr.seg_t_ns.push(now.0);
            tr.seg_seq.push(seq);
            tr.seg_len.push(len);
            tr.seg_retx.push(retx);
        }
        let ack = self.peer_rcv_nxt;
        let ts = self.ts_opt(ack);
        out.push(Seg {
            flags: ACK | if fin { FIN } else { 0 } | ecn_flags,
            seq,
            ack,
            wnd: OWN_WINDOW,
            len,
            class,
            ecn,
            ts,
            ..Default::default()
        });
        // RFC 6298 (5.1)
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Emits a low-priority copy of the sent segment at `seq` (a TCP-Peach dummy or
    /// NIL segment): it changes no sending state but the segment's retransmission
    /// flag (Karn: its ACK may answer the copy).
    pub fn emit_probe_copy(&mut self, seq: u64, len: u32, fin: bool, out: &mut Vec<Seg>) {
        debug_assert!(seq + len as u64 + fin as u64 <= self.snd_max);
        self.board.mark_retransmitted(seq, self.st.now);
        self.stats.extra.probe_segments += 1;
        let ack = self.peer_rcv_nxt;
        let ts = self.ts_opt(ack);
        out.push(Seg {
            flags: ACK | if fin { FIN } else { 0 },
            seq,
            ack,
            wnd: OWN_WINDOW,
            len,
            class: Class::Low,
            ts,
            ..Default::default()
        });
    }

    /// Retransmits the first unacknowledged segment.
    pub fn retransmit_first(&mut self, out: &mut Vec<Seg>) {
        if let Some((len, fin)) = self.segment_at(self.snd_una) {
            self.emit(self.snd_una, len, fin, out);
        }
    }

    /// Sends new data at snd_max (a segment the caller has checked fits).
    pub fn send_new(&mut self, out: &mut Vec<Seg>) {
        let seq = self.snd_max;
        let (len, fin) = self.segment_at(seq).expect("new data available");
        self.emit(seq, len, fin, out);
        self.snd_nxt = self.snd_max;
    }

    /// Sends what the windows allow (BSD `tcp_output` for bulk data; only whole
    /// segments, or the tail of a sized transfer, are sent: sender-side SWS avoidance).
    pub fn try_send(&mut self, out: &mut Vec<Seg>) {
        if self.state != SenderState::Established {
            return;
        }
        if self.cwnd_use.is_none() {
            self.st.cwnd_limited = self.st.cwnd <= self.peer_wnd;
        }
        if let Some(p) = &mut self.pacer {
            p.blocked = false;
        }
        loop {
            let win = self.st.cwnd.min(self.peer_wnd);
            let seq = self.snd_nxt;
            let Some((len, fin)) = self.segment_at(seq) else {
                break;
            };
            if len == 0 && !fin {
                break;
            }
            if seq + len as u64 > self.snd_una + win {
                // Nothing in flight and the receiver's window too small for the next
                // segment: only a probe can learn that the window reopened.
                if self.snd_una == self.snd_max && seq + len as u64 > self.snd_una + self.peer_wnd {
                    self.arm_persist();
                    return;
                }
                break;
            }
            if self.pacer.is_some() && !self.pace_ok() {
                break;
            }
            self.emit(seq, len, fin, out);
            self.snd_nxt = seq + len as u64 + fin as u64;
            self.persist_at = None;
            self.persist_backoff = 0;
        }
        self.sync_flight();
        self.cwnd_validate();
    }

    /// Arms the zero-window probe timer (RTO, doubling, at most 60 s).
    pub(crate) fn arm_persist(&mut self) {
        if self.persist_at.is_none() {
            let t = self
                .rtt
                .rto()
                .saturating_mul(1 << self.persist_backoff.min(6));
            self.persist_at = Some(self.st.now + t.min(SimDuration::from_secs(60)));
        }
    }

    /// Linux `tcp_packets_in_flight` in bytes: outstanding, minus SACKed and lost, plus
    /// retransmissions in flight.
    pub fn in_flight(&self) -> u64 {
        (self.snd_max - self.snd_una + self.board.rtx_bytes)
            .saturating_sub(self.board.sacked_bytes + self.board.lost_bytes)
    }

    /// Linux `tcp_cwnd_validate` / `tcp_is_cwnd_limited` (Linux 6.x): cwnd counts as
    /// used if the flight reached it at some point of the current window; in slow start
    /// it may also grow up to twice the largest flight of the window. Growth is not
    /// allowed otherwise (a receive-window- or application-limited sender keeps cwnd).
    /// Does nothing for a profile without it.
    pub(crate) fn cwnd_validate(&mut self) {
        let in_flight = self.in_flight();
        let packets_out = self.snd_max - self.snd_una;
        let is_limited = in_flight + self.st.mss > self.st.cwnd;
        let Some(v) = &mut self.cwnd_use else { return };
        if self.snd_una >= v.usage_seq || is_limited || (!v.limited && packets_out > v.max_out) {
            v.limited = is_limited;
            v.max_out = packets_out;
            v.usage_seq = self.snd_max;
        }
        self.st.cwnd_limited =
            v.limited || (self.st.in_slow_start() && self.st.cwnd < 2 * v.max_out);
    }

    /// RFC 6298 (5.3): restart the retransmission timer (stop it when nothing is
    /// outstanding).
    pub fn restart_rto(&mut self) {
        self.rto_deadline = if self.snd_una < self.snd_max {
            Some(self.st.now + self.rtt.rto())
        } else {
            None
        };
    }

    /// Counts a fast-retransmit / recovery episode.
    pub fn count_recovery(&mut self) {
        self.stats.fast_recoveries += 1;
    }

    /// Ends a recovery episode.
    pub fn exit_recovery(&mut self, cc: &mut dyn CongestionControl) {
        self.in_recovery = false;
        self.in_loss = false;
        cc.set_state(&mut self.st, CaState::Open);
    }

    /// ssthresh at the start of a loss recovery: the congestion control's reduction
    /// (RFC 5681 (4) for the Reno family) of a FlightSize that leaves out the data sent
    /// by Limited Transmit (RFC 5681 §3.2 step 2, RFC 6675 §5 (4.2)).
    pub fn loss_ssthresh(&mut self, cc: &mut dyn CongestionControl) -> u64 {
        let flight = self.st.flight;
        self.st.flight = flight.saturating_sub(self.lt_bytes);
        let s = cc.ssthresh(&self.st);
        self.st.flight = flight;
        s
    }

    pub(crate) fn take_sample(&mut self, r: SimDuration) {
        self.rtt.sample_at(r, self.snd_una, self.snd_max);
        self.st.srtt = self.rtt.srtt;
        self.st.min_srtt = self.rtt.min_srtt;
        self.st.min_rtt_sample = self.rtt.min_sample;
        self.stats.rtt_sum_ns += r.0 as u128;
        self.stats.rtt_samples += 1;
        if let Some(tr) = &mut self.trace {
            tr.rtt_t_ns.push(self.st.now.0);
            tr.rtt_ns.push(r.0);
        }
    }

    /// RFC 3168 §6.1.2: the response to an ACK acknowledging up to `ack` with `flags`
    /// (the classic engine; the Linux engine enters its CWR state instead). Returns
    /// whether it reduced the window (then the ACK does not grow it).
    pub(crate) fn ecn_response(
        &mut self,
        cc: &mut dyn CongestionControl,
        flags: u8,
        ack: u64,
    ) -> bool {
        let e = &self.ecn;
        if !e.on
            || flags & ECE == 0
            || self.in_recovery
            || self.in_loss
            || ack <= e.high
            || ack < self.recover_end
        {
            return false;
        }
        self.sync_flight();
        self.st.ssthresh = cc.ssthresh(&self.st);
        self.st.cwnd = self.st.ssthresh;
        self.ecn.high = self.snd_max;
        self.queue_cwr();
        self.stats.extra.ecn_reductions += 1;
        true
    }

    /// Whether an ACK with `flags` echoes congestion on a connection that negotiated ECN.
    pub(crate) fn ece(&self, flags: u8) -> bool {
        self.ecn.on && flags & ECE != 0
    }

    /// The next new data segment carries CWR (after a window reduction; the Linux engine
    /// calls this on every reduction, as `tcp_ecn_queue_cwr`).
    pub(crate) fn queue_cwr(&mut self) {
        if self.ecn.on {
            self.ecn.cwr_pending = true;
        }
    }

    /// RFC 3042: on the first two duplicate ACKs send one new segment each, if the
    /// receiver's window allows and the flight stays within cwnd + 2 SMSS; cwnd unchanged.
    pub(crate) fn limited_transmit(&mut self, out: &mut Vec<Seg>) {
        let seq = self.snd_max;
        if self.snd_nxt != seq {
            return; // going back N after a timeout
        }
        let Some((len, fin)) = self.segment_at(seq) else {
            return;
        };
        let end = seq + len as u64;
        if (len == 0 && !fin)
            || end > self.snd_una + self.peer_wnd
            || end - self.snd_una > self.st.cwnd + 2 * self.st.mss
        {
            return;
        }
        self.emit(seq, len, fin, out);
        self.lt_bytes += len as u64 + fin as u64;
        self.snd_nxt = self.snd_max;
        self.sync_flight();
    }
}
