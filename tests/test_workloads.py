"""Applications from Python and the command line: record tables as DataFrames, per-user
rows, run/compare tables, run --out CSVs and report figures, sweep metrics over users."""

import json
import math

import numpy as np
import pytest

import longpipe
from longpipe.workload import user_stats


def geo(**app):
    """A GEO path (560 ms RTT, 20 Mbit/s down) with one flow carrying ``app``."""
    return {"name": "geo-app", "duration": "60s",
            "link": [{"a": "server", "b": "client", "rate": "20Mbps", "rate_ba": "2Mbps", "delay": "280ms",
                      "queue": {"limit": "300pkt"}}],
            "flow": [{"src": "server", "dst": "client", "stack": "linux", "count": app.pop("count", 1),
                      "app": app}]}


def test_web_tables_are_columns_with_unfinished_rows_as_nan():
    r = longpipe.run(geo(kind="web", count=3, reading_time="2s"))
    p = r.pages
    assert list(p.columns) == ["flow", "start", "end", "load", "bytes", "objects"]
    assert set(p.flow) == {0, 1, 2}
    done = p.dropna()
    assert len(done) >= 10 and (done.load > 0.5).all(), "a page takes at least one RTT beyond the handshake"
    assert np.allclose(done.end - done.start, done.load)
    # the result's page count is the finished pages (warmup 0)
    assert r.data["workload"]["pages"]["count"] == len(done)
    assert r.data["workload"]["pages"]["unfinished"] == int(p.end.isna().sum())
    q = r.requests
    assert list(q.columns) == ["flow", "conn", "start", "end", "response_time", "request", "response"]
    assert (q.request == 328).all(), "ns-3's request size"
    # each page's bytes are its objects' responses
    assert q.dropna().response.sum() >= done.bytes.sum()
    # the p95 in the result is NumPy's linear percentile of the table
    assert r.data["workload"]["pages"]["time_s"]["p95"] == pytest.approx(np.percentile(done.load, 95))
    u = r.users
    assert list(u.user) == ["flow 0", "flow 1", "flow 2"] and (u.kind == "web").all()
    assert u.goodput_bps.tolist() == [f["goodput_bps"] for f in r.data["flows"]]


def test_bulk_results_hold_no_application_fields():
    r = longpipe.run(geo(kind="bulk", bytes="1MB"))
    assert "workload" not in r.data and "app" not in r.data["flows"][0] and "users" not in r.data
    assert len(r.pages) == 0 and list(r.transfers.columns)[-1] == "rate_bps"
    # without applications each flow is a user (sweeps count them)
    s = user_stats(r.data)
    assert s["users"] == 1 and s["user_goodput_min_bps"] == r.data["flows"][0]["goodput_bps"]
    assert s["page_load_p95_s"] is None


def test_read_rate_limits_a_bulk_flow_to_what_the_reader_takes():
    # the seed-003 clients: a reader at 1 Mbit/s behind a 20 Mbit/s link holds the flow to it
    sc = geo(kind="bulk", read_rate="1Mbps")
    sc["flow"][0]["rwnd"] = "256KB"
    r = longpipe.run(sc)
    g = r.data["flows"][0]["goodput_bps"]
    assert 0.9e6 < g <= 1.0e6, g
    fast = longpipe.run(geo(kind="bulk")).data["flows"][0]["goodput_bps"]
    assert fast > 5e6


def test_arrivals_fct_against_size_and_empirical_sizes_from_a_file(tmp_path):
    (tmp_path / "sizes.csv").write_text("bytes,p\n10KB,0.5\n1MB,1.0\n")
    sc = geo(kind="arrivals", rate="2/s", size={"kind": "empirical", "file": "sizes.csv"})
    (tmp_path / "a.toml").write_text(
        'duration = "60s"\n[[link]]\na = "server"\nb = "client"\nrate = "20Mbps"\ndelay = "280ms"\n'
        '[[flow]]\nsrc = "server"\ndst = "client"\nstack = "linux"\n'
        'app = { kind = "arrivals", rate = "2/s", size = { kind = "empirical", file = "sizes.csv" } }\n')
    r = longpipe.run(tmp_path / "a.toml")
    t = r.transfers.dropna()
    assert len(t) > 50
    assert t.bytes.min() >= 10_000 and t.bytes.max() <= 1_000_000
    # larger transfers take longer: FCT grows with size
    small, large = t[t.bytes < 100_000].fct.median(), t[t.bytes > 500_000].fct.median()
    assert large > small
    buckets = r.data["workload"]["fct_by_size"]
    assert sum(b["count"] for b in buckets) == len(t)
    with pytest.raises(longpipe.ScenarioError, match=r"flow\[0\]\.app\.size\.file"):
        longpipe.run(sc)  # a dict: relative to the working directory, where it is not


