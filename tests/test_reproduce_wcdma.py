"""`longpipe reproduce wcdma --quick`: end to end, and the paper's robust qualitative facts."""

import json

import pytest

from conftest import cli
from longpipe.experiments import wcdma


@pytest.mark.slow
def test_reproduce_wcdma_quick(tmp_path):
    out = tmp_path / "wcdma"
    r = cli("reproduce", "wcdma", "--quick", "--out", out, check=True)
    # exactly the files it declares (tests/test_reproduce_outputs.py holds the committed ones to them)
    assert sorted(p.name for p in out.iterdir() if p.name != "store") == wcdma.outputs(quick=True)
    assert "paper" in r.stdout
    res = json.loads((out / "results.json").read_text())
    for row in res["fig6"]:
        # a larger TCP buffer never hurts, and 128 KB adds nothing over 64 KB
        tput = [row[f"{b}KB"] for b in (8, 16, 32, 64, 128)]
        assert all(a <= b * 1.02 for a, b in zip(tput, tput[1:])), row
        assert row["128KB"] == pytest.approx(row["64KB"], rel=0.1)
        assert row["64KB"] <= row["limit_bps"] * 1.001
    # RFC 2414 shortens every transfer
    assert all(r["saving_s"] > 0 for r in res["fig7"])
    # larger MTU is ahead at 10 s
    k = [r["kbytes_at_10s"] for r in res["fig8"]]
    assert k == sorted(k)
    nosack, sack = res["figs9-12"]
    assert sack["timeouts"] == 0 and nosack["timeouts"] >= 1
    assert sack["completion_time_s"] < nosack["completion_time_s"]
    for f in ("fig6_buffer.png", "fig7_initial_window.png", "fig8_mtu.png", "fig9_tsg_nosack.png",
              "fig12_tsg_sack_zoom.png"):
        assert (out / f).read_bytes()[:4] == b"\x89PNG"
