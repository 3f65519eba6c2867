"""Live emulation (``longpipe emu``): real Linux TCP in network namespaces through the
core's link code. Needs root (make test runs as root); every test is bounded in time
and checks that nothing it made is left behind, even when it fails."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import leaked_emu_namespaces
from longpipe.emu import find_binary

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="longpipe emu needs root")


def our_namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("lpemu-")]


@pytest.fixture(autouse=True)
def no_leftovers():
    before = set(our_namespaces())
    try:
        yield
    finally:
        left = leaked_emu_namespaces(before)
        if left:  # clean up for the next test, then fail this one
            subprocess.run([find_binary(), "cleanup"], capture_output=True, timeout=60)
        assert not left, f"namespaces left behind: {left}"


def emu(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "longpipe", "emu", *map(str, args)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=timeout)


def write(tmp_path, sc, name="sc.json"):
    p = tmp_path / name
    p.write_text(json.dumps(sc))
    return p


def path_sc(rate="4Mbps", delay="20ms", duration="4s", **flow):
    return {"name": "emu-path", "duration": duration,
            "link": [{"a": "server", "b": "client", "rate": rate, "delay": delay, "queue": {"limit": "50pkt"}}],
            "flow": [{"src": "server", "dst": "client", "tcp": "reno", **flow}]}


def test_flows_give_the_simulators_fields_a_capture_and_the_links_rate(tmp_path, tshark):
    sc = write(tmp_path, path_sc(app={"bytes": "300KB"}))
    p = emu(sc, "--flows", "--json", "--out", tmp_path / "o", "--pcap", "server-client")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    sim = json.loads(subprocess.run([sys.executable, "-m", "longpipe", "run", sc, "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    # the same result contract as a simulated run (plus the emulator's own section)
    assert set(r) - {"emu", "interrupted"} == set(sim) - {"sim"} | {"sim"}
    assert set(r["flows"][0]) == set(sim["flows"][0])
    # (`held`, the segments the simulated sender kept in its socket at a full interface
    # queue, has no per-link counter in the kernel: the emulator leaves it out)
    assert set(r["links"][0]) == set(sim["links"][0]) - {"held"}
    f = r["flows"][0]
    assert f["bytes_delivered"] == 300_000 and f["completion_time_s"] is not None
    # 300 kB over a 4 Mbit/s link take at least 0.6 s (the rate is enforced), and the
    # first RTT of 40 ms comes on top
    assert f["completion_time_s"] > 0.6 + 0.04
    assert 0.04 < f["mean_rtt_s"] < 1.0
    fwd, rev = r["links"]
    assert fwd["packets"] >= 300_000 // 1460 and fwd["bytes"] >= 300_000
    assert rev["packets"] > 0 and r["emu"]["linux_cc"] == ["reno"]
    assert r["emu"]["ferry"]["packets_written"] > 0 and not r["interrupted"]
    # the kernel's drops at each end's device, outside the emulated link: none (its queue
    # holds 20 000 packets, the whole transfer is about 210)
    assert r["emu"]["device_dropped"] == [
        {"node": "server", "link": 0, "dev": "lpl0", "tx": 0, "rx": 0},
        {"node": "client", "link": 0, "dev": "lpl0", "tx": 0, "rx": 0}]
    # the capture on the server's device: its SYN first, then data both ways
    pcap = tmp_path / "o" / "server-client.pcap"
    lines = subprocess.run([tshark, "-r", pcap, "-T", "fields", "-e", "ip.src", "-e", "tcp.flags.syn"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    assert lines[0].split("\t") == ["10.0.0.1", "1"]
    assert sum(1 for x in lines if x.startswith("10.0.0.2")) > 10
    assert json.loads((tmp_path / "o" / "result.json").read_text())["flows"][0]["bytes_delivered"] == 300_000


def test_seeded_loss_is_the_simulators_stream(tmp_path):
    # The same loss list drops exactly packets 3 and 7 of the forward direction.
    sc = path_sc(app={"bytes": "100KB"}, duration="3s", sack=True)
    sc["link"][0]["loss"] = {"kind": "list", "drop": [3, 7]}
    p = emu(write(tmp_path, sc), "--flows", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["links"][0]["drops_loss"] == 2
    f = r["flows"][0]
    assert f["bytes_delivered"] == 100_000 and f["retransmitted_segments"] >= 2


def test_command_runs_unprivileged_in_the_client_namespace(tmp_path):
    server = ("import socket,os;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
              "s.bind((os.environ['LONGPIPE_NODE_SERVER'],7000));s.listen();c,_=s.accept();c.sendall(c.recv(10))")
    client = ("import socket,os,time,sys\n"
              "for i in range(100):\n"
              "    try:\n"
              "        t=time.monotonic();c=socket.create_connection((os.environ['LONGPIPE_NODE_SERVER'],7000));break\n"
              "    except OSError: time.sleep(0.05)\n"
              "rtt=time.monotonic()-t\n"
              "c.sendall(b'x');c.recv(10)\n"
              "print('rtt',rtt,'uid',os.geteuid())\n"
              "sys.exit(3)\n")
    py = "/usr/bin/python3"  # the commands run as nobody: a Python they can read
    p = emu(write(tmp_path, path_sc(delay="50ms")), "--spawn", f"server={py} -c \"{server}\"",
            "--", py, "-c", client)
    assert p.returncode == 3, p.stderr  # the command's status
    words = p.stdout.split()
    assert float(words[1]) >= 0.1, "the connect takes one RTT of 2 x 50 ms"
    assert words[3] != "0", "not root"
    assert "server->client" in p.stderr


def test_the_hosts_devices_queue_more_than_linuxs_default(tmp_path):
    # a TUN device drops what does not fit in its queue, out of the emulated link's
    # counters: the emulator makes it 20 000 packets (Linux: 500)
    p = emu(write(tmp_path, path_sc()), "--", "ip", "-j", "link", "show", "dev", "lpl0")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)[0]["txqlen"] == 20_000


def test_bad_input_is_one_line_and_sets_up_nothing(tmp_path):
    p = emu(write(tmp_path, path_sc(tcp="tahoe")), "--flows")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "flow[0].tcp" in p.stderr and "tahoe" in p.stderr
    p = emu(write(tmp_path, path_sc()), "--flows", "--pcap", "server-nowhere")
    assert p.returncode == 2 and "names no link" in p.stderr
    p = emu(write(tmp_path, path_sc()), "--flows", "--cc", "nonesuch")
    assert p.returncode == 2 and "--cc" in p.stderr
    p = emu(write(tmp_path, path_sc()))
    assert p.returncode == 2 and "either --flows or -- COMMAND" in p.stderr


def _start(tmp_path):
    exe = find_binary()
    sc = write(tmp_path, path_sc(duration="60s"))
    proc = subprocess.Popen([exe, "run", "--scenario", sc, "--flows", "--result", tmp_path / "r.json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not our_namespaces() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    return exe, proc


def test_sigterm_tears_down(tmp_path):
    before = set(our_namespaces())
    _, proc = _start(tmp_path)
    try:
        assert set(our_namespaces()) - before, "running"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 130
        assert not set(our_namespaces()) - before
        r = json.loads((tmp_path / "r.json").read_text())
        assert r["interrupted"] is True and r["duration_s"] < 60
    finally:
        proc.kill()
        proc.wait()


def test_cleanup_after_a_crash_removes_only_its_own(tmp_path):
    before = set(our_namespaces())
    subprocess.run(["ip", "netns", "add", "lpemu-notours"], check=True)  # marked but unrecorded
    try:
        _, proc = _start(tmp_path)
        mine = set(our_namespaces()) - before - {"lpemu-notours"}
        assert len(mine) == 2
        proc.kill()  # SIGKILL: no teardown
        proc.wait()
        assert mine <= set(our_namespaces())
        out = subprocess.run([sys.executable, "-m", "longpipe", "emu", "cleanup"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0
        assert not mine & set(our_namespaces())
        assert "lpemu-notours" in our_namespaces(), "nothing without a record is touched"
        assert all(n in out.stdout for n in mine)
    finally:
        subprocess.run(["ip", "netns", "delete", "lpemu-notours"])


def test_selftest_loss_is_the_seeded_stream_and_within_bounds():
    p = subprocess.run([find_binary(), "selftest", "--quick", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    lo, hi = r["loss"]["ci999"]
    n = r["loss"]["n"]
    assert lo <= r["loss"]["ferry_drops"] / n <= hi
    # every loss is the ferry's (the kernel dropped nothing on this light load)
    assert r["loss"]["ferry_drops"] == round(r["loss"]["observed"] * n)
    assert r["delay"]["n"] > 0 and r["engine_pps"] > 0
    assert [x["bps"] for x in r["rate"]] == [1_000_000, 100_000_000]


def test_not_root_is_a_clear_error():
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="lpemu-test-"))
    os.chmod(d, 0o755)
    sc = write(d, path_sc())
    os.chmod(sc, 0o644)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", find_binary(), "run",
                        "--scenario", sc, "--flows"], capture_output=True, text=True, timeout=30)
    sc.unlink()
    d.rmdir()
    assert p.returncode == 2 and "needs root" in p.stderr


def test_binary_is_found():
    assert Path(find_binary()).exists()


def test_compare_puts_sim_and_emu_side_by_side(tmp_path):
    sc = write(tmp_path, path_sc(duration="3s", app={"bytes": "200KB"}))
    runs = {}
    for engine in ("sim", "emu"):
        p = subprocess.run([sys.executable, "-m", "longpipe", "compare", sc, "--tcp", "reno,newreno", "--engine",
                            engine, "--json"], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        runs[engine] = json.loads(p.stdout)
    assert [v["flow.tcp"] for v in runs["emu"]["variants"]] == ["reno", "newreno"]
    assert set(runs["emu"]["variants"][0]) == set(runs["sim"]["variants"][0])
    # both finish the 200 kB (in about 0.4 to 0.8 s on a 4 Mbit/s, 40 ms path)
    for v in runs["emu"]["variants"]:
        assert 0.4 < v["completion_time_s_mean"] < 2.0


def run_namespaces(pids):
    """The namespaces recorded by the emulations whose binary has one of `pids`."""
    state = Path(os.environ.get("LONGPIPE_EMU_STATE", "/run/longpipe-emu"))
    out = set()
    for rec in state.glob("*.json"):
        try:
            r = json.loads(rec.read_text())
        except (OSError, ValueError):
            continue
        if r.get("pid") in pids:
            out |= set(r["netns"])
    return out


def children(pid):
    try:
        return {int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def wait_for_run(pids_of, timeout=30):
    """Waits until the emulation of `pids_of()` has recorded its namespaces; returns them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mine = run_namespaces(pids_of())
        if mine and mine <= set(our_namespaces()):
            return mine
        time.sleep(0.05)
    raise AssertionError("the emulation did not start")


