import math

import pytest

from longpipe.models import pftk_approx, pftk_full, reno_no_timeout, throughput

# ALGORITHMS.md §6 check values: RTT 0.55 s, T0 1.5 s, b 2
CHECK = [
    (1e-3, math.inf, 49.06, 49.49),
    (1e-2, math.inf, 14.52, 14.83),
    (1e-4, 64, 104.93, 116.36),
]


@pytest.mark.parametrize("p,wmax,full,approx", CHECK)
def test_pftk_check_values(p, wmax, full, approx):
    assert pftk_full(0.55, p, b=2, t0=1.5, wmax=wmax) == pytest.approx(full, abs=0.006)
    assert pftk_approx(0.55, p, b=2, t0=1.5, wmax=wmax) == pytest.approx(approx, abs=0.006)


@pytest.mark.parametrize("fn", [pftk_full, pftk_approx, reno_no_timeout])
def test_window_limit_as_p_goes_to_zero(fn):
    # with almost no loss the window limit rules: Wm/RTT (PFTK's limited form tends to
    # Wm/RTT from below since the sawtooth still spends time below Wm)
    b = fn(0.2, 1e-9, wmax=50)
    assert b == pytest.approx(50 / 0.2, rel=0.02)


@pytest.mark.parametrize("fn", [pftk_full, pftk_approx, reno_no_timeout])
def test_monotonic_in_p_and_rtt(fn):
    ps = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1]
    v = [fn(0.3, p) for p in ps]
    assert all(a > b for a, b in zip(v, v[1:]))
    r = [fn(rtt, 1e-3) for rtt in (0.05, 0.1, 0.3, 0.6)]
    assert all(a > b for a, b in zip(r, r[1:]))


def test_square_root_law_at_small_p():
    # without timeouts and window limit, B ≈ sqrt(3/(2bp))/RTT for small p
    p = 1e-5
    assert reno_no_timeout(0.1, p) == pytest.approx(math.sqrt(3 / (4 * p)) / 0.1, rel=0.02)


@pytest.mark.parametrize("kw,name", [({"rtt": 0}, "rtt"), ({"p": 0}, "p"), ({"p": 1.5}, "p"),
                                     ({"b": 0}, "b"), ({"t0": -1}, "t0"), ({"wmax": 0}, "wmax")])
def test_invalid_inputs_raise(kw, name):
    args = {"rtt": 0.1, "p": 0.01, "b": 2, "t0": 1.0, "wmax": math.inf} | kw
    for fn in (pftk_full, pftk_approx, reno_no_timeout):
        with pytest.raises(ValueError, match=name):
            fn(**args)
    with pytest.raises(ValueError, match="model"):
        throughput("cubic", 0.1, 0.01)
