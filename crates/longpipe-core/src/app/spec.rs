//! The `app = { ... }` table of a flow ([`AppSpec`]) and its resolution into an
//! [`AppConfig`]: defaults, units and checks, each default with its source.
//!
//! One flat table whose keys apply to some kinds only (a key that does not apply to the
//! flow's kind is an error naming it), so that `app = { bytes = "1MB" }` keeps meaning a
//! bulk transfer.
//!
//! Why one file of ~620 lines: one table's keys for six kinds, with each default's
//! source, and their checks (about 60 lines of tests).

use super::dist::{Dim, Dist, DistSpec};
use crate::error::{err, ScenarioError};
use crate::time::{Rate, SimDuration};
use crate::units::{parse_rate, Bytes, Duration, RateQ};
use schemars::gen::SchemaGenerator;
use schemars::schema::{InstanceType, Schema, SchemaObject};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AppKind {
    /// Send as fast as TCP allows; `bytes` limits the transfer.
    #[default]
    Bulk,
    /// The 3GPP HTTP browsing model (pages of a main object and embedded objects,
    /// reading and parsing times) over persistent parallel connections.
    Web,
    /// Requests and responses with think times between them.
    RequestResponse,
    /// On and off periods; a rate (or as fast as TCP allows) while on.
    Onoff,
    /// A video client fetching chunks into a playout buffer.
    Stream,
    /// Transfers arriving as a Poisson process, one connection each.
    Arrivals,
}

impl AppKind {
    pub fn name(self) -> &'static str {
        match self {
            AppKind::Bulk => "bulk",
            AppKind::Web => "web",
            AppKind::RequestResponse => "request-response",
            AppKind::Onoff => "onoff",
            AppKind::Stream => "stream",
            AppKind::Arrivals => "arrivals",
        }
    }

    /// The keys of the `app` table that apply to this kind.
    fn keys(self) -> &'static [&'static str] {
        match self {
            AppKind::Bulk => &["bytes"],
            AppKind::Web => &[
                "connections",
                "main_size",
                "embedded_size",
                "embedded_count",
                "reading_time",
                "parsing_time",
                "request",
            ],
            AppKind::RequestResponse => &["request", "response", "think", "persistent"],
            AppKind::Onoff => &["on", "off", "rate"],
            AppKind::Stream => &["bitrate", "ladder", "chunk", "buffer", "startup", "request"],
            AppKind::Arrivals => &["rate", "size", "max_active"],
        }
    }
}

/// `rate` of the `app` table: a bit rate (`"2Mbps"`), `"bulk"` (as fast as TCP allows),
/// or events per unit of time (`"10/s"`, `"600/min"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AppRate {
    Bits(Rate),
    Bulk,
    /// Per second.
    PerSecond(f64),
}

fn parse_app_rate(s: &str) -> Result<AppRate, String> {
    let t = s.trim();
    if t == "bulk" {
        return Ok(AppRate::Bulk);
    }
    for (suffix, per) in [("/s", 1.0), ("/min", 60.0)] {
        if let Some(n) = t.strip_suffix(suffix) {
            return match n.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => Ok(AppRate::PerSecond(v / per)),
                _ => Err(format!(
                    "expected a positive number of events per {}, like \"10{suffix}\", got {s:?}",
                    if per == 1.0 { "second" } else { "minute" }
                )),
            };
        }
    }
    parse_rate(t)
        .map(AppRate::Bits)
        .map_err(|e| format!("{e}; or \"bulk\" (as fast as TCP allows), or events like \"10/s\""))
}

impl<'de> Deserialize<'de> for AppRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AppRate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a rate such as \"2Mbps\", \"bulk\", or events such as \"10/s\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<AppRate, E> {
                parse_app_rate(s).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl JsonSchema for AppRate {
    fn schema_name() -> String {
        "AppRate".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut s = SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            ..Default::default()
        };
        s.metadata().description = Some(
            "a bit rate (\"2Mbps\"), \"bulk\" (as fast as TCP allows), or events per time \
             (\"10/s\", \"600/min\")"
                .into(),
        );
        Schema::Object(s)
    }
}

