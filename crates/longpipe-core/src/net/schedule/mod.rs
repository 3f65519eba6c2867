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
//! Parts: [`spec`] (the entries and their resolution, [`ScheduleSpec`] →
//! [`DirSchedule`] per direction), [`csv`] (the CSV reader), [`dir`] (a direction's
//! resolved schedule), [`timeline`] (running it: the next change and what it changes),
//! [`varying`] (a periodic entry's values). The link direction applies the changes
//! (`net/link_sched.rs`). Order at one instant: one-off changes before periodic ones,
//! each in the order written; later ones win.
//!

pub mod csv;
pub mod dir;
pub mod spec;
pub mod timeline;
pub mod varying;

pub use dir::{
    Change, DirSchedule, LinkShape, OnceChanges, Outage, Periodic, MAX_CHANGES, MIN_EVERY,
};
pub use spec::{resolve, ScheduleSpec};
pub use timeline::Timeline;
pub use varying::Varying;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loaded::Loaded;
    use crate::net::loss::LossModel;
    use crate::time::{Rate, SimDuration, SimTime};

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
        assert_eq!(a.once.get(0).unwrap().1.rate, Some(Rate(5_000_000)));
        assert_eq!(
            b.once.get(0).unwrap().1.rate,
            Some(Rate(5_000_000)),
            "a symmetric link stays symmetric"
        );
        assert_eq!(b.once.get(0).unwrap().1.loss, None, "loss is a->b only");
        // at 2 s, in the order written: delay 40 ms both ways, then down (and b->a 30 ms)
        assert_eq!(
            (a.once.get(1).unwrap().0, a.once.get(1).unwrap().1.delay),
            (SimTime(2_000_000_000), Some(ms(40)))
        );
        assert_eq!(
            (b.once.get(2).unwrap().1.delay, b.once.get(2).unwrap().1.up),
            (Some(ms(30)), Some(false))
        );
        assert_eq!(
            (a.once.get(2).unwrap().1.delay, a.once.get(2).unwrap().1.up),
            (None, Some(false))
        );
        // with a rate_ba on the link, rate changes only a->b
        let asym = LinkShape {
            sym_rate: false,
            ..SYM
        };
        let [_, b] = resolve(&s, asym, Outage::Drop, false, [None, None], "x", "l").unwrap();
        assert_eq!(b.once.len(), 2, "the rate change leaves b->a alone");
    }

    #[test]
    fn a_periodic_entry_is_only_in_the_directions_it_changes() {
        let own_delay_ba = LinkShape {
            sym_delay: false,
            ..SYM
        };
        let dirs = |json: &str, shape: LinkShape| {
            let [a, b] = resolve(
                &specs(json),
                shape,
                Outage::Drop,
                false,
                [None, None],
                "x",
                "l",
            )
            .unwrap();
            (a.periodic.len(), b.periodic.len(), b.is_active())
        };
        let jitter = r#"[{"every":"1ms","delay":{"min":"0s","max":"2ms"}}]"#;
        assert_eq!(
            dirs(jitter, SYM),
            (1, 1, true),
            "delay mirrors on a symmetric link"
        );
        assert_eq!(
            dirs(jitter, own_delay_ba),
            (1, 0, false),
            "b->a keeps its delay_ba"
        );
        let ba = r#"[{"every":"1ms","delay_ba":"5ms"}]"#;
        assert_eq!(
            dirs(ba, own_delay_ba).0,
            0,
            "delay_ba alone leaves a->b alone"
        );
        assert_eq!(
            dirs(r#"[{"every":"1s","loss":{"kind":"none"}}]"#, SYM),
            (1, 0, false)
        );
        assert_eq!(
            dirs(r#"[{"every":"1s","loss_ba":{"kind":"none"}}]"#, SYM).0,
            0
        );
        assert_eq!(
            dirs(r#"[{"every":"1s","rate":"1Mbps"}]"#, SYM),
            (1, 1, true)
        );
        assert_eq!(
            dirs(r#"[{"every":"1s","up":[true,false]}]"#, own_delay_ba),
            (1, 1, true)
        );
        assert_eq!(
            dirs(r#"[{"every":"1s","down_for":"1ms"}]"#, own_delay_ba),
            (1, 1, true)
        );
        // a->b draws the same values either way (its stream does not depend on b->a's)
        let [a_sym, _] = resolve(
            &specs(jitter),
            SYM,
            Outage::Drop,
            false,
            [None, None],
            "x",
            "l",
        )
        .unwrap();
        let [a_own, _] = resolve(
            &specs(jitter),
            own_delay_ba,
            Outage::Drop,
            false,
            [None, None],
            "x",
            "l",
        )
        .unwrap();
        let (mut t1, mut t2) = (Timeline::new(&a_sym, 3), Timeline::new(&a_own, 3));
        assert_eq!(run(&mut t1, 50_000_000), run(&mut t2, 50_000_000));
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
        let got: Vec<(u64, Change)> = a.once.iter().map(|(t, c)| (t.0, c)).collect();
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
