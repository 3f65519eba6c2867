//! The gateway's configuration: the scenario's `gateway = { ... }` table of a
//! `tcp-gateway` node ([`GatewaySpec`], with its checks and defaults, each with its
//! source), its resolved form ([`GatewayConfig`]), what the gateway knows of its
//! satellite uplink ([`Uplink`]), and its counters (the result's `gateways[]`).

use crate::error::{err, ScenarioError};
use crate::stats::{Last, Peak};
use crate::tcp::cc::hybla::HyblaSpec;
use crate::tcp::config::{FlowSpec, IwSpec, TcpKind};
use crate::tcp::profile::{TcpProfile, MIN_TIMER};
use crate::tcp::stack::Stack;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{Bytes, Duration, RateQ};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The scenario's `gateway = { ... }` of a `tcp-gateway` node.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct GatewaySpec {
    /// "spoof" (ACK spoofing, the paper's gateway; default) or "split" (terminate the
    /// server's connection and open a second one to the client, as PEPsal).
    #[serde(default)]
    pub mode: Option<GatewayMode>,
    /// The neighbour across the satellite uplink (default: the neighbour over the
    /// gateway's link with the longest round-trip propagation delay).
    #[serde(default)]
    pub uplink: Option<String>,
    /// Split mode: congestion control toward the client (default hybla on the Linux
    /// stack, what a PEPsal operator picks for a satellite leg; "bbr" implies stack =
    /// "linux").
    #[serde(default)]
    pub tcp: Option<SplitTcp>,
    /// Split mode: the stack of the connection toward the client, "linux" (default; its
    /// defaults for SACK, the initial window and the minimum RTO apply unless `sack`,
    /// `iw` and `min_rto` say otherwise; "classic" with `tcp = "tahoe"`) or "classic".
    #[serde(default)]
    pub stack: Option<Stack>,
    /// Split mode: options of `tcp = "hybla"`.
    #[serde(default)]
    pub hybla: Option<HyblaSpec>,
    /// Split mode: offer SACK toward the client (default: the stack's, true on the
    /// Linux stack).
    #[serde(default)]
    pub sack: Option<bool>,
    /// Split mode: initial window toward the client, segments (default: the stack's, 10
    /// on the Linux stack).
    #[serde(default)]
    pub iw: Option<u32>,
    /// Buffer per connection (default: twice the uplink's bandwidth-delay product, at
    /// least 1 MB; see [`default_buffer`]).
    #[serde(default)]
    pub buffer: Option<Bytes>,
    /// Satellite-side window of one connection (default: the uplink's bandwidth-delay
    /// product, its rate toward the client × its round-trip propagation delay, at least
    /// 65535 B; in shared mode the link window): in shared mode a cap on the
    /// connection's fair share.
    #[serde(default)]
    pub window: Option<Bytes>,
    /// Pace transmissions toward the client at this rate (default: no pacing).
    #[serde(default)]
    pub pace: Option<RateQ>,
    /// Duplicate ACKs that trigger go-back-N (default 3).
    #[serde(default)]
    pub dupthresh: Option<u32>,
    /// Minimum satellite-side RTO (default 1s).
    #[serde(default)]
    pub min_rto: Option<Duration>,
    /// The gateway fails (drops all state and traffic) at this time: fate-sharing tests.
    #[serde(default)]
    pub fail_at: Option<Duration>,
    /// After a go-back-N, ignore duplicate ACKs until everything then outstanding is
    /// acknowledged (default true; false = only the paper's echo suppression).
    #[serde(default)]
    pub recover_guard: Option<bool>,
    /// Forget a connection after this long without a packet, if it holds no data
    /// (default 300s).
    #[serde(default)]
    pub idle_timeout: Option<Duration>,
    /// Spoof mode: give up a connection whose client has acknowledged nothing for this
    /// long while data waits for it (a client that stopped reading, or vanished): both
    /// sides are reset and the bytes the server saw acknowledged are counted (default
    /// 300s).
    #[serde(default)]
    pub abandon_timeout: Option<Duration>,
    /// Most connections tracked at once (default 65536); more pass through.
    #[serde(default)]
    pub max_conns: Option<u32>,
    /// Spoof mode: connections whose handshake has not completed (a SYN without its
    /// SYN-ACK, or a SYN-ACK without the opener's ACK of it), all sources together; more
    /// pass through unaccelerated (default 4096, Linux's `tcp_max_syn_backlog` on a
    /// host with memory to spare).
    #[serde(default)]
    pub max_half_open: Option<u32>,
    /// Spoof mode: of those, from one client address (default 1024: a flood from one
    /// address takes at most a quarter; 1000 downloads opened at once by one client, as
    /// in the daemon's end-to-end test, still pass).
    #[serde(default)]
    pub half_open_per_source: Option<u32>,
    /// Spoof mode: how long a handshake may take before its entry is forgotten
    /// (default 3s: the opener's first SYN retransmission, after RFC 6298's initial RTO
    /// of 1 s, plus a GEO round trip and a margin; a retransmitted SYN refreshes it).
    #[serde(default)]
    pub half_open_timeout: Option<Duration>,
    /// Spoof mode: one satellite budget per uplink shared fairly among the connections,
    /// paced at the uplink's rate, one memory for all spoofed windows, and resends of
    /// only what the client's ACKs (and SACK) show lost (default true; false = the
    /// paper's gateway: a full window per connection and go-back-N). See
    /// docs/notes/gateway-sharing.md.
    #[serde(default)]
    pub shared: Option<bool>,
    /// Shared mode: bytes in flight over the satellite, all connections together
    /// (default: 5/4 of the uplink's bandwidth-delay product, which is at least 65535 B;
    /// the quarter covers the clients' delayed ACKs).
    #[serde(default)]
    pub link_window: Option<Bytes>,
    /// Shared mode: the gateway's memory for all connections' data; spoofed windows
    /// never promise more than is free (default: 4 × the link window).
    #[serde(default)]
    pub memory: Option<Bytes>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GatewayMode {
    Spoof,
    Split,
}

