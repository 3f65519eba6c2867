"""`longpipe reproduce peach --quick` end to end: seed 004's fig. 5 shape, the congestion
case and the probe-ACK mechanism."""

import json

import pytest

from conftest import cli
from longpipe.experiments import peach


@pytest.mark.slow
def test_reproduce_peach_quick(tmp_path):
    out = tmp_path / "peach"
    r = cli("reproduce", "peach", "--quick", "--out", out, check=True)
    # exactly the files it declares (tests/test_reproduce_outputs.py holds the committed ones to them)
    assert sorted(p.name for p in out.iterdir() if p.name != "store") == peach.outputs(quick=True)
    assert "Utsumi" in r.stdout
    rows = json.loads((out / "table.json").read_text())
    at = {(x["variant"], x["p"]): x for x in rows}
    assert sorted({x["p"] for x in rows}) == [0.0, 0.01, 0.05, 0.1]
    assert {x["variant"] for x in rows} == {"newreno", "peach", "peach+", "cherry", "newreno-sack"}
    # without errors the start phases fill the 10 Mbit/s pipe (1 MB window over 550 ms)
    for v in ("peach", "peach+"):
        assert at[(v, 0.0)]["throughput_mbps"] > 8
        assert at[(v, 0.0)]["probe_segments"] > 600, "43 + 640 start-phase probes"
    assert at[("newreno", 0.0)]["probe_segments"] == 0
    # NewReno collapses; the Peach family stays far above it at every error rate
    assert at[("newreno", 0.01)]["throughput_mbps"] < 0.25 * at[("newreno", 0.0)]["throughput_mbps"]
    for p in (0.01, 0.05, 0.1):
        nr = at[("newreno", p)]["throughput_mbps"]
        for v in ("peach", "peach+", "cherry"):
            assert at[(v, p)]["throughput_mbps"] > 3 * nr, (v, p)
        assert at[("peach+", p)]["throughput_mbps"] > at[("peach", p)]["throughput_mbps"], p
    # congestion: the priority queue is what keeps the probes from hurting NewReno
    cong = {(x["newcomer"], x["queue"]): x for x in json.loads((out / "congestion.json").read_text())}
    for x in ("peach", "peach+", "cherry"):
        assert cong[(x, "priority")]["cross_mbps"] > cong[(x, "droptail")]["cross_mbps"] + 1, x
        assert cong[(x, "priority")]["packets_low"] > 0
    assert cong[("newreno", "priority")]["packets_low"] == 0
    assert cong[("newreno", "priority")]["drops_low"] == 0
    # an unmodified receiver: dummies become duplicate ACKs
    probe = {(x["tcp"], x["probe_ack"], x["p"]): x for x in json.loads((out / "probe_ack.json").read_text())}
    assert probe[("peach", "plain", 0.0)]["fast_recoveries"] > 0
    assert probe[("peach", "flagged", 0.0)]["fast_recoveries"] == 0
    assert probe[("peach", "plain", 0.0)]["probe_acks"] == 0
    assert probe[("peach", "flagged", 0.01)]["throughput_mbps"] > probe[("peach", "plain", 0.01)]["throughput_mbps"]
    for f in ("fig5_throughput_vs_error.png", "congestion.png"):
        assert (out / f).read_bytes()[:4] == b"\x89PNG"
    assert "AGREES" in r.stdout and "fig. 5" in (out / "report.md").read_text()
    # the runs are stored; a second call reuses them and prints the same
    r2 = cli("reproduce", "peach", "--quick", "--out", out, check=True)
    assert r2.stdout == r.stdout
    cli("report", out, check=True)
    assert "Utsumi" in (out / "report.html").read_text()
