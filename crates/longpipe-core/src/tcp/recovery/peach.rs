//! TCP-Peach, TCP-Peach+ and (experimental) TCP-Cherry: congestion control for
//! satellite IP networks with low-priority probe segments. Window rules are in
//! [`crate::tcp::cc::peach`]; this file holds the algorithms that send probes. What the
//! papers give and what we chose is in `docs/notes/peach.md`.
//!
//! Probes are segments of the low-priority class ([`Class::Low`]; DSCP LE on the wire):
//! routers with a class-aware queue (`priority`, `peach-droptail`) serve them only with
//! capacity normal traffic leaves unused, so a probe that gets through shows spare
//! capacity, and one that does not shows congestion. Loss models hit both classes
//! alike. The receiver answers each probe with a flagged ACK (`probe_ack = "flagged"`,
//! the ACK is itself low priority), which the sender counts as a probe ACK and never as
//! a duplicate ACK; with `probe_ack = "plain"` (an unmodified receiver) probe ACKs look
//! like any ACK.
//!
//! - **TCP-Peach** (Akyildiz, Morabito, Palazzo, IEEE/ACM ToN 9(3), 2001). Probes are
//!   *dummy segments*: low-priority copies of the last data segment sent.
//!   *Sudden Start*: cwnd = 1; τ = RTT/rwnd; one data segment, then rwnd − 1 dummies
//!   spaced τ. *Congestion avoidance*: RFC 5681, plus one segment per probe ACK.
//!   *Fast Retransmit* on the third duplicate ACK, then *Rapid Recovery*: the state
//!   machine of seed 004's fig. 3 (below) with dummy segments, and NewReno's rule for
//!   missing segments (after a partial ACK, the segment at snd_una).
//! - **TCP-Peach+** (Akyildiz, Zhang, Fang, IEEE Comm. Letters 6(7), 2002; seed 004
//!   figs. 2–3). Probes are *NIL segments*: low-priority copies of real
//!   unacknowledged data, holes first, so a NIL that arrives both probes and repairs.
//!   *Jump Start* (fig. 2) as Sudden Start with NIL segments. *Quick Recovery* (fig. 3),
//!   on three duplicate ACKs after the fast retransmission:
//!   `cwnd ← cwnd/2; adsn ← cwnd; adps ← 0; pipe ← 2·cwnd − ndupacks + 1`; then on each
//!   ACK: a duplicate ACK `pipe −= 1`; a partial ACK `pipe −= amount acked`; a NIL ACK
//!   `cwnd += 1, adsn −= 1`; the recover ACK ends the phase; then
//!   `adps ← cwnd − pipe, nps ← min(maxburst, adps)`: if `nps > 0` send nps missing
//!   packets (the SACK scoreboard's holes, RFC 6675 NextSeg) and/or new packets,
//!   `pipe += nps`; else if `adsn > 0` send one NIL packet, `adsn −= 1`. Windows, pipe,
//!   adsn and adps count segments.
//! - **TCP-Cherry** (Utsumi, Zabir, Shiratori, Computer Communications 31(10), 2008),
//!   reconstructed from its published description, *experimental*: probes are
//!   *supplement segments* carrying real data. *Fast-Forward Start*: as Jump Start, but
//!   each supplement carries the next *new* data, so what gets through in the first
//!   round trip is delivered. *First-Aid Recovery*: Quick Recovery with supplements
//!   carrying the holes. In congestion avoidance it keeps probing: `ca_probes`
//!   supplements per smoothed RTT, with new data.
//!
//! The start phase probes for the receiver's window as advertised when it begins: at
//! connection start the SYN-ACK's unscaled window (at most 64 KiB); once a larger
//! (scaled) window is advertised, the difference is probed for the same way. After a
//! retransmission timeout the start phase runs again (`restart_after_rto`), keeping
//! RFC 5681's halved ssthresh for data ACKs.
//!
//! Why one file of ~890 lines (about 430 of code, the rest unit tests; the options are in
//! [`super::spec`]): the three variants
//! share one probe state machine and differ in a few branches; splitting them would copy it.

use super::{Recovery, DUP_THRESH};
use crate::element::Class;
use crate::tcp::cc::{peach::on_probe_ack, CaState, CongestionControl};
use crate::tcp::probe::Prober;
use crate::tcp::sack::Next;
use crate::tcp::seg::Seg;
use crate::tcp::tx::{SenderState, Tx};
use crate::time::{SimDuration, SimTime};

pub use super::spec::{PeachConfig, PeachSpec, ProbeAck, Variant};

