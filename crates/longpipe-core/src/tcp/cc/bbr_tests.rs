//! Unit tests of [`super`] on hand-set state against `tcp_bbr.c`'s formulas.
use super::*;
use crate::time::SimDuration;

const MS: u64 = 1_000_000;

fn st() -> CcState {
    CcState {
        srtt: Some(SimDuration(100 * MS)),
        min_rtt_sample: Some(SimDuration(100 * MS)),
        ..CcState::new(1000, 10_000)
    }
}

/// A valid sample of `seg` segments over `ms` ms.
fn rs(seg: u64, ms: u64, prior: u64) -> RateSample {
    RateSample {
        prior_delivered: prior,
        delivered: Some(seg * 1000),
        interval: Some(SimDuration(ms * MS)),
        acked_sacked: 1000,
        rtt: Some(SimDuration(100 * MS)),
        ..Default::default()
    }
}

#[test]
fn gains_and_initial_pacing() {
    assert_eq!(HIGH_GAIN, 739);
    assert_eq!(DRAIN_GAIN, 88);
    let mut b = Bbr::new(1);
    let mut s = st();
    b.init(&mut s);
    // high_gain · 10 segments / 100 ms, 1 % below: 739/256 · 100 kB/s · 0.99
    let expect = 10 * 1000 * 10 * 739 / 256 * 99 / 100;
    assert!(
        s.pacing_rate.abs_diff(expect) <= expect / 1000,
        "{}",
        s.pacing_rate
    );
    assert!(s.pacing);
    assert_eq!(s.ssthresh, u64::MAX / 4);
}

#[test]
fn bdp_and_cwnd_target() {
    let mut b = Bbr::new(1);
    b.min_rtt_us = 100_000;
    // 1 segment per ms = 1/1000 seg/µs
    let bw = BW_UNIT / 1000;
    assert_eq!(b.bdp(bw, BBR_UNIT), 100);
    assert_eq!(b.bdp(bw, CWND_GAIN), 200);
    // quantisation: + 3 TSO goals (pacing 1 MB/s → 1000 B per ms → 2 segments
    // minimum), rounded up to even, + 2 in the first PROBE_BW phase
    let mut s = st();
    s.pacing_rate = 1_000_000;
    assert_eq!(b.inflight(&s, bw, BBR_UNIT), 106);
    b.mode = Mode::ProbeBw;
    b.cycle_idx = 0;
    assert_eq!(b.inflight(&s, bw, BBR_UNIT), 108);
}

#[test]
fn startup_exits_after_three_rounds_without_growth() {
    let mut b = Bbr::new(1);
    let mut s = st();
    b.init(&mut s);
    let mut delivered = 0;
    // rounds of 10 segments in 100 ms with growing then flat rates
    for (round, seg) in [10u64, 20, 40, 41, 42, 42, 42].iter().enumerate() {
        let prior = delivered;
        delivered += seg * 1000;
        s.delivered = delivered;
        s.now = SimTime((round as u64 + 1) * 100 * MS);
        s.delivered_time = s.now;
        b.cong_control(&mut s, &rs(*seg, 100, prior));
    }
    assert!(b.full_bw_reached);
    assert_ne!(b.mode, Mode::Startup);
    // the estimate is the max sample: 42 segments per 100 ms
    assert_eq!(b.max_bw(), 42 * BW_UNIT / 100_000);
}

#[test]
fn probe_bw_cycle_starts_at_a_random_phase_but_never_the_drain_phase() {
    let s = st();
    let mut seen = [false; CYCLE_LEN];
    for seed in 0..200 {
        let mut b = Bbr::new(seed);
        b.reset_probe_bw_mode(&s);
        seen[b.cycle_idx] = true;
    }
    assert!(!seen[1], "phase 1 (gain 3/4) is never the first");
    assert_eq!(seen.iter().filter(|&&x| x).count(), 7);
}

#[test]
fn recovery_uses_packet_conservation_then_restores() {
    let mut b = Bbr::new(1);
    let mut s = st();
    b.init(&mut s);
    b.min_rtt_us = 100_000;
    s.cwnd = 50_000;
    s.in_flight = 30_000;
    b.ssthresh(&s); // entering recovery saves cwnd 50
    s.ca_state = CaState::Recovery;
    let mut r = rs(1, 100, 0);
    r.acked_sacked = 2000;
    b.cong_control(&mut s, &r);
    assert_eq!(s.cwnd, 32_000, "in flight + acked");
    s.ca_state = CaState::Open;
    b.cong_control(&mut s, &r);
    assert!(s.cwnd >= 50_000, "restored to the saved cwnd: {}", s.cwnd);
}

