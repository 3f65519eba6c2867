//! Congestion control: one trait, one file per algorithm.
//!
//! Hook names follow Linux `tcp_congestion_ops` (and ns-3 `TcpCongestionOps`) so that
//! results can be compared. Loss *recovery* (how retransmissions are chosen during fast
//! recovery) is a separate plug-in point, [`crate::tcp::recovery`]; a congestion control
//! only decides window growth and the reduction on loss.
//!
//! Windows are in bytes.

pub mod bbr;
pub mod cubic;
pub mod hybla;
pub mod minmax;
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
    /// Linux's Reno (`tcp_reno_*` in `net/ipv4/tcp_cong.c`): ssthresh from cwnd.
    LinuxReno,
    /// CUBIC as Linux `tcp_cubic.c`, with HyStart.
    Cubic,
    /// BBR v1 as Linux `tcp_bbr.c`.
    Bbr,
}

impl CcConfig {
    /// The algorithm; `seed` feeds the randomness an algorithm may have (BBR's gain
    /// cycle phase), drawn from the flow's own stream.
    pub fn build_seeded(&self, seed: u64) -> Box<dyn CongestionControl> {
        match self {
            CcConfig::Reno => Box::new(reno::Reno),
            CcConfig::Hybla(c) => Box::new(hybla::Hybla::new(*c)),
            CcConfig::Peach => Box::new(peach::PeachCc),
            CcConfig::LinuxReno => Box::new(reno::LinuxReno::default()),
            CcConfig::Cubic => Box::new(cubic::Cubic::default()),
            CcConfig::Bbr => Box::new(bbr::Bbr::new(seed)),
        }
    }

    pub fn build(&self) -> Box<dyn CongestionControl> {
        self.build_seeded(0)
    }

    /// The algorithm's name (its [`CongestionControl::name`]).
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::Reno | CcConfig::LinuxReno => "reno",
            CcConfig::Hybla(_) => "hybla",
            CcConfig::Peach => "peach",
            CcConfig::Cubic => "cubic",
            CcConfig::Bbr => "bbr",
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
    /// Sequence state (HyStart's rounds): cumulative ACK and next new byte.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Linux stack: bytes believed in the network (`tcp_packets_in_flight`, in bytes).
    pub in_flight: u64,
    /// Linux stack: bytes delivered (cumulatively or selectively acknowledged) so far
    /// (`tp->delivered`), when the last delivery happened (`delivered_mstamp`), bytes
    /// marked lost so far (`tp->lost`).
    pub delivered: u64,
    pub delivered_time: SimTime,
    pub lost: u64,
    /// Linux `tp->app_limited`: 0, or the `delivered` mark until which rate samples are
    /// application-limited (a control may set it, as BBR does in PROBE_RTT).
    pub app_limited: u64,
    /// Linux `tcp_ca_state`.
    pub ca_state: CaState,
    /// Pacing rate in bytes per second (0 = not paced); the sender sets Linux's
    /// default rate, a control with `cong_control` sets its own.
    pub pacing_rate: u64,
    /// Whether the sender paces (Linux `sk_pacing_status != SK_PACING_NONE`).
    pub pacing: bool,
    /// Earliest departure time of the next segment under pacing (Linux `tcp_wstamp_ns`).
    pub next_send: SimTime,
}

impl CcState {
    /// A state with `mss` and `cwnd` bytes, everything else at its start value.
    pub fn new(mss: u64, cwnd: u64) -> Self {
        CcState {
            now: SimTime::ZERO,
            mss,
            cwnd,
            ssthresh: u64::MAX / 4,
            flight: 0,
            srtt: None,
            min_srtt: None,
            min_rtt_sample: None,
            cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
            in_flight: 0,
            delivered: 0,
            delivered_time: SimTime::ZERO,
            lost: 0,
            app_limited: 0,
            ca_state: CaState::Open,
            pacing_rate: 0,
            pacing: false,
            next_send: SimTime::ZERO,
        }
    }

    /// cwnd < ssthresh (Linux `tcp_in_slow_start`).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// cwnd in whole segments.
    pub fn cwnd_segs(&self) -> u64 {
        self.cwnd / self.mss.max(1)
    }
}

/// A delivery-rate sample (Linux `struct rate_sample`, `net/ipv4/tcp_rate.c`), in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `delivered` at the send of the most recently delivered segment (0: no sample).
    pub prior_delivered: u64,
    /// Bytes delivered over the interval (None: not a valid sample).
    pub delivered: Option<u64>,
    /// The sample's interval: max(send phase, ACK phase) (None: not valid).
    pub interval: Option<SimDuration>,
    /// Bytes newly acknowledged or SACKed by this ACK.
    pub acked_sacked: u64,
    /// Bytes newly marked lost on this ACK.
    pub losses: u64,
    /// RTT of the most recently sent segment this ACK delivered (Linux `ca_rtt`).
    pub rtt: Option<SimDuration>,
    /// In flight before this ACK.
    pub prior_in_flight: u64,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    /// The ACK may have been delayed (one segment acknowledged, nothing else in flight:
    /// Linux `FLAG_ACK_MAYBE_DELAYED`).
    pub is_ack_delayed: bool,
}

/// Linux `tcp_ca_state` (Disorder is not distinguished from Open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    /// A reduction without loss recovery (a TLP repaired a loss, Linux `TCP_CA_CWR`).
    Cwr,
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
    /// cwnd after a spurious reduction is undone (Linux `undo_cwnd`); `prior_cwnd` is
    /// cwnd before the reduction. Default `tcp_reno_undo_cwnd`: max(cwnd, prior_cwnd).
    fn undo_cwnd(&mut self, st: &CcState, prior_cwnd: u64) -> u64 {
        st.cwnd.max(prior_cwnd)
    }
    /// Whether this control sets cwnd and the pacing rate itself on every ACK (Linux
    /// `cong_control`, BBR); the sender then neither grows cwnd nor applies PRR.
    fn has_cong_control(&self) -> bool {
        false
    }
    /// Linux `cong_control`: called on every ACK with its rate sample.
    fn cong_control(&mut self, _st: &mut CcState, _rs: &RateSample) {}
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

/// Linux `tcp_slow_start` in segments: cwnd = min(cwnd + acked, ssthresh); returns the
/// segments of the ACK left over (no per-ACK limit: Linux counts every segment acked).
pub fn linux_slow_start(st: &mut CcState, acked: u64) -> u64 {
    let cwnd = st.cwnd_segs();
    let ssthresh = st.ssthresh / st.mss;
    let new = (cwnd + acked).min(ssthresh.max(cwnd));
    st.cwnd = new * st.mss;
    acked - (new - cwnd)
}

/// Linux `tcp_cong_avoid_ai` in segments: one segment per `w` segments acked, with the
/// credit `cnt` carried between calls.
pub fn linux_cong_avoid_ai(st: &mut CcState, cnt: &mut u64, w: u64, acked: u64) {
    let w = w.max(1);
    let mut cwnd = st.cwnd_segs();
    // credits accumulated at a higher w are applied gently now
    if *cnt >= w {
        *cnt = 0;
        cwnd += 1;
    }
    *cnt += acked;
    if *cnt >= w {
        let delta = *cnt / w;
        *cnt -= delta * w;
        cwnd += delta;
    }
    st.cwnd = cwnd * st.mss;
}