/// The congestion controls the split gateway runs toward the client: every `tcp = ...`
/// variant but the TCP-Peach family, whose probes need a receiver that flags probe ACKs
/// (the client is unmodified).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SplitTcp {
    Tahoe,
    Reno,
    #[default]
    Newreno,
    Hybla,
    Cubic,
    Bbr,
}

impl SplitTcp {
    pub fn kind(self) -> TcpKind {
        match self {
            SplitTcp::Tahoe => TcpKind::Tahoe,
            SplitTcp::Reno => TcpKind::Reno,
            SplitTcp::Newreno => TcpKind::Newreno,
            SplitTcp::Hybla => TcpKind::Hybla,
            SplitTcp::Cubic => TcpKind::Cubic,
            SplitTcp::Bbr => TcpKind::Bbr,
        }
    }
}

/// Split mode: the gateway terminates the server's connection and sends the data on
/// its own connection to the client.
#[derive(Debug, Clone)]
pub struct SplitConfig {
    /// The profile of the connection toward the client (its segment size is the
    /// server's, per connection).
    pub leg: TcpProfile,
    /// Its initial window in segments.
    pub iw_segments: u32,
}

#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// None: ACK spoofing (the paper's gateway); Some: split connections.
    pub split: Option<SplitConfig>,
    /// Gateway buffer per connection, bytes; 0 until [`super::Gateway::new`] sets the
    /// default from the uplink ([`default_buffer`]).
    pub buffer: u64,
    /// Satellite-side window, bytes; None = the uplink's bandwidth-delay product.
    pub window: Option<u64>,
    /// Pace transmissions toward the client at this rate (None: send at once).
    pub pace: Option<Rate>,
    /// Duplicate ACKs that trigger go-back-N.
    pub dupthresh: u32,
    pub min_rto: SimDuration,
    pub initial_rto: SimDuration,
    /// The gateway stops working at this time (fate-sharing test).
    pub fail_at: Option<SimTime>,
    /// After a go-back-N, count no duplicate ACKs toward another one until everything
    /// outstanding at that moment is acknowledged (NewReno's `recover` rule). The paper
    /// only suppresses (client buffer ÷ MSS) echoes; without this guard, the duplicate
    /// ACKs of the rest of a satellite window larger than the client's buffer trigger a
    /// new go-back-N every three ACKs.
    pub recover_guard: bool,
    pub idle_timeout: SimDuration,
    /// Spoof mode: no acknowledgement from the client for this long while data is held:
    /// the connection is abandoned.
    pub abandon_timeout: SimDuration,
    pub max_conns: usize,
    /// Spoof mode: handshakes in progress, all together and per client address.
    pub max_half_open: usize,
    pub half_open_per_source: u32,
    /// Spoof mode: a handshake not completed in this long is forgotten.
    pub half_open_timeout: SimDuration,
    /// Spoof mode: share one satellite budget (and memory) among the connections.
    pub shared: bool,
    /// Shared mode: bytes in flight over the satellite, all connections; None = 5/4 of
    /// the uplink's bandwidth-delay product.
    pub link_window: Option<u64>,
    /// Shared mode: bytes of data held for all connections together, including what
    /// spoofed windows have promised; None = 4 × the link window.
    pub memory: Option<u64>,
    /// Shared mode: how far behind its schedule the pacer may be and still catch up.
    /// Zero (the simulator, whose timers run exactly on time): the next send is timed
    /// from the send now. A real packet loop wakes up after the due time, and timing
    /// each send from then loses that lateness every time (a daemon woken 75 µs late
    /// paced a 50 Mbit/s link at 37); with a catch-up the sends keep to the schedule,
    /// and after a longer stall at most this much is sent at once.
    pub pace_catchup: SimDuration,
}

