"""Records the golden runs: every example, every ``reproduce NAME --quick`` and the TCP
matrix (``matrix.py``: every congestion control on each stack, with its time series, and
pcaps of the 600 ms, 1 % runs).

    python tests/golden/record.py            # rewrites tests/golden/runs.jsonl

Each line is one call of the core (``longpipe._core.run``): its inputs (scenario JSON,
seed, trace and pcap options) and what it returned, with the wall time removed: the
result JSON, and SHA-256 digests of every trace column and pcap file.
``tests/test_golden.py`` replays the inputs and asserts the same outputs, so a change
of the core that moves any number shows up with the scenario that moved. Re-record
only for a change that is meant to move results, and say which and why in CHANGELOG.md.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "runs.jsonl"


def digest(traces, pcaps) -> tuple[dict, dict]:
    import numpy as np

    t = {}
    for fid in sorted(traces, key=int):
        for col in sorted(traces[fid]):
            a = np.ascontiguousarray(np.asarray(traces[fid][col]))
            t[f"{fid}.{col}"] = hashlib.sha256(a.tobytes()).hexdigest()[:16]
    p = {spec: hashlib.sha256(bytes(b)).hexdigest()[:16] for spec, b in pcaps}
    return t, p


def digest_records(records) -> dict:
    """SHA-256 digests of the applications' record columns (empty: no applications)."""
    import numpy as np

    out = {}
    for table in sorted(records or {}):
        for col in sorted(records[table]):
            a = np.ascontiguousarray(np.asarray(records[table][col]))
            if a.size:
                out[f"{table}.{col}"] = hashlib.sha256(a.tobytes()).hexdigest()[:16]
    return out


def stable(result_json: str) -> dict:
    d = json.loads(result_json)
    d.get("sim", {}).pop("wall_s", None)
    return d


def main() -> int:
    sys.path.insert(0, str(ROOT / "python"))
    import longpipe._core as core
    from longpipe import api, cli

    real = core.run
    lock = threading.Lock()
    calls = []

    def recording(text, seed=None, trace_all=False, trace_flows=None, pcap=None, **kw):
        out = real(text, seed, trace_all, trace_flows, pcap, **kw)
        js, traces, pcaps, _wall = out[:4]
        t, p = digest(traces, pcaps)
        rec = {"scenario": json.loads(text), "seed": seed, "trace_all": trace_all, "trace_flows": trace_flows,
               "pcap": pcap, "result": stable(js), "traces": t, "pcaps": p}
        r = digest_records(out[4]) if len(out) > 4 else {}
        if r:  # only runs with applications have tables
            rec["records"] = r
        with lock:
            calls.append(rec)
        return out

    core.run = recording
    api._core.run = recording
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for ex in sorted((ROOT / "examples").glob("*.toml")):
            api.run(ex)
        api.run(ROOT / "examples/geo.toml", pcap=["gw-client", "server-gw"], timeseries=True)
        api.run(ROOT / "examples/wcdma.toml", overrides={"flow.sack": True}, timeseries=True)
        import matrix

        for _label, sc in matrix.runs():
            core.run(json.dumps(sc), None, True, None, matrix.pcap(sc))
        for name in ("hybla", "wcdma", "gateway", "peach", "atm"):
            rc = cli.main(["reproduce", name, "--quick", "--out", f"{tmp}/{name}", "--jobs", "1"])
            assert rc == 0, name
    # Threads may finish out of order; the key makes the file order stable.
    calls.sort(key=lambda r: json.dumps([r["scenario"], r["seed"], r["trace_all"], r["trace_flows"], r["pcap"]],
                                        sort_keys=True))
    with OUT.open("w") as f:
        for r in calls:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(calls)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
