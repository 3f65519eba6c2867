//! The one-sided satellite TCP gateway of seed 003 (Miyake, Hasegawa, Hasegawa, Kato):
//! an ACK-spoofing performance-enhancing proxy (RFC 3135 "spoofing", integrated,
//! transparent) at the satellite uplink, and a split-connection mode (PEPsal-like) for
//! comparison.
//!
//! The gateway is sans-IO and works on real packets: connections are keyed by their
//! IPv4/TCP 4-tuple, sequence numbers are 32-bit and wrap, windows are scaled as both
//! SYNs negotiated (RFC 7323). What it needs from its surroundings is the direction of
//! each packet ([`Dir`]): toward the client over the satellite uplink, or back toward
//! the server. The simulator's node element ([`node::GatewayNode`]) takes it from the
//! routing table; a daemon takes it from the interface a packet arrived on.
//!
//! - [`spoof`]: the paper's gateway (spoofed ACKs, sending beyond the client's window,
//!   go-back-N without window reduction, duplicate-ACK suppression).
//! - [`split`]: terminate the server's connection, open a second one to the client.
//!
//! Connection table: learned from either side's SYN; a RST forgets the connection at
//! once, a connection whose both FINs have passed and whose data is all delivered is
//! forgotten, and one idle (no packet, nothing held) for `idle_timeout` is reaped. The
//! table holds at most `max_conns` connections: beyond that, new connections pass
//! through unaccelerated (counted in `conns_refused`).

pub mod node;
pub mod split;
pub mod spoof;

use crate::error::{err, ScenarioError};
use crate::net::packet::{Packet, ACK, RST, SYN};
use crate::stats::{Last, Peak};
use crate::tcp::cc::hybla::HyblaSpec;
use crate::tcp::cc::CcConfig;
use crate::tcp::config::TcpKind;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{Bytes, Duration, RateQ};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which way a packet crosses the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the server side toward the client, over the satellite uplink.
    ToClient,
    /// From the client (over the satellite) toward the server.
    ToServer,
}

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
    /// Split mode: congestion control toward the client (default newreno).
    #[serde(default)]
    pub tcp: Option<TcpKind>,
    /// Split mode: options of `tcp = "hybla"`.
    #[serde(default)]
    pub hybla: Option<HyblaSpec>,
    /// Split mode: offer SACK toward the client (default false).
    #[serde(default)]
    pub sack: Option<bool>,
    /// Split mode: initial window toward the client, segments (default 1).
    #[serde(default)]
    pub iw: Option<u32>,
    /// Buffer per connection (default 1MB).
    #[serde(default)]
    pub buffer: Option<Bytes>,
    /// Satellite-side window (default: the uplink's bandwidth-delay product, its rate
    /// toward the client × its round-trip propagation delay, at least 65535 B).
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
    /// Most connections tracked at once (default 65536); more pass through.
    #[serde(default)]
    pub max_conns: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GatewayMode {
    Spoof,
    Split,
}

/// Split mode: the gateway terminates the server's connection and sends the data on
/// its own connection to the client.
#[derive(Debug, Clone)]
pub struct SplitConfig {
    pub cc: CcConfig,
    pub tcp: TcpKind,
    pub sack: bool,
    pub iw_segments: u32,
}

#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// None: ACK spoofing (the paper's gateway); Some: split connections.
    pub split: Option<SplitConfig>,
    /// Gateway buffer per connection, bytes.
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
    pub max_conns: usize,
}

