//! The measurements of a run's applications: every page, request, chunk, stall and
//! transfer as a row of a column table ([`AppRecords`], handed to Python as arrays, not
//! as one object per row), and their statistics in the result: per flow
//! ([`FlowApp`], each flow instance is one user) and over the run ([`Workload`]).
//!
//! Statistics count what started in the measured interval [warmup, end) and finished
//! before its end; what was still going on is counted `unfinished` (a row with no end).
//! Percentiles interpolate linearly between order statistics (NumPy's default, so that
//! Python computes the same numbers from the tables).
//!
//! Why one file of ~650 lines (about 110 of tests): the tables and every statistic the
//! result reports from them, per flow, per user and over the run, which share the row
//! selection and the warmup rule.

use super::io::Record;
use crate::time::SimTime;
use serde::Serialize;

/// The end of an unfinished row.
pub const UNFINISHED: u64 = u64::MAX;

fn end_ns(e: Option<SimTime>) -> u64 {
    e.map_or(UNFINISHED, |t| t.0)
}

/// Rows of every table, as columns. Times in ns since the start of the run.
#[derive(Debug, Clone, Default)]
pub struct AppRecords {
    pub page_flow: Vec<u32>,
    pub page_start_ns: Vec<u64>,
    pub page_end_ns: Vec<u64>,
    pub page_bytes: Vec<u64>,
    pub page_objects: Vec<u32>,

    pub req_flow: Vec<u32>,
    pub req_conn: Vec<u64>,
    pub req_start_ns: Vec<u64>,
    pub req_end_ns: Vec<u64>,
    pub req_request: Vec<u64>,
    pub req_response: Vec<u64>,

    pub chunk_flow: Vec<u32>,
    pub chunk_index: Vec<u64>,
    pub chunk_start_ns: Vec<u64>,
    pub chunk_end_ns: Vec<u64>,
    pub chunk_bytes: Vec<u64>,
    pub chunk_bitrate: Vec<u64>,

    pub stall_flow: Vec<u32>,
    pub stall_start_ns: Vec<u64>,
    pub stall_end_ns: Vec<u64>,
    pub stall_startup: Vec<bool>,

    pub xfer_flow: Vec<u32>,
    pub xfer_start_ns: Vec<u64>,
    pub xfer_end_ns: Vec<u64>,
    pub xfer_bytes: Vec<u64>,
}

impl AppRecords {
    pub fn push(&mut self, flow: usize, r: &Record) {
        let f = flow as u32;
        match *r {
            Record::Page {
                start,
                end,
                bytes,
                objects,
            } => {
                self.page_flow.push(f);
                self.page_start_ns.push(start.0);
                self.page_end_ns.push(end_ns(end));
                self.page_bytes.push(bytes);
                self.page_objects.push(objects);
            }
            Record::Request {
                conn,
                start,
                end,
                request,
                response,
            } => {
                self.req_flow.push(f);
                self.req_conn.push(conn);
                self.req_start_ns.push(start.0);
                self.req_end_ns.push(end_ns(end));
                self.req_request.push(request);
                self.req_response.push(response);
            }
            Record::Chunk {
                index,
                start,
                end,
                bytes,
                bitrate,
            } => {
                self.chunk_flow.push(f);
                self.chunk_index.push(index);
                self.chunk_start_ns.push(start.0);
                self.chunk_end_ns.push(end_ns(end));
                self.chunk_bytes.push(bytes);
                self.chunk_bitrate.push(bitrate);
            }
            Record::Stall {
                start,
                end,
                startup,
            } => {
                self.stall_flow.push(f);
                self.stall_start_ns.push(start.0);
                self.stall_end_ns.push(end_ns(end));
                self.stall_startup.push(startup);
            }
            Record::Transfer { start, end, bytes } => {
                self.xfer_flow.push(f);
                self.xfer_start_ns.push(start.0);
                self.xfer_end_ns.push(end_ns(end));
                self.xfer_bytes.push(bytes);
            }
        }
    }

