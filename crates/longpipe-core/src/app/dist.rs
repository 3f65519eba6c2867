//! Random quantities of an application's workload (sizes, times, counts): the
//! scenario's `{ kind = "...", ... }` tables ([`DistSpec`]), resolved into a [`Dist`]
//! that draws from a seeded [`RngStream`].
//!
//! Kinds, with the conventions of ns-3's random variables where ns-3 has one:
//! - `fixed` (`value`; a bare quantity such as `"10KB"` means this too);
//! - `uniform` (`min`, `max`): min + (max − min)·U;
//! - `exponential` (`mean`): −mean·ln(1 − U);
//! - `lognormal` (`mean`, `sd` of the distribution itself, not of its logarithm):
//!   σ² = ln(1 + sd²/mean²), μ = ln(mean) − σ²/2 (ns-3 `ThreeGppHttpVariables`), the
//!   normal deviate by Box–Muller; optional truncation to [`min`, `max`) by drawing
//!   again, as ns-3 does for the 3GPP object sizes;
//! - `pareto` (`shape` α, `scale` = the minimum k, optional `max`): k / U^(1/α), drawn
//!   again while above `max` (ns-3 `ParetoRandomVariable` with a bound);
//! - `empirical` (`cdf = [[value, P(X <= value)], ...]`, or `file = "x.csv"` with those
//!   two columns, read by the front end): the inverse CDF with linear interpolation
//!   between points (ns-2's `EmpiricalRandomVariable` in continuous mode); the first
//!   point's probability is the mass at its value, the last must be 1.
//!
//! A quantity's dimension (bytes, time, plain number) is fixed by the key it sits under;
//! values keep the units of the rest of the scenario (`"10KB"`, `"30s"`).
//! Truncation by redrawing gives up after 10 000 draws and clamps (a region of
//! negligible probability is a configuration error, caught at resolution when the
//! bounds exclude every value of a fixed or bounded kind).
//!
//! Why one file of ~620 lines (about 130 of tests): the spec, its resolution with a
//! path-naming error per key, and the sampling of six kinds, which share the checks.

use crate::error::{err, ScenarioError};
use crate::rng::RngStream;
use crate::units::{parse_bytes, parse_duration};
use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// A number or a quantity with its unit, as written.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Quantity {
    Number(f64),
    Text(String),
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Quantity::Number(v) => write!(f, "{v}"),
            Quantity::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// What a distribution's values measure; fixes how its quantities are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    /// Bytes ("10KB"; a bare number is bytes).
    Bytes,
    /// Time ("30s"; the unit is required), in nanoseconds.
    Time,
    /// A plain number (a count).
    Count,
}

impl Dim {
    /// The value of `q` in the base unit (bytes, nanoseconds, or the number itself).
    pub fn value(self, q: &Quantity, path: &str) -> Result<f64, ScenarioError> {
        let text = match q {
            Quantity::Number(v) if !v.is_finite() => {
                return err(path, format!("expected a finite number, got {v}"))
            }
            Quantity::Number(v) if self == Dim::Count => return Ok(*v),
            Quantity::Number(v) => format!("{v}"),
            Quantity::Text(s) if self == Dim::Count => {
                return s
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| {
                        ScenarioError::new(path, format!("expected a number, got {s:?}"))
                    })
            }
            Quantity::Text(s) => s.clone(),
        };
        let v = match self {
            Dim::Bytes => parse_bytes(&text).map(|b| b as f64),
            Dim::Time => parse_duration(&text).map(|d| d.0 as f64),
            Dim::Count => unreachable!("handled above"),
        };
        v.map_err(|e| ScenarioError::new(path, e))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DistKind {
    Fixed,
    Uniform,
    Exponential,
    Lognormal,
    Pareto,
    Empirical,
}

/// A file's content put into the scenario by the front end (`file` names it).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Loaded {
    pub file: String,
    pub text: String,
}

/// A distribution table: `{ kind = "lognormal", mean = "10KB", sd = "25KB" }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistTable {
    pub kind: DistKind,
    /// fixed: the value.
    #[serde(default)]
    pub value: Option<Quantity>,
    /// exponential, lognormal: the mean.
    #[serde(default)]
    pub mean: Option<Quantity>,
    /// lognormal: the standard deviation (of the values, not of their logarithm).
    #[serde(default)]
    pub sd: Option<Quantity>,
    /// uniform: lower end; lognormal: truncation (values below are drawn again).
    #[serde(default)]
    pub min: Option<Quantity>,
    /// uniform: upper end; lognormal, pareto: truncation (values at or above are drawn
    /// again).
    #[serde(default)]
    pub max: Option<Quantity>,
    /// pareto: the shape α (a number > 0).
    #[serde(default)]
    pub shape: Option<f64>,
    /// pareto: the scale k (the smallest value).
    #[serde(default)]
    pub scale: Option<Quantity>,
    /// empirical: points [value, cumulative probability], values and probabilities
    /// non-decreasing, the last probability 1.
    #[serde(default)]
    pub cdf: Option<Vec<(Quantity, f64)>>,
    /// empirical: a CSV file of `value,probability` rows (read by the front end;
    /// relative to the scenario file).
    #[serde(default)]
    pub file: Option<String>,
    /// The content of `file` (set by the front end).
    #[serde(default)]
    pub loaded: Option<Loaded>,
}

/// A distribution as written: a bare quantity (fixed) or a table.
#[derive(Debug, Clone, JsonSchema)]
#[serde(untagged)]
pub enum DistSpec {
    Fixed(Quantity),
    Table(Box<DistTable>),
}