/// The family's sender-side algorithms: a classic [`Recovery`] scheme that is its own
/// [`Prober`].
pub struct Peach {
    c: PeachConfig,
    /// SACK negotiated (Peach+ and Cherry find missing segments on the scoreboard).
    sack: bool,
    /// Start phase: probes still to send, their spacing τ, the next one's time.
    start_left: u32,
    tau: SimDuration,
    next_probe: Option<SimTime>,
    /// Cherry: the next congestion-avoidance supplement.
    next_ca_probe: Option<SimTime>,
    /// Fig. 3 state, in segments.
    pub pipe: i64,
    pub adsn: i64,
    /// An ACK arrived since the last fig. 3 sending step.
    acked: bool,
    /// End of the highest segment retransmitted in this episode (RFC 6675 HighRxt).
    high_rxt: u64,
    /// End of the highest hole a NIL copied in this episode.
    nil_hi: u64,
    /// Where the next NIL copy of unacknowledged data is looked for (cycling).
    nil_next: u64,
    /// The receiver's window (segments) the last start phase probed for; 0 when no
    /// start phase is to be extended (after a recovery episode).
    probed_rwnd: u64,
    /// No SACK: after a partial ACK the segment at snd_una is missing.
    partial_pending: bool,
    /// No partial ACK yet in this episode (the RTO restarts on the first only, as
    /// RFC 6582's "Impatient" variant).
    first_partial: bool,
}

impl Peach {
    pub fn new(c: PeachConfig, sack: bool) -> Self {
        Peach {
            c,
            sack,
            start_left: 0,
            tau: SimDuration(0),
            next_probe: None,
            next_ca_probe: None,
            pipe: 0,
            adsn: 0,
            acked: false,
            high_rxt: 0,
            nil_hi: 0,
            nil_next: 0,
            probed_rwnd: 0,
            partial_pending: false,
            first_partial: false,
        }
    }

    /// Whether the start phase is still sending probes.
    pub fn starting(&self) -> bool {
        self.next_probe.is_some()
    }

    /// Starts Sudden / Jump / Fast-Forward Start: τ = RTT/rwnd, rwnd − 1 probes.
    fn start_phase(&mut self, tx: &mut Tx) {
        let rwnd = (tx.peer_wnd / tx.st.mss).max(1);
        self.probe_round(tx, rwnd, rwnd - 1);
        self.nil_next = tx.snd_una;
    }

    /// `n` probes spaced RTT / `rwnd` segments, from now.
    fn probe_round(&mut self, tx: &Tx, rwnd: u64, n: u64) {
        let rtt = tx.st.srtt.unwrap_or_else(|| tx.rtt.rto());
        self.tau = SimDuration(rtt.0 / rwnd.max(1));
        self.start_left = n.min(u32::MAX as u64) as u32;
        self.next_probe = (self.start_left > 0).then(|| tx.st.now + self.tau);
        self.next_ca_probe = None;
        self.probed_rwnd = rwnd;
    }

    /// The start phase probed for the receiver's window as then advertised: at
    /// connection start that is the SYN-ACK's unscaled window (at most 64 KiB,
    /// RFC 7323 §2.2). When a larger window is advertised once the start phase is
    /// over, the difference is probed for in the same way (the first probe ACKs come
    /// with the first ACK that carries the scaled window).
    fn extend_start(&mut self, tx: &Tx) {
        let rwnd = tx.peer_wnd / tx.st.mss;
        if self.next_probe.is_none() && self.probed_rwnd > 0 && rwnd > self.probed_rwnd {
            self.probe_round(tx, rwnd, rwnd - self.probed_rwnd);
        }
    }

    /// Dummy segment: a copy of the last data segment sent (its payload, no FIN).
    fn send_dummy(&self, tx: &mut Tx, out: &mut Vec<Seg>) -> bool {
        let Some(s) = tx.board.last().copied() else {
            return false;
        };
        let len = tx.segment_at(s.seq).map_or(0, |(l, _)| l);
        if len == 0 {
            return false;
        }
        tx.emit_probe_copy(s.seq, len, false, out);
        true
    }

    /// NIL segment: a copy of unacknowledged data — in recovery the next SACK hole not
    /// yet retransmitted or copied, otherwise the unacknowledged, un-SACKed segments in
    /// turn (in recovery, those above what the episode retransmitted); a dummy when
    /// there are none.
    fn send_nil(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) -> bool {
        let mss = tx.st.mss;
        if tx.in_recovery && self.sack {
            if let Next::Retransmit(seq) =
                tx.board
                    .next_seg(mss, self.high_rxt.max(self.nil_hi), false, true)
            {
                if let Some((len, _)) = tx.segment_at(seq).filter(|s| s.0 > 0) {
                    self.nil_hi = seq + len as u64;
                    tx.emit_probe_copy(seq, len, false, out);
                    return true;
                }
            }
        }
        // in recovery, past what this episode has retransmitted or copied
        let low = if tx.in_recovery {
            tx.snd_una.max(self.high_rxt).max(self.nil_hi)
        } else {
            tx.snd_una
        };
        for _ in 0..2 {
            let mut s = self.nil_next.max(low);
            while s < tx.snd_max {
                let Some(e) = tx.board.get(s).copied() else {
                    break;
                };
                let len = tx.segment_at(s).map_or(0, |(l, _)| l);
                if !e.sacked && len > 0 {
                    self.nil_next = e.end;
                    tx.emit_probe_copy(s, len, false, out);
                    return true;
                }
                s = e.end;
            }
            self.nil_next = low; // wrap around once
        }
        self.send_dummy(tx, out)
    }

