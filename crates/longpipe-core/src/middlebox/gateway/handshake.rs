//! Spoof mode's handshakes in progress (issue 26: 70 000 spoofed SYNs filled all 65 536
//! slots of the connection table and kept real connections out for 300 s).
//!
//! An opening SYN makes no connection: it leaves a small entry here ([`HalfOpen`]: the
//! SYN's header, a few dozen bytes) and passes. Only the answer from the other side —
//! the SYN-ACK — makes the connection ([`super::spoof::Conn`]), which stays *embryonic*
//! until the opener acknowledges the answer (or data flows). Entries and embryonic
//! connections together are bounded, overall (`max_half_open`) and per client address
//! (`half_open_per_source`), and forgotten `half_open_timeout` after their SYN (or its
//! answer) unless the handshake completed; a retransmitted SYN refreshes its entry.
//! Over a limit, a SYN passes untouched: that connection is not accelerated (counted).
//!
//! Expiry needs no scan and no timer: entries and embryonic connections are queued in
//! the order they were made, and the queue's expired front is dropped whenever a
//! packet passes or the daemon asks ([`super::Gateway::housekeeping`]); an entry
//! refreshed since it was queued is queued again when its first place comes up (so it
//! may be forgotten up to one timeout late). No timer: the simulator's event count is
//! that of a gateway without this table.

use super::{ConnKey, Dir};
use crate::net::packet::Packet;
use crate::time::{SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};

/// An opening SYN whose answer has not passed yet.
#[derive(Debug, Clone)]
pub struct HalfOpen {
    /// The direction the SYN travelled.
    pub dir: Dir,
    /// When it (or its latest retransmission) passed.
    pub at: SimTime,
    /// Its header, as it arrived (before the gateway rewrote its options).
    pub syn: Packet,
}

/// Counters of the handshake table (the daemon's metrics; not in the simulator's
/// result).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct HandshakeCounters {
    /// Opening SYNs passed untouched: too many handshakes in progress (overall or from
    /// that client address).
    pub refused: u64,
    /// Handshakes forgotten after `half_open_timeout`.
    pub expired: u64,
}

#[derive(Debug, Default)]
pub struct Handshakes {
    pub half: BTreeMap<ConnKey, HalfOpen>,
    /// (queued at, key), oldest first.
    queue: VecDeque<(SimTime, ConnKey)>,
    /// Handshakes in progress (entries and embryonic connections) by client address.
    by_source: BTreeMap<[u8; 4], u32>,
    /// Connections in the table whose handshake has not completed.
    pub embryonic: usize,
    /// (made at, key) of those, oldest first (some may have completed since).
    pub embryos: VecDeque<(SimTime, ConnKey)>,
    pub stats: HandshakeCounters,
}

impl Handshakes {
    /// Handshakes in progress: entries and embryonic connections.
    pub fn in_progress(&self) -> usize {
        self.half.len() + self.embryonic
    }

    /// Of those, from client address `a`.
    pub fn from(&self, a: [u8; 4]) -> usize {
        self.by_source.get(&a).copied().unwrap_or(0) as usize
    }

    fn count(&mut self, client: [u8; 4], up: bool) {
        if up {
            *self.by_source.entry(client).or_default() += 1;
        } else if let Some(n) = self.by_source.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&client);
            }
        }
    }

    /// An opening SYN for `k` (no connection holds that key) travelling in `dir`: true
    /// if it is tracked (new or refreshed), false if a limit refused it.
    pub fn syn(
        &mut self,
        k: ConnKey,
        dir: Dir,
        syn: &Packet,
        now: SimTime,
        most: usize,
        per_source: u32,
    ) -> bool {
        if let Some(h) = self.half.get_mut(&k) {
            // a retransmission (or, with another ISN, a new attempt): refreshed
            h.at = now;
            h.dir = dir;
            h.syn = syn.clone();
            return true;
        }
        if self.in_progress() >= most || self.from(k.2) >= per_source as usize {
            self.stats.refused += 1;
            return false;
        }
        self.half.insert(
            k,
            HalfOpen {
                dir,
                at: now,
                syn: syn.clone(),
            },
        );
        self.queue.push_back((now, k));
        self.count(k.2, true);
        true
    }

    /// The answer to the SYN of `k` travels in `dir`: the entry, if its SYN went the
    /// other way. Its count moves to the embryonic connection the caller makes (or is
    /// dropped with [`Handshakes::embryo_gone`]).
    pub fn answer(&mut self, k: ConnKey, dir: Dir, now: SimTime) -> Option<HalfOpen> {
        if self.half.get(&k).is_none_or(|h| h.dir == dir) {
            return None;
        }
        self.embryonic += 1;
        self.embryos.push_back((now, k));
        self.half.remove(&k)
    }

    /// An embryonic connection completed its handshake, or was forgotten.
    pub fn embryo_gone(&mut self, k: ConnKey) {
        self.embryonic = self.embryonic.saturating_sub(1);
        self.count(k.2, false);
    }

    /// A RST for the handshake of `k` travelling in `dir`: the entry is forgotten if the
    /// RST answers its SYN (from the other side, acknowledging the SYN) or comes from
    /// the opener at the sequence number after its SYN.
    pub fn rst(&mut self, k: ConnKey, dir: Dir, rst: &Packet) {
        let Some(h) = self.half.get(&k) else { return };
        let next = h.syn.seg.seq.wrapping_add(1);
        let answers =
            dir != h.dir && rst.seg.flags & crate::net::packet::ACK != 0 && rst.seg.ack == next;
        if answers || (dir == h.dir && rst.seg.seq == next) {
            self.half.remove(&k);
            self.count(k.2, false);
        }
    }

    /// Forgets the entries older than `timeout` at `now`.
    pub fn expire(&mut self, now: SimTime, timeout: SimDuration) {
        while let Some(&(t, k)) = self.queue.front() {
            if t + timeout > now {
                break;
            }
            self.queue.pop_front();
            match self.half.get(&k) {
                Some(h) if h.at + timeout <= now => {
                    self.half.remove(&k);
                    self.count(k.2, false);
                    self.stats.expired += 1;
                }
                // refreshed since: queued again (now, to keep the queue in time
                // order: it may be forgotten up to one timeout late)
                Some(_) => self.queue.push_back((now, k)),
                None => {}
            }
        }
    }

    /// Everything forgotten (the gateway failed).
    pub fn clear(&mut self) {
        self.half.clear();
        self.queue.clear();
        self.by_source.clear();
        self.embryonic = 0;
        self.embryos.clear();
    }
}
