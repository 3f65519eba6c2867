//! Link layers that cut IP packets (SDUs) into smaller units with their own
//! retransmission or discard rules. Each replaces a link direction's plain transmitter
//! and is sans-IO: packets and `now` in, timed packets and a wake-up time out.

pub mod rlc;
