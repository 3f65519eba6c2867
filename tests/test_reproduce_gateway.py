"""`longpipe reproduce gateway --quick` end to end."""

import csv
import io
import json

import pytest

from conftest import cli
from longpipe.experiments import gateway


@pytest.mark.slow
def test_reproduce_gateway_quick(tmp_path):
    out = tmp_path / "gw"
    r = cli("reproduce", "gateway", "--quick", "--out", out, check=True)
    # exactly the files it declares (tests/test_reproduce_outputs.py holds the committed ones to them)
    assert sorted(p.name for p in out.iterdir() if p.name != "store") == gateway.outputs(quick=True)
    assert "paper" in r.stdout
    rows = json.loads((out / "table.json").read_text())
    assert [row["ber"] for row in rows] == [0.0, 1e-9, 1e-8, 1e-7]
    assert rows[0]["speedup"] >= 10
    # without the gateway the 8760 B window over ~352 ms limits every BER to ~0.2 Mbit/s
    for row in rows:
        assert row["without_mbps"] == pytest.approx(8760 * 8 / 0.352 / 1e6, rel=0.1)
    # split mode keeps the client's window limit
    for row in rows:
        assert row["split_mbps"] < 0.3
    # with it, more bit errors never help
    w = [row["with_mbps"] for row in rows]
    assert all(a >= b * 0.98 for a, b in zip(w, w[1:]))
    # the finite-client-speed study (issue 30 item 9): a client that reads faster than the
    # line never overflows (the result is the instant reader's); one that reads slower
    # overflows its buffer already at BER 0 (go-back-N) and loses throughput
    speed = {row["read_rate"]: row for row in csv.DictReader(io.StringIO((out / "client_speed.csv").read_text()))}
    assert set(speed) == {rr or "at once" for rr in gateway.READ_RATES}
    for rr in ("at once", "5Mbps"):
        assert float(speed[rr]["go_back_n_ber0"]) == 0
    assert float(speed["5Mbps"]["with_mbps_ber0"]) == pytest.approx(float(speed["at once"]["with_mbps_ber0"]))
    assert float(speed["4Mbps"]["go_back_n_ber0"]) > 0
    assert float(speed["4Mbps"]["with_mbps_ber0"]) < 0.95 * float(speed["at once"]["with_mbps_ber0"])
    assert "finite client speed:" in r.stdout
    for f in ("tsg_without_gateway.png", "tsg_with_gateway.png"):
        assert (out / f).read_bytes()[:4] == b"\x89PNG"
    assert (out / "table1_throughput_vs_ber.png").read_bytes()[:4] == b"\x89PNG"
    # the runs are in a store (4 BERs x 3 modes x 2 seeds); a second call reuses them
    from longpipe.sweeps.store import Store

    assert len(Store(out / "store" / "table1").read()) == 24
    stored = sorted((out / "store" / "table1" / "runs").iterdir())
    table = (out / "table.json").read_bytes()
    mtimes = [p.stat().st_mtime_ns for p in stored]
    r2 = cli("reproduce", "gateway", "--quick", "--out", out, check=True)
    assert (out / "table.json").read_bytes() == table and r2.stdout == r.stdout
    assert [p.stat().st_mtime_ns for p in stored] == mtimes, "stored runs are not run again"
    # and it reads as one HTML page with the paper cited
    cli("report", out, check=True)
    page = (out / "report.html").read_text()
    assert "Miyake" in page and "data:image/png;base64," in page