    /// Rows of all tables.
    pub fn rows(&self) -> usize {
        self.page_flow.len()
            + self.req_flow.len()
            + self.chunk_flow.len()
            + self.stall_flow.len()
            + self.xfer_flow.len()
    }
}

/// The `q`-quantile (0..1) of sorted values, interpolated linearly (NumPy's default).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (h - lo as f64)
}

/// Mean, median, 95th percentile and maximum of a sample.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Spread {
    /// None for an empty sample.
    pub fn of(xs: &[f64]) -> Option<Spread> {
        if xs.is_empty() {
            return None;
        }
        let mut s = xs.to_vec();
        s.sort_by(f64::total_cmp);
        Some(Spread {
            mean: s.iter().sum::<f64>() / s.len() as f64,
            p50: quantile(&s, 0.5),
            p95: quantile(&s, 0.95),
            max: s[s.len() - 1],
        })
    }
}

/// A metric across users: mean, median, 95th percentile, minimum, maximum and Jain's
/// fairness index.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq)]
pub struct AcrossUsers {
    pub users: usize,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub min: f64,
    pub max: f64,
    #[schemars(with = "crate::results::Nullable<f64>")]
    pub jain: Option<f64>,
}

impl AcrossUsers {
    pub fn of(xs: &[f64]) -> Option<AcrossUsers> {
        let s = Spread::of(xs)?;
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        Some(AcrossUsers {
            users: xs.len(),
            mean: s.mean,
            p50: s.p50,
            p95: s.p95,
            min,
            max: s.max,
            jain: crate::stats::fairness_jain(xs),
        })
    }
}

/// The selected rows that started in the measured interval: (durations of the finished
/// ones in s, count unfinished).
fn durations(sel: &[usize], start: &[u64], end: &[u64], warmup: SimTime) -> (Vec<f64>, u64) {
    let mut d = Vec::new();
    let mut open = 0;
    for &i in sel {
        if start[i] < warmup.0 {
            continue;
        }
        if end[i] == UNFINISHED {
            open += 1;
        } else {
            d.push((end[i] - start[i]) as f64 * 1e-9);
        }
    }
    (d, open)
}

/// The rows of each table that belong to a set of flows.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub pages: Vec<usize>,
    pub requests: Vec<usize>,
    pub chunks: Vec<usize>,
    pub stalls: Vec<usize>,
    pub transfers: Vec<usize>,
}

impl Selection {
    /// Adds `other`'s rows (another flow of the same user); rows stay in record order.
    pub fn merge(&mut self, other: &Selection) {
        for (a, b) in [
            (&mut self.pages, &other.pages),
            (&mut self.requests, &other.requests),
            (&mut self.chunks, &other.chunks),
            (&mut self.stalls, &other.stalls),
            (&mut self.transfers, &other.transfers),
        ] {
            a.extend_from_slice(b);
            a.sort_unstable();
        }
    }
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

fn p95(xs: &[f64]) -> Option<f64> {
    Spread::of(xs).map(|s| s.p95)
}

/// One flow's (one user's) application figures in the result's `flows[i].app`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq, Default)]
pub struct FlowApp {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_unfinished: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_load_mean_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_load_p95_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_unfinished: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_mean_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_p95_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bitrate_mean_bps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalls: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuffer_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuffer_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers_unfinished: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fct_mean_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fct_p95_s: Option<f64>,
    /// The mean of the finished transfers' rates (size × 8 / completion time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_rate_mean_bps: Option<f64>,
}

/// The part of [warmup, end) that overlaps [a, b).
fn overlap(a: u64, b: u64, warmup: SimTime, end: SimTime) -> u64 {
    b.min(end.0).saturating_sub(a.max(warmup.0))
}

/// Which tables a kind fills.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fills {
    pub pages: bool,
    pub requests: bool,
    pub chunks: bool,
    pub transfers: bool,
}

