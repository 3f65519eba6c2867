"""`longpipe reproduce hybla --quick`: runs end to end, prints paper vs ours, writes figures."""

import json

import pytest

from conftest import cli
from longpipe.experiments import hybla


@pytest.mark.slow
def test_reproduce_hybla_quick(tmp_path):
    out = tmp_path / "hybla"
    r = cli("reproduce", "hybla", "--quick", "--out", out, check=True)
    # exactly the files it declares (tests/test_reproduce_outputs.py holds the committed ones to them)
    assert sorted(p.name for p in out.iterdir() if p.name != "store") == hybla.outputs(quick=True)
    assert "paper:" in r.stdout and "ours:" in r.stdout
    rows = json.loads((out / "table-newreno-recovery.json").read_text())
    sack = json.loads((out / "table-sack.json").read_text())
    assert len(rows) == len(sack) == 9
    for row, srow in zip(rows, sack):
        # SACK repairs several losses per RTT: Hybla with SACK is not slower
        assert srow["hybla_sim_pps"] > 0.95 * row["hybla_sim_pps"]
        # the simulator's Hybla must beat its NewReno on every point (the paper's premise)
        assert row["hybla_sim_pps"] > row["newreno_sim_pps"]
        # the Reno model reference tracks simulated NewReno (a check of the simulator)
        assert abs(row["reno_err"]) < 0.25, row
    for f in ("fig1_data_sent.png", "fig4_rtt100ms.png", "fig5_rtt250ms.png", "fig6_rtt550ms.png"):
        assert (out / f).read_bytes()[:4] == b"\x89PNG"
