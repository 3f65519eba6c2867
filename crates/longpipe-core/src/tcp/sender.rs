//! The data sender of a flow (the active opener).
//!
//! Sequence numbers are relative: our SYN is 0, data byte k (0-based) is k + 1, and the
//! FIN of a sized transfer follows the last byte. Invariants:
//! `snd_una <= snd_nxt <= snd_max`, and `segs` lists every segment in
//! [snd_una, snd_max) in order.

use super::cc::{CaState, CcState, CongestionControl};
use super::recovery::{RecoveryKind, DUP_THRESH};
use super::rtt::RttEstimator;
use super::sack::{Next, Scoreboard};
use super::FlowTrace;
use crate::net::packet::{Segment, ACK, FIN, SYN};
use crate::time::{SimDuration, SimTime};

#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub mss: u32,
    pub iw_bytes: u64,
    pub initial_rto: SimDuration,
    pub min_rto: SimDuration,
    pub max_rto: SimDuration,
    /// Bytes to send; None = unlimited.
    pub app_bytes: Option<u64>,
    pub recovery: RecoveryKind,
    pub sack_permitted: bool,
    /// Counters ignore events before this time.
    pub warmup: SimTime,
    /// Initial ssthresh in bytes; None = arbitrarily high (RFC 5681 §3.1).
    pub initial_ssthresh: Option<u64>,
    /// NewReno: restart the RTO on every partial ACK (Slow-but-Steady) instead of the
    /// first only (Impatient), RFC 6582 §4.
    pub partial_ack_timer_every: bool,
    /// RFC 3042 Limited Transmit.
    pub limited_transmit: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderState {
    Closed,
    SynSent,
    Established,
    /// All data and our FIN acknowledged.
    Done,
}

#[derive(Debug, Clone, Default)]
pub struct SenderStats {
    /// Data segments sent, including retransmissions.
    pub segments_sent: u64,
    pub retransmitted_segments: u64,
    pub timeouts: u64,
    /// Fast-retransmit episodes (for Tahoe: fast retransmits).
    pub fast_recoveries: u64,
    pub rtt_sum_ns: u128,
    pub rtt_samples: u64,
}

/// Our own receive window, advertised on our segments (we receive no data).
const OWN_WINDOW: u64 = 65_535;

pub struct Sender {
    cfg: SenderConfig,
    cc: Box<dyn CongestionControl>,
    pub st: CcState,
    pub state: SenderState,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub snd_max: u64,
    /// Relative sequence number of the FIN (= 1 + app bytes), if the transfer is sized.
    fin_seq: Option<u64>,
    /// End of the data the application has handed over so far (streaming sources such
    /// as a split gateway); unlimited bulk and sized transfers have it all from the start.
    avail_end: u64,
    peer_wnd: u64,
    /// Next sequence number expected from the peer (its SYN and FIN).
    peer_rcv_nxt: u64,
    dupacks: u32,
    in_recovery: bool,
    /// After an RTO, until everything sent before it is acknowledged (Linux
    /// TCP_CA_Loss).
    in_loss: bool,
    /// RFC 6582 `recover`, stored as an exclusive end (highest sequence sent + 1).
    recover_end: u64,
    first_partial: bool,
    pub rtt: RttEstimator,
    rto_deadline: Option<SimTime>,
    /// Zero-window probe timer (RFC 9293 §3.8.6.1, RFC 1122 §4.2.2.17) and its backoff.
    persist_at: Option<SimTime>,
    persist_backoff: u32,
    board: Scoreboard,
    /// SACK was negotiated (both SYNs carried SACK-permitted): RFC 6675 recovery.
    pub sack_ok: bool,
    /// RFC 6675 HighRxt, as the end of the highest segment retransmitted in recovery.
    high_rxt: u64,
    /// RFC 6675 RescueRxt: this episode's rescue retransmission was sent.
    rescue_done: bool,
    syn_sent_at: SimTime,
    syn_retx: bool,
    pub stats: SenderStats,
    pub trace: Option<FlowTrace>,
}

