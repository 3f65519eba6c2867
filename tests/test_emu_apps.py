"""The workload kinds on real sockets (``longpipe emu --flows``): web, request-response,
onoff, stream, arrivals and ``read_rate``, driven by the simulator's own application
state machines (crates/longpipe-emu/src/apps/). Needs root; every test is bounded in
time and checks that no namespace is left behind."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import longpipe
from conftest import leaked_emu_namespaces
from longpipe.emu import find_binary
from longpipe.workload import frame

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="longpipe emu needs root")


@pytest.fixture(autouse=True)
def no_leftovers():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    before = {line.split()[0] for line in out.splitlines() if line.startswith("lpemu-")}
    try:
        yield
    finally:
        left = leaked_emu_namespaces(before)
        if left:
            subprocess.run([find_binary(), "cleanup"], capture_output=True, timeout=60)
        assert not left, f"namespaces left behind: {left}"


def path(delay="20ms", link_rate="10Mbps", duration="6s", seed=5, **app):
    """server - client, one flow carrying ``app`` (Linux profile, CUBIC)."""
    flow = {"src": "server", "dst": "client", "tcp": "cubic", "stack": "linux", "count": app.pop("count", 1),
            "app": app}
    if "rwnd" in app:
        flow["rwnd"] = app.pop("rwnd")
    return {"name": "emu-app", "duration": duration, "seed": seed,
            "link": [{"a": "server", "b": "client", "rate": link_rate, "rate_ba": "2Mbps", "delay": delay,
                      "queue": {"limit": "200pkt"}}],
            "flow": [flow]}


def emulate(tmp_path, sc, timeout=120):
    p = tmp_path / "sc.json"
    p.write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "longpipe", "emu", p, "--flows", "--json"], capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["emu"]["errors"] == [] and not out["interrupted"]
    return out


def test_web_pages_are_the_simulators_page_for_page(tmp_path):
    sc = path(kind="web", reading_time="0.3s", duration="8s")
    emu = emulate(tmp_path, sc)
    sim = longpipe.run(sc)
    e, s = frame(emu["emu"]["records"], "pages").dropna(), sim.pages.dropna()
    assert set(e.flow) == {0}
    # page k has the same objects and bytes in both (the same seeded streams); the
    # emulated run may load a few pages more or fewer in its 8 s (an unfinished page
    # counts what it knew of at the end)
    n = min(len(e), len(s))
    assert n >= 5, (len(e), len(s))
    assert e.objects[:n].tolist() == s.objects[:n].tolist()
    assert e.bytes[:n].tolist() == s.bytes[:n].tolist()
    # each object's response size too, and every request is 328 B (+ a 32 B header on the
    # wire, not in the records); objects of a page finish in either order
    er, sr = frame(emu["emu"]["records"], "requests"), sim.requests
    first_n = [sorted(q[q.start < pages.end.iloc[n - 1]].response) for q, pages in ((er, e), (sr, s))]
    assert first_n[0] == first_n[1] and (er.request == 328).all()
    # the same result fields as the simulator's
    assert set(emu["flows"][0]["app"]) == set(sim.data["flows"][0]["app"])
    assert set(emu["workload"]) == set(sim.data["workload"])
    # a page costs at least a round trip (40 ms) beyond its parsing time, and the
    # emulated page loads are the simulated ones within 25 % on average
    assert (e.load > 0.04).all()
    assert e.load[:n].mean() == pytest.approx(s.load[:n].mean(), rel=0.25)
    # goodput counts the responses' bytes the client read: no header bytes
    f = emu["flows"][0]
    assert f["bytes_delivered"] >= e.bytes.sum()
    assert f["bytes_delivered"] <= er.response.sum()


def test_request_response_one_connection_per_request(tmp_path):
    # netperf TCP_CRR: each request opens its own connection (an ephemeral port each)
    sc = path(kind="request-response", request="200B", response="30KB", think="0.2s", persistent=False,
              duration="5s", delay="10ms")
    emu = emulate(tmp_path, sc)
    q = frame(emu["emu"]["records"], "requests")
    done = q.dropna()
    assert len(done) >= 10 and (done.response == 30_000).all() and (done.request == 200).all()
    assert len(q) - len(done) <= 1
    assert len(set(done.conn)) == len(done), "a connection per request"
    # handshake, request and a 30 kB response in slow start (IW 10): at least 3 RTTs of 20 ms
    assert (done.response_time > 0.06).all()
    sim = longpipe.run(sc)
    assert done.response_time.mean() == pytest.approx(sim.requests.dropna().response_time.mean(), rel=0.3)
    a = emu["flows"][0]["app"]
    assert a["kind"] == "request-response" and a["requests"] == len(done)


def test_a_slow_reader_holds_the_flow_to_its_rate(tmp_path):
    # a reader at 1 Mbit/s behind 10 Mbit/s (the seed-003 clients): its receive buffer
    # (64 kB) fills, the window closes, goodput is the read rate; in a bulk flow's
    # receiver and in an application's (onoff sending as fast as TCP allows)
    for app in ({"kind": "bulk"}, {"kind": "onoff", "on": "100s", "rate": "bulk"}):
        slow = emulate(tmp_path, path(**app, read_rate="1Mbps", rwnd="64KB", duration="5s"))
        g = slow["flows"][0]["goodput_bps"]
        assert 0.85e6 < g < 1.1e6, (app, g)
    fast = emulate(tmp_path, path(kind="onoff", on="100s", rate="bulk", rwnd="64KB", duration="3s"))
    assert fast["flows"][0]["goodput_bps"] > 4e6, "without the reader the window allows 64 kB / 40 ms"


def test_stream_and_arrivals_fill_their_tables(tmp_path):
    st = emulate(tmp_path, path(kind="stream", bitrate="1Mbps", chunk="1s", duration="6s"))
    c = frame(st["emu"]["records"], "chunks").dropna()
    assert len(c) >= 4 and (c.bytes == 125_000).all() and (c.bitrate == 1_000_000).all()
    stalls = frame(st["emu"]["records"], "stalls")
    assert stalls.startup.tolist()[0], "the start-up comes first"
    assert stalls.dropna().duration.sum() < 1.5, "10 Mbit/s carries a 1 Mbit/s video without stalls"
    ar = emulate(tmp_path, path(kind="arrivals", rate="10/s", size="20KB", duration="4s"))
    t = frame(ar["emu"]["records"], "transfers")
    done = t.dropna()
    # about 40 arrivals (Poisson, seeded); each a connection from the server
    assert 20 <= len(t) <= 70 and len(t) - len(done) <= 3 and (done.bytes == 20_000).all()
    assert (done.fct > 0.04).all(), "a handshake and the data: more than one RTT"
    sim = longpipe.run(path(kind="arrivals", rate="10/s", size="20KB", duration="4s"))
    # the arrival times are the seeded stream's: the same as the simulator's
    s = sim.transfers
    n = min(len(t), len(s))
    assert np.allclose(np.sort(t.start)[:n], np.sort(s.start)[:n], rtol=0, atol=1e-9)
    assert ar["workload"]["transfers"]["count"] == len(done)


def test_users_each_have_their_figures(tmp_path):
    emu = emulate(tmp_path, path(kind="request-response", response="10KB", think="0.1s", count=2, duration="3s"))
    assert [f["app"]["kind"] for f in emu["flows"]] == ["request-response"] * 2
    assert all(f["app"]["requests"] >= 5 for f in emu["flows"])
    assert emu["workload"]["per_user"]["goodput_bps"]["users"] == 2
    # a [[user]] group: each user a web client and a request-response client
    sc = path(kind="web", reading_time="0.5s", duration="3s")
    flows = sc.pop("flow")
    sc["user"] = [{"name": "sub", "count": 2,
                   "flow": [flows[0], {**flows[0], "app": {"kind": "request-response", "think": "0.2s"}}]}]
    emu = emulate(tmp_path, sc)
    assert [u["name"] for u in emu["users"]] == ["sub#0", "sub#1"]
    assert all(u["kind"] == "web+request-response" and u["pages"] >= 1 and u["requests"] >= 5 for u in emu["users"])


def test_a_user_group_with_a_bulk_flow_stays_refused(tmp_path):
    sc = path(kind="bulk", duration="2s")
    sc["user"] = [{"name": "sub", "count": 2, "flow": sc.pop("flow")}]
    p = tmp_path / "sc.json"
    p.write_text(json.dumps(sc))
    r = subprocess.run([sys.executable, "-m", "longpipe", "emu", p, "--flows"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "user[0].flow[0]" in r.stderr and "simulated only" in r.stderr


def test_compare_puts_simulated_and_emulated_pages_side_by_side(tmp_path):
    # the "Done means": `longpipe compare --engine emu` for a web-page case,
    # the same columns as --engine sim, page loads within the documented tolerance
    p = tmp_path / "sc.json"
    p.write_text(json.dumps(path(kind="web", reading_time="0.3s", duration="6s")))
    runs = {}
    for engine in ("sim", "emu"):
        r = subprocess.run([sys.executable, "-m", "longpipe", "compare", p, "--tcp", "cubic", "--engine", engine,
                            "--json"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        runs[engine] = json.loads(r.stdout)["variants"][0]
    assert set(runs["emu"]) == set(runs["sim"]) and "page_load_p95_s_mean" in runs["emu"]
    assert runs["emu"]["page_load_p95_s_mean"] == pytest.approx(runs["sim"]["page_load_p95_s_mean"], rel=0.25)
    assert runs["emu"]["user_goodput_min_bps_mean"] > 0
