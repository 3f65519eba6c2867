"""Fuzzing the sweep store's readers (hypothesis; the store is Python, so its reader is
fuzzed from Python: pyarrow's Parquet reader, our checks and everything that consumes
a store's rows). Issue 29.

From a real store (two grid points, two seeds: one part of four rows), each case damages
the part (bit flips, truncation, random bytes spliced in, zeroed ranges, another part's
bytes, files pyarrow writes with other columns and types), the journal of a killed sweep
(the same damage to its lines) or sweep.json (values at any path swapped for hostile
ones, keys removed or added, text-level edits), then

* ``read_part`` returns rows that satisfy every documented invariant, or raises
  ``RunFileError``; ``read_journal`` returns such rows and at most one error;
  ``Store.read_manifest`` returns a checked manifest or raises ``ScenarioError``;
  nothing else, never a hang;
* ``longpipe summary``, ``plot`` and ``report`` on the damaged store exit 0, or 2 with
  one line on stderr; never a traceback, never a hang;
* a resumed ``sweep`` replaces a damaged part with the original bytes.

`make test` runs LONGPIPE_HYPOTHESIS_STORE_EXAMPLES cases per test (default 150,
derandomized: each case reads a store through the CLI, about half a second); `make fuzz`
runs 3000.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longpipe import cli
from longpipe.api import ScenarioError
from longpipe.sweeps.store import (
    METRICS,
    RunFileError,
    Store,
    journal_line,
    part_bytes,
    read_journal,
    read_part,
    run_id,
)
from test_fuzz_cli import TINY as SCENARIO
from test_fuzz_cli import leaves

N = int(os.environ.get("LONGPIPE_HYPOTHESIS_STORE_EXAMPLES", "150"))
CASE_TIMEOUT_S = 60
SETTINGS = settings(max_examples=N, deadline=None, derandomize="LONGPIPE_HYPOTHESIS_RANDOM" not in os.environ,
                    database=None, suppress_health_check=list(HealthCheck), print_blob=True)
COUNTS: dict[str, int] = {}

@pytest.fixture(scope="module")
def seed_store():
    """A real store: flow.tcp = reno, hybla; seeds 1, 2."""
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        (d / "s.toml").write_text(SCENARIO)
        rc = cli.main(["sweep", str(d / "s.toml"), "--grid", "flow.tcp=reno,hybla", "--seeds", "2", "--out",
                       str(d / "store"), "--quiet", "--jobs", "1"])
        assert rc == 0
        yield d / "store", d / "s.toml"
    print("\nstore fuzz cases: " + ", ".join(f"{k} {v}" for k, v in sorted(COUNTS.items())))


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


@contextlib.contextmanager
def guard(what):
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        yield
    except _Hang:
        pytest.fail(f"no answer within {CASE_TIMEOUT_S} s: {what}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with guard(argv), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in argv])
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def one_line_or_ok(rc, out, err, argv):
    assert "Traceback" not in err, err
    assert rc in (0, 2), f"exit {rc} for {argv}: {err}"
    if rc == 2:
        lines = err.rstrip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{argv}: {err!r}"
        assert out == ""
    return rc


# --- run files -----------------------------------------------------------------------------

@st.composite
def damaged_bytes(draw, good: bytes, other: bytes):
    b = bytearray(good)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 6))
        n = len(b)
        i = draw(st.integers(0, max(n - 1, 0)))
        if op == 0 and n:  # bit flips
            b[i] ^= 1 << draw(st.integers(0, 7))
        elif op == 1:  # truncation
            del b[i:]
        elif op == 2:  # random bytes spliced in
            b[i:i] = draw(st.binary(min_size=1, max_size=64))
        elif op == 3 and n:  # a range zeroed
            j = min(n, i + draw(st.integers(1, 256)))
            b[i:j] = bytes(j - i)
        elif op == 4:  # another run's bytes, whole or in part
            k = draw(st.integers(0, len(other)))
            b = bytearray(other[:k] + bytes(b[k:]))
        elif op == 5 and n:  # the footer's length field
            b[max(0, n - 8):max(0, n - 4)] = draw(st.binary(min_size=4, max_size=4))
        elif op == 6:
            b = bytearray(draw(st.binary(max_size=4096)))
    return bytes(b)


def _other_table(draw, rid):
    """A Parquet file pyarrow writes, with columns and types near ours."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {"run_id": pa.array([rid]), "scenario_hash": pa.array(["0" * 16]), "longpipe_version": pa.array(["0"]),
            "seed": pa.array([1], pa.int64())}
    for m, t, _ in METRICS:
        cols[m] = pa.array([1.0 if t == "float64" else 1], pa.float64() if t == "float64" else pa.int64())
    cols["result"] = pa.array(["{}"])
    names = list(cols)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.integers(0, 4))
        k = draw(st.sampled_from(names))
        if op == 0:
            cols[k] = pa.array(["x"])
        elif op == 1:
            cols[k] = pa.array([None], pa.int64())
        elif op == 2:
            del cols[k]
            names.remove(k)
        elif op == 3:
            cols[draw(st.sampled_from(["extra", "flow.tcp", "Seed"]))] = pa.array([draw(st.integers(-5, 5))])
        else:
            cols[k] = pa.array([draw(st.integers(-(2**63), 2**63 - 1))], pa.int64())
        if not names:
            break
    rows = draw(st.integers(0, 2))
    t = pa.table({k: pa.concat_arrays([v] * rows) if rows else v.slice(0, 0) for k, v in cols.items()})
    buf = io.BytesIO()
    pq.write_table(t, buf)
    return buf.getvalue()


