//! The 3GPP HTTP browsing model (3GPP R1-070674, after 3GPP2 C.R1002; parameters as
//! in ns-3's `ThreeGppHttpVariables`, docs/workloads.md), as a client at `dst`.
//!
//! A page is a main object and a number of embedded objects. The client requests the
//! main object on connection 0; once it has arrived the client parses it (a parsing
//! time), learns how many embedded objects the page has, and requests them over up to
//! `connections` persistent connections, one object at a time on each (HTTP/1.1
//! without pipelining), opening a connection the first time it needs it. The page is
//! loaded when its last object has arrived; the user reads it (a reading time) and
//! clicks the next page. Connections stay open for the whole session. With
//! `connections = 1` this is ns-3's `ThreeGppHttpClient` in persistent mode.
//!
//! Draws come from one stream per quantity (`app/<flow>/main_size`, `.../embedded_count`,
//! `.../embedded_size`, `.../reading_time`, `.../parsing_time`, `.../request`), in page
//! order, so that page k is the same page whatever the network does.

use super::dist::Dist;
use super::io::{Action, App, ConnId, Event, Msg, Record, Tag};
use super::spec::WebConfig;
use crate::rng::RngStream;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The seeded stream of one quantity of one flow's application.
pub fn stream(seed: u64, flow: usize, name: &str) -> RngStream {
    RngStream::new(seed, &format!("app/{flow}/{name}"))
}

/// The largest size a draw gives (1 TB): a heavy tail cannot overflow byte counts.
pub const MAX_DRAW_BYTES: u64 = 1_000_000_000_000;

/// The longest time a draw gives (about 146 years).
pub const MAX_DRAW_NS: u64 = 1 << 62;

/// A size draw in whole bytes, at least 1 and at most [`MAX_DRAW_BYTES`] (ns-3 truncates
/// to an integer).
pub fn bytes(d: &Dist, r: &mut RngStream) -> u64 {
    (d.sample(r) as u64).clamp(1, MAX_DRAW_BYTES)
}

/// A time draw in whole nanoseconds, at most [`MAX_DRAW_NS`].
pub fn duration(d: &Dist, r: &mut RngStream) -> SimDuration {
    SimDuration((d.sample(r).round() as u64).min(MAX_DRAW_NS))
}

/// `now + d`, saturating at the end of time (a timer that never comes).
pub fn after(now: SimTime, d: SimDuration) -> SimTime {
    SimTime(now.0.saturating_add(d.0))
}

/// 3GPP's number of embedded objects: Pareto shape α, scale k, truncation m.
pub const EMBEDDED_PARETO: (f64, f64, f64) = (1.1, 2.0, 55.0);

#[derive(Debug, Clone, Copy)]
struct Obj {
    size: u64,
    got: u64,
    start: SimTime,
    request: u64,
}

#[derive(Debug)]
struct Page {
    start: SimTime,
    bytes: u64,
    objects: u32,
    /// The main object has arrived (embedded objects are known after parsing).
    main_done: bool,
    pending: VecDeque<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Parsing,
    Reading,
}

pub struct WebClient {
    cfg: WebConfig,
    main: RngStream,
    count: RngStream,
    emb: RngStream,
    read: RngStream,
    parse: RngStream,
    req: RngStream,
    /// Per connection: opened, and the object it is fetching.
    open: Vec<bool>,
    busy: Vec<Option<Obj>>,
    page: Option<Page>,
    timer: Option<(SimTime, Wait)>,
}

impl WebClient {
    pub fn new(cfg: WebConfig, seed: u64, flow: usize) -> Self {
        let n = cfg.connections as usize;
        WebClient {
            main: stream(seed, flow, "main_size"),
            count: stream(seed, flow, "embedded_count"),
            emb: stream(seed, flow, "embedded_size"),
            read: stream(seed, flow, "reading_time"),
            parse: stream(seed, flow, "parsing_time"),
            req: stream(seed, flow, "request"),
            open: vec![false; n],
            busy: vec![None; n],
            page: None,
            timer: None,
            cfg,
        }
    }

    /// Embedded objects of the next page: 3GPP's truncated Pareto (α 1.1, k 2, values
    /// above m = 55 taken as m) minus k, rounded: mean 5.64 as 3GPP states, 0 to 53.
    /// (ns-3 draws again above m and truncates, which gives a mean near 4.) Or the
    /// configured count, rounded down.
    fn embedded_count(&mut self) -> u32 {
        match &self.cfg.embedded_count {
            None => {
                let (a, k, m) = EMBEDDED_PARETO;
                let x = (k / (1.0 - self.count.uniform()).powf(1.0 / a)).min(m);
                (x - k).round() as u32
            }
            Some(d) => d.sample(&mut self.count).floor().max(0.0) as u32,
        }
    }

