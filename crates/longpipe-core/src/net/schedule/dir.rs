//! A direction's resolved schedule ([`DirSchedule`]): its one-off changes, its periodic
//! entries, what an outage does, and the trace that drives its rate; and one
//! [`Change`].
//!
//! One-off changes are stored compactly ([`OnceChanges`]: 32 bytes each, loss models
//! aside), since a CSV file may hold up to [`MAX_CHANGES`] of them.

use super::varying::Varying;
use crate::error::{err, ScenarioError};
use crate::net::loss::LossModel;
use crate::net::trace::MmTrace;
use crate::time::{Rate, SimDuration, SimTime};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// The shortest `every` of a periodic entry.
pub const MIN_EVERY: SimDuration = SimDuration::from_millis(1);
/// At most this many one-off changes per link (entries plus CSV rows).
pub const MAX_CHANGES: usize = 10_000_000;

/// What happens to units during an outage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outage {
    /// The interface is down: the unit in transmission, the queue and every unit that
    /// arrives are dropped (counted in `drops_outage`).
    #[default]
    Drop,
    /// The queue holds units (up to its limit); the unit in transmission pauses and
    /// resumes when the link is up again.
    Hold,
}

/// One change of one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    pub rate: Option<Rate>,
    pub delay: Option<SimDuration>,
    pub loss: Option<LossModel>,
    pub up: Option<bool>,
}

/// A [`Change`] as [`OnceChanges`] keeps it: the values, which of them are set, and the
/// loss model's index in the list's own table.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Packed {
    rate: u64,
    delay: u64,
    loss: u32,
    /// `SET_*` bits, and the value of `up`.
    bits: u8,
}

const SET_RATE: u8 = 1;
const SET_DELAY: u8 = 2;
const SET_LOSS: u8 = 4;
const SET_UP: u8 = 8;
const UP: u8 = 16;

/// A direction's one-off changes, sorted by time (stable: the written order at one
/// instant).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OnceChanges {
    at: Vec<(SimTime, Packed)>,
    losses: Vec<LossModel>,
}

impl OnceChanges {
    /// Room for `n` more changes.
    pub fn reserve(&mut self, n: usize) {
        self.at.reserve_exact(n);
    }

    /// Adds `c` at `t` (call [`Self::sort`] once all are in).
    pub fn push(&mut self, t: SimTime, c: Change) {
        let mut p = Packed {
            rate: 0,
            delay: 0,
            loss: 0,
            bits: 0,
        };
        if let Some(r) = c.rate {
            (p.rate, p.bits) = (r.0, p.bits | SET_RATE);
        }
        if let Some(d) = c.delay {
            (p.delay, p.bits) = (d.0, p.bits | SET_DELAY);
        }
        if let Some(m) = c.loss {
            (p.loss, p.bits) = (self.losses.len() as u32, p.bits | SET_LOSS);
            self.losses.push(m);
        }
        if let Some(up) = c.up {
            p.bits |= SET_UP | if up { UP } else { 0 };
        }
        self.at.push((t, p));
    }

