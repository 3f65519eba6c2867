//! A video client at `dst` (DASH/HLS-like): it fetches chunks of `chunk` seconds of
//! video, one at a time over one persistent connection, into a playout buffer.
//! Playback starts once `startup` seconds are buffered; when the buffer runs dry the
//! video stalls (rebuffers) until `startup` seconds are buffered again. The next chunk
//! is requested at once while the buffer holds at most `buffer` − `chunk`, else when it
//! has drained to that. With a ladder of bit rates, each chunk takes the highest rate
//! at most 0.9 × the harmonic mean of the last 5 chunks' throughputs (the rate rule of
//! dash.js, whose `bandwidthSafetyFactor` is 0.9; the harmonic mean as in FESTIVE,
//! Jiang et al., CoNEXT 2012); the first chunk takes the lowest.
//!
//! Records: each chunk (request to last byte), the start-up (start to playback) and
//! each stall.

use super::io::{Action, App, Event, Msg, Record, Tag};
use super::spec::StreamConfig;
use super::web::{bytes, stream};
use crate::rng::RngStream;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// Throughput samples the ladder's rule averages.
const ABR_SAMPLES: usize = 5;
/// The share of the estimated throughput a chunk's bit rate may use.
const ABR_SAFETY: f64 = 0.9;

#[derive(Debug, Clone, Copy)]
struct Fetch {
    index: u64,
    start: SimTime,
    size: u64,
    got: u64,
    bitrate: u64,
}

pub struct StreamClient {
    cfg: StreamConfig,
    req: RngStream,
    /// Buffered video (ns) as of `at`.
    level: u64,
    at: SimTime,
    playing: bool,
    /// The current time without playback (start-up or stall) and whether it is the
    /// start-up.
    stalled_since: Option<(SimTime, bool)>,
    fetch: Option<Fetch>,
    next_index: u64,
    tput: VecDeque<f64>,
}

impl StreamClient {
    pub fn new(cfg: StreamConfig, seed: u64, flow: usize) -> Self {
        StreamClient {
            req: stream(seed, flow, "request"),
            level: 0,
            at: SimTime::ZERO,
            playing: false,
            stalled_since: None,
            fetch: None,
            next_index: 0,
            tput: VecDeque::new(),
            cfg,
        }
    }

    /// Plays the buffer forward to `now`.
    fn advance(&mut self, now: SimTime) {
        if self.playing {
            let dt = (now - self.at).0;
            self.level = self.level.saturating_sub(dt);
        }
        self.at = now;
    }

    fn bitrate(&self) -> u64 {
        let l = &self.cfg.ladder;
        if l.len() == 1 || self.tput.is_empty() {
            return l[0].bps();
        }
        let hm = self.tput.len() as f64 / self.tput.iter().map(|x| 1.0 / x).sum::<f64>();
        let budget = ABR_SAFETY * hm;
        l.iter()
            .rev()
            .find(|r| r.bps() as f64 <= budget)
            .unwrap_or(&l[0])
            .bps()
    }

    /// The most buffered video at which the next chunk is requested.
    fn refill_level(&self) -> u64 {
        (self.cfg.buffer - self.cfg.chunk).0
    }

    fn request(&mut self, now: SimTime, out: &mut Vec<Action>) {
        let bitrate = self.bitrate();
        let size = ((bitrate as u128 * self.cfg.chunk.0 as u128) / 8 / 1_000_000_000).max(1) as u64;
        let request = bytes(&self.cfg.request, &mut self.req);
        out.push(Action::Write {
            conn: 0,
            msg: Msg {
                len: request,
                reply: size,
                born: now,
                tag: Tag::Request,
            },
        });
        self.fetch = Some(Fetch {
            index: self.next_index,
            start: now,
            size,
            got: 0,
            bitrate,
        });
        self.next_index += 1;
    }

    fn maybe_request(&mut self, now: SimTime, out: &mut Vec<Action>) {
        if self.fetch.is_none() && self.level <= self.refill_level() {
            self.request(now, out);
        }
    }

    fn chunk_done(&mut self, now: SimTime, f: Fetch, out: &mut Vec<Action>) {
        self.advance(now);
        self.level += self.cfg.chunk.0;
        out.push(Action::Record(Record::Chunk {
            index: f.index,
            start: f.start,
            end: Some(now),
            bytes: f.size,
            bitrate: f.bitrate,
        }));
        let secs = (now - f.start).as_secs_f64().max(1e-9);
        self.tput.push_back(f.size as f64 * 8.0 / secs);
        if self.tput.len() > ABR_SAMPLES {
            self.tput.pop_front();
        }
        if !self.playing && self.level >= self.cfg.startup.0 {
            self.playing = true;
            if let Some((t, startup)) = self.stalled_since.take() {
                out.push(Action::Record(Record::Stall {
                    start: t,
                    end: Some(now),
                    startup,
                }));
            }
        }
        self.maybe_request(now, out);
    }
}

