//! Links that change over time: the schedule stage of a link direction.
//!
//! A link's `[[link.schedule]]` entries change its directions' rate, delay, loss model
//! and state (up or down) during a run. Three forms:
//! - **one-off**: `at = "15s"` with the values that change then;
//! - **periodic**: `every = "15s"` (from `start`, default 0 s) with, per value, one
//!   value, a list cycled through, or `{ min, max }` drawn uniformly at each tick from
//!   a seeded stream; `down_for` (a duration or `{ min, max }`) takes the link down at
//!   each tick for that long, with probability `down_p`;
//! - **CSV**: `file = "x.csv"`, a header naming columns among `t, rate, rate_ba, delay,
//!   delay_ba, loss, loss_ba, up` and one one-off change per row.
//!
//! Keys mirror the link's: `rate` and `delay` change both directions unless the link
//! has a `rate_ba`/`delay_ba` (then `rate_ba`/`delay_ba` change b->a); `loss` changes
//! a->b and `loss_ba` b->a; `up` both directions. Both directions of a link draw from
//! the same stream in the same order, so a drawn delay is the same both ways.
//!
//! This module resolves the entries ([`ScheduleSpec`] → [`DirSchedule`] per direction)
//! and runs them ([`Timeline`]: the next change and what it changes); the link
//! direction applies the changes (`net/link_sched.rs`). Order at one instant: one-off
//! changes before periodic ones, each in the order written; later ones win.
//!
//! Why one file of ~1100 lines (890 of code): the spec types, their resolution into
//! per-direction timelines (one-off, periodic, CSV) and the runtime timeline share the
//! `Change` representation (and the CSV reader its private `RowChange`); the unit
//! tests exercise them together.

use super::loss::{LossModel, LossSpec};
use super::trace::MmTrace;
use crate::error::{check_prob, err, ScenarioError};
use crate::rng::RngStream;
use crate::time::{Rate, SimDuration, SimTime};
use crate::units::{parse_duration, parse_rate, Duration, RateQ};
use schemars::gen::SchemaGenerator;
use schemars::schema::Schema;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use std::sync::Arc;

/// The shortest `every` of a periodic entry.
pub const MIN_EVERY: SimDuration = SimDuration::from_millis(1);
/// At most this many one-off changes per link (entries plus CSV rows).
pub const MAX_CHANGES: usize = 10_000_000;

/// A value that may vary per tick of a periodic entry: one value, a list cycled
/// through, or `{ min, max }` drawn uniformly (rates and durations only).
#[derive(Debug, Clone, PartialEq)]
pub enum Varying<T> {
    One(T),
    Cycle(Vec<T>),
    Range(T, T),
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum VaryingSchema<T> {
    One(T),
    Cycle(Vec<T>),
    Range { min: T, max: T },
}

impl<T: JsonSchema> JsonSchema for Varying<T> {
    fn schema_name() -> String {
        format!("Varying_{}", T::schema_name())
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        VaryingSchema::<T>::json_schema(g)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Varying<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::Value;
        let one = |v: Value| T::deserialize(v).map_err(|e| D::Error::custom(e.to_string()));
        match Value::deserialize(d)? {
            Value::Array(items) => {
                if items.is_empty() {
                    return Err(D::Error::custom("expected at least one value in the list"));
                }
                let mut out = Vec::with_capacity(items.len());
                for (i, v) in items.into_iter().enumerate() {
                    out.push(
                        T::deserialize(v)
                            .map_err(|e| D::Error::custom(format!("list item {i}: {e}")))?,
                    );
                }
                Ok(Varying::Cycle(out))
            }
            Value::Object(m) if m.contains_key("min") || m.contains_key("max") => {
                let (Some(lo), Some(hi), 2) = (m.get("min"), m.get("max"), m.len()) else {
                    return Err(D::Error::custom(
                        "a range is a table of exactly two keys, min and max",
                    ));
                };
                Ok(Varying::Range(one(lo.clone())?, one(hi.clone())?))
            }
            v => Ok(Varying::One(one(v)?)),
        }
    }
}

/// The text of a file the front end read for the core (`loaded = { file, text }`),
/// which never reads files itself. `file` must equal the key that names the file, so
/// that content loaded for another file is never used.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Loaded {
    pub file: String,
    pub text: String,
}

/// Returns the text of `file` from `loaded`, or a message saying it is missing.
pub fn loaded_text<'a>(
    file: &str,
    loaded: Option<&'a Loaded>,
    path: &str,
) -> Result<&'a str, ScenarioError> {
    match loaded {
        Some(l) if l.file == file => Ok(&l.text),
        Some(l) => err(
            format!("{path}.loaded.file"),
            format!(
                "the content is that of {:?}, not of {file:?}: load the scenario again",
                l.file
            ),
        ),
        None => err(
            path,
            format!(
                "the content of {file:?} was not loaded: files named in a scenario are read by \
                 the longpipe front end (longpipe run, longpipe.run), relative to the scenario file"
            ),
        ),
    }
}