impl GatewaySpec {
    /// Defaults and checks (the uplink is resolved by the node, which knows its links).
    pub fn resolve(&self, path: &str) -> Result<GatewayConfig, ScenarioError> {
        let split = self.mode == Some(GatewayMode::Split);
        if !split
            && (self.tcp.is_some()
                || self.stack.is_some()
                || self.sack.is_some()
                || self.iw.is_some()
                || self.hybla.is_some())
        {
            return err(
                format!("{path}.mode"),
                "tcp, stack, hybla, sack and iw apply to mode = \"split\"",
            );
        }
        if self.iw == Some(0) {
            return err(format!("{path}.iw"), "must be at least 1 segment");
        }
        if self.link_window.is_some_and(|w| w.0 == 0) {
            return err(
                format!("{path}.link_window"),
                "must be positive (omit it for the uplink's bandwidth-delay product)",
            );
        }
        if self.memory.is_some_and(|w| w.0 == 0) {
            return err(format!("{path}.memory"), "must be positive");
        }
        if split && (self.shared.is_some() || self.link_window.is_some() || self.memory.is_some()) {
            return err(
                format!("{path}.mode"),
                "shared, link_window and memory apply to mode = \"spoof\"",
            );
        }
        if self.shared != Some(false) && !split && self.recover_guard.is_some() {
            return err(
                format!("{path}.recover_guard"),
                "applies to shared = false (the paper's go-back-N)",
            );
        }
        if self.shared == Some(false) && (self.link_window.is_some() || self.memory.is_some()) {
            return err(
                format!("{path}.shared"),
                "link_window and memory apply to shared = true",
            );
        }
        if self.window.is_some_and(|w| w.0 == 0) {
            return err(
                format!("{path}.window"),
                "must be positive (omit it for the uplink's bandwidth-delay product)",
            );
        }
        let min_rto = self
            .min_rto
            .map(|d| d.0)
            .unwrap_or(SimDuration::from_secs(1));
        let split = if split {
            // the variant/stack table and the stacks' defaults, as for a flow
            // default: what an operator of a Linux router running PEPsal picks for the
            // satellite leg: TCP Hybla (Caini & Firrincieli 2004, seed 002, the PEPsal
            // authors' choice for satellite legs; in Linux since 2.6.13) on the Linux
            // stack (SACK on, `net.ipv4.tcp_sack = 1`; IW 10, RFC 6928, since 2.6.39;
            // 200 ms minimum RTO). 25 Mbit/s, 560 ms, BER 1e-6: 6.26 Mbit/s, where
            // CUBIC (Linux's default) gets 0.83 and the classic NewReno/IW 1/no-SACK leg
            // 0.45 (docs/notes/gateway-sharing.md)
            let tcp = self.tcp.unwrap_or(SplitTcp::Hybla);
            let stack = match (self.stack, tcp) {
                (Some(s), _) => Some(s),
                (None, SplitTcp::Tahoe) => None,
                (None, _) => Some(Stack::Linux),
            };
            let spec = FlowSpec {
                tcp: Some(tcp.kind()),
                stack,
                hybla: self.hybla.clone(),
                sack: self.sack,
                iw: self.iw.map(IwSpec::Segments),
                ..FlowSpec::default()
            };
            let mut leg = TcpProfile::resolve(&spec, path)?;
            if let Some(m) = self.min_rto {
                leg.rto.min = m.0;
                leg.rto.max = leg.rto.max.max(m.0);
            }
            Some(SplitConfig {
                iw_segments: (leg.iw_bytes / leg.mss as u64) as u32,
                leg,
            })
        } else {
            None
        };
        let cfg = GatewayConfig {
            split,
            buffer: self.buffer.map(|b| b.0).unwrap_or(0),
            window: self.window.map(|b| b.0),
            pace: self.pace.map(|r| r.0),
            dupthresh: self.dupthresh.unwrap_or(3),
            min_rto,
            initial_rto: SimDuration::from_secs(1),
            fail_at: self.fail_at.map(|d| SimTime(d.0 .0)),
            recover_guard: self.recover_guard.unwrap_or(true),
            idle_timeout: self
                .idle_timeout
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_secs(300)),
            abandon_timeout: self
                .abandon_timeout
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_secs(300)),
            max_conns: self.max_conns.unwrap_or(65_536) as usize,
            max_half_open: self.max_half_open.unwrap_or(4096) as usize,
            half_open_per_source: self.half_open_per_source.unwrap_or(1024),
            half_open_timeout: self
                .half_open_timeout
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_secs(3)),
            shared: self.mode != Some(GatewayMode::Split) && self.shared.unwrap_or(true),
            link_window: self.link_window.map(|b| b.0),
            memory: self.memory.map(|b| b.0),
            pace_catchup: SimDuration::ZERO,
        };
        if self.buffer.is_some_and(|b| b.0 == 0) {
            return err(format!("{path}.buffer"), "must be positive");
        }
        if cfg.min_rto < MIN_TIMER {
            return err(format!("{path}.min_rto"), "must be at least 1ms");
        }
        if cfg.dupthresh == 0 {
            return err(format!("{path}.dupthresh"), "must be at least 1");
        }
        if cfg.idle_timeout.0 == 0 {
            return err(format!("{path}.idle_timeout"), "must be positive");
        }
        if cfg.abandon_timeout.0 == 0 {
            return err(format!("{path}.abandon_timeout"), "must be positive");
        }
        if cfg.half_open_timeout.0 == 0 {
            return err(format!("{path}.half_open_timeout"), "must be positive");
        }
        if cfg.max_half_open == 0 {
            return err(format!("{path}.max_half_open"), "must be at least 1");
        }
        if cfg.half_open_per_source == 0 {
            return err(format!("{path}.half_open_per_source"), "must be at least 1");
        }
        Ok(cfg)
    }
}

