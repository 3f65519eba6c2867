//! 3GPP TS 25.322 RLC acknowledged mode over one link direction (a radio bearer).
//!
//! Sender: SDUs (IP packets) are segmented and concatenated into PDUs of `pdu_payload`
//! octets plus a header; each TTI carries the PDU slots the payload rate gives it (the
//! k-th TTI ⌊(k+1)·R·TTI/P⌋ − ⌊k·R·TTI/P⌋ for P bits a PDU, so the rate holds on average
//! even below one PDU per TTI), NACKed PDUs
//! before new ones, new ones only inside the transmit window VT(S) − VT(A) < window.
//! Poll bit on the last PDU in the buffer, on the last retransmitted PDU, every
//! `poll_pdu` PDUs and on Timer_Poll expiry, held back while Timer_Poll_Prohibit runs.
//! A PDU is sent at most `max_dat` times; beyond that its SDUs are discarded (MRW), and
//! TCP sees them as lost.
//! Receiver: selective repeat; STATUS (cumulative ACK + list of missing PDUs) on a
//! polled PDU and when a gap is detected, spaced by Timer_Status_Prohibit; SDUs are
//! delivered in sequence.
//! Simplifications (documented in docs/notes/rlc.md): STATUS and MRW travel on the
//! reverse direction after its delay plus one TTI, without loss and without using its
//! capacity; PDU payload accounting ignores length indicators.
//!
//! An [`Element`] generic over the SDU it carries ([`Frame`]): output port [`OUT`]
//! delivers SDUs at the far end; port [`TAP`], when enabled, gets a copy of every SDU
//! the buffer accepts.

mod config;

pub use config::{RlcConfig, RlcCounters, RlcReport, RlcSpec};

use crate::element::{Element, Emit, Frame, PortId};
use crate::net::loss::LossState;
use crate::net::queue::Admission;
use crate::stats::Last;
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use crate::net::link::{OUT, TAP};

#[derive(Debug, Clone)]
struct Pdu {
    sn: u64,
    /// SDUs that end in this PDU, and all SDUs with bytes in it.
    ends: Vec<u64>,
    touches: (u64, u64),
    poll: bool,
}

#[derive(Debug, Clone)]
struct TxPdu {
    pdu: Pdu,
    acked: bool,
    sent: u32,
}

#[derive(Debug, Clone)]
struct Status {
    ack: u64,
    /// highest SN received + 1 at the receiver
    hr: u64,
    nacks: Vec<u64>,
}

pub struct RlcLink<U> {
    cfg: RlcConfig,
    /// The bearer's payload rate; TTI k carries slots(k + 1) − slots(k) PDUs.
    rate: Rate,
    /// Whole PDUs per TTI at this rate (the average may be a fraction more).
    pdus_per_tti: u32,
    delay: SimDuration,
    rev_delay: SimDuration,
    admission: Admission,
    loss: LossState,
    /// The time of the last call (poll_timeout answers relative to it).
    now: SimTime,
    tap: bool,
    // sender
    sdu_q: VecDeque<(u64, u32)>,
    queued_bytes: u64,
    head_used: u32,
    next_sdu: u64,
    packets: BTreeMap<u64, (U, SimTime)>,
    tx: VecDeque<TxPdu>,
    vt_a: u64,
    vt_s: u64,
    retx: BTreeSet<u64>,
    since_poll: u32,
    poll_wanted: bool,
    poll_deadline: Option<SimTime>,
    poll_sn: u64,
    last_poll: Option<SimTime>,
    // channel
    pdu_flight: VecDeque<(SimTime, Pdu)>,
    status_flight: VecDeque<(SimTime, Status)>,
    mrw_flight: VecDeque<(SimTime, Vec<u64>)>,
    // receiver
    rx: BTreeMap<u64, Pdu>,
    vr_r: u64,
    vr_h: u64,
    status_wanted: bool,
    last_status: Option<SimTime>,
    discarded: BTreeSet<u64>,
    last_tti: Option<SimTime>,
    pub stats: RlcCounters,
}

