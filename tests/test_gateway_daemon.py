"""The gateway daemon end to end (issue 15): server namespace — gateway namespace (the
daemon) — emulated satellite link — client namespace, real Linux TCP at both ends, a
small client receive window, BER 1e-7 on the satellite direction. The same download
runs without and with the daemon: every byte must arrive intact (SHA-256), the daemon
must run without privileges, serve its metrics, and stop cleanly, and the transfer
must be at least 10 times faster with it. Needs root (make test runs as root);
bounded in time; nothing is left behind, even on failure."""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from longpipe.emu import find_binary as emu_binary
from longpipe.gateway import find_binary as gateway_binary

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the gateway daemon and longpipe emu need root")

HERE = Path(__file__).resolve().parent / "gateway_e2e"
PORT = 8080
# the satellite: 10 Mbit/s toward the client, 300 ms down and 50 ms back (seed 003's
# delays), BER 1e-7 toward the client; 100 Mbit/s, 2 ms between server and gateway
RATE, RTT = "10Mbps", "350ms"
# the client's receive buffer: TCP_WINDOW_CLAMP (Linux then advertises about 8 KB)
RWND = 8_192


def chain(ber: float = 1e-7) -> dict[str, Any]:
    return {"name": "gateway-e2e", "duration": "600s", "seed": int(os.environ.get("GW_E2E_SEED", "1")),
            "link": [{"a": "server", "b": "gw", "rate": "100Mbps", "delay": "2ms", "queue": {"limit": "1000pkt"}},
                     {"a": "gw", "b": "client", "rate": RATE, "delay": "300ms", "delay_ba": "50ms",
                      "queue": {"limit": "1000pkt"}, "loss": {"kind": "ber", "ber": ber}}],
            "flow": [{"src": "server", "dst": "client", "tcp": "reno"}]}


def stream_sha256(n: int) -> str:
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(i.to_bytes(8, "big")).digest()
        i += 1
    return hashlib.sha256(bytes(out[:n])).hexdigest()


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith("lpemu-")}


def emu_namespaces(pid: int, timeout: float = 30) -> list[str]:
    """The namespaces of the emulation run by process `pid` (from its record)."""
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        for rec in Path("/run/longpipe-emu").glob("*.json"):
            try:
                d = json.loads(rec.read_text())
            except (OSError, ValueError):
                continue
            if d.get("pid") == pid and all(n in namespaces() for n in d["netns"]):
                return list(d["netns"])
        time.sleep(0.05)
    raise AssertionError("the emulation's namespaces did not appear")


def read_until(p: subprocess.Popen[str], pattern: str, timeout: float) -> str:
    """Lines of p's stderr until one matches `pattern`; that line."""
    assert p.stderr is not None
    t = time.monotonic() + timeout
    seen = []
    while time.monotonic() < t:
        r, _, _ = select.select([p.stderr], [], [], 0.2)
        if r:
            line = p.stderr.readline()
            if not line:
                break
            seen.append(line)
            if re.search(pattern, line):
                return line
    raise AssertionError(f"no line matching {pattern!r} from the daemon: {''.join(seen)[-2000:]}")


def in_ns(ns: str, *cmd: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True, timeout=30, **kw)


def scrape(ns: str, port: int) -> str:
    code = f"import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:{port}/metrics',timeout=5).read().decode())"
    p = in_ns(ns, sys.executable, "-c", code)
    assert p.returncode == 0, p.stderr
    return p.stdout


def metric(text: str, name: str) -> float:
    m = re.search(rf"^longpipe_gateway_{name} (\S+)$", text, re.M)
    assert m, f"{name} missing"
    return float(m.group(1))