/// One `[[link.schedule]]` entry.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// One-off: the time of the change.
    #[serde(default)]
    pub at: Option<Duration>,
    /// Periodic: the period.
    #[serde(default)]
    pub every: Option<Duration>,
    /// Periodic: the first tick (default 0 s).
    #[serde(default)]
    pub start: Option<Duration>,
    /// CSV file of one-off changes (columns t, rate, rate_ba, delay, delay_ba, loss,
    /// loss_ba, up), relative to the scenario file.
    #[serde(default)]
    pub file: Option<String>,
    /// Filled in by the front end: the content of `file`.
    #[serde(default)]
    pub loaded: Option<Loaded>,
    #[serde(default)]
    pub rate: Option<Varying<RateQ>>,
    #[serde(default)]
    pub rate_ba: Option<Varying<RateQ>>,
    #[serde(default)]
    pub delay: Option<Varying<Duration>>,
    #[serde(default)]
    pub delay_ba: Option<Varying<Duration>>,
    #[serde(default)]
    pub loss: Option<Varying<LossSpec>>,
    #[serde(default)]
    pub loss_ba: Option<Varying<LossSpec>>,
    #[serde(default)]
    pub up: Option<Varying<bool>>,
    /// Periodic: at each tick the link goes down for this long (a duration or
    /// `{ min, max }`), with probability `down_p`.
    #[serde(default)]
    pub down_for: Option<Varying<Duration>>,
    /// Periodic: the probability of an outage at a tick (default 1).
    #[serde(default)]
    pub down_p: Option<f64>,
}

/// What happens to units during an outage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outage {
    /// The interface is down: the unit in transmission, the queue and every unit that
    /// arrives are dropped (counted in `drops_outage`).
    #[default]
    Drop,
    /// The queue holds units (up to its limit); the unit in transmission pauses and
    /// resumes when the link is up again.
    Hold,
}

/// One change of one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    pub rate: Option<Rate>,
    pub delay: Option<SimDuration>,
    pub loss: Option<LossModel>,
    pub up: Option<bool>,
}

/// A periodic entry, resolved for both directions (each direction runs its own copy of
/// the same generator and reads its own values).
#[derive(Debug, Clone)]
pub struct Periodic {
    pub start: SimTime,
    pub every: SimDuration,
    /// Per direction; `mirror_*`: b->a takes a->b's value (same draw).
    pub rate: [Option<Varying<Rate>>; 2],
    pub mirror_rate: bool,
    pub delay: [Option<Varying<SimDuration>>; 2],
    pub mirror_delay: bool,
    pub loss: [Option<Varying<LossModel>>; 2],
    pub up: Option<Varying<bool>>,
    pub down_for: Option<Varying<SimDuration>>,
    pub down_p: f64,
    /// The name of its random stream.
    pub stream: String,
}

/// A direction's schedule: what its link direction needs to build its stage.
#[derive(Debug, Clone)]
pub struct DirSchedule {
    /// Index of this direction (0 = a->b) in the periodic entries' values.
    pub dir: usize,
    /// One-off changes, sorted by time (stable: the written order at one instant).
    pub once: Arc<[(SimTime, Change)]>,
    pub periodic: Vec<Arc<Periodic>>,
    pub outage: Outage,
    pub reorder: bool,
    /// A Mahimahi trace drives the transmitter instead of the rate.
    pub trace: Option<MmTrace>,
}

impl DirSchedule {
    /// Whether anything can change (a direction with only `reorder` or `outage` set
    /// and nothing scheduled needs no stage).
    pub fn is_active(&self) -> bool {
        !self.once.is_empty() || !self.periodic.is_empty() || self.trace.is_some()
    }

    /// The fastest rate this direction can have (for the work estimate).
    pub fn max_rate(&self, base: Rate) -> Rate {
        let mut r = base;
        for (_, c) in self.once.iter() {
            r = r.max(c.rate.unwrap_or(r));
        }
        for p in &self.periodic {
            let v = if p.mirror_rate {
                &p.rate[0]
            } else {
                &p.rate[self.dir]
            };
            match v {
                Some(Varying::One(x)) => r = r.max(*x),
                Some(Varying::Cycle(xs)) => r = xs.iter().fold(r, |a, &b| a.max(b)),
                Some(Varying::Range(_, hi)) => r = r.max(*hi),
                None => {}
            }
        }
        r
    }

    /// Changes (ticks) in a run of `duration`, for the work estimate.
    pub fn changes(&self, duration: SimTime) -> f64 {
        let ticks: f64 = self
            .periodic
            .iter()
            .map(|p| duration.0.saturating_sub(p.start.0) as f64 / p.every.0 as f64 * 2.0)
            .sum();
        self.once.len() as f64 + ticks
    }
}