impl AppRecords {
    /// Each flow's rows (flows `0..n`).
    pub fn by_flow(&self, n: usize) -> Vec<Selection> {
        let mut v = vec![Selection::default(); n];
        type Column = fn(&mut Selection) -> &mut Vec<usize>;
        let tables: [(&[u32], Column); 5] = [
            (&self.page_flow, |s| &mut s.pages),
            (&self.req_flow, |s| &mut s.requests),
            (&self.chunk_flow, |s| &mut s.chunks),
            (&self.stall_flow, |s| &mut s.stalls),
            (&self.xfer_flow, |s| &mut s.transfers),
        ];
        for (flows, col) in tables {
            for (i, &f) in flows.iter().enumerate() {
                if let Some(s) = v.get_mut(f as usize) {
                    col(s).push(i);
                }
            }
        }
        v
    }

    /// The figures of the rows `sel` (a flow's, or a user's flows'), whose applications
    /// are `kind` and fill the tables `fills`.
    pub fn flow_app(
        &self,
        sel: &Selection,
        kind: &str,
        fills: Fills,
        warmup: SimTime,
        end: SimTime,
    ) -> FlowApp {
        let mut a = FlowApp {
            kind: kind.to_string(),
            ..Default::default()
        };
        if fills.pages {
            let (d, open) = durations(&sel.pages, &self.page_start_ns, &self.page_end_ns, warmup);
            a.pages = Some(d.len() as u64);
            a.pages_unfinished = Some(open);
            a.page_load_mean_s = mean(&d);
            a.page_load_p95_s = p95(&d);
        }
        if fills.requests {
            let (d, open) = durations(&sel.requests, &self.req_start_ns, &self.req_end_ns, warmup);
            a.requests = Some(d.len() as u64);
            a.requests_unfinished = Some(open);
            a.response_mean_s = mean(&d);
            a.response_p95_s = p95(&d);
        }
        if fills.chunks {
            let mut n = 0;
            let mut bits = 0.0;
            for &i in &sel.chunks {
                if self.chunk_start_ns[i] >= warmup.0 && self.chunk_end_ns[i] != UNFINISHED {
                    n += 1;
                    bits += self.chunk_bitrate[i] as f64;
                }
            }
            a.chunks = Some(n);
            a.bitrate_mean_bps = (n > 0).then(|| bits / n as f64);
            // start-up: the flow's (if it began in the interval); stalls: time without
            // playback after start-up, within the interval
            let (mut stalled, mut stalls) = (0u64, 0u64);
            let mut watch = 0;
            let mut startups = Vec::new();
            for &i in &sel.stalls {
                let (s, e) = (self.stall_start_ns[i], self.stall_end_ns[i]);
                if self.stall_startup[i] {
                    if e != UNFINISHED {
                        // a stream watched from the end of its start-up
                        watch += overlap(e, end.0, warmup, end);
                        if s >= warmup.0 {
                            startups.push((e - s) as f64 * 1e-9);
                        }
                    }
                    continue;
                }
                let o = overlap(s, e, warmup, end);
                if o > 0 {
                    stalled += o;
                    stalls += (s >= warmup.0) as u64;
                }
            }
            a.startup_s = mean(&startups);
            a.stalls = Some(stalls);
            a.rebuffer_s = Some(stalled as f64 * 1e-9);
            // the share of the watching time (after start-up) spent stalled
            a.rebuffer_ratio = (watch > 0).then(|| stalled as f64 / watch as f64);
        }
        if fills.transfers {
            let (d, open) = durations(
                &sel.transfers,
                &self.xfer_start_ns,
                &self.xfer_end_ns,
                warmup,
            );
            a.transfers = Some(d.len() as u64);
            a.transfers_unfinished = Some(open);
            a.fct_mean_s = mean(&d);
            a.fct_p95_s = p95(&d);
            let rates: Vec<f64> = sel
                .transfers
                .iter()
                .filter(|&&i| {
                    self.xfer_start_ns[i] >= warmup.0 && self.xfer_end_ns[i] != UNFINISHED
                })
                .map(|&i| {
                    let t = (self.xfer_end_ns[i] - self.xfer_start_ns[i]).max(1) as f64 * 1e-9;
                    self.xfer_bytes[i] as f64 * 8.0 / t
                })
                .collect();
            a.transfer_rate_mean_bps = mean(&rates);
        }
        a
    }
}

