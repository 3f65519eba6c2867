//! longpipe-gateway: the satellite TCP gateway of seed 003 (ACK spoofing, its own
//! window toward the satellite, shared fairly among connections) as a daemon on real
//! packets. It runs the core's [`Gateway`](longpipe_core::middlebox::gateway::Gateway)
//! — the element the simulator's `tcp-gateway` node runs — on IPv4/TCP packets read
//! from two TUN devices that policy routing sends the router's transit TCP traffic
//! through, one per direction.
//!
//! Modules: [`opts`] (the command line, checked before set-up), [`path`] (the packet
//! path, no I/O: bytes in, bytes out; fuzzed and benchmarked), [`pkt`] (the packet type
//! the gateway carries: header and payload bytes), [`metrics`] (Prometheus text format
//! on a local HTTP endpoint, the stats line), [`setup`] (devices, routes, rules,
//! sysctls), [`state`] (what an instance set up, on disk: refusal to touch a running
//! instance, exact cleanup, the connection snapshot for `status` and restarts),
//! [`worker`] (the unprivileged packet loop), [`idle`] (its choice between polling
//! and sleeping) and [`harden`] (its seccomp filter); split mode (kernel
//! sockets, nftables TPROXY): [`split_setup`] (root) and [`split`] (the relay). The binary
//! (`src/main.rs`) is the privileged parent and supervisor ([`supervise`]). See
//! docs/notes/gateway-daemon.md.

pub mod harden;
pub mod idle;
pub mod metrics;
pub mod opts;
pub mod path;
pub mod pkt;
pub mod setup;
pub mod split;
pub mod split_setup;
pub mod state;
pub mod supervise;
pub mod worker;