impl<U: Frame + Clone> RlcLink<U> {
    /// An RLC AM bearer of payload rate `rate` whose PDUs take `delay` and whose STATUS
    /// PDUs come back after `rev_delay`; its SDU buffer admits by `admission`.
    pub fn new(
        cfg: RlcConfig,
        rate: Rate,
        delay: SimDuration,
        rev_delay: SimDuration,
        admission: Admission,
        loss: LossState,
    ) -> Self {
        let bits = rate.bps() as u128 * cfg.tti.as_nanos() as u128 / 1_000_000_000;
        let pdus_per_tti = (bits / (cfg.pdu_payload as u128 * 8)).min(u32::MAX as u128) as u32;
        RlcLink {
            cfg,
            rate,
            pdus_per_tti,
            delay,
            rev_delay,
            admission,
            loss,
            now: SimTime::ZERO,
            tap: false,
            sdu_q: VecDeque::new(),
            queued_bytes: 0,
            head_used: 0,
            next_sdu: 0,
            packets: BTreeMap::new(),
            tx: VecDeque::new(),
            vt_a: 0,
            vt_s: 0,
            retx: BTreeSet::new(),
            since_poll: 0,
            poll_wanted: false,
            poll_deadline: None,
            poll_sn: 0,
            last_poll: None,
            pdu_flight: VecDeque::new(),
            status_flight: VecDeque::new(),
            mrw_flight: VecDeque::new(),
            rx: BTreeMap::new(),
            vr_r: 0,
            vr_h: 0,
            status_wanted: false,
            last_status: None,
            discarded: BTreeSet::new(),
            last_tti: None,
            stats: RlcCounters::default(),
        }
    }

    pub fn pdus_per_tti(&self) -> u32 {
        self.pdus_per_tti
    }

    /// PDU slots offered by the first `k` TTIs: ⌊k · rate · TTI / PDU bits⌋, exactly,
    /// so the payload rate is kept on average even below one PDU per TTI.
    fn slots(&self, k: u64) -> u64 {
        let bits = k as u128 * self.rate.bps() as u128 * self.cfg.tti.as_nanos() as u128;
        (bits / (1_000_000_000 * 8 * self.cfg.pdu_payload as u128)).min(u64::MAX as u128) as u64
    }

    /// Copies every SDU the buffer accepts to port [`TAP`].
    pub fn enable_tap(&mut self) {
        self.tap = true;
    }

    /// An SDU from the IP layer; returns it back if the SDU buffer is full.
    pub fn enqueue(&mut self, now: SimTime, sdu: U) -> Result<(), U> {
        let size = sdu.wire_len();
        if !self
            .admission
            .admits(self.sdu_q.len(), self.queued_bytes, size)
        {
            self.stats.sdus_dropped_queue += 1;
            return Err(sdu);
        }
        self.stats.sdus_in += 1;
        let id = self.next_sdu;
        self.next_sdu += 1;
        self.queued_bytes += size as u64;
        self.sdu_q.push_back((id, size));
        self.packets.insert(id, (sdu, now));
        Ok(())
    }

    fn next_tti(&self, now: SimTime) -> SimTime {
        let t = self.cfg.tti.as_nanos();
        SimTime(now.0.div_ceil(t) * t)
    }

    fn has_work(&self) -> bool {
        !self.retx.is_empty()
            || (!self.sdu_q.is_empty() && self.vt_s - self.vt_a < self.cfg.window)
            || (self.poll_wanted && self.vt_s > self.vt_a)
    }

    /// The next time `on_wake` must run.
    pub fn next_wake(&self, now: SimTime) -> Option<SimTime> {
        let mut t: Option<SimTime> = None;
        let mut m = |x: SimTime| t = Some(t.map_or(x, |y: SimTime| y.min(x)));
        if self.has_work() {
            let b = self.next_tti(now);
            m(if self.last_tti == Some(b) {
                b + self.cfg.tti
            } else {
                b
            });
        }
        if let Some(&(a, _)) = self.pdu_flight.front() {
            m(a);
        }
        if let Some(&(a, _)) = self.status_flight.front() {
            m(a);
        }
        if let Some(&(a, _)) = self.mrw_flight.front() {
            m(a);
        }
        if let Some(d) = self.poll_deadline {
            m(d);
        }
        if self.status_wanted {
            if let Some(l) = self.last_status {
                m((l + self.cfg.status_prohibit).max(now));
            }
        }
        t
    }