def download(work: Path, size: int, gateway: str | None, ber: float = 1e-7, rwnd: int = RWND,
             sndbuf: int | None = None, gw_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """One download through the chain; with `gateway` ("spoof" or "split"), the daemon
    runs in the gateway's namespace in that mode. `rwnd`: the client's window clamp (0:
    none); `sndbuf`: the server's send buffer. Returns the client's result, and the
    daemon's findings."""
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o777)
    for f in ("server.py", "client.py"):
        shutil.copy(HERE / f, work / f)
        os.chmod(work / f, 0o644)
    sc = work / "chain.json"
    sc.write_text(json.dumps(chain(ber)))
    before = namespaces()
    # a system interpreter the unprivileged user can run (not a shim under /root)
    py = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), "python3")
    emu = subprocess.Popen(
        [emu_binary(), "run", "--scenario", str(sc), "--user", "nobody",
         "--spawn", f"server={py} {work}/server.py {PORT}" + (f" {sndbuf}" if sndbuf else ""),
         "--node", "client", "--",
         py, f"{work}/client.py", str(work), "10.0.0.1", str(PORT), str(size), str(rwnd)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    gw: subprocess.Popen[str] | None = None
    found: dict[str, Any] = {}
    try:
        ns = emu_namespaces(emu.pid)
        gw_ns = next(n for n in ns if n.endswith("-gw"))
        t = time.monotonic() + 30
        while "10.0.0.3" not in in_ns(gw_ns, "ip", "-4", "route", "show", "dev", "lpl1").stdout:
            assert time.monotonic() < t, "the emulation's routes did not appear"
            time.sleep(0.05)
        if gateway:
            gw = subprocess.Popen(
                ["ip", "netns", "exec", gw_ns, gateway_binary(), "run", "--mode", gateway, "--uplink", "lpl1",
                 "--rate", RATE, "--rtt", RTT, "--metrics", "127.0.0.1:9464", "--user", "nobody",
                 "--stats-interval", "2s", "--drain", "2s", *gw_args],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ready = read_until(gw, r"ready: pid \d+", 30)
            pid = int(re.search(r"pid (\d+)", ready).group(1))  # type: ignore[union-attr]
            found["ready"] = ready
            found["status"] = Path(f"/proc/{pid}/status").read_text()
            found["clients"] = re.search(r"clients (\S+);", ready).group(1)  # type: ignore[union-attr]
            found["rules"] = in_ns(gw_ns, "ip", "rule", "show").stdout
            found["nft"] = in_ns(gw_ns, "nft", "list", "ruleset").stdout if shutil.which("nft") else ""
        (work / "go").touch()
        t = time.monotonic() + 240
        while not (work / "result.json").exists():
            assert time.monotonic() < t, "the download did not finish"
            assert emu.poll() is None, f"the emulation ended: {emu.stderr.read() if emu.stderr else ''}"
            if gateway == "split" and "ss" not in found:
                # the relay's sockets while the transfer runs (TCP_INFO: congestion control)
                ss = in_ns(gw_ns, "ss", "-tinH", "state", "established").stdout
                if "10.0.0.3" in ss and "10.0.0.1" in ss:
                    found["ss"] = ss
            time.sleep(0.1)
        found["client"] = json.loads((work / "result.json").read_text())
        if gw is not None:
            # the endpoint serves a snapshot at most a second old: wait for the end
            t = time.monotonic() + 10
            while True:
                found["metrics"] = scrape(gw_ns, 9464)
                if metric(found["metrics"], "connections") == 0 or time.monotonic() > t:
                    break
                time.sleep(0.3)
            gw.send_signal(signal.SIGTERM)
            out, err = gw.communicate(timeout=30)
            found["exit"] = gw.returncode
            found["summary"] = json.loads(out.strip().splitlines()[-1])
            found["stderr"] = err
            found["rules_after"] = in_ns(gw_ns, "ip", "rule", "show").stdout
            found["nft_after"] = in_ns(gw_ns, "nft", "list", "ruleset").stdout if shutil.which("nft") else ""
            found["links_after"] = in_ns(gw_ns, "ip", "-o", "link", "show").stdout
        (work / "done").touch()
        out, err = emu.communicate(timeout=60)
        assert emu.returncode == 0, err
        found["emu"] = json.loads(out.strip().splitlines()[-1])
    finally:
        (work / "done").touch()
        for p in (gw, emu):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=30)
        left = namespaces() - before
        if left:
            subprocess.run([emu_binary(), "cleanup"], capture_output=True, timeout=60)
        assert not left, f"namespaces left behind: {left}"
    return found


@pytest.fixture
def shared_dir():
    """A directory the unprivileged ends can read and write (pytest's are private)."""
    d = Path(tempfile.mkdtemp(prefix="longpipe-gw-e2e-"))
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@needs_root
@pytest.mark.slow
def test_the_daemon_accelerates_a_real_download_tenfold_with_every_byte_intact(shared_dir: Path) -> None:
    tmp_path = shared_dir
    size_gw, size_base = 2_000_000, 200_000
    with_gw = download(tmp_path / "gw", size_gw, gateway="spoof")
    c = with_gw["client"]
    assert (c["bytes"], c["sha256"]) == (size_gw, stream_sha256(size_gw)), "every byte, intact"
    # the packet loop holds no root id and no capability
    st = with_gw["status"]
    uids = re.search(r"^Uid:\s+(.*)$", st, re.M).group(1).split()  # type: ignore[union-attr]
    assert uids == ["65534"] * 4, st
    assert re.search(r"^CapEff:\s+0+$", st, re.M) and re.search(r"^CapPrm:\s+0+$", st, re.M), st
    # the clients were found from the routes over the uplink; the rules were in place
    assert with_gw["clients"] == "10.0.0.3/32"
    assert "iif lpl1 ipproto tcp lookup 7451" in with_gw["rules"]
    assert "to 10.0.0.3 ipproto tcp lookup 7450" in with_gw["rules"]
    m = with_gw["metrics"]
    assert metric(m, "connections_opened_total") == 1
    assert metric(m, "spoofed_acks_total") > size_gw / 1448 / 2
    assert metric(m, "satellite_bytes_delivered_total") >= size_gw
    assert metric(m, "write_errors_total") == 0 and metric(m, "malformed_total") == 0
    # bit errors on the satellite (seed 1 hits data packets): the daemon resent what the
    # client lost — the holes, and what Linux dropped beyond its window after them
    sat = next(x for x in with_gw["emu"]["links"] if (x["a"], x["b"]) == ("gw", "client"))
    assert sat["drops_loss"] >= 1
    assert metric(m, "segments_resent_total") >= sat["drops_loss"]
    assert metric(m, "satellite_bytes_sent_total") > metric(m, "satellite_bytes_delivered_total")
    # stopped cleanly: the summary says what was acknowledged and not delivered (nothing),
    # the rules are gone and so are the devices
    s = with_gw["summary"]
    assert with_gw["exit"] == 0 and s["event"] == "stopped", with_gw["stderr"]
    assert s["acked_undelivered_bytes"] == 0 and s["held_bytes"] == 0
    assert "were not delivered" in with_gw["stderr"] and "longpipe-gateway: conns" in with_gw["stderr"]
    assert "lookup 745" not in with_gw["rules_after"]
    assert "lpgwc" not in with_gw["links_after"]
    # without the daemon: the small window over the satellite round trip
    base = download(tmp_path / "base", size_base, gateway=None)["client"]
    assert (base["bytes"], base["sha256"]) == (size_base, stream_sha256(size_base))
    rate_gw = size_gw / c["transfer_s"]
    rate_base = size_base / base["transfer_s"]
    print(f"\nwith the daemon {rate_gw * 8 / 1e6:.2f} Mbit/s ({c['total_s']:.2f} s for {size_gw} B), "
          f"without {rate_base * 8 / 1e6:.3f} Mbit/s ({base['total_s']:.2f} s for {size_base} B): "
          f"{rate_gw / rate_base:.1f}x; gateway: {json.dumps(s['gateway'])}")
    assert rate_gw >= 10 * rate_base


@pytest.mark.parametrize("args, expected", [
    (["run", "--rate", "1Mbps", "--rtt", "1s"], "error: run: --uplink IF is required"),
    (["run", "--uplink", "lo", "--rate", "1Mbps"], "error: run: --rate and --rtt are required"),
    (["run", "--uplink", "lo", "--rate", "1Mbps", "--rtt", "1s", "--window", "0B"], "error: --window: must be positive"),
    (["run", "--uplink", "lo", "--rate", "fast", "--rtt", "1s"], "error: --rate \"fast\""),
    (["run", "--uplink", "lo", "--rate", "1Mbps", "--rtt", "1s", "--mode", "splat"], "error: --mode: expected spoof or split"),
    (["run", "--uplink", "lo", "--rate", "1Mbps", "--rtt", "1s", "--mode", "split", "--pace", "1Mbps"],
     "error: --pace: only with --mode spoof"),
    (["run", "--uplink", "lo", "--rate", "1Mbps", "--rtt", "1s", "--cc", "bbr"], "error: --cc: only with --mode split"),
    (["run", "--uplink", "lo", "--rate", "1Mbps", "--rtt", "1s", "--max-conns", "-1"], "error: --max-conns"),
])
def test_bad_options_exit_2_with_one_line(args: list[str], expected: str) -> None:
    p = subprocess.run([sys.executable, "-m", "longpipe", "gateway", *args], capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(expected) and p.stderr.count("\n") == 1, p.stderr
    assert p.stdout == ""


# split mode: the server's small send buffer is the small window (a client's small
# receive window would bound the satellite leg with or without a split: the relay's
# kernel socket honours it)
SNDBUF = 8_192


@needs_root
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nft") is None, reason="split mode needs nft (make system-deps installs nftables)")
def test_split_mode_relays_a_real_download_with_the_chosen_congestion_control(shared_dir: Path) -> None:
    size_gw, size_base = 2_000_000, 200_000
    # a congestion control other than the namespaces' default (new namespaces take the
    # host's), so that the satellite leg's can only come from --cc
    default = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    cc = "cubic" if default != "cubic" else "bbr"
    with_gw = download(shared_dir / "split", size_gw, gateway="split", rwnd=0, sndbuf=SNDBUF,
                       gw_args=("--cc", cc, "--port", "7460"))
    c = with_gw["client"]
    assert (c["bytes"], c["sha256"]) == (size_gw, stream_sha256(size_gw)), "every byte, intact"
    # the relay keeps CAP_NET_RAW alone (IP_TRANSPARENT), never a root id
    st = with_gw["status"]
    uids = re.search(r"^Uid:\s+(.*)$", st, re.M).group(1).split()  # type: ignore[union-attr]
    assert uids == ["65534"] * 4, st
    for k in ("CapEff", "CapPrm", "CapAmb", "CapBnd"):
        assert re.search(rf"^{k}:\s+0+2000$", st, re.M), st
    assert f"satellite leg cc {cc} " in with_gw["ready"]
    # the table and rule the daemon made, while it ran
    assert "table ip lpgw" in with_gw["nft"] and "tproxy to 127.0.0.1:7460" in with_gw["nft"], with_gw["nft"]
    assert 'iifname "lpl1"' in with_gw["nft"] and "10.0.0.3" in with_gw["nft"]
    assert "fwmark 0x1d1a lookup 7450" in with_gw["rules"], with_gw["rules"]
    # during the transfer: two legs; the satellite leg (the client's, 10.0.0.3) runs cc,
    # the server's leg (from the client's own address to the server) the default
    legs = [ln for ln in with_gw["ss"].splitlines() if "10.0.0.1:" in ln or "10.0.0.3:" in ln]
    info = with_gw["ss"]
    sat = re.search(r"10\.0\.0\.1:8080\s+10\.0\.0\.3:\d+.*?\n(.*?)(?:\n\S|$)", info, re.S)
    assert sat and re.search(rf"^\s*{cc}\b", sat.group(1)), info
    srv = re.search(r"10\.0\.0\.3:(\d+)\s+10\.0\.0\.1:8080.*?\n(.*?)(?:\n\S|$)", info, re.S)
    assert srv and re.search(rf"^\s*{default}\b", srv.group(2)), info
    assert len(legs) >= 2, info
    m = with_gw["metrics"]
    assert metric(m, "connections_opened_total") == 1
    assert metric(m, "connections_closed_total") == 1
    assert metric(m, "connect_errors_total") == 0 and metric(m, "resets_total") == 0
    assert re.search(r'^longpipe_gateway_bytes_relayed_total\{dir="to_client"\} 2000000$', m, re.M), m
    assert re.search(r'^longpipe_gateway_bytes_relayed_total\{dir="to_server"\} 8$', m, re.M), m  # "2000000\n"
    s = with_gw["summary"]
    assert with_gw["exit"] == 0 and s["event"] == "stopped" and s["mode"] == "split", with_gw["stderr"]
    assert s["conns"] == 0 and s["buffered_bytes"] == 0
    assert "0 connections cut" in with_gw["stderr"] and "longpipe-gateway: conns 0 peak 1 opened 1" in with_gw["stderr"]
    # the server saw the client's own address and port: the relay kept the port
    assert s["split"]["same_port"] == 1
    # nothing left behind: the table and the rule went with the daemon
    assert "lpgw" not in with_gw["nft_after"], with_gw["nft_after"]
    assert "lookup 7450" not in with_gw["rules_after"]
    # without the daemon: the server's small window over the satellite round trip
    base = download(shared_dir / "base", size_base, gateway=None, rwnd=0, sndbuf=SNDBUF)["client"]
    assert (base["bytes"], base["sha256"]) == (size_base, stream_sha256(size_base))
    rate_gw = size_gw / c["transfer_s"]
    rate_base = size_base / base["transfer_s"]
    print(f"\nsplit {rate_gw * 8 / 1e6:.2f} Mbit/s ({c['total_s']:.2f} s for {size_gw} B), "
          f"without {rate_base * 8 / 1e6:.3f} Mbit/s ({base['total_s']:.2f} s for {size_base} B): "
          f"{rate_gw / rate_base:.1f}x; relay: {json.dumps(s['split'])}")
    # loosely: the gain is the relay's large window on the satellite leg
    assert rate_gw >= 3 * rate_base


@needs_root
@pytest.mark.skipif(shutil.which("nft") is None, reason="split mode needs nft (make system-deps installs nftables)")
def test_split_mode_set_up_is_removed_by_cleanup_after_a_kill_and_nothing_else() -> None:
    ns = f"lpgw-split-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    procs: list[subprocess.Popen[str]] = []
    try:
        in_ns(ns, "ip", "link", "set", "lo", "up")
        in_ns(ns, "nft", "add", "table", "ip", "someone-elses")
        base = [gateway_binary(), "run", "--mode", "split", "--uplink", "lo", "--rate", "1Mbps", "--rtt", "1s",
                "--clients", "10.9.0.0/16", "--metrics", "off", "--user", "nobody"]
        # an unknown congestion control is the user's error: one line, exit 2, nothing set up
        p = in_ns(ns, *base, "--cc", "nosuchcc")
        assert p.returncode == 2 and p.stderr.startswith('error: --cc "nosuchcc"'), p.stderr
        assert p.stderr.count("\n") == 1 and "available:" in p.stderr
        assert "lpgw" not in in_ns(ns, "nft", "list", "tables").stdout
        gw = subprocess.Popen(["ip", "netns", "exec", ns, *base], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(gw)
        ready = read_until(gw, r"ready: pid \d+", 30)
        assert "mode split" in ready and "satellite leg cc cubic" in ready, ready
        worker = int(re.search(r"pid (\d+)", ready).group(1))  # type: ignore[union-attr]
        assert "table ip lpgw" in in_ns(ns, "nft", "list", "tables").stdout
        assert "fwmark 0x1d1a lookup 7450" in in_ns(ns, "ip", "rule", "show").stdout
        # a crash: both processes killed, nothing undone
        parent = int(in_ns(ns, "sh", "-c", f"cat /proc/{worker}/status").stdout.split("PPid:")[1].split()[0])
        for pid in (worker, parent):
            os.kill(pid, signal.SIGKILL)
        gw.communicate(timeout=30)
        assert "table ip lpgw" in in_ns(ns, "nft", "list", "tables").stdout
        c = in_ns(ns, gateway_binary(), "cleanup")
        assert c.returncode == 0, c.stderr
        assert "removed nftables table ip lpgw" in c.stdout and "fwmark 0x1d1a lookup 7450" in c.stdout, c.stdout
        tables = in_ns(ns, "nft", "list", "tables").stdout
        assert "lpgw" not in tables and "table ip someone-elses" in tables, tables
        assert "7450" not in in_ns(ns, "ip", "rule", "show").stdout
        assert in_ns(ns, "ip", "route", "show", "table", "7450").stdout == ""
        assert in_ns(ns, gateway_binary(), "cleanup").stdout.strip() == "nothing to clean up"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)
        subprocess.run(["ip", "netns", "del", ns], timeout=30)