/// A flow's `app = { ... }` table. Every key but `kind` and `read_rate` applies to some
/// kinds only.
#[derive(Debug, Clone, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    #[serde(default)]
    pub kind: AppKind,
    /// bulk: transfer size; unlimited when absent.
    #[serde(default)]
    pub bytes: Option<Bytes>,
    /// Any kind: the application at `dst` reads delivered data at this rate (default:
    /// at once). Unread data holds the receive buffer and shrinks the window.
    #[serde(default)]
    pub read_rate: Option<RateQ>,
    /// web: parallel persistent connections to the server (default 6, the per-host
    /// limit of Chromium and Firefox; 1 is ns-3's ThreeGppHttpClient).
    #[serde(default)]
    pub connections: Option<u32>,
    /// web: main object size (default 3GPP: lognormal mean 10710 B, sd 25032 B, within
    /// [100 B, 2 MB)).
    #[serde(default)]
    pub main_size: Option<DistSpec>,
    /// web: embedded object size (default 3GPP: lognormal mean 7758 B, sd 126168 B,
    /// within [50 B, 2 MB)).
    #[serde(default)]
    pub embedded_size: Option<DistSpec>,
    /// web: embedded objects per page (default 3GPP: truncated Pareto α = 1.1, k = 2,
    /// m = 55, minus k: 0 to 53, mean 5.64).
    #[serde(default)]
    pub embedded_count: Option<DistSpec>,
    /// web: reading time between pages (default 3GPP: exponential, mean 30 s).
    #[serde(default)]
    pub reading_time: Option<DistSpec>,
    /// web: parsing time of the main object before the embedded objects are requested
    /// (default 3GPP: exponential, mean 0.13 s).
    #[serde(default)]
    pub parsing_time: Option<DistSpec>,
    /// web, stream, request-response: request size (web and stream default 328 B, ns-3
    /// ThreeGppHttpVariables; request-response default 1 B, netperf TCP_RR).
    #[serde(default)]
    pub request: Option<DistSpec>,
    /// request-response: response size (default 1 B, netperf TCP_RR).
    #[serde(default)]
    pub response: Option<DistSpec>,
    /// request-response: think time after a response before the next request (default
    /// 0 s, netperf TCP_RR).
    #[serde(default)]
    pub think: Option<DistSpec>,
    /// request-response: one connection for all requests (default true, netperf TCP_RR);
    /// false opens one per request (netperf TCP_CRR).
    #[serde(default)]
    pub persistent: Option<bool>,
    /// onoff: on period (default fixed 1 s, ns-3 OnOffApplication).
    #[serde(default)]
    pub on: Option<DistSpec>,
    /// onoff: off period (default fixed 1 s, ns-3 OnOffApplication).
    #[serde(default)]
    pub off: Option<DistSpec>,
    /// onoff: sending rate while on (default 500kbps, ns-3 OnOffApplication), or
    /// "bulk". arrivals: transfers per second (required), e.g. "10/s".
    #[serde(default)]
    pub rate: Option<AppRate>,
    /// stream: the video's bit rate (or `ladder`).
    #[serde(default)]
    pub bitrate: Option<RateQ>,
    /// stream: an adaptive bit-rate ladder, lowest first; each chunk at the highest rate
    /// below 0.9 × the harmonic mean of the last 5 chunks' throughputs.
    #[serde(default)]
    pub ladder: Option<Vec<RateQ>>,
    /// stream: chunk (segment) duration (default 6 s, Apple's HLS authoring
    /// specification's target duration).
    #[serde(default)]
    pub chunk: Option<Duration>,
    /// stream: the next chunk is requested while the buffer holds less than this minus
    /// one chunk (default 30 s, dash.js bufferTimeAtTopQuality).
    #[serde(default)]
    pub buffer: Option<Duration>,
    /// stream: buffered video needed to start (and to resume after a stall) (default:
    /// one chunk, the least a player can start with).
    #[serde(default)]
    pub startup: Option<Duration>,
    /// arrivals: transfer size (required).
    #[serde(default)]
    pub size: Option<DistSpec>,
    /// arrivals: transfers open at once; an arrival beyond waits for one to finish, and
    /// its completion time includes the wait (default 64).
    #[serde(default)]
    pub max_active: Option<u32>,
}