    /// Runs everything due at `now`; SDUs delivered to the far end go to `out` with
    /// their delivery times (>= now).
    pub fn on_wake(&mut self, now: SimTime, out: &mut Vec<(SimTime, U)>) {
        while self.pdu_flight.front().is_some_and(|(a, _)| *a <= now) {
            let (_, pdu) = self.pdu_flight.pop_front().unwrap();
            self.receive(now, pdu, out);
        }
        while self.mrw_flight.front().is_some_and(|(a, _)| *a <= now) {
            let (_, sns) = self.mrw_flight.pop_front().unwrap();
            self.discarded.extend(sns);
            self.advance_receiver(now, out);
        }
        while self.status_flight.front().is_some_and(|(a, _)| *a <= now) {
            let (_, st) = self.status_flight.pop_front().unwrap();
            self.on_status(st);
        }
        if self.poll_deadline.is_some_and(|d| d <= now) {
            self.poll_deadline = None;
            self.poll_wanted = true; // Timer_Poll expiry
        }
        if self.status_wanted
            && self
                .last_status
                .is_none_or(|l| l + self.cfg.status_prohibit <= now)
        {
            self.send_status(now);
        }
        if now.0.is_multiple_of(self.cfg.tti.as_nanos())
            && self.last_tti != Some(now)
            && self.has_work()
        {
            self.last_tti = Some(now);
            self.tti(now);
        }
    }

    fn tti(&mut self, now: SimTime) {
        let k = now.0 / self.cfg.tti.as_nanos();
        let mut slots = self.slots(k + 1) - self.slots(k);
        while slots > 0 {
            let (pdu, retransmission) = if let Some(sn) = self.retx.pop_first() {
                let i = (sn - self.vt_a) as usize;
                let Some(t) = self.tx.get_mut(i) else {
                    continue;
                };
                if t.acked {
                    continue;
                }
                if t.sent >= self.cfg.max_dat {
                    self.discard(now, sn);
                    continue;
                }
                t.sent += 1;
                let mut p = t.pdu.clone();
                p.poll = false;
                if self.retx.is_empty() {
                    self.poll_wanted = true; // last retransmitted PDU
                }
                (p, true)
            } else if !self.sdu_q.is_empty() && self.vt_s - self.vt_a < self.cfg.window {
                let p = self.build_pdu();
                self.tx.push_back(TxPdu {
                    pdu: p.clone(),
                    acked: false,
                    sent: 1,
                });
                self.since_poll += 1;
                let in_window = (self.vt_s - self.vt_a) * 100;
                if self.sdu_q.is_empty()
                    || (self.cfg.poll_pdu > 0 && self.since_poll >= self.cfg.poll_pdu)
                    || (self.cfg.poll_window > 0
                        && self.poll_deadline.is_none()
                        && in_window >= self.cfg.window * self.cfg.poll_window as u64)
                {
                    // last PDU in the buffer / every Poll_PDU / Poll_Window
                    self.poll_wanted = true;
                }
                (p, false)
            } else if self.poll_wanted && self.vt_s > self.vt_a {
                // Timer_Poll expired with nothing to send: repeat the newest PDU.
                let t = self.tx.back_mut().expect("unacked PDU");
                t.sent += 1;
                (t.pdu.clone(), true)
            } else {
                break;
            };
            let mut pdu = pdu;
            if self.poll_wanted
                && self
                    .last_poll
                    .is_none_or(|l| l + self.cfg.poll_prohibit <= now)
            {
                pdu.poll = true;
                self.poll_wanted = false;
                self.since_poll = 0;
                self.last_poll = Some(now);
                self.poll_sn = self.vt_s;
                self.poll_deadline = Some(now + self.cfg.poll_timer);
                self.stats.polls += 1;
            }
            self.stats.pdus_sent += 1;
            self.stats.slots_used += 1;
            if retransmission {
                self.stats.pdus_retransmitted += 1;
            }
            if self.loss.lose_bytes(self.cfg.pdu_payload + self.cfg.header) {
                self.stats.pdus_lost += 1;
            } else {
                let arrive = now + self.cfg.tti + self.delay + self.cfg.pdu_delay;
                self.pdu_flight.push_back((arrive, pdu));
            }
            slots -= 1;
        }
    }

    fn build_pdu(&mut self) -> Pdu {
        let sn = self.vt_s;
        self.vt_s += 1;
        let mut room = self.cfg.pdu_payload;
        let mut ends = Vec::new();
        let first = self.sdu_q.front().map(|s| s.0).unwrap_or(0);
        let mut last = first;
        while room > 0 {
            let Some(&(id, size)) = self.sdu_q.front() else {
                break;
            };
            last = id;
            let left = size - self.head_used;
            if left <= room {
                room -= left;
                ends.push(id);
                self.sdu_q.pop_front();
                self.queued_bytes -= size as u64;
                self.head_used = 0;
            } else {
                self.head_used += room;
                room = 0;
            }
        }
        Pdu {
            sn,
            ends,
            touches: (first, last),
            poll: false,
        }
    }

