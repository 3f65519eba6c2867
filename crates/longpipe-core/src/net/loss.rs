//! Per-direction loss models, applied to each packet as it leaves a transmitter.

use crate::rng::RngStream;
use crate::scenario::LossModel;

#[derive(Debug, Clone)]
pub struct LossState {
    model: LossModel,
    rng: RngStream,
    /// Gilbert-Elliott: true while in the bad state.
    bad: bool,
    /// Packets offered so far (the index `list` refers to).
    index: u64,
    /// Next position in the sorted drop list.
    next: usize,
}

impl LossState {
    pub fn new(model: LossModel, rng: RngStream) -> Self {
        LossState {
            model,
            rng,
            bad: false,
            index: 0,
            next: 0,
        }
    }

    pub fn is_none(&self) -> bool {
        matches!(self.model, LossModel::None)
    }

    /// Decides the fate of the next packet of `bytes` octets; true = lost.
    pub fn lose(&mut self, bytes: u32) -> bool {
        let idx = self.index;
        self.index += 1;
        match &self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.rng.bernoulli(*p),
            LossModel::Ber { ber } => {
                // P = 1 - (1 - ber)^(8 * bytes), computed stably for tiny ber.
                let p = -f64::exp_m1(8.0 * bytes as f64 * f64::ln_1p(-*ber));
                self.rng.bernoulli(p)
            }
            LossModel::Gilbert {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                // Lose with the current state's probability, then step the chain.
                let lost = self
                    .rng
                    .bernoulli(if self.bad { *loss_bad } else { *loss_good });
                let flip = self.rng.bernoulli(if self.bad { *p_bg } else { *p_gb });
                if flip {
                    self.bad = !self.bad;
                }
                lost
            }
            LossModel::List { drop } => {
                if drop.get(self.next) == Some(&idx) {
                    self.next += 1;
                    true
                } else {
                    false
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn list_drops_exact_indices() {
        let mut l = LossState::new(LossModel::List { drop: vec![1, 4] }, RngStream::new(1, "x"));
        let v: Vec<bool> = (0..6).map(|_| l.lose(100)).collect();
        assert_eq!(v, [false, true, false, false, true, false]);
    }
    #[test]
    fn ber_is_length_aware() {
        let n = 100_000;
        let mut l = LossState::new(LossModel::Ber { ber: 1e-5 }, RngStream::new(3, "ber"));
        let lost = (0..n).filter(|_| l.lose(1500)).count() as f64 / n as f64;
        let expect = 1.0 - (1.0f64 - 1e-5).powi(12000);
        assert!((lost - expect).abs() < 0.01, "{lost} vs {expect}");
        let mut l = LossState::new(LossModel::Ber { ber: 1e-5 }, RngStream::new(3, "ber"));
        let lost40 = (0..n).filter(|_| l.lose(40)).count() as f64 / n as f64;
        assert!(lost40 < lost / 10.0);
    }
    #[test]
    fn gilbert_mean_loss() {
        // stationary P(bad) = p_gb / (p_gb + p_bg) = 0.01/0.11
        let m = LossModel::Gilbert {
            p_gb: 0.01,
            p_bg: 0.1,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut l = LossState::new(m, RngStream::new(9, "g"));
        let n = 400_000;
        let lost = (0..n).filter(|_| l.lose(1000)).count() as f64 / n as f64;
        assert!((lost - 0.01 / 0.11).abs() < 0.01, "{lost}");
    }
}