#[test]
fn probe_rtt_after_ten_seconds() {
    let mut b = Bbr::new(1);
    let mut s = st();
    b.init(&mut s);
    b.full_bw_reached = true;
    b.mode = Mode::ProbeBw;
    s.cwnd = 80_000;
    s.in_flight = 80_000;
    s.now = SimTime(10_001 * MS);
    let mut r = rs(10, 100, 0);
    r.rtt = Some(SimDuration(120 * MS));
    b.cong_control(&mut s, &r);
    assert_eq!(b.mode, Mode::ProbeRtt);
    assert_eq!(s.cwnd, 4000);
    // once the flight is down to 4 segments, 200 ms and a round later it ends
    s.in_flight = 4000;
    b.cong_control(&mut s, &r);
    s.now = SimTime(10_300 * MS);
    s.delivered = 1_000_000;
    let mut r2 = rs(10, 100, 1_000_000);
    r2.rtt = Some(SimDuration(100 * MS));
    b.cong_control(&mut s, &r2);
    assert_eq!(b.mode, Mode::ProbeBw);
    assert!(s.cwnd > 4000, "no longer capped at 4 segments: {}", s.cwnd);
}

#[test]
fn before_full_bandwidth_cwnd_grows_only_below_its_target() {
    // `bbr_set_cwnd`: `else if (tcp_snd_cwnd(tp) < target_cwnd || tp->delivered <
    // TCP_INIT_CWND)`: at the target (106 here, as in `bdp_and_cwnd_target`) it stays
    let bw = BW_UNIT / 1000;
    let grown = |cwnd_segs: u64, delivered_segs: u64| {
        let mut b = Bbr::new(1);
        b.min_rtt_us = 100_000;
        let mut s = st();
        s.pacing_rate = 1_000_000;
        s.cwnd = cwnd_segs * 1000;
        s.delivered = delivered_segs * 1000;
        b.set_cwnd(&mut s, &rs(1, 100, 0), bw, BBR_UNIT);
        s.cwnd / 1000
    };
    assert_eq!(
        grown(105, 50),
        106,
        "below the target: + the segment acknowledged"
    );
    assert_eq!(grown(106, 50), 106, "at the target: no growth");
    assert_eq!(
        grown(106, 5),
        107,
        "fewer than TCP_INIT_CWND delivered: growth"
    );
}

#[test]
fn ack_aggregation_ignores_samples_without_a_valid_interval_or_delivery() {
    // `bbr_update_ack_aggregation` returns at once unless the sample acknowledged
    // something *and* has a delivery count *and* an interval: Linux invalidates the
    // interval alone (keeping the delivery count) when it is shorter than min_rtt
    let mut b = Bbr::new(1);
    let mut s = st();
    b.ack_epoch_mstamp = SimTime(MS);
    s.delivered_time = SimTime(5 * MS);
    let valid = rs(1, 100, 0);
    for (what, r) in [
        (
            "no interval",
            RateSample {
                interval: None,
                ..valid
            },
        ),
        (
            "no delivery",
            RateSample {
                delivered: None,
                ..valid
            },
        ),
        (
            "nothing acknowledged",
            RateSample {
                acked_sacked: 0,
                ..valid
            },
        ),
    ] {
        b.update_ack_aggregation(&s, &r);
        assert_eq!(
            (b.ack_epoch_mstamp, b.ack_epoch_acked),
            (SimTime(MS), 0),
            "{what}: no epoch change"
        );
    }
    b.update_ack_aggregation(&s, &valid);
    assert_eq!(
        (b.ack_epoch_mstamp, b.ack_epoch_acked),
        (SimTime(5 * MS), 1)
    );
}

#[test]
fn ack_aggregation_epoch_restarts_when_acks_fall_behind_the_expected() {
    // `bbr_update_ack_aggregation`: a new epoch when the ACKs of this one do not exceed
    // what the bandwidth predicts (here none: no bandwidth sample yet), or when the
    // epoch has counted too many
    let mut b = Bbr::new(1);
    let mut s = st();
    b.ack_epoch_mstamp = SimTime(MS);
    s.delivered_time = SimTime(5 * MS);
    b.update_ack_aggregation(&s, &rs(1, 100, 0));
    assert_eq!(b.ack_epoch_mstamp, SimTime(5 * MS), "restarted now");
    assert_eq!(b.ack_epoch_acked, 1);
    // more ACKs than expected, far from the limit: the epoch goes on
    b.ack_epoch_acked = 3;
    s.delivered_time = SimTime(6 * MS);
    b.update_ack_aggregation(&s, &rs(1, 100, 0));
    assert_eq!(
        (b.ack_epoch_mstamp, b.ack_epoch_acked),
        (SimTime(5 * MS), 4)
    );
    assert_eq!(
        b.extra_acked[b.extra_acked_win_idx], 4,
        "4 more than expected"
    );
}

