//! One direction of an ATM link: the buffer and transmitter at its sending end, cell
//! loss, the propagation delay, and what its receiving end takes.
//!
//! Sending end ([`Feed`]):
//! - a host adapter takes packets, numbers them as AAL5 PDUs ([`Segmenter`]) and sends
//!   their cells back to back at the line rate; its buffer (the link's `queue`) holds
//!   packets waiting, the one being sent not counted;
//! - a switch output port takes cells and decides each by its [`Discard`] policy from
//!   the cells waiting when it arrives.
//!
//! Receiving end ([`Sink`]): cells go on to a switch; a host or router adapter
//! reassembles ([`Reassembler`]) and receives packets.
//!
//! Timing is exact and needs no timer: cells are served first-in first-out, the k-th
//! cell of a busy period that began at s ends at s + ⌈k·424·10⁹ / rate⌉ ns (no
//! rounding drift), so an admitted cell's departure is fixed at admission, and the cells
//! waiting at time t follow from the count of cells whose transmission has ended. The
//! line emits each cell (or reassembled packet) at admission, timed for its arrival at
//! the far end; emissions are in time order. Counters that count transmissions count
//! them when scheduled; busy time is counted up to the present.
//!
//! (Over 600 lines with its tests, which drive each feed, sink and discard case.)

use super::aal5::{Reassembler, Segmenter};
use super::cell::{Cell, CellUnit, CELL_BITS, CELL_BYTES};
use super::discard::{Discard, Drop};
use super::{PerIndex, VcCounters, VcTable};
use crate::element::{emit_with, Element, Emit, PortId};
use crate::net::link::{LinkCounters, OUT};
use crate::net::loss::LossState;
use crate::net::packet::Packet;
use crate::net::queue::Admission;
use crate::stats::Peak;
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;
use std::sync::Arc;

/// What feeds the line at its sending end.
pub enum Feed {
    /// A host adapter: packets in, AAL5 segmentation, LLC/SNAP if `llc`.
    Adapter {
        seg: Segmenter,
        llc: bool,
        admission: Admission,
        /// Packets admitted whose first cell has not started: (start, bytes).
        waiting: VecDeque<(SimTime, u32)>,
        bytes: u64,
    },
    /// A switch output port under a discard policy.
    Port(Discard),
}

/// What the receiving end takes.
pub enum Sink {
    /// Cells, into a switch.
    Cells,
    /// Reassembled packets, into a host or router.
    Reassemble(Reassembler),
}

/// Nanoseconds to send `cells` back to back at `rate`, rounded up. In 64 bits while the
/// product fits (busy periods of up to 43 million cells): the same quotient as in 128.
fn cells_time_ns(cells: u64, rate: Rate) -> u128 {
    match cells.checked_mul(CELL_BITS * 1_000_000_000) {
        Some(bits) => bits.div_ceil(rate.bps()) as u128,
        None => (cells as u128 * CELL_BITS as u128 * 1_000_000_000).div_ceil(rate.bps() as u128),
    }
}

/// Whole cells sent in `ns` nanoseconds at `rate` (64 bits while the product fits).
fn cells_sent_in(ns: u64, rate: Rate) -> u64 {
    match ns.checked_mul(rate.bps()) {
        Some(x) => x / (CELL_BITS * 1_000_000_000),
        None => (ns as u128 * rate.bps() as u128 / (CELL_BITS as u128 * 1_000_000_000)) as u64,
    }
}

