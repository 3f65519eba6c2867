//! The `[[link.schedule]]` entries of a link ([`ScheduleSpec`]) and their resolution
//! into one [`DirSchedule`] per direction ([`resolve`]): one-off entries (`at`),
//! periodic ones (`every`) and CSV files (`file`, [`super::csv`]).

use super::csv;
use super::dir::{
    DirSchedule, LinkShape, OnceChanges, Outage, Periodic, RowChange, MAX_CHANGES, MIN_EVERY,
    TRACED,
};
use super::varying::Varying;
use crate::error::{check_prob, err, ScenarioError};
use crate::loaded::{loaded_text, Loaded};
use crate::net::loss::{LossModel, LossSpec};
use crate::net::trace::MmTrace;
use crate::time::SimTime;
use crate::units::{Duration, RateQ};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

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

/// A `[[link.schedule]]` list resolved for both directions of a link: `shape` says
/// which keys mirror and which directions a trace drives, `stream` names the periodic
/// entries' random streams, `p` is the link's field path.
pub fn resolve(
    specs: &[ScheduleSpec],
    shape: LinkShape,
    outage: Outage,
    reorder: bool,
    traces: [Option<MmTrace>; 2],
    stream: &str,
    p: &str,
) -> Result<[DirSchedule; 2], ScenarioError> {
    let mut once = [OnceChanges::default(), OnceChanges::default()];
    let mut rows = 0usize;
    let mut periodic = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let p = format!("{p}.schedule[{i}]");
        s.check_form(&p)?;
        if let Some(file) = &s.file {
            let text = loaded_text(file, s.loaded.as_ref(), &format!("{p}.file"))?;
            let room = MAX_CHANGES - rows;
            rows += csv::read_into(text, &format!("{p}.file"), file, shape, &mut once, room)?;
        } else if let Some(at) = s.at {
            if rows == MAX_CHANGES {
                return err(
                    &p,
                    format!("more than {MAX_CHANGES} one-off changes on one link"),
                );
            }
            rows += 1;
            s.one_off(&p)?
                .push_into(&mut once, SimTime(at.0 .0), shape, &p)?;
        } else if let Some(every) = s.every {
            periodic.push(Arc::new(s.periodic(
                every,
                shape,
                &format!("{stream}/{i}"),
                &p,
            )?));
        }
    }
    let [mut o0, mut o1] = once;
    o0.sort();
    o1.sort();
    let [t0, t1] = traces;
    let mk = |dir: usize, once: OnceChanges, trace: Option<MmTrace>| DirSchedule {
        dir,
        once: Arc::new(once),
        periodic: periodic
            .iter()
            .filter(|e: &&Arc<Periodic>| e.changes_dir(dir))
            .cloned()
            .collect(),
        outage,
        reorder,
        trace,
    };
    Ok([mk(0, o0, t0), mk(1, o1, t1)])
}

impl ScheduleSpec {
    /// Whether any value key (rate, delay, loss, up and their _ba) is given.
    fn any_value(&self) -> bool {
        self.rate.is_some()
            || self.rate_ba.is_some()
            || self.delay.is_some()
            || self.delay_ba.is_some()
            || self.loss.is_some()
            || self.loss_ba.is_some()
            || self.up.is_some()
    }

    /// Exactly one of the three forms, and only its keys.
    fn check_form(&self, p: &str) -> Result<(), ScenarioError> {
        let forms = [self.at.is_some(), self.every.is_some(), self.file.is_some()];
        if forms.iter().filter(|&&x| x).count() != 1 {
            return err(p, "expected exactly one of at (a one-off change), every (periodic) or file (a CSV of changes)");
        }
        if self.every.is_none() {
            for (k, set) in [
                ("start", self.start.is_some()),
                ("down_for", self.down_for.is_some()),
                ("down_p", self.down_p.is_some()),
            ] {
                if set {
                    return err(
                        format!("{p}.{k}"),
                        "only applies to a periodic entry (every)",
                    );
                }
            }
        }
        if self.file.is_none() && self.loaded.is_some() {
            return err(format!("{p}.loaded"), "only applies with file");
        }
        if self.file.is_some() && self.any_value() {
            return err(
                p,
                "a file entry takes its values from the file, not from keys",
            );
        }
        Ok(())
    }