    fn request(&mut self, now: SimTime, c: usize, size: u64, out: &mut Vec<Action>) {
        let conn = c as ConnId;
        if !self.open[c] {
            self.open[c] = true;
            out.push(Action::Open(conn));
        }
        let request = bytes(&self.cfg.request, &mut self.req);
        out.push(Action::Write {
            conn,
            msg: Msg {
                len: request,
                reply: size,
                born: now,
                tag: Tag::Request,
            },
        });
        self.busy[c] = Some(Obj {
            size,
            got: 0,
            start: now,
            request,
        });
    }

    fn begin_page(&mut self, now: SimTime, out: &mut Vec<Action>) {
        let size = bytes(&self.cfg.main_size.clone(), &mut self.main);
        self.page = Some(Page {
            start: now,
            bytes: 0,
            objects: 0,
            main_done: false,
            pending: VecDeque::new(),
        });
        self.request(now, 0, size, out);
    }

    /// Hands pending objects to idle connections, in connection order.
    fn dispatch(&mut self, now: SimTime, out: &mut Vec<Action>) {
        for c in 0..self.busy.len() {
            if self.busy[c].is_some() {
                continue;
            }
            let Some(size) = self.page.as_mut().and_then(|p| p.pending.pop_front()) else {
                break;
            };
            self.request(now, c, size, out);
        }
    }

    fn page_done(&mut self, now: SimTime, out: &mut Vec<Action>) {
        if let Some(p) = self.page.take() {
            out.push(Action::Record(Record::Page {
                start: p.start,
                end: Some(now),
                bytes: p.bytes,
                objects: p.objects,
            }));
        }
        let t = duration(&self.cfg.reading_time.clone(), &mut self.read);
        self.timer = Some((after(now, t), Wait::Reading));
    }

    fn received(&mut self, now: SimTime, c: usize, n: u64, out: &mut Vec<Action>) {
        let Some(obj) = self.busy.get_mut(c).and_then(|o| o.as_mut()) else {
            return; // nothing asked on this connection
        };
        obj.got += n;
        if obj.got < obj.size {
            return;
        }
        let o = *obj;
        self.busy[c] = None;
        out.push(Action::Record(Record::Request {
            conn: c as ConnId,
            start: o.start,
            end: Some(now),
            request: o.request,
            response: o.size,
        }));
        let Some(p) = self.page.as_mut() else { return };
        p.bytes += o.size;
        p.objects += 1;
        if !p.main_done {
            p.main_done = true;
            let t = duration(&self.cfg.parsing_time.clone(), &mut self.parse);
            self.timer = Some((after(now, t), Wait::Parsing));
            return;
        }
        self.dispatch(now, out);
        let idle = self.busy.iter().all(|b| b.is_none());
        if idle && self.page.as_ref().is_some_and(|p| p.pending.is_empty()) {
            self.page_done(now, out);
        }
    }
}