/// web: the 3GPP HTTP model's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct WebConfig {
    pub connections: u32,
    /// Bytes.
    pub main_size: Dist,
    pub embedded_size: Dist,
    /// None: 3GPP's truncated Pareto minus its scale
    /// ([`super::web::EMBEDDED_PARETO`]).
    pub embedded_count: Option<Dist>,
    /// Nanoseconds.
    pub reading_time: Dist,
    pub parsing_time: Dist,
    pub request: Dist,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RrConfig {
    pub request: Dist,
    pub response: Dist,
    pub think: Dist,
    pub persistent: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OnOffConfig {
    pub on: Dist,
    pub off: Dist,
    /// None: as fast as TCP allows while on.
    pub rate: Option<Rate>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StreamConfig {
    /// Bit rates, lowest first (one: a fixed bit rate).
    pub ladder: Vec<Rate>,
    pub chunk: SimDuration,
    pub buffer: SimDuration,
    pub startup: SimDuration,
    pub request: Dist,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ArrivalsConfig {
    /// Transfers per second.
    pub rate: f64,
    pub size: Dist,
    pub max_active: u32,
}

/// What a flow's application is, resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum KindConfig {
    /// The flow's own sender and receiver (a `bytes` limit lives in the TCP config).
    Bulk,
    Web(WebConfig),
    RequestResponse(RrConfig),
    OnOff(OnOffConfig),
    Stream(StreamConfig),
    Arrivals(ArrivalsConfig),
}

#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    pub kind: KindConfig,
    /// The application at `dst` reads at this rate (None: at once).
    pub read_rate: Option<Rate>,
}

impl AppConfig {
    pub fn kind(&self) -> AppKind {
        match self.kind {
            KindConfig::Bulk => AppKind::Bulk,
            KindConfig::Web(_) => AppKind::Web,
            KindConfig::RequestResponse(_) => AppKind::RequestResponse,
            KindConfig::OnOff(_) => AppKind::Onoff,
            KindConfig::Stream(_) => AppKind::Stream,
            KindConfig::Arrivals(_) => AppKind::Arrivals,
        }
    }

    /// Whether the flow is an application on connections of its own (every kind but
    /// bulk).
    pub fn is_workload(&self) -> bool {
        !matches!(self.kind, KindConfig::Bulk)
    }

    /// Connection slots the flow uses at each end (each a port at its node).
    pub fn slots(&self) -> u32 {
        match &self.kind {
            KindConfig::Bulk => 1,
            KindConfig::Web(w) => w.connections,
            KindConfig::RequestResponse(r) if r.persistent => 1,
            // the next request's connection opens while the last one closes
            KindConfig::RequestResponse(_) => 4,
            KindConfig::OnOff(_) | KindConfig::Stream(_) => 1,
            KindConfig::Arrivals(a) => a.max_active,
        }
    }

    /// Whether the application at `dst` opens the connections (a client fetching from
    /// `src`); otherwise `src` opens them and sends.
    pub fn dst_opens(&self) -> bool {
        matches!(
            self.kind,
            KindConfig::Web(_) | KindConfig::RequestResponse(_) | KindConfig::Stream(_)
        )
    }
}

/// Most parallel connections of a web client, and transfers open at once of an
/// arrivals flow: each takes a port at both nodes.
pub const MAX_SLOTS: u32 = 4096;

fn dist(
    d: &Option<DistSpec>,
    default: Dist,
    dim: Dim,
    path: &str,
    key: &str,
) -> Result<Dist, ScenarioError> {
    match d {
        Some(s) => s.resolve(dim, &format!("{path}.{key}")),
        None => Ok(default),
    }
}

fn mb2() -> f64 {
    2_000_000.0
}

impl AppSpec {
    /// Defaults and checks; `path` is `flow[i].app`.
    pub fn resolve(spec: Option<&AppSpec>, path: &str) -> Result<AppConfig, ScenarioError> {
        let default = AppSpec::default();
        let s = spec.unwrap_or(&default);
        let kind = s.kind;
        let given: [(&str, bool); 23] = [
            ("bytes", s.bytes.is_some()),
            ("connections", s.connections.is_some()),
            ("main_size", s.main_size.is_some()),
            ("embedded_size", s.embedded_size.is_some()),
            ("embedded_count", s.embedded_count.is_some()),
            ("reading_time", s.reading_time.is_some()),
            ("parsing_time", s.parsing_time.is_some()),
            ("request", s.request.is_some()),
            ("response", s.response.is_some()),
            ("think", s.think.is_some()),
            ("persistent", s.persistent.is_some()),
            ("on", s.on.is_some()),
            ("off", s.off.is_some()),
            ("rate", s.rate.is_some()),
            ("bitrate", s.bitrate.is_some()),
            ("ladder", s.ladder.is_some()),
            ("chunk", s.chunk.is_some()),
            ("buffer", s.buffer.is_some()),
            ("startup", s.startup.is_some()),
            ("size", s.size.is_some()),
            ("max_active", s.max_active.is_some()),
            ("kind", true),
            ("read_rate", true),
        ];
        for (k, present) in given {
            if present && !kind.keys().contains(&k) && k != "kind" && k != "read_rate" {
                return err(
                    format!("{path}.{k}"),
                    format!(
                        "does not apply to kind = \"{}\" (its keys: {})",
                        kind.name(),
                        kind.keys().join(", ")
                    ),
                );
            }
        }
        let read_rate = s.read_rate.map(|r| r.0);
        let p = path;
        let kc =
            match kind {
                AppKind::Bulk => KindConfig::Bulk,
                AppKind::Web => {
                    let connections = s.connections.unwrap_or(6);
                    if connections == 0 || connections > MAX_SLOTS {
                        return err(
                            format!("{p}.connections"),
                            format!("must be in [1, {MAX_SLOTS}], got {connections}"),
                        );
                    }
                    KindConfig::Web(WebConfig {
                        connections,
                        main_size: dist(
                            &s.main_size,
                            Dist::lognormal(10_710.0, 25_032.0, 100.0, mb2()),
                            Dim::Bytes,
                            p,
                            "main_size",
                        )?,
                        embedded_size: dist(
                            &s.embedded_size,
                            Dist::lognormal(7_758.0, 126_168.0, 50.0, mb2()),
                            Dim::Bytes,
                            p,
                            "embedded_size",
                        )?,
                        embedded_count: s
                            .embedded_count
                            .as_ref()
                            .map(|d| d.resolve(Dim::Count, &format!("{p}.embedded_count")))
                            .transpose()?,
                        reading_time: dist(
                            &s.reading_time,
                            Dist::Exponential { mean: 30e9 },
                            Dim::Time,
                            p,
                            "reading_time",
                        )?,
                        parsing_time: dist(
                            &s.parsing_time,
                            Dist::Exponential { mean: 0.13e9 },
                            Dim::Time,
                            p,
                            "parsing_time",
                        )?,
                        request: dist(&s.request, Dist::Fixed(328.0), Dim::Bytes, p, "request")?,
                    })
                }
                AppKind::RequestResponse => KindConfig::RequestResponse(RrConfig {
                    request: dist(&s.request, Dist::Fixed(1.0), Dim::Bytes, p, "request")?,
                    response: dist(&s.response, Dist::Fixed(1.0), Dim::Bytes, p, "response")?,
                    think: dist(&s.think, Dist::Fixed(0.0), Dim::Time, p, "think")?,
                    persistent: s.persistent.unwrap_or(true),
                }),
                AppKind::Onoff => {
                    let rate = match s.rate {
                    None => Some(Rate(500_000)),
                    Some(AppRate::Bits(r)) => Some(r),
                    Some(AppRate::Bulk) => None,
                    Some(AppRate::PerSecond(_)) => return err(
                        format!("{p}.rate"),
                        "expected a bit rate such as \"2Mbps\" or \"bulk\" for kind = \"onoff\"",
                    ),
                };
                    KindConfig::OnOff(OnOffConfig {
                        on: dist(&s.on, Dist::Fixed(1e9), Dim::Time, p, "on")?,
                        off: dist(&s.off, Dist::Fixed(1e9), Dim::Time, p, "off")?,
                        rate,
                    })
                }
                AppKind::Stream => {
                    let ladder: Vec<Rate> = match (&s.bitrate, &s.ladder) {
                        (Some(_), Some(_)) => {
                            return err(format!("{p}.ladder"), "give either bitrate or ladder")
                        }
                        (Some(b), None) => vec![b.0],
                        (None, Some(l)) if l.is_empty() => {
                            return err(format!("{p}.ladder"), "needs at least one bit rate")
                        }
                        (None, Some(l)) => {
                            let v: Vec<Rate> = l.iter().map(|r| r.0).collect();
                            if v.windows(2).any(|w| w[1] <= w[0]) {
                                return err(format!("{p}.ladder"), "bit rates must increase");
                            }
                            v
                        }
                        (None, None) => {
                            return err(
                                format!("{p}.bitrate"),
                                "required for kind = \"stream\" (or ladder)",
                            )
                        }
                    };
                    let chunk = s.chunk.map_or(SimDuration::from_secs(6), |d| d.0);
                    if chunk < SimDuration::from_millis(10) {
                        return err(format!("{p}.chunk"), "must be at least 10ms");
                    }
                    let buffer = s.buffer.map_or(SimDuration::from_secs(30), |d| d.0);
                    if buffer < chunk {
                        return err(format!("{p}.buffer"), "must be at least one chunk");
                    }
                    let startup = s.startup.map_or(chunk, |d| d.0);
                    if startup > buffer {
                        return err(format!("{p}.startup"), "must not exceed buffer");
                    }
                    KindConfig::Stream(StreamConfig {
                        ladder,
                        chunk,
                        buffer,
                        startup,
                        request: dist(&s.request, Dist::Fixed(328.0), Dim::Bytes, p, "request")?,
                    })
                }
                AppKind::Arrivals => {
                    let rate = match s.rate {
                        Some(AppRate::PerSecond(r)) => r,
                        Some(_) => return err(
                            format!("{p}.rate"),
                            "expected transfers per time such as \"10/s\" for kind = \"arrivals\"",
                        ),
                        None => return err(
                            format!("{p}.rate"),
                            "required for kind = \"arrivals\" (transfers per time, e.g. \"10/s\")",
                        ),
                    };
                    let size = match &s.size {
                        Some(d) => d.resolve(Dim::Bytes, &format!("{p}.size"))?,
                        None => return err(
                            format!("{p}.size"),
                            "required for kind = \"arrivals\" (e.g. \"100KB\" or a distribution)",
                        ),
                    };
                    let max_active = s.max_active.unwrap_or(64);
                    if max_active == 0 || max_active > MAX_SLOTS {
                        return err(
                            format!("{p}.max_active"),
                            format!("must be in [1, {MAX_SLOTS}], got {max_active}"),
                        );
                    }
                    KindConfig::Arrivals(ArrivalsConfig {
                        rate,
                        size,
                        max_active,
                    })
                }
            };
        Ok(AppConfig {
            kind: kc,
            read_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(json: &str) -> Result<AppConfig, ScenarioError> {
        let s: AppSpec =
            serde_json::from_str(json).map_err(|e| ScenarioError::new("parse", e.to_string()))?;
        AppSpec::resolve(Some(&s), "flow[0].app")
    }

    #[test]
    fn defaults_are_the_sources() {
        let KindConfig::Web(w) = resolve(r#"{"kind":"web"}"#).unwrap().kind else {
            panic!()
        };
        assert_eq!(w.connections, 6);
        assert_eq!(w.request, Dist::Fixed(328.0));
        assert_eq!(w.reading_time, Dist::Exponential { mean: 30e9 });
        assert_eq!(w.parsing_time, Dist::Exponential { mean: 0.13e9 });
        assert_eq!(w.main_size, Dist::lognormal(10_710.0, 25_032.0, 100.0, 2e6));
        let KindConfig::OnOff(o) = resolve(r#"{"kind":"onoff"}"#).unwrap().kind else {
            panic!()
        };
        assert_eq!(
            (o.on, o.off, o.rate),
            (Dist::Fixed(1e9), Dist::Fixed(1e9), Some(Rate(500_000)))
        );
        let KindConfig::RequestResponse(r) =
            resolve(r#"{"kind":"request-response"}"#).unwrap().kind
        else {
            panic!()
        };
        assert_eq!(
            (r.request, r.response, r.persistent),
            (Dist::Fixed(1.0), Dist::Fixed(1.0), true)
        );
        assert_eq!(resolve("{}").unwrap().kind, KindConfig::Bulk);
    }

    #[test]
    fn keys_of_another_kind_are_errors_naming_the_field() {
        let e = resolve(r#"{"kind":"web","bytes":"1MB"}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.bytes");
        assert!(
            e.msg.contains("web") && e.msg.contains("connections"),
            "{e}"
        );
        let e = resolve(r#"{"kind":"arrivals","size":"10KB"}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.rate");
        let e = resolve(r#"{"kind":"arrivals","size":"10KB","rate":"2Mbps"}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.rate");
        let e = resolve(r#"{"kind":"onoff","rate":"10/s"}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.rate");
        let e = resolve(r#"{"kind":"stream"}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.bitrate");
        let e = resolve(r#"{"kind":"stream","ladder":["2Mbps","1Mbps"]}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.ladder");
        let e = resolve(r#"{"kind":"web","connections":0}"#).unwrap_err();
        assert_eq!(e.path, "flow[0].app.connections");
        let KindConfig::Arrivals(a) =
            resolve(r#"{"kind":"arrivals","size":"10KB","rate":"600/min"}"#)
                .unwrap()
                .kind
        else {
            panic!()
        };
        assert_eq!(a.rate, 10.0);
        assert!(resolve(r#"{"kind":"onoff","rate":"fast"}"#).is_err());
    }
}