crate::counters! {
    /// Counters of an ATM line direction.
    pub struct AtmLineCounters {
        /// Cells offered to the buffer (a port), or made by segmentation (an adapter).
        pub cells_in: u64,
        /// Cells transmitted (counted when scheduled).
        pub cells_out: u64,
        /// Cells discarded by the buffer, by reason.
        pub dropped_full: u64,
        pub dropped_tagged: u64,
        pub dropped_epd: u64,
        pub dropped_ppd: u64,
        /// Dropped cells that were tagged (CLP = 1), whatever the reason.
        pub dropped_clp1: u64,
        /// PDUs discarded whole by EPD.
        pub epd_pdus: u64,
        /// Cells lost to the loss model.
        pub cells_lost: u64,
        /// Packets an adapter segmented, and refused (buffer full or no VC).
        pub pdus_in: u64,
        pub pdus_refused: u64,
        /// Cells of refused packets.
        pub cells_refused: u64,
        /// Reassembly: PDUs delivered, lost, loss events.
        pub pdus_delivered: u64,
        pub pdus_lost: u64,
        pub loss_events: u64,
        /// Units of the wrong kind (a packet at a port, a cell at an adapter).
        pub stray: u64,
        /// Most cells waiting (not the one in transmission).
        pub max_queue: Peak,
        /// Transmitter busy time, ns.
        pub busy_ns: u64,
        pub vcs: PerIndex<VcCounters>,
    }
}

impl AtmLineCounters {
    /// Cells the buffer discarded.
    pub fn cells_dropped(&self) -> u64 {
        self.dropped_full + self.dropped_tagged + self.dropped_epd + self.dropped_ppd
    }

    /// The generic link row of the result: cells as units.
    pub fn link_counters(&self) -> LinkCounters {
        LinkCounters {
            packets: self.cells_out,
            bytes: self.cells_out * CELL_BYTES as u64,
            drops_queue: self.cells_dropped() + self.cells_refused,
            drops_loss: self.cells_lost,
            max_queue: self.max_queue,
            busy_ns: self.busy_ns,
            ..LinkCounters::default()
        }
    }
}

pub struct AtmLine {
    rate: Rate,
    delay: SimDuration,
    /// The current (or last) busy period: its start, cells scheduled in it, its end.
    busy_start: SimTime,
    busy_cells: u64,
    last_end: SimTime,
    feed: Feed,
    sink: Sink,
    loss: LossState,
    vcs: Arc<VcTable>,
    c: AtmLineCounters,
}

impl AtmLine {
    pub fn new(
        rate: Rate,
        delay: SimDuration,
        feed: Feed,
        sink: Sink,
        loss: LossState,
        vcs: Arc<VcTable>,
    ) -> Self {
        let n = vcs.len();
        AtmLine {
            rate,
            delay,
            busy_start: SimTime::ZERO,
            busy_cells: 0,
            last_end: SimTime::ZERO,
            feed,
            sink,
            loss,
            vcs,
            c: AtmLineCounters {
                vcs: PerIndex::with_len(n),
                ..Default::default()
            },
        }
    }