/// The default per-connection buffer: twice the uplink's bandwidth-delay product `bdp`
/// (Linux's receive autotuning gives a connection a buffer of twice the window it needs,
/// `tcp_adv_win_scale = 1`, net/ipv4/tcp_input.c `tcp_rcv_space_adjust`; a spoofing
/// gateway holds one satellite window of acknowledged data and needs the second for the
/// server to keep sending while it is repaired), at least 1 MB (the default before, kept
/// for short links). GEO 25 Mbit/s × 560 ms: 3.5 MB.
pub fn default_buffer(bdp: u64) -> u64 {
    bdp.saturating_mul(2).max(1_000_000)
}

/// The default satellite-side window: the uplink's bandwidth-delay product (rate
/// toward the client × round-trip propagation delay), at least 65535 B.
pub fn default_window(rate: Rate, rtt: SimDuration) -> u64 {
    let bdp = (rate.bps() as u128 * rtt.as_nanos() as u128 / 8 / 1_000_000_000) as u64;
    bdp.max(65_535)
}

crate::counters! {
    /// Gateway counters, serialized as the result's `gateways[]` fields.
    #[derive(Serialize, schemars::JsonSchema)]
    pub struct GatewayCounters {
        pub spoofed_acks: u64,
        pub go_back_n: u64,
        /// Of which started by the satellite-side retransmission timer.
        pub go_back_n_timeout: u64,
        pub segments_resent: u64,
        /// Segments sent beyond the client's advertised window.
        pub client_overruns: u64,
        pub max_buffer_bytes: Peak,
        pub dropped_buffer_full: u64,
        /// Server segments received beyond a hole and kept until it was filled.
        pub out_of_order_held: u64,
        pub failed: Last<bool>,
        /// Bytes the server considered acknowledged that were lost with the gateway.
        pub lost_on_failure_bytes: u64,
        /// Connections learned, and forgotten (closed, reset or idle).
        pub conns_opened: u64,
        pub conns_closed: u64,
        /// Connections passed through unaccelerated because the table was full.
        pub conns_refused: u64,
        /// Spoof mode: payload bytes sent toward the client (first sends and resends),
        /// and those the client acknowledged (each byte once): satellite efficiency is
        /// their ratio.
        pub sat_bytes_sent: u64,
        pub sat_bytes_delivered: u64,
    }
}

/// What the gateway knows of its satellite uplink.
#[derive(Debug, Clone, Copy)]
pub struct Uplink {
    /// The uplink's rate toward the client: shared mode paces at it unless `pace` says
    /// otherwise (None: no pacing).
    pub rate: Option<Rate>,
    /// The default satellite windows: the uplink's bandwidth-delay product
    /// ([`default_window`]).
    pub bdp: u64,
}
