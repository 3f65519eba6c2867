"""Property tests of the CLI (hypothesis): random mutations of the example scenarios and
hostile option values must give exit status 0, or 2 with one line on stderr; never a
traceback, never a hang (a per-case alarm cancels the simulation through the same
path as Ctrl-C), never a file written on failure.

The option parsing of `sweep`, `compare`, `summary`, `plot` and `report` is fuzzed too
(issue 29): grid specs, seeds, executors, jobs, metrics, bins, plot keys.

`make test` runs a fixed, derandomized set (LONGPIPE_HYPOTHESIS_EXAMPLES cases for `run`
and `model`, default 600, and a third of that for each option test,
LONGPIPE_HYPOTHESIS_OPTION_EXAMPLES); `make fuzz` runs many more. Simulated durations
are kept short. Inputs that hit core defects still open (issue 14: zero/1 ns timers, runaway
`count`) are not generated: they have their own expected-failure tests in
test_hostile_core.py.
"""

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

from conftest import EXAMPLES
from longpipe import cli
from longpipe.api import load_scenario

N = int(os.environ.get("LONGPIPE_HYPOTHESIS_EXAMPLES", "600"))
CASE_TIMEOUT_S = 30
SETTINGS = settings(max_examples=N, deadline=None, derandomize="LONGPIPE_HYPOTHESIS_RANDOM" not in os.environ,
                    database=None, suppress_health_check=list(HealthCheck), print_blob=True)

EXAMPLE_NAMES = ["geo.toml", "wcdma.toml", "cellular.toml", "dumbbell100.toml"]
BASES = {n: load_scenario(EXAMPLES / n)[0] for n in EXAMPLE_NAMES}
TEXTS = {n: (EXAMPLES / n).read_text() for n in EXAMPLE_NAMES}

# Values that probe every conversion: integer edges, floats JSON cannot hold, unit
# strings that used to be truncated, wrong types. Durations below a millisecond and
# zero durations are left out (open core defects, see the module docstring).
HOSTILE = [0, -1, 1, 2, 40, 1500, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 1, 2**64, 10**30,
           0.0, -0.0, 0.5, 1.5, 1e-300, 1e300, math.nan, math.inf, -math.inf,
           "", "x", "\n", "a\0b", "290", "-1s", "2s", "10ms", "1e-3s", "0.1s", "1e9s", "0bps", "1bps", "1kbps",
           "10Mbps", "1e12Gbps", "64KiB", "0.5B", "1.5pkt", "18446744073709551617pkt", "1000pkt", "0pkt", "nan",
           "reno", "hybla", "rfc3390", "bernoulli", "rlc-am", "tcp-gateway",
           True, False, None, [], {}, [1, 2], {"kind": "bulk"}, [[[[[]]]]]]
# Keys whose values start work proportional to the value or tiny timers: mutated only
# to values from SAFE_SMALL.
GUARDED = {"count", "duration", "tti", "poll_timer", "poll_prohibit", "status_prohibit", "min_rto",
           "initial_rto", "max_rto", "delayed_ack_timeout", "warmup"}
SAFE_SMALL = [0, 1, 2, -1, 1.5, "", "x", "0.3s", "1s", "10ms", "-1s", "290", "1.5pkt", True, None, [], {}, math.nan]