impl App for StreamClient {
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>) {
        match ev {
            Event::Start => {
                self.at = now;
                self.stalled_since = Some((now, true));
                out.push(Action::Open(0));
                self.request(now, out);
            }
            Event::Received { bytes, .. } => {
                let Some(f) = self.fetch.as_mut() else { return };
                f.got += bytes;
                if f.got >= f.size {
                    let f = *f;
                    self.fetch = None;
                    self.chunk_done(now, f, out);
                }
            }
            Event::Timer => {
                self.advance(now);
                if self.playing && self.level == 0 {
                    self.playing = false;
                    self.stalled_since = Some((now, false));
                }
                self.maybe_request(now, out);
            }
            _ => {}
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        if !self.playing {
            return None; // waiting for data: the next chunk's arrival moves us
        }
        let empty = self.at + SimDuration(self.level);
        let refill = (self.fetch.is_none() && self.level > self.refill_level())
            .then(|| self.at + SimDuration(self.level - self.refill_level()));
        Some(refill.map_or(empty, |r| r.min(empty)))
    }

    fn unfinished(&self, _now: SimTime, out: &mut Vec<Record>) {
        if let Some(f) = self.fetch {
            out.push(Record::Chunk {
                index: f.index,
                start: f.start,
                end: None,
                bytes: f.size,
                bitrate: f.bitrate,
            });
        }
        if let Some((t, startup)) = self.stalled_since {
            out.push(Record::Stall {
                start: t,
                end: None,
                startup,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::dist::Dist;
    use crate::time::Rate;

    fn cfg(ladder: Vec<Rate>) -> StreamConfig {
        StreamConfig {
            ladder,
            chunk: SimDuration::from_secs(2),
            buffer: SimDuration::from_secs(6),
            startup: SimDuration::from_secs(2),
            request: Dist::Fixed(328.0),
        }
    }

    const S: u64 = 1_000_000_000;

    /// Delivers the current chunk whole at `t`.
    fn deliver(c: &mut StreamClient, t: u64, out: &mut Vec<Action>) {
        let size = c.fetch.expect("a chunk in flight").size;
        c.handle(
            SimTime(t),
            Event::Received {
                conn: 0,
                bytes: size,
            },
            out,
        );
    }

    #[test]
    fn plays_after_startup_fills_to_the_target_and_stalls_when_the_link_stops() {
        let mut c = StreamClient::new(cfg(vec![Rate(1_000_000)]), 1, 0);
        let mut out = vec![];
        c.handle(SimTime(0), Event::Start, &mut out);
        assert_eq!(c.fetch.unwrap().size, 250_000, "2 s at 1 Mbit/s");
        // chunks every 0.5 s: playback starts with the first, the buffer fills to 6 s
        for k in 1..=3 {
            deliver(&mut c, k * S / 2, &mut out);
        }
        assert!(c.playing);
        assert_eq!(
            out.iter()
                .find(|a| matches!(a, Action::Record(Record::Stall { .. }))),
            Some(&Action::Record(Record::Stall {
                start: SimTime(0),
                end: Some(SimTime(S / 2)),
                startup: true
            }))
        );
        // 3 chunks (6 s) in, 1 s played: 5 s buffered; above 4 s no request
        assert!(c.fetch.is_none());
        assert_eq!(
            c.next_timer(),
            Some(SimTime(3 * S / 2 + S)),
            "refill at 4 s buffered"
        );
        c.handle(SimTime(5 * S / 2), Event::Timer, &mut out);
        assert!(c.fetch.is_some(), "requested at 4 s buffered");
        // the link stops: nothing arrives; the buffer empties 4 s later: a stall
        assert_eq!(c.next_timer(), Some(SimTime(5 * S / 2 + 4 * S)));
        c.handle(SimTime(13 * S / 2), Event::Timer, &mut out);
        assert!(!c.playing);
        assert_eq!(c.next_timer(), None);
        // the chunk finally arrives at 8 s: 2 s buffered = startup: playing again
        out.clear();
        deliver(&mut c, 8 * S, &mut out);
        assert!(out.contains(&Action::Record(Record::Stall {
            start: SimTime(13 * S / 2),
            end: Some(SimTime(8 * S)),
            startup: false
        })));
        assert!(c.playing);
    }

    #[test]
    fn the_ladder_follows_the_throughput() {
        let mut c = StreamClient::new(
            cfg(vec![Rate(1_000_000), Rate(3_000_000), Rate(6_000_000)]),
            1,
            0,
        );
        let mut out = vec![];
        c.handle(SimTime(0), Event::Start, &mut out);
        assert_eq!(c.fetch.unwrap().bitrate, 1_000_000, "lowest first");
        // 250 kB in 0.5 s: 4 Mbit/s measured; 0.9 × 4 = 3.6: the 3 Mbit/s rung
        deliver(&mut c, S / 2, &mut out);
        assert_eq!(c.fetch.unwrap().bitrate, 3_000_000);
    }
}
