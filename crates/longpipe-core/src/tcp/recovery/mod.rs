//! Loss-recovery schemes: what the sender does on duplicate ACKs and on ACKs that
//! arrive during a recovery episode. Separate from congestion control (window growth
//! and the reduction on loss), as in ns-3 (`TcpRecoveryOps`) and Linux. One file per
//! scheme; [`RecoveryKind::build`] is the one place that names them.
//!
//! - [`tahoe`]: 4.3BSD-Tahoe fast retransmit, then slow start from one segment.
//! - [`reno`]: RFC 5681 §3.2 fast retransmit / fast recovery.
//! - [`newreno`]: RFC 6582 fast recovery with partial ACKs.
//! - [`sack`]: RFC 6675 conservative SACK-based loss recovery (used by Reno and NewReno
//!   when SACK is negotiated).
//! - [`peach`]: TCP-Peach (Sudden Start, Rapid Recovery with dummy segments),
//!   TCP-Peach+ (Jump Start, Quick Recovery with NIL segments) and the experimental
//!   TCP-Cherry: schemes that also send low-priority probes, so they use the optional
//!   hooks below (a timer for pacing probes, the ACKs that answer probes, the start of
//!   the connection and the retransmission timeout).
//!
//! A scheme acts on the sender's [`Tx`] (state, scoreboard, transmission) and may ask
//! the congestion control for ssthresh; the sender core handles everything else: RTT
//! and RTO (RFC 6298), the retransmission timeout (RFC 5681 (4)), window growth outside
//! recovery, Limited Transmit (RFC 3042).

pub mod linux;
mod linux_ack;
mod linux_xmit;
pub mod newreno;
pub mod peach;
pub mod prr;
pub mod rack;
pub mod reno;
pub mod sack;
pub mod tahoe;
pub mod tlp;

use super::cc::CongestionControl;
use super::seg::Seg;
use super::tx::Tx;
use crate::time::SimTime;

/// RFC 5681 / 6582 / 6675 DupThresh.
pub const DUP_THRESH: u32 = 3;

/// A loss-recovery scheme.
pub trait Recovery: Send {
    fn name(&self) -> &'static str;
    /// A duplicate ACK arrived (`tx.dupacks` already counts it). May start an episode
    /// (`tx.in_recovery`).
    fn on_dupack(&mut self, tx: &mut Tx, cc: &mut dyn CongestionControl, out: &mut Vec<Seg>);
    /// An ACK of new data (`acked` bytes; snd_una already advanced) while
    /// `tx.in_recovery`. Returns whether the retransmission timer restarts (RFC 6298
    /// (5.3)).
    fn on_ack(
        &mut self,
        tx: &mut Tx,
        cc: &mut dyn CongestionControl,
        acked: u64,
        out: &mut Vec<Seg>,
    ) -> bool;
    /// Sends what the windows allow while `tx.in_recovery` (default: the normal rule).
    fn send(&mut self, tx: &mut Tx, out: &mut Vec<Seg>) {
        tx.try_send(out);
    }
    /// The connection is established, before the first data is sent (cwnd = IW).
    fn on_established(
        &mut self,
        _tx: &mut Tx,
        _cc: &mut dyn CongestionControl,
        _out: &mut Vec<Seg>,
    ) {
    }
    /// An ACK that answers a low-priority probe arrived (after its cumulative ACK and
    /// SACK blocks were processed; it never counts as a duplicate ACK).
    fn on_probe_ack(&mut self, _tx: &mut Tx, _cc: &mut dyn CongestionControl, _out: &mut Vec<Seg>) {
    }
    /// The scheme's probe timer (TCP-Peach family: pacing of probes), if set. Unlike
    /// [`Recovery::next_timer`] it runs in every sender state (the scheme clears it once
    /// the connection is no longer established) and no transmission follows it.
    fn poll_timeout(&self) -> Option<SimTime> {
        None
    }
    /// Runs the probe timer (`tx.st.now` is the time).
    fn on_timeout(&mut self, _tx: &mut Tx, _cc: &mut dyn CongestionControl, _out: &mut Vec<Seg>) {}

