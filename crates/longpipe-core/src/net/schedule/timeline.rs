//! A direction's schedule as it runs ([`Timeline`]): the next change and what it
//! changes. Order at one instant: one-off changes before periodic ones, each in the
//! order written; later ones win. Periodic entries draw from their own seeded streams.

use super::dir::{Change, DirSchedule, OnceChanges, Periodic};
use super::varying::Varying;
use crate::rng::RngStream;
use crate::time::{Rate, SimDuration, SimTime};
use std::sync::Arc;

/// A periodic entry's state in one direction.
#[derive(Debug, Clone)]
struct Ticker {
    cfg: Arc<Periodic>,
    /// Ticks done.
    n: u64,
    next: SimTime,
    /// The end of the current outage (`down_for`).
    up_at: Option<SimTime>,
    rng: RngStream,
}

/// Uniform in [lo, hi] by a multiply-shift of one 64-bit draw.
fn draw(rng: &mut RngStream, lo: u64, hi: u64) -> u64 {
    let span = (hi - lo) as u128 + 1;
    lo + ((rng.next_u64() as u128 * span) >> 64) as u64
}

/// Tick `n`'s value of `v` (a draw from `rng` for a range).
fn pick<T: Clone>(
    rng: &mut RngStream,
    n: u64,
    v: &Varying<T>,
    as_u64: impl Fn(&T) -> u64,
    from: impl Fn(u64) -> T,
) -> T {
    match v {
        Varying::One(x) => x.clone(),
        Varying::Cycle(xs) => xs[(n % xs.len() as u64) as usize].clone(),
        Varying::Range(lo, hi) => from(draw(rng, as_u64(lo), as_u64(hi))),
    }
}

impl Ticker {
    /// The change of the tick due now for direction `dir`. Draws every random value of
    /// the entry in a fixed order, whichever direction asks, so both directions see
    /// the same draws.
    fn tick(&mut self, dir: usize) -> Change {
        // (the fields apart: the entry is read while the stream draws, without a
        // reference count's two atomic operations a tick)
        let Ticker {
            cfg,
            n,
            rng,
            next,
            up_at,
        } = self;
        let k = *n;
        let rates = [
            cfg.rate[0].as_ref().map(|v| pick(rng, k, v, |r| r.0, Rate)),
            cfg.rate[1].as_ref().map(|v| pick(rng, k, v, |r| r.0, Rate)),
        ];
        let delays = [
            cfg.delay[0]
                .as_ref()
                .map(|v| pick(rng, k, v, |d| d.0, SimDuration)),
            cfg.delay[1]
                .as_ref()
                .map(|v| pick(rng, k, v, |d| d.0, SimDuration)),
        ];
        let mut c = Change {
            rate: if dir == 1 && cfg.mirror_rate {
                rates[0]
            } else {
                rates[dir]
            },
            delay: if dir == 1 && cfg.mirror_delay {
                delays[0]
            } else {
                delays[dir]
            },
            loss: cfg.loss[dir]
                .as_ref()
                .map(|v| pick(rng, k, v, |_| 0, |_| unreachable!())),
            up: cfg
                .up
                .as_ref()
                .map(|v| pick(rng, k, v, |_| 0, |_| unreachable!())),
        };
        if let Some(d) = &cfg.down_for {
            let down = cfg.down_p >= 1.0 || rng.uniform() < cfg.down_p;
            let len = pick(rng, k, d, |d| d.0, SimDuration);
            if down && len > SimDuration::ZERO {
                c.up = Some(false);
                *up_at = Some(*next + len);
            }
        }
        *n += 1;
        *next += cfg.every;
        c
    }
}

/// A direction's schedule as it runs: the next change and what it changes.
#[derive(Debug, Clone)]
pub struct Timeline {
    dir: usize,
    once: Arc<OnceChanges>,
    next_once: usize,
    tickers: Vec<Ticker>,
}

impl Timeline {
    /// `seed`: the run's master seed (periodic entries draw from streams named after
    /// their link and position).
    pub fn new(s: &DirSchedule, seed: u64) -> Self {
        Timeline {
            dir: s.dir,
            once: s.once.clone(),
            next_once: 0,
            tickers: s
                .periodic
                .iter()
                .map(|p| Ticker {
                    rng: RngStream::new(seed, &p.stream),
                    cfg: p.clone(),
                    n: 0,
                    next: p.start,
                    up_at: None,
                })
                .collect(),
        }
    }

    /// The time of the next change, if any.
    pub fn next_change(&self) -> Option<SimTime> {
        let mut t = self.once.time(self.next_once);
        for k in &self.tickers {
            let kt = k.up_at.map_or(k.next, |u| u.min(k.next));
            t = Some(t.map_or(kt, |x| x.min(kt)));
        }
        t
    }

    /// Takes the next change if it is due at `now`: (its time, the change).
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, Change)> {
        let t = self.next_change()?;
        if t > now {
            return None;
        }
        if self.once.time(self.next_once) == Some(t) {
            self.next_once += 1;
            return self.once.get(self.next_once - 1);
        }
        let dir = self.dir;
        for k in &mut self.tickers {
            if k.up_at == Some(t) {
                k.up_at = None;
                return Some((
                    t,
                    Change {
                        up: Some(true),
                        ..Change::default()
                    },
                ));
            }
            if k.next == t {
                return Some((t, k.tick(dir)));
            }
        }
        unreachable!("the next change belongs to a source")
    }
}
