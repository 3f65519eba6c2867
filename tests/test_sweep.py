"""Sweeps: grid parsing and validation, the resumable Parquet store (SIGKILL at random
points), executors giving the same bytes (serial, process pool, Dask), summaries with
95 % confidence intervals, plots, run/compare --seeds, reports."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli

TINY = """
name = "tiny"
duration = "2s"
[[link]]
a = "server"
b = "client"
rate = "2Mbps"
delay = "60ms"
loss = { kind = "bernoulli", p = 0.01 }
[[flow]]
src = "server"
dst = "client"
"""


@pytest.fixture
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def store_bytes(d: Path) -> dict[str, bytes]:
    """Every file of a store's runs/ (name -> bytes) plus the manifest."""
    out = {p.name: p.read_bytes() for p in sorted((d / "runs").iterdir())}
    out["sweep.json"] = (d / "sweep.json").read_bytes()
    return out


# ----------------------------------------------------------------------------- grid
def test_grid_axes_parse():
    from longpipe.sweeps.grid import parse_axis, parse_seeds

    a = parse_axis("link[1].loss.p=1e-4..1e-2:log:5")
    assert a.scale == "log" and a.values == (1e-4, 0.000316227766017, 1e-3, 0.00316227766017, 1e-2)
    assert parse_axis("flow.mss=500..1500:lin:3").values == (500, 1000, 1500)
    assert parse_axis("x=0..1:5").values == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert parse_axis("link[0].delay=10ms..1000ms:log:3").values == ("10ms", "100ms", "1000ms")
    assert parse_axis("flow.tcp=newreno, hybla,newreno").values == ("newreno", "hybla")  # deduplicated
    t = parse_axis('link[0].loss={kind = "ber", ber = 1e-7},{kind = "bernoulli", p = 0.01}')
    assert t.values == ({"kind": "ber", "ber": 1e-7}, {"kind": "bernoulli", "p": 0.01})
    assert parse_axis("flow.iw=1,rfc2414").values == (1, "rfc2414")
    assert parse_seeds(3) == [1, 2, 3] and parse_seeds("4", 10) == [10, 11, 12, 13]
    assert parse_seeds("2..4") == [2, 3, 4] and parse_seeds("9,3") == [3, 9]


BAD_GRID = [
    (["--grid", "flow.colour=1,2"], "flow[0].colour"),
    (["--grid", "link[0].loss.p=0.5,2"], "link[0].loss.p"),
    (["--grid", "link[3].delay=1ms"], "link[3]"),
    (["--grid", "flow.tcp=newreno,cubic-ish"], "flow[0].tcp"),
    (["--grid", "flow.tcp"], "--grid flow.tcp"),
    (["--grid", "seed=1,2"], "--seeds"),
    (["--grid", "flow.mss=1..2:log:0"], "--grid flow.mss"),
    (["--grid", "flow.tcp=reno", "--grid", "flow.tcp=hybla"], "flow.tcp"),
    (["--grid", "flow.tcp=reno", "--seeds", "0"], "--seeds"),
    (["--grid", "flow.tcp=reno", "--executor", "spark"], "--executor"),
]


@pytest.mark.parametrize("args,named", BAD_GRID, ids=[
    "unknown-key", "value-range", "no-element", "bad-variant", "no-values", "seed-axis",
    "zero-points", "key-twice", "zero-seeds", "bad-executor"])
