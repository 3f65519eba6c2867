//! Test harness (tests only): one [`Sender`] driven by hand-made ACKs, segment by
//! segment, so that a test can assert exactly what an RFC says the sender transmits in
//! answer to each ACK (the sans-IO counterpart of the scripted-loss scenarios, which
//! see only what a whole simulated run adds up to).
//!
//! Segments are 1000 bytes; data segment `k` (0-based) starts at relative sequence
//! number `1 + 1000 k` ([`seq`]). The peer's window is 1 MB unless a test changes it.

use super::cc::CcConfig;
use super::config::TcpKind;
use super::profile::TcpProfile;
use super::recovery::RecoveryKind;
use super::seg::{SackList, Seg, ACK, SYN};
use super::sender::Sender;
use super::stack::Stack;
use crate::time::{SimDuration, SimTime};

pub const MSS: u64 = 1000;

/// Relative sequence number of data segment `k`.
pub fn seq(k: u64) -> u64 {
    1 + MSS * k
}

/// What a script's sender is.
#[derive(Clone, Copy)]
pub struct Setup {
    pub recovery: RecoveryKind,
    /// SACK offered and granted.
    pub sack: bool,
    /// RFC 6937 PRR in the classic stack's SACK recovery.
    pub prr: bool,
    /// Initial window, segments.
    pub iw: u64,
    /// Bytes of the transfer.
    pub app_bytes: u64,
    pub limited_transmit: bool,
    /// The Linux stack (its profile's mechanisms and the Linux engine) instead of the
    /// classic one. The SYN-ACK offers no timestamps (so segments stay 1000 bytes).
    pub linux: bool,
    /// The congestion control (default: RFC 5681 Reno).
    pub cc: CcConfig,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            recovery: RecoveryKind::NewReno {
                partial_ack_timer_every: false,
            },
            sack: true,
            prr: false,
            iw: 10,
            app_bytes: 1_000_000,
            limited_transmit: false,
            linux: false,
            cc: CcConfig::Reno,
        }
    }
}

/// A data segment the sender emitted: (segment index k, retransmission).
pub type Sent = (u64, bool);

pub struct Script {
    pub s: Sender,
    pub now: SimTime,
    /// The highest sequence number sent so far, + 1.
    high: u64,
}

impl Script {
    /// A sender (by default with Reno growth, RFC 5681 (4) ssthresh = max(FlightSize / 2,
    /// 2 SMSS)) through the handshake; returns it with the initial window's segments.
    pub fn new(setup: Setup) -> (Script, Vec<Sent>) {
        let base = TcpProfile::classic(TcpKind::Newreno, MSS as u32).expect("a valid profile");
        let cfg = TcpProfile {
            iw_bytes: setup.iw * MSS,
            sack: setup.sack,
            limited_transmit: setup.limited_transmit,
            prr: setup.prr || setup.linux,
            recovery: if setup.linux {
                RecoveryKind::Linux
            } else {
                setup.recovery
            },
            ..if setup.linux {
                let d = Stack::Linux.defaults();
                TcpProfile {
                    stack: Stack::Linux,
                    dsack: true,
                    timestamps: true,
                    rack: true,
                    quickack: crate::tcp::stack::LINUX_QUICKACKS,
                    rto: crate::tcp::rtt::RtoBounds {
                        initial: d.initial_rto,
                        min: d.min_rto,
                        max: d.max_rto,
                    },
                    ..base
                }
            } else {
                base
            }
        };
        let mut sc = Script {
            s: Sender::new(cfg, Some(setup.app_bytes), setup.cc.build(), false),
            now: SimTime::ZERO,
            high: 1,
        };
        let mut out = vec![];
        sc.s.start(sc.now, &mut out);
        let synack = Seg {
            flags: SYN | ACK,
            seq: 0,
            ack: 1,
            wnd: 1_000_000,
            syn_opts: Some((MSS as u16, 0, setup.sack)),
            ..Default::default()
        };
        sc.now = sc.now + SimDuration::from_millis(100);
        out.clear();
        sc.s.on_segment(sc.now, &synack, &mut out);
        let sent = sc.data(&out);
        (sc, sent)
    }

    /// An ACK of `ack` with SACK blocks `blocks` (given as segment index ranges
    /// [from, to)) arrives 1 ms after the previous event; the data segments sent in
    /// answer.
    pub fn ack(&mut self, ack: u64, blocks: &[(u64, u64)]) -> Vec<Sent> {
        let mut sack = SackList::default();
        for (i, &(a, b)) in blocks.iter().enumerate() {
            sack.blocks[i] = (seq(a), seq(b));
            sack.n += 1;
        }
        let a = Seg {
            flags: ACK,
            seq: 1,
            ack,
            wnd: 1_000_000,
            sack: (!blocks.is_empty()).then(|| Box::new(sack)),
            ..Default::default()
        };
        self.now = self.now + SimDuration::from_millis(1);
        let mut out = vec![];
        self.s.on_segment(self.now, &a, &mut out);
        self.data(&out)
    }

    /// A duplicate ACK of segment `hole` (cumulative ACK at its start) SACKing segments
    /// [from, to).
    pub fn dupack(&mut self, hole: u64, blocks: &[(u64, u64)]) -> Vec<Sent> {
        self.ack(seq(hole), blocks)
    }

    /// The data segments among `out`, as (index, retransmission): a retransmission
    /// starts below the highest sequence number sent before it.
    fn data(&mut self, out: &[Seg]) -> Vec<Sent> {
        let mut v = vec![];
        for s in out.iter().filter(|s| s.len > 0) {
            v.push(((s.seq - 1) / MSS, s.seq < self.high));
            self.high = self.high.max(s.end());
        }
        v
    }
}