    /// Sorts by time, keeping the written order at one instant (a file in time order,
    /// the common case, is not moved).
    pub fn sort(&mut self) {
        if !self.at.is_sorted_by_key(|c| c.0) {
            self.at.sort_by_key(|c| c.0);
        }
        self.at.shrink_to_fit();
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// The time of change `i`.
    pub fn time(&self, i: usize) -> Option<SimTime> {
        self.at.get(i).map(|c| c.0)
    }

    /// Change `i` and its time.
    pub fn get(&self, i: usize) -> Option<(SimTime, Change)> {
        let &(t, p) = self.at.get(i)?;
        let has = |bit: u8| p.bits & bit != 0;
        Some((
            t,
            Change {
                rate: has(SET_RATE).then_some(Rate(p.rate)),
                delay: has(SET_DELAY).then_some(SimDuration(p.delay)),
                loss: has(SET_LOSS).then(|| self.losses[p.loss as usize].clone()),
                up: has(SET_UP).then_some(has(UP)),
            },
        ))
    }

    /// Every change in order.
    pub fn iter(&self) -> impl Iterator<Item = (SimTime, Change)> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Whether every change sets only the delay and the loss model (nothing the
    /// transmitter or the queue sees).
    pub fn only_delay_and_loss(&self) -> bool {
        self.at.iter().all(|c| c.1.bits & (SET_RATE | SET_UP) == 0)
    }

    /// The fastest rate a change sets, if any sets one.
    fn max_rate(&self) -> Option<Rate> {
        self.at
            .iter()
            .filter(|c| c.1.bits & SET_RATE != 0)
            .map(|c| Rate(c.1.rate))
            .max()
    }
}

/// A periodic entry, resolved for both directions (each direction runs its own copy of
/// the same generator and reads its own values).
#[derive(Debug, Clone)]
pub struct Periodic {
    pub start: SimTime,
    pub every: SimDuration,
    /// Per direction; `mirror_*`: b->a takes a->b's value (same draw).
    pub rate: [Option<Varying<Rate>>; 2],
    pub mirror_rate: bool,
    pub delay: [Option<Varying<SimDuration>>; 2],
    pub mirror_delay: bool,
    pub loss: [Option<Varying<LossModel>>; 2],
    pub up: Option<Varying<bool>>,
    pub down_for: Option<Varying<SimDuration>>,
    pub down_p: f64,
    /// The name of its random stream.
    pub stream: String,
}

impl Periodic {
    /// Whether a tick can change direction `dir` (0 = a->b). A tick that changes
    /// nothing there (a delay-only entry on a link with its own `delay_ba`) is left out
    /// of that direction's schedule: it would cost an event per tick and a transmitter
    /// timer per unit there, and change nothing. The other direction's draws do not
    /// depend on it (each direction runs its own copy of the stream).
    pub fn changes_dir(&self, dir: usize) -> bool {
        let mirrored = |set: [bool; 2], mirror: bool| set[dir] || (dir == 1 && mirror && set[0]);
        mirrored(self.rate.each_ref().map(Option::is_some), self.mirror_rate)
            || mirrored(
                self.delay.each_ref().map(Option::is_some),
                self.mirror_delay,
            )
            || self.loss[dir].is_some()
            || self.up.is_some()
            || self.down_for.is_some()
    }

    /// Whether a tick sets only the delay and the loss model of direction `dir`.
    pub fn only_delay_and_loss(&self, dir: usize) -> bool {
        let rate =
            self.rate[dir].is_some() || (dir == 1 && self.mirror_rate && self.rate[0].is_some());
        !rate && self.up.is_none() && self.down_for.is_none()
    }
}

/// A direction's schedule: what its link direction needs to build its stage.
#[derive(Debug, Clone)]
pub struct DirSchedule {
    /// Index of this direction (0 = a->b) in the periodic entries' values.
    pub dir: usize,
    /// One-off changes, sorted by time.
    pub once: Arc<OnceChanges>,
    pub periodic: Vec<Arc<Periodic>>,
    pub outage: Outage,
    pub reorder: bool,
    /// A Mahimahi trace drives the transmitter instead of the rate.
    pub trace: Option<MmTrace>,
}

impl DirSchedule {
    /// Whether every change sets only the delay and the loss model: they act only on
    /// units whose transmission ends after them, so the direction can apply them when a
    /// transmission ends, with no event of their own (`link_sched.rs`).
    pub fn lazy(&self) -> bool {
        self.trace.is_none()
            && self.once.only_delay_and_loss()
            && self
                .periodic
                .iter()
                .all(|p| p.only_delay_and_loss(self.dir))
    }

    /// Whether anything can change (a direction with only `reorder` or `outage` set
    /// and nothing scheduled needs no stage).
    pub fn is_active(&self) -> bool {
        !self.once.is_empty() || !self.periodic.is_empty() || self.trace.is_some()
    }

    /// The fastest rate this direction can have (for the work estimate).
    pub fn max_rate(&self, base: Rate) -> Rate {
        let mut r = base.max(self.once.max_rate().unwrap_or(base));
        for p in &self.periodic {
            let v = if p.mirror_rate {
                &p.rate[0]
            } else {
                &p.rate[self.dir]
            };
            match v {
                Some(Varying::One(x)) => r = r.max(*x),
                Some(Varying::Cycle(xs)) => r = xs.iter().fold(r, |a, &b| a.max(b)),
                Some(Varying::Range(_, hi)) => r = r.max(*hi),
                None => {}
            }
        }
        r
    }

    /// The events of their own this direction's changes cost in a run of `duration`,
    /// at most (for the work estimate): none on a [`lazy`](Self::lazy) direction, whose
    /// changes are applied when a transmission ends (an event counted with the
    /// packets); otherwise one a one-off change and one a tick, two for a tick of a
    /// `down_for` entry (down, then up again). `periodic` holds only the entries that
    /// change this direction ([`Periodic::changes_dir`]).
    pub fn events(&self, duration: SimTime) -> f64 {
        if self.lazy() {
            return 0.0;
        }
        let ticks: f64 = self
            .periodic
            .iter()
            .filter(|p| p.start <= duration)
            .map(|p| {
                // ticks at start, start + every, ... up to the end
                let n = ((duration.0 - p.start.0) / p.every.0 + 1) as f64;
                if p.down_for.is_some() {
                    2.0 * n
                } else {
                    n
                }
            })
            .sum();
        self.once.len() as f64 + ticks
    }
}

/// What the link's keys say about mirroring, and which directions a trace drives.
#[derive(Debug, Clone, Copy)]
pub struct LinkShape {
    /// The link has no `rate_ba`: `rate` changes both directions.
    pub sym_rate: bool,
    /// The link has no `delay_ba`.
    pub sym_delay: bool,
    /// Per direction: the rate is a trace.
    pub traced: [bool; 2],
}

/// Why a traced direction's rate cannot be scheduled.
pub const TRACED: [&str; 2] = [
    "a trace drives the a->b rate: it cannot be scheduled too",
    "a trace drives the b->a rate: it cannot be scheduled too",
];

/// A one-off change as written (an `at` entry, a CSV row): both directions' values.
#[derive(Debug, Clone, Default)]
pub struct RowChange {
    pub rate: Option<Rate>,
    pub rate_ba: Option<Rate>,
    pub delay: Option<SimDuration>,
    pub delay_ba: Option<SimDuration>,
    pub loss: Option<LossModel>,
    pub loss_ba: Option<LossModel>,
    pub up: Option<bool>,
}

impl RowChange {
    /// Adds the change at `t` to each direction it changes (`rate` and `delay` change
    /// b->a too on a link without `rate_ba`/`delay_ba`); `p` names it in errors.
    pub fn push_into(
        self,
        once: &mut [OnceChanges; 2],
        t: SimTime,
        shape: LinkShape,
        p: &str,
    ) -> Result<(), ScenarioError> {
        let rev_rate = self
            .rate_ba
            .or(if shape.sym_rate { self.rate } else { None });
        let rev_delay = self
            .delay_ba
            .or(if shape.sym_delay { self.delay } else { None });
        for (k, r) in [self.rate, rev_rate].iter().enumerate() {
            if shape.traced[k] && r.is_some() {
                let key = if k == 1 && self.rate_ba.is_some() {
                    "rate_ba"
                } else {
                    "rate"
                };
                return err(format!("{p}.{key}"), TRACED[k]);
            }
        }
        let fwd = Change {
            rate: self.rate,
            delay: self.delay,
            loss: self.loss,
            up: self.up,
        };
        let rev = Change {
            rate: rev_rate,
            delay: rev_delay,
            loss: self.loss_ba,
            up: self.up,
        };
        for (k, ch) in [fwd, rev].into_iter().enumerate() {
            if ch != Change::default() {
                once[k].push(t, ch);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_changes_keep_every_value_in_32_bytes() {
        assert_eq!(std::mem::size_of::<(SimTime, Packed)>(), 32);
        let mut o = OnceChanges::default();
        let full = Change {
            rate: Some(Rate(u64::MAX)),
            delay: Some(SimDuration(0)),
            loss: Some(LossModel::Bernoulli { p: 0.5 }),
            up: Some(false),
        };
        o.push(SimTime(5), full.clone());
        o.push(SimTime(1), Change::default());
        o.push(
            SimTime(5),
            Change {
                up: Some(true),
                ..Change::default()
            },
        );
        o.sort();
        let got: Vec<(u64, Change)> = o.iter().map(|(t, c)| (t.0, c)).collect();
        assert_eq!(got[0], (1, Change::default()));
        assert_eq!(got[1], (5, full), "written order at one instant");
        assert_eq!(got[2].1.up, Some(true));
        assert_eq!(o.max_rate(), Some(Rate(u64::MAX)));
    }
}
