"""NewReno under random loss against the PFTK full model (Padhye et al. 2000).

RTT 200 ms, p in {0.001, 0.01}, window not limiting, losses on data packets only;
mean goodput of 10 seeds within 30 % of the model evaluated at the simulated mean RTT,
b = 2 (delayed ACKs) and T0 = 1 s (the RTO floor, which the RTO sits on at this RTT).
"""

import numpy as np
import pytest

import longpipe
from longpipe.models import pftk_full


def scenario(p):
    return {
        "name": f"pftk-p{p}",
        "duration": "300s",
        "warmup": "20s",
        "link": [{"a": "s", "b": "c", "rate": "100Mbps", "delay": "100ms", "queue": {"limit": "1000pkt"},
                  "loss": {"kind": "bernoulli", "p": p}}],
        # the classic profile PFTK models: Reno-style recovery, 1 s minimum RTO, no SACK
        "flow": [{"src": "s", "dst": "c", "tcp": "newreno", "stack": "classic", "mss": 1460, "rwnd": "16MB"}],
    }


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.001, 0.01])
def test_newreno_random_loss_matches_pftk(p):
    goodput, rtts = [], []
    for seed in range(1, 11):
        f = longpipe.run(scenario(p), seed=seed).data["flows"][0]
        goodput.append(f["goodput_bps"])
        rtts.append(f["mean_rtt_s"])
    sim = float(np.mean(goodput))
    rtt = float(np.mean(rtts))
    model = pftk_full(rtt=rtt, p=p, b=2, t0=1.0) * 1460 * 8
    err = sim / model - 1
    print(f"p={p}: simulated {sim / 1e3:.1f} kbit/s (mean of 10 seeds, RTT {rtt * 1e3:.1f} ms), "
          f"PFTK full {model / 1e3:.1f} kbit/s, error {err:+.1%}")
    assert abs(err) < 0.30