impl<'de> Deserialize<'de> for DistSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DistSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a quantity such as \"10KB\" or \"30s\", or a table such as \
                     { kind = \"exponential\", mean = \"30s\" }",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DistSpec, E> {
                Ok(DistSpec::Fixed(Quantity::Text(s.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DistSpec, E> {
                Ok(DistSpec::Fixed(Quantity::Number(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DistSpec, E> {
                Ok(DistSpec::Fixed(Quantity::Number(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DistSpec, E> {
                Ok(DistSpec::Fixed(Quantity::Number(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DistSpec, A::Error> {
                DistTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|t| DistSpec::Table(Box::new(t)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A resolved distribution; values in the base unit of its dimension.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    Fixed(f64),
    Uniform {
        min: f64,
        max: f64,
    },
    Exponential {
        mean: f64,
    },
    LogNormal {
        mu: f64,
        sigma: f64,
        min: f64,
        max: f64,
    },
    Pareto {
        shape: f64,
        scale: f64,
        max: f64,
    },
    /// (value, cumulative probability), both non-decreasing, the last probability 1.
    Empirical(Vec<(f64, f64)>),
}

/// Draws before a truncated distribution gives up and clamps.
const MAX_REDRAWS: u32 = 10_000;

impl Dist {
    /// A lognormal distribution of the given mean and standard deviation (of the values
    /// themselves, as 3GPP and ns-3 state them), truncated to [min, max).
    pub fn lognormal(mean: f64, sd: f64, min: f64, max: f64) -> Dist {
        let a = (1.0 + (sd * sd) / (mean * mean)).ln();
        Dist::LogNormal {
            mu: mean.ln() - 0.5 * a,
            sigma: a.sqrt(),
            min,
            max,
        }
    }

    /// One draw.
    pub fn sample(&self, rng: &mut RngStream) -> f64 {
        match self {
            Dist::Fixed(v) => *v,
            Dist::Uniform { min, max } => min + (max - min) * rng.uniform(),
            Dist::Exponential { mean } => -mean * (1.0 - rng.uniform()).ln(),
            Dist::LogNormal {
                mu,
                sigma,
                min,
                max,
            } => {
                let mut v = 0.0;
                for _ in 0..MAX_REDRAWS {
                    v = (mu + sigma * normal(rng)).exp();
                    if v >= *min && v < *max {
                        return v;
                    }
                }
                v.clamp(*min, *max)
            }
            Dist::Pareto { shape, scale, max } => {
                let mut v = 0.0;
                for _ in 0..MAX_REDRAWS {
                    // U in (0, 1]: never a division by zero
                    v = scale / (1.0 - rng.uniform()).powf(1.0 / shape);
                    if v < *max {
                        return v;
                    }
                }
                v.min(*max)
            }
            Dist::Empirical(pts) => {
                let u = rng.uniform();
                let i = pts.partition_point(|p| p.1 < u);
                match (i.checked_sub(1).map(|j| pts[j]), pts.get(i)) {
                    (_, None) => pts[pts.len() - 1].0,
                    (None, Some(p)) => p.0,
                    (Some(a), Some(b)) if b.1 > a.1 => a.0 + (b.0 - a.0) * (u - a.1) / (b.1 - a.1),
                    (_, Some(b)) => b.0,
                }
            }
        }
    }

    /// The mean (of the untruncated form for the truncated kinds; for estimates).
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Fixed(v) => *v,
            Dist::Uniform { min, max } => (min + max) / 2.0,
            Dist::Exponential { mean } => *mean,
            Dist::LogNormal { mu, sigma, max, .. } => (mu + sigma * sigma / 2.0).exp().min(*max),
            Dist::Pareto { shape, scale, max } if *shape > 1.0 => {
                (shape * scale / (shape - 1.0)).min(*max)
            }
            Dist::Pareto { max, .. } => *max,
            Dist::Empirical(pts) => {
                let mut m = pts[0].0 * pts[0].1;
                for w in pts.windows(2) {
                    m += (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1);
                }
                m
            }
        }
    }
}

/// A standard normal deviate (Box–Muller, the cosine branch: one deviate per two
/// uniforms, so that a stream's draws do not depend on a cached second deviate).
fn normal(rng: &mut RngStream) -> f64 {
    let u1 = 1.0 - rng.uniform(); // (0, 1]
    let u2 = rng.uniform();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl DistSpec {
    /// Resolves a distribution of dimension `dim`; `path` names the key.
    pub fn resolve(&self, dim: Dim, path: &str) -> Result<Dist, ScenarioError> {
        let t = match self {
            DistSpec::Fixed(q) => {
                let v = dim.value(q, path)?;
                return check_nonneg(path, v).map(Dist::Fixed);
            }
            DistSpec::Table(t) => t,
        };
        let p = |k: &str| format!("{path}.{k}");
        let need = |q: &Option<Quantity>, k: &str| -> Result<f64, ScenarioError> {
            match q {
                Some(q) => dim.value(q, &p(k)).and_then(|v| check_nonneg(&p(k), v)),
                None => err(
                    p(k),
                    format!("required for kind = \"{}\"", kind_name(t.kind)),
                ),
            }
        };
        let opt = |q: &Option<Quantity>, k: &str| -> Result<Option<f64>, ScenarioError> {
            q.as_ref()
                .map(|q| dim.value(q, &p(k)).and_then(|v| check_nonneg(&p(k), v)))
                .transpose()
        };
        let allowed: &[&str] = match t.kind {
            DistKind::Fixed => &["value"],
            DistKind::Uniform => &["min", "max"],
            DistKind::Exponential => &["mean"],
            DistKind::Lognormal => &["mean", "sd", "min", "max"],
            DistKind::Pareto => &["shape", "scale", "max"],
            DistKind::Empirical => &["cdf", "file", "loaded"],
        };
        let given = [
            ("value", t.value.is_some()),
            ("mean", t.mean.is_some()),
            ("sd", t.sd.is_some()),
            ("min", t.min.is_some()),
            ("max", t.max.is_some()),
            ("shape", t.shape.is_some()),
            ("scale", t.scale.is_some()),
            ("cdf", t.cdf.is_some()),
            ("file", t.file.is_some()),
            ("loaded", t.loaded.is_some()),
        ];
        for (k, present) in given {
            if present && !allowed.contains(&k) {
                return err(
                    p(k),
                    format!(
                        "does not apply to kind = \"{}\" (its keys: {})",
                        kind_name(t.kind),
                        allowed
                            .iter()
                            .filter(|k| **k != "loaded")
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        Ok(match t.kind {
            DistKind::Fixed => Dist::Fixed(need(&t.value, "value")?),
            DistKind::Uniform => {
                let (min, max) = (need(&t.min, "min")?, need(&t.max, "max")?);
                if max < min {
                    return err(p("max"), "must be at least min");
                }
                Dist::Uniform { min, max }
            }
            DistKind::Exponential => {
                let mean = need(&t.mean, "mean")?;
                if mean <= 0.0 {
                    return err(p("mean"), "must be positive");
                }
                Dist::Exponential { mean }
            }
            DistKind::Lognormal => {
                let mean = need(&t.mean, "mean")?;
                let sd = need(&t.sd, "sd")?;
                if mean <= 0.0 {
                    return err(p("mean"), "must be positive");
                }
                let min = opt(&t.min, "min")?.unwrap_or(0.0);
                let max = opt(&t.max, "max")?.unwrap_or(f64::INFINITY);
                if max <= min {
                    return err(p("max"), "must exceed min");
                }
                Dist::lognormal(mean, sd, min, max)
            }
            DistKind::Pareto => {
                let shape = t.shape.ok_or_else(|| {
                    ScenarioError::new(p("shape"), "required for kind = \"pareto\"")
                })?;
                if !(shape.is_finite() && shape > 0.0) {
                    return err(
                        p("shape"),
                        format!("must be a positive number, got {shape}"),
                    );
                }
                let scale = need(&t.scale, "scale")?;
                if scale <= 0.0 {
                    return err(p("scale"), "must be positive");
                }
                let max = opt(&t.max, "max")?.unwrap_or(f64::INFINITY);
                if max <= scale {
                    return err(p("max"), "must exceed scale (the smallest value)");
                }
                Dist::Pareto { shape, scale, max }
            }
            DistKind::Empirical => Dist::Empirical(empirical(t, dim, path)?),
        })
    }
}

fn kind_name(k: DistKind) -> &'static str {
    match k {
        DistKind::Fixed => "fixed",
        DistKind::Uniform => "uniform",
        DistKind::Exponential => "exponential",
        DistKind::Lognormal => "lognormal",
        DistKind::Pareto => "pareto",
        DistKind::Empirical => "empirical",
    }
}

fn check_nonneg(path: &str, v: f64) -> Result<f64, ScenarioError> {
    if !(v.is_finite() && v >= 0.0) {
        return err(path, format!("must be a non-negative number, got {v}"));
    }
    Ok(v)
}

/// The points of an empirical distribution, from `cdf` or the loaded file.
fn empirical(t: &DistTable, dim: Dim, path: &str) -> Result<Vec<(f64, f64)>, ScenarioError> {
    let mut pts = Vec::new();
    match (&t.cdf, &t.file, &t.loaded) {
        (Some(_), Some(_), _) => return err(format!("{path}.file"), "give either cdf or file"),
        (Some(cdf), None, _) => {
            for (i, (q, pr)) in cdf.iter().enumerate() {
                let v = dim.value(q, &format!("{path}.cdf[{i}]"))?;
                pts.push((v, *pr));
            }
        }
        (None, Some(f), Some(l)) if &l.file == f => {
            for (n, line) in l.text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let here = format!("{path}.file: {f}, line {}", n + 1);
                let (a, b) = line
                    .split_once(',')
                    .ok_or_else(|| ScenarioError::new(&here, "expected value,probability"))?;
                if n == 0 && b.trim().parse::<f64>().is_err() {
                    continue; // a header row
                }
                let q = match a.trim().parse::<f64>() {
                    Ok(v) => Quantity::Number(v),
                    Err(_) => Quantity::Text(a.trim().to_string()),
                };
                let v = dim.value(&q, &here)?;
                let pr: f64 = b.trim().parse().map_err(|_| {
                    ScenarioError::new(&here, format!("expected a probability, got {:?}", b.trim()))
                })?;
                pts.push((v, pr));
            }
        }
        (None, Some(_), _) => {
            return err(
                format!("{path}.file"),
                "the file was not read (give the scenario through longpipe or its Python API, which read it)",
            )
        }
        (None, None, _) => return err(format!("{path}.cdf"), "required for kind = \"empirical\" (or file)"),
    }
    if pts.is_empty() {
        return err(format!("{path}.cdf"), "needs at least one point");
    }
    let mut prev = (f64::NEG_INFINITY, 0.0);
    for (i, &(v, pr)) in pts.iter().enumerate() {
        if !(0.0..=1.0).contains(&pr) || pr < prev.1 || v < prev.0 || !v.is_finite() || v < 0.0 {
            return err(
                format!("{path}.cdf[{i}]"),
                "values and probabilities must be non-decreasing, values non-negative, probabilities in [0, 1]",
            );
        }
        prev = (v, pr);
    }
    if (prev.1 - 1.0).abs() > 1e-9 {
        return err(
            format!("{path}.cdf"),
            format!("the last probability must be 1, got {}", prev.1),
        );
    }
    Ok(pts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str) -> DistSpec {
        serde_json::from_str(json).unwrap()
    }

    fn mean_of(d: &Dist, n: usize) -> f64 {
        let mut r = RngStream::new(3, "test");
        (0..n).map(|_| d.sample(&mut r)).sum::<f64>() / n as f64
    }

    #[test]
    fn quantities_keep_the_scenario_units() {
        assert_eq!(
            spec(r#""10KB""#).resolve(Dim::Bytes, "x").unwrap(),
            Dist::Fixed(10_000.0)
        );
        assert_eq!(
            spec("1500").resolve(Dim::Bytes, "x").unwrap(),
            Dist::Fixed(1500.0)
        );
        assert_eq!(
            spec(r#""30s""#).resolve(Dim::Time, "x").unwrap(),
            Dist::Fixed(30e9)
        );
        let e = spec("30").resolve(Dim::Time, "a.think").unwrap_err();
        assert_eq!(e.path, "a.think");
        assert!(e.msg.contains("ambiguous"), "{e}");
        let e = spec(r#"{"kind":"exponential"}"#)
            .resolve(Dim::Time, "a.b")
            .unwrap_err();
        assert_eq!(e.path, "a.b.mean");
        let e = spec(r#"{"kind":"exponential","mean":"1s","sd":"1s"}"#)
            .resolve(Dim::Time, "a.b")
            .unwrap_err();
        assert_eq!(e.path, "a.b.sd");
        assert!(e.msg.contains("mean"), "names the keys that apply: {e}");
    }

    #[test]
    fn means_match_the_parameters() {
        let n = 200_000;
        let exp = spec(r#"{"kind":"exponential","mean":"30s"}"#)
            .resolve(Dim::Time, "x")
            .unwrap();
        assert!((mean_of(&exp, n) / 30e9 - 1.0).abs() < 0.01);
        // untruncated lognormal of mean 10710, sd 25032 (3GPP main object)
        let ln = spec(r#"{"kind":"lognormal","mean":10710,"sd":25032}"#)
            .resolve(Dim::Bytes, "x")
            .unwrap();
        assert!(
            (mean_of(&ln, 2_000_000) / 10710.0 - 1.0).abs() < 0.03,
            "{}",
            mean_of(&ln, n)
        );
        // pareto α = 3, k = 2: mean αk/(α−1) = 3
        let pa = spec(r#"{"kind":"pareto","shape":3,"scale":2}"#)
            .resolve(Dim::Count, "x")
            .unwrap();
        assert!((mean_of(&pa, n) - 3.0).abs() < 0.03);
        let u = spec(r#"{"kind":"uniform","min":"1KB","max":"3KB"}"#)
            .resolve(Dim::Bytes, "x")
            .unwrap();
        assert!((mean_of(&u, n) - 2000.0).abs() < 10.0);
    }

    #[test]
    fn truncation_and_empirical_inverse() {
        let d = spec(r#"{"kind":"lognormal","mean":7758,"sd":126168,"min":50,"max":2000000}"#)
            .resolve(Dim::Bytes, "x")
            .unwrap();
        let mut r = RngStream::new(1, "t");
        for _ in 0..10_000 {
            let v = d.sample(&mut r);
            assert!((50.0..2e6).contains(&v), "{v}");
        }
        // half the mass at 1000 B, the rest spread linearly up to 3000 B
        let e = spec(r#"{"kind":"empirical","cdf":[[1000,0.5],[3000,1.0]]}"#)
            .resolve(Dim::Bytes, "x")
            .unwrap();
        assert_eq!(e.mean(), 1500.0);
        assert!((mean_of(&e, 200_000) - 1500.0).abs() < 10.0);
        let bad = spec(r#"{"kind":"empirical","cdf":[[1000,0.5],[500,1.0]]}"#)
            .resolve(Dim::Bytes, "y")
            .unwrap_err();
        assert_eq!(bad.path, "y.cdf[1]");
        let bad = spec(r#"{"kind":"empirical","cdf":[[1000,0.5]]}"#)
            .resolve(Dim::Bytes, "y")
            .unwrap_err();
        assert!(bad.msg.contains("last probability"), "{bad}");
        // a loaded file, with a header row
        let f = spec(
            r#"{"kind":"empirical","file":"s.csv","loaded":{"file":"s.csv","text":"size,p\n1KB,0.5\n3KB,1\n"}}"#,
        )
        .resolve(Dim::Bytes, "z")
        .unwrap();
        assert_eq!(f, Dist::Empirical(vec![(1000.0, 0.5), (3000.0, 1.0)]));
    }

    #[test]
    fn same_stream_same_draws() {
        let d = spec(r#"{"kind":"exponential","mean":"1s"}"#)
            .resolve(Dim::Time, "x")
            .unwrap();
        let a: Vec<f64> = {
            let mut r = RngStream::new(9, "app/0/think");
            (0..5).map(|_| d.sample(&mut r)).collect()
        };
        let b: Vec<f64> = {
            let mut r = RngStream::new(9, "app/0/think");
            (0..5).map(|_| d.sample(&mut r)).collect()
        };
        assert_eq!(a, b);
    }
}
