//! Transfers arriving as a Poisson process at `src`: exponential inter-arrival times of
//! mean 1/`rate` (stream `app/<flow>/arrival`), sizes from `size` (`app/<flow>/size`).
//! Each transfer opens its own connection, writes its bytes and closes; the passive
//! side records its completion time (arrival to last byte read, the flow completion
//! time of Dukkipati and McKeown).

use super::dist::Dist;
use super::io::{Action, App, Event, Msg, Tag};
use super::spec::ArrivalsConfig;
use super::web::{after, bytes, duration, stream};
use crate::rng::RngStream;
use crate::time::SimTime;

pub struct Arrivals {
    gap: Dist,
    size: Dist,
    arrival: RngStream,
    sizes: RngStream,
    next: Option<SimTime>,
    count: u64,
}

impl Arrivals {
    pub fn new(cfg: &ArrivalsConfig, seed: u64, flow: usize) -> Self {
        Arrivals {
            gap: Dist::Exponential {
                mean: 1e9 / cfg.rate,
            },
            size: cfg.size.clone(),
            arrival: stream(seed, flow, "arrival"),
            sizes: stream(seed, flow, "size"),
            next: None,
            count: 0,
        }
    }
}

impl App for Arrivals {
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>) {
        let due = match ev {
            Event::Start => false,
            Event::Timer if self.next.is_some_and(|t| t <= now) => true,
            _ => return,
        };
        if due {
            let conn = self.count;
            self.count += 1;
            let len = bytes(&self.size, &mut self.sizes);
            out.push(Action::Open(conn));
            out.push(Action::Write {
                conn,
                msg: Msg {
                    len,
                    reply: 0,
                    born: now,
                    tag: Tag::Transfer,
                },
            });
            out.push(Action::Close(conn));
        }
        self.next = Some(after(now, duration(&self.gap, &mut self.arrival)));
    }

    fn next_timer(&self) -> Option<SimTime> {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_arrivals_at_the_rate() {
        let cfg = ArrivalsConfig {
            rate: 20.0,
            size: Dist::Fixed(1000.0),
            max_active: 4,
        };
        let mut a = Arrivals::new(&cfg, 2, 0);
        let mut out = vec![];
        a.handle(SimTime(0), Event::Start, &mut out);
        let end = SimTime(1000 * 1_000_000_000);
        while let Some(t) = a.next_timer().filter(|&t| t < end) {
            a.handle(t, Event::Timer, &mut out);
        }
        let opens = out.iter().filter(|x| matches!(x, Action::Open(_))).count();
        // 20/s over 1000 s: 20 000 ± 3 sd (sd = sqrt(20 000) ≈ 141)
        assert!((opens as f64 - 20_000.0).abs() < 430.0, "{opens}");
        assert!(
            matches!(out[1], Action::Write { conn: 0, msg } if msg.len == 1000 && msg.tag == Tag::Transfer)
        );
        assert_eq!(out[2], Action::Close(0));
    }
}
