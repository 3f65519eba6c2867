"""Hostile input, round 2 (issue 29): the sweep store (one owner format, damaged files,
concurrent sweeps), seeds and grids beyond any sense, options checked before anything
is written, the Python API's sweep arguments, metrics that name nothing, ATM keys."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import longpipe
from conftest import cli
from longpipe import ScenarioError
from longpipe.sweeps.store import Store, part_bytes
from test_hostile import GOOD, bad, snapshot, write

TINY = GOOD.replace('duration = "2s"', 'duration = "1s"')


@pytest.fixture
def tiny(tmp_path):
    return write(tmp_path, TINY, "tiny.toml")


@pytest.fixture
def store(tmp_path, tiny):
    """A finished sweep: flow.tcp = newreno, hybla; seeds 1, 2 (four runs)."""
    d = tmp_path / "store"
    cli("sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--seeds", "2", "--out", d, "--quiet", check=True)
    return d


def files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def lp(*args, timeout=300, limit_as=None):
    """`python -m longpipe ARGS` with a hang guard (and an address-space cap)."""
    pre = None
    if limit_as is not None:
        def pre():
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    return subprocess.run([sys.executable, "-m", "longpipe", *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, preexec_fn=pre)


# --- item 2: a store has one owner format ------------------------------------------------

def test_run_seeds_into_a_grid_store_is_refused(tmp_path, tiny, store):
    before = files(store)
    bad(cli("run", tiny, "--seeds", "4", "--out", store), str(store), "holds a sweep over flow.tcp",
        "over no grid keys")
    assert files(store) == before
    # a sweep over other keys is refused the same way
    bad(cli("sweep", tiny, "--grid", "flow.sack=false,true", "--out", store), "holds a sweep over flow.tcp")
    assert files(store) == before


def test_a_store_that_mixes_variants_is_never_pooled(store):
    """What the bug left behind (axes reset to []): summary refuses it instead of pooling
    NewReno and Hybla into one mean."""
    man = json.loads((store / "sweep.json").read_text())
    man["axes"] = []
    (store / "sweep.json").write_text(json.dumps(man))
    for cmd in (["summary", store], ["report", store]):
        bad(cli(*cmd), "holds a run over flow.tcp", "mixes variants")


def test_run_seeds_into_its_own_store_adds_seeds(tmp_path, tiny):
    d = tmp_path / "seeds"
    cli("run", tiny, "--seeds", "2", "--out", d, "--quiet", check=True)
    cli("run", tiny, "--seeds", "3..4", "--out", d, "--quiet", check=True)
    assert json.loads((d / "sweep.json").read_text())["seeds"] == [1, 2, 3, 4]
    assert len(Store(d).read()) == 4


# --- item 5: damaged stores ------------------------------------------------------------------

def _damage(store: Path, how: str) -> Path:
    """Damages the store's part (its four runs) the way ``how`` says."""
    (victim,) = (store / "runs").glob("part-*.parquet")
    good = victim.read_bytes()
    if how == "empty":
        victim.write_bytes(b"")
    elif how == "truncated":
        victim.write_bytes(good[: len(good) // 2])
    elif how == "garbage":
        victim.write_bytes(bytes(range(256)) * 8)
    elif how == "other columns":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"run_id": [victim.stem], "goodput_bps": ["fast"]}), victim)
    elif how == "another part":  # a part longpipe would write, of other runs than its name says
        victim.write_bytes(part_bytes(Store(store).read()[1:]))
    elif how == "directory":
        victim.unlink()
        victim.mkdir()
    elif how == "FIFO":
        victim.unlink()
        os.mkfifo(victim)
    elif how == "symlink loop":
        victim.unlink()
        victim.symlink_to(victim.name)
    return victim


REPLACEABLE = ["empty", "truncated", "garbage", "other columns", "another part"]
FOREIGN = ["directory", "FIFO", "symlink loop"]


