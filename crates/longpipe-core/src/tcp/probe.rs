//! Low-priority probing: the interface of the classic engine's recovery schemes that send
//! probe segments besides their data (the TCP-Peach family, `recovery/peach.rs`).
//!
//! Probes are segments of the low-priority class ([`crate::element::Class::Low`]),
//! sent with `Tx::emit_as(.., Class::Low, ..)` or `Tx::emit_probe_copy`; routers with a
//! class-aware queue serve them only with capacity normal traffic leaves unused. A
//! scheme that probes returns itself from `Recovery::prober`/`prober_mut`; the engine
//! then calls these hooks. The probe timer runs in every sender state (the prober clears
//! it once the connection is no longer established) and no transmission follows it.

use super::cc::CongestionControl;
use super::seg::Seg;
use super::tx::Tx;
use crate::time::SimTime;

pub trait Prober {
    /// The connection is established, before the first data is sent (cwnd = IW).
    fn on_established(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>);
    /// An ACK that answers a probe arrived (after its cumulative ACK and SACK blocks were
    /// processed; it never counts as a duplicate ACK).
    fn on_probe_ack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>);
    /// When the probe timer (the pacing of probes) next fires, if set.
    fn deadline(&self) -> Option<SimTime>;
    /// Runs the probe timer (`tx.st.now` is the time).
    fn on_deadline(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>);
    /// A retransmission timeout fired: told after the engine applied RFC 5681 (4)
    /// (cwnd = 1 MSS, go back N), before the retransmission is sent.
    fn on_rto(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>);
}
