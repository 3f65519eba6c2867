"""Golden runs: the examples and every ``reproduce --quick`` simulation give the results
recorded in ``tests/golden/runs.jsonl`` (see ``tests/golden/record.py``), byte for byte
up to the wall time: result JSON, every trace column, every pcap and every column of the
applications' record tables."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
from record import digest, digest_records, stable

from longpipe import _core

RUNS = Path(__file__).resolve().parent / "golden" / "runs.jsonl"


def _diff(a, b, path=""):
    """Paths where two JSON values differ (at most a few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: recorded {a!r}, now {b!r}"]


def _replay(rec):
    js, traces, pcaps, _wall, records = _core.run(json.dumps(rec["scenario"]), rec["seed"], rec["trace_all"],
                                                  rec["trace_flows"], rec["pcap"], records=True)
    t, p = digest(traces, pcaps)
    problems = _diff(rec["result"], stable(js))
    problems += _diff(rec.get("records", {}), digest_records(records), ".records")
    problems += _diff(rec["traces"], t, ".traces") + _diff(rec["pcaps"], p, ".pcaps")
    return rec["scenario"].get("name", "?"), problems


@pytest.mark.slow
def test_golden_runs_unchanged():
    recs = [json.loads(line) for line in RUNS.read_text().splitlines()]
    assert len(recs) > 100
    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(_replay, recs))
    bad = [(i, name, p) for i, (name, p) in enumerate(results) if p]
    msg = "\n".join(f"run {i} ({name}): " + "; ".join(p[:5]) for i, name, p in bad[:20])
    assert not bad, f"{len(bad)} of {len(recs)} golden runs changed:\n{msg}"


@pytest.mark.slow
def test_tcp_matrix_table_unchanged():
    """The readable TCP matrix (tests/golden/table.md): a change that moves any cell shows
    in a diff a reviewer can read (``python tests/golden/matrix.py`` rewrites it)."""
    import matrix

    now = matrix.table(matrix.run_all())
    recorded = matrix.TABLE.read_text()
    assert now == recorded, "\n".join(
        f"- {a}\n+ {b}" for a, b in zip(recorded.splitlines(), now.splitlines()) if a != b)


def test_the_work_estimate_bounds_the_events_of_every_golden_run():
    """`sim/estimate.rs` is an upper estimate (docs/limits.md): the events it predicts
    before anything is built are at least those each golden run executed."""
    below = []
    for line in RUNS.read_text().splitlines():
        rec = json.loads(line)
        sc = dict(rec["scenario"], seed=rec["seed"])
        est = _core.validate(json.dumps(sc))["events_estimate"]
        ran = rec["result"]["sim"]["events"]
        if est < ran:
            below.append(f"{rec['scenario'].get('name')}: {est:.0f} estimated < {ran} run")
    assert not below, below