/// One user of a `[[user]]` group: its flows added up (the result's `users`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq)]
pub struct UserResult {
    /// NAME#i.
    pub name: String,
    pub flows: Vec<usize>,
    /// The sum of its flows' goodputs.
    pub goodput_bps: f64,
    pub bytes_delivered: u64,
    /// Its applications' figures (`kind` lists them, `web+stream`), over all its flows.
    #[serde(flatten)]
    pub app: FlowApp,
}

/// A table's rows over the run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq)]
pub struct Rows {
    /// Finished rows that started in the measured interval.
    pub count: u64,
    /// Rows that started in the interval and had not finished at its end.
    pub unfinished: u64,
    /// Their durations (s): page load, response, chunk download or flow completion time.
    #[schemars(with = "crate::results::Nullable<Spread>")]
    pub time_s: Option<Spread>,
}

/// Flow completion times of transfers in a size range [min_bytes, max_bytes).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq)]
pub struct SizeBucket {
    pub min_bytes: u64,
    #[schemars(with = "crate::results::Nullable<u64>")]
    pub max_bytes: Option<u64>,
    pub count: u64,
    pub unfinished: u64,
    #[schemars(with = "crate::results::Nullable<Spread>")]
    pub fct_s: Option<Spread>,
}

/// Per-user metrics summarised across users: goodput, mean page load, mean response
/// time, rebuffer ratio, mean FCT, mean transfer rate.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq, Default)]
pub struct PerUser {
    #[schemars(with = "crate::results::Nullable<AcrossUsers>")]
    pub goodput_bps: Option<AcrossUsers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_load_s: Option<AcrossUsers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_s: Option<AcrossUsers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuffer_ratio: Option<AcrossUsers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fct_s: Option<AcrossUsers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_rate_bps: Option<AcrossUsers>,
}

/// The result's `workload`: every application flow's tables summarised (present only
/// when the scenario has flows whose application is not bulk).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema, PartialEq)]
pub struct Workload {
    /// Users: each `[[user]]` group's users, and each other flow whose application is
    /// not bulk.
    pub users: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<Rows>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<Rows>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Rows>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<Rows>,
    /// Transfers by size decade (1 kB, 10 kB, ... 10 MB): flow completion time against
    /// size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(default)]
    pub fct_by_size: Vec<SizeBucket>,
    /// Per-user figures (a user's goodput, mean page load, mean response time, rebuffer
    /// ratio, mean FCT, mean transfer rate) across users.
    pub per_user: PerUser,
}

/// Size decades of [`Workload::fct_by_size`].
pub const SIZE_EDGES: [u64; 5] = [10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];

