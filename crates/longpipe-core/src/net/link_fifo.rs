//! The transmitter of a drop-tail link direction at a fixed rate, without a timer.
//!
//! A FIFO at a fixed rate needs no event to end a transmission: when a unit is
//! admitted, its transmission starts when the transmitter is next free (`free_at`, the
//! end of the unit before it) or at once, and ends its transmission time later. So the
//! direction emits the unit's delivery (`end + delay`) and its tap copy (at the start)
//! at admission, and the impairment decides at admission too (the loss models see units
//! in transmission order, as on the timer path; none depends on the time).
//!
//! A schedule that changes only the delay and the loss model (a *lazy* one, see
//! `link_sched.rs`) keeps this path: the timer path applies such changes as a
//! transmission ends, every change before that instant first; here the changes before a
//! transmission's end are applied when it is admitted. Transmissions end in the order
//! they are admitted, so the changes apply in the same order and before the same
//! transmissions, and the delay line stays FIFO unless the schedule lets units reorder.
//!
//! Drop-tail needs the queue at the arrival instant: the units admitted whose
//! transmission has not started. `ring` keeps, oldest first, the admitted units whose
//! transmission had not ended at the last instant the direction saw; after pruning
//! those that ended by `now`, its head is in transmission (its start is an arrival time
//! or the end of the unit before it, both no later than `now`) and the rest wait.
//!
//! Tie rule (the one difference from the timer path, where the order of two events at
//! one instant decided it): at an instant `t`, a transmission ending at `t` is finished
//! and the next one started before a unit arriving at `t` is offered to the queue.
//!
//! Invariants:
//! - after [`LinkDirection::advance_fifo`] to `now`, every unit in `ring` ends after
//!   `now`, `ring` is empty exactly when the transmitter is idle (`free_at <= now`), and
//!   `ring_bytes` is the sum of its units' sizes;
//! - a host's held units (see the module documentation of `link.rs`) exist only while
//!   the queue is full, so the ring is not empty then; they move into the queue at the
//!   instant a transmission ends, the only time the direction asks to be woken;
//! - counters are updated at admission for what will happen; [`Fifo::unhappened`] takes
//!   out of a snapshot at `now` what has not happened by then (a start, busy time, a
//!   loss at the end of a transmission), so `metrics(now)` equals the timer path's.

use super::{LinkCounters, LinkDirection, OUT, TAP};
use crate::element::{Class, Emit, Frame};
use crate::net::queue::Admission;
use crate::time::SimTime;
use std::collections::VecDeque;

/// One admitted unit's transmission: when it ends, and its size (the low 32 bits),
/// whether it is of low priority (bit 32) and lost (bit 33). Its start is not kept: the
/// ring's head started at [`Fifo::head_start`], every later unit when the one before it
/// ended (it was admitted while the transmitter was busy). (Two words, so that it is
/// handed to the ring's push in two registers: a struct of five fields went through
/// memory, and the push's 16-byte load of the narrow stores that built it could not be
/// forwarded from them: 3 % of dumbbell100's time.)
#[derive(Clone, Copy, Debug)]
struct Tx {
    end: SimTime,
    info: u64,
}

const TX_LOW: u64 = 1 << 32;
const TX_LOST: u64 = 1 << 33;

impl Tx {
    fn bytes(&self) -> u32 {
        self.info as u32
    }
    fn low(&self) -> bool {
        self.info & TX_LOW != 0
    }
    fn lost(&self) -> bool {
        self.info & TX_LOST != 0
    }
}

/// The timer-less transmitter's state.
pub(super) struct Fifo {
    ring: VecDeque<Tx>,
    /// When the ring's head started its transmission (a live emulator may read the
    /// counters at an instant before it: a unit read from its device just after).
    head_start: SimTime,
    ring_bytes: u64,
    /// The end of the last admitted unit's transmission.
    free_at: SimTime,
    admission: Admission,
}