impl GatewaySpec {
    /// Defaults and checks (the uplink is resolved by the node, which knows its links).
    pub fn resolve(&self, path: &str) -> Result<GatewayConfig, ScenarioError> {
        let split = self.mode == Some(GatewayMode::Split);
        if !split
            && (self.tcp.is_some()
                || self.sack.is_some()
                || self.iw.is_some()
                || self.hybla.is_some())
        {
            return err(
                format!("{path}.mode"),
                "tcp, hybla, sack and iw apply to mode = \"split\"",
            );
        }
        if self.iw == Some(0) {
            return err(format!("{path}.iw"), "must be at least 1 segment");
        }
        if self.window.is_some_and(|w| w.0 == 0) {
            return err(
                format!("{path}.window"),
                "must be positive (omit it for the uplink's bandwidth-delay product)",
            );
        }
        let split = if split {
            let tcp = self.tcp.unwrap_or_default();
            Some(SplitConfig {
                cc: tcp.cc(self.hybla.as_ref(), path)?,
                tcp,
                sack: self.sack.unwrap_or(false),
                iw_segments: self.iw.unwrap_or(1),
            })
        } else {
            None
        };
        let cfg = GatewayConfig {
            split,
            buffer: self.buffer.map(|b| b.0).unwrap_or(1_000_000),
            window: self.window.map(|b| b.0),
            pace: self.pace.map(|r| r.0),
            dupthresh: self.dupthresh.unwrap_or(3),
            min_rto: self
                .min_rto
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_secs(1)),
            initial_rto: SimDuration::from_secs(1),
            fail_at: self.fail_at.map(|d| SimTime(d.0 .0)),
            recover_guard: self.recover_guard.unwrap_or(true),
            idle_timeout: self
                .idle_timeout
                .map(|d| d.0)
                .unwrap_or(SimDuration::from_secs(300)),
            max_conns: self.max_conns.unwrap_or(65_536) as usize,
        };
        if cfg.buffer == 0 {
            return err(format!("{path}.buffer"), "must be positive");
        }
        if cfg.min_rto < crate::tcp::config::MIN_TIMER {
            return err(format!("{path}.min_rto"), "must be at least 1ms");
        }
        if cfg.dupthresh == 0 {
            return err(format!("{path}.dupthresh"), "must be at least 1");
        }
        if cfg.idle_timeout.0 == 0 {
            return err(format!("{path}.idle_timeout"), "must be positive");
        }
        Ok(cfg)
    }
}

/// The default satellite-side window: the uplink's bandwidth-delay product (rate
/// toward the client × round-trip propagation delay), at least 65535 B.
pub fn default_window(rate: Rate, rtt: SimDuration) -> u64 {
    let bdp = (rate.bps() as u128 * rtt.as_nanos() as u128 / 8 / 1_000_000_000) as u64;
    bdp.max(65_535)
}

crate::counters! {
    /// Gateway counters, serialized as the result's `gateways[]` fields.
    #[derive(Serialize)]
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
        pub failed: Last<bool>,
        /// Bytes the server considered acknowledged that were lost with the gateway.
        pub lost_on_failure_bytes: u64,
        /// Connections learned, and forgotten (closed, reset or idle).
        pub conns_opened: u64,
        pub conns_closed: u64,
        /// Connections passed through unaccelerated because the table was full.
        pub conns_refused: u64,
    }
}

/// A connection's key: (server address, server port, client address, client port).
pub type ConnKey = ([u8; 4], u16, [u8; 4], u16);

/// The key of a packet travelling in `dir`.
pub fn key(dir: Dir, p: &Packet) -> ConnKey {
    match dir {
        Dir::ToClient => (p.src, p.seg.sport, p.dst, p.seg.dport),
        Dir::ToServer => (p.dst, p.seg.dport, p.src, p.seg.sport),
    }
}

/// The gateway's connections: spoofing or split, one table.
enum Conns {
    Spoof(BTreeMap<ConnKey, spoof::Conn>),
    Split(BTreeMap<ConnKey, split::SplitConn>),
}

pub struct Gateway {
    cfg: GatewayConfig,
    /// Satellite-side window in bytes.
    window: u64,
    conns: Conns,
    failed: bool,
    pub stats: GatewayCounters,
}

impl Gateway {
    /// A gateway whose satellite-side window defaults to `default_window` bytes.
    pub fn new(cfg: GatewayConfig, default_window: u64) -> Self {
        let conns = if cfg.split.is_some() {
            Conns::Split(BTreeMap::new())
        } else {
            Conns::Spoof(BTreeMap::new())
        };
        Gateway {
            window: cfg.window.unwrap_or(default_window),
            cfg,
            conns,
            failed: false,
            stats: GatewayCounters::default(),
        }
    }

    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Connections in the table.
    pub fn conns(&self) -> usize {
        match &self.conns {
            Conns::Spoof(m) => m.len(),
            Conns::Split(m) => m.len(),
        }
    }