impl App for WebClient {
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>) {
        match ev {
            Event::Start => self.begin_page(now, out),
            Event::Received { conn, bytes } => self.received(now, conn as usize, bytes, out),
            Event::Timer => match self.timer {
                Some((t, Wait::Reading)) if t <= now => {
                    self.timer = None;
                    self.begin_page(now, out);
                }
                Some((t, Wait::Parsing)) if t <= now => {
                    self.timer = None;
                    let n = self.embedded_count();
                    let d = self.cfg.embedded_size.clone();
                    let sizes: VecDeque<u64> = (0..n).map(|_| bytes(&d, &mut self.emb)).collect();
                    if let Some(p) = self.page.as_mut() {
                        p.pending = sizes;
                    }
                    if n == 0 {
                        self.page_done(now, out);
                    } else {
                        self.dispatch(now, out);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        self.timer.map(|t| t.0)
    }

    fn unfinished(&self, _now: SimTime, out: &mut Vec<Record>) {
        for (c, o) in self.busy.iter().enumerate() {
            if let Some(o) = o {
                out.push(Record::Request {
                    conn: c as ConnId,
                    start: o.start,
                    end: None,
                    request: o.request,
                    response: o.size,
                });
            }
        }
        if let Some(p) = &self.page {
            out.push(Record::Page {
                start: p.start,
                end: None,
                bytes: p.bytes,
                objects: p.objects,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(connections: u32) -> WebConfig {
        WebConfig {
            connections,
            main_size: Dist::Fixed(10_000.0),
            embedded_size: Dist::Fixed(2_000.0),
            embedded_count: Some(Dist::Fixed(5.0)),
            reading_time: Dist::Fixed(30e9),
            parsing_time: Dist::Fixed(0.1e9),
            request: Dist::Fixed(328.0),
        }
    }

    fn writes(out: &[Action]) -> Vec<(ConnId, u64)> {
        out.iter()
            .filter_map(|a| match a {
                Action::Write { conn, msg } => Some((*conn, msg.reply)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_page_is_its_main_object_then_its_embedded_objects_over_the_connections() {
        let mut w = WebClient::new(cfg(2), 1, 0);
        let mut out = vec![];
        w.handle(SimTime(0), Event::Start, &mut out);
        assert_eq!(out[0], Action::Open(0));
        assert_eq!(writes(&out), vec![(0, 10_000)], "the main object first");
        out.clear();
        // the main object arrives in two pieces: then the parsing time
        w.handle(
            SimTime(5),
            Event::Received {
                conn: 0,
                bytes: 4000,
            },
            &mut out,
        );
        assert!(out.is_empty());
        w.handle(
            SimTime(9),
            Event::Received {
                conn: 0,
                bytes: 6000,
            },
            &mut out,
        );
        assert_eq!(w.next_timer(), Some(SimTime(9 + 100_000_000)));
        out.clear();
        // parsed: 5 embedded objects; two at a time, connection 1 opened now
        w.handle(SimTime(100_000_009), Event::Timer, &mut out);
        assert_eq!(out[0..2], [out[0], Action::Open(1)]);
        assert_eq!(writes(&out), vec![(0, 2000), (1, 2000)]);
        let mut t = 100_000_010;
        let mut order = vec![];
        for (c, _) in [(1, 0), (0, 0), (0, 0), (1, 0), (0, 0)] {
            out.clear();
            w.handle(
                SimTime(t),
                Event::Received {
                    conn: c,
                    bytes: 2000,
                },
                &mut out,
            );
            order.extend(writes(&out));
            t += 10;
        }
        assert_eq!(
            order,
            vec![(1, 2000), (0, 2000), (0, 2000)],
            "3 more requests"
        );
        let page = out.iter().find_map(|a| match a {
            Action::Record(r @ Record::Page { .. }) => Some(*r),
            _ => None,
        });
        assert_eq!(
            page,
            Some(Record::Page {
                start: SimTime(0),
                end: Some(SimTime(t - 10)),
                bytes: 20_000,
                objects: 6
            })
        );
        // then the reading time, and the next page on the open connection 0
        assert_eq!(w.next_timer(), Some(SimTime(t - 10 + 30_000_000_000)));
        out.clear();
        w.handle(SimTime(t - 10 + 30_000_000_000), Event::Timer, &mut out);
        assert_eq!(writes(&out), vec![(0, 10_000)]);
        assert!(!out.contains(&Action::Open(0)), "persistent");
    }

    #[test]
    fn heavy_tails_cannot_overflow_sizes_or_times() {
        let mut r = RngStream::new(1, "t");
        let d = Dist::Pareto {
            shape: 0.001,
            scale: 1e300,
            max: f64::INFINITY,
        };
        assert_eq!(bytes(&d, &mut r), MAX_DRAW_BYTES);
        assert_eq!(duration(&d, &mut r).0, MAX_DRAW_NS);
        assert_eq!(
            after(SimTime(u64::MAX - 5), SimDuration(10)),
            SimTime(u64::MAX)
        );
    }

    #[test]
    fn default_draws_are_3gpp_and_do_not_depend_on_timing() {
        let c = match super::super::spec::AppSpec::resolve(
            Some(&serde_json::from_str(r#"{"kind":"web"}"#).unwrap()),
            "a",
        )
        .unwrap()
        .kind
        {
            super::super::spec::KindConfig::Web(w) => w,
            _ => unreachable!(),
        };
        let mut w = WebClient::new(c, 7, 3);
        let n = 50_000;
        let counts: Vec<u32> = (0..n).map(|_| w.embedded_count()).collect();
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n as f64;
        // 3GPP: mean 5.64 embedded objects, at most m − k = 53
        assert!((mean - 5.64).abs() < 0.15, "{mean}");
        assert!(counts.iter().all(|&c| c <= 53));
        // P(no embedded object) = P(X < 2.5) = 1 − (2/2.5)^1.1 ≈ 0.218
        let zeros = counts.iter().filter(|&&c| c == 0).count() as f64 / n as f64;
        assert!((zeros - 0.218).abs() < 0.01, "{zeros}");
        // two clients of the same flow and seed draw the same first page
        let page = |seed| {
            let mut w = WebClient::new(cfg(6), seed, 1);
            w.cfg.main_size = Dist::Exponential { mean: 1e4 };
            let mut out = vec![];
            w.handle(SimTime(0), Event::Start, &mut out);
            writes(&out)
        };
        assert_eq!(page(5), page(5));
        assert_ne!(page(5), page(6));
    }
}
