"""Issue 14 defects that lived in the simulator core: each test states the behaviour the
fix must have (all fixed). Every CLI call runs in a subprocess with a timeout and a
memory cap, so a hang or a runaway cannot stall or exhaust CI.
"""

import json
import resource
import subprocess
import sys
import textwrap

import pytest

from conftest import EXAMPLES

TIMEOUT_S = 10  # a refusal takes about 1 s; the defects hang for hours
MEM_CAP = 3 << 30  # address space of the child: a runaway allocation fails, not the machine


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (MEM_CAP, MEM_CAP))


def run(*args, timeout=TIMEOUT_S, cwd=None):
    """`longpipe ARGS` -> (returncode, stdout, stderr); returncode None on timeout."""
    try:
        p = subprocess.run([sys.executable, "-m", "longpipe", *map(str, args)], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=_cap, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, "", f"(no answer within {timeout} s)"
    return p.returncode, p.stdout, p.stderr


def refused(result, *words):
    """Exit 2 with one line on stderr naming every one of `words`."""
    rc, _out, err = result
    assert rc == 2, f"exit {rc}: {err[-500:]}"
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line, err
    for w in words:
        assert w in line, (w, line)
    return line


PATH = textwrap.dedent("""
    duration = "5s"
    [[link]]
    a = "server"
    b = "client"
    rate = "10Mbps"
    delay = "50ms"
    [[flow]]
    src = "server"
    dst = "client"
""")


def scenario(tmp_path, extra_flow="", text=PATH, name="s.toml"):
    p = tmp_path / name
    p.write_text(text + extra_flow)
    return p


# --- hangs and runaway work ------------------------------------------------------------

@pytest.mark.parametrize("how", ["file", "set"])
def test_initial_rto_zero_is_refused(tmp_path, how):
    if how == "file":
        r = run("run", scenario(tmp_path, 'initial_rto = "0s"\n'))
    else:
        r = run("run", scenario(tmp_path), "--set", 'flow.initial_rto="0s"')
    refused(r, "initial_rto")


def test_nanosecond_rto_is_refused_or_bounded(tmp_path):
    r = run("run", scenario(tmp_path, 'min_rto = "1ns"\ninitial_rto = "1ns"\nmax_rto = "1ns"\n'))
    line = refused(r)
    assert "rto" in line or "--force" in line, line


def test_huge_duration_refused_without_force(tmp_path):
    r = run("run", scenario(tmp_path, text=PATH.replace('"5s"', '"1e9s"')))
    refused(r, "--force")


def test_huge_count_refused(tmp_path):
    r = run("run", scenario(tmp_path, "count = 10000000\n"))
    line = refused(r)
    assert "count" in line or "--force" in line, line


def _max_rss_kb(args):
    """Peak RSS of one `longpipe ARGS` run, measured by a fresh wrapper process."""
    code = ("import resource, subprocess, sys; "
            f"r = subprocess.run([sys.executable, '-m', 'longpipe', *{[str(a) for a in args]!r}], "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         preexec_fn=_cap).stdout.split()
    assert out and out[0] == "0", out
    return int(out[1])


@pytest.mark.slow
def test_timeseries_memory_does_not_grow_with_the_run(tmp_path):
    fat = PATH.replace('"5s"', '"60s"').replace('"10Mbps"', '"100Mbps"').replace('"50ms"', '"5ms"')
    p = scenario(tmp_path, 'rwnd = "4MB"\n', text=fat)
    base = _max_rss_kb(["run", p, "-q"])
    traced = _max_rss_kb(["run", p, "-q", "--timeseries", "--out", tmp_path / "out"])
    # ~500 000 segments and ACKs: held in memory that is ~90 MB more; streamed, a few MB
    assert traced - base < 30_000, f"peak RSS {base} kB without, {traced} kB with --timeseries"


# --- silently wrong ----------------------------------------------------------------------

WCDMA = EXAMPLES / "wcdma.toml"


def test_rlc_rate_is_respected_at_low_rates():
    rc, out, err = run("run", WCDMA, "--json", "--set", "link[2].rate=1kbps", "--set", "duration=60s")
    assert rc == 0, err
    d = json.loads(out)
    assert d["flows"][0]["goodput_bps"] <= 1000, d["flows"][0]
    assert all(link["utilization"] <= 1.0 + 1e-9 for link in d["links"]), d["links"]


def test_rlc_absurd_header_refused():
    refused(run("run", WCDMA, "--set", "link[2].layer2.header=4294967295", "--set", "duration=2s"),
            "link[2].layer2.header")


def test_wcdma_utilization_at_most_one():
    rc, out, err = run("run", WCDMA, "--json", "--set", "duration=2s", "--set", "warmup=1.9s",
                       "--set", "flow.iw=1000", "--seed", "3")
    assert rc == 0, err
    links = json.loads(out)["links"]
    assert all(link["utilization"] <= 1.0 + 1e-9 for link in links), [(x["a"], x["b"], x["utilization"]) for x in links]


GATEWAY = textwrap.dedent("""
    duration = "10s"
    [[node]]
    name = "gw"
    kind = "tcp-gateway"
    gateway = { GW }
    [[link]]
    a = "server"
    b = "gw"
    rate = "10Mbps"
    delay = "5ms"
    [[link]]
    a = "gw"
    b = "client"
    rate = "2Mbps"
    delay = "250ms"
    [[flow]]
    src = "server"
    dst = "client"
    app = { kind = "bulk", bytes = "100KB" }
""")


def test_gateway_zero_window_refused(tmp_path):
    p = scenario(tmp_path, text=GATEWAY.replace("GW", 'mode = "spoof", window = "0B"'))
    refused(run("run", p), "gateway.window")


def test_gateway_zero_iw_refused(tmp_path):
    p = scenario(tmp_path, text=GATEWAY.replace("GW", 'mode = "split", iw = 0'))
    refused(run("run", p), "gateway.iw")


# --- unclear messages --------------------------------------------------------------------

RUST_WORDS = ["untagged enum", "struct ", "IwSpec", "FlowSpec", "QueueSpec", "u32", "u64", "i64", "f64"]


@pytest.mark.parametrize("setting,accepted", [
    ('flow.iw="bogus"', "rfc3390"),
    ("flow.iw=true", "rfc3390"),
    ("flow=[1]", "table"),
    ('flow.mss="x"', "integer"),
    ("flow.mss=-1", "integer"),
    ("flow.count=1.5", "integer"),
    ("link[0].queue=1", "table"),
], ids=["iw-string", "iw-bool", "flow-not-table", "mss-string", "mss-negative", "count-float", "queue-int"])
def test_messages_say_what_is_accepted(tmp_path, setting, accepted):
    line = refused(run("run", scenario(tmp_path), "--set", setting))
    leaked = [w for w in RUST_WORDS if w in line]
    assert not leaked, line
    assert accepted in line, line


def test_streamed_timeseries_csv_equal_the_in_memory_frames(tmp_path):
    # The CLI streams the time series to CSV as the run goes; read back, the files hold
    # exactly the samples the API returns in memory (same rows, same values), for every
    # traced flow, and the staging directory is gone.
    import pandas as pd

    import longpipe

    lossy = PATH.replace('delay = "50ms"', 'delay = "50ms"\nloss = { kind = "bernoulli", p = 0.01 }')
    p = scenario(tmp_path, 'count = 2\nrwnd = "256KB"\nsack = true\n', text=lossy)
    out = tmp_path / "o"
    rc, _, err = run("run", p, "-q", "--timeseries", "--out", out, "--seed", "4")
    assert rc == 0, err
    res = longpipe.run(p, seed=4, timeseries=True)
    assert sorted(f.name for f in out.iterdir()) == sorted(
        [".longpipe-run.json", "result.json"]
        + [f"flow{i}-{k}.csv" for i in (0, 1) for k in ("rtt", "segments", "timeseries")])
    for fid in (0, 1):
        for kind, frame in (("timeseries", res.timeseries(fid)), ("segments", res.segments(fid)),
                            ("rtt", res.rtt(fid))):
            got = pd.read_csv(out / f"flow{fid}-{kind}.csv")
            assert len(got) == len(frame) > 10, (fid, kind)
            if kind == "timeseries":  # losses set ssthresh: integers and inf both occur
                assert got.ssthresh.isin([float("inf")]).any() and (got.ssthresh < 1e9).any()
            assert list(got.columns) == list(frame.columns)
            for c in frame.columns:
                assert (got[c].to_numpy() == frame[c].to_numpy()).all(), (fid, kind, c)
    # the API streams too: into an existing directory, returning no traces
    d = tmp_path / "api"
    d.mkdir()
    r2 = longpipe.run(p, seed=4, timeseries_dir=d)
    assert r2.traces == {} and r2.data == res.data
    assert (d / "flow1-rtt.csv").read_bytes() == (out / "flow1-rtt.csv").read_bytes()