def test_stream_and_onoff_and_request_response_run():
    s = longpipe.run(geo(kind="stream", bitrate="2Mbps"))
    c = s.chunks.dropna()
    assert len(c) >= 5 and (c.bitrate == 2_000_000).all() and (c.bytes == 1_500_000).all()
    app = s.data["flows"][0]["app"]
    assert app["startup_s"] == pytest.approx(s.stalls[s.stalls.startup].duration.iloc[0])
    assert app["rebuffer_ratio"] == 0.0
    o = longpipe.run(geo(kind="onoff", rate="1Mbps"))
    # on 1 s, off 1 s at 1 Mbit/s: half of 1 Mbit/s on average
    assert o.data["flows"][0]["goodput_bps"] == pytest.approx(0.5e6, rel=0.03)
    rr = longpipe.run(geo(kind="request-response", think="1s", response="10KB"))
    q = rr.requests.dropna()
    assert len(q) > 20 and (q.response == 10_000).all()
    assert q.response_time.min() >= 0.56


@pytest.mark.parametrize("bad, path", [
    ({"kind": "web", "bytes": "1MB"}, "flow[0].app.bytes"),
    ({"kind": "web", "reading_time": "30"}, "flow[0].app.reading_time"),
    ({"kind": "stream"}, "flow[0].app.bitrate"),
    ({"kind": "arrivals", "size": "10KB", "rate": "fast"}, "flow[0].app.rate"),
    ({"kind": "chat"}, "flow[0].app.kind"),
])
def test_bad_application_keys_name_the_field(run_cli, tmp_path, bad, path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(geo(**bad)))
    r = run_cli("run", p)
    assert r.returncode == 2, r.stderr
    assert path in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_run_table_out_csvs_and_report_figure(run_cli, tmp_path):
    p = tmp_path / "s.json"
    sc = geo(kind="web", count=2, reading_time="3s")
    sc["user"] = [{"name": "dl", "count": 2, "flow": [
        {"src": "server", "dst": "client", "app": {"kind": "arrivals", "rate": "1/s", "size": "100KB"}}]}]
    p.write_text(json.dumps(sc))
    r = run_cli("run", p, "--out", tmp_path / "o", check=True)
    assert "applications: 4 users" in r.stdout
    assert "pages:" in r.stdout and "transfers:" in r.stdout and "per user" in r.stdout
    assert "dl#1" in r.stdout
    for t in ("pages", "requests", "transfers"):
        assert (tmp_path / "o" / f"{t}.csv").exists()
    assert not (tmp_path / "o" / "chunks.csv").exists()
    run_cli("report", tmp_path / "o", check=True)
    html = (tmp_path / "o" / "report.html").read_text()
    assert html.count("data:image/png") >= 1 and "page load" in html


def test_compare_shows_application_figures_and_plots_cdfs(run_cli, tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(geo(kind="web", count=4, reading_time="3s")))
    png = tmp_path / "c.png"
    r = run_cli("compare", p, "--stack", "linux", "--tcp", "cubic,bbr", "--plot", png, "--quiet", check=True)
    assert "page p95 s" in r.stdout and "user min Mbit/s" in r.stdout
    assert png.stat().st_size > 10_000
    d = json.loads(run_cli("compare", p, "--stack", "linux", "--tcp", "cubic,bbr", "--json", "--quiet",
                           check=True).stdout)
    assert all(v["page_load_p95_s_mean"] > 0.5 for v in d["variants"])


def test_sweep_stores_per_user_statistics(tmp_path):
    sw = longpipe.sweep(geo(kind="web", reading_time="3s"), {"flow[0].count": [2, 6]}, seeds=2,
                        out=tmp_path / "sw")
    rows = sw.rows
    assert {r["users"] for r in rows} == {2, 6}
    for r in rows:
        data = json.loads(r["result"])
        assert r["page_load_p95_s"] == data["workload"]["pages"]["time_s"]["p95"]
        assert r["user_goodput_min_bps"] == min(f["goodput_bps"] for f in data["flows"])
    s = sw.summary(["page_load_p95", "users_ge:10kbps", "share_ge:10kbps", "user_jain"])
    assert list(s["flow[0].count"]) == [2, 6]
    assert all(0 <= x <= 1 for x in s["share_ge:10kbps_mean"])
    assert s["users_ge:10kbps_mean"].iloc[1] >= s["users_ge:10kbps_mean"].iloc[0] - 6
    u = sw.users
    assert len(u) == 2 * (2 + 6) and set(u["flow[0].count"]) == {2, 6}
    again = longpipe.sweeps.load(tmp_path / "sw")
    assert not math.isnan(again.summary(["fct_p95"]).n.iloc[0])
    png = again.plot("flow[0].count", "page_load_p95", path=tmp_path / "p.png")
    assert png.exists()


def test_schema_describes_applications_and_users():
    text = json.dumps(longpipe.schema())
    for key in ("reading_time", "embedded_count", "read_rate", "max_active", "ladder", "UserSpec", "DistTable"):
        assert key in text, key