    /// MaxDAT reached: discard every SDU with bytes in this PDU and every PDU of them.
    fn discard(&mut self, now: SimTime, sn: u64) {
        let (lo, hi) = self.tx[(sn - self.vt_a) as usize].pdu.touches;
        let mut sns = Vec::new();
        for t in self.tx.iter_mut() {
            let (a, b) = t.pdu.touches;
            if a <= hi && b >= lo && !t.acked {
                t.acked = true;
                sns.push(t.pdu.sn);
            }
        }
        for id in lo..=hi {
            if self.packets.remove(&id).is_some() {
                self.stats.sdus_discarded += 1;
            }
        }
        self.retx.retain(|s| !sns.contains(s));
        self.mrw_flight
            .push_back((now + self.cfg.tti + self.delay, sns));
        self.advance_window();
    }

    fn advance_window(&mut self) {
        while self.tx.front().is_some_and(|t| t.acked) {
            self.tx.pop_front();
            self.vt_a += 1;
        }
    }

    fn on_status(&mut self, st: Status) {
        let nacks: BTreeSet<u64> = st.nacks.iter().copied().collect();
        for t in self.tx.iter_mut() {
            let sn = t.pdu.sn;
            if sn >= st.hr {
                break;
            }
            if sn < st.ack || !nacks.contains(&sn) {
                t.acked = true;
            } else if !t.acked {
                self.retx.insert(sn);
            }
        }
        if st.hr >= self.poll_sn {
            self.poll_deadline = None; // the poll was answered
        }
        self.retx.retain(|&s| s >= self.vt_a);
        self.advance_window();
        if self.vt_a == self.vt_s {
            self.poll_wanted = false; // everything acknowledged
        }
    }

    fn receive(&mut self, now: SimTime, pdu: Pdu, out: &mut Vec<(SimTime, U)>) {
        let sn = pdu.sn;
        let poll = pdu.poll;
        if sn >= self.vr_r && !self.rx.contains_key(&sn) {
            if sn > self.vr_h {
                self.status_wanted = true; // missing PDU detected
            }
            self.vr_h = self.vr_h.max(sn + 1);
            self.rx.insert(sn, pdu);
            self.advance_receiver(now, out);
        }
        if poll {
            self.status_wanted = true;
        }
        if self.status_wanted
            && self
                .last_status
                .is_none_or(|l| l + self.cfg.status_prohibit <= now)
        {
            self.send_status(now);
        }
    }

    fn advance_receiver(&mut self, now: SimTime, out: &mut Vec<(SimTime, U)>) {
        loop {
            if let Some(p) = self.rx.remove(&self.vr_r) {
                for id in p.ends {
                    if let Some((pkt, t_in)) = self.packets.remove(&id) {
                        self.stats.sdus_delivered += 1;
                        self.stats
                            .sdu_delay_ns
                            .0
                            .push((now - t_in).as_nanos() + self.cfg.sdu_delay.as_nanos());
                        out.push((now + self.cfg.sdu_delay, pkt));
                    }
                }
            } else if !self.discarded.remove(&self.vr_r) {
                break;
            }
            self.vr_r += 1;
        }
        self.vr_h = self.vr_h.max(self.vr_r);
    }

    fn send_status(&mut self, now: SimTime) {
        self.status_wanted = false;
        self.last_status = Some(now);
        self.stats.status_sent += 1;
        let nacks = (self.vr_r..self.vr_h)
            .filter(|s| !self.rx.contains_key(s) && !self.discarded.contains(s))
            .collect();
        let st = Status {
            ack: self.vr_r,
            hr: self.vr_h,
            nacks,
        };
        self.status_flight
            .push_back((now + self.rev_delay + self.cfg.tti, st));
    }
}

impl<U: Frame + Clone> Element<U> for RlcLink<U> {
    type Metrics = RlcCounters;

    fn handle(&mut self, now: SimTime, _port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        self.now = now;
        let copy = self.tap.then(|| unit.clone());
        if self.enqueue(now, unit).is_ok() {
            if let Some(unit) = copy {
                out.push(Emit::Now { port: TAP, unit });
            }
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.next_wake(self.now)
    }

    fn handle_timeout(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
        self.now = now;
        let mut delivered = Vec::new();
        self.on_wake(now, &mut delivered);
        out.extend(delivered.into_iter().map(|(at, unit)| Emit::At {
            at,
            port: OUT,
            unit,
        }));
    }

    fn metrics(&self, now: SimTime) -> RlcCounters {
        let mut c = self.stats.clone();
        c.slots = self.slots(now.0.div_ceil(self.cfg.tti.as_nanos()));
        c.pdus_per_tti = Last(self.pdus_per_tti);
        c
    }
}
