//! longpipe-sys: what longpipe's live tools (`longpipe-emu`, `longpipe-gateway`) share
//! to talk to the kernel of the machine they run on.
//!
//! - [`sys`]: the system calls `std` does not offer (TUN devices, network namespaces,
//!   `ppoll`, socket options, signal flags, `prctl`, seccomp). The only module of the
//!   workspace's live tools where `unsafe` is allowed; every block states why it is
//!   sound.
//! - [`cmd`]: running `ip` (iproute2) and `nft` (nftables) as a user would type them,
//!   errors naming the command and the tool's own message.
//! - [`sysctl`]: `/proc/sys/net` values, read and written with an undo list.
//! - [`procs`]: a process's identity across pid reuse (pid and start time), for run
//!   records and state files: a record names a live process only if both match.
//!
//! Neither tool depends on the other for these: the gateway daemon runs on a router
//! without the emulator.

pub mod cmd;
pub mod procs;
pub mod sys;
pub mod sysctl;