    /// Bytes currently held for a connection (tests).
    pub fn held_bytes(&self, k: &ConnKey) -> Option<u64> {
        match &self.conns {
            Conns::Spoof(m) => m.get(k).map(|c| c.held_bytes()),
            Conns::Split(_) => None,
        }
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        let mut t = self.cfg.fail_at.filter(|_| !self.failed);
        let mut m = |x: SimTime| t = Some(t.map_or(x, |y: SimTime| y.min(x)));
        match &self.conns {
            Conns::Spoof(cs) => {
                for c in cs.values() {
                    c.next_timer(&self.cfg, self.window)
                        .into_iter()
                        .for_each(&mut m);
                }
            }
            Conns::Split(cs) => {
                for c in cs.values() {
                    c.next_timer(&self.cfg).into_iter().for_each(&mut m);
                }
            }
        }
        t
    }

    /// A packet crossing the gateway in direction `dir`; what to forward or originate
    /// goes to `out` (routed by destination address).
    pub fn on_packet(&mut self, now: SimTime, dir: Dir, pkt: Packet, out: &mut Vec<Packet>) {
        self.check_failure(now);
        if self.failed {
            return; // a dead box forwards nothing
        }
        let k = key(dir, &pkt);
        let flags = pkt.seg.flags;
        let cfg = &self.cfg;
        let st = &mut self.stats;
        match &mut self.conns {
            Conns::Spoof(cs) => {
                if flags & RST != 0 {
                    if cs.remove(&k).is_some() {
                        st.conns_closed += 1;
                    }
                    out.push(pkt);
                    return;
                }
                if flags & SYN != 0 && !cs.contains_key(&k) {
                    if cs.len() >= cfg.max_conns {
                        // counted once a connection: at its opening SYN
                        st.conns_refused += (flags & ACK == 0) as u64;
                    } else {
                        cs.insert(k, spoof::Conn::new(cfg, k, now));
                        st.conns_opened += 1;
                    }
                }
                let Some(c) = cs.get_mut(&k) else {
                    out.push(pkt); // not a connection we track: pass through
                    return;
                };
                c.on_packet(cfg, self.window, st, now, dir, pkt, out);
                if c.closed() {
                    cs.remove(&k);
                    st.conns_closed += 1;
                }
            }
            Conns::Split(cs) => {
                if flags & RST != 0 {
                    if cs.remove(&k).is_some() {
                        st.conns_closed += 1;
                    }
                    out.push(pkt);
                    return;
                }
                let split = cfg.split.as_ref().expect("split mode");
                if flags & SYN != 0 && dir == Dir::ToClient && !cs.contains_key(&k) {
                    if cs.len() >= cfg.max_conns {
                        st.conns_refused += 1;
                    } else {
                        cs.insert(k, split::SplitConn::new(cfg, split, k, &pkt, now, out));
                        st.conns_opened += 1;
                    }
                }
                let Some(c) = cs.get_mut(&k) else {
                    out.push(pkt);
                    return;
                };
                c.on_packet(st, now, dir, &pkt, out);
            }
        }
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.check_failure(now);
        if self.failed {
            return;
        }
        let idle = self.cfg.idle_timeout;
        let st = &mut self.stats;
        match &mut self.conns {
            Conns::Spoof(cs) => {
                for c in cs.values_mut() {
                    c.on_timer(&self.cfg, self.window, st, now, out);
                }
                let before = cs.len();
                cs.retain(|_, c| !c.idle(now, idle));
                st.conns_closed += (before - cs.len()) as u64;
            }
            Conns::Split(cs) => {
                for c in cs.values_mut() {
                    c.on_timer(st, now, out);
                }
                let before = cs.len();
                cs.retain(|_, c| !c.idle(now, idle));
                st.conns_closed += (before - cs.len()) as u64;
            }
        }
    }

    fn check_failure(&mut self, now: SimTime) {
        if self.failed || self.cfg.fail_at.is_none_or(|f| now < f) {
            return;
        }
        self.failed = true;
        self.stats.failed = Last(true);
        self.stats.lost_on_failure_bytes += match &self.conns {
            Conns::Spoof(cs) => cs.values().map(|c| c.unsent_acked_bytes()).sum::<u64>(),
            Conns::Split(cs) => cs.values().map(|c| c.unsent_acked_bytes()).sum::<u64>(),
        };
        match &mut self.conns {
            Conns::Spoof(cs) => cs.clear(),
            Conns::Split(cs) => cs.clear(),
        }
    }
}

#[cfg(test)]
mod tests;
