//! Request-response (netperf's TCP_RR, and TCP_CRR with `persistent = false`), as a
//! client at `dst`: a request, the response it asks for, a think time, the next
//! request. The response time runs from the request (the connection's opening, when
//! each request has its own) to the response's last byte. Without persistence the
//! client closes each connection once its response has arrived.

use super::io::{Action, App, ConnId, Event, Msg, Record, Tag};
use super::spec::RrConfig;
use super::web::{after, bytes, duration, stream};
use crate::rng::RngStream;
use crate::time::SimTime;

#[derive(Debug, Clone, Copy)]
struct Waiting {
    conn: ConnId,
    start: SimTime,
    request: u64,
    size: u64,
    got: u64,
}

pub struct RrClient {
    cfg: RrConfig,
    req: RngStream,
    resp: RngStream,
    think: RngStream,
    next_conn: ConnId,
    opened: bool,
    waiting: Option<Waiting>,
    timer: Option<SimTime>,
}

impl RrClient {
    pub fn new(cfg: RrConfig, seed: u64, flow: usize) -> Self {
        RrClient {
            req: stream(seed, flow, "request"),
            resp: stream(seed, flow, "response"),
            think: stream(seed, flow, "think"),
            next_conn: 0,
            opened: false,
            waiting: None,
            timer: None,
            cfg,
        }
    }

    fn issue(&mut self, now: SimTime, out: &mut Vec<Action>) {
        let conn = if self.cfg.persistent {
            if !self.opened {
                self.opened = true;
                out.push(Action::Open(0));
            }
            0
        } else {
            let c = self.next_conn;
            self.next_conn += 1;
            out.push(Action::Open(c));
            c
        };
        let request = bytes(&self.cfg.request, &mut self.req);
        let size = bytes(&self.cfg.response, &mut self.resp);
        out.push(Action::Write {
            conn,
            msg: Msg {
                len: request,
                reply: size,
                born: now,
                tag: Tag::Request,
            },
        });
        self.waiting = Some(Waiting {
            conn,
            start: now,
            request,
            size,
            got: 0,
        });
    }
}

impl App for RrClient {
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>) {
        match ev {
            Event::Start => self.issue(now, out),
            Event::Timer if self.timer.is_some_and(|t| t <= now) => {
                self.timer = None;
                self.issue(now, out);
            }
            Event::Received { conn, bytes } => {
                let Some(w) = self.waiting.as_mut().filter(|w| w.conn == conn) else {
                    return;
                };
                w.got += bytes;
                if w.got < w.size {
                    return;
                }
                let w = *w;
                self.waiting = None;
                out.push(Action::Record(Record::Request {
                    conn,
                    start: w.start,
                    end: Some(now),
                    request: w.request,
                    response: w.size,
                }));
                if !self.cfg.persistent {
                    out.push(Action::Close(conn));
                }
                let t = duration(&self.cfg.think, &mut self.think);
                if t.0 == 0 {
                    self.issue(now, out);
                } else {
                    self.timer = Some(after(now, t));
                }
            }
            _ => {}
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        self.timer
    }

    fn unfinished(&self, _now: SimTime, out: &mut Vec<Record>) {
        if let Some(w) = self.waiting {
            out.push(Record::Request {
                conn: w.conn,
                start: w.start,
                end: None,
                request: w.request,
                response: w.size,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::dist::Dist;

    #[test]
    fn think_times_come_from_the_seeded_stream_and_connections_follow_persistence() {
        let cfg = |persistent| RrConfig {
            request: Dist::Fixed(100.0),
            response: Dist::Fixed(1000.0),
            think: Dist::Exponential { mean: 1e9 },
            persistent,
        };
        for persistent in [true, false] {
            let mut c = RrClient::new(cfg(persistent), 4, 2);
            let mut expect = stream(4, 2, "think");
            let mut out = vec![];
            let mut now = SimTime(0);
            c.handle(now, Event::Start, &mut out);
            let mut opens = out.iter().filter(|a| matches!(a, Action::Open(_))).count();
            for k in 0..4u64 {
                out.clear();
                let conn = if persistent { 0 } else { k };
                now = now + crate::time::SimDuration(5_000_000);
                c.handle(now, Event::Received { conn, bytes: 1000 }, &mut out);
                assert!(matches!(
                    out[0],
                    Action::Record(Record::Request { start: _, end: Some(e), response: 1000, .. }) if e == now
                ));
                assert_eq!(out.contains(&Action::Close(conn)), !persistent);
                let think = duration(&Dist::Exponential { mean: 1e9 }, &mut expect);
                assert_eq!(
                    c.next_timer(),
                    Some(now + think),
                    "the k-th draw of app/2/think"
                );
                now = now + think;
                out.clear();
                c.handle(now, Event::Timer, &mut out);
                opens += out.iter().filter(|a| matches!(a, Action::Open(_))).count();
            }
            assert_eq!(opens, if persistent { 1 } else { 5 });
        }
    }
}
