//! TCP: endpoints (sender, receiver) with congestion control and loss recovery as
//! plug-ins, RTT estimation, the SACK scoreboard, and the endpoint element that puts
//! them on the wire. Sender and receiver are sans-IO: they take `now` and a segment,
//! push the segments they emit into a Vec, and report their next timer deadline.
//!
//! A flow's TCP is resolved once into a [`profile::TcpProfile`] (one table of valid
//! variant/stack combinations: [`profile::VARIANTS`]). The sender runs one of two
//! engines over the shared transmission state ([`tx::Tx`], the scoreboard, RTT):
//! [`classic`] (the papers' TCP, with a loss-recovery scheme from [`recovery`] and,
//! for the TCP-Peach family, a [`probe::Prober`]) or [`linux`] (the Linux stack's).

pub mod cc;
pub mod classic;
pub mod config;
pub mod duplex;
pub mod ecn;
pub mod endpoint;
pub mod linux;
pub mod pacing;
pub mod probe;
pub mod profile;
pub mod rate;
pub mod receiver;
pub mod recovery;
pub mod rtt;
pub mod rtt_linux;
pub mod sack;
#[cfg(test)]
pub(crate) mod script;
pub mod seg;
pub mod sender;
pub mod seq;
pub mod stack;
pub mod timestamps;
pub mod tx;

/// Opt-in per-flow time series, kept as columns.
#[derive(Debug, Clone, Default)]
pub struct FlowTrace {
    /// Sender state after each ACK it processed and after each timeout.
    pub t_ns: Vec<u64>,
    pub cwnd: Vec<u64>,
    pub ssthresh: Vec<u64>,
    /// Cumulative ACK (snd_una), relative sequence number.
    pub snd_una: Vec<u64>,
    /// Highest sequence number sent + 1 (snd_max).
    pub snd_max: Vec<u64>,
    /// RTT samples.
    pub rtt_t_ns: Vec<u64>,
    pub rtt_ns: Vec<u64>,
    /// Data segments sent: time, first sequence number, payload length, retransmission.
    pub seg_t_ns: Vec<u64>,
    pub seg_seq: Vec<u64>,
    pub seg_len: Vec<u32>,
    pub seg_retx: Vec<bool>,
    /// SACK blocks received: time, left and right edge (relative sequence numbers).
    pub sack_t_ns: Vec<u64>,
    pub sack_left: Vec<u64>,
    pub sack_right: Vec<u64>,
}

impl FlowTrace {
    /// Samples held (all columns).
    pub fn rows(&self) -> usize {
        self.t_ns.len() + self.rtt_t_ns.len() + self.seg_t_ns.len() + self.sack_t_ns.len()
    }
}