impl Fifo {
    pub(super) fn new(admission: Admission) -> Self {
        Fifo {
            ring: VecDeque::new(),
            head_start: SimTime::ZERO,
            ring_bytes: 0,
            free_at: SimTime::ZERO,
            admission,
        }
    }

    /// Units waiting, as of the last instant pruned.
    pub(super) fn waiting(&self) -> usize {
        self.ring.len().saturating_sub(1)
    }

    /// Forgets the transmissions that ended by `t`.
    #[inline]
    fn prune(&mut self, t: SimTime) {
        if self.free_at <= t {
            // all of them (the last ends at `free_at`): the ring's storage is not read,
            // which on an idle direction (most of a thousand flows' access links) is a
            // cache miss saved
            self.ring.clear();
            self.ring_bytes = 0;
            return;
        }
        while let Some(x) = self.ring.front() {
            if x.end > t {
                break;
            }
            self.ring_bytes -= x.bytes() as u64;
            // the next one started as this one ended
            self.head_start = x.end;
            self.ring.pop_front();
        }
    }

    /// Takes out of the counters `c` (a snapshot at `now`) what has not happened by
    /// `now`: starts after it, busy time after it, losses at ends after it.
    pub(super) fn unhappened(&self, now: SimTime, c: &mut LinkCounters) {
        let mut start = self.head_start;
        for x in &self.ring {
            if start > now {
                c.packets -= 1;
                c.bytes -= x.bytes() as u64;
                c.busy_ns -= (x.end - start).as_nanos();
                if x.low() {
                    c.class.packets_low -= 1;
                }
            } else if x.end > now {
                c.busy_ns -= (x.end - now).as_nanos();
            }
            if x.lost() && x.end > now {
                c.drops_loss -= 1;
                if x.low() {
                    c.class.drops_loss_low -= 1;
                }
            }
            start = x.end;
        }
    }
}