@pytest.mark.parametrize("how", REPLACEABLE + FOREIGN)
def test_damaged_run_files_are_one_line_each(tmp_path, store, how):
    victim = _damage(store, how)
    for cmd in (["summary", store], ["summary", store, "--json"], ["plot", store, "--x", "flow.tcp"],
                ["report", store]):
        bad(lp(*cmd, timeout=120), str(victim))  # the timeout: a FIFO used to hang all four


@pytest.mark.parametrize("how", REPLACEABLE)
def test_resume_runs_damaged_files_again(tmp_path, tiny, store, how):
    ref = tmp_path / "ref"
    shutil.copytree(store, ref)
    victim = _damage(store, how)
    r = cli("sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--seeds", "2", "--out", store)
    assert r.returncode == 0, r.stderr
    assert "1 store file(s) were unreadable" in r.stderr
    assert victim.read_bytes() == (ref / "runs" / victim.name).read_bytes()
    assert sorted(p.name for p in (store / "runs").iterdir()) == [victim.name]
    assert cli("summary", store, "--json", check=True).stdout == cli("summary", ref, "--json", check=True).stdout


@pytest.mark.parametrize("how", FOREIGN)
def test_resume_refuses_what_it_cannot_replace(tmp_path, tiny, store, how):
    victim = _damage(store, how)
    before = snapshot(store)
    bad(cli("sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--seeds", "2", "--out", store), str(victim),
        "remove it")
    assert snapshot(store) == before


def _journal_of(store: Path) -> tuple[Path, list[bytes]]:
    """The store's runs as the journal of a sweep that was killed (its process gone)
    before it folded them into a part: one record a line."""
    from longpipe.sweeps.store import journal_line

    rows = Store(store).read()
    (part,) = (store / "runs").glob("part-*.parquet")
    part.unlink()
    j = store / "runs" / "_journal-pid999999999-0.jsonl"  # above any pid_max: never alive
    lines = [journal_line(r) for r in rows]
    j.write_bytes(b"".join(lines))
    return j, lines


def test_a_killed_sweeps_journal_is_read_and_folded(tmp_path, tiny, store):
    ref = tmp_path / "ref"
    shutil.copytree(store, ref)
    _journal_of(store)
    assert cli("summary", store, "--json", check=True).stdout == cli("summary", ref, "--json", check=True).stdout
    assert longpipe.sweeps.load(store).rows == longpipe.sweeps.load(ref).rows
    r = cli("sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--seeds", "2", "--out", store, check=True)
    assert "0 run now, 4 already" in r.stderr
    assert files(store / "runs") == files(ref / "runs"), "the journal is folded into the same part"


@pytest.mark.parametrize("how", ["bit flip", "not a record", "wrong run id", "cut short"])
def test_damaged_journal_records(tmp_path, tiny, store, how):
    """A damaged record: one line naming the journal; a resumed sweep runs that run
    again and folds the rest. A record cut short (no line break: a crash while it was
    written) is no record yet: readers skip it, the resumed sweep runs it."""
    ref = tmp_path / "ref"
    shutil.copytree(store, ref)
    j, lines = _journal_of(store)
    if how == "bit flip":
        lines[1] = lines[1][:40] + bytes([lines[1][40] ^ 4]) + lines[1][41:]
    elif how == "not a record":
        lines[1] = b"{}\n"
    elif how == "wrong run id":
        import hashlib

        payload = lines[1][17:-1].replace(b'"seed":2', b'"seed":3').replace(b'"seed":1', b'"seed":3')
        lines[1] = hashlib.sha256(payload).hexdigest()[:16].encode() + b" " + payload + b"\n"
    else:
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    j.write_bytes(b"".join(lines))
    if how == "cut short":
        assert len(longpipe.sweeps.load(store).rows) == 3
    else:
        for cmd in (["summary", store], ["plot", store, "--x", "flow.tcp"], ["report", store]):
            bad(lp(*cmd, timeout=120), str(j), "line 2")
    r = cli("sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--seeds", "2", "--out", store, check=True)
    assert "1 run now, 3 already" in r.stderr
    assert files(store / "runs") == files(ref / "runs")


