//! Counters that elements keep from time zero, and the one rule that turns two
//! snapshots into the figures of a measured interval.
//!
//! Elements never look at the warmup time: they count everything. The driver takes a
//! snapshot when the measured interval opens and another when it closes, and reports
//! `end.since(&start)`. Each field says how: a plain `u64` counter is the difference,
//! a [`Peak`] (a high-water mark over the whole run) and a [`Last`] (a state, such as a
//! completion time) are taken from the closing snapshot, [`Samples`] keep the samples
//! recorded in between. [`counters!`](crate::counters) declares a struct of such fields
//! with its `since`, so no counter is ever copied field by field.

use schemars::JsonSchema;
use serde::Serialize;

/// The figures of the interval between a snapshot `base` and `self` (taken later).
pub trait Since {
    fn since(&self, base: &Self) -> Self;
}

impl Since for u64 {
    fn since(&self, base: &Self) -> Self {
        self - base
    }
}

impl Since for u128 {
    fn since(&self, base: &Self) -> Self {
        self - base
    }
}

impl<T: Since> Since for Box<T> {
    fn since(&self, base: &Self) -> Self {
        Box::new((**self).since(base))
    }
}

impl Since for () {
    fn since(&self, _: &Self) -> Self {}
}

/// A high-water mark over the whole run (not reset by the measured interval).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Peak(pub u64);

impl Peak {
    pub fn update(&mut self, v: u64) {
        self.0 = self.0.max(v);
    }
}

impl Since for Peak {
    fn since(&self, _: &Self) -> Self {
        *self
    }
}

/// A state reported as it is at the end (e.g. a completion time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Last<T>(pub T);

impl<T: Clone> Since for Last<T> {
    fn since(&self, _: &Self) -> Self {
        self.clone()
    }
}

/// Samples in the order recorded; the interval keeps those recorded after `base`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples(pub Vec<u64>);

impl Since for Samples {
    fn since(&self, base: &Self) -> Self {
        Samples(self.0[base.0.len().min(self.0.len())..].to_vec())
    }
}

/// Declares a struct of counters (`u64`, [`Peak`], [`Last`], [`Samples`], or another
/// counters struct) with `Debug, Clone, Default` and [`Since`] field by field.
/// Attributes on the struct and its fields are kept (e.g. `#[derive(Serialize)]`,
/// `#[serde(skip)]`).
#[macro_export]
macro_rules! counters {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($(#[$fm:meta])* $fvis:vis $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default)]
        $vis struct $name { $($(#[$fm])* $fvis $f: $t),* }
        impl $crate::stats::Since for $name {
            fn since(&self, base: &Self) -> Self {
                $name { $($f: $crate::stats::Since::since(&self.$f, &base.$f)),* }
            }
        }
    };
}

/// Jain's fairness index of the flows' (or users') goodputs (None without flows or goodput).
pub fn fairness_jain(goodputs: &[f64]) -> Option<f64> {
    let sum: f64 = goodputs.iter().sum();
    let sq: f64 = goodputs.iter().map(|x| x * x).sum();
    (!goodputs.is_empty() && sq > 0.0).then(|| sum * sum / (goodputs.len() as f64 * sq))
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::counters! {
        struct C {
            n: u64,
            peak: Peak,
            done: Last<Option<u64>>,
            delays: Samples,
        }
    }

    #[test]
    fn since_takes_each_field_by_its_rule() {
        let base = C {
            n: 3,
            peak: Peak(10),
            done: Last(None),
            delays: Samples(vec![1, 2]),
        };
        let end = C {
            n: 10,
            peak: Peak(12),
            done: Last(Some(7)),
            delays: Samples(vec![1, 2, 5, 6]),
        };
        let d = end.since(&base);
        assert_eq!(d.n, 7);
        assert_eq!(d.peak, Peak(12));
        assert_eq!(d.done, Last(Some(7)));
        assert_eq!(d.delays, Samples(vec![5, 6]));
        let mut p = Peak(4);
        p.update(2);
        p.update(9);
        assert_eq!(p, Peak(9));
    }

    #[test]
    fn jain_index() {
        assert_eq!(fairness_jain(&[3.0, 3.0, 3.0]), Some(1.0));
        assert_eq!(fairness_jain(&[1.0, 0.0]), Some(0.5));
        // (1 + 3)² / (2 · (1 + 9)) = 0.8
        assert_eq!(fairness_jain(&[1.0, 3.0]), Some(0.8));
        assert_eq!(fairness_jain(&[]), None);
        assert_eq!(fairness_jain(&[0.0, 0.0]), None);
    }
}
