//! On/off source at `src` (ns-3's OnOffApplication over TCP): alternating on and off
//! periods drawn from their distributions, starting with on. While on it writes at
//! `rate` (in writes of [`WRITE`] bytes at evenly spaced times) or, with
//! `rate = "bulk"`, as fast as TCP takes data; what TCP has not sent when an on period
//! ends is dropped from the send buffer (the application stopped writing). One
//! persistent connection. A period shorter than 1 ms is taken as 1 ms ([`MIN_PERIOD`]).

use super::io::{Action, App, Event, Msg, Tag};
use super::spec::OnOffConfig;
use super::web::{after, duration, stream};
use crate::rng::RngStream;
use crate::time::{SimDuration, SimTime};

/// Bytes per write at a given rate (one full-size Ethernet TCP segment's payload).
pub const WRITE: u64 = 1460;

/// The shortest on or off period: a draw below is taken as this (two zero-length
/// periods would alternate forever at one instant). As TCP's timers' floor
/// ([`crate::tcp::config::MIN_TIMER`]).
pub const MIN_PERIOD: SimDuration = SimDuration::from_millis(1);

fn period(d: &super::dist::Dist, r: &mut RngStream) -> SimDuration {
    duration(d, r).max(MIN_PERIOD)
}

pub struct OnOff {
    cfg: OnOffConfig,
    on_rng: RngStream,
    off_rng: RngStream,
    on: bool,
    /// Start and end of the current period.
    since: SimTime,
    until: SimTime,
    /// Writes done in the current on period.
    writes: u64,
}

impl OnOff {
    pub fn new(cfg: OnOffConfig, seed: u64, flow: usize) -> Self {
        OnOff {
            on_rng: stream(seed, flow, "on"),
            off_rng: stream(seed, flow, "off"),
            on: false,
            since: SimTime::ZERO,
            until: SimTime::ZERO,
            writes: 0,
            cfg,
        }
    }

    /// Time of the k-th write of an on period at the configured rate.
    fn write_time(&self, k: u64) -> Option<SimTime> {
        let r = self.cfg.rate?.bps() as u128;
        let ns = (k as u128 * WRITE as u128 * 8 * 1_000_000_000).div_ceil(r);
        Some(self.since + SimDuration(ns as u64))
    }

    fn start_on(&mut self, now: SimTime, out: &mut Vec<Action>) {
        self.on = true;
        self.since = now;
        self.until = after(now, period(&self.cfg.on, &mut self.on_rng));
        self.writes = 0;
        if self.cfg.rate.is_none() {
            out.push(Action::Unlimited { conn: 0, on: true });
        }
        self.write_due(now, out);
    }

    fn write_due(&mut self, now: SimTime, out: &mut Vec<Action>) {
        while let Some(t) = self.write_time(self.writes) {
            if t > now || t >= self.until {
                break;
            }
            self.writes += 1;
            out.push(Action::Write {
                conn: 0,
                msg: Msg {
                    len: WRITE,
                    reply: 0,
                    born: t,
                    tag: Tag::Data,
                },
            });
        }
    }
}

impl App for OnOff {
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>) {
        match ev {
            Event::Start => {
                out.push(Action::Open(0));
                self.start_on(now, out);
            }
            Event::Timer => {
                if self.on {
                    self.write_due(now, out);
                    if now >= self.until {
                        self.on = false;
                        if self.cfg.rate.is_none() {
                            out.push(Action::Unlimited { conn: 0, on: false });
                        }
                        self.since = now;
                        self.until = after(now, period(&self.cfg.off, &mut self.off_rng));
                    }
                } else if now >= self.until {
                    self.start_on(now, out);
                }
            }
            _ => {}
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        let next_write = self
            .on
            .then(|| self.write_time(self.writes))
            .flatten()
            .filter(|&t| t < self.until);
        Some(next_write.map_or(self.until, |w| w.min(self.until)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::dist::Dist;
    use crate::time::Rate;

    #[test]
    fn writes_at_the_rate_while_on_and_nothing_while_off() {
        // 1 s on at 116.8 kbit/s: 10 writes of 1460 B (every 100 ms), then 1 s off
        let mut a = OnOff::new(
            OnOffConfig {
                on: Dist::Fixed(1e9),
                off: Dist::Fixed(1e9),
                rate: Some(Rate(116_800)),
            },
            1,
            0,
        );
        let mut out = vec![];
        a.handle(SimTime(0), Event::Start, &mut out);
        while let Some(t) = a.next_timer().filter(|&t| t < SimTime(4_000_000_000)) {
            a.handle(t, Event::Timer, &mut out);
        }
        let times: Vec<u64> = out
            .iter()
            .filter_map(|x| match x {
                Action::Write { msg, .. } => Some(msg.born.0 / 100_000_000),
                _ => None,
            })
            .collect();
        let want: Vec<u64> = (0..10).chain(20..30).collect();
        assert_eq!(times, want, "writes in [0, 1) s and [2, 3) s");
    }

    #[test]
    fn zero_length_periods_last_a_millisecond() {
        let mut a = OnOff::new(
            OnOffConfig {
                on: Dist::Fixed(0.0),
                off: Dist::Fixed(0.0),
                rate: None,
            },
            1,
            0,
        );
        let mut out = vec![];
        a.handle(SimTime(0), Event::Start, &mut out);
        for k in 1..=4 {
            let t = a.next_timer().unwrap();
            assert_eq!(t, SimTime(k * 1_000_000), "time moves on");
            a.handle(t, Event::Timer, &mut out);
        }
    }

    #[test]
    fn bulk_while_on_switches_the_connection() {
        let mut a = OnOff::new(
            OnOffConfig {
                on: Dist::Fixed(2e9),
                off: Dist::Fixed(3e9),
                rate: None,
            },
            1,
            0,
        );
        let mut out = vec![];
        a.handle(SimTime(0), Event::Start, &mut out);
        assert_eq!(
            out,
            vec![Action::Open(0), Action::Unlimited { conn: 0, on: true }]
        );
        assert_eq!(a.next_timer(), Some(SimTime(2_000_000_000)));
        out.clear();
        a.handle(SimTime(2_000_000_000), Event::Timer, &mut out);
        assert_eq!(out, vec![Action::Unlimited { conn: 0, on: false }]);
        assert_eq!(a.next_timer(), Some(SimTime(5_000_000_000)));
    }
}