    /// Supplement segment (Cherry): the next new data at low priority if the
    /// receiver's window has room, else a NIL-like copy.
    fn send_supplement(&mut self, tx: &mut Tx, new_data: bool, out: &mut Vec<Seg>) -> bool {
        if new_data && tx.snd_nxt == tx.snd_max && tx.new_data_fits() {
            let seq = tx.snd_max;
            if let Some((len, fin)) = tx.segment_at(seq) {
                tx.emit_as(seq, len, fin, Class::Low, out);
                tx.snd_nxt = tx.snd_max;
                tx.sync_flight();
                return true;
            }
        }
        self.send_nil(tx, out)
    }

    /// One probe of this variant; `new_data` lets Cherry's supplements carry new data.
    fn send_probe(&mut self, tx: &mut Tx, new_data: bool, out: &mut Vec<Seg>) -> bool {
        match self.c.variant {
            Variant::Peach => self.send_dummy(tx, out),
            Variant::PeachPlus => self.send_nil(tx, out),
            Variant::Cherry => self.send_supplement(tx, new_data, out),
        }
    }

    /// Fast Retransmit, then fig. 3's initialisation.
    fn enter(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        let mss = tx.st.mss;
        tx.recover_end = tx.snd_max;
        tx.sync_flight();
        tx.st.ssthresh = cc.ssthresh(&tx.st);
        tx.st.cwnd = tx.st.ssthresh; // cwnd = cwnd / 2
        tx.in_recovery = true;
        cc.set_state(&mut tx.st, CaState::Recovery);
        tx.count_recovery();
        self.next_probe = None;
        self.start_left = 0;
        self.probed_rwnd = 0;
        let cwnd = (tx.st.cwnd / mss) as i64;
        self.adsn = cwnd;
        self.pipe = 2 * cwnd - tx.dupacks as i64 + 1;
        self.acked = false;
        self.partial_pending = false;
        self.first_partial = true;
        self.nil_hi = 0;
        self.high_rxt = tx.snd_una;
        if let Some((len, fin)) = tx.segment_at(tx.snd_una) {
            tx.emit(tx.snd_una, len, fin, out);
            self.high_rxt = tx.snd_una + len as u64 + fin as u64;
        }
        tx.restart_rto();
    }

    /// The next missing segment to retransmit in recovery, if any.
    fn next_missing(&mut self, tx: &Tx) -> Option<u64> {
        if self.sack && self.c.variant != Variant::Peach {
            match tx.board.next_seg(tx.st.mss, self.high_rxt, false, true) {
                Next::Retransmit(seq) => Some(seq),
                _ => None,
            }
        } else if std::mem::take(&mut self.partial_pending) {
            Some(tx.snd_una)
        } else {
            None
        }
    }

    /// Fig. 3's sending step after an ACK.
    fn step(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        let cwnd = (tx.st.cwnd / tx.st.mss) as i64;
        let adps = cwnd - self.pipe;
        let nps = adps.min(self.c.maxburst as i64);
        if nps > 0 {
            let mut sent = 0;
            while sent < nps {
                if let Some(seq) = self.next_missing(tx) {
                    let Some((len, fin)) = tx.segment_at(seq) else {
                        break;
                    };
                    tx.emit(seq, len, fin, out);
                    self.high_rxt = self.high_rxt.max(seq + len as u64 + fin as u64);
                } else if tx.new_data_fits() && tx.snd_nxt == tx.snd_max {
                    tx.send_new(out);
                } else {
                    break;
                }
                sent += 1;
            }
            self.pipe += sent;
        } else if self.adsn > 0 && self.send_probe(tx, false, out) {
            self.adsn -= 1;
        }
        tx.sync_flight();
    }

    fn schedule_ca_probe(&mut self, tx: &Tx) {
        if self.c.ca_probes > 0 && self.next_probe.is_none() {
            let rtt = tx.st.srtt.unwrap_or_else(|| tx.rtt.rto());
            self.next_ca_probe = Some(tx.st.now + SimDuration(rtt.0 / self.c.ca_probes as u64));
        }
    }
}

