//! The data receiver of a flow (the passive opener).
//!
//! Finite buffer, advertised window with window scaling (RFC 7323), delayed ACK
//! (RFC 1122 §4.2.3.2, RFC 5681 §4.2: every second segment, timer, immediate ACK on
//! out-of-order data and on a segment that fills a gap), in-order delivery to the
//! application, which reads at once (so the advertised window stays the buffer size;
//! out-of-order data waits in a reassembly queue as in 4.4BSD), the receiver side of
//! ECN ([`super::ecn`]), and, for the TCP-Peach family, ACKs that flag the answer to a
//! low-priority probe ([`ReceiverConfig::flag_probe_acks`]).
//!
//! A slow reader ([`Receiver::set_read_rate`], a flow's `app.read_rate`): the
//! application reads in-order data at a given rate; what it has not read holds the
//! buffer, so the advertised window is the buffer minus the unread bytes (the right
//! edge never moves left: data arriving and staying unread shrinks the window by as
//! much as it advances `rcv_nxt`). When reading reopens a window that had fallen to
//! half the buffer or less, to at least twice what it was and one segment, an ACK
//! announces it at once (Linux `tcp_cleanup_rbuf`); otherwise the next ACK carries it.
//! `delivered` counts what the application has read.
//!
//! The receiving half of a two-way connection ([`super::duplex`]) uses hooks of its own:
//! it learns the peer's SYN from a SYN-ACK ([`Receiver::accept_synack`]), lends its
//! acknowledgement to our data segments ([`Receiver::ack_fields`]) and acknowledges the
//! peer's FIN without closing our direction ([`Receiver::set_half`]).
//!
//! Why one file of ~900 lines (about 230 of tests): one receiver state machine whose
//! parts (reassembly, ACK policy, SACK/D-SACK, timestamps, the FIN, the slow reader's
//! window) all act on the same sequence state and ACK.

use super::ecn::EcnReceiver;
use super::profile::TcpProfile;
use super::rtt::RttEstimator;
use super::seg::{SackList, Seg, ACK, CWR, ECE, FIN, SYN};
use super::timestamps::{ts_clock, Paws, TsRecent};
use crate::element::Class;
use crate::stats::Last;
use crate::time::{Rate, SimDuration, SimTime};

/// Retransmissions of our FIN before giving up (Linux `tcp_orphan_retries` default).
const FIN_RETRIES: u32 = 8;

/// RFC 7323 §2.3: smallest shift so that the buffer fits 16 bits, at most 14.
pub fn window_shift(buffer: u64) -> u8 {
    let mut s = 0u8;
    while (buffer >> s) > 65_535 && s < 14 {
        s += 1;
    }
    s
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Listen,
    SynReceived,
    Established,
}

pub struct Receiver {
    /// The flow's TCP profile (the receiver uses its buffer `rwnd`, delayed ACKs, SACK,
    /// D-SACK, timestamps, ECN, quick ACKs, probe-ACK flagging and the RTO bounds for
    /// its FIN).
    cfg: TcpProfile,
    /// Bytes of a sized transfer (its completion time is recorded); None = unlimited.
    app_bytes: Option<u64>,
    state: State,
    pub wscale: u8,
    adv_wnd: u64,
    /// The right edge of the window advertised so far (exclusive): RFC 1122 §4.2.2.16 /
    /// RFC 9293 §3.8.6.2.2, a receiver does not move it left, and accepts data up to it.
    edge: u64,
    pub rcv_nxt: u64,
    /// Out-of-order ranges [start, end), sorted, disjoint, above rcv_nxt.
    ooo: Vec<(u64, u64)>,
    /// SACK negotiated (our config and the peer's SYN).
    sack_on: bool,
    /// Left edges of the most recently changed out-of-order blocks, newest first
    /// (RFC 2018 §4: the first block reports the most recent segment).
    recent: Vec<u64>,
    fin_seq: Option<u64>,
    our_seq: u64,
    unacked_segs: u32,
    delack_deadline: Option<SimTime>,
    ecn: EcnReceiver,
    /// RTT estimate for our FIN's retransmission timer: sampled from the SYN-ACK unless
    /// it was sent more than once (Karn).
    rtt: RttEstimator,
    synack_sent: Option<(SimTime, u32)>,
    /// Our FIN (its sequence number) once sent; its retransmission timer until the
    /// peer acknowledges it (RFC 9293 LAST-ACK).
    own_fin: Option<u64>,
    fin_acked: bool,
    fin_deadline: Option<SimTime>,
    fin_retx: u32,
    /// The current time (for timestamps on what we send).
    now: SimTime,
    /// Timestamps negotiated, and what to echo (RFC 7323).
    ts_on: bool,
    ts: TsRecent,
    /// A D-SACK block for the next ACK (RFC 2883): a duplicate we received.
    dsack: Option<(u64, u64)>,
    /// Segments still acknowledged at once (Linux quick-ACK mode).
    quick: u32,
    data_seen: bool,
    /// A slow reader, when the application does not read at once.
    reader: Option<Reader>,
    /// The receiving half of a two-way connection: the peer's FIN closes only its
    /// direction.
    half: bool,
    pub stats: ReceiverCounters,
}

