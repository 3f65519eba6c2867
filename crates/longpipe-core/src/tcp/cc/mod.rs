//! Congestion control: one trait, one file per algorithm.
//!
//! Hook names follow Linux `tcp_congestion_ops` (and ns-3 `TcpCongestionOps`) so that
//! results can be compared. Loss *recovery* (how retransmissions are chosen during fast
//! recovery) is a separate plug-in point, [`crate::tcp::recovery`]; a congestion control
//! only decides window growth and the reduction on loss.
//!
//! Windows are in bytes.

pub mod hybla;
pub mod peach;
pub mod reno;

use crate::time::{SimDuration, SimTime};

/// A congestion control and its options, resolved from a flow's `tcp` and option
/// tables. One arm per algorithm; [`CcConfig::build`] is the only place that names the
/// algorithms' types.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CcConfig {
    /// RFC 5681 slow start and congestion avoidance.
    Reno,
    /// TCP Hybla.
    Hybla(hybla::HyblaConfig),
    /// The TCP-Peach family's window rules.
    Peach,
}

impl CcConfig {
    pub fn build(&self) -> Box<dyn CongestionControl> {
        match self {
            CcConfig::Reno => Box::new(reno::Reno),
            CcConfig::Hybla(c) => Box::new(hybla::Hybla::new(*c)),
            CcConfig::Peach => Box::new(peach::PeachCc),
        }
    }
}

/// Sender state a congestion control may read and change.
#[derive(Debug, Clone)]
pub struct CcState {
    pub now: SimTime,
    pub mss: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Bytes sent and not yet cumulatively acknowledged (snd_max - snd_una).
    pub flight: u64,
    pub srtt: Option<SimDuration>,
    pub min_srtt: Option<SimDuration>,
    pub min_rtt_sample: Option<SimDuration>,
    /// False when the receiver's window, not cwnd, limited the last transmission
    /// (Linux `tcp_is_cwnd_limited`); controls that follow Linux skip growth then.
    pub cwnd_limited: bool,
}

/// Linux `tcp_ca_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    Open,
    Recovery,
    Loss,
}

pub trait CongestionControl: Send {
    fn name(&self) -> &'static str;
    /// Called once when the connection is established (cwnd = IW already set).
    fn init(&mut self, _st: &mut CcState) {}
    /// Slow-start threshold after a loss (Linux `ssthresh`). Default RFC 5681 (4):
    /// max(FlightSize / 2, 2 * SMSS).
    fn ssthresh(&mut self, st: &CcState) -> u64 {
        (st.flight / 2).max(2 * st.mss)
    }
    /// Window growth on an ACK of `acked` new bytes outside loss recovery (Linux
    /// `cong_avoid`).
    fn cong_avoid(&mut self, st: &mut CcState, acked: u64);
    /// Every ACK of new data, with its RTT sample if one was taken (Linux `pkts_acked`).
    fn pkts_acked(&mut self, _st: &mut CcState, _acked: u64, _rtt: Option<SimDuration>) {}
    /// Linux `set_state`.
    fn set_state(&mut self, _st: &mut CcState, _state: CaState) {}
}

/// RFC 5681 (2): slow start. Grows by min(acked, SMSS) per ACK; returns bytes of the
/// ACK left over once cwnd reaches ssthresh (as Linux `tcp_slow_start`).
pub fn slow_start(st: &mut CcState, acked: u64) -> u64 {
    let inc = acked.min(st.mss);
    let room = st.ssthresh.saturating_sub(st.cwnd);
    if inc <= room {
        st.cwnd += inc;
        0
    } else {
        st.cwnd += room;
        acked - room
    }
}

/// RFC 5681 (3): congestion avoidance, cwnd += SMSS*SMSS/cwnd per ACK (at least 1 B).
pub fn additive_increase(st: &mut CcState) {
    st.cwnd += (st.mss * st.mss / st.cwnd.max(1)).max(1);
}
