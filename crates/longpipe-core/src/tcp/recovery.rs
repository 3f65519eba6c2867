//! Loss-recovery schemes: what the sender does on the third duplicate ACK and on ACKs
//! that arrive during recovery. Separate from congestion control (window growth and
//! reduction), as in ns-3 (`TcpRecoveryOps`); one enum arm per scheme.
//!
//! - `Tahoe` (4.3BSD-Tahoe `tcp_input.c`): on the 3rd duplicate ACK, ssthresh = loss
//!   reduction, cwnd = 1 SMSS, retransmit the first unacknowledged segment and restore
//!   snd_nxt; no fast recovery: the window then grows by slow start.
//! - `Reno` (RFC 5681 §3.2): fast retransmit, cwnd = ssthresh + 3 SMSS, inflate by SMSS
//!   per further duplicate ACK, and leave recovery on the first ACK of new data with
//!   cwnd = ssthresh (even if it acknowledges only part of the window).
//! - `NewReno` (RFC 6582 §3.2): as Reno, but enter only if the cumulative ACK covers more
//!   than `recover`; a partial ACK retransmits the next hole, deflates cwnd by the bytes
//!   acknowledged (+SMSS if at least SMSS was acknowledged) and stays in recovery (the RTO
//!   timer is reset on the first partial ACK only); a full ACK sets
//!   cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS) and ends recovery.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryKind {
    Tahoe,
    Reno,
    NewReno,
}

/// RFC 5681 / 6582 DupThresh.
pub const DUP_THRESH: u32 = 3;