impl Recovery for Peach {
    fn name(&self) -> &'static str {
        self.c.variant.name()
    }

    fn on_dupack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        if tx.in_recovery {
            self.pipe -= 1;
            self.acked = true;
        } else if tx.dupacks == DUP_THRESH && tx.snd_una >= tx.recover_end {
            self.enter(tx, cc, out);
        }
    }

    fn on_ack(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        acked: u64,
        _: &mut Vec<Seg>,
    ) -> bool {
        self.acked = true;
        if tx.snd_una >= tx.recover_end {
            // the recover ACK: the phase ends with the window it has reached
            tx.st.ssthresh = tx.st.ssthresh.min(tx.st.cwnd);
            tx.exit_recovery(cc);
            self.schedule_ca_probe(tx);
            return true;
        }
        // partial ACK; the RTO restarts on the episode's first only (RFC 6582 §4
        // "Impatient"): a window with many holes ends in a timeout and a new start
        // phase rather than one repair per round trip
        self.pipe -= acked.div_ceil(tx.st.mss) as i64;
        if !self.sack || self.c.variant == Variant::Peach {
            self.partial_pending = true;
        }
        std::mem::take(&mut self.first_partial)
    }

    fn send(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        if std::mem::take(&mut self.acked) {
            self.step(tx, out);
        }
    }

    fn prober(&self) -> Option<&dyn Prober> {
        Some(self)
    }

    fn prober_mut(&mut self) -> Option<&mut dyn Prober> {
        Some(self)
    }
}

impl Prober for Peach {
    fn on_established(&mut self, tx: &mut Tx, _cc: &mut dyn CongestionControl, _: &mut Vec<Seg>) {
        // cwnd = 1; congestion avoidance after the start phase (ssthresh = cwnd)
        tx.st.cwnd = tx.st.mss;
        tx.st.ssthresh = tx.st.mss;
        self.start_phase(tx);
    }

    fn on_probe_ack(&mut self, tx: &mut Tx, _cc: &mut dyn CongestionControl, _: &mut Vec<Seg>) {
        if tx.in_recovery {
            // NIL ACK
            tx.st.cwnd += tx.st.mss;
            self.adsn -= 1;
            self.acked = true;
        } else {
            on_probe_ack(&mut tx.st, tx.peer_wnd);
            self.extend_start(tx);
        }
    }

