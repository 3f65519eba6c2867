//! Applications: what a flow's endpoints do with their TCP connections
//! (`[[flow]] app = { kind = ... }`), as sans-IO state machines independent of TCP.
//!
//! An application takes events (started, connected, bytes read in order, a whole
//! request received, everything written acknowledged, the peer closed, its timer) and
//! returns actions (open a connection, write a message, close, record a page, request,
//! chunk or transfer), see [`io`]. It never sees a segment: the simulator drives it on
//! its TCP endpoints ([`crate::sim::apps`]); the emulator can drive the same machines on
//! real sockets. Randomness comes from seeded streams named by the flow and the
//! quantity (`app/<flow id>/<name>`), so one user's draws never depend on another's,
//! nor on the network (page k's sizes are the same under CUBIC and BBR).
//!
//! Kinds (defaults and their sources in [`spec`] and docs/workloads.md):
//! - `bulk`: today's transfer (`bytes` or unlimited), sent by `src`;
//! - `web`: the 3GPP HTTP browsing model ([`web`]): the client at `dst` fetches pages
//!   from the server at `src` over persistent parallel connections;
//! - `request-response` ([`rr`]): request, response, think time, persistent or one
//!   connection per request;
//! - `onoff` ([`onoff`]): `src` sends at a rate (or as fast as TCP allows) during on
//!   periods, nothing during off periods;
//! - `stream` ([`stream`]): a video client at `dst` fetching chunks into a playout
//!   buffer: start-up delay and rebuffering;
//! - `arrivals` ([`arrivals`]): transfers from `src` to `dst` arriving as a Poisson
//!   process, each on its own connection: flow completion time against size.
//!
//! `read_rate` (any kind): the application at `dst` reads what TCP delivered at this
//! rate; a slow reader fills its receive buffer and closes the window (seed 003's
//! clients), see [`crate::tcp::receiver`].
//!
//! In every kind `src` is where the data comes from (a server) and `dst` where it goes
//! (a user): goodput is what the application at `dst` read.

pub mod arrivals;
pub mod dist;
pub mod io;
pub mod onoff;
pub mod records;
pub mod rr;
pub mod server;
pub mod spec;
pub mod stream;
pub mod web;

pub use spec::{AppConfig, AppKind, AppSpec, KindConfig};