#[test]
fn pacing_rate_only_rises_before_full_bandwidth() {
    // `bbr_set_pacing_rate`: before the pipe is full the rate never falls (a low
    // sample would starve the startup); once full it follows the estimate both ways
    let mut b = Bbr::new(1);
    let mut s = st();
    b.has_seen_rtt = true;
    let (low, high) = (BW_UNIT / 100, BW_UNIT / 10); // 10 and 100 segments per ms
    s.pacing_rate = Bbr::rate_bytes_per_sec(&s, BW_UNIT / 50, BBR_UNIT);
    let before = s.pacing_rate;
    b.set_pacing_rate(&mut s, low, BBR_UNIT);
    assert_eq!(s.pacing_rate, before, "lower: kept");
    b.set_pacing_rate(&mut s, high, BBR_UNIT);
    assert_eq!(s.pacing_rate, Bbr::rate_bytes_per_sec(&s, high, BBR_UNIT));
    b.full_bw_reached = true;
    b.set_pacing_rate(&mut s, low, BBR_UNIT);
    assert_eq!(s.pacing_rate, Bbr::rate_bytes_per_sec(&s, low, BBR_UNIT));
}

#[test]
fn ack_aggregation_cwnd_once_the_pipe_is_full() {
    // `bbr_ack_aggregation_cwnd`: the larger of the two windows' extra ACKed segments,
    // capped by 100 ms of the bandwidth estimate; nothing before full bandwidth
    let mut b = Bbr::new(1);
    b.bw.running_max(BW_RTTS, 0, BW_UNIT / 1000); // one segment per ms
    b.extra_acked = [30, 70];
    assert_eq!(b.ack_aggregation_cwnd(), 0, "not yet full");
    b.full_bw_reached = true;
    assert_eq!(b.ack_aggregation_cwnd(), 70);
    b.extra_acked = [300, 250];
    // 100 ms at 1 segment/ms, in the estimate's fixed point (BW_UNIT / 1000 is
    // truncated, so just below 100)
    assert_eq!(b.ack_aggregation_cwnd(), 99, "the cap");
}

#[test]
fn probe_bw_phases_end_by_time_at_unit_gain_and_by_inflight_when_probing() {
    // `bbr_is_next_cycle_phase`: at gain 1 a phase lasts one min_rtt; the probing
    // phase (5/4) also needs losses or the inflight to reach its 5/4 target
    let mut b = Bbr::new(1);
    let mut s = st();
    b.min_rtt_us = 100_000;
    b.bw.running_max(BW_RTTS, 0, BW_UNIT / 1000);
    b.cycle_mstamp = SimTime(0);
    let sample = RateSample {
        prior_in_flight: 2000, // far below the 5/4 target of 100 segments
        ..rs(1, 100, 0)
    };
    for (gain, elapsed_ms, next) in [
        (BBR_UNIT, 50, false),
        (BBR_UNIT, 101, true),
        (BBR_UNIT * 5 / 4, 101, false),
    ] {
        b.pacing_gain = gain;
        s.delivered_time = SimTime(elapsed_ms * MS);
        assert_eq!(
            b.is_next_cycle_phase(&s, &sample),
            next,
            "{gain} {elapsed_ms}"
        );
    }
    let lossy = RateSample {
        losses: 1000,
        ..sample
    };
    assert!(b.is_next_cycle_phase(&s, &lossy), "5/4 with losses");
}

#[test]
fn a_round_trip_counts_once_its_first_segment_is_delivered() {
    // `bbr_update_bw`: a sample whose prior_delivered reaches next_rtt_delivered
    // starts a new round
    let mut b = Bbr::new(1);
    let mut s = st();
    s.delivered = 10_000;
    b.next_rtt_delivered = 5_000;
    b.update_bw(&s, &rs(1, 100, 4_000));
    assert_eq!((b.rtt_cnt, b.round_start), (0, false));
    b.update_bw(&s, &rs(1, 100, 5_000));
    assert_eq!((b.rtt_cnt, b.round_start), (1, true));
    assert_eq!(b.next_rtt_delivered, 10_000);
}

#[test]
fn idle_restart_ends_only_when_data_is_delivered() {
    let mut b = Bbr::new(1);
    let mut s = st();
    b.idle_restart = true;
    let nothing = RateSample {
        delivered: Some(0),
        ..rs(1, 100, 0)
    };
    b.update_min_rtt(&mut s, &nothing);
    assert!(b.idle_restart);
    b.update_min_rtt(&mut s, &rs(1, 100, 0));
    assert!(!b.idle_restart);
}