    /// A one-off entry (`at`): its values, one each.
    fn one_off(&self, p: &str) -> Result<RowChange, ScenarioError> {
        if !self.any_value() {
            return err(p, "changes nothing: give rate, delay, loss or up");
        }
        let one = |v: &Option<Varying<RateQ>>, k: &str| {
            v.as_ref()
                .map(|v| fixed(v, &format!("{p}.{k}")).map(|r| r.0))
                .transpose()
        };
        let dur = |v: &Option<Varying<Duration>>, k: &str| {
            v.as_ref()
                .map(|v| fixed(v, &format!("{p}.{k}")).map(|d| d.0))
                .transpose()
        };
        let loss = |v: &Option<Varying<LossSpec>>, k: &str| {
            v.as_ref()
                .map(|v| {
                    let path = format!("{p}.{k}");
                    LossSpec::resolve(Some(&fixed(v, &path)?), &path)
                })
                .transpose()
        };
        Ok(RowChange {
            rate: one(&self.rate, "rate")?,
            rate_ba: one(&self.rate_ba, "rate_ba")?,
            delay: dur(&self.delay, "delay")?,
            delay_ba: dur(&self.delay_ba, "delay_ba")?,
            loss: loss(&self.loss, "loss")?,
            loss_ba: loss(&self.loss_ba, "loss_ba")?,
            up: self
                .up
                .as_ref()
                .map(|v| fixed(v, &format!("{p}.up")))
                .transpose()?,
        })
    }

    /// A periodic entry (`every`), its random stream named `stream`.
    fn periodic(
        &self,
        every: Duration,
        shape: LinkShape,
        stream: &str,
        p: &str,
    ) -> Result<Periodic, ScenarioError> {
        if every.0 < MIN_EVERY {
            return err(format!("{p}.every"), "must be at least 1ms");
        }
        if !self.any_value() && self.down_for.is_none() {
            return err(p, "changes nothing: give rate, delay, loss, up or down_for");
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
        let loss = |v: &Option<Varying<LossSpec>>,
                    k: &str|
         -> Result<Option<Varying<LossModel>>, ScenarioError> {
            let one = |l: &LossSpec, path: &str| LossSpec::resolve(Some(l), path);
            match v {
                None => Ok(None),
                Some(Varying::One(l)) => Ok(Some(Varying::One(one(l, &format!("{p}.{k}"))?))),
                Some(Varying::Cycle(ls)) => Ok(Some(Varying::Cycle(
                    ls.iter()
                        .enumerate()
                        .map(|(j, l)| one(l, &format!("{p}.{k}[{j}]")))
                        .collect::<Result<_, _>>()?,
                ))),
                Some(Varying::Range(..)) => err(
                    format!("{p}.{k}"),
                    "takes one loss model or a list, not { min, max }",
                ),
            }
        };
        let (r0, r1) = (rate(&self.rate, "rate")?, rate(&self.rate_ba, "rate_ba")?);
        let (d0, d1) = (dur(&self.delay, "delay")?, dur(&self.delay_ba, "delay_ba")?);
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
        let up = match &self.up {
            Some(Varying::Range(..)) => {
                return err(format!("{p}.up"), "takes true, false or a list of them")
            }
            v => v.clone(),
        };
        let down_for = dur(&self.down_for, "down_for")?;
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
        let down_p = match self.down_p {
            Some(_) if down_for.is_none() => {
                return err(format!("{p}.down_p"), "only applies with down_for");
            }
            Some(x) => check_prob(format!("{p}.down_p"), x)?,
            None => 1.0,
        };
        Ok(Periodic {
            start: SimTime(self.start.map_or(0, |d| d.0 .0)),
            every: every.0,
            rate: [r0, r1],
            mirror_rate,
            delay: [d0, d1],
            mirror_delay,
            loss: [loss(&self.loss, "loss")?, loss(&self.loss_ba, "loss_ba")?],
            up,
            down_for,
            down_p,
            stream: stream.to_string(),
        })
    }
}