    /// A host adapter feed with buffer `admission` (packets or bytes).
    pub fn adapter(llc: bool, admission: Admission) -> Feed {
        Feed::Adapter {
            seg: Segmenter::default(),
            llc,
            admission,
            waiting: VecDeque::new(),
            bytes: 0,
        }
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Cells waiting at `now` (not counting the one in transmission).
    pub fn waiting(&self, now: SimTime) -> u64 {
        if now >= self.last_end {
            return 0;
        }
        let finished = cells_sent_in((now - self.busy_start).as_nanos(), self.rate);
        self.busy_cells - finished - 1
    }

    /// Schedules one cell arriving at `now`; the end of its transmission.
    fn schedule(&mut self, now: SimTime) -> SimTime {
        let from = if now >= self.last_end {
            self.busy_start = now;
            self.busy_cells = 0;
            now
        } else {
            self.last_end
        };
        self.busy_cells += 1;
        let ns = cells_time_ns(self.busy_cells, self.rate);
        let end = SimTime(
            self.busy_start
                .0
                .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX)),
        );
        self.c.busy_ns += (end - from).as_nanos();
        self.last_end = end;
        end
    }

    /// Puts an admitted cell on the line.
    fn transmit<U: CellUnit>(&mut self, now: SimTime, cell: Cell, out: &mut Vec<Emit<U>>) {
        let end = self.schedule(now);
        self.c.cells_out += 1;
        if self.loss.lose(&cell) {
            self.c.cells_lost += 1;
            self.c.vcs.at(cell.vc as usize).cells_lost += 1;
            return;
        }
        let at = end + self.delay;
        match &mut self.sink {
            Sink::Cells => emit_with(out, || Emit::At {
                at,
                port: OUT,
                unit: U::from_cell(cell),
            }),
            Sink::Reassemble(r) => {
                if let Some(p) = r.push(cell) {
                    out.push(Emit::At {
                        at,
                        port: OUT,
                        unit: U::from_packet(*p),
                    });
                }
            }
        }
    }

    fn on_packet<U: CellUnit>(&mut self, now: SimTime, p: Packet, out: &mut Vec<Emit<U>>) {
        let Feed::Adapter {
            seg,
            llc,
            admission,
            waiting,
            bytes,
        } = &mut self.feed
        else {
            self.c.stray += 1;
            return;
        };
        while waiting.front().is_some_and(|w| w.0 <= now) {
            *bytes -= waiting.pop_front().expect("checked").1 as u64;
        }
        let Some((vc, dst)) = self.vcs.lookup(&p) else {
            self.c.pdus_refused += 1;
            return;
        };
        if !admission.admits(waiting.len(), *bytes, p.size) {
            self.c.pdus_refused += 1;
            self.c.cells_refused += super::aal5::cells_for(p.size, *llc) as u64;
            return;
        }
        let h = seg.segment(vc, &p, *llc);
        let start = now.max(self.last_end);
        if start > now {
            waiting.push_back((start, p.size));
            *bytes += p.size as u64;
        }
        let n = h.ncells as u64;
        self.c.pdus_in += 1;
        self.c.cells_in += n;
        let v = self.c.vcs.at(vc as usize);
        v.pdus_sent += 1;
        v.cells_sent += n;
        let w = self.waiting(now) + n - 1 + (start > now) as u64;
        self.c.max_queue.update(w);
        let mut sdu = Some(Box::new(p));
        for k in 0..n {
            let eom = k + 1 == n;
            let cell = Cell {
                vc,
                dst,
                pdu: h.pdu,
                ncells: h.ncells,
                eom,
                clp: false,
                epoch: h.epoch,
                epoch_start: h.epoch_start,
                sdu: if eom { sdu.take() } else { None },
            };
            self.transmit(now, cell, out);
        }
    }

    fn on_cell<U: CellUnit>(&mut self, now: SimTime, cell: Cell, out: &mut Vec<Emit<U>>) {
        let w = self.waiting(now);
        let Feed::Port(d) = &mut self.feed else {
            self.c.stray += 1;
            return;
        };
        self.c.cells_in += 1;
        if let Err(why) = d.admit(w, &cell) {
            let c = &mut self.c;
            match why {
                Drop::Full => c.dropped_full += 1,
                Drop::Tagged => c.dropped_tagged += 1,
                Drop::EpdStart => {
                    c.dropped_epd += 1;
                    c.epd_pdus += 1;
                    c.vcs.at(cell.vc as usize).pdus_discarded_whole += 1;
                }
                Drop::Epd => c.dropped_epd += 1,
                Drop::Ppd => c.dropped_ppd += 1,
            }
            c.dropped_clp1 += cell.clp as u64;
            c.vcs.at(cell.vc as usize).cells_dropped += 1;
            return;
        }
        if now < self.last_end {
            self.c.max_queue.update(w + 1);
        }
        self.transmit(now, cell, out);
    }
}

impl<U: CellUnit> Element<U> for AtmLine {
    type Metrics = AtmLineCounters;