/// An application that reads in-order data at `rate`.
#[derive(Debug, Clone)]
struct Reader {
    rate: Rate,
    /// Delivered in order, not yet read.
    unread: u64,
    /// Reading is accounted up to here; `carry` is the remainder (bit·ns / 1e9) of the
    /// last fractional byte.
    since: SimTime,
    carry: u128,
    /// When reading next frees enough to matter (a window update, or all read).
    wake: Option<SimTime>,
}

const NS_PER_S: u128 = 1_000_000_000;

/// What our next segment acknowledges: the receiving half's ACK, carried by a pure ACK
/// or lent to a data segment ([`Receiver::ack_fields`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckFields {
    pub ack: u64,
    pub wnd: u64,
    pub sack: Option<Box<SackList>>,
    /// The timestamp to echo (TSecr), when timestamps are on.
    pub ts_echo: Option<u32>,
    /// ECE while congestion is being echoed (RFC 3168).
    pub flags: u8,
}

crate::counters! {
    /// Counters of a data receiver.
    pub struct ReceiverCounters {
        /// Data bytes delivered in order to the application.
        pub delivered: u64,
        /// When the last byte of a sized transfer was delivered.
        pub completed_at: Last<Option<SimTime>>,
    }
}

impl Receiver {
    /// The receiving end of a flow of `cfg`, receiving `app_bytes` (None: unlimited).
    pub fn new(cfg: TcpProfile, app_bytes: Option<u64>) -> Self {
        let wscale = window_shift(cfg.rwnd);
        let adv_wnd = (cfg.rwnd >> wscale) << wscale;
        let ecn = EcnReceiver::new(cfg.ecn);
        Receiver {
            state: State::Listen,
            wscale,
            adv_wnd,
            edge: 0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            sack_on: false,
            recent: Vec::new(),
            fin_seq: None,
            our_seq: 1,
            unacked_segs: 0,
            delack_deadline: None,
            ecn,
            rtt: RttEstimator::new(cfg.rto.initial, cfg.rto.min, cfg.rto.max),
            synack_sent: None,
            own_fin: None,
            fin_acked: false,
            fin_deadline: None,
            fin_retx: 0,
            now: SimTime::ZERO,
            ts_on: false,
            ts: TsRecent::default(),
            dsack: None,
            quick: 0,
            data_seen: false,
            reader: None,
            half: false,
            stats: ReceiverCounters::default(),
            cfg,
            app_bytes,
        }
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        let t = match (self.delack_deadline, self.fin_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match (t, self.reader.as_ref().and_then(|r| r.wake)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The application reads at `rate` instead of at once.
    pub fn set_read_rate(&mut self, rate: Rate) {
        self.reader = Some(Reader {
            rate,
            unread: 0,
            since: SimTime::ZERO,
            carry: 0,
            wake: None,
        });
    }

    /// Makes this the receiving half of a two-way connection: the peer's FIN is
    /// acknowledged at once and closes only the peer's direction (our FIN is the
    /// sending half's).
    pub fn set_half(&mut self) {
        self.half = true;
    }

    /// Bytes delivered in order that the application has not read yet.
    pub fn unread(&self) -> u64 {
        self.reader.as_ref().map_or(0, |r| r.unread)
    }

    /// The window our SYN offers (never scaled, RFC 7323 §2.2).
    pub fn syn_window(&self) -> u64 {
        self.cfg.rwnd.min(65_535)
    }

    /// Whether our SYN-ACK has been answered (or our SYN-ACK's peer SYN was learned
    /// from its SYN-ACK): data may flow.
    pub fn established(&self) -> bool {
        self.state == State::Established
    }

    /// The active side of a two-way connection learns the peer's SYN from its SYN-ACK
    /// (sequence space, SACK, timestamps, ECN): established, nothing to send.
    pub fn accept_synack(&mut self, seg: &Seg) {
        if self.state != State::Listen {
            return;
        }
        self.state = State::Established;
        self.rcv_nxt = seg.seq + 1;
        self.sack_on = self.cfg.sack && seg.syn_opts.is_some_and(|o| o.2);
        self.ts_on = self.cfg.timestamps && seg.ts.is_some();
        if let (true, Some((tsval, _))) = (self.ts_on, seg.ts) {
            self.ts.recent = Some(tsval);
        }
        // RFC 3168 §6.1.1: a SYN-ACK with ECE (and not CWR) accepts ECN
        self.ecn.on = self.ecn.wanted && seg.flags & (ECE | CWR) == ECE;
    }

    /// Our SYN-ACK again (its retransmission timer is the sending half's SYN timer).
    pub fn synack(&mut self, now: SimTime) -> Seg {
        self.now = now;
        let n = self.synack_sent.map_or(0, |s| s.1);
        self.synack_sent = Some((now, n + 1));
        let ts = self.ts_opt();
        Seg {
            flags: SYN | ACK | self.ecn.synack_flags(),
            seq: 0,
            ack: 1,
            wnd: self.syn_window(),
            len: 0,
            syn_opts: Some((self.cfg.mss.min(65_535) as u16, self.wscale, self.sack_on)),
            ts,
            ..Default::default()
        }
    }

    /// The acknowledgement our next segment carries, as if we sent an ACK now: the
    /// delayed-ACK timer stops and a pending D-SACK is used (a data segment of the
    /// sending half acknowledges everything received, RFC 1122 §4.2.3.2).
    pub fn ack_fields(&mut self) -> AckFields {
        if self.unacked_segs > 0 {
            self.quick = self.quick.saturating_sub(1);
        }
        self.unacked_segs = 0;
        self.delack_deadline = None;
        let sack = self.sack_blocks();
        let ts = self.ts_opt();
        AckFields {
            ack: self.rcv_nxt,
            wnd: self.window(),
            sack,
            ts_echo: ts.map(|t| t.1),
            flags: self.ecn.ack_flags(),
        }
    }

    /// Reading up to `now`; sends a window update when reading reopened a small window.
    fn read(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        let Some(r) = self.reader.as_mut() else {
            return;
        };
        if r.unread == 0 {
            r.since = now;
            r.carry = 0;
            r.wake = None;
            return;
        }
        let budget = r.rate.bps() as u128 * (now - r.since).0 as u128 + r.carry;
        let can = budget / (8 * NS_PER_S);
        let n = (can.min(r.unread as u128)) as u64;
        r.carry = if n == r.unread {
            0
        } else {
            budget % (8 * NS_PER_S)
        };
        r.since = now;
        r.unread -= n;
        if n > 0 {
            self.app_read(now, n);
            self.reopen(out);
        }
        self.schedule_read();
    }

    /// The window after the application read: advertise it at once if it was small and
    /// has at least doubled (Linux `tcp_cleanup_rbuf`, with receiver-side SWS avoidance:
    /// never less than a segment, RFC 1122 §4.2.3.3).
    fn reopen(&mut self, out: &mut Vec<Seg>) {
        let wnd = self.free_window();
        let small = 2 * self.adv_wnd <= self.cfg.rwnd;
        let update = small && wnd >= 2 * self.adv_wnd && wnd >= self.cfg.mss as u64;
        if wnd > self.adv_wnd {
            self.adv_wnd = wnd;
            if update && self.state == State::Established {
                self.ack(out, 0);
            }
        }
    }

    /// The buffer minus what is held unread, in window-scale units.
    fn free_window(&self) -> u64 {
        let free = self.cfg.rwnd.saturating_sub(self.unread());
        (free >> self.wscale) << self.wscale
    }

    /// The next time reading matters: when the window would be announced, or when
    /// everything is read.
    fn schedule_read(&mut self) {
        let adv = self.adv_wnd;
        let (buffer, mss) = (self.cfg.rwnd, self.cfg.mss as u64);
        let Some(r) = self.reader.as_mut() else {
            return;
        };
        if r.unread == 0 {
            r.wake = None;
            return;
        }
        let free = buffer.saturating_sub(r.unread);
        // bytes to read before the window reaches max(2 × adv, mss), when adv is small
        let target = (2 * adv).max(mss);
        let need = if 2 * adv <= buffer && target > free {
            (target - free).min(r.unread)
        } else {
            r.unread
        };
        let bits = need as u128 * 8 * NS_PER_S;
        let ns = bits.saturating_sub(r.carry).div_ceil(r.rate.bps() as u128);
        r.wake = Some(r.since + SimDuration(ns.min(u64::MAX as u128 / 2) as u64));
    }

    /// Whether our FIN has been sent and acknowledged: the connection is closed in both
    /// directions.
    pub fn closed(&self) -> bool {
        self.fin_acked
    }

    /// For an application that does not read at once (a split gateway): `unread` bytes
    /// are held, so the window is the buffer minus them. Sends a window update when the
    /// window has opened by at least two segments since it was last advertised.
    pub fn set_unread(&mut self, unread: u64, out: &mut Vec<Seg>) {
        let free = self.cfg.rwnd.saturating_sub(unread);
        let wnd = (free >> self.wscale) << self.wscale;
        // what the peer may send now: the free space last advertised, or the right edge
        // kept (the window never shrinks)
        let open = self.adv_wnd.max(self.edge.saturating_sub(self.rcv_nxt));
        let opened = wnd >= open + 2 * self.cfg.mss as u64;
        self.adv_wnd = wnd;
        if opened && self.state == State::Established {
            self.ack(out, 0);
        }
    }

    /// Whether the peer's FIN has been received (in order).
    pub fn fin_received(&self) -> bool {
        self.fin_seq.is_some_and(|f| self.rcv_nxt > f)
    }

    /// The block of `ooo` that contains `seq`.
    fn block_of(&self, seq: u64) -> Option<(u64, u64)> {
        let i = self.ooo.partition_point(|r| r.1 <= seq);
        self.ooo.get(i).copied().filter(|r| r.0 <= seq)
    }

    /// RFC 2018 §4: up to 4 blocks (3 beside timestamps), the most recently changed
    /// first; a pending D-SACK block goes first (RFC 2883 §4).
    fn sack_blocks(&mut self) -> Option<Box<SackList>> {
        let dsack = self.dsack.take();
        if !self.sack_on || (self.ooo.is_empty() && dsack.is_none()) {
            return None;
        }
        let max = if self.ts_on { 3 } else { 4 };
        let mut l = SackList::default();
        if let Some(d) = dsack {
            l.blocks[0] = d;
            l.n = 1;
        }
        for &left in &self.recent {
            if let Some(b) = self.block_of(left) {
                if l.n < max && !l.blocks[dsack.is_some() as usize..l.n as usize].contains(&b) {
                    l.blocks[l.n as usize] = b;
                    l.n += 1;
                }
            }
        }
        (l.n > 0).then(|| Box::new(l))
    }

    /// Our timestamps on a segment acknowledging `rcv_nxt` (RFC 7323).
    fn ts_opt(&mut self) -> Option<(u32, u32)> {
        self.ts_on
            .then(|| (ts_clock(self.now), self.ts.echo(self.rcv_nxt)))
    }

    /// Records a duplicate [l, r) for a D-SACK (RFC 2883), when on.
    fn note_dup(&mut self, l: u64, r: u64) {
        if self.cfg.dsack && self.sack_on && l < r {
            self.dsack = Some((l, r));
        }
    }

    /// The window to advertise now: the buffer's free space, but never less than keeps
    /// the right edge already advertised (rounded up to the window scale's unit, so the
    /// scaled field does not retreat either, as Linux's `tcp_select_window`).
    fn window(&mut self) -> u64 {
        let unit = 1u64 << self.wscale;
        let keep = self.edge.saturating_sub(self.rcv_nxt).div_ceil(unit) * unit;
        let w = self.adv_wnd.max(keep);
        self.edge = self.edge.max(self.rcv_nxt + w);
        w
    }

    fn ack(&mut self, out: &mut Vec<Seg>, extra_flags: u8) {
        let f = self.ack_fields();
        out.push(Seg {
            flags: ACK | extra_flags | f.flags,
            seq: self.our_seq,
            ack: f.ack,
            wnd: f.wnd,
            sack: f.sack,
            ts: f.ts_echo.map(|e| (ts_clock(self.now), e)),
            ..Default::default()
        });
        if extra_flags & FIN != 0 {
            self.our_seq += 1;
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Seg>) {
        self.now = now;
        self.read(now, out);
        if let Some(d) = self.delack_deadline {
            if d <= now {
                self.ack(out, 0);
            }
        }
        if self.fin_deadline.is_some_and(|d| d <= now) {
            // RFC 9293 / RFC 6298 (5.4)-(5.6): retransmit our FIN, back off the timer.
            self.fin_deadline = None;
            if self.fin_retx < FIN_RETRIES {
                self.fin_retx += 1;
                self.rtt.back_off();
                self.resend_fin(out);
                self.fin_deadline = Some(now + self.rtt.rto());
            }
        }
    }

    /// Sends our FIN again (with the current acknowledgement).
    fn resend_fin(&mut self, out: &mut Vec<Seg>) {
        let Some(f) = self.own_fin else { return };
        self.unacked_segs = 0;
        self.delack_deadline = None;
        let sack = self.sack_blocks(); // a D-SACK for what we got again
        let ts = self.ts_opt();
        out.push(Seg {
            flags: ACK | FIN | self.ecn.ack_flags(),
            seq: f,
            ack: self.rcv_nxt,
            wnd: self.window(),
            len: 0,
            syn_opts: None,
            sack,
            ts,
            ..Default::default()
        });
    }

    /// A segment that needs an immediate answer: our FIN again while it is
    /// unacknowledged (the peer's repeated FIN means ours was lost), else an ACK.
    fn answer(&mut self, out: &mut Vec<Seg>) {
        if self.own_fin.is_some() && !self.fin_acked {
            self.resend_fin(out);
        } else {
            self.ack(out, 0);
        }
    }

    /// A segment from the sender; ACKs go to `out`.
    pub fn on_segment(&mut self, now: SimTime, seg: &Seg, out: &mut Vec<Seg>) {
        self.now = now;
        self.read(now, out);
        let n = out.len();
        let established = self.state == State::Established;
        let ce_echo = established && self.ecn.on_data(seg);
        let probe =
            self.cfg.flag_probe_acks && seg.class == Class::Low && seg.seq_len() > 0 && established;
        self.segment(now, seg, out);
        if (probe || ce_echo) && out.len() == n && self.state == State::Established {
            self.ack(out, 0); // at once: a probe's answer, or the first CE echo
        }
        if probe {
            for a in &mut out[n..] {
                a.class = Class::Low;
            }
        }
    }

    fn segment(&mut self, now: SimTime, seg: &Seg, out: &mut Vec<Seg>) {
        if seg.flags & SYN != 0 {
            // First SYN or a retransmitted one: (re)send the SYN-ACK. The window in a
            // SYN segment is never scaled (RFC 7323 §2.2).
            if self.state == State::Listen {
                self.state = State::SynReceived;
                self.rcv_nxt = 1;
                self.sack_on = self.cfg.sack && seg.syn_opts.is_some_and(|o| o.2);
                self.ecn.on_syn(seg.flags);
                self.ts_on = self.cfg.timestamps && seg.ts.is_some();
            }
            if let (true, Some((tsval, _))) = (self.ts_on, seg.ts) {
                self.ts.recent = Some(tsval);
            }
            let n = self.synack_sent.map_or(0, |s| s.1);
            self.synack_sent = Some((now, n + 1));
            let ts = self.ts_opt();
            let wnd = self.cfg.rwnd.min(65_535);
            self.edge = self.edge.max(1 + wnd);
            out.push(Seg {
                flags: SYN | ACK | self.ecn.synack_flags(),
                seq: 0,
                ack: 1,
                wnd,
                len: 0,
                syn_opts: Some((self.cfg.mss.min(65_535) as u16, self.wscale, self.sack_on)),
                ts,
                ..Default::default()
            });
            return;
        }
        if self.ts_on {
            if let Some((tsval, _)) = seg.ts {
                if self.ts.on_segment(seg.seq, tsval) == Paws::Reject {
                    // RFC 7323 §5.3 R1: an old duplicate; acknowledge it and drop it
                    if seg.seq_len() > 0 {
                        self.ack(out, 0);
                    }
                    return;
                }
            }
        }
        if self.state == State::Listen {
            return;
        }
        if seg.flags & ACK != 0 && self.state == State::SynReceived {
            self.state = State::Established;
            if let Some((t, 1)) = self.synack_sent {
                self.rtt.sample(now - t); // Karn: only an unrepeated SYN-ACK
            }
        }
        if seg.flags & ACK != 0 && self.own_fin.is_some_and(|f| seg.ack > f) {
            self.fin_acked = true;
            self.fin_deadline = None;
        }
        if seg.seq_len() == 0 {
            return;
        }
        let start = seg.seq;
        let data_end = seg.seq + seg.len as u64;
        if seg.flags & FIN != 0 {
            self.fin_seq = Some(data_end);
        }
        // Ranges (out-of-order blocks, D-SACKs) cover the segment's whole sequence
        // space, its FIN included (Linux `end_seq`): the sender's record of a segment
        // does, so a SACK block can report the FIN-carrying segment.
        let end = seg.end();
        if !self.data_seen && seg.len > 0 {
            // Linux: the first data segment starts quick-ACK mode
            self.data_seen = true;
            self.enter_quickack();
        }
        if end <= self.rcv_nxt {
            // Entirely old (a retransmission of data we hold, or of the FIN): answer at
            // once, with a D-SACK for it; Linux then ACKs the next segments at once too.
            self.note_dup(start, end);
            self.enter_quickack();
            self.answer(out);
            return;
        }
        if start < self.rcv_nxt {
            self.note_dup(start, self.rcv_nxt); // partly old
        }
        if start >= self.edge.max(self.rcv_nxt + self.adv_wnd) {
            self.ack(out, 0); // beyond the window: drop, re-advertise
            return;
        }
        if start > self.rcv_nxt {
            if self.block_of(start).is_some_and(|(_, e)| e >= end) {
                self.note_dup(start, end); // held already
            }
            self.insert_ooo(start, end);
            self.note_recent(start);
            self.ack(out, 0); // RFC 5681 §4.2: immediate duplicate ACK
            return;
        }
        let filled_gap = !self.ooo.is_empty();
        let before = self.rcv_nxt;
        self.rcv_nxt = data_end;
        while let Some(&(s, e)) = self.ooo.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.remove(0);
        }
        // the FIN's sequence number is not data: stop before it, and take it below
        if let Some(f) = self.fin_seq.filter(|&f| self.rcv_nxt > f) {
            self.rcv_nxt = f;
        }
        self.deliver(now, self.rcv_nxt - before);
        if self.fin_seq == Some(self.rcv_nxt) && self.half {
            // the peer's direction is closed; ours stays open: acknowledge at once
            self.rcv_nxt += 1;
            self.ack(out, 0);
            return;
        }
        if self.fin_seq == Some(self.rcv_nxt) {
            self.rcv_nxt += 1;
            // Passive close at once: ACK the FIN and send ours, with its retransmission
            // timer (RFC 9293 CLOSE-WAIT -> LAST-ACK).
            self.own_fin = Some(self.our_seq);
            self.ack(out, FIN);
            self.fin_deadline = Some(now + self.rtt.rto());
            return;
        }
        self.unacked_segs += 1;
        if filled_gap || !self.cfg.delayed_ack || self.unacked_segs >= 2 || self.quick > 0 {
            self.ack(out, 0);
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.cfg.delayed_ack_timeout);
        }
    }

    /// Linux `tcp_enter_quickack_mode` / `tcp_incr_quickack`: ACK the next segments at
    /// once, as many as half the window in segments, at most `quickack`.
    fn enter_quickack(&mut self) {
        let n = self.cfg.quickack;
        if n == 0 {
            return;
        }
        let q = (self.adv_wnd / (2 * self.cfg.mss as u64)).max(2) as u32;
        self.quick = self.quick.max(q.min(n));
    }

    /// `bytes` more in order: read at once, or held for a slow reader (whose unread
    /// bytes shrink the window).
    fn deliver(&mut self, now: SimTime, bytes: u64) {
        match self.reader.as_mut() {
            None => self.app_read(now, bytes),
            Some(r) => {
                r.unread += bytes;
                self.adv_wnd = self.free_window();
                self.schedule_read();
            }
        }
    }

    /// The application has read `bytes` more.
    fn app_read(&mut self, now: SimTime, bytes: u64) {
        let st = &mut self.stats;
        st.delivered += bytes;
        if st.completed_at.0.is_none() && self.app_bytes == Some(st.delivered) {
            st.completed_at = Last(Some(now));
        }
    }

    /// Data bytes delivered in order to the application so far.
    pub fn delivered(&self) -> u64 {
        self.stats.delivered
    }

    /// Moves the block holding `seq` to the front of the recency list; forgets blocks
    /// that were merged or delivered.
    fn note_recent(&mut self, seq: u64) {
        let Some(b) = self.block_of(seq) else { return };
        let mut rec = vec![b.0];
        for &left in &self.recent {
            if let Some(o) = self.block_of(left) {
                if !rec.contains(&o.0) {
                    rec.push(o.0);
                }
            }
        }
        rec.truncate(8);
        self.recent = rec;
    }

    fn insert_ooo(&mut self, s: u64, e: u64) {
        let i = self.ooo.partition_point(|r| r.1 < s);
        let mut ns = s;
        let mut ne = e;
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= ne {
            ns = ns.min(self.ooo[j].0);
            ne = ne.max(self.ooo[j].1);
            j += 1;
        }
        self.ooo.splice(i..j, [(ns, ne)]);
    }

    /// Out-of-order ranges held (for SACK and tests).
    pub fn ooo_ranges(&self) -> &[(u64, u64)] {
        &self.ooo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;

    fn rx(delayed: bool) -> Receiver {
        let cfg = TcpProfile {
            rwnd: 200_000,
            delayed_ack: delayed,
            ..TcpProfile::classic(crate::tcp::config::TcpKind::Newreno, 1000).unwrap()
        };
        let mut r = Receiver::new(cfg, None);
        let mut out = vec![];
        r.on_segment(
            SimTime(0),
            &Seg {
                flags: SYN,
                ..Default::default()
            },
            &mut out,
        );
        assert_eq!(out[0].flags, SYN | ACK);
        r
    }

    fn data(seq: u64) -> Seg {
        Seg {
            flags: ACK,
            seq,
            ack: 1,
            wnd: 65535,
            len: 1000,
            ..Default::default()
        }
    }

    #[test]
    fn window_scale() {
        assert_eq!(window_shift(65_535), 0);
        assert_eq!(window_shift(65_536), 1);
        assert_eq!(window_shift(1 << 30), 14);
        assert_eq!(rx(true).adv_wnd, (200_000 >> 2) << 2);
    }

    #[test]
    fn delayed_ack_every_second_segment_and_timer() {
        let mut r = rx(true);
        let mut out = vec![];
        r.on_segment(SimTime(1), &data(1), &mut out);
        assert!(out.is_empty());
        assert_eq!(
            r.next_timer(),
            Some(SimTime(1) + SimDuration::from_millis(200))
        );
        r.on_segment(SimTime(2), &data(1001), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 2001);
        out.clear();
        r.on_segment(SimTime(3), &data(2001), &mut out);
        r.on_timer(SimTime(3) + SimDuration::from_millis(200), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 3001);
    }

    #[test]
    fn sack_only_when_configured_and_offered() {
        // RFC 2018: SACK-permitted in the SYN-ACK, and SACK blocks in ACKs, only if this
        // end is configured for SACK and the peer's SYN offered it
        for (configured, offered, on) in [
            (true, true, true),
            (false, true, false),
            (true, false, false),
        ] {
            let mut r = rx(true);
            r.cfg.sack = configured;
            r.state = State::Listen;
            let mut out = vec![];
            let syn = Seg {
                flags: SYN,
                syn_opts: Some((1000, 0, offered)),
                ..Default::default()
            };
            r.on_segment(SimTime(0), &syn, &mut out);
            assert_eq!(
                out[0].syn_opts.map(|o| o.2),
                Some(on),
                "{configured} {offered}"
            );
            out.clear();
            r.on_segment(SimTime(1), &data(1001), &mut out);
            assert_eq!(
                out[0].sack.is_some(),
                on,
                "a hole: SACK blocks iff negotiated"
            );
        }
    }

    #[test]
    fn unread_bytes_shrink_the_window_and_reading_them_sends_an_update() {
        // a split gateway's receiver: bytes held unread come off the advertised window;
        // once they are read and the window has opened by two segments or more, a window
        // update goes out at once (not only with the next data's ACK)
        let mut r = rx(false);
        let mut out = vec![];
        r.set_unread(150_000, &mut out);
        assert!(out.is_empty(), "a shrinking window sends nothing");
        r.on_segment(SimTime(1), &data(1), &mut out);
        assert_eq!(
            out.last().map(|a| a.wnd),
            Some(64_536),
            "not the 50 000 B free (200 000 B buffer − unread): the SYN-ACK's right edge \
             (1 + 65 535) is kept, rounded up to the scale unit (RFC 1122 §4.2.2.16)"
        );
        out.clear();
        r.set_unread(149_000, &mut out);
        assert!(out.is_empty(), "opened by one segment only");
        r.set_unread(0, &mut out);
        assert_eq!(out.len(), 1, "a window update");
        assert_eq!(
            (out[0].ack, out[0].wnd),
            (1001, 200_000),
            "the whole buffer"
        );
    }

    #[test]
    fn timestamps_only_when_configured_and_offered() {
        // RFC 7323 §3.2: TSopt in the SYN-ACK and in every later segment only if this
        // end uses timestamps and the peer's SYN carried them
        for (configured, offered, on) in [
            (true, true, true),
            (false, true, false),
            (true, false, false),
        ] {
            let mut r = rx(true);
            r.cfg.timestamps = configured;
            r.state = State::Listen;
            let mut out = vec![];
            let syn = Seg {
                flags: SYN,
                syn_opts: Some((1000, 0, false)),
                ts: offered.then_some((7, 0)),
                ..Default::default()
            };
            r.on_segment(SimTime(0), &syn, &mut out);
            assert_eq!(out[0].ts.is_some(), on, "SYN-ACK {configured} {offered}");
            out.clear();
            let mut d = data(1);
            d.ts = offered.then_some((8, 1));
            r.on_segment(SimTime(1_000_000), &d, &mut out);
            r.on_timer(SimTime(1_000_000_000), &mut out);
            assert!(!out.is_empty());
            assert!(
                out.iter().all(|a| a.ts.is_some() == on),
                "ACKs {configured} {offered}"
            );
            if on {
                assert_eq!(out[0].ts.unwrap().1, 8, "TSecr echoes the data's TSval");
            }
        }
    }

    #[test]
    fn out_of_order_and_gap_fill_ack_immediately() {
        let mut r = rx(true);
        let mut out = vec![];
        r.on_segment(SimTime(1), &data(1001), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 1); // duplicate ACK
        r.on_segment(SimTime(2), &data(3001), &mut out);
        assert_eq!(r.ooo_ranges(), &[(1001, 2001), (3001, 4001)]);
        r.on_segment(SimTime(3), &data(1), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[2].ack, 2001); // partial gap fill, immediate
        r.on_segment(SimTime(4), &data(2001), &mut out);
        assert_eq!(out[3].ack, 4001);
        assert_eq!(r.delivered(), 4000);
    }

    #[test]
    fn the_right_edge_never_moves_left_and_data_up_to_it_is_accepted() {
        // RFC 1122 §4.2.2.16 / RFC 9293 §3.8.6.2.2: a split gateway's receiver advertised
        // 1000 B at ACK 8001 (right edge 9001); its buffer then fills (the client has not
        // read): the next ACK still advertises up to 9001, and the segment 8001-9000 the
        // sender was invited to send is taken, not dropped
        let cfg = TcpProfile {
            rwnd: 10_000,
            delayed_ack: false,
            ..TcpProfile::classic(crate::tcp::config::TcpKind::Newreno, 1000).unwrap()
        };
        let mut r = Receiver::new(cfg, None);
        let mut out = vec![];
        let syn = Seg {
            flags: SYN,
            ..Default::default()
        };
        r.on_segment(SimTime(0), &syn, &mut out);
        assert_eq!(out[0].wnd, 10_000);
        for k in 0..8 {
            // 1000 B in, the application holds all of it: the free space shrinks
            r.set_unread(1000 * (k + 2), &mut out);
            r.on_segment(SimTime(1 + k), &data(1 + 1000 * k), &mut out);
        }
        let a = out.last().unwrap();
        assert_eq!(
            (a.ack, a.wnd),
            (8001, 2000),
            "the edge 10 001 of the SYN-ACK"
        );
        // the application now holds 10 000 B: no free space, but 8001-10 000 was promised
        out.clear();
        r.set_unread(10_000, &mut out);
        r.on_segment(SimTime(20), &data(8001), &mut out);
        let a = out.last().unwrap();
        assert_eq!(a.ack, 9001, "taken");
        assert_eq!(a.wnd, 1000, "up to the edge 10 001, not 0");
        r.on_segment(SimTime(21), &data(9001), &mut out);
        let a = out.last().unwrap();
        assert_eq!(
            (a.ack, a.wnd),
            (10_001, 0),
            "the edge reached: now the window is 0"
        );
        // beyond the edge: dropped
        r.on_segment(SimTime(22), &data(10_001), &mut out);
        assert_eq!(out.last().unwrap().ack, 10_001);
    }
}
