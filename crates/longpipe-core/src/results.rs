//! The result contract (DESIGN.md "Result"): serialized as one JSON document.
//! Field order is fixed by the struct order, so output bytes are deterministic.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub id: usize,
    pub src: String,
    pub dst: String,
    pub tcp: String,
    /// Bytes delivered in order to the receiving application between
    /// max(start, warmup) and the completion time (or the end of the run), × 8 / span.
    pub goodput_bps: f64,
    /// Bytes delivered in order at or after warmup.
    pub bytes_delivered: u64,
    /// Data segments sent (incl. retransmissions), at or after warmup.
    pub segments_sent: u64,
    pub retransmitted_segments: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// From the flow's start (SYN) to the delivery of its last byte; null if unfinished.
    pub completion_time_s: Option<f64>,
    /// Mean of the sender's RTT samples (Karn-valid), null if none.
    pub mean_rtt_s: Option<f64>,
    pub mss: u32,
    pub start_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkResult {
    pub a: String,
    pub b: String,
    /// "forward" = a->b as declared, "reverse" = b->a (here `a` is the sending node).
    pub dir: String,
    /// Fraction of the measured time the transmitter was busy.
    pub utilization: f64,
    /// Packets put on the wire (transmission started at/after warmup).
    pub packets: u64,
    pub bytes: u64,
    pub drops_queue: u64,
    pub drops_loss: u64,
    pub max_queue_packets: u64,
    /// Link-layer counters when the direction has a `layer2` (then `packets` counts SDUs
    /// accepted, `drops_queue` SDU-buffer overflows, `drops_loss` SDUs discarded after
    /// MaxDAT, and `utilization` the share of PDU slots used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2: Option<L2Result>,
}

#[derive(Debug, Clone, Serialize)]
pub struct L2Result {
    pub kind: String,
    pub pdus_per_tti: u32,
    pub pdus_sent: u64,
    pub pdus_retransmitted: u64,
    pub pdus_lost: u64,
    pub status_sent: u64,
    pub polls: u64,
    pub sdus_delivered: u64,
    pub sdus_discarded: u64,
    /// RLC-induced delay per SDU (entering RLC to in-sequence delivery).
    pub sdu_delay_mean_s: Option<f64>,
    pub sdu_delay_p50_s: Option<f64>,
    pub sdu_delay_p95_s: Option<f64>,
    pub sdu_delay_max_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SimStats {
    pub events: u64,
    /// Filled in by the caller (the core has no clock).
    pub wall_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SimResult {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    /// Jain's index over flow goodputs; null if no flow delivered anything.
    pub fairness_jain: Option<f64>,
    /// TCP gateway counters (only when the scenario has `tcp-gateway` nodes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gateways: Vec<GatewayResult>,
    pub sim: SimStats,
}

#[derive(Debug, Clone, Serialize)]
pub struct GatewayResult {
    pub node: String,
    pub spoofed_acks: u64,
    pub go_back_n: u64,
    /// Of which started by the satellite-side retransmission timer.
    pub go_back_n_timeout: u64,
    pub segments_resent: u64,
    /// Segments sent beyond the client's advertised window.
    pub client_overruns: u64,
    pub max_buffer_bytes: u64,
    pub dropped_buffer_full: u64,
    pub failed: bool,
    /// Bytes the server considered acknowledged that were lost with the gateway.
    pub lost_on_failure_bytes: u64,
}

impl SimResult {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("result serializes")
    }
}
