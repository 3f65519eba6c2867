//! longpipe-emu: live emulation. Real Linux TCP runs in network namespaces (one per
//! node of a scenario), connected by TUN devices (one per link end) to a user-space
//! ferry that moves every packet through the *same* link code as the simulator — the
//! core's link directions (queue → transmitter → loss → delay) and RLC AM, generic over
//! the unit, here a raw IPv4 buffer ([`pkt::Pkt`]) — driven by the core's
//! [`Driver`](longpipe_core::engine::driver::Driver) from a monotonic clock with
//! nanosecond resolution, with the scenario's seeded loss streams.
//!
//! Modules: [`pkt`] (the unit and its buffer pool), [`ferry`] (the network of link
//! directions and the real-time loop, testable with fake devices and clock), [`tun`]
//! (the real devices), [`netns`] (namespaces, devices, routes; teardown and crash
//! recovery), [`linux`] (scenario TCP options → socket options, routes, sysctls),
//! [`flows`] (bulk flows on real sockets, `TCP_INFO`), [`gwnode`] (a tcp-gateway node:
//! the real gateway daemon in its namespace), [`report`] (the simulator's
//! [`flows`] (bulk flows on real sockets, `TCP_INFO`), [`apps`] (the workload kinds on
//! real sockets, driven by the simulator's application state machines), [`report`] (the simulator's
//! result fields), [`selftest`] (accuracy and speed); [`sys`] is `longpipe_sys::sys` (the system calls,
//! the only `unsafe`, shared with the gateway daemon).
//! The binary (`src/main.rs`) is the privileged parent and the unprivileged ferry.
//! See docs/emulation.md.

pub mod apps;
pub mod ferry;
pub mod flows;
pub mod gwnode;
pub mod linux;
pub mod netns;
pub mod pkt;
pub mod report;
pub mod selftest;
pub mod tun;

pub use longpipe_sys::sys;