def check_row(row, rid=None):
    """The invariants of a row read_part or read_journal returns."""
    assert rid is None or row["run_id"] == rid
    assert isinstance(row["seed"], int) and 0 <= row["seed"] < 2**64
    assert run_id(row["scenario_hash"], row["seed"]) == row["run_id"]
    assert isinstance(row["result"], str)
    for m, t, _ in METRICS:
        v = row[m]
        assert v is None or isinstance(v, float if t == "float64" else int), (m, v)


@SETTINGS
@given(data=st.data())
def test_damaged_parts(seed_store, data):
    store, scenario = seed_store
    (part,) = (store / "runs").glob("part-*.parquet")
    with tempfile.TemporaryDirectory() as td:
        d = Path(td) / "store"
        shutil.copytree(store, d)
        victim = d / "runs" / part.name
        good = part.read_bytes()
        other = part_bytes(Store(store).read()[1:])  # another part: three of the runs
        if data.draw(st.integers(0, 3)) == 0:
            raw = _other_table(data.draw, Store(store).read()[0]["run_id"])
            COUNTS["part: other tables"] = COUNTS.get("part: other tables", 0) + 1
        else:
            raw = data.draw(damaged_bytes(good, other))
            COUNTS["part: damaged bytes"] = COUNTS.get("part: damaged bytes", 0) + 1
        victim.write_bytes(raw)
        with guard("read_part"):
            try:
                rows = read_part(victim)
            except RunFileError as e:
                assert "\n" not in str(e) and str(e)
                rows = None
        if rows is not None:
            assert rows and [r["run_id"] for r in rows] == sorted({r["run_id"] for r in rows})
            for row in rows:
                check_row(row)
        row = rows
        argv = data.draw(st.sampled_from([["summary", d], ["summary", d, "--json", "--metric", "flows[0].timeouts"],
                                          ["plot", d, "--x", "flow.tcp", "--out", Path(td) / "p.png"]]))
        one_line_or_ok(*run_cli(argv), argv)
        if row is None and data.draw(st.integers(0, 19)) == 0:  # a resumed sweep repairs it (slow: sometimes)
            rc, _, err = run_cli(["sweep", scenario, "--grid", "flow.tcp=reno,hybla", "--seeds", "2", "--out", d,
                                  "--quiet", "--jobs", "1"])
            assert rc == 0, err
            assert victim.read_bytes() == good