def adv_windows(tshark, pcap, src):
    """(window scale of `src`'s SYN or SYN-ACK, the windows it advertised after it, in
    bytes, scaled as the capture's SYNs say) read off the wire by tshark."""
    out = subprocess.run([tshark, "-r", pcap, "-Y", f"ip.src=={src}", "-T", "fields", "-e", "tcp.flags.syn",
                          "-e", "tcp.options.wscale.shift", "-e", "tcp.window_size"],
                         capture_output=True, text=True, check=True).stdout
    shift, wins = None, []
    for line in out.splitlines():
        syn, sh, win = line.split("\t")
        if syn in ("1", "True"):
            shift = int(sh or 0)
        else:
            wins.append(int(win))
    return shift, wins


@pytest.mark.parametrize("rwnd", [8760, 32768, 100_000, 200_000])
def test_the_receive_window_holds_on_the_wire(tmp_path, tshark, rwnd):
    # window-limited: the path holds 500 kB (40 Mbit/s x 100 ms), the window at most 200 kB
    sc = path_sc(rate="40Mbps", delay="50ms", duration="3s", rwnd=f"{rwnd}B")
    sc["warmup"] = "1s"
    sc["link"][0]["queue"] = {"limit": "1000pkt"}
    p = emu(write(tmp_path, sc), "--flows", "--json", "--out", tmp_path / "o", "--pcap", "client-server")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    shift, wins = adv_windows(tshark, tmp_path / "o" / "client-server.pcap", "10.0.0.2")
    # the smallest window scale that carries rwnd (RFC 7323), as the simulator needs none
    assert shift == max(0, (rwnd - 1).bit_length() - 16), shift
    # never more than rwnd; at least rwnd less one segment (unscaled windows are whole
    # segments of 1448 B: timestamps on)
    assert max(wins) <= rwnd, (max(wins), rwnd)
    assert max(wins) >= rwnd - 1448, (max(wins), rwnd)
    # goodput: at most the window per round trip (100 ms), and close to it
    g = r["flows"][0]["goodput_bps"]
    assert 0.85 * (rwnd // 1448 * 1448) * 8 / 0.1 <= g <= rwnd * 8 / 0.1, g
    # and beside the simulator's (docs/emulation.md: 0.97-1.00 on the GEO path)
    sim = json.loads(subprocess.run([sys.executable, "-m", "longpipe", "run", tmp_path / "sc.json", "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    print("rwnd", rwnd, "emu/sim", g / sim["flows"][0]["goodput_bps"])
    assert 0.9 < g / sim["flows"][0]["goodput_bps"] < 1.05
    sysctls = r["emu"]["sysctls"]
    assert sysctls["nodes"]["client"]["net.ipv4.tcp_window_scaling"] == "1"
    assert sysctls["nodes"]["server"]["net.ipv4.tcp_timestamps"] == "1"
    assert int(sysctls["host"]["net.core.rmem_max"]) > 0


def test_a_hundred_flows_to_one_host(tmp_path):
    # (the queue holds the 100 opening bursts of 10 segments: with 300 packets a third
    # of the flows lost theirs and spent the 3 s in RTO back-off, as Linux does)
    sc = path_sc(rate="10Mbps", delay="5ms", duration="3s", count=100)
    sc["link"][0]["queue"] = {"limit": "1200pkt"}
    p = emu(write(tmp_path, sc), "--flows", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert len(r["flows"]) == 100 and r["emu"]["errors"] == []
    assert all(f["bytes_delivered"] > 0 for f in r["flows"]), [f["bytes_delivered"] for f in r["flows"]]
    # they share the link: together at most its rate (5.8 Mbit/s measured over the 3 s
    # with the start-up and the losses when the bursts overflow the queue)
    assert 3e6 < sum(f["goodput_bps"] for f in r["flows"]) < 10e6


def test_ctrl_c_on_longpipe_emu_flows_tears_down(tmp_path):
    sc = write(tmp_path, path_sc(duration="60s"))
    py = subprocess.Popen([sys.executable, "-m", "longpipe", "emu", sc, "--flows"], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        mine = wait_for_run(lambda: children(py.pid))
        time.sleep(0.5)
        py.send_signal(signal.SIGINT)  # to the front end only: it passes it on
        _, err = py.communicate(timeout=30)
        assert py.returncode == 130, err
        assert "Traceback" not in err and "panicked" not in err, err
        assert not mine & set(our_namespaces())
    finally:
        py.kill()
        py.wait()


def test_ctrl_c_during_a_command_leaves_nothing_and_no_panic(tmp_path):
    sc = write(tmp_path, path_sc(duration="60s"))
    # a terminal's Ctrl-C: SIGINT to the whole process group
    py = subprocess.Popen([sys.executable, "-m", "longpipe", "emu", sc, "--", "sleep", "10"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True)
    try:
        mine = wait_for_run(lambda: children(py.pid))
        time.sleep(0.5)
        os.killpg(py.pid, signal.SIGINT)
        _, err = py.communicate(timeout=30)
        assert py.returncode == 130, err  # the command's status: killed by SIGINT
        assert "panicked" not in err and "Traceback" not in err, err
        assert not mine & set(our_namespaces())
    finally:
        py.kill()
        py.wait()


def test_ctrl_c_during_a_large_set_up_stops_it(tmp_path):
    # 600 nodes: about 20 ms of set-up each; Ctrl-C is looked at between two nodes
    links = [{"a": f"a{i}", "b": f"b{i}", "rate": "10Mbps", "delay": "5ms"} for i in range(300)]
    sc = write(tmp_path, {"duration": "5s", "link": links, "flow": [{"src": "a0", "dst": "b0"}]})
    proc = subprocess.Popen([find_binary(), "run", "--scenario", sc, "--flows", "--result", tmp_path / "r.json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        mine = wait_for_run(lambda: {proc.pid})
        assert len(mine) == 600
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert not (tmp_path / "r.json").exists(), "stopped during the set-up, no run"
        assert not mine & set(our_namespaces())
    finally:
        proc.kill()
        proc.wait()


def test_what_linux_or_this_host_cannot_do_is_one_line(tmp_path):
    big = path_sc(mss=65000, rwnd="1MB")
    p = emu(write(tmp_path, big), "--flows")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "flow[0].mss" in p.stderr, p.stderr
    sc = write(tmp_path, path_sc())
    for opt in (["--user", "nosuchuser"], ["--cc", ""], ["--user", ""]):
        p = emu(sc, "--flows", *opt)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and opt[0] in p.stderr, (opt, p.stderr)
    # root without CAP_SYS_ADMIN (a container, capsh): one line, exit 2, nothing set up
    capsh = shutil.which("capsh")
    if capsh is None:
        pytest.skip("capsh not installed")
    before = set(our_namespaces())
    p = subprocess.run([capsh, "--drop=cap_sys_admin", "--", "-c",
                        f"exec {sys.executable} -m longpipe emu {sc} --flows"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "CAP_SYS_ADMIN" in p.stderr, p.stderr
    assert not leaked_emu_namespaces(before)