impl AppRecords {
    /// The run's summary; `users` are the users' (goodput, figures).
    pub fn workload(&self, users: &[(f64, &FlowApp)], fills: Fills, warmup: SimTime) -> Workload {
        let all = |n: usize| (0..n).collect::<Vec<usize>>();
        let rows = |on: bool, s: &[u64], e: &[u64]| {
            on.then(|| {
                let (d, open) = durations(&all(s.len()), s, e, warmup);
                Rows {
                    count: d.len() as u64,
                    unfinished: open,
                    time_s: Spread::of(&d),
                }
            })
        };
        let mut fct_by_size = Vec::new();
        if fills.transfers {
            let mut lo = 0;
            for hi in SIZE_EDGES.iter().map(|&h| Some(h)).chain([None]) {
                let sel: Vec<usize> = (0..self.xfer_bytes.len())
                    .filter(|&i| {
                        let b = self.xfer_bytes[i];
                        b >= lo && hi.is_none_or(|h| b < h)
                    })
                    .collect();
                let (d, open) = durations(&sel, &self.xfer_start_ns, &self.xfer_end_ns, warmup);
                if !d.is_empty() || open > 0 {
                    fct_by_size.push(SizeBucket {
                        min_bytes: lo,
                        max_bytes: hi,
                        count: d.len() as u64,
                        unfinished: open,
                        fct_s: Spread::of(&d),
                    });
                }
                lo = hi.unwrap_or(0);
            }
        }
        let across = |get: &dyn Fn(&FlowApp) -> Option<f64>| {
            let v: Vec<f64> = users.iter().filter_map(|u| get(u.1)).collect();
            AcrossUsers::of(&v)
        };
        let goodputs: Vec<f64> = users.iter().map(|u| u.0).collect();
        Workload {
            users: users.len(),
            pages: rows(fills.pages, &self.page_start_ns, &self.page_end_ns),
            requests: rows(fills.requests, &self.req_start_ns, &self.req_end_ns),
            chunks: rows(fills.chunks, &self.chunk_start_ns, &self.chunk_end_ns),
            transfers: rows(fills.transfers, &self.xfer_start_ns, &self.xfer_end_ns),
            fct_by_size,
            per_user: PerUser {
                goodput_bps: AcrossUsers::of(&goodputs),
                page_load_s: across(&|a| a.page_load_mean_s),
                response_s: across(&|a| a.response_mean_s),
                rebuffer_ratio: across(&|a| a.rebuffer_ratio),
                fct_s: across(&|a| a.fct_mean_s),
                transfer_rate_bps: across(&|a| a.transfer_rate_mean_bps),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_as_numpy() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.5), 2.5);
        assert!((quantile(&s, 0.95) - 3.85).abs() < 1e-12);
        assert_eq!(quantile(&[7.0], 0.95), 7.0);
        let a = AcrossUsers::of(&[1.0, 3.0]).unwrap();
        assert_eq!((a.mean, a.min, a.max, a.jain), (2.0, 1.0, 3.0, Some(0.8)));
    }

    #[test]
    fn unfinished_rows_and_the_warmup() {
        let mut r = AppRecords::default();
        let t = |s: u64| SimTime(s * 1_000_000_000);
        for (s, e) in [(1, Some(3)), (5, Some(6)), (7, None), (8, Some(10))] {
            r.push(
                0,
                &Record::Request {
                    conn: 0,
                    start: t(s),
                    end: e.map(t),
                    request: 1,
                    response: 1,
                },
            );
        }
        let fills = Fills {
            requests: true,
            ..Default::default()
        };
        let a = r.flow_app(&r.by_flow(1)[0], "request-response", fills, t(4), t(20));
        assert_eq!(
            (a.requests, a.requests_unfinished),
            (Some(2), Some(1)),
            "the first began in the warmup"
        );
        assert_eq!(a.response_mean_s, Some(1.5));
        let w = r.workload(&[(8.0, &a)], fills, t(4));
        assert_eq!(w.requests.as_ref().unwrap().count, 2);
        assert_eq!(w.per_user.response_s.as_ref().unwrap().mean, 1.5);
    }

    #[test]
    fn rebuffer_ratio_is_the_stalled_share_of_watching_time() {
        let mut r = AppRecords::default();
        let t = |s: u64| SimTime(s * 1_000_000_000);
        r.push(
            3,
            &Record::Stall {
                start: t(0),
                end: Some(t(2)),
                startup: true,
            },
        );
        r.push(
            3,
            &Record::Stall {
                start: t(10),
                end: Some(t(15)),
                startup: false,
            },
        );
        r.push(
            3,
            &Record::Stall {
                start: t(40),
                end: None,
                startup: false,
            },
        );
        let fills = Fills {
            chunks: true,
            ..Default::default()
        };
        let a = r.flow_app(&r.by_flow(4)[3], "stream", fills, t(0), t(52));
        assert_eq!(a.startup_s, Some(2.0));
        assert_eq!(a.stalls, Some(2));
        // 5 s + 12 s stalled of 50 s watched
        assert_eq!(a.rebuffer_s, Some(17.0));
        assert_eq!(a.rebuffer_ratio, Some(17.0 / 50.0));
    }
}
