//! Windowed running maximum (Kathleen Nichols' algorithm as Linux `lib/win_minmax.c`):
//! the best, second-best and third-best samples of a window, so the maximum over the
//! last `win` time units is kept in constant space. BBR's bandwidth filter uses it with
//! time counted in round trips.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

#[derive(Debug, Clone, Default)]
pub struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Forgets everything: the window holds only (t, v).
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// Linux `minmax_running_max`: adds measurement `v` at time `t`, returns the max over
    /// the window.
    pub fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if v >= self.s[0].v || t - self.s[2].t > win {
            return self.reset(t, v); // a new maximum, or nothing left in the window
        }
        if v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// Linux `minmax_subwin_update`: ages the three choices through the window.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t - self.s[0].t;
        if dt > win {
            // the best left the window: promote the 2nd and 3rd (maybe twice)
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t - self.s[0].t > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // a quarter of the window without a new 2nd choice: take one from it
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // half the window without a new 3rd choice
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_expires_after_the_window() {
        let mut m = MinMax::default();
        assert_eq!(m.running_max(10, 0, 100), 100);
        for t in 1..=10 {
            assert_eq!(m.running_max(10, t, 50), 100, "t {t}");
        }
        // 100 was seen at t = 0: by t = 11 it is out of a 10-round window; the best
        // remaining sample (50, kept as a sub-window choice) takes over
        assert_eq!(m.running_max(10, 11, 40), 50);
        // a new maximum replaces everything at once
        assert_eq!(m.running_max(10, 12, 70), 70);
        assert_eq!(m.running_max(10, 13, 60), 70);
    }

    #[test]
    fn brute_force_agreement_on_a_decreasing_ramp() {
        // on a strictly decreasing sequence the windowed max is the oldest sample still
        // in the window, within the algorithm's quarter-window granularity
        let mut m = MinMax::default();
        for t in 0..100u64 {
            let got = m.running_max(8, t, 1000 - t);
            let exact = 1000 - t.saturating_sub(8);
            assert!(got <= exact && got >= exact - 8, "t {t}: {got} vs {exact}");
        }
    }

    #[test]
    fn the_second_choice_waits_a_quarter_window_as_in_linux() {
        // Linux `minmax_subwin_update`: a lower sample becomes the 2nd choice only a
        // quarter of the window after the best (and the 3rd only after half of it), so
        // when the best expires the filter falls back to a sample from that later
        // part of the window, not to an earlier, higher one (BBR's max-bandwidth filter
        // is this approximation, not the exact windowed maximum).
        let mut m = MinMax::default();
        assert_eq!(m.running_max(100, 0, 100), 100);
        assert_eq!(m.running_max(100, 1, 10), 100, "too early for a 2nd choice");
        assert_eq!(m.running_max(100, 30, 5), 100, "2nd choice: (30, 5)");
        assert_eq!(m.running_max(100, 60, 4), 100, "3rd choice: (60, 4)");
        // the best (t = 0) leaves the window: the 2nd choice, not the sample at t = 1
        assert_eq!(m.running_max(100, 101, 3), 5);
    }

    #[test]
    fn the_third_choice_is_taken_once_after_half_the_window() {
        // once a 3rd choice has been taken from the second half of the window, later
        // lower samples do not displace it: when the best and then the 2nd choice
        // expire, the filter still holds the highest sample of the last window
        let mut m = MinMax::default();
        assert_eq!(m.running_max(100, 0, 100), 100);
        assert_eq!(m.running_max(100, 30, 50), 100, "2nd choice: (30, 50)");
        assert_eq!(m.running_max(100, 60, 45), 100, "3rd choice: (60, 45)");
        assert_eq!(m.running_max(100, 70, 10), 100, "no new choice");
        assert_eq!(m.running_max(100, 101, 5), 50);
        assert_eq!(m.running_max(100, 131, 1), 45, "the maximum of (31, 131]");
    }

    #[test]
    fn the_third_choice_takes_over_when_the_first_two_have_left() {
        // a long gap between samples: the best and the 2nd choice are both out of the
        // window, and the 3rd is promoted twice in one update
        let mut m = MinMax::default();
        assert_eq!(m.running_max(100, 0, 100), 100);
        assert_eq!(m.running_max(100, 30, 50), 100);
        assert_eq!(m.running_max(100, 60, 45), 100);
        assert_eq!(m.running_max(100, 150, 1), 45, "the maximum of (50, 150]");
    }
}
