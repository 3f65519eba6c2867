//! The classic engine's loss-recovery schemes: what the sender does on duplicate ACKs and
//! on ACKs that arrive during a recovery episode. Separate from congestion control
//! (window growth and the reduction on loss), as in ns-3 (`TcpRecoveryOps`) and Linux.
//! One file per scheme; [`RecoveryKind::classic`] is the one place that names them.
//!
//! - [`tahoe`]: 4.3BSD-Tahoe fast retransmit, then slow start from one segment.
//! - [`reno`]: RFC 5681 §3.2 fast retransmit / fast recovery.
//! - [`newreno`]: RFC 6582 fast recovery with partial ACKs.
//! - [`sack`]: RFC 6675 conservative SACK-based loss recovery (used by Reno and NewReno
//!   when SACK is negotiated), with RFC 6937 PRR ([`prr`], shared with the Linux engine).
//! - [`peach`]: TCP-Peach (Sudden Start, Rapid Recovery with dummy segments),
//!   TCP-Peach+ (Jump Start, Quick Recovery with NIL segments) and the experimental
//!   TCP-Cherry: schemes that also send low-priority probes, through the
//!   [`crate::tcp::probe::Prober`] interface.
//!
//! A scheme acts on the sender's [`Tx`] (state, scoreboard, transmission) and may ask
//! the congestion control for ssthresh; the classic engine ([`crate::tcp::classic`])
//! handles everything else: RTT and RTO (RFC 6298), the retransmission timeout (RFC 5681
//! (4)), window growth outside recovery, Limited Transmit (RFC 3042). The Linux stack's
//! recovery is its own engine ([`crate::tcp::linux`]), not a scheme.

pub mod newreno;
pub mod peach;
pub mod prr;
pub mod reno;
pub mod sack;
pub mod spec;
pub mod tahoe;

pub use spec::RecoveryKind;

use super::cc::CongestionControl;
use super::probe::Prober;
use super::seg::Seg;
use super::tx::Tx;

/// RFC 5681 / 6582 / 6675 DupThresh.
pub const DUP_THRESH: u32 = 3;

/// A loss-recovery scheme of the classic engine.
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
    /// The scheme's low-priority probing, if it probes (the TCP-Peach family).
    fn prober(&self) -> Option<&dyn Prober> {
        None
    }
    fn prober_mut(&mut self) -> Option<&mut dyn Prober> {
        None
    }
}

impl RecoveryKind {
    /// The classic engine's scheme for a connection; `sack` when SACK was negotiated
    /// (RFC 6675 replaces Reno's and NewReno's; the Linux profile without SACK recovers
    /// as NewReno).
    pub fn classic(self, sack: bool) -> Box<dyn Recovery> {
        match (self, sack) {
            (RecoveryKind::Tahoe, _) => Box::new(tahoe::Tahoe),
            (RecoveryKind::Peach(c), _) => Box::new(peach::Peach::new(c, sack)),
            (RecoveryKind::Reno | RecoveryKind::NewReno { .. }, true) => {
                Box::new(sack::Sack::default())
            }
            (RecoveryKind::Reno, false) => Box::new(reno::Reno),
            (
                RecoveryKind::NewReno {
                    partial_ack_timer_every,
                },
                false,
            ) => Box::new(newreno::NewReno::new(partial_ack_timer_every)),
            (RecoveryKind::Linux, _) => Box::new(newreno::NewReno::new(false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_builds_its_scheme_and_sack_replaces_the_reno_family_only() {
        // only the Peach family probes
        for k in [RecoveryKind::Tahoe, RecoveryKind::Reno, RecoveryKind::Linux] {
            assert!(k.classic(true).prober().is_none());
        }
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
            assert_eq!(kind.classic(sack).name(), name, "{kind:?} sack {sack}");
            assert!(!kind.linux_engine(sack));
        }
        assert!(RecoveryKind::Linux.linux_engine(true));
        for (variant, name) in [
            (peach::Variant::Peach, "peach"),
            (peach::Variant::PeachPlus, "peach+"),
            (peach::Variant::Cherry, "cherry"),
        ] {
            let c = peach::PeachSpec::resolve(None, variant, "flow[0].peach").unwrap();
            for sack in [false, true] {
                assert_eq!(RecoveryKind::Peach(c).classic(sack).name(), name);
                assert!(RecoveryKind::Peach(c).classic(sack).prober().is_some());
            }
        }
    }
}