@SETTINGS
@given(data=st.data())
def test_damaged_journals(seed_store, data):
    """The store's runs as a killed sweep's journal, damaged; its intact records are read,
    a damaged one is one line naming the journal."""
    store, _ = seed_store
    rows = Store(store).read()
    with tempfile.TemporaryDirectory() as td:
        d = Path(td) / "store"
        shutil.copytree(store, d)
        for p in (d / "runs").iterdir():
            p.unlink()
        good = b"".join(journal_line(r) for r in rows)
        other = b"".join(journal_line(r) for r in rows[::-1])
        victim = d / "runs" / "_journal-pid999999999-0.jsonl"  # above any pid_max: never alive
        victim.write_bytes(data.draw(damaged_bytes(good, other)))
        COUNTS["journal: damaged bytes"] = COUNTS.get("journal: damaged bytes", 0) + 1
        with guard("read_journal"):
            try:
                got, err = read_journal(victim)
            except RunFileError as e:
                got, err = [], e
        assert err is None or ("\n" not in str(err) and str(err))
        for row in got:
            check_row(row)
            assert row in rows, "an intact record is a run that was written"
        argv = data.draw(st.sampled_from([["summary", d], ["summary", d, "--json", "--metric", "flows[0].timeouts"],
                                          ["report", d, "--out", Path(td) / "r.html"]]))
        one_line_or_ok(*run_cli(argv), argv)


# --- sweep.json ----------------------------------------------------------------------------

HOSTILE = [0, -1, 1, 2**63, 2**64, 10**30, 0.5, math.nan, math.inf, "", "x", "\n", "flow.tcp", "seed", "log",
           "lin", "list", True, None, [], {}, [1], [[[]]], {"key": 1}, {"key": "flow.tcp", "values": []},
           {"key": "flow.tcp", "values": ["reno"], "scale": "cubic"}, "0" * 16, "abcdef0123456789"]


@SETTINGS
@given(data=st.data())
def test_damaged_manifests(seed_store, data):
    store, _ = seed_store
    doc = json.loads((store / "sweep.json").read_text())
    with tempfile.TemporaryDirectory() as td:
        d = Path(td) / "store"
        shutil.copytree(store, d)
        if data.draw(st.integers(0, 4)) == 0:  # text-level edits
            text = (store / "sweep.json").read_text()
            for _ in range(data.draw(st.integers(1, 4))):
                i = data.draw(st.integers(0, len(text)))
                j = min(len(text), i + data.draw(st.integers(0, 8)))
                text = text[:i] + data.draw(st.sampled_from(["", "[", "]", "{", "}", '"', ",", "1e999", "\0", "null",
                                                              "\ufeff", "-"])) + text[j:]
            (d / "sweep.json").write_text(text)
            COUNTS["manifest: text"] = COUNTS.get("manifest: text", 0) + 1
        else:
            m = copy.deepcopy(doc)
            for _ in range(data.draw(st.integers(1, 3))):
                paths = [p for p, _ in leaves(m) if p]
                if not paths:
                    break
                path = data.draw(st.sampled_from(paths))
                parent = m
                for p in path[:-1]:
                    parent = parent[p]
                op = data.draw(st.integers(0, 3))
                if op <= 1:
                    parent[path[-1]] = copy.deepcopy(data.draw(st.sampled_from(HOSTILE)))
                elif op == 2 and isinstance(parent, dict):
                    del parent[path[-1]]
                elif isinstance(parent, list):
                    parent.append(copy.deepcopy(data.draw(st.sampled_from(HOSTILE))))
            (d / "sweep.json").write_text(json.dumps(m))
            COUNTS["manifest: values"] = COUNTS.get("manifest: values", 0) + 1
        with guard("read_manifest"):
            try:
                Store(d).read_manifest()
            except ScenarioError as e:
                assert "\n" not in str(e) and str(d / "sweep.json") in str(e)
        argv = data.draw(st.sampled_from([["summary", d], ["summary", d, "--csv"],
                                          ["plot", d, "--x", "flow.tcp", "--out", Path(td) / "p.png"],
                                          ["report", d, "--out", Path(td) / "r.html"]]))
        one_line_or_ok(*run_cli(argv), argv)
