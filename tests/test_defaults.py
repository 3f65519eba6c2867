"""Issue 25 items 1 and 5: one default TCP profile, the resolved profile in every table,
and the seams between commands (compare --vary of tables, flags in messages, the
compare figure's window and title, stale report figures, ``longpipe.sweeps``)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import cli

GEO = """
duration = "8s"
[[link]]
a = "server"
b = "gw"
rate = "100Mbps"
delay = "5ms"
[[link]]
a = "gw"
b = "client"
rate = "10Mbps"
delay = "250ms"
loss = { kind = "ber", ber = 1e-7 }
[[flow]]
src = "server"
dst = "client"
"""


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def profile(tmp_path, *sets):
    p = write(tmp_path, GEO)
    args = [x for s in sets for x in ("--set", s)]
    r = cli("run", p, "--json", "--set", "duration=1s", *args, check=True)
    return json.loads(r.stdout)["flows"][0]["profile"]


@pytest.mark.parametrize("tcp,stack", [(None, "linux"), ("reno", "linux"), ("newreno", "linux"),
                                       ("hybla", "linux"), ("cubic", "linux"), ("bbr", "linux"),
                                       ("tahoe", "classic"), ("peach", "classic"), ("peach+", "classic"),
                                       ("cherry", "classic")])
def test_default_stack_is_linux_wherever_it_runs_the_variant(tmp_path, tcp, stack):
    pr = profile(tmp_path, *([f"flow.tcp={tcp}"] if tcp else []))
    assert pr["stack"] == stack
    if stack == "linux":  # the Linux profile's defaults (tcp/stack.rs)
        assert (pr["iw_bytes"], pr["rwnd_bytes"], pr["sack"], pr["min_rto_s"]) == (14600, 6 << 20, True, 0.2)
    if tcp is None:
        assert pr["cc"] == "cubic"


def test_pinned_classic_keeps_the_papers_profile(tmp_path):
    pr = profile(tmp_path, "flow.stack=classic", "flow.tcp=cubic")
    assert (pr["stack"], pr["cc"], pr["iw_bytes"], pr["rwnd_bytes"], pr["sack"], pr["min_rto_s"]) == \
        ("classic", "cubic", 1460, 65536, False, 1.0)


def _table(stdout):
    lines = stdout.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("flow.tcp") or ln.startswith("flow "))
    return lines[i].split(), lines[i + 2:]


def test_compare_default_runs_cubic_bbr_hybla_on_one_profile(tmp_path):
    p = write(tmp_path, GEO)
    r = cli("compare", p, check=True)
    head, rows = _table(r.stdout)
    assert head[:2] == ["flow.tcp", "stack"]
    got = {ln.split()[0]: ln.split()[1] for ln in rows if ln.strip() and not ln.startswith("warning")}
    assert got == {"cubic": "linux", "bbr": "linux", "hybla": "linux"}
    assert "warning" not in r.stdout, "BBR's own pacing is not a difference of profile"


def test_compare_warns_when_profiles_mix_and_names_the_fields(tmp_path):
    p = write(tmp_path, GEO)
    r = cli("compare", p, "--tcp", "tahoe,cubic", "--set", "duration=2s", check=True)
    head, rows = _table(r.stdout)
    for col in ("stack", "SACK", "IW", "rwnd", "RTO"):  # min RTO's header is two words
        assert col in head, head
    assert rows[0].split()[:2] == ["tahoe", "classic"] and rows[1].split()[:2] == ["cubic", "linux"]
    warn = [ln for ln in r.stdout.splitlines() if ln.startswith("warning:")]
    assert len(warn) == 1 and "classic and linux" in warn[0] and "SACK" in warn[0] and "rwnd" in warn[0]
    # varying the stack on purpose is what the user asked for: columns, no warning
    r = cli("compare", p, "--stack", "classic,linux", "--tcp", "cubic", "--set", "duration=2s", check=True)
    assert "warning" not in r.stdout and "rwnd" in r.stdout


def test_run_table_has_the_stack_and_warns_on_mixed_flows(tmp_path):
    two = GEO + '[[flow]]\nsrc = "server"\ndst = "client"\ntcp = "tahoe"\n'
    r = cli("run", write(tmp_path, two), "--set", "duration=2s", check=True)
    head = next(ln for ln in r.stdout.splitlines() if ln.startswith("flow "))
    assert head.split()[3] == "stack"
    assert "warning: these rows run on different TCP profiles (stacks classic and linux)" in r.stdout
    r = cli("run", write(tmp_path, GEO), "--set", "duration=2s", check=True)
    assert " linux " in r.stdout and "warning" not in r.stdout


def test_sweep_summary_shows_the_profile(tmp_path):
    p = write(tmp_path, GEO)
    out = tmp_path / "sw"
    r = cli("sweep", p, "--grid", "flow.tcp=tahoe,newreno", "--set", "duration=2s", "--out", out, "--summary",
            check=True)
    assert "stack" in r.stdout and "classic" in r.stdout and "linux" in r.stdout
    assert "warning: these rows run on different TCP profiles" in r.stdout
    r = cli("summary", out, check=True)
    assert "warning: these rows run on different TCP profiles" in r.stdout
    cli("report", out, check=True)
    html = (out / "report.html").read_text()
    assert "<th>stack</th>" in html and "warning: these rows run on different TCP profiles" in html


def test_compare_vary_tables(tmp_path):
    """--vary 'node=[...],[...]' (table values) ended in TypeError: unhashable list."""
    p = write(tmp_path, GEO)
    r = cli("compare", p, "--set", "duration=2s", "--vary",
            'node=[{name="gw",kind="router"}],[{name="gw",kind="tcp-gateway"}]')
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert '"kind":"router"' in r.stdout and '"kind":"tcp-gateway"' in r.stdout


def test_compare_vary_missing_element_names_vary_and_the_way_out(tmp_path):
    p = write(tmp_path, GEO)
    r = cli("compare", p, "--vary", "node[0].kind=router,tcp-gateway")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    msg = r.stderr.strip()
    assert "--vary key node[0].kind" in msg and "--grid" not in msg
    assert "--vary 'node=[{...}],[{...}]'" in msg
    # with a [[node]] table the element exists and the key works
    with_node = GEO + '[[node]]\nname = "gw"\nkind = "router"\n'
    r = cli("compare", write(tmp_path, with_node, "n.toml"), "--set", "duration=2s", "--vary",
            "node[0].kind=router,tcp-gateway", check=True)
    assert "tcp-gateway" in r.stdout


def test_compare_figure_uses_the_runs_window_and_names_the_varied_loss(tmp_path):
    from longpipe import api
    from longpipe.plots import window_lines
    from longpipe.sweeps.compare import caption

    sc, _ = api.load_scenario(write(tmp_path, GEO))
    res = api.run(sc, timeseries=[0], overrides={"duration": "1s"})
    rwnd, _ = window_lines(sc, res, 0)
    assert rwnd == 6 << 20, "the Linux profile's 6 MiB, not 64 KiB"
    assert "BER 1e-07" in caption(sc)
    cap = caption(sc, ["link[1].loss.ber"])
    assert "BER" not in cap and "link[1] loss per line" in cap


def test_report_leaves_out_figures_older_than_the_runs(tmp_path):
    p = write(tmp_path, GEO)
    out = tmp_path / "sw"
    cli("sweep", p, "--grid", "link[1].loss.ber=1e-7,1e-6", "--set", "duration=2s", "--out", out, check=True)
    cli("plot", out, "--x", "link[1].loss.ber", "--y", "goodput", check=True)
    pngs = list(out.glob("*.png"))
    assert len(pngs) == 1
    runs = sorted((out / "runs").glob("*.parquet"))
    newest = max(r.stat().st_mtime_ns for r in runs)
    os.utime(pngs[0], ns=(newest - 10**9, newest - 10**9))  # drawn before the last run
    cli("report", out, check=True)
    html = (out / "report.html").read_text()
    assert f'alt="{pngs[0].name}"' not in html
    assert "Not shown, older than the newest stored run" in html and pngs[0].name in html
    os.utime(pngs[0], ns=(newest + 10**9, newest + 10**9))
    cli("report", out, check=True)
    assert f'alt="{pngs[0].name}"' in (out / "report.html").read_text()


def test_import_longpipe_reaches_the_subpackages():
    code = "import longpipe; print(longpipe.sweeps.load.__name__, longpipe.models.__name__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["load", "longpipe.models"]


def test_sweep_plot_draws_models_from_each_points_own_inputs(tmp_path):
    """Issue 25 item 6: model curves in sweep figures. At each point the model is
    evaluated for the run's own RTT, loss-indication rate and MSS, capped at the slowest
    link OF THAT POINT (the grid varies it: the base scenario's rate would be wrong)."""
    import longpipe.sweeps
    from longpipe.models.cli import evaluate
    from longpipe.sweeps.plot import model_goodput

    p = write(tmp_path, GEO.replace("ber = 1e-7", "ber = 1e-6"))
    out = tmp_path / "sw"
    cli("sweep", p, "--grid", "link[1].rate=300kbps,50Mbps", "--set", "duration=30s", "--out", out, check=True)
    sw = longpipe.sweeps.load(out)
    capped = []
    for text, rate in (("300kbps", 3e5), ("50Mbps", 50e6)):
        (row,) = [r for r in sw.rows if r["link[1].rate"] == text]
        f = json.loads(row["result"])["flows"][0]
        p_loss = (f["fast_recoveries"] + f["timeouts"]) / f["segments_sent"]
        assert p_loss > 0, "the run saw losses"
        want = evaluate("cubic", f["mean_rtt_s"], p_loss, mss=f["mss"], rate=rate)["throughput_bps"]
        got = model_goodput("cubic", [row], sw.axes, sw.manifest["scenario"])
        assert got == pytest.approx(want, rel=1e-12)
        assert got <= rate
        capped.append(got == rate)
    assert capped == [True, False], "the slow point is link-limited: its own rate, not the base's 10 Mbit/s"
    png = tmp_path / "m.png"
    cli("plot", out, "--x", "link[1].rate", "--model", "cubic,pftk", "--out", png, check=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for args, msg in ((["--model", "cubic", "--y", "rtt"], "error: --model: models are drawn beside the goodput"),
                      (["--model", "nosuch"], "error: --model: expected a comma-separated list")):
        r = cli("plot", out, "--x", "link[1].rate", "--out", tmp_path / "x.png", *args)
        assert r.returncode == 2 and r.stderr.startswith(msg) and r.stderr.count("\n") == 1, r.stderr
        assert not (tmp_path / "x.png").exists()
