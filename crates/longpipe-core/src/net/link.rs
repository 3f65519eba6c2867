//! One direction of a duplex link: a queue, a transmitter of fixed rate, a loss model
//! and a propagation delay.
//!
//! Sans-IO: `enqueue` and `finish_tx` take `now` and return what happens next (a
//! transmission end time, a packet to deliver at a time); the caller owns the clock and
//! the event queue. This is the seam a link layer (RLC, ATM) replaces: anything that
//! takes packets in and gives timed packets out.

use super::loss::LossState;
use super::packet::Packet;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::Limit;
use std::collections::VecDeque;

#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// Packets put on the wire (counted when their transmission starts at/after warmup).
    pub packets: u64,
    pub bytes: u64,
    pub drops_queue: u64,
    pub drops_loss: u64,
    /// Transmitter busy time after warmup, ns.
    pub busy_ns: u64,
    /// Largest queue occupancy seen (packets waiting, excluding the one in service).
    pub max_queue: u64,
}

/// What `enqueue` did with a packet.
#[derive(Debug)]
pub enum Enqueued {
    /// Transmitter was idle: transmission started and ends at this time.
    Started(SimTime),
    Queued,
    /// Queue full: the packet is returned to the caller, dropped.
    Dropped(Packet),
}

#[derive(Debug)]
pub struct LinkDir {
    pub rate: Rate,
    pub delay: SimDuration,
    pub limit: Limit,
    queue: VecDeque<Packet>,
    queued_bytes: u64,
    in_tx: Option<(Packet, SimTime)>,
    loss: LossState,
    warmup: SimTime,
    pub stats: DirStats,
}

impl LinkDir {
    pub fn new(
        rate: Rate,
        delay: SimDuration,
        limit: Limit,
        loss: LossState,
        warmup: SimTime,
    ) -> Self {
        LinkDir {
            rate,
            delay,
            limit,
            queue: VecDeque::new(),
            queued_bytes: 0,
            in_tx: None,
            loss,
            warmup,
            stats: DirStats::default(),
        }
    }

    fn start(&mut self, now: SimTime, pkt: Packet) -> SimTime {
        let done = now + self.rate.tx_time(pkt.size as u64);
        if now >= self.warmup {
            self.stats.packets += 1;
            self.stats.bytes += pkt.size as u64;
        }
        self.in_tx = Some((pkt, now));
        done
    }

    /// The packet currently being serialized, if any.
    pub fn in_transmission(&self) -> Option<&Packet> {
        self.in_tx.as_ref().map(|(p, _)| p)
    }

    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> Enqueued {
        if self.in_tx.is_none() {
            debug_assert!(self.queue.is_empty());
            return Enqueued::Started(self.start(now, pkt));
        }
        let fits = match self.limit {
            Limit::Packets(n) => (self.queue.len() as u64) < n,
            Limit::Bytes(b) => self.queued_bytes + pkt.size as u64 <= b,
        };
        if !fits {
            if now >= self.warmup {
                self.stats.drops_queue += 1;
            }
            return Enqueued::Dropped(pkt);
        }
        self.queued_bytes += pkt.size as u64;
        self.queue.push_back(pkt);
        self.stats.max_queue = self.stats.max_queue.max(self.queue.len() as u64);
        Enqueued::Queued
    }

    /// Ends the current transmission at `now`. Returns the packet with its arrival time
    /// at the far end (None if the loss model took it; it is then in `lost`), and the
    /// end time of the next transmission if one started.
    pub fn finish_tx(&mut self, now: SimTime) -> (Option<(SimTime, Packet)>, Option<SimTime>) {
        let (pkt, started) = self
            .in_tx
            .take()
            .expect("finish_tx with nothing in transmission");
        if now > self.warmup {
            self.stats.busy_ns += (now - started.max(self.warmup)).as_nanos();
        }
        let out = if self.loss.lose(pkt.size) {
            if started >= self.warmup {
                self.stats.drops_loss += 1;
            }
            None
        } else {
            Some((now + self.delay, pkt))
        };
        let next = self.queue.pop_front().map(|p| {
            self.queued_bytes -= p.size as u64;
            self.start(now, p)
        });
        (out, next)
    }

    /// Adds the busy time of a transmission still in progress at `end`.
    pub fn close(&mut self, end: SimTime) {
        if let Some((_, started)) = &self.in_tx {
            let s = (*started).max(self.warmup);
            if end > s {
                self.stats.busy_ns += (end - s).as_nanos();
            }
        }
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }
}
