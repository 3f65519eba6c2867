import json

import numpy as np
import pytest

from conftest import cli
from longpipe.models import data_sent, hybla_model, hybla_rho, hybla_throughput, reno_no_timeout


def test_rho():
    assert hybla_rho(0.025) == 1.0
    assert hybla_rho(0.01) == 1.0
    assert hybla_rho(0.55) == pytest.approx(22.0)
    with pytest.raises(ValueError, match="rtt"):
        hybla_rho(0)


def test_solution_satisfies_equations_6_and_9():
    m = hybla_model(0.25, 1e-3)
    p, w, rho = 1e-3, m.W, m.rho
    L = 1 + p * w
    D = (2 - p) ** (w - 1) / 2**w
    X = (1 - D) * w / rho**2
    y9 = X * (D * w + rho**2 * (X + 1) / 2) + 3 * w / 4 - w / (4 * L)
    assert y9 == pytest.approx(1 / p + w - L, rel=1e-9)
    assert m.throughput_pps == pytest.approx((1 / p + w - L) / ((X + 2 - 1 / L) * 0.25), rel=1e-12)


@pytest.mark.parametrize("rtt,p", [(0.1, 1e-4), (0.25, 1e-3), (0.55, 1e-2), (0.55, 0.05), (1.0, 1e-5)])
def test_newton_and_bracketed_fallback_agree(rtt, p):
    a = hybla_model(rtt, p)
    b = hybla_model(rtt, p, newton=False)
    assert a.method == "newton" and b.method == "brent"
    assert a.W == pytest.approx(b.W, rel=1e-8)


def test_regime_choice_and_window_limit():
    assert hybla_model(0.1, 1e-2, 550).regime == "unlimited"
    m = hybla_model(0.55, 1e-4, 550)
    assert m.regime == "window-limited" and m.W > 550
    # p -> 0: Wm/RTT
    assert hybla_throughput(0.55, 1e-9, 550) == pytest.approx(550 / 0.55, rel=0.01)


def test_rho_one_is_close_to_the_reno_form():
    # With rho = 1 the Hybla model is a Reno model with one ACK per packet (b = 1). The
    # two differ in bookkeeping (1/p vs (1-p)/p, the D and L terms, the FR phase), which
    # stays within 2 % for p <= 0.01 (0.3 %, 0.7 %, 1.8 % at 1e-4, 1e-3, 1e-2).
    for p in (1e-4, 1e-3, 1e-2):
        h = hybla_throughput(0.025, p)
        r = reno_no_timeout(0.025, p, b=1)
        assert h == pytest.approx(r, rel=0.02), (p, h, r)


def test_monotonic():
    ps = [1e-4, 1e-3, 1e-2, 5e-2]
    for rtt in (0.1, 0.25, 0.55):
        v = [hybla_throughput(rtt, p, 550) for p in ps]
        assert all(a > b for a, b in zip(v, v[1:]))
    # Hybla's point: throughput falls much less with RTT than Reno's
    h = [hybla_throughput(r, 1e-3) for r in (0.1, 0.55)]
    n = [reno_no_timeout(r, 1e-3, b=1) for r in (0.1, 0.55)]
    assert h[0] / h[1] < 0.5 * n[0] / n[1]


def test_invalid():
    with pytest.raises(ValueError, match="p"):
        hybla_model(0.1, 0)
    with pytest.raises(ValueError, match="wmax"):
        hybla_model(0.1, 0.01, wmax=0)


def test_data_sent_curve():
    t = np.array([0.0, 0.1, 1.0, 3.0])
    h = data_sent(t, 0.55, 32, "hybla")
    r = data_sent(t, 0.55, 32, "reno")
    assert h[0] == 0 and r[0] == 0
    assert (h[1:] > r[1:]).all()
    # Hybla's curve is Reno's with RTT = RTT0
    assert np.allclose(data_sent(t, 0.55, 32, "hybla"), data_sent(t, 0.025, 32, "reno"))
    # continuity at t_gamma = RTT0 log2(gamma)
    tg = 0.025 * 5
    assert data_sent(tg - 1e-9, 0.55, 32) == pytest.approx(data_sent(tg + 1e-9, 0.55, 32), rel=1e-6)


def test_model_cli(tmp_path):
    r = cli("model", "hybla", "--rtt", "0.55", "--p", "0.001", "--wmax", "550", "--json", check=True)
    d = json.loads(r.stdout)
    assert d["regime"] == "window-limited" and d["throughput_bps"] == pytest.approx(d["throughput_pps"] * 8 * 1460)
    r = cli("model", "pftk", "--rtt", "0.55", "--p", "0.001", "--t0", "1.5", "--json", check=True)
    assert json.loads(r.stdout)["throughput_pps"] == pytest.approx(49.06, abs=0.01)
    png = tmp_path / "m.png"
    cli("model", "reno", "--rtt", "0.2", "--p", "0.01", "--plot", png, check=True)
    assert png.read_bytes()[:4] == b"\x89PNG"
    for bad in (["--p", "0"], ["--p", "1.5"], ["--rtt", "-1"]):
        args = ["model", "hybla", "--rtt", "0.1", "--p", "0.01"] + bad
        r = cli(*args)
        assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr
