//! The interface between an application and whatever carries its bytes: events in,
//! actions out. Nothing here knows TCP, segments or the simulator.
//!
//! A connection is named by the application ([`ConnId`]); the application that opens
//! connections is the *active* one (a web client, an arrivals source), its peer the
//! *passive* one ([`super::server::Server`]: it answers requests and sinks transfers).
//! Data is written as messages ([`Msg`]): a message's length, the size of the reply it
//! asks for, and when it was born. The carrier frames them (the simulator keeps a
//! queue beside each connection; a real socket would carry a small header), so the
//! passive side learns a message once all its bytes were read in order.

use crate::time::SimTime;

/// A connection, as its application names it.
pub type ConnId = u64;

/// What a message is (for the records of the side that completes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// A request; its reply is what the active side waits for.
    Request,
    /// A transfer of an `arrivals` flow: the passive side records its completion.
    Transfer,
    /// Data with no meaning of its own (onoff).
    Data,
}

/// A message written on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    /// Bytes.
    pub len: u64,
    /// Bytes the peer answers with once it has read the whole message (0: none).
    pub reply: u64,
    /// When the message came to be (a transfer's arrival, a request's issue).
    pub born: SimTime,
    pub tag: Tag,
}

/// What happens to an application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Its start time.
    Start,
    /// The time it asked for ([`App::next_timer`]) has come.
    Timer,
    /// A connection it opened (or accepted) is established.
    Connected(ConnId),
    /// `bytes` more bytes were read in order on a connection.
    Received { conn: ConnId, bytes: u64 },
    /// The passive side read a whole message.
    Message { conn: ConnId, msg: Msg },
    /// Everything written on the connection so far is acknowledged.
    Acked(ConnId),
    /// The peer closed its direction (its FIN was read).
    PeerClosed(ConnId),
    /// Both directions are closed; the connection is gone.
    Closed(ConnId),
}

/// What an application asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Open a connection (the active side); writes may follow at once and leave once
    /// it is established.
    Open(ConnId),
    /// Write a message.
    Write { conn: ConnId, msg: Msg },
    /// Write without end (`true`: as fast as the transport takes it) or stop writing
    /// (`false`: what the transport has not sent yet is dropped from the send buffer).
    Unlimited { conn: ConnId, on: bool },
    /// Close our direction once everything written is sent.
    Close(ConnId),
    /// Record a measurement.
    Record(Record),
}

/// A measurement: one row of a page, request, chunk, stall or transfer table. `end` is
/// None for what had not finished when the run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    /// A web page: from the click (the end of the reading time) to its last object.
    Page {
        start: SimTime,
        end: Option<SimTime>,
        bytes: u64,
        objects: u32,
    },
    /// A request and its response: from the request to the response's last byte.
    Request {
        conn: ConnId,
        start: SimTime,
        end: Option<SimTime>,
        request: u64,
        response: u64,
    },
    /// A video chunk: from its request to its last byte.
    Chunk {
        index: u64,
        start: SimTime,
        end: Option<SimTime>,
        bytes: u64,
        bitrate: u64,
    },
    /// A time the video did not play: the start-up (`startup`) or a stall.
    Stall {
        start: SimTime,
        end: Option<SimTime>,
        startup: bool,
    },
    /// A transfer of an arrivals flow: from its arrival to its last byte read.
    Transfer {
        start: SimTime,
        end: Option<SimTime>,
        bytes: u64,
    },
}

/// An application: a state machine of events and actions.
pub trait App: Send {
    /// Handles `ev` at `now`; actions go to `out`.
    fn handle(&mut self, now: SimTime, ev: Event, out: &mut Vec<Action>);
    /// When it next wants [`Event::Timer`].
    fn next_timer(&self) -> Option<SimTime>;
    /// At the end of a run: records of what had not finished (`end` None).
    fn unfinished(&self, _now: SimTime, _out: &mut Vec<Record>) {}
}