MANIFESTS = {
    "FIFO": None,
    "not JSON": b'{"format": 1,',
    "a list": b"[]",
    "axes": {"axes": 5},
    "axis values": {"axes": [{"key": "flow.tcp", "values": {}}]},
    "axis key": {"axes": [{"key": 7, "values": [1]}]},
    "seeds": {"seeds": ["a"]},
    "seed range": {"seeds": [2**64]},
    "scenario": {"scenario": []},
    "hash": {"scenario_hash": 5},
}


@pytest.mark.parametrize("how", list(MANIFESTS))
def test_damaged_manifests_are_one_line_naming_the_field(tmp_path, tiny, store, how):
    p = store / "sweep.json"
    change = MANIFESTS[how]
    if change is None:
        p.unlink()
        os.mkfifo(p)
    elif isinstance(change, bytes):
        p.write_bytes(change)
    else:
        p.write_text(json.dumps({**json.loads(p.read_text()), **change}))
    for cmd in (["summary", store], ["plot", store, "--x", "flow.tcp"], ["report", store],
                ["sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--out", store]):
        bad(lp(*cmd, timeout=120), str(p))


# --- item 16: concurrent sweeps into one store ---------------------------------------------

def test_the_store_lock_serialises_manifest_updates(tmp_path, tiny, store):
    """While another holder has the store's lock, a sweep waits before it touches
    sweep.json; then it merges its values with what the other wrote."""
    fd = os.open(store / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = subprocess.Popen([sys.executable, "-m", "longpipe", "sweep", str(tiny), "--grid", "flow.tcp=reno",
                              "--out", str(store), "--quiet"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(3)  # long enough for it to have written sweep.json without the lock
            assert p.poll() is None, p.communicate()
            man = json.loads((store / "sweep.json").read_text())
            man["axes"][0]["values"].append("cubic")  # what another sweep would have added meanwhile
            (store / "sweep.json").write_text(json.dumps(man))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        _, err = p.communicate(timeout=300)
    finally:
        os.close(fd)
    assert p.returncode == 0, err
    assert json.loads((store / "sweep.json").read_text())["axes"][0]["values"] == ["newreno", "hybla", "cubic",
                                                                                    "reno"]


def test_concurrent_sweeps_keep_every_grid_value(tmp_path, tiny):
    for k in range(3):
        d = tmp_path / f"c{k}"
        procs = [subprocess.Popen([sys.executable, "-m", "longpipe", "sweep", str(tiny), "--grid", f"flow.tcp={v}",
                                   "--out", str(d), "--quiet"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for v in ("newreno", "hybla", "reno", "cubic")]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        man = json.loads((d / "sweep.json").read_text())
        assert sorted(man["axes"][0]["values"]) == ["cubic", "hybla", "newreno", "reno"]
        assert len(Store(d).read()) == 4
        assert not list((d / "runs").glob(".*.tmp"))
        (only,) = (d / "runs").iterdir()
        assert only.name.startswith("part-"), "every journal is folded in"


# --- items 7, 8, 18: seeds and grids beyond any sense -------------------------------------------

CAP = 2 * 1024**3  # an address-space cap: they used to take 7.9 GB (or raise MemoryError)


def test_far_apart_seeds_cost_nothing(tmp_path, tiny):
    r = lp("run", tiny, "--seeds", "1,200000000", "--quiet", limit_as=CAP)
    assert r.returncode == 0, r.stderr
    assert "seeds 1, 200000000 (2 runs)" in r.stdout
    d = tmp_path / "far"
    r = lp("run", tiny, "--seeds", "1,4000000000", "--out", d, "--quiet", limit_as=CAP)
    assert r.returncode == 0, r.stderr
    r = lp("summary", d, limit_as=CAP)
    assert r.returncode == 0 and "seeds 1, 4000000000" in r.stdout, r.stderr


@pytest.mark.parametrize("cmd", ["run", "sweep", "compare"])
@pytest.mark.parametrize("seeds,expect", [
    ("18446744073709551615", "at most 100000 runs"),
    ("18446744073709551616", "at most 100000 runs"),
    ("1,18446744073709551616", "integers from 0 to 18446744073709551615"),
    ("18446744073709551615..18446744073709551616", "integers from 0"),
    ("0..99999999999", "at most 100000 runs"),
    ("5..3", "A <= B"),
    ("1," + "9" * 5000, "integers from 0"),
])
def test_seeds_out_of_range_are_refused_before_anything_is_written(tmp_path, tiny, cmd, seeds, expect):
    out = tmp_path / "out"
    args = [cmd, tiny, "--seeds", seeds] + (["--out", out] if cmd != "compare" else [])
    bad(lp(*args, limit_as=CAP), "--seeds", expect)
    assert not out.exists()


def test_the_largest_seeds_run_and_are_stored(tmp_path, tiny):
    d = tmp_path / "big"
    r = cli("run", tiny, "--seeds", "18446744073709551614..18446744073709551615", "--json", "--quiet", "--out", d)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["seeds"] == [2**64 - 2, 2**64 - 1] and [x["seed"] for x in doc["runs"]] == doc["seeds"]
    from longpipe.sweeps import load

    rows = load(d).rows
    assert sorted(int(x["seed"]) for x in rows) == [2**64 - 2, 2**64 - 1]
    assert "seeds 18446744073709551614, 18446744073709551615" in cli("summary", d, check=True).stdout
    bad(cli("sweep", tiny, "--seed", "18446744073709551615", "--seeds", "2", "--out", tmp_path / "x"),
        "--seeds", "largest seed")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("cmd", ["sweep", "compare"])
@pytest.mark.parametrize("grid,expect", [
    ("flow.mss=500..1500:99999999999", "at most 100000 values"),
    ("flow.mss=500..1500:" + "9" * 5000, "at most 100000 values"),
])
def test_grid_size_is_capped(tmp_path, tiny, cmd, grid, expect):
    opt = "--grid" if cmd == "sweep" else "--vary"
    out = tmp_path / "out"
    bad(lp(cmd, tiny, opt, grid, *(["--out", out] if cmd == "sweep" else []), timeout=120), expect)
    assert not out.exists()


def test_grid_times_seeds_is_capped(tmp_path, tiny):
    bad(lp("sweep", tiny, "--grid", "flow.mss=500..1500:lin:1000", "--grid", "flow.iw=1..10:lin:10",
           "--seeds", "20", "--out", tmp_path / "o"), "--grid", "1000 × 10 × 20 seed(s) = 200000 runs")


# --- item 9: goodput bins -------------------------------------------------------------------

@pytest.mark.parametrize("b", ["1e-12", "1e-7", "1e-6"])
def test_compare_bin_is_bounded(tmp_path, tiny, b):
    png = tmp_path / "c.png"
    bad(lp("compare", tiny, "--tcp", "reno", "--bin", b, "--plot", png, limit_as=CAP), "--bin", "more than 100000 bins")
    assert not png.exists()


# --- item 10: ranges with units are rounded to the unit ------------------------------------------

def test_documented_log_range_with_units_runs(tmp_path, tiny):
    d = tmp_path / "sw"
    cli("sweep", tiny, "--grid", "link[0].delay=10ms..500ms:log:6", "--grid", "link[0].rate=1Mbps..10Mbps:log:4",
        "--out", d, "--quiet", check=True)
    axes = json.loads((d / "sweep.json").read_text())["axes"]
    assert axes[0]["values"] == ["10ms", "21.867241ms", "47.817625ms", "104.563955ms", "228.652526ms", "500ms"]
    assert axes[1]["values"] == ["1Mbps", "2.154435Mbps", "4.641589Mbps", "10Mbps"]
    assert len(Store(d).read()) == 24


def test_range_values_that_round_together_are_given_once():
    from longpipe.sweeps.grid import parse_axis

    assert parse_axis("link[0].delay=1ns..3ns:lin:9").values == ("1ns", "2ns", "3ns")
    assert parse_axis("link[0].queue.limit=1KiB..2KiB:lin:3").values == ("1KiB", "1.5KiB", "2KiB")


# --- item 12: every option is checked before anything is written -------------------------------

@pytest.mark.parametrize("opts,expect", [
    (["--executor", "bogus"], "--executor"),
    (["--executor", "tcp://"], "--executor"),
    (["--executor", "dask://host:99999"], "--executor"),
    (["--jobs", "0"], "--jobs"),
    (["--metric", "bogus", "--summary"], "unknown metric"),
    (["--metric", "flows[99].goodput_bps", "--summary"], "no run will have it"),
    (["--metric", "flows[0]", "--summary"], "names a table"),
])
def test_bad_options_write_nothing(tmp_path, tiny, opts, expect):
    out = tmp_path / "out"
    bad(cli("sweep", tiny, "--grid", "flow.tcp=reno,newreno", "--out", out, *opts), expect)
    assert not out.exists()
    if "--metric" not in opts:
        bad(cli("run", tiny, "--seeds", "2", "--out", out, *opts), expect)
        assert not out.exists()


# --- item 19: the Python API's sweep arguments ------------------------------------------------------

def test_api_sweep_argument_types(tmp_path, tiny):
    out = tmp_path / "out"
    with pytest.raises(ScenarioError, match="seeds: .*18446744073709551615"):
        longpipe.sweep(tiny, seeds=[2**64], out=out)
    for seeds in (["a"], [1.5], [True], 1.5):
        with pytest.raises(TypeError, match="seeds: expected"):
            longpipe.sweep(tiny, seeds=seeds, out=out)
    with pytest.raises(TypeError, match="executor: expected a string"):
        longpipe.sweep(tiny, executor=5, out=out)
    with pytest.raises(TypeError, match="jobs: expected"):
        longpipe.sweep(tiny, jobs="2", out=out)
    assert not out.exists()


def test_api_timeseries_dir_that_cannot_be_written(tmp_path):
    sc = {"duration": "1s", "link": [{"a": "s", "b": "c", "rate": "1Mbps", "delay": "1ms"}],
          "flow": [{"src": "s", "dst": "c"}]}
    for d, expect in (("/proc", "cannot write in '/proc'"), (tmp_path / "missing", "not an existing directory")):
        with pytest.raises(ScenarioError, match="timeseries_dir") as e:
            longpipe.run(sc, timeseries_dir=d)
        assert expect in str(e.value)


# --- item 22: metrics that name nothing; ATM keys blamed on the key ----------------------------------

@pytest.mark.parametrize("m", ["flows[99].goodput_bps", "links[7].drops_queue", "flows[0]"])
def test_metric_paths_that_name_nothing(store, m):
    bad(cli("summary", store, "--metric", m), "--metric", m)
    bad(cli("plot", store, "--x", "flow.tcp", "--y", m), "--metric", m)


ATM = """
duration = "1s"
[[node]]
name = "sw"
kind = "atm-switch"
[[link]]
a = "server"
b = "sw"
rate = "10Mbps"
delay = "5ms"
layer2 = {{ kind = "atm", {l2} }}
[[link]]
a = "sw"
b = "client"
rate = "10Mbps"
delay = "5ms"
layer2 = {{ kind = "atm" }}
[[flow]]
src = "server"
dst = "client"
"""


@pytest.mark.parametrize("l2,path", [
    ('upc = { scr = "0bps", mbs = 3 }', "link[0].layer2.upc.scr"),
    ('llc = "yes"', "link[0].layer2.llc"),
])
def test_atm_keys_are_blamed_on_the_key(tmp_path, l2, path):
    bad(cli("run", write(tmp_path, ATM.format(l2=l2))), f"{path}:")
