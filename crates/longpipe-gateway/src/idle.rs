//! The packet loop's choice when a round found nothing to do: poll the devices again at
//! once, or sleep in `ppoll` until a device is readable or the next deadline. A sleep
//! and its wake-up cost about 20 µs of CPU on a virtual machine and wake tens of µs
//! late, so while packets keep coming (or a deadline is a few µs away) polling is
//! cheaper; a budget bounds the time spent polling in vain, and an idle daemon sleeps.
//! No clock inside: the loop passes its times (ns of a monotonic clock), the tests a
//! fake one.

/// What the loop does when a round found nothing to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// Poll the devices again.
    Spin,
    /// Sleep until a device is readable or this many ns (None: no deadline).
    Sleep(Option<u64>),
}

/// Whether to poll again or sleep, with a budget (times in ns of a monotonic clock).
///
/// The loop polls again (spins) when packets came or a timer ran less than
/// [`Self::LINGER_NS`] ago — a sleep costs about that much CPU here, so polling that
/// long first costs at most twice the best choice in hindsight — or when the next
/// deadline is at most [`Self::NEAR_NS`] away (a timed sleep returns tens of µs late
/// here). But once rounds that found nothing have taken [`Self::SHARE_PCT`] % of the
/// current [`Self::WINDOW_NS`], it sleeps until the window ends: an idle daemon never
/// spins, a trickle of packets costs at most `LINGER_NS` of polling each, and no
/// pattern of packets or deadlines makes it poll in vain more than that share.
#[derive(Clone, Debug, Default)]
pub struct Spin {
    /// The last round that did work (read a packet or ran a timer).
    last_work: Option<u64>,
    /// The budget's window: its start, and the time spun in it.
    win_start: u64,
    win_spun: u64,
    /// When the loop last decided to spin (the spin lasts until the next decision or
    /// the next round that works).
    spin_since: Option<u64>,
    pub spins: u64,
    pub spun_ns: u64,
}

impl Spin {
    /// What a sleep and its wake-up cost the thread, roughly (measured for
    /// `longpipe emu`'s ferry on this kind of machine: about 19 µs).
    pub const LINGER_NS: u64 = 20_000;
    /// Deadlines closer than this are awaited polling (timed sleeps return 17-40 µs
    /// late here).
    pub const NEAR_NS: u64 = 50_000;
    pub const WINDOW_NS: u64 = 10_000_000;
    pub const SHARE_PCT: u64 = 50;

    /// Counts the spin that ended at `now`, in the window that holds `now`.
    fn end_spin(&mut self, now: u64) {
        if now.saturating_sub(self.win_start) >= Self::WINDOW_NS {
            self.win_start = now;
            self.win_spun = 0;
        }
        if let Some(t) = self.spin_since.take() {
            let d = now.saturating_sub(t);
            self.win_spun += d;
            self.spun_ns += d;
        }
    }

    /// A round that began at `now` did work.
    pub fn worked(&mut self, now: u64) {
        self.end_spin(now);
        self.last_work = Some(now);
    }