/// What the link's keys say about mirroring, and which directions a trace drives.
#[derive(Debug, Clone, Copy)]
pub struct LinkShape {
    /// The link has no `rate_ba`: `rate` changes both directions.
    pub sym_rate: bool,
    /// The link has no `delay_ba`.
    pub sym_delay: bool,
    /// Per direction: the rate is a trace.
    pub traced: [bool; 2],
}

fn fixed<T: Clone>(v: &Varying<T>, path: &str) -> Result<T, ScenarioError> {
    match v {
        Varying::One(x) => Ok(x.clone()),
        _ => err(
            path,
            "a one-off change (at) takes one value; lists and { min, max } are for periodic entries (every)",
        ),
    }
}

fn map_varying<A, B>(
    v: &Varying<A>,
    path: &str,
    ranged: bool,
    f: impl Fn(&A, &str) -> Result<B, ScenarioError>,
) -> Result<Varying<B>, ScenarioError>
where
    B: PartialOrd,
{
    Ok(match v {
        Varying::One(x) => Varying::One(f(x, path)?),
        Varying::Cycle(xs) => Varying::Cycle(
            xs.iter()
                .enumerate()
                .map(|(i, x)| f(x, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Varying::Range(lo, hi) => {
            if !ranged {
                return err(path, "takes one value or a list, not { min, max }");
            }
            let (lo, hi) = (
                f(lo, &format!("{path}.min"))?,
                f(hi, &format!("{path}.max"))?,
            );
            if lo > hi {
                return err(format!("{path}.max"), "must not be below min");
            }
            Varying::Range(lo, hi)
        }
    })
}

/// A `[[link.schedule]]` list resolved for both directions of a link.
pub fn resolve(
    specs: &[ScheduleSpec],
    shape: LinkShape,
    outage: Outage,
    reorder: bool,
    traces: [Option<MmTrace>; 2],
    stream: &str,
    p: &str,
) -> Result<[DirSchedule; 2], ScenarioError> {
    let mut once: [Vec<(SimTime, Change)>; 2] = [vec![], vec![]];
    let mut periodic = Vec::new();
    let loss = |l: &LossSpec, path: &str| LossSpec::resolve(Some(l), path);
    for (i, s) in specs.iter().enumerate() {
        let p = format!("{p}.schedule[{i}]");
        let forms = [s.at.is_some(), s.every.is_some(), s.file.is_some()];
        if forms.iter().filter(|&&x| x).count() != 1 {
            return err(&p, "expected exactly one of at (a one-off change), every (periodic) or file (a CSV of changes)");
        }
        if s.every.is_none() {
            for (k, set) in [
                ("start", s.start.is_some()),
                ("down_for", s.down_for.is_some()),
                ("down_p", s.down_p.is_some()),
            ] {
                if set {
                    return err(
                        format!("{p}.{k}"),
                        "only applies to a periodic entry (every)",
                    );
                }
            }
        }
        if s.file.is_none() && s.loaded.is_some() {
            return err(format!("{p}.loaded"), "only applies with file");
        }
        let any_value = s.rate.is_some()
            || s.rate_ba.is_some()
            || s.delay.is_some()
            || s.delay_ba.is_some()
            || s.loss.is_some()
            || s.loss_ba.is_some()
            || s.up.is_some();
        if let Some(file) = &s.file {
            if any_value {
                return err(
                    &p,
                    "a file entry takes its values from the file, not from keys",
                );
            }
            let text = loaded_text(file, s.loaded.as_ref(), &format!("{p}.file"))?;
            for (t, c) in parse_csv(text, &format!("{p}.file"), file)? {
                push_change(&mut once, t, &c, shape, &format!("{p}.file"))?;
            }
        } else if let Some(at) = s.at {
            if !any_value {
                return err(&p, "changes nothing: give rate, delay, loss or up");
            }
            let c = RowChange {
                rate: s
                    .rate
                    .as_ref()
                    .map(|v| fixed(v, &format!("{p}.rate")))
                    .transpose()?
                    .map(|r| r.0),
                rate_ba: s
                    .rate_ba
                    .as_ref()
                    .map(|v| fixed(v, &format!("{p}.rate_ba")))
                    .transpose()?
                    .map(|r| r.0),
                delay: s
                    .delay
                    .as_ref()
                    .map(|v| fixed(v, &format!("{p}.delay")))
                    .transpose()?
                    .map(|d| d.0),
                delay_ba: s
                    .delay_ba
                    .as_ref()
                    .map(|v| fixed(v, &format!("{p}.delay_ba")))
                    .transpose()?
                    .map(|d| d.0),
                loss: match &s.loss {
                    Some(v) => Some(loss(
                        &fixed(v, &format!("{p}.loss"))?,
                        &format!("{p}.loss"),
                    )?),
                    None => None,
                },
                loss_ba: match &s.loss_ba {
                    Some(v) => Some(loss(
                        &fixed(v, &format!("{p}.loss_ba"))?,
                        &format!("{p}.loss_ba"),
                    )?),
                    None => None,
                },
                up: s
                    .up
                    .as_ref()
                    .map(|v| fixed(v, &format!("{p}.up")))
                    .transpose()?,
            };
            push_change(&mut once, SimTime(at.0 .0), &c, shape, &p)?;
        } else if let Some(every) = s.every {
            if every.0 < MIN_EVERY {
                return err(format!("{p}.every"), "must be at least 1ms");
            }
            if !any_value && s.down_for.is_none() {
                return err(
                    &p,
                    "changes nothing: give rate, delay, loss, up or down_for",
                );
            }
            let rate = |v: &Option<Varying<RateQ>>, k: &str| {
                v.as_ref()
                    .map(|v| map_varying(v, &format!("{p}.{k}"), true, |r, _| Ok(r.0)))
                    .transpose()
            };
            let dur = |v: &Option<Varying<Duration>>, k: &str| {
                v.as_ref()
                    .map(|v| map_varying(v, &format!("{p}.{k}"), true, |d, _| Ok(d.0)))
                    .transpose()
            };
            let lossv = |v: &Option<Varying<LossSpec>>,
                         k: &str|
             -> Result<Option<Varying<LossModel>>, ScenarioError> {
                match v {
                    None => Ok(None),
                    Some(Varying::One(l)) => Ok(Some(Varying::One(loss(l, &format!("{p}.{k}"))?))),
                    Some(Varying::Cycle(ls)) => Ok(Some(Varying::Cycle(
                        ls.iter()
                            .enumerate()
                            .map(|(j, l)| loss(l, &format!("{p}.{k}[{j}]")))
                            .collect::<Result<_, _>>()?,
                    ))),
                    Some(Varying::Range(..)) => err(
                        format!("{p}.{k}"),
                        "takes one loss model or a list, not { min, max }",
                    ),
                }
            };
            let (r0, r1) = (rate(&s.rate, "rate")?, rate(&s.rate_ba, "rate_ba")?);
            let (d0, d1) = (dur(&s.delay, "delay")?, dur(&s.delay_ba, "delay_ba")?);
            let mirror_rate = shape.sym_rate && r1.is_none();
            let mirror_delay = shape.sym_delay && d1.is_none();
            for (k, traced) in shape.traced.iter().enumerate() {
                let changes = if k == 0 || mirror_rate {
                    r0.is_some()
                } else {
                    r1.is_some()
                };
                if *traced && changes {
                    let key = if k == 1 && r1.is_some() {
                        "rate_ba"
                    } else {
                        "rate"
                    };
                    return err(format!("{p}.{key}"), TRACED[k]);
                }
            }
            let up = match &s.up {
                Some(Varying::Range(..)) => {
                    return err(format!("{p}.up"), "takes true, false or a list of them")
                }
                v => v.clone(),
            };
            let down_for = dur(&s.down_for, "down_for")?;
            if let Some(d) = &down_for {
                let longest = match d {
                    Varying::One(x) | Varying::Range(_, x) => *x,
                    Varying::Cycle(xs) => xs.iter().copied().max().unwrap_or_default(),
                };
                if longest >= every.0 {
                    return err(format!("{p}.down_for"), "must be shorter than every");
                }
                if up.is_some() {
                    return err(
                        format!("{p}.up"),
                        "a periodic entry takes either up or down_for",
                    );
                }
            }
            let down_p = match s.down_p {
                Some(_) if down_for.is_none() => {
                    return err(format!("{p}.down_p"), "only applies with down_for");
                }
                Some(x) => check_prob(format!("{p}.down_p"), x)?,
                None => 1.0,
            };
            periodic.push(Arc::new(Periodic {
                start: SimTime(s.start.map_or(0, |d| d.0 .0)),
                every: every.0,
                rate: [r0, r1],
                mirror_rate,
                delay: [d0, d1],
                mirror_delay,
                loss: [lossv(&s.loss, "loss")?, lossv(&s.loss_ba, "loss_ba")?],
                up,
                down_for,
                down_p,
                stream: format!("{stream}/{i}"),
            }));
        }
    }
    let [mut o0, mut o1] = once;
    o0.sort_by_key(|c| c.0);
    o1.sort_by_key(|c| c.0);
    let [t0, t1] = traces;
    let mk = |dir: usize, once: Vec<(SimTime, Change)>, trace: Option<MmTrace>| DirSchedule {
        dir,
        once: once.into(),
        periodic: periodic.clone(),
        outage,
        reorder,
        trace,
    };
    Ok([mk(0, o0, t0), mk(1, o1, t1)])
}

const TRACED: [&str; 2] = [
    "a trace drives the a->b rate: it cannot be scheduled too",
    "a trace drives the b->a rate: it cannot be scheduled too",
];

/// A one-off change as written (both directions).
#[derive(Debug, Clone, Default)]
struct RowChange {
    rate: Option<Rate>,
    rate_ba: Option<Rate>,
    delay: Option<SimDuration>,
    delay_ba: Option<SimDuration>,
    loss: Option<LossModel>,
    loss_ba: Option<LossModel>,
    up: Option<bool>,
}

fn push_change(
    once: &mut [Vec<(SimTime, Change)>; 2],
    t: SimTime,
    c: &RowChange,
    shape: LinkShape,
    p: &str,
) -> Result<(), ScenarioError> {
    let rev_rate = c.rate_ba.or(if shape.sym_rate { c.rate } else { None });
    let rev_delay = c.delay_ba.or(if shape.sym_delay { c.delay } else { None });
    for (k, r) in [c.rate, rev_rate].iter().enumerate() {
        if shape.traced[k] && r.is_some() {
            let key = if k == 1 && c.rate_ba.is_some() {
                "rate_ba"
            } else {
                "rate"
            };
            return err(format!("{p}.{key}"), TRACED[k]);
        }
    }
    if once[0].len() + once[1].len() >= 2 * MAX_CHANGES {
        return err(
            p,
            format!("more than {MAX_CHANGES} one-off changes on one link"),
        );
    }
    let fwd = Change {
        rate: c.rate,
        delay: c.delay,
        loss: c.loss.clone(),
        up: c.up,
    };
    let rev = Change {
        rate: rev_rate,
        delay: rev_delay,
        loss: c.loss_ba.clone(),
        up: c.up,
    };
    for (k, ch) in [fwd, rev].into_iter().enumerate() {
        if ch != Change::default() {
            once[k].push((t, ch));
        }
    }
    Ok(())
}

const CSV_COLUMNS: [&str; 8] = [
    "t", "rate", "rate_ba", "delay", "delay_ba", "loss", "loss_ba", "up",
];

/// A CSV cell's loss model: a probability (Bernoulli), `ber=X`, or `none`.
fn csv_loss(cell: &str) -> Result<LossModel, String> {
    if cell == "none" {
        return Ok(LossModel::None);
    }
    let (spec, what) = match cell.strip_prefix("ber=") {
        Some(b) => (b, "ber"),
        None => (cell, "p"),
    };
    let v: f64 = spec
        .parse()
        .map_err(|_| format!("expected a loss probability, ber=X or none, got {cell:?}"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{what} must be in [0, 1], got {v}"));
    }
    Ok(if what == "ber" {
        LossModel::Ber { ber: v }
    } else {
        LossModel::Bernoulli { p: v }
    })
}

/// The rows of a schedule CSV file: (time, change). `t` is seconds (a bare number) or
/// a duration with a unit; an empty cell leaves that value as it is.
fn parse_csv(text: &str, p: &str, file: &str) -> Result<Vec<(SimTime, RowChange)>, ScenarioError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((hl, header)) = lines.next() else {
        return err(
            p,
            format!("{file}: empty; expected a header such as t,rate,delay,loss"),
        );
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    for (j, c) in cols.iter().enumerate() {
        if !CSV_COLUMNS.contains(c) {
            return err(
                p,
                format!(
                    "{file} line {hl}: unknown column {c:?}; expected some of {}",
                    CSV_COLUMNS.join(", ")
                ),
            );
        }
        if cols[..j].contains(c) {
            return err(p, format!("{file} line {hl}: column {c:?} twice"));
        }
    }
    if cols.first() != Some(&"t") {
        return err(p, format!("{file} line {hl}: the first column must be t"));
    }
    let mut rows = Vec::new();
    for (n, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != cols.len() {
            return err(
                p,
                format!(
                    "{file} line {n}: {} cells, the header has {}",
                    cells.len(),
                    cols.len()
                ),
            );
        }
        let bad = |c: &str, m: String| err(p, format!("{file} line {n}: column {c}: {m}"));
        let mut t = SimTime::ZERO;
        let mut row = RowChange::default();
        for (c, cell) in cols.iter().zip(&cells) {
            if cell.is_empty() {
                if *c == "t" {
                    return bad(c, "the time is required".into());
                }
                continue;
            }
            let r = match *c {
                "t" => {
                    let d = match cell.parse::<f64>() {
                        Ok(s) if s.is_finite() && s >= 0.0 => parse_duration(&format!("{cell}s")),
                        Ok(_) => Err(format!("must be a non-negative time, got {cell:?}")),
                        Err(_) => parse_duration(cell),
                    };
                    d.map(|d| t = SimTime(d.0))
                }
                "rate" => parse_rate(cell).map(|r| row.rate = Some(r)),
                "rate_ba" => parse_rate(cell).map(|r| row.rate_ba = Some(r)),
                "delay" => parse_duration(cell).map(|d| row.delay = Some(d)),
                "delay_ba" => parse_duration(cell).map(|d| row.delay_ba = Some(d)),
                "loss" => csv_loss(cell).map(|l| row.loss = Some(l)),
                "loss_ba" => csv_loss(cell).map(|l| row.loss_ba = Some(l)),
                _ => match *cell {
                    "true" | "1" => {
                        row.up = Some(true);
                        Ok(())
                    }
                    "false" | "0" => {
                        row.up = Some(false);
                        Ok(())
                    }
                    _ => Err(format!("expected true or false, got {cell:?}")),
                },
            };
            if let Err(m) = r {
                return bad(c, m);
            }
        }
        if rows.len() == MAX_CHANGES {
            return err(p, format!("{file}: more than {MAX_CHANGES} rows"));
        }
        rows.push((t, row));
    }
    Ok(rows)
}

// ---------------------------------------------------------------------------------
// Running a schedule.

/// A periodic entry's state in one direction.
#[derive(Debug, Clone)]
struct Ticker {
    cfg: Arc<Periodic>,
    /// Ticks done.
    n: u64,
    next: SimTime,
    /// The end of the current outage (`down_for`).
    up_at: Option<SimTime>,
    rng: RngStream,
}

/// Uniform in [lo, hi] by a multiply-shift of one 64-bit draw.
fn draw(rng: &mut RngStream, lo: u64, hi: u64) -> u64 {
    let span = (hi - lo) as u128 + 1;
    lo + ((rng.next_u64() as u128 * span) >> 64) as u64
}

impl Ticker {
    fn pick<T: Clone>(
        &mut self,
        v: &Varying<T>,
        as_u64: impl Fn(&T) -> u64,
        from: impl Fn(u64) -> T,
    ) -> T {
        match v {
            Varying::One(x) => x.clone(),
            Varying::Cycle(xs) => xs[(self.n % xs.len() as u64) as usize].clone(),
            Varying::Range(lo, hi) => from(draw(&mut self.rng, as_u64(lo), as_u64(hi))),
        }
    }

    /// The change of the tick due now for direction `dir`. Draws every random value of
    /// the entry in a fixed order, whichever direction asks, so both directions see
    /// the same draws.
    fn tick(&mut self, dir: usize) -> Change {
        let cfg = self.cfg.clone();
        let rates = [
            cfg.rate[0].as_ref().map(|v| self.pick(v, |r| r.0, Rate)),
            cfg.rate[1].as_ref().map(|v| self.pick(v, |r| r.0, Rate)),
        ];
        let delays = [
            cfg.delay[0]
                .as_ref()
                .map(|v| self.pick(v, |d| d.0, SimDuration)),
            cfg.delay[1]
                .as_ref()
                .map(|v| self.pick(v, |d| d.0, SimDuration)),
        ];
        let mut c = Change {
            rate: if dir == 1 && cfg.mirror_rate {
                rates[0]
            } else {
                rates[dir]
            },
            delay: if dir == 1 && cfg.mirror_delay {
                delays[0]
            } else {
                delays[dir]
            },
            loss: cfg.loss[dir]
                .as_ref()
                .map(|v| self.pick(v, |_| 0, |_| unreachable!())),
            up: cfg
                .up
                .as_ref()
                .map(|v| self.pick(v, |_| 0, |_| unreachable!())),
        };
        if let Some(d) = &cfg.down_for {
            let down = cfg.down_p >= 1.0 || self.rng.uniform() < cfg.down_p;
            let len = self.pick(d, |d| d.0, SimDuration);
            if down && len > SimDuration::ZERO {
                c.up = Some(false);
                self.up_at = Some(self.next + len);
            }
        }
        self.n += 1;
        self.next += cfg.every;
        c
    }
}

/// A direction's schedule as it runs: the next change and what it changes.
#[derive(Debug, Clone)]
pub struct Timeline {
    dir: usize,
    once: Arc<[(SimTime, Change)]>,
    next_once: usize,
    tickers: Vec<Ticker>,
}

impl Timeline {
    /// `seed`: the run's master seed (periodic entries draw from streams named after
    /// their link and position).
    pub fn new(s: &DirSchedule, seed: u64) -> Self {
        Timeline {
            dir: s.dir,
            once: s.once.clone(),
            next_once: 0,
            tickers: s
                .periodic
                .iter()
                .map(|p| Ticker {
                    rng: RngStream::new(seed, &p.stream),
                    cfg: p.clone(),
                    n: 0,
                    next: p.start,
                    up_at: None,
                })
                .collect(),
        }
    }

    /// The time of the next change, if any.
    pub fn next_change(&self) -> Option<SimTime> {
        let mut t = self.once.get(self.next_once).map(|c| c.0);
        for k in &self.tickers {
            let kt = k.up_at.map_or(k.next, |u| u.min(k.next));
            t = Some(t.map_or(kt, |x| x.min(kt)));
        }
        t
    }

    /// Takes the next change if it is due at `now`: (its time, the change).
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, Change)> {
        let t = self.next_change()?;
        if t > now {
            return None;
        }
        if let Some((ct, c)) = self.once.get(self.next_once) {
            if *ct == t {
                self.next_once += 1;
                return Some((t, c.clone()));
            }
        }
        let dir = self.dir;
        for k in &mut self.tickers {
            if k.up_at == Some(t) {
                k.up_at = None;
                return Some((
                    t,
                    Change {
                        up: Some(true),
                        ..Change::default()
                    },
                ));
            }
            if k.next == t {
                return Some((t, k.tick(dir)));
            }
        }
        unreachable!("the next change belongs to a source")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(json: &str) -> Vec<ScheduleSpec> {
        serde_json::from_str(json).unwrap()
    }

    const SYM: LinkShape = LinkShape {
        sym_rate: true,
        sym_delay: true,
        traced: [false, false],
    };

    fn run(t: &mut Timeline, until: u64) -> Vec<(u64, Change)> {
        let mut v = vec![];
        while let Some((at, c)) = t.pop_due(SimTime(until)) {
            v.push((at.0, c));
        }
        v
    }

    #[test]
    fn one_off_changes_mirror_the_links_keys() {
        let s = specs(
            r#"[{"at":"2s","delay":"40ms"},{"at":"1s","rate":"5Mbps","loss":{"kind":"bernoulli","p":0.1}},
                {"at":"2s","up":false,"delay_ba":"30ms"}]"#,
        );
        let [a, b] = resolve(&s, SYM, Outage::Drop, false, [None, None], "x", "link[0]").unwrap();
        let ms = SimDuration::from_millis;
        assert_eq!(a.once.len(), 3);
        assert_eq!(a.once[0].1.rate, Some(Rate(5_000_000)));
        assert_eq!(
            b.once[0].1.rate,
            Some(Rate(5_000_000)),
            "a symmetric link stays symmetric"
        );
        assert_eq!(b.once[0].1.loss, None, "loss is a->b only");
        // at 2 s, in the order written: delay 40 ms both ways, then down (and b->a 30 ms)
        assert_eq!(
            (a.once[1].0, a.once[1].1.delay),
            (SimTime(2_000_000_000), Some(ms(40)))
        );
        assert_eq!(
            (b.once[2].1.delay, b.once[2].1.up),
            (Some(ms(30)), Some(false))
        );
        assert_eq!((a.once[2].1.delay, a.once[2].1.up), (None, Some(false)));
        // with a rate_ba on the link, rate changes only a->b
        let asym = LinkShape {
            sym_rate: false,
            ..SYM
        };
        let [_, b] = resolve(&s, asym, Outage::Drop, false, [None, None], "x", "l").unwrap();
        assert_eq!(b.once.len(), 2, "the rate change leaves b->a alone");
    }

    #[test]
    fn periodic_cycles_draws_and_takes_the_link_down() {
        let s = specs(
            r#"[{"every":"15s","start":"5s","delay":{"min":"12ms","max":"30ms"},"rate":["10Mbps","20Mbps"],
                 "down_for":{"min":"100ms","max":"200ms"},"down_p":0.5}]"#,
        );
        let [a, b] = resolve(&s, SYM, Outage::Drop, false, [None, None], "link/x", "l").unwrap();
        let (mut ta, mut tb) = (Timeline::new(&a, 7), Timeline::new(&b, 7));
        let (va, vb) = (run(&mut ta, 201_000_000_000), run(&mut tb, 201_000_000_000));
        assert_eq!(va, vb, "both directions see the same draws");
        let ticks: Vec<&(u64, Change)> = va.iter().filter(|c| c.1.delay.is_some()).collect();
        assert_eq!(ticks.len(), 14, "5 s, 20 s, ..., 200 s");
        for (n, (t, c)) in ticks.iter().enumerate() {
            assert_eq!(*t, 5_000_000_000 + n as u64 * 15_000_000_000);
            let d = c.delay.unwrap().0;
            assert!((12_000_000..=30_000_000).contains(&d), "{d}");
            assert_eq!(c.rate, Some(Rate([10_000_000, 20_000_000][n % 2])));
        }
        let delays: std::collections::BTreeSet<u64> =
            ticks.iter().map(|c| c.1.delay.unwrap().0).collect();
        assert!(delays.len() > 10, "drawn, not constant: {delays:?}");
        // each outage ends 100..200 ms after its tick; about half the ticks have one
        let downs: Vec<u64> = va
            .iter()
            .filter(|c| c.1.up == Some(false))
            .map(|c| c.0)
            .collect();
        let ups: Vec<u64> = va
            .iter()
            .filter(|c| c.1.up == Some(true))
            .map(|c| c.0)
            .collect();
        assert!((3..=11).contains(&downs.len()), "{downs:?}");
        assert_eq!(downs.len(), ups.len());
        for (d, u) in downs.iter().zip(&ups) {
            assert!((100_000_000..=200_000_000).contains(&(u - d)), "{d} {u}");
        }
        // another seed draws differently
        let mut tc = Timeline::new(&a, 8);
        assert_ne!(run(&mut tc, 201_000_000_000), va);
    }

    #[test]
    fn csv_rows_and_errors_name_the_line() {
        let text = "# comment\nt,rate,delay,loss,up\n0,10Mbps,20ms,,\n1.5,,30ms,ber=1e-6,\n2s,,,none,false\n";
        let mut s = specs(r#"[{"file":"f.csv"}]"#);
        s[0].loaded = Some(Loaded {
            file: "f.csv".into(),
            text: text.into(),
        });
        let [a, _] = resolve(&s, SYM, Outage::Drop, false, [None, None], "x", "link[1]").unwrap();
        let got: Vec<(u64, Change)> = a.once.iter().map(|(t, c)| (t.0, c.clone())).collect();
        assert_eq!(got[1].0, 1_500_000_000);
        assert_eq!(got[1].1.loss, Some(LossModel::Ber { ber: 1e-6 }));
        assert_eq!(
            got[2].1,
            Change {
                loss: Some(LossModel::None),
                up: Some(false),
                ..Change::default()
            }
        );
        for (bad, want) in [
            ("t,rate\n0,fast\n", "line 2: column rate"),
            ("t,colour\n", "unknown column \"colour\""),
            ("rate,t\n", "first column must be t"),
            ("t,loss\n1,2\n", "p must be in [0, 1]"),
            ("t,up\n1\n", "line 2: 1 cells"),
            ("t,delay\n-1,1ms\n", "non-negative"),
        ] {
            s[0].loaded = Some(Loaded {
                file: "f.csv".into(),
                text: bad.into(),
            });
            let e =
                resolve(&s, SYM, Outage::Drop, false, [None, None], "x", "link[1]").unwrap_err();
            assert_eq!(e.path, "link[1].schedule[0].file");
            assert!(
                e.msg.contains(want) && e.msg.contains("f.csv"),
                "{bad:?}: {e}"
            );
        }
        s[0].loaded = Some(Loaded {
            file: "other.csv".into(),
            text: text.into(),
        });
        let e = resolve(&s, SYM, Outage::Drop, false, [None, None], "x", "link[1]").unwrap_err();
        assert!(e.msg.contains("other.csv"), "{e}");
        s[0].loaded = None;
        let e = resolve(&s, SYM, Outage::Drop, false, [None, None], "x", "link[1]").unwrap_err();
        assert!(e.msg.contains("not loaded"), "{e}");
    }

    #[test]
    fn bad_entries_name_their_field() {
        for (json, path) in [
            (r#"[{"delay":"1ms"}]"#, "link[0].schedule[0]"),
            (
                r#"[{"at":"1s","every":"1s","delay":"1ms"}]"#,
                "link[0].schedule[0]",
            ),
            (r#"[{"at":"1s"}]"#, "link[0].schedule[0]"),
            (
                r#"[{"at":"1s","delay":["1ms","2ms"]}]"#,
                "link[0].schedule[0].delay",
            ),
            (
                r#"[{"every":"100us","delay":"1ms"}]"#,
                "link[0].schedule[0].every",
            ),
            (
                r#"[{"every":"1s","delay":{"min":"3ms","max":"2ms"}}]"#,
                "link[0].schedule[0].delay.max",
            ),
            (
                r#"[{"every":"1s","down_for":"1s"}]"#,
                "link[0].schedule[0].down_for",
            ),
            (
                r#"[{"every":"1s","delay":"1ms","down_p":0.5}]"#,
                "link[0].schedule[0].down_p",
            ),
            (
                r#"[{"at":"1s","delay":"1ms","start":"1s"}]"#,
                "link[0].schedule[0].start",
            ),
            (
                r#"[{"every":"1s","up":{"min":true,"max":false}}]"#,
                "link[0].schedule[0].up",
            ),
            (
                r#"[{"every":"1s","loss":[{"kind":"bernoulli","p":2}]}]"#,
                "link[0].schedule[0].loss[0].p",
            ),
        ] {
            let e = resolve(
                &specs(json),
                SYM,
                Outage::Drop,
                false,
                [None, None],
                "x",
                "link[0]",
            )
            .unwrap_err();
            assert_eq!(e.path, path, "{json}: {e}");
        }
        let traced = LinkShape {
            traced: [false, true],
            ..SYM
        };
        let e = resolve(
            &specs(r#"[{"at":"1s","rate":"1Mbps"}]"#),
            traced,
            Outage::Drop,
            false,
            [None, None],
            "x",
            "l",
        )
        .unwrap_err();
        assert_eq!(e.path, "l.schedule[0].rate", "{e}");
        assert!(e.msg.contains("b->a"), "{e}");
        // a list where a range is meant, and a malformed range, are refused by serde
        let e =
            serde_json::from_str::<Vec<ScheduleSpec>>(r#"[{"every":"1s","delay":{"min":"1ms"}}]"#)
                .unwrap_err();
        assert!(e.to_string().contains("min and max"), "{e}");
    }
}
