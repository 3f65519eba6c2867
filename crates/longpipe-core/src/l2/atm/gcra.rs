//! Usage parameter control: the Generic Cell Rate Algorithm GCRA(I, L) in its virtual
//! scheduling form (ITU-T I.371 / ATM Forum TM 4.0 §4.4.3), and the VBR sustainable
//! rate test GCRA(1/SCR, BT) with burst tolerance BT = (MBS − 1)(1/SCR − 1/PCR).
//!
//! A cell arriving at tₐ is non-conforming if tₐ < TAT − L, and then TAT is unchanged;
//! otherwise TAT = max(tₐ, TAT) + I. The first cell sets TAT = tₐ. A policer that tags
//! (seed 002's VBR) turns non-conforming CLP = 0 cells into CLP = 1 cells; CLP = 1
//! cells are not tested (the CLP = 0 contract).
//!
//! Time is kept exactly: in units of 1/(SCR·PCR) ns, I and L are integers
//! (I = 424·10⁹·PCR, L = (MBS − 1)·424·10⁹·(PCR − SCR) with rates in bit/s).

use super::cell::CELL_BITS;
use crate::time::{Rate, SimTime};

#[derive(Debug, Clone)]
pub struct Gcra {
    /// Time units per nanosecond.
    scale: u128,
    /// Increment and limit, in time units.
    i: u128,
    l: u128,
    tat: Option<u128>,
}

impl Gcra {
    /// GCRA(I, L) with I and L in nanoseconds.
    pub fn new(i_ns: u64, l_ns: u64) -> Self {
        Gcra {
            scale: 1,
            i: i_ns as u128,
            l: l_ns as u128,
            tat: None,
        }
    }

    /// The sustainable-rate test GCRA(1/SCR, BT) of a VBR contract: SCR and PCR in
    /// bit/s of cells (53 octets), MBS in cells. Needs 0 < SCR ≤ PCR and MBS ≥ 1.
    pub fn vbr(scr: Rate, pcr: Rate, mbs: u64) -> Self {
        let (s, p) = (scr.bps() as u128, pcr.bps() as u128);
        debug_assert!(s > 0 && s <= p && mbs >= 1);
        let bits = CELL_BITS as u128 * 1_000_000_000;
        Gcra {
            scale: s * p,
            i: bits * p,
            l: (mbs.saturating_sub(1) as u128)
                .saturating_mul(bits)
                .saturating_mul(p - s),
            tat: None,
        }
    }

    /// Tests a cell arriving at `t`: true if it conforms (and TAT advances).
    pub fn conforms(&mut self, t: SimTime) -> bool {
        let ta = (t.0 as u128).saturating_mul(self.scale);
        let tat = *self.tat.get_or_insert(ta);
        if ta.saturating_add(self.l) < tat {
            return false;
        }
        self.tat = Some(ta.max(tat).saturating_add(self.i));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(g: &mut Gcra, arrivals: &[u64]) -> Vec<bool> {
        arrivals.iter().map(|&t| g.conforms(SimTime(t))).collect()
    }

    #[test]
    fn peak_rate_test_without_tolerance() {
        // GCRA(10, 0): one cell per 10 ns at most
        let mut g = Gcra::new(10, 0);
        assert_eq!(
            run(&mut g, &[0, 10, 19, 20, 35, 40, 41, 60]),
            [true, true, false, true, true, false, false, true]
        );
        // TAT after 35 is 45; 40 and 41 are early (TAT unchanged), 60 is late: TAT = 70
        assert_eq!(run(&mut g, &[69, 70]), [false, true]);
    }

    #[test]
    fn burst_tolerance_admits_a_burst_then_the_rate() {
        // GCRA(10, 25): back-to-back cells every 2 ns; TAT grows by 8 per cell
        let mut g = Gcra::new(10, 25);
        let t: Vec<u64> = (0..6).map(|k| 2 * k).collect();
        // TATs: 10, 20, 30, 40 (cell at 6: 6 >= 30-25), cell at 8: 8 < 40-25 → no
        assert_eq!(run(&mut g, &t), [true, true, true, true, false, false]);
        // after an idle spell the bucket drains: at 100 TAT is reset to 100 + 10
        assert_eq!(
            run(&mut g, &[100, 101, 102, 103]),
            [true, true, true, false]
        );
    }

    #[test]
    fn vbr_burst_tolerance_lets_mbs_cells_through_at_the_peak_rate() {
        // SCR = 1/10 of PCR, MBS = 5: exactly 5 cells at PCR conform, the 6th does not
        let pcr = Rate(424_000_000); // one cell per 1000 ns
        let scr = Rate(42_400_000); // one cell per 10 000 ns
        let mut g = Gcra::vbr(scr, pcr, 5);
        let t: Vec<u64> = (0..7).map(|k| 1000 * k).collect();
        assert_eq!(
            run(&mut g, &t),
            [true, true, true, true, true, false, false]
        );
        // sustained at SCR everything conforms again
        let mut g = Gcra::vbr(scr, pcr, 5);
        let t: Vec<u64> = (0..50).map(|k| 10_000 * k).collect();
        assert!(run(&mut g, &t).iter().all(|&c| c));
        // MBS = 1: no tolerance beyond the rate
        let mut g = Gcra::vbr(scr, pcr, 1);
        assert_eq!(
            run(&mut g, &[0, 1000, 9999, 10_000]),
            [true, false, false, true]
        );
    }

    #[test]
    fn exact_with_rates_that_do_not_divide_a_nanosecond() {
        // 44.736 Mbit/s: a cell every 9477.9 ns; GCRA(1/SCR, 0) with SCR = PCR
        let r = Rate(44_736_000);
        let mut g = Gcra::vbr(r, r, 1);
        // cells at k·9478 ns (slightly slower than SCR) always conform
        assert!((0..10_000).all(|k| g.conforms(SimTime(k * 9478))));
        // cells at k·9477 ns: a conforming cell at tₐ sets TAT = tₐ + 9477.8, so the
        // next arrival, 9477 ns later, is 0.8 ns early and refused; the one after conforms
        let mut g = Gcra::vbr(r, r, 1);
        let ok: Vec<bool> = (0..6).map(|k| g.conforms(SimTime(k * 9477))).collect();
        assert_eq!(ok, [true, false, true, false, true, false]);
    }
}