    fn deadline(&self) -> Option<SimTime> {
        match (self.next_probe, self.next_ca_probe) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_deadline(&mut self, tx: &mut Tx, _cc: &mut dyn CongestionControl, out: &mut Vec<Seg>) {
        let now = tx.st.now;
        if tx.state != SenderState::Established {
            self.next_probe = None;
            self.next_ca_probe = None;
            return;
        }
        if self.next_probe.is_some_and(|t| t <= now) {
            // Sudden / Jump / Fast-Forward Start: one probe every τ
            let new_data = self.c.variant == Variant::Cherry;
            self.send_probe(tx, new_data, out);
            self.start_left -= 1;
            self.next_probe = (self.start_left > 0).then(|| now + self.tau);
            if self.next_probe.is_none() {
                self.schedule_ca_probe(tx);
            }
        }
        if self.next_ca_probe.is_some_and(|t| t <= now) {
            self.next_ca_probe = None;
            if !tx.in_recovery && !tx.in_loss {
                self.send_probe(tx, true, out);
            }
            self.schedule_ca_probe(tx);
        }
    }

    fn on_rto(&mut self, tx: &mut Tx, _cc: &mut dyn CongestionControl, _: &mut Vec<Seg>) {
        self.acked = false;
        self.partial_pending = false;
        self.pipe = 0;
        self.adsn = 0;
        self.next_probe = None;
        self.next_ca_probe = None;
        if self.c.restart_after_rto {
            self.start_phase(tx);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Hand-set state: a sender driven with hand-made ACKs (mss 1000), checked segment
    //! by segment against figs. 2–3.
    use super::*;
    use crate::tcp::cc::peach::PeachCc;
    use crate::tcp::profile::TcpProfile;
    use crate::tcp::recovery::RecoveryKind;
    use crate::tcp::seg::{SackList, ACK, SYN};
    use crate::tcp::sender::Sender;

    const MS: u64 = 1_000_000;

    fn sender(variant: Variant, sack: bool) -> Sender {
        let pc = PeachSpec::resolve(None, variant, "p").unwrap();
        let cfg = TcpProfile {
            iw_bytes: 4000,
            rto: crate::tcp::rtt::RtoBounds {
                initial: SimDuration::from_secs(3),
                min: SimDuration::from_secs(3),
                max: SimDuration::from_secs(60),
            },
            sack,
            recovery: RecoveryKind::Peach(pc),
            ..TcpProfile::classic(crate::tcp::config::TcpKind::Newreno, 1000).unwrap()
        };
        Sender::new(cfg, None, Box::new(PeachCc), false)
    }

    /// SYN at 0, SYN-ACK (window `wnd`) at 100 ms: RTT 100 ms. Returns what the
    /// sender sent on establishment.
    fn establish(s: &mut Sender, wnd: u64) -> Vec<Seg> {
        let mut out = vec![];
        s.start(SimTime(0), &mut out);
        out.clear();
        let synack = Seg {
            flags: SYN | ACK,
            ack: 1,
            wnd,
            syn_opts: Some((1000, 0, s.tx.cfg.sack)),
            ..Default::default()
        };
        s.on_segment(SimTime(100 * MS), &synack, &mut out);
        out
    }

    fn ack(ack: u64, sack: &[(u64, u64)], probe: bool) -> Seg {
        let mut l = SackList::default();
        for (i, b) in sack.iter().enumerate() {
            l.blocks[i] = *b;
            l.n += 1;
        }
        Seg {
            flags: ACK,
            seq: 1,
            ack,
            wnd: 100_000,
            sack: (l.n > 0).then(|| Box::new(l)),
            class: if probe { Class::Low } else { Class::Normal },
            ..Default::default()
        }
    }

    /// (seq, low priority) of each data segment.
    fn sent(out: &[Seg]) -> Vec<(u64, bool)> {
        out.iter()
            .filter(|s| s.len > 0)
            .map(|s| (s.seq, s.class == Class::Low))
            .collect()
    }

    fn feed(s: &mut Sender, t: u64, a: Seg) -> Vec<(u64, bool)> {
        let mut out = vec![];
        s.on_segment(SimTime(t * MS), &a, &mut out);
        sent(&out)
    }

    #[test]
    fn jump_start_sends_one_segment_then_rwnd_minus_one_probes_spaced_tau() {
        for (variant, new_data) in [
            (Variant::Peach, false),
            (Variant::PeachPlus, false),
            (Variant::Cherry, true),
        ] {
            let mut s = sender(variant, true);
            // rwnd = 10 segments, RTT 100 ms: τ = 10 ms, 9 probes
            let out = establish(&mut s, 10_000);
            assert_eq!(sent(&out), [(1, false)], "{variant:?}: cwnd = 1");
            assert_eq!((s.tx.st.cwnd, s.tx.st.ssthresh), (1000, 1000));
            let mut probes = vec![];
            // (Cherry goes on probing in congestion avoidance after 200 ms)
            while let Some(t) = s.next_timer().filter(|&t| t < SimTime(200 * MS)) {
                let mut out = vec![];
                s.on_timer(t, &mut out);
                for seg in out.iter().filter(|s| s.len > 0) {
                    probes.push((t.0 / MS, seg.seq, seg.class));
                }
            }
            assert_eq!(probes.len(), 9, "{variant:?}: {probes:?}");
            for (k, &(t, seq, class)) in probes.iter().enumerate() {
                assert_eq!(t, 110 + 10 * k as u64, "{variant:?}: spaced τ");
                assert_eq!(class, Class::Low);
                // dummies and NILs copy segment 1; Cherry's supplements carry new data
                let want = if new_data {
                    1 + 1000 * (k as u64 + 1)
                } else {
                    1
                };
                assert_eq!(seq, want, "{variant:?}");
            }
            assert_eq!(s.tx.stats.extra.probe_segments, 9);
            assert_eq!(s.tx.stats.segments_sent, 1, "probes are not data segments");
            let snd_max = if new_data { 10_001 } else { 1001 };
            assert_eq!(s.tx.snd_max, snd_max);
        }
    }

    #[test]
    fn probe_acks_add_a_segment_each_and_are_never_duplicate_acks() {
        let mut s = sender(Variant::Peach, false);
        establish(&mut s, 10_000);
        for _ in 0..9 {
            let t = s.next_timer().unwrap();
            s.on_timer(t, &mut vec![]);
        }
        // the data segment's ACK: congestion avoidance from one segment (+1 MSS)
        assert_eq!(
            feed(&mut s, 200, ack(1001, &[], false)),
            [(1001, false), (2001, false)]
        );
        assert_eq!(s.tx.st.cwnd, 2000);
        // nine dummy ACKs (ack = 1001, duplicates by number): each +1 segment, each
        // lets one more data segment out, and none counts as a duplicate ACK
        for k in 0..9 {
            let got = feed(&mut s, 210 + k, ack(1001, &[], true));
            assert_eq!(got, [(3001 + 1000 * k, false)], "probe ACK {k}");
            assert_eq!(s.tx.dupacks, 0);
        }
        assert_eq!(s.tx.st.cwnd, 11_000);
        assert_eq!(s.tx.stats.extra.probe_acks, 9);
        assert_eq!(s.tx.stats.fast_recoveries, 0);
    }

    /// 10 segments [1, 10001) in flight with cwnd 10 (hand-set), as after a start
    /// phase; the Jump Start's probes are not sent.
    fn ten_in_flight(variant: Variant, sack: bool) -> Sender {
        let mut s = sender(variant, sack);
        establish(&mut s, 100_000);
        s.tx.st.cwnd = 10_000;
        let mut out = vec![];
        s.tx.try_send(&mut out);
        assert_eq!(s.tx.snd_max, 10_001);
        s
    }

    #[test]
    fn quick_recovery_follows_fig_3() {
        // Cherry's First-Aid Recovery is the same machine with supplement segments
        for v in [Variant::PeachPlus, Variant::Cherry] {
            quick_recovery_trace(v);
        }
    }

    fn quick_recovery_trace(v: Variant) {
        let mut s = ten_in_flight(v, true);
        // segment 1 lost: duplicate ACKs SACK 1001.. one segment more each
        let dup = |k: u64| ack(1, &[(1001, 1001 + 1000 * k)], false);
        assert!(feed(&mut s, 200, dup(1)).is_empty());
        assert!(feed(&mut s, 201, dup(2)).is_empty());
        // third: fast retransmit; cwnd = 10/2 = 5; adsn = 5; pipe = 2·5 − 3 + 1 = 8
        assert_eq!(feed(&mut s, 202, dup(3)), [(1, false)]);
        assert!(s.tx.in_recovery);
        assert_eq!((s.tx.st.cwnd, s.tx.st.ssthresh), (5000, 5000));
        // pipe 7, 6, 5 against cwnd 5: adps ≤ 0, so a NIL each (copies of the
        // unacknowledged, un-SACKed data above what was retransmitted)
        assert_eq!(feed(&mut s, 203, dup(4)), [(5001, true)]);
        assert_eq!(feed(&mut s, 204, dup(5)), [(6001, true)]);
        assert_eq!(feed(&mut s, 205, dup(6)), [(7001, true)]);
        // pipe 4: adps = 1, no hole left, so one new segment (pipe back to 5)
        assert_eq!(feed(&mut s, 206, dup(7)), [(10_001, false)]);
        assert_eq!(feed(&mut s, 207, dup(8)), [(11_001, false)]);
        assert_eq!(feed(&mut s, 208, dup(9)), [(12_001, false)]);
        // a NIL ACK: cwnd 6 (adsn 2 → 1): adps = 6 − 5 = 1, one more segment
        assert_eq!(
            feed(&mut s, 209, ack(1, &[(1001, 10_001)], true)),
            [(13_001, false)]
        );
        assert_eq!(s.tx.st.cwnd, 6000);
        // the recover ACK ends the phase with the window reached: cwnd 6, 4 in flight
        let got = feed(&mut s, 300, ack(10_001, &[(10_001, 11_001)], false));
        assert!(!s.tx.in_recovery);
        assert_eq!(s.tx.st.cwnd, 6000);
        assert_eq!(got, [(14_001, false), (15_001, false)]);
        // NIL ACKs after the phase: +1 segment each (congestion avoidance rule)
        feed(&mut s, 301, ack(10_001, &[(10_001, 11_001)], true));
        feed(&mut s, 302, ack(10_001, &[(10_001, 11_001)], true));
        assert_eq!(s.tx.st.cwnd, 8000);
        assert_eq!(s.tx.stats.fast_recoveries, 1);
        assert_eq!(s.tx.stats.retransmitted_segments, 1);
        assert_eq!(s.tx.stats.extra.probe_segments, 3);
    }

    #[test]
    fn cherry_keeps_probing_in_congestion_avoidance_with_new_data() {
        let mut s = sender(Variant::Cherry, true);
        establish(&mut s, 10_000);
        // Fast-Forward Start: 9 supplements (new data 1001..9001) by 190 ms
        let mut t = SimTime(0);
        for _ in 0..9 {
            t = s.next_timer().unwrap();
            s.on_timer(t, &mut vec![]);
        }
        assert_eq!(t, SimTime(190 * MS));
        // everything acknowledged at once, the receiver's window grown to 100 segments
        let got = feed(&mut s, 200, ack(10_001, &[], false));
        assert!(!got.is_empty());
        let first = s.tx.snd_max;
        // then one supplement per smoothed RTT, with the next new data (the first one
        // scheduled at the end of the start phase, when SRTT was the handshake's 100 ms)
        let t = s.next_timer().unwrap();
        assert_eq!(
            t,
            SimTime(290 * MS),
            "scheduled one SRTT after the start phase"
        );
        let mut out = vec![];
        s.on_timer(t, &mut out);
        assert_eq!(sent(&out), [(first, true)]);
        assert_eq!(s.tx.snd_max, first + 1000, "a supplement sends new data");
        assert_eq!(
            s.next_timer(),
            Some(t + s.tx.st.srtt.unwrap()),
            "every SRTT"
        );
        // its ACK opens the window by a segment
        let cwnd = s.tx.st.cwnd;
        feed(&mut s, 300, ack(first + 1000, &[], true));
        assert!(s.tx.st.cwnd >= cwnd + 1000);
        // Peach+ sends nothing in congestion avoidance
        let mut p = sender(Variant::PeachPlus, true);
        establish(&mut p, 10_000);
        for _ in 0..9 {
            let t = p.next_timer().unwrap();
            p.on_timer(t, &mut vec![]);
        }
        feed(&mut p, 200, ack(1001, &[], false));
        assert!(p
            .next_timer()
            .is_none_or(|t| t == p.tx.rto_deadline.unwrap()));
    }

    #[test]
    fn probe_acks_classify_the_loss_link_error_restores_congestion_keeps_half() {
        // One segment lost out of a window of 10; the recovery halves cwnd to 5 and
        // sends probes (3 here). If they come back (a link error: spare capacity) each
        // adds a segment; if none does (congestion: a class-aware queue dropped them)
        // the halved window stays.
        for (v, sack) in [(Variant::Peach, false), (Variant::PeachPlus, true)] {
            let run = |answered: bool| {
                let mut s = ten_in_flight(v, sack);
                let dup = |k: u64| {
                    let blocks = [(1001, 1001 + 1000 * k)];
                    ack(1, if sack { &blocks[..] } else { &[] }, false)
                };
                let mut probes = vec![];
                for k in 1..=9 {
                    for (seq, low) in feed(&mut s, 200 + k, dup(k)) {
                        if low {
                            probes.push(seq);
                        }
                    }
                }
                assert_eq!(probes.len(), 3, "{v:?}: {probes:?}");
                assert_eq!(s.tx.st.cwnd, 5000, "{v:?}: halved");
                if answered {
                    for _ in &probes {
                        let blocks = [(1001, 10_001)];
                        feed(
                            &mut s,
                            260,
                            ack(1, if sack { &blocks[..] } else { &[] }, true),
                        );
                    }
                }
                // the retransmission's ACK covers the whole window: recovery ends
                feed(&mut s, 300, ack(13_001, &[], false));
                assert!(!s.tx.in_recovery);
                (s.tx.st.cwnd, s.tx.st.ssthresh, s.tx.stats.extra.probe_acks)
            };
            assert_eq!(run(false), (5000, 5000, 0), "{v:?}: congestion");
            assert_eq!(run(true), (8000, 5000, 3), "{v:?}: link error");
        }
    }

    #[test]
    fn quick_recovery_retransmits_sack_holes_before_new_data() {
        let mut s = ten_in_flight(Variant::PeachPlus, true);
        // segments 1 and 3001 lost
        let sacks = |k: u64| [(1001, 3001), (4001, 4001 + 1000 * k)];
        feed(&mut s, 200, ack(1, &[(1001, 2001)], false));
        feed(&mut s, 201, ack(1, &[(1001, 3001)], false));
        assert_eq!(feed(&mut s, 202, ack(1, &sacks(1), false)), [(1, false)]);
        // pipe 7: a NIL, and it copies the SACK hole 3001 (not yet retransmitted)
        assert_eq!(feed(&mut s, 203, ack(1, &sacks(2), false)), [(3001, true)]);
        // pipe 6, 5: NILs of the unSACKed data above the SACKed runs
        assert_eq!(feed(&mut s, 204, ack(1, &sacks(3), false)), [(7001, true)]);
        assert_eq!(feed(&mut s, 205, ack(1, &sacks(4), false)), [(8001, true)]);
        // pipe 4: adps 1: the hole 3001 is retransmitted at normal priority first
        assert_eq!(feed(&mut s, 206, ack(1, &sacks(5), false)), [(3001, false)]);
        assert_eq!(
            feed(&mut s, 207, ack(1, &sacks(6), false)),
            [(10_001, false)]
        );
    }

    #[test]
    fn rapid_recovery_uses_dummies_and_newreno_partial_acks() {
        // Peach without SACK: segments 1 and 3001 lost
        let mut s = ten_in_flight(Variant::Peach, false);
        feed(&mut s, 200, ack(1, &[], false));
        feed(&mut s, 201, ack(1, &[], false));
        assert_eq!(feed(&mut s, 202, ack(1, &[], false)), [(1, false)]);
        assert_eq!(s.tx.st.cwnd, 5000);
        // pipe 7, 6, 5: dummies, copies of the last segment sent (9001)
        for t in 203..206 {
            assert_eq!(feed(&mut s, t, ack(1, &[], false)), [(9001, true)]);
        }
        // pipe 4: adps 1, one new segment (pipe 5); again on the eighth duplicate
        assert_eq!(feed(&mut s, 206, ack(1, &[], false)), [(10_001, false)]);
        assert_eq!(feed(&mut s, 207, ack(1, &[], false)), [(11_001, false)]);
        // the retransmission's ACK: partial (3 segments): pipe 5 − 3 = 2, adps 3: the
        // missing segment at snd_una first, then new data
        assert_eq!(
            feed(&mut s, 300, ack(3001, &[], false)),
            [(3001, false), (12_001, false), (13_001, false)]
        );
        assert!(s.tx.in_recovery);
        // dummy ACKs: cwnd +1 each, one new segment each
        assert_eq!(feed(&mut s, 301, ack(3001, &[], true)), [(14_001, false)]);
        assert_eq!(s.tx.st.cwnd, 6000);
        // the recover ACK (everything up to the entry's snd_max = 10001)
        feed(&mut s, 400, ack(10_001, &[], false));
        assert!(!s.tx.in_recovery);
        assert_eq!(s.tx.stats.retransmitted_segments, 2);
        assert_eq!(s.tx.stats.fast_recoveries, 1);
    }

    #[test]
    fn timeout_restarts_the_start_phase() {
        let mut s = ten_in_flight(Variant::PeachPlus, false);
        // nothing comes back: the RTO (3 s) fires
        // (the Jump Start's probes were never sent: the first is due at once, and
        // goes out too)
        let mut out = vec![];
        let rto = s.tx.rto_deadline.unwrap();
        s.on_timer(rto, &mut out);
        assert_eq!(
            sent(&out),
            [(1, true), (1, false)],
            "go back N from one segment"
        );
        assert_eq!(s.tx.st.cwnd, 1000);
        // Jump Start again: rwnd 100 segments over the 100 ms RTT: τ = 1 ms
        let t = s.next_timer().unwrap();
        assert_eq!(t, rto + SimDuration::from_millis(1));
        let mut out = vec![];
        s.on_timer(t, &mut out);
        assert_eq!(sent(&out).len(), 1);
        assert!(out[0].class == Class::Low);
        // restart_after_rto = false: slow start instead, no probes
        let mut c = PeachSpec::resolve(None, Variant::PeachPlus, "p").unwrap();
        c.restart_after_rto = false;
        let mut p = Peach::new(c, false);
        p.on_rto(&mut s.tx, &mut PeachCc, &mut vec![]);
        assert_eq!(p.deadline(), None);
    }

    #[test]
    fn spec_checks() {
        let e = PeachSpec::resolve(
            Some(&PeachSpec {
                ca_probes: Some(2),
                ..Default::default()
            }),
            Variant::PeachPlus,
            "flow[0].peach",
        )
        .unwrap_err();
        assert_eq!(e.path, "flow[0].peach.ca_probes");
        let e = PeachSpec::resolve(
            Some(&PeachSpec {
                maxburst: Some(0),
                ..Default::default()
            }),
            Variant::Peach,
            "p",
        )
        .unwrap_err();
        assert_eq!(e.path, "p.maxburst");
        let c = PeachSpec::resolve(None, Variant::Cherry, "p").unwrap();
        assert_eq!(
            (c.maxburst, c.ca_probes, c.probe_ack),
            (4, 1, ProbeAck::Flagged)
        );
    }

    #[test]
    fn flagged_receiver_answers_each_probe_at_once_with_a_low_priority_ack() {
        use crate::tcp::receiver::Receiver;
        for flag in [true, false] {
            let cfg = TcpProfile {
                rwnd: 100_000,
                flag_probe_acks: flag,
                ..TcpProfile::classic(crate::tcp::config::TcpKind::Newreno, 1000).unwrap()
            };
            let mut r = Receiver::new(cfg, None);
            let mut out = vec![];
            let t = SimTime(0);
            r.on_segment(
                t,
                &Seg {
                    flags: SYN,
                    ..Default::default()
                },
                &mut out,
            );
            r.on_segment(t, &ack(1, &[], false), &mut out);
            out.clear();
            let data = |seq: u64, low: bool| Seg {
                flags: ACK,
                seq,
                ack: 1,
                len: 1000,
                class: if low { Class::Low } else { Class::Normal },
                ..Default::default()
            };
            // normal in-order data: the ACK is delayed
            r.on_segment(t, &data(1, false), &mut out);
            assert!(out.is_empty());
            // a NIL with new in-order data: ACKed at once (flagged), not delayed
            r.on_segment(t, &data(1001, true), &mut out);
            if flag {
                assert_eq!(out.len(), 1);
                assert_eq!((out[0].ack, out[0].class), (2001, Class::Low));
            } else {
                assert_eq!(out.len(), 1, "second segment: the delayed ACK goes out");
                assert_eq!((out[0].ack, out[0].class), (2001, Class::Normal));
            }
            out.clear();
            // a dummy (old data): answered at once in both modes; only the flag differs
            r.on_segment(t, &data(1, true), &mut out);
            assert_eq!(out.len(), 1);
            let want = if flag { Class::Low } else { Class::Normal };
            assert_eq!((out[0].ack, out[0].class), (2001, want));
            out.clear();
            // a normal duplicate is a normal duplicate ACK
            r.on_segment(t, &data(1, false), &mut out);
            assert_eq!(out[0].class, Class::Normal);
        }
    }
}