    fn handle(&mut self, now: SimTime, _port: PortId, unit: U, out: &mut Vec<Emit<U>>) {
        match unit.into_cell() {
            Ok(c) => self.on_cell(now, c, out),
            Err(u) => match u.into_packet() {
                Ok(p) => self.on_packet(now, p, out),
                Err(_) => self.c.stray += 1,
            },
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        None
    }

    fn wakes(&self) -> bool {
        false
    }

    /// A switch's output line: each cell leaves (or, into a host, completes a packet)
    /// in the order cells came, a fixed delay after its transmission, which depends
    /// only on the cells before. (A host adapter segments each packet into many cells:
    /// not a line to fold into, since the reference run checks one unit out per unit in.)
    fn folds(&self) -> bool {
        matches!(self.feed, Feed::Port(_))
    }

    fn handle_timeout(&mut self, _now: SimTime, _out: &mut Vec<Emit<U>>) {}

    fn metrics(&self, now: SimTime) -> AtmLineCounters {
        let mut c = self.c.clone();
        c.busy_ns -= self.last_end.saturating_sub(now).as_nanos();
        if let Sink::Reassemble(r) = &self.sink {
            for (vc, rx) in r.all() {
                let v = c.vcs.at(vc as usize);
                v.cells_received = rx.cells;
                v.pdus_delivered = rx.pdus_delivered;
                v.pdus_lost = rx.pdus_lost;
                v.loss_events = rx.loss_events;
                c.pdus_delivered += rx.pdus_delivered;
                c.pdus_lost += rx.pdus_lost;
                c.loss_events += rx.loss_events;
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_times_in_64_bits_equal_the_128_bit_quotients() {
        let wide =
            |c: u64, r: u64| (c as u128 * CELL_BITS as u128 * 1_000_000_000).div_ceil(r as u128);
        let sent =
            |ns: u64, r: u64| (ns as u128 * r as u128 / (CELL_BITS as u128 * 1_000_000_000)) as u64;
        // each side of the 64-bit bound (u64::MAX / 424e9 = 43_505_528 cells)
        for c in [1, 1000, 43_505_528, 43_505_529, u64::MAX / 2] {
            for r in [1, 1_544_000, 155_520_000, u64::MAX] {
                assert_eq!(cells_time_ns(c, Rate(r)), wide(c, r), "{c} cells at {r}");
            }
        }
        for ns in [1, 1_000_000_000, 120_000_000_000, u64::MAX / 3] {
            for r in [1, 1_544_000, 155_520_000, u64::MAX] {
                assert_eq!(cells_sent_in(ns, Rate(r)), sent(ns, r), "{ns} ns at {r}");
            }
        }
    }
    use crate::l2::atm::discard::{Policy, PortLimits};
    use crate::net::loss::LossModel;
    use crate::net::packet::{node_addr, Segment, ACK};
    use crate::rng::RngStream;
    use crate::stats::Since;
    use crate::unit::Unit;
    use crate::units::Limit;

    fn metrics(e: &AtmLine, now: SimTime) -> AtmLineCounters {
        Element::<Unit>::metrics(e, now)
    }

    /// 424 Mbit/s: one cell per microsecond.
    const R: Rate = Rate(424_000_000);
    const D: SimDuration = SimDuration(5_000);

    fn table() -> Arc<VcTable> {
        let mut t = VcTable::default();
        t.add(node_addr(0), node_addr(1), 49_152, 5001, 1);
        t.add(node_addr(1), node_addr(0), 5001, 49_152, 0);
        Arc::new(t)
    }

    fn pkt(seq: u32, len: u32) -> Packet {
        Packet::new(
            node_addr(0),
            node_addr(1),
            Segment {
                sport: 49_152,
                dport: 5001,
                seq,
                flags: ACK,
                len,
                ..Default::default()
            },
        )
    }

    fn cell(vc: u32, eom: bool) -> Cell {
        Cell {
            vc,
            dst: 1,
            pdu: 0,
            ncells: 1,
            eom,
            clp: false,
            epoch: 0,
            epoch_start: 0,
            sdu: None,
        }
    }

    fn port(rate: Rate, buffer: u64, sink: Sink, loss: LossModel) -> AtmLine {
        let limits = PortLimits {
            policy: Policy::Ubr,
            buffer,
            epd_threshold: buffer,
            scd_threshold: buffer,
        };
        AtmLine::new(
            rate,
            D,
            Feed::Port(Discard::new(limits)),
            sink,
            LossState::new(loss, RngStream::new(1, "t")),
            table(),
        )
    }

    fn adapter(limit: u64, sink: Sink, loss: LossModel) -> AtmLine {
        let feed = AtmLine::adapter(
            false,
            Admission {
                limit: Limit::Packets(limit),
            },
        );
        AtmLine::new(
            R,
            D,
            feed,
            sink,
            LossState::new(loss, RngStream::new(1, "t")),
            table(),
        )
    }

    fn times(out: &[Emit<Unit>]) -> Vec<u64> {
        out.iter()
            .map(|e| match e {
                Emit::At { at, port, .. } => {
                    assert_eq!(*port, OUT);
                    at.0
                }
                Emit::Now { .. } => panic!("lines emit timed units only"),
            })
            .collect()
    }

    #[test]
    fn cells_leave_back_to_back_and_the_buffer_counts_cells_waiting() {
        let mut l = port(R, 2, Sink::Cells, LossModel::None);
        let mut out = vec![];
        for _ in 0..5 {
            l.handle(SimTime(0), 0, Unit::Cell(cell(0, true)), &mut out);
        }
        // one in transmission, two waiting, two dropped (tail drop)
        assert_eq!(times(&out), [6_000, 7_000, 8_000]);
        assert_eq!(l.waiting(SimTime(0)), 2);
        assert_eq!(l.waiting(SimTime(999)), 2);
        assert_eq!(l.waiting(SimTime(1_000)), 1, "the first has left at 1 us");
        assert_eq!(l.waiting(SimTime(2_999)), 0);
        assert_eq!(l.waiting(SimTime(3_000)), 0);
        let m = metrics(&l, SimTime(1_500));
        assert_eq!((m.cells_in, m.cells_out, m.dropped_full), (5, 3, 2));
        assert_eq!(m.max_queue, Peak(2));
        assert_eq!(m.busy_ns, 1_500, "busy time up to the snapshot only");
        assert_eq!(metrics(&l, SimTime(9_000)).since(&m).busy_ns, 1_500);
        // a cell arriving at 2.5 us waits behind the last one; at 5 us the line is idle
        out.clear();
        l.handle(SimTime(2_500), 0, Unit::Cell(cell(0, true)), &mut out);
        l.handle(SimTime(5_000), 0, Unit::Cell(cell(0, true)), &mut out);
        assert_eq!(times(&out), [9_000, 11_000]);
    }

    #[test]
    fn departures_do_not_drift_at_rates_that_do_not_divide_a_nanosecond() {
        // DS3, 44.736 Mbit/s: 9477.8 ns per cell; a million cells take exactly
        // ceil(10^6 · 424 / 44.736) us, not 10^6 · 9478 ns
        let r = Rate(44_736_000);
        let mut l = port(r, u64::MAX, Sink::Cells, LossModel::None);
        let mut out = vec![];
        for _ in 0..1_000_000u64 {
            l.handle(SimTime(0), 0, Unit::Cell(cell(0, true)), &mut out);
        }
        let last = *times(&out).last().unwrap();
        let exact = (1_000_000u128 * 424 * 1_000_000_000).div_ceil(44_736_000) as u64;
        assert_eq!(last, exact + 5_000);
        assert!(exact < 1_000_000 * 9478);
        let m = metrics(&l, SimTime(exact));
        assert_eq!(m.busy_ns, exact);
        assert_eq!(
            l.waiting(SimTime(exact - 1)),
            0,
            "the last cell is on the wire"
        );
        assert_eq!(l.waiting(SimTime(exact - 9_478)), 1);
    }

    #[test]
    fn an_adapter_segments_packets_and_limits_packets_waiting() {
        let mut l = adapter(1, Sink::Cells, LossModel::None);
        let mut out = vec![];
        for k in 0..3 {
            l.handle(
                SimTime(0),
                0,
                Unit::Packet(pkt(1 + 1460 * k, 1460)),
                &mut out,
            );
        }
        // 1500 B: 32 cells each; the first is sent, the second waits, the third is refused
        assert_eq!(out.len(), 64);
        let t = times(&out);
        assert_eq!((t[0], t[31], t[32], t[63]), (6_000, 37_000, 38_000, 69_000));
        let cells: Vec<&Cell> = out
            .iter()
            .map(|e| match e {
                Emit::At {
                    unit: Unit::Cell(c),
                    ..
                } => c,
                _ => panic!(),
            })
            .collect();
        assert!(cells.iter().all(|c| c.vc == 0 && c.dst == 1 && !c.clp));
        assert_eq!(cells.iter().filter(|c| c.eom).count(), 2);
        assert!(cells[31].eom && cells[31].sdu.is_some() && cells[30].sdu.is_none());
        assert_eq!((cells[0].pdu, cells[32].pdu, cells[32].ncells), (0, 1, 32));
        let m = metrics(&l, SimTime(0));
        assert_eq!((m.pdus_in, m.pdus_refused, m.cells_refused), (2, 1, 32));
        assert_eq!(m.max_queue, Peak(63));
        // once the second packet has started, a new one may wait again
        out.clear();
        l.handle(SimTime(32_000), 0, Unit::Packet(pkt(4381, 1460)), &mut out);
        assert_eq!(out.len(), 32);
        assert_eq!(times(&out)[0], 70_000);
    }

    #[test]
    fn reassembly_delivers_at_the_last_cell_and_discards_a_pdu_with_a_lost_cell() {
        // cell 40 (the 9th of the second PDU) is lost on the line
        let mut l = adapter(
            100,
            Sink::Reassemble(Reassembler::default()),
            LossModel::List { drop: vec![40] },
        );
        let mut out = vec![];
        for k in 0..3 {
            l.handle(
                SimTime(0),
                0,
                Unit::Packet(pkt(1 + 1460 * k, 1460)),
                &mut out,
            );
        }
        let got: Vec<(u64, u32)> = out
            .iter()
            .map(|e| match e {
                Emit::At {
                    at,
                    unit: Unit::Packet(p),
                    ..
                } => (at.0, p.seg.seq),
                _ => panic!("packets out"),
            })
            .collect();
        assert_eq!(got, [(37_000, 1), (101_000, 2921)]);
        let m = metrics(&l, SimTime(200_000));
        assert_eq!(
            (m.cells_lost, m.pdus_delivered, m.pdus_lost, m.loss_events),
            (1, 2, 1, 1)
        );
        let v = &m.vcs.0[0];
        assert_eq!(
            (v.pdus_sent, v.cells_sent, v.cells_lost, v.pdus_lost),
            (3, 96, 1, 1)
        );
        assert_eq!(v.cells_received, 95);
    }

    #[test]
    fn a_unit_of_the_wrong_kind_is_counted_and_dropped() {
        let mut p = port(R, 10, Sink::Cells, LossModel::None);
        let mut a = adapter(10, Sink::Cells, LossModel::None);
        let mut out = vec![];
        p.handle(SimTime(0), 0, Unit::Packet(pkt(1, 10)), &mut out);
        a.handle(SimTime(0), 0, Unit::Cell(cell(0, true)), &mut out);
        assert!(out.is_empty());
        assert_eq!(
            (metrics(&p, SimTime(0)).stray, metrics(&a, SimTime(0)).stray),
            (1, 1)
        );
    }
}
