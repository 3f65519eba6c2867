//! The passive side of every application: answers each request with the reply it asks
//! for (an HTTP server, a netperf responder), records each transfer of an `arrivals`
//! flow when its last byte is read, and closes its direction when the peer closes
//! (a server's passive close). It draws nothing: the active side chose every size.

use super::io::{Action, App, Event, Msg, Record, Tag};
use crate::time::SimTime;

#[derive(Debug, Default)]
pub struct Server;

impl App for Server {
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>) {
        match ev {
            Event::Message { conn, msg } => {
                if msg.reply > 0 {
                    out.push(Action::Write {
                        conn,
                        msg: Msg {
                            len: msg.reply,
                            reply: 0,
                            born: now,
                            tag: Tag::Data,
                        },
                    });
                }
                if msg.tag == Tag::Transfer {
                    out.push(Action::Record(Record::Transfer {
                        start: msg.born,
                        end: Some(now),
                        bytes: msg.len,
                    }));
                }
            }
            Event::PeerClosed(conn) => out.push(Action::Close(conn)),
            _ => {}
        }
    }

    fn next_timer(&self) -> Option<SimTime> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_requests_records_transfers_and_closes_after_the_peer() {
        let mut s = Server;
        let mut out = vec![];
        let req = Msg {
            len: 328,
            reply: 5000,
            born: SimTime(1),
            tag: Tag::Request,
        };
        s.handle(SimTime(7), Event::Message { conn: 3, msg: req }, &mut out);
        assert_eq!(
            out,
            vec![Action::Write {
                conn: 3,
                msg: Msg {
                    len: 5000,
                    reply: 0,
                    born: SimTime(7),
                    tag: Tag::Data
                }
            }]
        );
        out.clear();
        let tr = Msg {
            len: 10_000,
            reply: 0,
            born: SimTime(2),
            tag: Tag::Transfer,
        };
        s.handle(SimTime(9), Event::Message { conn: 4, msg: tr }, &mut out);
        assert_eq!(
            out,
            vec![Action::Record(Record::Transfer {
                start: SimTime(2),
                end: Some(SimTime(9)),
                bytes: 10_000
            })]
        );
        out.clear();
        s.handle(SimTime(10), Event::PeerClosed(4), &mut out);
        assert_eq!(out, vec![Action::Close(4)]);
    }
}