def leaves(node, path=()):
    """Every (path, value) of a scenario tree, containers included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))


def get_parent(tree, path):
    for p in path[:-1]:
        tree = tree[p]
    return tree


@st.composite
def mutated_scenario(draw):
    name = draw(st.sampled_from(EXAMPLE_NAMES))
    if draw(st.integers(0, 9)) == 0:
        # text-level mutation: TOML syntax errors and odd bytes
        text = TEXTS[name]
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(text)))
            j = min(len(text), i + draw(st.integers(0, 8)))
            text = text[:i] + draw(st.sampled_from(["", "[", "]", "=", '"', "\n", "\ufeff", "\0", "{", "1e999",
                                                    "[[flow]]\n", "x = 1\n", "'"])) + text[j:]
        return name, ("toml", text)
    sc = json.loads(json.dumps(BASES[name]))
    sc["duration"] = "0.3s" if name != "dumbbell100.toml" else "0.1s"
    sc.pop("warmup", None)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in leaves(sc) if p]
        path = draw(st.sampled_from(paths))
        parent = get_parent(sc, path)
        key = path[-1]
        op = draw(st.integers(0, 5))
        guarded = any(isinstance(p, str) and p in GUARDED for p in path)
        if op <= 2:
            parent[key] = copy.deepcopy(draw(st.sampled_from(SAFE_SMALL if guarded else HOSTILE)))
        elif op == 3 and isinstance(parent, dict):
            del parent[key]
        elif op == 4 and isinstance(parent, dict):
            parent[draw(st.sampled_from(["colour", "a\nb", "", "Duration", "flow ", "0"]))] = 1
        elif op == 5 and isinstance(parent, list) and len(parent) < 8:
            parent.append(json.loads(json.dumps(parent[key])))
    return name, ("json", sc)


option = st.one_of(
    st.just([]),
    st.builds(lambda s: ["--seed", s], st.sampled_from(["0", "1", "-1", "18446744073709551615",
                                                        "18446744073709551616", "x", "1e3", " 7 "])),
    st.builds(lambda k, v: ["--set", f"{k}={v}"],
              st.sampled_from(["flow.tcp", "flow.sack", "flow.iw", "link[0].loss.p", "link.queue.limit",
                               "flow[9].tcp", "node.kind", "link[0].rate", "flow.mss", "a..b", "", "flow.app.bytes"]),
              st.sampled_from(["reno", "true", "0", "-1", "1.5", "nan", "inf", "2024-01-01", "[1]", "{a=1}",
                               '"1.5pkt"', '"10Mbps"', "18446744073709551616", "", "'x'", "1e999"])),
    st.just(["--json"]),
    st.builds(lambda s: ["--pcap", s], st.sampled_from(["server-gw", "gw-client", "x-y", "", "=", "a-b=",
                                                        "server-gw=sub/dir/x.pcap"])),
    st.just(["--timeseries"]),
)


OUTCOMES: dict = {}


@pytest.fixture(scope="module", autouse=True)
def outcome_mix():
    """The generators must not be degenerate: both successes and rejections occur."""
    yield
    for cmd in ("run", "model", "sweep", "compare", "summary", "plot", "report"):
        ok, bad = OUTCOMES.get((cmd, 0), 0), OUTCOMES.get((cmd, 2), 0)
        print(f"\n{cmd}: {ok} cases exited 0, {bad} exited 2")
        if ok + bad >= 100:
            assert ok >= (ok + bad) // 10 and bad >= (ok + bad) // 10, (cmd, ok, bad)


class _Hang(BaseException):
    """Raised by the per-case alarm; a BaseException so the CLI does not report it."""


def _alarm(signum, frame):
    raise _Hang()


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main([str(a) for a in argv])
            except SystemExit as e:  # argparse's usage errors
                rc = e.code
    except _Hang:
        pytest.fail(f"no answer within {CASE_TIMEOUT_S} s: longpipe {' '.join(map(str, argv))}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return rc, out.getvalue(), err.getvalue()


def check_outcome(rc, out, err, argv):
    OUTCOMES[(argv[0], rc)] = OUTCOMES.get((argv[0], rc), 0) + 1
    assert "Traceback" not in err, err
    assert rc in (0, 2), f"exit {rc} for {argv}:\n{err}"
    if rc == 2:
        lines = err.rstrip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{argv}: {err!r}"
        assert out == "", "nothing printed on stdout on failure"
    else:
        assert out, "a successful run prints its result"
        if argv[0] == "run" and "--json" in argv:
            d = json.loads(out)
            assert all(f["goodput_bps"] >= 0 for f in d["flows"])


@SETTINGS
@given(case=mutated_scenario(), opts=st.lists(option, max_size=3), use_out=st.booleans())
def test_cli_run_on_mutated_examples(case, opts, use_out):
    _name, (kind, content) = case
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        path = td / ("s.json" if kind == "json" else "s.toml")
        if kind == "json":
            path.write_text(json.dumps(content))  # NaN/Infinity/null as Python writes them
        else:
            path.write_text(content)
        out = td / "out"
        argv = ["run", path, *[a for o in opts for a in o]]
        if use_out:
            argv += ["--out", out]
        cwd = os.getcwd()
        os.chdir(td)  # default pcap files land here, not in the repository
        try:
            before = sorted(p.name for p in td.iterdir())
            rc, stdout, stderr = run_main(argv)
        finally:
            os.chdir(cwd)
        check_outcome(rc, stdout, stderr, argv)
        if rc != 0:
            assert sorted(p.name for p in td.iterdir()) == before, "nothing new left behind on failure"


FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1e-320, 1e-300, 1e-6, 1e6, 1e300, 0.5, 1.0, 2.0]))


RTTS = st.one_of(st.floats(1e-3, 5.0), st.floats(1e-3, 5.0), st.floats(1e-3, 5.0), FLOATS)
PS = st.one_of(st.floats(1e-7, 0.5), st.floats(1e-7, 0.5), st.floats(1e-7, 0.5), FLOATS)
EXTRA = st.one_of(st.floats(1.0, 1000.0), st.floats(1.0, 1000.0), st.floats(1.0, 1000.0), FLOATS)


@SETTINGS
@given(name=st.sampled_from(["pftk", "pftk-approx", "reno", "hybla"]), rtt=RTTS, p=PS,
       extra=st.lists(st.tuples(st.sampled_from(["--wmax", "--b", "--t0", "--mss", "--rtt0"]), EXTRA), max_size=2))
def test_cli_model_on_hostile_numbers(name, rtt, p, extra):
    argv = ["model", name, "--rtt", repr(rtt), "--p", repr(p), "--json"]
    for opt, v in extra:
        argv += [opt, repr(v)]
    rc, out, err = run_main(argv)
    check_outcome(rc, out, err, argv)
    if rc == 0:
        d = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the output of {argv}"))
        assert d["throughput_bps"] >= 0 and math.isfinite(d["throughput_pps"])


# --- the option parsing of sweep, compare, summary, plot and report (issue 29) ------------

N_OPTS = int(os.environ.get("LONGPIPE_HYPOTHESIS_OPTION_EXAMPLES", str(max(N // 3, 1))))
OPT_SETTINGS = settings(SETTINGS, max_examples=N_OPTS)

TINY = """
name = "tiny"
duration = "0.2s"
[[link]]
a = "server"
b = "client"
rate = "2Mbps"
delay = "20ms"
loss = { kind = "bernoulli", p = 0.01 }
[[flow]]
src = "server"
dst = "client"
"""

KEYS = ["flow.tcp", "flow.mss", "flow.sack", "link[0].delay", "link[0].rate", "link[0].loss.p", "link[0].queue.limit",
        "flow[3].tcp", "seed", "", "a..b", "link[0]", "flow.tcp.x", ".".join(["a"] * 100), "duration"]
# Range counts are small or beyond the cap: a hostile count must be refused, a small one
# must run quickly (a sweep of 50 000 points would be accepted, and take its time).
COUNTS_ = ["0", "1", "2", "3", "100001", "99999999999", "9" * 30, "-1", "x", ""]
VALUES = ["reno,hybla", "newreno", "500..1500:lin:2", "1e-4..1e-2:log:3", "10ms..500ms:log:3", "1Mbps..3Mbps:lin:2",
          "1KiB..2KiB:lin:3", "0..1:2", "true,false", "1,1,1", ",", "", "{kind = \"ber\", ber = 1e-7}", "[1,2]",
          "nan", "1e999", "'x'", "\n", "reno,,hybla"]
SEEDS = ["1", "2", "3", "0", "-1", "x", "1..3", "3..1", "1,5,9", "18446744073709551615",
         "18446744073709551614..18446744073709551615", "0..99999999999", "1," + "9" * 40, ",", "1,,2", " 2 ", "1e3"]
SEED = ["0", "1", "18446744073709551615", "18446744073709551616", "-1", "x"]
EXECUTORS = ["local", "bogus", "tcp://", "dask://host:99999", "dask://:1", "", " local "]
JOBS = ["1", "0", "-3", "x", "1e3"]
METRICS_ = ["goodput", "retx", "rtt", "bogus", "flows[0].goodput_bps", "flows[99].goodput_bps", "flows[0]",
            "links[0].drops_queue", "sim.events", "", "a..b"]


def _grid(draw):
    key = draw(st.sampled_from(KEYS))
    if draw(st.booleans()):
        lo, hi = draw(st.sampled_from([("1", "5"), ("10ms", "20ms"), ("1e-4", "1e-2"), ("1Mbps", "2Mbps"), ("x", "y"),
                                       ("1", "1"), ("5", "1"), ("0", "1")]))
        scale = draw(st.sampled_from(["", ":lin", ":log", ":cubic"]))
        return f"{key}={lo}..{hi}{scale}:{draw(st.sampled_from(COUNTS_))}"
    return f"{key}={draw(st.sampled_from(VALUES))}"


@st.composite
def sweep_options(draw):
    argv = []
    for _ in range(draw(st.integers(0, 2))):
        argv += ["--grid", _grid(draw)]
    for opt, choices in (("--seeds", SEEDS), ("--seed", SEED), ("--executor", EXECUTORS), ("--jobs", JOBS),
                         ("--metric", METRICS_), ("--set", ["flow.tcp=reno", "flow.iw=0", "x=1", "flow.tcp"])):
        if draw(st.integers(0, 3)) == 0:
            argv += [opt, draw(st.sampled_from(choices))]
    if draw(st.booleans()):
        argv.append("--summary")
    return argv


@st.composite
def compare_options(draw):
    argv = []
    for _ in range(draw(st.integers(0, 2))):
        argv += ["--vary", _grid(draw)]
    for opt, choices in (("--tcp", ["reno,hybla", "", ",", "cubic", "bogus"]), ("--stack", ["classic,linux", "", "x"]),
                         ("--seeds", SEEDS), ("--seed", SEED), ("--executor", EXECUTORS), ("--jobs", JOBS),
                         ("--flow", ["0", "1", "-1", "x", "99"]),
                         ("--bin", ["0.01", "0", "-1", "nan", "inf", "1e-12", "1e-7", "1e300", "x"])):
        if draw(st.integers(0, 3)) == 0:
            argv += [opt, draw(st.sampled_from(choices))]
    if draw(st.integers(0, 5)) == 0:
        argv += ["--plot", draw(st.sampled_from(["c.png", "c.xyz", "", "sub/c.svg"]))]
    if draw(st.integers(0, 3)) == 0:
        argv.append(draw(st.sampled_from(["--json", "--csv"])))
    return argv


@st.composite
def reader_options(draw, cmd):
    argv = [cmd]
    if cmd == "summary":
        for _ in range(draw(st.integers(0, 2))):
            argv += ["--metric", draw(st.sampled_from(METRICS_))]
        if draw(st.integers(0, 2)) == 0:
            argv.append(draw(st.sampled_from(["--json", "--csv"])))
    elif cmd == "plot":
        argv += ["--x", draw(st.sampled_from(["flow.tcp", "link[0].delay", "seed", "", "x"]))]
        for opt, choices in (("--y", METRICS_), ("--hue", ["flow.tcp", "link[0].delay", "x"]),
                             ("--where", ["flow.tcp=reno", "flow.tcp=cubic", "x=1", "flow.tcp", "link[0].delay=10ms"])):
            if draw(st.integers(0, 2)) == 0:
                argv += [opt, draw(st.sampled_from(choices))]
        if draw(st.booleans()):
            argv.append("--logy")
        argv += ["--out", draw(st.sampled_from(["p.png", "sub/p.png", "p.svg"]))]
    else:
        argv += ["--out", draw(st.sampled_from(["r.html", "sub/r.html"]))]
    return argv


def _in_dir(td, argv):
    cwd = os.getcwd()
    os.chdir(td)  # relative outputs land here, not in the repository
    try:
        before = sorted(str(p) for p in Path(td).rglob("*"))
        rc, stdout, stderr = run_main(argv)
    finally:
        os.chdir(cwd)
    check_outcome(rc, stdout, stderr, argv)
    if rc != 0:
        assert sorted(str(p) for p in Path(td).rglob("*")) == before, f"nothing new left behind: {argv}"
    return rc


@OPT_SETTINGS
@given(opts=sweep_options())
def test_cli_sweep_options(opts):
    with tempfile.TemporaryDirectory() as td:
        (Path(td) / "s.toml").write_text(TINY)
        if "--jobs" not in opts:
            opts = [*opts, "--jobs", "1"]  # a process pool per case would cost a second each
        _in_dir(td, ["sweep", "s.toml", *opts, "--out", "sw", "--quiet"])


@OPT_SETTINGS
@given(opts=compare_options())
def test_cli_compare_options(opts):
    with tempfile.TemporaryDirectory() as td:
        (Path(td) / "s.toml").write_text(TINY)
        if "--jobs" not in opts:
            opts = [*opts, "--jobs", "1"]
        _in_dir(td, ["compare", "s.toml", *opts, "--quiet"])


@pytest.fixture(scope="module")
def small_store():
    with tempfile.TemporaryDirectory() as td:
        (Path(td) / "s.toml").write_text(TINY)
        rc, _, err = run_main(["sweep", str(Path(td) / "s.toml"), "--grid", "flow.tcp=reno,hybla", "--grid",
                               "link[0].delay=10ms..40ms:lin:3", "--seeds", "2", "--out", str(Path(td) / "sw"),
                               "--quiet", "--jobs", "1"])
        assert rc == 0, err
        yield Path(td) / "sw"


@pytest.mark.parametrize("cmd", ["summary", "plot", "report"])
@settings(OPT_SETTINGS, max_examples=max(N_OPTS // 3, 1))
@given(data=st.data())
def test_cli_summary_plot_report_options(small_store, cmd, data):
    opts = data.draw(reader_options(cmd))
    with tempfile.TemporaryDirectory() as td:
        shutil.copytree(small_store, Path(td) / "sw")
        _in_dir(td, [opts[0], "sw", *opts[1:]])