    /// A round found nothing to do; at `now` the next deadline is `timeout` ns away.
    pub fn plan(&mut self, now: u64, timeout: Option<u64>) -> Idle {
        self.end_spin(now);
        let recent = self
            .last_work
            .is_some_and(|w| now.saturating_sub(w) < Self::LINGER_NS);
        let near = timeout.is_some_and(|t| t <= Self::NEAR_NS);
        if (recent || near) && self.win_spun < Self::WINDOW_NS / 100 * Self::SHARE_PCT {
            self.spin_since = Some(now);
            self.spins += 1;
            Idle::Spin
        } else {
            Idle::Sleep(timeout)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINGER: u64 = Spin::LINGER_NS;
    const BUDGET: u64 = Spin::WINDOW_NS / 100 * Spin::SHARE_PCT;

    /// Rounds of `step` ns that find nothing, from `t` on, the next deadline `timeout`
    /// away each time: the time of the first round after which the loop sleeps.
    fn spin_from(s: &mut Spin, mut t: u64, step: u64, timeout: Option<u64>) -> u64 {
        for _ in 0..10_000_000 {
            if s.plan(t, timeout) != Idle::Spin {
                return t;
            }
            t += step;
        }
        panic!("spins without end from {t}");
    }

    #[test]
    fn an_idle_loop_sleeps_to_its_deadlines_and_never_spins() {
        let mut s = Spin::default();
        // no packet ever; the next deadline (the metrics snapshot) up to a second away
        for k in 0..1000u64 {
            let now = k * 1_000_000;
            let d = 1_000_000_000 - (now % 1_000_000_000);
            assert_eq!(s.plan(now, Some(d)), Idle::Sleep(Some(d)), "at {now}");
        }
        assert_eq!(s.plan(5, None), Idle::Sleep(None));
        assert_eq!((s.spins, s.spun_ns), (0, 0));
    }

    #[test]
    fn the_loop_polls_for_a_sleeps_worth_after_work_then_sleeps() {
        let mut s = Spin::default();
        s.worked(1_000_000);
        // rounds of 1 us that find nothing: spin until LINGER after the work began
        let t = spin_from(&mut s, 1_000_000, 1_000, Some(500_000_000));
        assert_eq!(t, 1_000_000 + LINGER);
        assert_eq!((s.spins, s.spun_ns), (LINGER / 1_000, LINGER));
        // a packet during a spin: the spin ends there and counts until then
        let mut s = Spin::default();
        s.worked(0);
        assert_eq!(s.plan(2_000, Some(1_000_000)), Idle::Spin);
        s.worked(7_000);
        assert_eq!(s.spun_ns, 5_000);
        assert_eq!(
            s.plan(7_000 + LINGER - 1, Some(1_000_000)),
            Idle::Spin,
            "lingers from the latest work"
        );
        assert_eq!(
            s.plan(7_000 + LINGER, Some(1_000_000)),
            Idle::Sleep(Some(1_000_000))
        );
    }

    #[test]
    fn a_near_deadline_is_awaited_polling_a_far_one_asleep() {
        let mut s = Spin::default();
        assert_eq!(s.plan(1_000_000, Some(Spin::NEAR_NS)), Idle::Spin);
        assert_eq!(
            s.plan(1_000_100, Some(12_000)),
            Idle::Spin,
            "a 1 Gbit/s pacing gap"
        );
        assert_eq!(
            s.plan(1_000_200, Some(Spin::NEAR_NS + 1)),
            Idle::Sleep(Some(Spin::NEAR_NS + 1))
        );
        assert_eq!(s.plan(2_000_000, None), Idle::Sleep(None));
    }

    #[test]
    fn spinning_in_vain_is_capped_at_its_share_of_each_window() {
        // deadlines always 10 us away and rounds of 1 us that find nothing: the loop
        // polls for half the window, then sleeps to each deadline until the next window
        let mut s = Spin::default();
        let mut t = spin_from(&mut s, 0, 1_000, Some(10_000));
        assert_eq!((t, s.spun_ns), (BUDGET, BUDGET));
        let mut sleeps = 0;
        while t < Spin::WINDOW_NS {
            // each sleep returns at the deadline, 10 us on
            assert_eq!(s.plan(t, Some(10_000)), Idle::Sleep(Some(10_000)), "at {t}");
            sleeps += 1;
            t += 10_000;
        }
        assert_eq!(sleeps, (Spin::WINDOW_NS - BUDGET) / 10_000);
        assert_eq!(
            s.plan(t, Some(10_000)),
            Idle::Spin,
            "a new window, a new budget"
        );
        // work does not count against the budget: rounds that work between the spins
        let mut s = Spin::default();
        let mut t = 0;
        for _ in 0..5_000 {
            s.worked(t);
            assert_eq!(s.plan(t + 1_500, Some(10_000)), Idle::Spin, "at {t}");
            t += 2_000;
        }
        assert_eq!(
            s.spun_ns,
            5_000 * 500 - 500,
            "only the rounds that found nothing"
        );
    }

    #[test]
    fn a_trickle_of_packets_costs_at_most_a_linger_each() {
        // a packet every 100 us: after each, the loop polls LINGER, then sleeps
        let mut s = Spin::default();
        for k in 0..10_000u64 {
            let t = k * 100_000;
            s.worked(t);
            assert_eq!(spin_from(&mut s, t + 1_000, 1_000, None), t + LINGER);
        }
        assert_eq!(s.spun_ns, 10_000 * (LINGER - 1_000));
        assert!(s.spun_ns <= 1_000_000_000 / 5, "a fifth of a core at most");
    }
}