impl<U: Frame + Clone + Send + 'static> LinkDirection<U> {
    fn fifo(&mut self) -> &mut Fifo {
        self.fifo.as_mut().expect("a timer-less direction")
    }

    /// An arriving unit: what is due first, then drop-tail at this instant.
    pub(super) fn handle_fifo(&mut self, now: SimTime, unit: U, out: &mut Vec<Emit<U>>) {
        self.advance_fifo(now, out);
        if self.holding {
            if let Some(h) = self.host.as_mut().filter(|h| h.is_local(&unit)) {
                h.held.push_back(unit);
                self.c.held += 1;
                return;
            }
        }
        let Err(refused) = self.offer_fifo(now, unit, out) else {
            return;
        };
        if let Some(h) = self.host.as_mut().filter(|h| h.is_local(&refused)) {
            h.held.push_back(refused);
            self.holding = true;
            self.c.held += 1;
            return;
        }
        self.c.drops_queue += 1;
        if refused.class() == Class::Low {
            self.c.class.drops_queue_low += 1;
        }
    }

    /// The wake-up a host's held units need: the end of the transmission in progress,
    /// when room appears.
    pub(super) fn poll_fifo(&self, f: &Fifo) -> Option<SimTime> {
        if !self.holding {
            return None;
        }
        debug_assert!(self.host.as_ref().is_some_and(|h| !h.held.is_empty()));
        debug_assert!(!f.ring.is_empty());
        f.ring.front().map(|x| x.end)
    }

    /// Brings the transmitter to `now`: each transmission ending by then is finished,
    /// in time order, and at each such instant a host's held units move into the room
    /// it leaves.
    #[inline]
    pub(super) fn advance_fifo(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
        if self.holding {
            self.release_held(now, out);
        }
        self.fifo().prune(now);
    }

    /// [`Self::advance_fifo`] while a host holds units: at each transmission's end by
    /// `now`, they move into the room it leaves.
    #[inline(never)]
    fn release_held(&mut self, now: SimTime, out: &mut Vec<Emit<U>>) {
        while self.holding {
            let t = match self.fifo().ring.front() {
                Some(x) if x.end <= now => x.end,
                _ => break,
            };
            self.fifo().prune(t);
            let h = self.host.as_mut().expect("checked");
            let mut held = std::mem::take(&mut h.held);
            while let Some(u) = held.pop_front() {
                if let Err(back) = self.offer_fifo(t, u, out) {
                    held.push_front(back);
                    break;
                }
            }
            self.holding = !held.is_empty();
            self.host.as_mut().expect("checked").held = held;
        }
    }

    /// Admits `unit` at `now` (the ring pruned to `now`) if the transmitter is idle or
    /// the waiting units leave room for it; hands it back otherwise.
    #[inline(always)]
    fn offer_fifo(&mut self, now: SimTime, unit: U, out: &mut Vec<Emit<U>>) -> Result<(), U> {
        let f = self.fifo();
        if let Some(head) = f.ring.front() {
            debug_assert!(f.head_start <= now && now < head.end);
            let waiting = f.ring.len() - 1;
            let bytes = f.ring_bytes - head.bytes() as u64;
            if !f.admission.admits(waiting, bytes, unit.wire_len()) {
                return Err(unit);
            }
            self.c.max_queue.update(waiting as u64 + 1);
        }
        self.transmit_fifo(now, unit, out);
        Ok(())
    }

    /// The transmitter, the impairment and the delay line for an admitted unit.
    #[inline(always)]
    fn transmit_fifo(&mut self, now: SimTime, unit: U, out: &mut Vec<Emit<U>>) {
        let size = unit.wire_len();
        let start = self.fifo().free_at.max(now);
        let end = start + self.rate.tx_time(size as u64);
        let low = unit.class() == Class::Low;
        self.c.packets += 1;
        self.c.bytes += size as u64;
        self.c.busy_ns += (end - start).as_nanos();
        if low {
            self.c.class.packets_low += 1;
        }
        if self.tap {
            let unit = unit.clone();
            out.push(if start == now {
                Emit::Now { port: TAP, unit }
            } else {
                Emit::At {
                    at: start,
                    port: TAP,
                    unit,
                }
            });
        }
        if self.sched.is_some() {
            // a lazy schedule (delay and loss changes): those before the end first
            self.changes_before(end, out);
        }
        let lost = self.loss.lose(&unit);
        if lost {
            self.c.drops_loss += 1;
            if low {
                self.c.class.drops_loss_low += 1;
            }
        } else {
            let at = end + self.delay;
            let at = if self.sched.is_some() {
                self.delay_line(at)
            } else {
                at
            };
            out.push(Emit::At {
                at,
                port: OUT,
                unit,
            });
        }
        let f = self.fifo();
        debug_assert!(f.ring.back().map_or(start == now, |x| x.end == start));
        if f.ring.is_empty() {
            f.head_start = start;
        }
        f.free_at = end;
        f.ring_bytes += size as u64;
        f.ring.push_back(Tx {
            end,
            info: size as u64 | if low { TX_LOW } else { 0 } | if lost { TX_LOST } else { 0 },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LinkDirConfig, LinkDirection, OUT, TAP};
    use crate::element::{Class, Element, Emit, Frame, PortId, TcpMeta};
    use crate::net::loss::{LossModel, LossState};
    use crate::net::queue::QueueConfig;
    use crate::rng::RngStream;
    use crate::time::{Rate, SimDuration, SimTime};
    use crate::units::Limit;

    /// A unit: (id, bytes, source address byte, low priority).
    #[derive(Clone, Debug, PartialEq)]
    struct G(u32, u32, u8, bool);
    impl Frame for G {
        fn wire_len(&self) -> u32 {
            self.1
        }
        fn class(&self) -> Class {
            if self.3 {
                Class::Low
            } else {
                Class::Normal
            }
        }
        fn tcp_meta(&self) -> Option<TcpMeta> {
            Some(TcpMeta {
                src: [self.2; 4],
                dst: [0; 4],
                sport: 0,
                dport: 0,
                seq: self.0,
                flags: 0,
                len: 0,
            })
        }
    }

    /// 1 byte per us, 10 ms.
    fn link(limit: Limit, loss: LossModel, host: bool, tap: bool) -> LinkDirection<G> {
        let cfg = LinkDirConfig {
            rate: Rate(8_000_000),
            delay: SimDuration::from_millis(10),
            queue: QueueConfig::droptail(limit),
            loss: loss.clone(),
            sched: None,
        };
        let mut l = LinkDirection::new(
            &cfg,
            LossState::new(loss, RngStream::new(1, "t")),
            RngStream::new(1, "q"),
        );
        if host {
            l.hold_local([7; 4]);
        }
        if tap {
            l.enable_tap();
        }
        l
    }

    type Log = Vec<(u64, PortId, u32)>;

    /// Runs `arrivals` (time, unit) through `l` as the driver would, under the tie rule:
    /// a wake-up due at an instant runs before a unit arriving at it. Every emit with
    /// the time it takes effect, sorted by (time, port) (stable: emission order within),
    /// and the counters at each arrival, between arrivals, and at `end`.
    fn drive(mut l: LinkDirection<G>, arrivals: &[(u64, G)], end: u64) -> (Log, Vec<String>) {
        let (mut out, mut log, mut snaps) = (vec![], vec![], vec![]);
        let flush = |t: u64, out: &mut Vec<Emit<G>>, log: &mut Log| {
            for e in out.drain(..) {
                log.push(match e {
                    Emit::Now { port, unit } => (t, port, unit.0),
                    Emit::At { at, port, unit } => (at.0, port, unit.0),
                });
            }
        };
        let wake_until = |l: &mut LinkDirection<G>, t: u64, out: &mut _, log: &mut _| {
            while let Some(w) = l.poll_timeout().filter(|w| w.0 <= t) {
                l.handle_timeout(w, out);
                flush(w.0, out, log);
            }
        };
        let mut prev = 0;
        for (t, u) in arrivals {
            let mid = (prev + t) / 2;
            wake_until(&mut l, mid, &mut out, &mut log);
            snaps.push(format!("{:?}", l.metrics(SimTime(mid))));
            wake_until(&mut l, *t, &mut out, &mut log);
            l.handle(SimTime(*t), 0, u.clone(), &mut out);
            flush(*t, &mut out, &mut log);
            snaps.push(format!("{:?}", l.metrics(SimTime(*t))));
            prev = *t;
        }
        wake_until(&mut l, end, &mut out, &mut log);
        snaps.push(format!("{:?}", l.metrics(SimTime(end))));
        log.sort_by_key(|x| (x.0, x.1));
        (log, snaps)
    }

    /// Bursts of arrivals on whole microseconds (so that many arrive exactly as a
    /// transmission ends), local and forwarded, normal and low priority.
    fn arrivals(seed: u64, n: u32) -> Vec<(u64, G)> {
        let mut x = seed | 1;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut t = 0;
        (0..n)
            .map(|i| {
                if next(3) == 0 {
                    t += next(3000) * 1000; // a gap; within a burst, same or next us
                } else {
                    t += next(2) * 1000;
                }
                let bytes = [40, 100, 576, 1500][next(4) as usize];
                (t, G(i, bytes, [7, 9][next(2) as usize], next(5) == 0))
            })
            .collect()
    }

    #[test]
    fn counters_read_before_the_last_arrival_leave_out_what_starts_after() {
        // a live emulator may read the counters at an instant before the last unit it
        // handed over (read from its device just after): the idle direction's
        // transmission starting at 2 ms has not happened at 1 ms, nor has a unit of
        // 100 kB (beyond 16 bits) queued behind it
        let mut l = link(Limit::Bytes(1_000_000), LossModel::None, false, false);
        let mut out = vec![];
        l.handle(SimTime(2_000_000), 0, G(0, 1000, 1, false), &mut out);
        l.handle(SimTime(2_000_000), 0, G(1, 100_000, 1, true), &mut out);
        let c = l.metrics(SimTime(1_000_000));
        assert_eq!((c.packets, c.bytes, c.busy_ns), (0, 0, 0));
        assert_eq!(c.class.packets_low, 0);
        // at 2.5 ms: the first is half sent, the second waits
        let c = l.metrics(SimTime(2_500_000));
        assert_eq!((c.packets, c.bytes, c.busy_ns), (1, 1000, 500_000));
        // after both: 101 ms of transmission at 1 byte per us
        let c = l.metrics(SimTime(200_000_000));
        assert_eq!((c.packets, c.bytes, c.busy_ns), (2, 101_000, 101_000_000));
        assert_eq!(c.class.packets_low, 1);
        // A (0 to 1 ms), B waiting behind it (1 to 2 ms), C at 1.5 ms (A forgotten
        // then): at 0.8 ms B has not started (A's share is gone with it: the reader
        // loses only what ended between its instant and the last arrival)
        let mut l = link(Limit::Packets(10), LossModel::None, false, false);
        l.handle(SimTime(0), 0, G(0, 1000, 1, false), &mut out);
        l.handle(SimTime(500_000), 0, G(1, 1000, 1, false), &mut out);
        l.handle(SimTime(1_500_000), 0, G(2, 1000, 1, false), &mut out);
        assert_eq!(l.metrics(SimTime(800_000)).packets, 1);
        assert_eq!(l.metrics(SimTime(1_500_000)).packets, 2);
    }

    #[test]
    fn units_beyond_16_bits_match_the_timer_path() {
        // sizes up to 200 kB through a byte limit: admission and counters read each
        // unit's size from its ring entry
        let a: Vec<(u64, G)> = (0..40u32)
            .map(|i| {
                (
                    i as u64 * 30_000_000,
                    G(i, [70_000, 200_000, 1500][i as usize % 3], 1, i % 4 == 0),
                )
            })
            .collect();
        for limit in [
            Limit::Bytes(250_000),
            Limit::Bytes(100_000),
            Limit::Packets(2),
        ] {
            let fast = link(limit, LossModel::Bernoulli { p: 0.2 }, false, false);
            let timer = link(limit, LossModel::Bernoulli { p: 0.2 }, false, false).with_timer();
            let end = a.last().unwrap().0 + 10_000_000_000;
            assert_eq!(drive(fast, &a, end), drive(timer, &a, end), "{limit:?}");
        }
    }

    #[test]
    fn a_ring_entry_is_two_words() {
        // passed to the ring's push in registers (see `Tx`)
        assert_eq!(std::mem::size_of::<super::Tx>(), 16);
    }

    #[test]
    fn the_timerless_path_matches_the_timer_path_under_the_tie_rule() {
        let models = [
            LossModel::None,
            LossModel::Bernoulli { p: 0.2 },
            LossModel::List {
                drop: vec![0, 3, 4, 50],
            },
        ];
        let mut cases = 0;
        for seed in 1..=6u64 {
            for limit in [Limit::Packets(1), Limit::Packets(4), Limit::Bytes(3000)] {
                for (k, loss) in models.iter().enumerate() {
                    for host in [false, true] {
                        let tap = (seed + k as u64) % 2 == 0;
                        let a = arrivals(seed * 7919 + k as u64, 300);
                        let end = a.last().unwrap().0 + 1_000_000_000;
                        let fast = link(limit, loss.clone(), host, tap);
                        assert!(fast.fifo.is_some());
                        let timer = link(limit, loss.clone(), host, tap).with_timer();
                        let (lf, sf) = drive(fast, &a, end);
                        let (lt, st) = drive(timer, &a, end);
                        assert_eq!(lf, lt, "seed {seed} {limit:?} {loss:?} host {host}");
                        assert_eq!(sf, st, "seed {seed} {limit:?} {loss:?} host {host}");
                        cases += 1;
                    }
                }
            }
        }
        assert_eq!(cases, 108);
    }

    #[test]
    fn a_transmission_ending_a_nanosecond_after_an_arrival_still_holds_the_transmitter() {
        // (the random arrivals above fall on whole microseconds, as do the ends)
        let mut l = link(Limit::Packets(1), LossModel::None, false, false);
        let mut out = vec![];
        l.handle(SimTime(0), 0, G(0, 1000, 9, false), &mut out); // ends at 1 ms
        l.handle(SimTime(999_999), 0, G(1, 1000, 9, false), &mut out); // waits
        l.handle(SimTime(999_999), 0, G(2, 1000, 9, false), &mut out); // no room
        assert_eq!(l.metrics(SimTime(999_999)).drops_queue, 1);
        // a nanosecond later 0 has ended and 1 started: room again
        l.handle(SimTime(1_000_000), 0, G(3, 1000, 9, false), &mut out);
        assert_eq!(l.metrics(SimTime(1_000_000)).drops_queue, 1);
        let ends: Vec<u64> = out
            .iter()
            .map(|e| match e {
                Emit::At { at, .. } => at.0,
                Emit::Now { .. } => 0,
            })
            .collect();
        assert_eq!(ends, [11_000_000, 12_000_000, 13_000_000]);
    }

    #[test]
    fn one_emit_per_unit_at_admission_and_no_wake_up_without_held_units() {
        let mut l = link(Limit::Packets(1), LossModel::None, false, true);
        let mut out = vec![];
        for i in 0..3 {
            l.handle(SimTime(0), 0, G(i, 1000, 9, false), &mut out);
        }
        let got: Vec<(PortId, u32, Option<u64>)> = out
            .iter()
            .map(|e| match e {
                Emit::Now { port, unit } => (*port, unit.0, None),
                Emit::At { at, port, unit } => (*port, unit.0, Some(at.0)),
            })
            .collect();
        // 0 starts at once (tap now), 1 waits (tap at its start), 2 is dropped
        assert_eq!(
            got,
            [
                (TAP, 0, None),
                (OUT, 0, Some(11_000_000)),
                (TAP, 1, Some(1_000_000)),
                (OUT, 1, Some(12_000_000)),
            ]
        );
        assert_eq!(l.poll_timeout(), None, "no transmitter timer");
        assert_eq!(l.queue_len(), 1);
        let m = l.metrics(SimTime(500_000));
        assert_eq!((m.packets, m.drops_queue, m.busy_ns), (1, 1, 500_000));
        // a unit arriving exactly as 0's transmission ends finds 1 started: room for it
        l.handle(SimTime(1_000_000), 0, G(3, 1000, 9, false), &mut out);
        assert_eq!(l.metrics(SimTime(1_000_000)).drops_queue, 1);
        let m = l.metrics(SimTime(3_000_000));
        assert_eq!((m.packets, m.bytes, m.busy_ns), (3, 3000, 3_000_000));
    }

    #[test]
    fn held_units_wake_the_direction_when_room_appears() {
        let mut l = link(Limit::Packets(1), LossModel::None, true, false);
        let mut out = vec![];
        for i in 0..4 {
            l.handle(SimTime(0), 0, G(i, 1000, 7, false), &mut out);
        }
        // 0 in transmission, 1 waiting, 2 and 3 held in the socket
        assert_eq!(l.metrics(SimTime(0)).held, 2);
        assert_eq!(l.poll_timeout(), Some(SimTime(1_000_000)));
        l.handle_timeout(SimTime(1_000_000), &mut out);
        assert_eq!(l.poll_timeout(), Some(SimTime(2_000_000)));
        l.handle_timeout(SimTime(2_000_000), &mut out);
        assert_eq!(l.poll_timeout(), None);
        let ends: Vec<u64> = out
            .iter()
            .map(|e| match e {
                Emit::At { at, .. } => at.0 - 10_000_000,
                Emit::Now { .. } => unreachable!("no tap"),
            })
            .collect();
        assert_eq!(ends, [1_000_000, 2_000_000, 3_000_000, 4_000_000]);
        let m = l.metrics(SimTime(4_000_000));
        assert_eq!((m.packets, m.drops_queue, m.held), (4, 0, 2));
    }
}
