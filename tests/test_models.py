"""Analytical models: PFTK (ALGORITHMS.md §6), the seed-001 Reno appendix (A-1..A-15),
the seed-001 Hybla model (eqs. 2-20) and the ``model`` CLI."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from longpipe.models import cli as mcli
from longpipe.models import (
    data_sent,
    hybla_data_sent,
    hybla_model,
    hybla_rho,
    hybla_throughput,
    pftk_approx,
    pftk_full,
    pps_to_bps,
    reno_data_sent,
    reno_model,
    reno_no_timeout,
    solve_w,
    throughput,
)

RENO_FORMS = [pftk_full, pftk_approx, reno_no_timeout]

# --- PFTK check values -------------------------------------------------------------------

# ALGORITHMS.md §6: RTT 0.55 s, T0 1.5 s, b 2; values published to 2 decimals.
CHECK = [
    (1e-3, math.inf, 49.06, 49.49),
    (1e-2, math.inf, 14.52, 14.83),
    (1e-4, 64, 104.93, 116.36),
]


@pytest.mark.parametrize("p,wmax,full,approx", CHECK)
def test_pftk_check_values(p, wmax, full, approx):
    assert pftk_full(0.55, p, b=2, t0=1.5, wmax=wmax) == pytest.approx(full, rel=1e-3)
    assert pftk_approx(0.55, p, b=2, t0=1.5, wmax=wmax) == pytest.approx(approx, rel=1e-3)
    assert throughput("pftk", 0.55, p, 2, 1.5, wmax) == pftk_full(0.55, p, 2, 1.5, wmax)
    assert throughput("pftk-approx", 0.55, p, 2, 1.5, wmax) == pftk_approx(0.55, p, 2, 1.5, wmax)


def test_pftk_regimes_and_p_one_limit():
    # 1e-4 with Wmax 64 is the window-limited branch: E[W_u] ≈ 116 > 64
    r = reno_model("pftk", 0.55, 1e-4, 2, 1.5, 64, mss=1500)
    assert r.regime == "window-limited" and r.W > 64
    assert r.throughput_bps == pytest.approx(r.throughput_pps * 1500 * 8)
    assert reno_model("pftk", 0.55, 1e-3, 2, 1.5).regime == "unlimited"
    # every packet lost: a timeout series backed off to 64 T0 -> 1/(64 T0), the limit from below
    assert pftk_full(0.3, 1.0, t0=1.5) == pytest.approx(1 / (64 * 1.5))
    assert pftk_full(0.3, 1 - 1e-9, t0=1.5) == pytest.approx(1 / (64 * 1.5), rel=1e-6)


# --- seed appendix: Reno without timeouts --------------------------------------------------

@pytest.mark.parametrize("b", [1, 2, 3])
@pytest.mark.parametrize("p", [1e-5, 1e-3, 0.05])
def test_reno_appendix_internal_consistency(b, p):
    # solves (A-1) = (A-2) with X of; B = Y/A with A = (X + 1)R
    rtt = 0.3
    r = reno_model("reno", rtt, p, b)
    w = r.W
    x = b * (w / 2 + 1)
    y1 = (1 - p) / p + w
    y2 = x / 2 * (w / 2 + w) + w / 2
    assert y2 == pytest.approx(y1, rel=1e-12)
    assert r.throughput_pps == pytest.approx(y1 / ((x + 1) * rtt), rel=1e-12)
    # window-limited: ..(A-11) give V; U + V is the printed (A-13) (not so with the
    # misprinted sign of)
    wm = 0.5 * w
    u = (wm / 2 + 1) * b
    v = ((1 - p) / p + wm - 0.75 * wm * u - wm / 2) / wm  # (A-10) = (A-11)
    x13 = (1 - p) / (wm * p) + b * wm / 8 + (b + 2) / 4
    assert u + v == pytest.approx(x13, rel=1e-12)
    v12_printed = (1 - p) / (wm * p) - 3 * b * wm / 8 + (3 * b + 2) / 4
    assert v12_printed - v == pytest.approx(1.5 * b)
    lim = reno_model("reno", rtt, p, b, wmax=wm)
    assert lim.regime == "window-limited"
    assert lim.throughput_pps == pytest.approx(((1 - p) / p + wm) / ((x13 + 1) * rtt), rel=1e-12)


def test_reno_appendix_is_continuous_at_the_window_limit():
    w = reno_model("reno", 0.2, 1e-3, 2).W
    below = reno_no_timeout(0.2, 1e-3, wmax=w * (1 + 1e-12))
    above = reno_no_timeout(0.2, 1e-3, wmax=w * (1 - 1e-12))
    assert reno_model("reno", 0.2, 1e-3, 2, wmax=w * (1 - 1e-12)).regime == "window-limited"
    assert above == pytest.approx(below, rel=1e-9)


def test_reno_square_root_law():
    # without timeouts or window limit, B -> sqrt(3/(2bp))/R as p -> 0
    for b in (1, 2):
        assert reno_no_timeout(0.1, 1e-7, b=b) == pytest.approx(math.sqrt(3 / (2 * b * 1e-7)) / 0.1, rel=2e-3)


# --- limits ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", RENO_FORMS + [hybla_throughput])
@pytest.mark.parametrize("rtt,wm", [(0.2, 50), (0.55, 550)])
def test_window_limited_forms_tend_to_wm_over_rtt(fn, rtt, wm):
    # p -> 0: Y ≈ 1/p, X ≈ 1/(p·Wm), so B -> Wm/R; the corrections are O(p·Wm²)
    assert fn(rtt, 1e-10, wmax=wm) == pytest.approx(wm / rtt, rel=1e-4)
    # and the window-limited forms never exceed Wm/R
    for p in (1e-6, 1e-5, 1e-4, 1e-3):
        assert fn(rtt, p, wmax=wm) <= wm / rtt * (1 + 1e-12)


RHO1_B1 = 4 / 9  # leading coefficient of (H/R − 1)·W0, b = 1 (derivation in docs/notes/hybla-model.md)
RHO1_B2 = math.sqrt(2) - 5 / 9  # same for H/(√2·R) − 1, b = 2


@pytest.mark.parametrize("p", [1e-6, 1e-4, 1e-3, 1e-2, 3e-2, 0.1])
def test_hybla_rho_one_vs_appendix_reno(p):
    # With ρ = 1 the Hybla model is a Reno sawtooth growing 1 packet per RTT, i.e. the
    # appendix form with b = 1. Expanding both for small p with W0 = sqrt(8/(3p)): the
    # windows agree to O(1) packets and Hybla's cycle is 2/9 RTT shorter (X + 2 − 1/L vs
    # X + 1), so H/R = 1 + (4/9)/W0 + O(p); the higher-order terms are negative up to
    # p = 0.1, which makes (4/9)/W0 an upper bound there. With b = 2 the appendix grows
    # half as fast: H/R -> √2, and H/(√2·R) − 1 <= (√2 − 5/9)/W0.
    inv_w0 = math.sqrt(3 * p / 8)
    h = hybla_throughput(0.025, p)
    assert hybla_model(0.025, p).rho == 1.0
    e1 = h / reno_no_timeout(0.025, p, b=1) - 1
    e2 = h / (math.sqrt(2) * reno_no_timeout(0.025, p, b=2)) - 1
    assert 0 < e1 <= RHO1_B1 * inv_w0
    assert 0 < e2 <= RHO1_B2 * inv_w0
    if p <= 1e-4:  # and the bound is the actual leading term
        assert e1 == pytest.approx(RHO1_B1 * inv_w0, rel=0.05)
        assert e2 == pytest.approx(RHO1_B2 * inv_w0, rel=0.05)


def test_hybla_scaling_in_rtt():
    # B·R depends on ρ and p only: RTT < RTT0 is ρ = 1 (Reno-like, B ∝ 1/R), and scaling
    # RTT and RTT0 together keeps ρ and scales B by 1/R
    for p in (1e-4, 1e-2):
        assert hybla_throughput(0.01, p) * 0.01 == pytest.approx(hybla_throughput(0.025, p) * 0.025, rel=1e-9)
        assert hybla_throughput(0.5, p, rtt0=0.05) * 0.5 == pytest.approx(hybla_throughput(0.25, p) * 0.25,
                                                                         rel=1e-9)
    assert hybla_rho(0.55) == pytest.approx(22) and hybla_rho(0.01) == 1.0


# --- monotonicity -----------------------------------------------------------------------------

P_GRID = np.geomspace(1e-6, 0.5, 40)
RTT_GRID = [0.005, 0.02, 0.05, 0.1, 0.25, 0.55, 1.0, 3.0]


def _decreasing(v):
    return all(a > b for a, b in zip(v, v[1:]))


@pytest.mark.parametrize("fn", RENO_FORMS + [hybla_throughput])
def test_decreasing_in_p_and_rtt_without_window_limit(fn):
    for rtt in (0.02, 0.1, 0.55):
        assert _decreasing([fn(rtt, p) for p in P_GRID]), rtt
    for p in (1e-5, 1e-3, 1e-2, 0.1):
        assert _decreasing([fn(rtt, p) for rtt in RTT_GRID]), p


@pytest.mark.parametrize("fn", RENO_FORMS)
def test_reno_forms_decreasing_with_window_limit(fn):
    # strictly for the full forms; pftk-approx is min(Wm/R, ·), flat where the limit rules
    mono = (lambda v: all(a >= b for a, b in zip(v, v[1:]))) if fn is pftk_approx else _decreasing
    for rtt in (0.1, 0.55):
        assert mono([fn(rtt, p, wmax=64) for p in P_GRID])
    assert _decreasing([fn(rtt, 1e-4, wmax=64) for rtt in RTT_GRID])


def _boundary_p(rtt, wm):
    lo, hi = 1e-9, 0.5  # W(p) decreases in p; bisect on log p for W = wm
    rho = hybla_rho(rtt)
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if solve_w(mid, rho)[0] > wm else (lo, mid)
    return math.sqrt(lo * hi)


@pytest.mark.parametrize("rtt", [0.1, 0.25, 0.55])
def test_hybla_window_limit_regimes_and_boundary(rtt):
    wm = 550
    pc = _boundary_p(rtt, wm)
    # decreasing in p within each regime, and across the boundary with continuous=True
    below = [p for p in P_GRID if p < pc]
    above = [p for p in P_GRID if p > pc]
    assert {hybla_model(rtt, p, wm).regime for p in below} == {"window-limited"}
    assert {hybla_model(rtt, p, wm).regime for p in above} == {"unlimited"}
    assert _decreasing([hybla_throughput(rtt, p, wm) for p in below])
    assert _decreasing([hybla_throughput(rtt, p, wm) for p in above])
    assert _decreasing([hybla_model(rtt, p, wm, continuous=True).throughput_pps for p in P_GRID])
    # As printed, (18) drops the ρ²U/2 that (9) counts, so just inside the window-limited
    # regime V = (1 − D_m)/2 and B falls by (X + 2 − 1/L)/(X + V + 2 − 1/L) (see the notes).
    u = hybla_model(rtt, pc * (1 + 1e-9), wm)
    w = hybla_model(rtt, pc * (1 - 1e-9), wm)
    c = hybla_model(rtt, pc * (1 - 1e-9), wm, continuous=True)
    assert (u.regime, w.regime) == ("unlimited", "window-limited")
    assert w.V == pytest.approx((1 - w.D) / 2, rel=1e-6)
    drop = (u.X + 2 - 1 / u.L) / (u.X + w.V + 2 - 1 / u.L)
    assert w.throughput_pps / u.throughput_pps == pytest.approx(drop, rel=1e-6)
    assert c.throughput_pps == pytest.approx(u.throughput_pps, rel=1e-6)


# --- Hybla: equations, solver -------------------------------------------------------------

@pytest.mark.parametrize("rtt,p", [(0.1, 1e-3), (0.55, 1e-2), (0.025, 0.2)])
def test_hybla_unlimited_solution_satisfies_the_equations(rtt, p):
    m = hybla_model(rtt, p, mss=1200)
    rho, w = m.rho, m.W
    L = 1 + p * w  # (4)
    D = (2 - p) ** (w - 1) / 2**w  # (5), literally
    X = (1 - D) * w / rho**2  # (8)
    assert w == pytest.approx(D * w + rho**2 * X)  # (7)
    y6 = 1 / p + w - L
    y9 = X * (D * w + rho**2 / 2 * (X + 1)) + 3 * w / 4 - w / (4 * L)  # (9)
    assert y9 == pytest.approx(y6, rel=1e-10)
    assert (m.L, m.D, m.X, m.Y) == pytest.approx((L, D, X, y6), rel=1e-10)
    assert m.throughput_pps == pytest.approx(y6 / ((X + 1 + (1 - 1 / L)) * rtt), rel=1e-10)  # (10), (11)
    assert m.throughput_bps == pytest.approx(m.throughput_pps * 1200 * 8) == m.bps(1200)
    assert math.isnan(m.U) and math.isnan(m.V)


def test_hybla_window_limited_solution_satisfies_the_equations():
    rtt, p, wm = 0.55, 1e-3, 550
    m = hybla_model(rtt, p, wm)
    assert m.regime == "window-limited" and m.W > wm and m.wmax == wm
    Lm = 1 + p * wm  # (12)
    Dm = (2 - p) ** (wm - 1) / 2**wm  # (13), read as (5) at W = Wm
    Y = 1 / p + wm - Lm  # (14)
    U = (1 - Dm) * wm / m.rho**2  # (16)
    assert wm == pytest.approx(Dm * wm + m.rho**2 * U)  # (15)
    assert (m.L, m.D, m.Y, m.U) == pytest.approx((Lm, Dm, Y, U), rel=1e-10)
    assert m.X == pytest.approx(m.U + m.V)  # (17)
    assert Y == pytest.approx(0.5 * (Dm + 1) * wm * U + wm * m.V + wm / 2 + wm / 4 * (1 - 1 / Lm), rel=1e-10)  # (18)
    assert m.throughput_pps == pytest.approx(Y / ((m.X + 1 + (1 - 1 / Lm)) * rtt), rel=1e-10)  # (19), (20)


@pytest.mark.parametrize("rtt", [0.01, 0.1, 0.25, 0.55, 2.0])
@pytest.mark.parametrize("p", [1e-8, 1e-5, 1e-3, 1e-2, 0.1, 0.5, 0.95])
def test_newton_and_bracketed_fallback_agree(rtt, p):
    a = hybla_model(rtt, p)
    b = hybla_model(rtt, p, newton=False)
    c = hybla_model(rtt, p, max_iter=1)  # Newton cannot converge in one step: falls back
    assert a.method == "newton" and a.iterations <= 10
    assert b.method == c.method == "brent"
    assert b.W == pytest.approx(a.W, rel=1e-10) and c.W == pytest.approx(a.W, rel=1e-10)
    assert b.throughput_pps == pytest.approx(a.throughput_pps, rel=1e-9)


def test_solve_w_domain():
    w, method, _ = solve_w(1e-3, 10.0)
    assert method == "newton" and w > 0
    with pytest.raises(ValueError, match="rho"):
        solve_w(1e-3, 0.5)
    with pytest.raises(ValueError, match="p"):
        solve_w(1.0, 1.0)


def test_hybla_p_one():
    m = hybla_model(0.3, 1.0)
    assert m.throughput_pps == 0.0 and m.W == 0.0 and m.method == "p=1"


# --- invalid inputs ----------------------------------------------------------------------------

BAD = [("rtt", 0), ("rtt", -0.1), ("rtt", math.nan), ("rtt", math.inf), ("rtt", "0.1"),
       ("p", 0), ("p", -1e-3), ("p", 1.5), ("p", math.nan), ("p", True), ("p", 1e-310),
       ("b", 0.5), ("b", math.nan), ("t0", 0), ("t0", math.inf),
       ("wmax", 0), ("wmax", 0.5), ("wmax", math.nan), ("wmax", None)]


@pytest.mark.parametrize("name,value", BAD)
def test_invalid_inputs_raise_value_error_naming_the_argument(name, value):
    args = {"rtt": 0.1, "p": 0.01, "b": 2, "t0": 1.0, "wmax": math.inf, name: value}
    for fn in RENO_FORMS:
        with pytest.raises(ValueError, match=rf"^{name}:"):
            fn(**args)
    if name in ("rtt", "p", "wmax"):
        with pytest.raises(ValueError, match=rf"^{name}:"):
            hybla_model(args["rtt"], args["p"], args["wmax"])


def test_other_invalid_inputs():
    with pytest.raises(ValueError, match="^model:"):
        throughput("cubic", 0.1, 0.01)
    with pytest.raises(ValueError, match="^rtt0:"):
        hybla_model(0.1, 0.01, rtt0=0)
    with pytest.raises(ValueError, match="^mss:"):
        hybla_model(0.1, 0.01, mss=0)
    with pytest.raises(ValueError, match="^mss:"):
        pps_to_bps(10, -1)
    with pytest.raises(ValueError, match="^gamma:"):
        data_sent([1.0], 0.1, 0.5)
    with pytest.raises(ValueError, match="^t:"):
        data_sent([-1.0], 0.1, 32)
    with pytest.raises(ValueError, match="^variant:"):
        data_sent([1.0], 0.1, 32, "cubic")


# --- data sent, eq. (2) -----------------------------------------------------------------------

def test_data_sent_curves():
    t = np.linspace(0, 3, 301)
    h = hybla_data_sent(t, 0.55, 32)
    r = reno_data_sent(t, 0.55, 32)
    assert h.shape == t.shape and h[0] == 0 and r[0] == 0
    assert (h[1:] > r[1:]).all()
    # Hybla's curve is Reno's with RTT = RTT0; with RTT < RTT0 (ρ = 1) it is Reno's own
    assert np.allclose(h, reno_data_sent(t, 0.025, 32), rtol=1e-12)
    assert np.allclose(hybla_data_sent(t, 0.01, 32), reno_data_sent(t, 0.01, 32), rtol=1e-12)
    assert np.array_equal(data_sent(t, 0.55, 32), h) and np.array_equal(data_sent(t, 0.55, 32, "reno"), r)
    # slow start: T = (2^(t/R) − 1)/ln 2; after t_γ = R·log2 γ: CA
    assert reno_data_sent(0.5, 0.25, 32) == pytest.approx(3 / math.log(2))
    assert isinstance(reno_data_sent(0.5, 0.25, 32), float)
    tg, r0 = 0.025 * 5, 0.025
    eps = 1e-7
    # T and its slope (the sending rate, γ/RTT0 at t_γ) are continuous in our reading
    assert hybla_data_sent(tg - eps, 0.55, 32) == pytest.approx(hybla_data_sent(tg + eps, 0.55, 32), rel=1e-5)
    slope_ss = (hybla_data_sent(tg - eps, 0.55, 32) - hybla_data_sent(tg - 2 * eps, 0.55, 32)) / eps
    slope_ca = (hybla_data_sent(tg + 2 * eps, 0.55, 32) - hybla_data_sent(tg + eps, 0.55, 32)) / eps
    assert slope_ss == pytest.approx(32 / r0, rel=1e-3) and slope_ca == pytest.approx(32 / r0, rel=1e-3)
    # the literal print has rate 1/RTT0 just after t_γ
    printed = hybla_data_sent(np.array([tg + eps, tg + 2 * eps]), 0.55, 32, as_printed=True)
    assert (printed[1] - printed[0]) / eps == pytest.approx(1 / r0, rel=1e-3)


# --- CLI ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["pftk", "pftk-approx", "reno", "hybla"])
def test_cli_json(name, capsys):
    rc = mcli.main(["model", name, "--rtt", "0.55", "--p", "1e-3", "--wmax", "550", "--t0", "1.5",
                    "--mss", "1500", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    d = json.loads(out)
    assert d["inputs"]["model"] == name and d["inputs"]["wmax"] == 550
    assert d["throughput_bps"] == pytest.approx(d["throughput_pps"] * 1500 * 8)
    if name == "hybla":
        assert d["throughput_pps"] == pytest.approx(hybla_throughput(0.55, 1e-3, 550))
        assert d["regime"] == "window-limited" and d["rho"] == pytest.approx(22)
    else:
        assert d["throughput_pps"] == pytest.approx(throughput(name, 0.55, 1e-3, 2, 1.5, 550))
        assert d["regime"] == "unlimited"


def test_cli_table(capsys):
    assert mcli.main(["model", "pftk", "--rtt", "0.55", "--p", "0.001", "--t0", "1.5"]) == 0
    out = capsys.readouterr().out
    assert "49.06" in out and "packets/s" in out and "bit/s" in out and "regime" in out


@pytest.mark.parametrize("extra,option", [
    (["--p", "0"], "--p"), (["--p", "1.5"], "--p"), (["--p", "nan"], "--p"), (["--rtt", "-1"], "--rtt"),
    (["--rtt", "0"], "--rtt"), (["--wmax", "0.5"], "--wmax"), (["--b", "0"], "--b"), (["--t0", "0"], "--t0"),
    (["--mss", "0"], "--mss"), (["--rtt0", "0"], "--rtt0"),
    (["--plot", "x.png", "--p-min", "0.1", "--p-max", "0.01"], "--p-min/--p-max"),
])
@pytest.mark.parametrize("name", ["reno", "hybla"])
def test_cli_bad_input_exits_2(name, extra, option, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["model", name, "--rtt", "0.1", "--p", "0.01"] + extra
    assert mcli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option}:") and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_cli_argparse_errors_return_2(capsys):
    assert mcli.main(["model", "hybla", "--rtt", "0.1", "--p", "x"]) == 2
    assert mcli.main(["model", "vegas", "--rtt", "0.1", "--p", "0.1"]) == 2
    assert mcli.main(["model", "reno", "--p", "0.1"]) == 2
    assert "error:" in capsys.readouterr().err


def test_cli_plot(tmp_path, capsys):
    png = tmp_path / "sub" / "m.png"
    rc = mcli.main(["model", "hybla", "--rtt", "0.25", "--p", "1e-3", "--wmax", "550", "--plot", str(png),
                    "--p-min", "1e-4", "--p-max", "0.05", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["plot"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [f.name for f in png.parent.iterdir()] == ["m.png"]  # no temporary left behind


def test_cli_registers_on_a_parent_parser():
    import argparse

    parser = argparse.ArgumentParser()
    mcli.register(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["model", "reno", "--rtt", "0.2", "--p", "0.01"])
    assert args.func is mcli.run and args.b == 2 and math.isinf(args.wmax)


# --- units, link rate, BER, CUBIC and BBR (issue 25 item 6) ---------------------------------

def _json(argv, capsys):
    assert mcli.main(["model", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_takes_units_like_other_commands(capsys):
    with_units = _json(["pftk", "--rtt", "560ms", "--p", "1e-3", "--t0", "1500ms", "--mss", "1.5kB"], capsys)
    bare = _json(["pftk", "--rtt", "0.56", "--p", "1e-3", "--t0", "1.5", "--mss", "1500"], capsys)
    assert with_units == bare
    assert with_units["inputs"]["rtt_s"] == pytest.approx(0.56) and with_units["inputs"]["mss"] == 1500


def test_cli_default_mss_is_1460_and_said(capsys):
    d = _json(["reno", "--rtt", "0.2", "--p", "0.01"], capsys)
    assert d["inputs"]["mss"] == 1460
    assert d["throughput_bps"] == pytest.approx(d["throughput_pps"] * 8 * 1460)
    assert mcli.main(["model", "reno", "--rtt", "0.2", "--p", "0.01"]) == 0
    assert "MSS 1460 B (default)" in capsys.readouterr().out


def test_cli_rate_caps_every_model(capsys):
    free = _json(["reno", "--rtt", "560ms", "--p", "1e-4"], capsys)
    assert free["throughput_bps"] > 1e6 and free["regime"] == "unlimited"
    capped = _json(["reno", "--rtt", "560ms", "--p", "1e-4", "--rate", "1Mbps"], capsys)
    assert capped["throughput_bps"] == 1e6 and capped["regime"] == "link-limited"
    assert capped["throughput_pps"] == pytest.approx(1e6 / (8 * 1460))
    # below the rate, the cap changes nothing
    assert _json(["reno", "--rtt", "560ms", "--p", "1e-4", "--rate", "1Gbps"], capsys)["throughput_bps"] == \
        pytest.approx(free["throughput_bps"])


def test_ber_to_packet_loss():
    from longpipe.models.modern import ber_to_loss

    assert ber_to_loss(1e-6, 1500) == pytest.approx(1 - (1 - 1e-6) ** 12000, rel=1e-12)
    assert ber_to_loss(1e-6, 1500) == pytest.approx(0.011928, rel=1e-4)
    assert ber_to_loss(0.0, 1500) == 0.0
    assert ber_to_loss(1e-12, 40) == pytest.approx(320e-12, rel=1e-6)  # no cancellation at tiny BERs


def test_cli_ber_with_packet_size(capsys):
    d = _json(["reno", "--rtt", "560ms", "--ber", "1e-7", "--packet-size", "1000B"], capsys)
    assert d["inputs"]["p"] == pytest.approx(1 - (1 - 1e-7) ** 8000, rel=1e-12)
    assert d["inputs"]["ber"] == 1e-7 and d["inputs"]["packet_size"] == 1000
    # default packet size: MSS + 40 B of headers
    assert _json(["reno", "--rtt", "560ms", "--ber", "1e-7"], capsys)["inputs"]["packet_size"] == 1500
    assert _json(["reno", "--rtt", "560ms", "--ber", "1e-7", "--mss", "536"], capsys)["inputs"]["packet_size"] == 576
    same = _json(["reno", "--rtt", "560ms", "--p", repr(1 - (1 - 1e-7) ** 8000)], capsys)
    assert same["throughput_pps"] == pytest.approx(d["throughput_pps"], rel=1e-9)


@pytest.mark.parametrize("argv,option", [
    (["reno", "--rtt", "560ms", "--p", "0.01", "--ber", "1e-6"], "argument --ber"),
    (["reno", "--rtt", "560ms", "--ber", "1.5"], "--ber"),
    (["reno", "--rtt", "560ms", "--p", "0.01", "--packet-size", "1500"], "--packet-size"),
    (["reno", "--rtt", "560ms", "--ber", "1e-6", "--packet-size", "0B"], "--packet-size"),
    (["reno", "--rtt", "5 fortnights", "--p", "0.01"], "--rtt"),
    (["reno", "--rtt", "560ms", "--p", "0.01", "--rate", "25 furlongs"], "--rate"),
    (["reno", "--rtt", "560ms", "--p", "0.01", "--rate", "0Mbps"], "--rate"),
    (["reno", "--rtt", "560ms", "--p", "0.01", "--mss", "1460parsecs"], "--mss"),
    (["bbr", "--rtt", "560ms", "--p", "0.01"], "--rate"),
    (["cubic", "--rtt", "560ms", "--p", "0"], "--p"),
])
def test_cli_bad_units_and_loss_exit_2(argv, option, capsys):
    assert mcli.main(["model", *argv]) == 2
    err = capsys.readouterr().err
    assert f"error: {option}" in err and "Traceback" not in err


def test_cubic_response_function():
    from longpipe.models.modern import cubic_model, cubic_window

    # RFC 9438 section 5.1 with C = 0.4, beta = 0.7
    k = (0.4 * 3.7 / (4 * 0.3)) ** 0.25
    w, region = cubic_window(0.56, 1e-4)
    assert region == "cubic" and w == pytest.approx(k * 0.56**0.75 / 1e-4**0.75)
    # W ~ RTT^(3/4) / p^(3/4): 16x less loss gives 8x the window
    assert cubic_window(0.56, 1e-4 / 16)[0] == pytest.approx(8 * w)
    # short RTT, high loss: the Reno-friendly region, sqrt(3 / (2p)) (RFC 9438 section 4.3)
    w2, region2 = cubic_window(0.01, 0.01)
    assert region2 == "reno-friendly" and w2 == pytest.approx(math.sqrt(150))
    m = cubic_model(0.56, 1e-4, mss=1000)
    assert m.throughput_pps == pytest.approx(w / 0.56) and m.throughput_bps == pytest.approx(w / 0.56 * 8000)
    limited = cubic_model(0.56, 1e-4, wmax=50)
    assert limited.regime == "window-limited" and limited.throughput_pps == pytest.approx(50 / 0.56)
    # on a long path CUBIC's response beats Reno's sqrt(3/(2p)) window
    assert cubic_model(0.56, 1e-4).W > math.sqrt(3 / 2e-4)


def test_bbr_bandwidth_delay_bound():
    from longpipe.models.modern import bbr_bound

    b = bbr_bound(0.56, 0.01, 25e6, mss=1460)
    assert b.regime == "bandwidth-limited" and b.throughput_bps == pytest.approx(25e6 * 0.99)
    w = bbr_bound(0.56, 0.01, 25e6, wmax=100, mss=1460)
    assert w.regime == "window-limited" and w.throughput_pps == pytest.approx(100 / 0.56)
    with pytest.raises(ValueError, match="^rate:"):
        bbr_bound(0.56, 0.01, 0.0)


def test_cli_cubic_and_bbr(capsys):
    c = _json(["cubic", "--rtt", "560ms", "--ber", "1e-7", "--rate", "25Mbps"], capsys)
    b = _json(["bbr", "--rtt", "560ms", "--ber", "1e-7", "--rate", "25Mbps"], capsys)
    reno = _json(["reno", "--rtt", "560ms", "--ber", "1e-7", "--rate", "25Mbps"], capsys)
    # on GEO with bit errors: Reno < CUBIC < BBR's bound <= the link
    assert reno["throughput_bps"] < c["throughput_bps"] < b["throughput_bps"] <= 25e6
    assert c["regime"] == "cubic" and b["regime"] == "bandwidth-limited"


# --- models beside simulation: compare --plot --model (issue 25 item 6) ----------------------

def test_compare_model_names_are_checked():
    from longpipe.plots import parse_models

    assert parse_models("cubic, bbr") == ["cubic", "bbr"] and parse_models(None) == []
    for bad in ("vegas", "", ",", "cubic,vegas"):
        with pytest.raises(ValueError, match="^--model:"):
            parse_models(bad)


def test_model_line_uses_the_runs_own_inputs():
    import longpipe
    from longpipe.plots import model_inputs, model_line

    sc, _ = longpipe.load_scenario(Path(__file__).resolve().parents[1] / "examples" / "geo.toml")
    sc["duration"] = "20s"
    sc["link"][1]["loss"] = {"kind": "ber", "ber": 1e-6}
    res = longpipe.run(sc, seed=1)
    f = res.data["flows"][0]
    rtt, p, rate = model_inputs(res, 0, sc)
    assert rtt == f["mean_rtt_s"] and rate == 20e6
    assert p == (f["fast_recoveries"] + f["timeouts"]) / f["segments_sent"] > 0
    y, label = model_line("cubic", res, 0, sc)
    assert y == pytest.approx(mcli.evaluate("cubic", rtt, p, mss=f["mss"], rate=rate)["throughput_bps"])
    assert label.startswith("cubic model:")
    bbr, _ = model_line("bbr", res, 0, sc)
    assert bbr == pytest.approx(20e6 * (1 - p))


def test_compare_plot_with_models(tmp_path):
    import subprocess
    import sys

    geo = Path(__file__).resolve().parents[1] / "examples" / "geo.toml"
    base = [sys.executable, "-m", "longpipe", "compare", str(geo), "--tcp", "cubic,bbr", "--set", "duration=10s"]
    r = subprocess.run([*base, "--model", "cubic"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--model:" in r.stderr and "--plot" in r.stderr
    r = subprocess.run([*base, "--plot", str(tmp_path / "c.png"), "--model", "vegas"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2 and "--model:" in r.stderr and not (tmp_path / "c.png").exists()
    r = subprocess.run([*base, "--plot", str(tmp_path / "c.png"), "--model", "cubic,bbr,pftk"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