impl Sender {
    pub fn new(cfg: SenderConfig, cc: Box<dyn CongestionControl>, trace: bool) -> Self {
        let mss = cfg.mss as u64;
        let rtt = RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto);
        Sender {
            fin_seq: cfg.app_bytes.map(|b| b + 1),
            avail_end: cfg.app_bytes.map_or(u64::MAX / 4, |b| b + 1),
            st: CcState {
                now: SimTime::ZERO,
                mss,
                cwnd: cfg.iw_bytes,
                // RFC 5681 §3.1: initial ssthresh arbitrarily high.
                ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX / 4),
                flight: 0,
                srtt: None,
                min_srtt: None,
                min_rtt_sample: None,
                cwnd_limited: true,
            },
            cfg,
            cc,
            state: SenderState::Closed,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            peer_wnd: mss,
            peer_rcv_nxt: 0,
            dupacks: 0,
            in_recovery: false,
            in_loss: false,
            recover_end: 0,
            first_partial: false,
            rtt,
            rto_deadline: None,
            persist_at: None,
            persist_backoff: 0,
            board: Scoreboard::default(),
            sack_ok: false,
            high_rxt: 0,
            rescue_done: false,
            syn_sent_at: SimTime::ZERO,
            syn_retx: false,
            stats: SenderStats::default(),
            trace: trace.then(FlowTrace::default),
        }
    }

    /// A streaming sender: data arrives through [`Sender::push_data`] and ends with
    /// [`Sender::close`].
    pub fn new_streaming(cfg: SenderConfig, cc: Box<dyn CongestionControl>) -> Self {
        let mut s = Sender::new(
            SenderConfig {
                app_bytes: None,
                ..cfg
            },
            cc,
            false,
        );
        s.avail_end = 1;
        s
    }

    /// The application hands over `bytes` more bytes.
    pub fn push_data(&mut self, now: SimTime, bytes: u64, out: &mut Vec<Segment>) {
        self.st.now = now;
        self.avail_end += bytes;
        if !self.in_recovery || !self.sack_ok {
            self.try_send(out);
        }
    }

    /// The application closes: a FIN follows the last byte.
    pub fn close(&mut self, now: SimTime, out: &mut Vec<Segment>) {
        self.st.now = now;
        if self.fin_seq.is_none() {
            self.fin_seq = Some(self.avail_end);
            self.try_send(out);
        }
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }

    /// Earliest timer deadline.
    pub fn next_timer(&self) -> Option<SimTime> {
        match (self.rto_deadline, self.persist_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn counting(&self) -> bool {
        self.st.now >= self.cfg.warmup
    }

    fn syn(&self) -> Segment {
        Segment {
            from_sender: true,
            flags: SYN,
            seq: 0,
            ack: 0,
            wnd: OWN_WINDOW,
            len: 0,
            syn_opts: Some((self.cfg.mss.min(65_535) as u16, 0, self.cfg.sack_permitted)),
            sack: None,
        }
    }

    fn pure_ack(&self) -> Segment {
        Segment {
            from_sender: true,
            flags: ACK,
            seq: self.snd_nxt,
            ack: self.peer_rcv_nxt,
            wnd: OWN_WINDOW,
            ..Default::default()
        }
    }

    /// Opens the connection: sends the SYN.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<Segment>) {
        debug_assert_eq!(self.state, SenderState::Closed);
        self.st.now = now;
        self.state = SenderState::SynSent;
        self.snd_nxt = 1;
        self.snd_max = 1;
        self.syn_sent_at = now;
        out.push(self.syn());
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    fn sync_flight(&mut self) {
        self.st.flight = self.snd_max - self.snd_una;
    }

    fn record(&mut self) {
        if let Some(tr) = &mut self.trace {
            tr.t_ns.push(self.st.now.0);
            tr.cwnd.push(self.st.cwnd);
            tr.ssthresh.push(self.st.ssthresh.min(u64::MAX / 4));
            tr.snd_una.push(self.snd_una);
            tr.snd_max.push(self.snd_max);
        }
    }

    /// (payload length, FIN) of the segment starting at `seq`, or None if nothing is left.
    fn segment_at(&self, seq: u64) -> Option<(u32, bool)> {
        let mss = self.cfg.mss as u64;
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

    /// Emits the data segment starting at `seq` (new data or a retransmission).
    fn emit(&mut self, seq: u64, len: u32, fin: bool, out: &mut Vec<Segment>) {
        let now = self.st.now;
        let end = seq + len as u64 + fin as u64;
        let retx = seq < self.snd_max;
        if retx {
            self.board.mark_retransmitted(seq, now);
        } else {
            self.board.push(seq, end, now);
            self.snd_max = end;
        }
        if self.counting() {
            self.stats.segments_sent += 1;
            if retx {
                self.stats.retransmitted_segments += 1;
            }
        }
        if let Some(tr) = &mut self.trace {
            tr.seg_t_ns.push(now.0);
            tr.seg_seq.push(seq);
            tr.seg_len.push(len);
            tr.seg_retx.push(retx);
        }
        out.push(Segment {
            from_sender: true,
            flags: ACK | if fin { FIN } else { 0 },
            seq,
            ack: self.peer_rcv_nxt,
            wnd: OWN_WINDOW,
            len,
            syn_opts: None,
            sack: None,
        });
        // RFC 6298 (5.1)
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    fn retransmit_first(&mut self, out: &mut Vec<Segment>) {
        if let Some((len, fin)) = self.segment_at(self.snd_una) {
            self.emit(self.snd_una, len, fin, out);
        }
    }

    /// Sends what the windows allow (BSD `tcp_output` for bulk data; only whole
    /// segments, or the tail of a sized transfer, are sent: sender-side SWS avoidance).
    fn try_send(&mut self, out: &mut Vec<Segment>) {
        if self.state != SenderState::Established {
            return;
        }
        self.st.cwnd_limited = self.st.cwnd <= self.peer_wnd;
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
                    if self.persist_at.is_none() {
                        let t = self
                            .rtt
                            .rto()
                            .saturating_mul(1 << self.persist_backoff.min(6));
                        self.persist_at = Some(self.st.now + t.min(SimDuration::from_secs(60)));
                    }
                    return;
                }
                break;
            }
            self.emit(seq, len, fin, out);
            self.snd_nxt = seq + len as u64 + fin as u64;
            self.persist_at = None;
            self.persist_backoff = 0;
        }
        self.sync_flight();
    }

    fn restart_rto(&mut self) {
        self.rto_deadline = if self.snd_una < self.snd_max {
            Some(self.st.now + self.rtt.rto())
        } else {
            None
        };
    }

    pub fn on_segment(&mut self, now: SimTime, seg: &Segment, out: &mut Vec<Segment>) {
        self.st.now = now;
        match self.state {
            SenderState::Closed => {}
            SenderState::SynSent => {
                if seg.flags & (SYN | ACK) == SYN | ACK && seg.ack == 1 {
                    self.state = SenderState::Established;
                    self.snd_una = 1;
                    self.peer_rcv_nxt = seg.seq + 1;
                    self.peer_wnd = seg.wnd;
                    self.sack_ok = self.cfg.sack_permitted && seg.syn_opts.is_some_and(|o| o.2);
                    if !self.syn_retx {
                        self.take_sample(now - self.syn_sent_at);
                    }
                    // RFC 5681 §3.1 / RFC 3390: IW is one segment after a lost SYN.
                    self.st.cwnd = if self.syn_retx {
                        self.cfg.mss as u64
                    } else {
                        self.cfg.iw_bytes
                    };
                    self.cc.init(&mut self.st);
                    self.rto_deadline = None;
                    out.push(self.pure_ack());
                    self.try_send(out);
                    self.record();
                }
            }
            SenderState::Established | SenderState::Done => {
                if seg.flags & SYN != 0 {
                    // Our handshake ACK was lost: repeat it.
                    out.push(self.pure_ack());
                    return;
                }
                if seg.flags & FIN != 0 && seg.seq == self.peer_rcv_nxt {
                    self.peer_rcv_nxt += 1;
                    let mut a = self.pure_ack();
                    a.seq = self.snd_max;
                    out.push(a);
                }
                if self.state == SenderState::Established {
                    self.on_ack(seg, out);
                    if self.sack_recovery() {
                        self.sack_send(out);
                    } else {
                        self.try_send(out);
                    }
                    self.record();
                }
            }
        }
    }

    fn take_sample(&mut self, r: SimDuration) {
        self.rtt.sample(r);
        self.st.srtt = self.rtt.srtt;
        self.st.min_srtt = self.rtt.min_srtt;
        self.st.min_rtt_sample = self.rtt.min_sample;
        if self.counting() {
            self.stats.rtt_sum_ns += r.0 as u128;
            self.stats.rtt_samples += 1;
        }
        if let Some(tr) = &mut self.trace {
            tr.rtt_t_ns.push(self.st.now.0);
            tr.rtt_ns.push(r.0);
        }
    }

    fn on_ack(&mut self, seg: &Segment, out: &mut Vec<Segment>) {
        let ack = seg.ack;
        if ack > self.snd_max {
            return; // acknowledges data never sent: ignore (RFC 9293 §3.10.7.4)
        }
        let wnd_changed = seg.wnd != self.peer_wnd;
        self.peer_wnd = seg.wnd;
        let mss = self.st.mss;
        let newly_sacked = match (&seg.sack, self.sack_ok) {
            (Some(b), true) => {
                if let Some(tr) = &mut self.trace {
                    for &(l, r) in &b.blocks[..b.n as usize] {
                        tr.sack_t_ns.push(self.st.now.0);
                        tr.sack_left.push(l);
                        tr.sack_right.push(r);
                    }
                }
                self.board.mark_sacked(b)
            }
            _ => 0,
        };
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            // Karn: sample from the newest fully acknowledged segment, and only if no
            // segment this ACK covers was retransmitted (else the ACK may answer either
            // transmission, or release data held behind a repaired hole).
            let (newest, any_retx) = self.board.ack_to(ack);
            let sample = newest
                .filter(|_| !any_retx)
                .map(|s| self.st.now - s.sent_at);
            if let Some(r) = sample {
                self.take_sample(r);
            }
            self.snd_una = ack;
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            self.dupacks = 0;
            self.sync_flight();
            self.cc.pkts_acked(&mut self.st, acked, sample);
            let mut restart = true;
            if self.sack_recovery() {
                // RFC 6675 §5 (C): leave recovery once RecoveryPoint is acknowledged;
                // partial ACKs only update the scoreboard (sending is pipe-driven).
                if ack >= self.recover_end {
                    self.exit_recovery();
                }
            } else if self.in_recovery {
                match self.cfg.recovery {
                    RecoveryKind::Tahoe => unreachable!("Tahoe has no fast recovery"),
                    RecoveryKind::Reno => {
                        // RFC 5681 §3.2 step 6: deflate and leave on the first new ACK.
                        self.st.cwnd = self.st.ssthresh;
                        self.exit_recovery();
                    }
                    RecoveryKind::NewReno => {
                        if ack >= self.recover_end {
                            // RFC 6582 §3.2 step 3 (full ACK), option (2).
                            self.st.cwnd = self.st.ssthresh.min(self.st.flight.max(mss) + mss);
                            self.exit_recovery();
                        } else {
                            // RFC 6582 §3.2 step 3 (partial ACK)
                            self.retransmit_first(out);
                            self.st.cwnd = self.st.cwnd.saturating_sub(acked).max(mss);
                            if acked >= mss {
                                self.st.cwnd += mss;
                            }
                            restart = self.first_partial || self.cfg.partial_ack_timer_every;
                            self.first_partial = false;
                        }
                    }
                }
            } else {
                if self.in_loss && ack >= self.recover_end {
                    self.in_loss = false;
                    self.cc.set_state(&mut self.st, CaState::Open);
                }
                self.cc.cong_avoid(&mut self.st, acked);
            }
            // RFC 6298 (5.2), (5.3)
            if self.snd_una == self.snd_max {
                self.rto_deadline = None;
            } else if restart {
                self.restart_rto();
            }
            if let Some(fin) = self.fin_seq {
                if self.snd_una > fin {
                    self.state = SenderState::Done;
                    self.rto_deadline = None;
                }
            }
        } else if ack == self.snd_una
            && seg.len == 0
            && seg.flags & (SYN | FIN) == 0
            && self.snd_max > self.snd_una
            && (!wnd_changed || newly_sacked > 0)
        {
            // RFC 5681 §2 duplicate ACK (RFC 6675 §2: or one that SACKs new data)
            self.dupacks += 1;
            if self.sack_ok && self.cfg.recovery != RecoveryKind::Tahoe {
                // RFC 6675 §5: DupThresh duplicates, or the first segment is lost by
                // the SACK information.
                if !self.in_recovery
                    && (self.dupacks >= DUP_THRESH || self.board.first_is_lost(mss))
                    && self.snd_una >= self.recover_end
                {
                    self.enter_sack_recovery(out);
                }
            } else if self.dupacks == DUP_THRESH {
                self.fast_retransmit(out);
            } else if self.dupacks > DUP_THRESH && self.in_recovery {
                // RFC 5681 §3.2 step 4 / RFC 6582 step 4: inflate.
                self.st.cwnd += mss;
            }
            if self.cfg.limited_transmit && self.dupacks < DUP_THRESH && !self.in_recovery {
                self.limited_transmit(out);
            }
        }
    }

    /// RFC 3042: on the first two duplicate ACKs send one new segment each, if the
    /// receiver's window allows and the flight stays within cwnd + 2 SMSS; cwnd unchanged.
    fn limited_transmit(&mut self, out: &mut Vec<Segment>) {
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
        self.snd_nxt = self.snd_max;
        self.sync_flight();
    }

    fn sack_recovery(&self) -> bool {
        self.in_recovery && self.sack_ok && self.cfg.recovery != RecoveryKind::Tahoe
    }

    /// RFC 6675 §5 steps (4.1)-(4.4).
    fn enter_sack_recovery(&mut self, out: &mut Vec<Segment>) {
        self.recover_end = self.snd_max; // RecoveryPoint = HighData
        self.sync_flight();
        self.st.ssthresh = self.cc.ssthresh(&self.st);
        self.st.cwnd = self.st.ssthresh;
        self.in_recovery = true;
        self.rescue_done = false;
        self.high_rxt = self.snd_una;
        self.cc.set_state(&mut self.st, CaState::Recovery);
        if let Some((len, fin)) = self.segment_at(self.snd_una) {
            self.emit(self.snd_una, len, fin, out);
            self.high_rxt = self.snd_una + len as u64 + fin as u64;
        }
        if self.counting() {
            self.stats.fast_recoveries += 1;
        }
        self.restart_rto();
    }

    /// RFC 6675 §5 step (C): while cwnd − pipe ≥ 1 SMSS, send NextSeg().
    fn sack_send(&mut self, out: &mut Vec<Segment>) {
        let mss = self.st.mss;
        loop {
            let pipe = self.board.pipe(mss, self.high_rxt);
            if self.st.cwnd < pipe + mss {
                break;
            }
            let new_data = match self.segment_at(self.snd_max) {
                Some((len, fin)) if len > 0 || fin => {
                    self.snd_max + len as u64 <= self.snd_una + self.peer_wnd
                }
                _ => false,
            };
            match self
                .board
                .next_seg(mss, self.high_rxt, new_data, self.rescue_done)
            {
                Next::Retransmit(seq) => {
                    let (len, fin) = self.segment_at(seq).expect("segment in flight");
                    self.emit(seq, len, fin, out);
                    self.high_rxt = self.high_rxt.max(seq + len as u64 + fin as u64);
                }
                Next::Rescue(seq) => {
                    let (len, fin) = self.segment_at(seq).expect("segment in flight");
                    self.emit(seq, len, fin, out);
                    self.rescue_done = true;
                }
                Next::NewData => {
                    let seq = self.snd_max;
                    let (len, fin) = self.segment_at(seq).expect("checked above");
                    self.emit(seq, len, fin, out);
                    self.snd_nxt = self.snd_max;
                }
                Next::Nothing => break,
            }
        }
        self.sync_flight();
    }

    fn exit_recovery(&mut self) {
        self.in_recovery = false;
        self.in_loss = false;
        self.cc.set_state(&mut self.st, CaState::Open);
    }

    fn fast_retransmit(&mut self, out: &mut Vec<Segment>) {
        let mss = self.st.mss;
        match self.cfg.recovery {
            RecoveryKind::Tahoe => {
                self.st.ssthresh = self.cc.ssthresh(&self.st);
                self.st.cwnd = mss;
                self.retransmit_first(out);
            }
            RecoveryKind::Reno | RecoveryKind::NewReno => {
                if self.cfg.recovery == RecoveryKind::NewReno {
                    // RFC 6582 §3.2 step 2: only if the ACK covers more than `recover`.
                    if self.snd_una < self.recover_end {
                        return;
                    }
                    self.recover_end = self.snd_max;
                    self.first_partial = true;
                }
                self.st.ssthresh = self.cc.ssthresh(&self.st);
                self.retransmit_first(out);
                self.st.cwnd = self.st.ssthresh + 3 * mss;
                self.in_recovery = true;
                self.cc.set_state(&mut self.st, CaState::Recovery);
            }
        }
        if self.counting() {
            self.stats.fast_recoveries += 1;
        }
        self.restart_rto();
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Segment>) {
        self.st.now = now;
        if self.persist_at.is_some_and(|p| p <= now) {
            // Window probe: send the next segment although the window is closed; the
            // receiver drops it if it still has no room, and its ACK carries the window.
            self.persist_at = None;
            self.persist_backoff += 1;
            if self.state == SenderState::Established && self.snd_una == self.snd_max {
                if let Some((len, fin)) = self.segment_at(self.snd_nxt) {
                    let seq = self.snd_nxt;
                    self.emit(seq, len, fin, out);
                    self.snd_nxt = seq + len as u64 + fin as u64;
                    self.sync_flight();
                }
            }
        }
        let Some(d) = self.rto_deadline else { return };
        if d > now {
            return;
        }
        self.rto_deadline = None;
        match self.state {
            SenderState::SynSent => {
                // RFC 6298 (5.5)-(5.6) for the SYN; Karn: no sample from it.
                self.syn_retx = true;
                self.rtt.back_off();
                out.push(self.syn());
                self.rto_deadline = Some(now + self.rtt.rto());
            }
            SenderState::Established => {
                if self.counting() {
                    self.stats.timeouts += 1;
                }
                self.sync_flight();
                // RFC 5681 (4), held constant across repeated timeouts of one segment.
                if self.rtt.backoff == 0 {
                    self.st.ssthresh = self.cc.ssthresh(&self.st);
                }
                self.st.cwnd = self.st.mss; // loss window
                self.in_recovery = false;
                self.dupacks = 0;
                self.recover_end = self.snd_max; // RFC 6582 §4
                self.snd_nxt = self.snd_una; // go back N
                self.board.clear_sacked(); // RFC 6675 §5.1: the receiver may renege
                self.rtt.back_off();
                self.in_loss = true;
                self.cc.set_state(&mut self.st, CaState::Loss);
                self.try_send(out);
                if self.snd_nxt == self.snd_una {
                    // A closed receiver window held the retransmission back: send it
                    // anyway, as a window probe.
                    if let Some((len, fin)) = self.segment_at(self.snd_una) {
                        self.emit(self.snd_una, len, fin, out);
                        self.snd_nxt = self.snd_una + len as u64 + fin as u64;
                    }
                }
                self.rto_deadline = Some(now + self.rtt.rto());
                self.record();
            }
            SenderState::Closed | SenderState::Done => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::reno::Reno;

    fn sender() -> Sender {
        let cfg = SenderConfig {
            mss: 1000,
            iw_bytes: 4000,
            initial_rto: SimDuration::from_secs(1),
            min_rto: SimDuration::from_secs(1),
            max_rto: SimDuration::from_secs(60),
            app_bytes: Some(10_000),
            recovery: RecoveryKind::NewReno,
            sack_permitted: false,
            warmup: SimTime::ZERO,
            initial_ssthresh: None,
            partial_ack_timer_every: false,
            limited_transmit: false,
        };
        Sender::new(cfg, Box::new(Reno), false)
    }

    fn ack(ack: u64, wnd: u64) -> Segment {
        Segment {
            from_sender: false,
            flags: ACK,
            seq: 1,
            ack,
            wnd,
            ..Default::default()
        }
    }

    #[test]
    fn zero_window_is_probed_by_the_persist_timer() {
        let mut s = sender();
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        out.clear();
        let synack = Segment {
            from_sender: false,
            flags: SYN | ACK,
            seq: 0,
            ack: 1,
            wnd: 0,
            ..Default::default()
        };
        s.on_segment(
            SimTime::ZERO + SimDuration::from_millis(100),
            &synack,
            &mut out,
        );
        assert_eq!(out.len(), 1, "only the handshake ACK: the window is closed");
        let t = s.next_timer().expect("persist timer armed");
        assert!(t > SimTime(100_000_000));
        out.clear();
        s.on_timer(t, &mut out);
        assert_eq!(out.len(), 1, "one probe");
        assert_eq!((out[0].seq, out[0].len), (1, 1000));
        // the receiver accepts it and opens its window: normal sending resumes
        out.clear();
        s.on_segment(
            t + SimDuration::from_millis(100),
            &ack(1001, 5000),
            &mut out,
        );
        assert!(out.len() >= 2, "{out:?}");
        assert!(s.persist_at.is_none());
    }

    #[test]
    fn persist_timer_backs_off_while_the_window_stays_shut() {
        let mut s = sender();
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        let synack = Segment {
            from_sender: false,
            flags: SYN | ACK,
            seq: 0,
            ack: 1,
            wnd: 0,
            ..Default::default()
        };
        s.on_segment(SimTime(1), &synack, &mut out);
        let t1 = s.next_timer().unwrap();
        out.clear();
        s.on_timer(t1, &mut out);
        // the probe is dropped; the receiver answers with a zero window again
        let now = t1 + SimDuration::from_millis(100);
        s.on_segment(now, &ack(1, 0), &mut out);
        // the probe stays unacknowledged; its retransmission timer sends it again even
        // though the window is still closed (a probe, not a stall)
        out.clear();
        let rto = s.next_timer().unwrap();
        s.on_timer(rto, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].seq, 1);
        assert_eq!(s.stats.timeouts, 1);
    }
}