    // Hooks of schemes that run the whole ACK path themselves (the Linux stack); the
    // defaults keep the classic division of work.

    /// Processes an ACK entirely (Linux `tcp_ack`): returns true if it did, and the
    /// sender core then skips duplicate-ACK counting and window growth.
    fn on_segment_ack(
        &mut self,
        _tx: &mut Tx,
        _cc: &mut dyn CongestionControl,
        _seg: &Seg,
        _out: &mut Vec<Seg>,
    ) -> bool {
        false
    }
    /// Whether [`Recovery::send`] decides every transmission, in recovery or not; such
    /// a scheme also handles the retransmission timeout ([`Recovery::on_rto`]).
    fn owns_send(&self) -> bool {
        false
    }
    /// The scheme's own timer (RACK reordering window, tail loss probe), run while the
    /// connection is established and followed by a transmission.
    fn next_timer(&self) -> Option<SimTime> {
        None
    }
    /// Its timer expired.
    fn on_timer(&mut self, _tx: &mut Tx, _cc: &mut dyn CongestionControl, _out: &mut Vec<Seg>) {}
    /// A retransmission timeout fired. A classic scheme is told after the sender applied
    /// RFC 5681 (4) (cwnd = 1 MSS, go back N), before the retransmission is sent; a
    /// scheme with [`Recovery::owns_send`] does the whole timeout processing here.
    fn on_rto(&mut self, _tx: &mut Tx, _cc: &mut dyn CongestionControl, _out: &mut Vec<Seg>) {}
}

/// The recovery scheme of a `tcp = ...` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryKind {
    Tahoe,
    Reno,
    NewReno {
        /// Restart the RTO on every partial ACK (Slow-but-Steady) instead of the first
        /// only (Impatient), RFC 6582 §4.
        partial_ack_timer_every: bool,
    },
    /// TCP-Peach, TCP-Peach+ or TCP-Cherry (their own recovery, SACK or not).
    Peach(peach::PeachConfig),
    /// The Linux stack's recovery state machine (PRR, RACK-TLP, undo) when SACK is
    /// negotiated; NewReno otherwise.
    Linux,
}

impl RecoveryKind {
    /// The scheme for a connection; `sack` when SACK was negotiated.
    pub fn build(self, sack: bool) -> Box<dyn Recovery> {
        match (self, sack) {
            (RecoveryKind::Tahoe, _) => Box::new(tahoe::Tahoe),
            (RecoveryKind::Peach(c), _) => Box::new(peach::Peach::new(c, sack)),
            (RecoveryKind::Linux, true) => Box::new(linux::Linux::default()),
            (RecoveryKind::Linux, false) => Box::new(newreno::NewReno::new(false)),
            (_, true) => Box::new(sack::Sack::default()),
            (RecoveryKind::Reno, false) => Box::new(reno::Reno),
            (
                RecoveryKind::NewReno {
                    partial_ack_timer_every,
                },
                false,
            ) => Box::new(newreno::NewReno::new(partial_ack_timer_every)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_builds_its_scheme_and_sack_replaces_the_reno_family_only() {
        let nr = RecoveryKind::NewReno {
            partial_ack_timer_every: false,
        };
        for (kind, sack, name) in [
            (RecoveryKind::Tahoe, false, "tahoe"),
            (RecoveryKind::Tahoe, true, "tahoe"),
            (RecoveryKind::Reno, false, "reno"),
            (RecoveryKind::Reno, true, "sack"),
            (nr, false, "newreno"),
            (nr, true, "sack"),
            (RecoveryKind::Linux, false, "newreno"),
        ] {
            assert_eq!(kind.build(sack).name(), name, "{kind:?} sack {sack}");
        }
        for (variant, name) in [
            (peach::Variant::Peach, "peach"),
            (peach::Variant::PeachPlus, "peach+"),
            (peach::Variant::Cherry, "cherry"),
        ] {
            let c = peach::PeachSpec::resolve(None, variant, "flow[0].peach").unwrap();
            for sack in [false, true] {
                assert_eq!(RecoveryKind::Peach(c).build(sack).name(), name);
            }
        }
    }
}