def test_bad_grid_rejected_before_running(tmp_path, tiny, args, named):
    out = tmp_path / "store"
    r = cli("sweep", tiny, "--out", out, "--quiet", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.startswith("error: ")
    assert named in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (out / "runs").exists(), "nothing may run before the grid is valid"


def test_bad_grid_combination_named(tmp_path, tiny):
    # each value is valid alone; one combination is not (a window smaller than one MSS)
    r = cli("sweep", tiny, "--out", tmp_path / "s", "--set", "flow.mss=500", "--grid", "flow.rwnd=1000B,64KB",
            "--grid", "flow.mss=500,1460", "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "flow[0].rwnd" in r.stderr and "flow.rwnd=1000B, flow.mss=1460" in r.stderr, r.stderr
    assert not (tmp_path / "s" / "runs").exists()


def test_python_api_rejects_bad_grid(tiny):
    import longpipe

    with pytest.raises(longpipe.ScenarioError, match=r"link\[0\]\.loss\.p"):
        longpipe.sweep(tiny, {"link[0].loss.p": [0.1, 1.5]}, seeds=2)


# ----------------------------------------------------------------------------- store
def test_sweep_store_rows_and_resume(tmp_path, tiny):
    import pyarrow.parquet as pq

    import longpipe

    out = tmp_path / "s"
    sw = longpipe.sweep(tiny, {"flow.tcp": ["newreno", "hybla"], "link[0].loss.p": "1e-3..1e-2:log:2"}, seeds=3,
                        out=out, jobs=1)
    assert len(sw.rows) == 12 and sw.outcome.new == 12
    files = sorted((out / "runs").iterdir())
    assert len(files) == 1 and files[0].name.startswith("part-"), "the journal is folded into one part"
    t = pq.read_table(files[0])
    assert t.num_rows == 12 and t.column("run_id").to_pylist() == sorted(r["run_id"] for r in sw.rows)
    cols = t.column_names
    assert cols[:4] == ["run_id", "scenario_hash", "longpipe_version", "seed"]
    assert cols[4:6] == ["flow.tcp", "link[0].loss.p"] and cols[-1] == "result"
    assert "wall_s" not in t.column("result")[0].as_py()
    df = sw.runs
    # every row is the result of the run it names: re-run one point directly
    row = df[(df["flow.tcp"] == "hybla") & (df["link[0].loss.p"] == 0.01) & (df.seed == 2)].iloc[0]
    direct = longpipe.run(tiny, seed=2, overrides={"flow.tcp": "hybla", "link[0].loss.p": 0.01}).data
    assert "wall_s" not in direct["sim"]
    assert json.loads(row["result"]) == direct
    assert row["goodput_bps"] == direct["flows"][0]["goodput_bps"]
    assert row["timeouts"] == direct["flows"][0]["timeouts"]
    # a second call runs nothing new; adding a seed runs only the new ones
    again = longpipe.sweep(tiny, {"flow.tcp": ["newreno", "hybla"], "link[0].loss.p": "1e-3..1e-2:log:2"}, seeds=3,
                           out=out, jobs=1)
    assert again.outcome.new == 0 and again.outcome.reused == 12 and again.rows == sw.rows
    more = longpipe.sweep(tiny, {"flow.tcp": ["newreno", "hybla"], "link[0].loss.p": "1e-3..1e-2:log:2"}, seeds=4,
                          out=out, jobs=1)
    assert more.outcome.new == 4 and len(pq.read_table(out / "runs").column("run_id")) == 16
    assert json.loads((out / "sweep.json").read_text())["seeds"] == [1, 2, 3, 4]
    loaded = longpipe.sweeps.load(out)
    assert len(loaded.rows) == 16
    # another scenario in the same store is refused
    with pytest.raises(longpipe.ScenarioError, match="another scenario"):
        longpipe.sweep(tiny, {"flow.tcp": ["newreno"]}, seeds=1, out=out, overrides={"duration": "3s"})


def test_a_format_1_store_is_read_and_extended(tmp_path):
    """A store of the previous format (one Parquet file a run: tests/data/store-format1,
    written by longpipe before the journal) reads as it did, and a sweep adds its new
    runs in a part beside those files, which it leaves as they are."""
    import shutil

    import pyarrow.parquet as pq

    import longpipe

    d = tmp_path / "old"
    shutil.copytree(Path(__file__).parent / "data" / "store-format1", d)
    old = {p.name: p.read_bytes() for p in sorted((d / "runs").iterdir())}
    assert len(old) == 4 and json.loads((d / "sweep.json").read_text())["format"] == 1
    direct = sorted((pq.read_table(d / "runs" / n).to_pylist()[0] for n in old), key=lambda r: r["run_id"])
    assert longpipe.sweeps.load(d).rows == direct
    summ = json.loads(cli("summary", d, "--json", check=True).stdout)
    assert [x["n"] for x in summ] == [2, 2]
    r = cli("sweep", d / "tiny.toml", "--grid", "flow.tcp=newreno,hybla", "--seeds", "3", "--out", d, check=True)
    assert "2 run now, 4 already" in r.stderr
    now = {p.name: p.read_bytes() for p in sorted((d / "runs").iterdir())}
    assert {k: v for k, v in now.items() if k in old} == old
    (part,) = set(now) - set(old)
    assert part.startswith("part-") and pq.read_table(d / "runs" / part).num_rows == 2
    sw = longpipe.sweeps.load(d)
    assert len(sw.rows) == 6 and [r for r in sw.rows if r["run_id"] + ".parquet" in old] == direct
    assert json.loads((d / "sweep.json").read_text())["format"] == 2


def test_a_sweep_stores_and_reads_its_runs_without_importing_pandas(tmp_path, tiny):
    """PyArrow's ``pa.array`` (on any list) and ``pq.read_table`` import pandas, 0.17 s at
    the end of every sweep; the store builds and reads its parts without them. Two
    sweeps into one store, in a fresh interpreter: the second one's compaction reads the
    first one's part and folds it with its own runs into one part, which PyArrow's own
    reader reads as the store does."""
    import importlib.util

    import pyarrow.parquet as pq

    from longpipe.sweeps.store import Store

    if importlib.util.find_spec("pandas") is None:
        pytest.skip("pandas is not installed: nothing could import it")
    out = tmp_path / "out"
    code = (
        "import sys, longpipe\n"
        "for n in (2, 3):\n"
        f"    longpipe.sweep({str(tiny)!r}, {{'flow.tcp': ['newreno', 'hybla']}}, seeds=n, out={str(out)!r}, jobs=1)\n"
        "print('pandas' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False", "pandas was imported"
    (part,) = (out / "runs").glob("part-*.parquet")
    rows = Store(out).read()
    assert len(rows) == 6
    direct = pq.read_table(part).to_pylist()
    for x in direct:
        x["seed"] %= 2**64
    assert rows == direct


def test_parts_are_the_tables_pa_array_builds(tmp_path):
    """A part's table, built from buffers, is the one ``pa.array`` builds from the same
    values (every column type, nulls, seeds from 2^63, NaN, -0.0, non-ASCII text), in
    the same Parquet bytes; a value of the wrong type is refused naming its column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from longpipe.sweeps.rows import METRICS, _user_metric_types
    from longpipe.sweeps.storefiles import _fixed_types, _signature, part_bytes, part_table

    def row(i):
        r = {"run_id": f"{i:016x}", "scenario_hash": "h\u00e9\u2603" * (i % 3), "longpipe_version": "0.1.0",
             "seed": [0, 2**63 - 1, 2**63, 2**64 - 1][i % 4], "flow.tcp": ["newreno", "", "\u2603"][i % 3],
             "flow.mss": [500, -3, 2**62][i % 3], "link.loss.p": [0.01, -0.0, math.nan][i % 3], "flow.sack": i % 2 == 0}
        for k, (m, t, _) in enumerate(METRICS):
            vals = ([0.5, -0.0, math.nan, math.inf, None] if t == "float64" else [0, -1, 2**63 - 1, -(2**63), None])
            r[m] = vals[(i + k) % 5]
        for m, t in _user_metric_types().items():
            r[m] = None if i % 3 == 0 else {"float64": 1.25 * i, "int64": i, "string": "u" * i, "bool": i % 2 == 0}[t]
        r["result"] = json.dumps({"flows": [], "x": "\u00fc" * i})
        return r

    rows = [row(i) for i in range(11)]
    sig = _signature(rows[0], _fixed_types())
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    ref = pa.Table.from_arrays(
        [pa.array([(r[k] - 2**64 if r[k] >= 2**63 else r[k]) if k == "seed" else r[k] for r in rows], type=types[t])
         for k, t in sig], schema=pa.schema([pa.field(k, types[t]) for k, t in sig]))
    got = part_table(rows)
    assert got.schema == ref.schema
    assert repr(got.to_pylist()) == repr(ref.to_pylist())  # (NaN is not equal to itself)
    assert [c.null_count for c in got.columns] == [c.null_count for c in ref.columns]
    buf = io.BytesIO()
    pq.write_table(ref, buf, compression="zstd", compression_level=3, store_schema=True, write_statistics=False)
    assert part_bytes(rows) == buf.getvalue()
    for col, bad in [("events", 1.5), ("events", True), ("goodput_bps", "1"), ("scenario_hash", 7)]:
        with pytest.raises(TypeError, match=f"column {col!r}"):
            part_table([{**rows[1], col: bad}])
    with pytest.raises(OverflowError, match="column 'events'"):
        part_table([{**rows[1], "events": 2**63}])


def _sweep_cmd(scenario, out, jobs):
    return [sys.executable, "-m", "longpipe", "sweep", str(scenario), "--grid", "flow.tcp=newreno,hybla,reno",
            "--grid", "link[0].loss.p=1e-3..3e-2:log:4", "--seeds", "4", "--out", str(out), "--jobs", str(jobs),
            "--quiet"]


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path, tiny):
    """Kill the whole sweep (process group, SIGKILL) at 5 random moments; each time the
    store is readable and holds only complete runs, each the run of an uninterrupted
    sweep; the resumed sweep then equals an uninterrupted one file for file and byte for
    byte: nothing lost, nothing twice."""
    from longpipe.sweeps.store import Store

    ref = tmp_path / "ref"
    subprocess.run(_sweep_cmd(tiny, ref, 1), check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
    want = store_bytes(ref)
    want_rows = {r["run_id"]: r for r in Store(ref).read()}
    assert len(want_rows) == 3 * 4 * 4 and len(want) == 2  # one part and sweep.json
    out = tmp_path / "killed"
    rng = random.Random(20261123)
    counts = []
    for k in range(5):
        p = subprocess.Popen(_sweep_cmd(tiny, out, 2 if k % 2 else 1), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.3, 1.2))
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        rows = Store(out).read()  # every visible record is complete and readable ...
        for r in rows:
            assert r == want_rows[r["run_id"]]  # ... and the run it names
        counts.append(len(rows))
    r = subprocess.run(_sweep_cmd(tiny, out, 2), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stderr
    assert store_bytes(out) == want
    assert not list((out / "runs").glob(".*.tmp")), "temporary files are cleaned up on resume"
    assert counts == sorted(counts), "a kill never loses a stored run"
    assert 0 < counts[-1] or counts[0] < len(want_rows)


@pytest.fixture
def dask_default_port_taken():
    """Holds Dask's default dashboard port (8787) as another user's cluster would; the
    sweep's clusters must not need it (pytest turns the fallback warning into an error)."""
    import socket

    s = socket.socket()
    try:
        s.bind(("0.0.0.0", 8787))
        s.listen()
    except OSError:
        pass  # already held by someone else: just as good
    yield
    s.close()


def test_executors_store_identical_bytes(tmp_path, tiny, dask_default_port_taken):
    """Serial, the local process pool and a Dask LocalCluster store the same bytes."""
    import longpipe

    grid = {"flow.tcp": ["newreno", "hybla"], "link[0].loss.p": [0.003, 0.03]}
    longpipe.sweep(tiny, grid, seeds=3, out=tmp_path / "serial", jobs=1)
    longpipe.sweep(tiny, grid, seeds=3, out=tmp_path / "pool", jobs=2)
    longpipe.sweep(tiny, grid, seeds=3, out=tmp_path / "dask", executor="dask", jobs=2)
    a = store_bytes(tmp_path / "serial")
    assert len(a) == 2 and len(longpipe.sweeps.load(tmp_path / "serial").rows) == 12
    assert store_bytes(tmp_path / "pool") == a
    assert store_bytes(tmp_path / "dask") == a


def test_dask_scheduler_address(tmp_path, tiny, dask_default_port_taken):
    """An existing scheduler, given by address (dask://HOST:PORT), as on a cluster."""
    from distributed import LocalCluster

    import longpipe

    grid = {"flow.tcp": ["newreno", "hybla"]}
    longpipe.sweep(tiny, grid, seeds=2, out=tmp_path / "local", jobs=1)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=":0") as cluster:
        addr = cluster.scheduler_address.replace("tcp://", "dask://")
        sw = longpipe.sweep(tiny, grid, seeds=2, out=tmp_path / "remote", executor=addr)
    assert sw.outcome.new == 4
    assert store_bytes(tmp_path / "remote") == store_bytes(tmp_path / "local")
    r = cli("sweep", tmp_path / "tiny.toml", "--grid", "flow.tcp=reno", "--out", tmp_path / "x",
            "--executor", "dask://127.0.0.1:9", "--quiet")
    assert r.returncode == 2 and "cannot reach the Dask scheduler" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- summaries
def test_summary_mean_and_ci(tmp_path, tiny):
    from scipy import stats

    import longpipe

    out = tmp_path / "s"
    r = cli("sweep", tiny, "--grid", "flow.tcp=newreno,hybla", "--seeds", "5", "--out", out, "--summary", "--quiet",
            check=True)
    assert "newreno" in r.stdout and "±" in r.stdout
    recs = json.loads(cli("summary", out, "--json", check=True).stdout)
    assert [x["flow.tcp"] for x in recs] == ["newreno", "hybla"] and all(x["n"] == 5 for x in recs)
    for rec in recs:
        g = [longpipe.run(tiny, seed=s, flow__tcp=rec["flow.tcp"]).data["flows"][0]["goodput_bps"] for s in range(1, 6)]
        m = sum(g) / 5
        sd = math.sqrt(sum((x - m) ** 2 for x in g) / 4)
        assert rec["goodput_bps_mean"] == pytest.approx(m, rel=1e-12)
        assert rec["goodput_bps_ci95"] == pytest.approx(stats.t.ppf(0.975, 4) * sd / math.sqrt(5), rel=1e-9)
    rows = list(csv.DictReader(io.StringIO(cli("summary", out, "--csv", "--metric", "rto", check=True).stdout)))
    assert rows[0].keys() == {"flow.tcp", "n", "timeouts_mean", "timeouts_ci95"}
    r = cli("summary", out, "--metric", "nonsense")
    assert r.returncode == 2 and "unknown metric" in r.stderr


def test_t975_is_scipys_quantile_without_importing_scipy():
    from scipy import stats

    from longpipe.sweeps.summary import t975

    for df in [*range(1, 301), 1000, 4999, 5000]:
        assert t975(df) == pytest.approx(float(stats.t.ppf(0.975, df)), rel=1e-12, abs=0), df
    with pytest.raises(ValueError):
        t975(0)
    code = ("import sys\nfrom longpipe.sweeps.summary import mean_ci95\n"
            "m, h = mean_ci95([1.0, 2.0, 4.0])\nassert abs(h - 4.303 * 1.5275 / 3 ** 0.5) < 1e-2, h\n"
            "print('scipy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


def test_plot_log_axis_and_png(tmp_path, tiny):
    import longpipe
    from longpipe.sweeps.plot import figure

    out = tmp_path / "s"
    sw = longpipe.sweep(tiny, ["flow.tcp=newreno,hybla", "link[0].loss.p=1e-3..1e-1:log:3"], seeds=2, out=out, jobs=2)
    fig = figure(sw.rows, sw.axes, x="link[0].loss.p", y="goodput", hue="flow.tcp", title="tiny")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "goodput (Mbit/s)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["newreno", "hybla"]
    r = cli("plot", out, "--x", "link[0].loss.p", "--y", "goodput", "--hue", "flow.tcp", check=True)
    png = out / "goodput-vs-link_0__loss_p-by-flow_tcp.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and str(png) in r.stdout
    r = cli("plot", out, "--x", "flow.nothing")
    assert r.returncode == 2 and "not a grid key" in r.stderr


# ----------------------------------------------------------------------------- run / compare
def test_run_seeds(tmp_path, tiny):
    d = json.loads(cli("run", tiny, "--seeds", "3", "--json", "--quiet", check=True).stdout)
    assert d["seeds"] == [1, 2, 3] and len(d["runs"]) == 3
    import longpipe

    for s, res in zip([1, 2, 3], d["runs"]):
        one = longpipe.run(tiny, seed=s).data
        assert res == one
    g = [x["flows"][0]["goodput_bps"] for x in d["runs"]]
    assert d["flows"][0]["goodput_bps"]["mean"] == pytest.approx(sum(g) / 3, rel=1e-12)
    text = cli("run", tiny, "--seeds", "3", "--seed", "7", "--quiet", check=True).stdout
    assert "seeds 7..9" in text and "±" in text
    r = cli("run", tiny, "--seeds", "2", "--pcap", "server-client")
    assert r.returncode == 2 and "--seeds" in r.stderr


def test_compare_vary_json_csv(tmp_path, tiny):
    r = cli("compare", tiny, "--vary", "flow.sack=false,true", "--set", "link[0].loss.p=0.02", "--seeds", "2",
            "--quiet", check=True)
    assert "applied: --set link[0].loss.p=0.02" in r.stdout and "flow.sack" in r.stdout
    d = json.loads(cli("compare", tiny, "--vary", "flow.sack=false,true", "--tcp", "reno,newreno", "--seeds", "2",
                       "--json", "--quiet", check=True).stdout)
    assert d["vary"] == ["flow.sack", "flow.tcp"] and len(d["variants"]) == 4
    assert all(v["seeds"] == 2 for v in d["variants"])
    import longpipe

    one = longpipe.run(tiny, seed=2, overrides={"flow.sack": True, "flow.tcp": "reno"}).data
    one1 = longpipe.run(tiny, seed=1, overrides={"flow.sack": True, "flow.tcp": "reno"}).data
    v = next(x for x in d["variants"] if x["flow.sack"] is True and x["flow.tcp"] == "reno")
    assert v["goodput_bps_mean"] == pytest.approx((one["flows"][0]["goodput_bps"] + one1["flows"][0]["goodput_bps"]) / 2)
    rows = list(csv.DictReader(io.StringIO(cli("compare", tiny, "--csv", "--quiet", check=True).stdout)))
    assert [x["flow.tcp"] for x in rows] == ["cubic", "bbr", "hybla"]  # what a user compares first (issue 25)
    assert {json.loads(x["profile"])["stack"] for x in rows} == {"linux"}
    r = cli("compare", tiny, "--vary", "flow.sack=maybe")
    assert r.returncode == 2 and "flow[0].sack" in r.stderr


def test_compare_stack(tiny):
    d = json.loads(cli("compare", tiny, "--stack", "classic,linux", "--json", "--quiet", check=True).stdout)
    assert d["vary"] == ["flow.stack"] and [v["flow.stack"] for v in d["variants"]] == ["classic", "linux"]
    import longpipe

    one = longpipe.run(tiny, overrides={"flow.stack": "linux"}).data
    assert d["variants"][1]["goodput_bps_mean"] == pytest.approx(one["flows"][0]["goodput_bps"])
    assert one["flows"][0]["tcp"] == "cubic"  # the profile's default
    d = json.loads(cli("compare", tiny, "--stack", "linux", "--tcp", "reno,bbr", "--json", "--quiet",
                       check=True).stdout)
    assert d["vary"] == ["flow.stack", "flow.tcp"] and len(d["variants"]) == 2
    r = cli("compare", tiny, "--stack", "classic", "--tcp", "bbr")
    assert r.returncode == 2 and "flow[0].stack" in r.stderr and "linux" in r.stderr
    r = cli("compare", tiny, "--stack", "bsd")
    assert r.returncode == 2 and "flow[0].stack" in r.stderr


# ----------------------------------------------------------------------------- front end
def test_cli_starts_without_numpy_or_pandas(tiny):
    """`longpipe run --json` and `--help` load neither NumPy nor pandas (start-up time;
    measured in make bench, not asserted here)."""
    code = ("import sys, io, contextlib\nfrom longpipe.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['run', {str(tiny)!r}, '--json'])\n"
            "heavy = sorted(m for m in ('numpy', 'pandas', 'scipy', 'matplotlib', 'pyarrow') if m in sys.modules)\n"
            "print(rc, heavy)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "0 []", r.stdout + r.stderr


def test_version_and_every_argument_described():
    from longpipe import __version__
    from longpipe.cli import build_parser

    r = cli("--version", check=True)
    assert r.stdout.strip() == f"longpipe {__version__}"
    assert "sweep" in cli("--help", check=True).stdout
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        for a in p._actions:
            if a.dest != "help":
                assert a.help, f"longpipe {name}: {a.option_strings or a.dest} has no help text"
        assert cli(name, "--help", check=True).stdout.startswith("usage: longpipe " + name)


def test_timeseries_csv_default_dir_inf_ssthresh_and_clean_times(tmp_path, tiny):
    r = cli("run", tiny, "--timeseries", "--set", "link[0].loss.p=0", cwd=tmp_path, check=True)
    assert "time series" in r.stderr
    ts = tmp_path / "out" / "run" / "tiny-seed1" / "flow0-timeseries.csv"
    rows = list(csv.DictReader(io.StringIO(ts.read_text())))
    assert rows[0]["ssthresh"] == "inf"
    for row in rows:
        assert len(row["t"].partition(".")[2]) <= 9, row["t"]  # integer ns: no float noise


def test_report_html(tmp_path, tiny):
    import longpipe

    sw = tmp_path / "sw"
    longpipe.sweep(tiny, ["flow.tcp=newreno,hybla", "link[0].loss.p=0.003,0.03"], seeds=2, out=sw, jobs=1)
    rd = tmp_path / "run"
    cli("run", tiny, "--out", rd, "--timeseries", check=True)
    for d in (sw, rd):
        r = cli("report", d, check=True)
        page = (d / "report.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and "<table>" in page
        assert "data:image/png;base64," in page
        assert "http://" not in page and "https://" not in page  # self-contained
    assert "±" in (sw / "report.html").read_text()
    r = cli("report", tmp_path)
    assert r.returncode == 2 and "expected the output of" in r.stderr
