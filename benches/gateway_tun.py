"""The gateway daemon through real TUN devices (`make bench`, root): real Linux TCP bulk
transfers server -> client through a router namespace, with and without the daemon.

    server ns --veth-- gw ns (the daemon, --uplink = the veth toward the client) --veth-- client ns

The daemon runs in spoof mode (`--rate 10Gbps --rtt 1ms`: satellite-side link window
5/4 x 1.25 MB, memory 4 x that, 1 MB per connection, pacing at 10 Gbit/s, so its windows
and pacing do not limit), its process pinned to one CPU (`--daemon-cpu`, default 0), the
endpoints (Python sockets, 1 MiB send/recv calls) to the other (`--endpoint-cpu`,
default 1). The TCP input of the endpoints' namespaces runs on their CPU too (RPS on
their veths): a TUN write runs the router's forward path in the writer's thread, and
without RPS also the receiving host's whole TCP input, which a real router hands to the
wire (`--no-steer` shows that case). For each case: a warm-up, then a measured window,
sampled at its two ends:
- goodput: bytes the client received in the window / its length;
- packets through the daemon: its TUN devices' counters (/proc/WORKER/net/dev: what it
  read, what it wrote, what a device dropped because the daemon did not read in time);
  the mean size of the data packets from the daemon's stop summary (bytes / packets
  read toward the client), and the gateway's resends (stop summary, whole run);
- the worker thread's CPU (schedstat run time; also utime + stime in the JSON) and
  run-delay (time runnable but waiting for its CPU), per data packet (its share of the
  ACKs and of everything written included) and the data packets/s one core would move
  at that cost; context switches; each CPU's busy share (/proc/stat); packets dropped at
  the endpoints' CPU's input backlog (/proc/net/softnet_stat);
- the load average (`uptime`) at the start and the end.
The same transfer without the daemon (plain kernel forwarding, GSO/TSO end to end) is
the reference. On a shared machine `--nice -10` gives the daemon its CPU: CPU time is
shared between sessions (autogroups) first, so the daemon gets a session of its own
whose group's nice is set (it ends with the daemon).

    sudo .venv/bin/python benches/gateway_tun.py [--secs 6] [--warmup 2] [--flows 1,4]
         [--repeat 1] [--idle 5] [--nice -10] [--rate 10Gbps] [--rtt 1ms] [--no-steer]
         [--source-rate BPS] [--txqueuelen N] [--exe A --exe B] [--perf DIR] [--json FILE]

Everything (namespaces with the daemon's rules and devices, processes) is removed at the
end, also on failure or SIGTERM. Not root: says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PORT = 5201
SERVER_IP, GW_S_IP, GW_C_IP, CLIENT_IP = "10.77.1.1", "10.77.1.2", "10.77.2.1", "10.77.2.2"
CHUNK = 1 << 20


# --- the endpoints (run as `gateway_tun.py _source|_sink ...` inside the namespaces) ---

SO_MAX_PACING_RATE = 47


def source(n_flows: int, rate_bps: float) -> None:
    """Accepts n_flows connections and sends to each as fast as it can (or at most
    rate_bps in all, paced by the kernel, if > 0) until it closes."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((SERVER_IP, PORT))
    ls.listen(64)
    print("ready", flush=True)
    data = memoryview(bytes(CHUNK))

    def send(c: socket.socket) -> None:
        try:
            while True:
                c.send(data)
        except OSError:
            pass
        finally:
            c.close()

    threads = []
    for _ in range(n_flows):
        c, _ = ls.accept()
        if rate_bps > 0:
            c.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, int(rate_bps / 8 / n_flows))
        t = threading.Thread(target=send, args=(c,), daemon=True)
        t.start()
        threads.append(t)
    ls.close()
    for t in threads:
        t.join()


def sink(n_flows: int, warmup: float, secs: float) -> None:
    """Opens n_flows connections to the source, receives; prints `mark T BYTES` after the
    warm-up and after `secs` more (T: CLOCK_MONOTONIC), then closes them."""
    counts = [0] * n_flows
    socks = []
    for _ in range(n_flows):
        s = socket.create_connection((SERVER_IP, PORT), timeout=10)
        s.settimeout(None)
        socks.append(s)

    def recv(i: int, s: socket.socket) -> None:
        buf = bytearray(CHUNK)
        try:
            while True:
                n = s.recv_into(buf)
                if n == 0:
                    return
                counts[i] += n
        except OSError:
            pass

    for i, s in enumerate(socks):
        threading.Thread(target=recv, args=(i, s), daemon=True).start()
    time.sleep(warmup)
    print(f"mark {time.monotonic():.6f} {sum(counts)}", flush=True)
    time.sleep(secs)
    print(f"mark {time.monotonic():.6f} {sum(counts)}", flush=True)
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
    print("done", flush=True)


# --- the harness ---

def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p


def cpu_times() -> dict[str, list[int]]:
    """Per CPU: [busy, total] jiffies (/proc/stat; busy = all but idle and iowait)."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        m = re.match(r"^(cpu\d+) (.*)", line)
        if m:
            v = [int(x) for x in m.group(2).split()]
            out[m.group(1)] = [sum(v[:8]) - v[3] - v[4], sum(v[:8])]
    return out


def thread_sample(pid: int) -> dict[str, Any]:
    """The worker's main thread (its packet loop) and its namespace's TUN counters."""
    task = Path(f"/proc/{pid}/task/{pid}")
    stat = task.joinpath("stat").read_text()
    f = stat[stat.rindex(")") + 2:].split()
    run_ns, wait_ns, slices = (int(x) for x in task.joinpath("schedstat").read_text().split())
    st = task.joinpath("status").read_text()
    ctx = {k: int(v) for k, v in re.findall(r"^(voluntary_ctxt_switches|nonvoluntary_ctxt_switches):\s+(\d+)", st,
                                             re.M)}
    devs = {}
    for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]:
        name, rest = line.split(":", 1)
        v = [int(x) for x in rest.split()]
        devs[name.strip()] = {"rx_bytes": v[0], "rx_packets": v[1], "rx_drop": v[3],
                              "tx_bytes": v[8], "tx_packets": v[9], "tx_drop": v[11]}
    return {"utime_stime_ticks": int(f[11]) + int(f[12]), "run_ns": run_ns, "wait_ns": wait_ns,
            "slices": slices, **ctx, "devs": devs}


def backlog_drops() -> list[int]:
    """Per CPU: packets dropped because its input backlog was full (/proc/net/softnet_stat)."""
    return [int(line.split()[1], 16) for line in Path("/proc/net/softnet_stat").read_text().splitlines()]


def sample(worker: int | None) -> dict[str, Any]:
    s: dict[str, Any] = {"t": time.monotonic(), "cpus": cpu_times(), "load": os.getloadavg(),
                         "backlog_drops": backlog_drops()}
    if worker is not None:
        s["worker"] = thread_sample(worker)
    return s


class Bench:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        tag = f"lpgwb{os.getpid()}"
        self.ns = {"srv": f"{tag}-srv", "gw": f"{tag}-gw", "cli": f"{tag}-cli"}
        self.procs: list[subprocess.Popen[str]] = []
        self.made: list[str] = []
        self.exes = exes(a)
        self.hz = os.sysconf("SC_CLK_TCK")

    # set-up and tear-down
    def setup(self) -> None:
        for n in self.ns.values():
            sh("ip", "netns", "add", n)
            self.made.append(n)
        s, g, c = self.ns["srv"], self.ns["gw"], self.ns["cli"]
        sh("ip", "-n", s, "link", "add", "s0", "type", "veth", "peer", "name", "gs", "netns", g)
        sh("ip", "-n", g, "link", "add", "gc", "type", "veth", "peer", "name", "c0", "netns", c)
        for ns, dev, addr in ((s, "s0", SERVER_IP), (g, "gs", GW_S_IP), (g, "gc", GW_C_IP), (c, "c0", CLIENT_IP)):
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        for ns in (s, g, c):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", s, "route", "add", "default", "via", GW_S_IP)
        sh("ip", "-n", c, "route", "add", "default", "via", GW_C_IP)
        sh("ip", "netns", "exec", g, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        if self.a.steer:
            # RPS: what arrives at the endpoints' veths is processed on the endpoints' CPU
            for ns, dev in ((s, "s0"), (c, "c0")):
                sh("ip", "netns", "exec", ns, "sh", "-c",
                   f"echo {1 << self.a.endpoint_cpu:x} > /sys/class/net/{dev}/queues/rx-0/rps_cpus")

    def teardown(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)
        for n in self.made:
            # anything of ours still in the namespace keeps it alive
            for pid in sh("ip", "netns", "pids", n, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            sh("ip", "netns", "del", n, check=False)
        self.made = []

    def spawn(self, ns: str, cpu: int, *cmd: str, **kw: Any) -> subprocess.Popen[str]:
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[ns], "taskset", "-c", str(cpu), *cmd],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, **kw)
        self.procs.append(p)
        return p

    def endpoint(self, ns: str, *args: str) -> subprocess.Popen[str]:
        return self.spawn(ns, self.a.endpoint_cpu, sys.executable, str(Path(__file__).resolve()), *args)

    def daemon(self, exe: str) -> tuple[subprocess.Popen[str], int, list[str]]:
        p = self.spawn("gw", self.a.daemon_cpu, exe, "run", "--uplink", "gc", "--rate", self.a.rate,
                       "--rtt", self.a.rtt, "--user", "nobody", "--metrics", "127.0.0.1:9464",
                       "--stats-interval", "3600s", "--drain", "1s", *self.a.gw_arg, stderr=subprocess.PIPE,
                       start_new_session=True)
        lines: list[str] = []
        got = threading.Event()
        assert p.stderr is not None
        err = p.stderr

        def drain() -> None:
            for line in err:
                lines.append(line)
                if "ready:" in line:
                    got.set()
        threading.Thread(target=drain, daemon=True).start()
        if not got.wait(30):
            raise RuntimeError(f"the daemon did not start: {''.join(lines)[-2000:]}")
        m = re.search(r"ready: pid (\d+)", "".join(lines))
        assert m
        worker = int(m.group(1))
        if self.a.txqueuelen:
            # an experiment: the daemon leaves its devices' queue at the kernel's 500
            for dev in ("lpgwc", "lpgws"):
                sh("ip", "-n", self.ns["gw"], "link", "set", dev, "txqueuelen", str(self.a.txqueuelen))
        if self.a.nice:
            # With autogroup scheduling, CPU time is shared between sessions first and
            # nice values count only within one: the daemon has a session of its own
            # (start_new_session), whose group's nice is set here; it ends with it.
            os.setpriority(os.PRIO_PROCESS, worker, self.a.nice)
            group = Path(f"/proc/{worker}/autogroup")
            if group.exists():
                group.write_text(str(self.a.nice))
        return p, worker, lines

    def stop_daemon(self, p: subprocess.Popen[str], lines: list[str]) -> dict[str, Any]:
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"the daemon exited {p.returncode}: {''.join(lines)[-2000:]}")
        return dict(json.loads(out.strip().splitlines()[-1]))

    def idle(self, exe: str) -> dict[str, Any]:
        """The daemon's CPU with no traffic, over --idle seconds (after a second to settle)."""
        p, w, lines = self.daemon(exe)
        try:
            time.sleep(1)
            s0 = sample(w)
            time.sleep(self.a.idle)
            s1 = sample(w)
        finally:
            self.stop_daemon(p, lines)
        dt = s1["t"] - s0["t"]
        w0, w1 = s0["worker"], s1["worker"]
        wake = (w1["voluntary_ctxt_switches"] - w0["voluntary_ctxt_switches"]) / dt
        return {"exe": exe, "secs": dt, "cpu_share": (w1["run_ns"] - w0["run_ns"]) / 1e9 / dt, "wakeups_per_s": wake,
                "load": [s0["load"][0], s1["load"][0]]}

    def case(self, flows: int, exe: str | None) -> dict[str, Any]:
        """One transfer of `flows` flows, through the daemon `exe` (None: without it)."""
        with_daemon = exe is not None
        src = self.endpoint("srv", "_source", str(flows), str(self.a.source_rate))
        assert src.stdout is not None
        if src.stdout.readline().strip() != "ready":
            raise RuntimeError("the source did not start")
        gw = None
        worker = None
        lines: list[str] = []
        if exe is not None:
            gw, worker, lines = self.daemon(exe)
        snk = self.endpoint("cli", "_sink", str(flows), str(self.a.warmup), str(self.a.secs))
        assert snk.stdout is not None
        marks: list[tuple[float, int]] = []
        samples = []
        perf = None
        for line in snk.stdout:
            if line.startswith("mark "):
                samples.append(sample(worker))
                _, t, b = line.split()
                marks.append((float(t), int(b)))
                if len(marks) == 1 and self.a.perf and worker is not None and exe is not None:
                    out = Path(self.a.perf) / f"gw{self.exes.index(exe)}-{flows}flows.data"
                    out.parent.mkdir(parents=True, exist_ok=True)
                    # on the endpoints' CPU: perf takes none of the worker's
                    perf = subprocess.Popen(["taskset", "-c", str(self.a.endpoint_cpu), "perf", "record", "-q",
                                             "-e", "cpu-clock", "-g", "-t", str(worker), "-o", str(out),
                                             "--", "sleep", str(self.a.secs)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
                    self.procs.append(perf)
        snk.wait(timeout=30)
        src.wait(timeout=30)
        if perf is not None:
            perf.wait(timeout=60)
        if len(marks) != 2:
            raise RuntimeError(f"the transfer did not run ({len(marks)} marks; sink exit {snk.returncode})")
        summary = self.stop_daemon(gw, lines) if gw is not None else None
        s0, s1 = samples
        dt = marks[1][0] - marks[0][0]
        r: dict[str, Any] = {"flows": flows, "daemon": with_daemon, "exe": exe, "secs": dt,
                             "goodput_mbps": (marks[1][1] - marks[0][1]) * 8 / dt / 1e6,
                             "load": [round(s0["load"][0], 2), round(s1["load"][0], 2)]}
        st = s1["t"] - s0["t"]
        cpu_e = self.a.endpoint_cpu
        r["backlog_drops_ps"] = (s1["backlog_drops"][cpu_e] - s0["backlog_drops"][cpu_e]) / st
        for key, cpu in (("daemon_cpu_busy", self.a.daemon_cpu), ("endpoint_cpu_busy", self.a.endpoint_cpu)):
            b0, t0 = s0["cpus"][f"cpu{cpu}"]
            b1, t1 = s1["cpus"][f"cpu{cpu}"]
            r[key] = (b1 - b0) / max(t1 - t0, 1)
        if with_daemon:
            w0, w1 = s0["worker"], s1["worker"]

            def dev(d: str, k: str) -> float:
                return float(w1["devs"][d][k] - w0["devs"][d][k]) / float(st)

            # lpgwc: the kernel transmits toward the client into it (the daemon reads),
            # the daemon writes what goes on toward the client; lpgws the same for the
            # server side (the client's ACKs in, spoofed ACKs out)
            r["data_read_pps"] = dev("lpgwc", "tx_packets")
            r["acks_read_pps"] = dev("lpgws", "tx_packets")
            r["written_pps"] = dev("lpgwc", "rx_packets") + dev("lpgws", "rx_packets")
            r["read_pps"] = r["data_read_pps"] + r["acks_read_pps"]
            r["tun_drops_ps"] = dev("lpgwc", "tx_drop") + dev("lpgws", "tx_drop")
            run = (w1["run_ns"] - w0["run_ns"]) / 1e9
            r["worker_cpu"] = run / st
            r["worker_cpu_ticks"] = (w1["utime_stime_ticks"] - w0["utime_stime_ticks"]) / self.hz / st
            r["run_delay_ms_per_s"] = (w1["wait_ns"] - w0["wait_ns"]) / 1e6 / st
            r["sleeps_per_s"] = (w1["voluntary_ctxt_switches"] - w0["voluntary_ctxt_switches"]) / st
            r["preempted_per_s"] = (w1["nonvoluntary_ctxt_switches"] - w0["nonvoluntary_ctxt_switches"]) / st
            r["us_per_packet_read"] = run * 1e6 / max(r["read_pps"] * st, 1)
            # a data packet's cost includes its share of the ACKs and everything written
            r["us_per_data_packet"] = run * 1e6 / max(r["data_read_pps"] * st, 1)
            r["data_pps_per_core"] = 1e6 / max(r["us_per_data_packet"], 1e-9)
            assert summary is not None
            ps = summary["path"]
            r["data_packet_bytes"] = ps["bytes_in"][0] / max(ps["packets_in"][0], 1)
            r["summary"] = {k: summary[k] for k in ("path", "gateway", "held_bytes")}
            r["resent_total"] = summary["gateway"]["segments_resent"]
            if "loop" in summary:
                r["summary"]["loop"] = summary["loop"]
        return r


ROW = ("| {kind} | {flows} | {goodput_mbps:.0f} | {data} | {acks} | {written} | {size} | {cpu} | {delay} "
       "| {us} | {core} | {drops} / {backlog:.0f} / {resent} | {dcpu:.0%} / {ecpu:.0%} | {l0:.2f}–{l1:.2f} |")


def label(exe: str, all_exes: list[str]) -> str:
    return "daemon" if len(all_exes) == 1 else f"daemon `{exe}`"


def exes(a: argparse.Namespace) -> list[str]:
    default = os.environ.get("LONGPIPE_GATEWAY", str(ROOT / "target" / "release" / "longpipe-gateway"))
    return list(a.exe) or [default]


def row(r: dict[str, Any], all_exes: list[str]) -> str:
    d = r["daemon"]

    def k(key: str, f: str) -> str:
        return f.format(r[key]) if d else "–"

    return ROW.format(kind=label(r["exe"], all_exes) if d else "kernel only", flows=r["flows"],
                      goodput_mbps=r["goodput_mbps"],
                      data=k("data_read_pps", "{:.0f}"), acks=k("acks_read_pps", "{:.0f}"),
                      written=k("written_pps", "{:.0f}"), size=k("data_packet_bytes", "{:.0f}"),
                      cpu=k("worker_cpu", "{:.0%}"), delay=k("run_delay_ms_per_s", "{:.0f}"),
                      us=k("us_per_data_packet", "{:.2f}"), core=k("data_pps_per_core", "{:.0f}"),
                      drops=k("tun_drops_ps", "{:.0f}"), backlog=r["backlog_drops_ps"],
                      resent=k("resent_total", "{}"),
                      dcpu=r["daemon_cpu_busy"], ecpu=r["endpoint_cpu_busy"], l0=r["load"][0], l1=r["load"][1])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_source":
        source(int(sys.argv[2]), float(sys.argv[3]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_sink":
        sink(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--secs", type=float, default=6.0, help="measured window per case (s)")
    ap.add_argument("--warmup", type=float, default=2.0, help="before the window (s)")
    ap.add_argument("--flows", default="1,4", help="flow counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="runs of every case (kernel and daemon in turn)")
    ap.add_argument("--idle", type=float, default=5.0, help="idle daemon CPU check (s; 0: skip)")
    ap.add_argument("--rate", default="10Gbps", help="the daemon's --rate (its pacing and default windows)")
    ap.add_argument("--rtt", default="1ms", help="the daemon's --rtt")
    ap.add_argument("--source-rate", type=float, default=0,
                    help="pace the servers' sockets at this many bit/s in all (SO_MAX_PACING_RATE; 0: no limit)")
    ap.add_argument("--nice", type=int, default=0,
                    help="the daemon's nice value, and its session's autogroup's (e.g. -10: other work on its CPU "
                    "gets less of it)")
    ap.add_argument("--txqueuelen", type=int, default=0,
                    help="set the daemon's TUN devices' queue to this many packets once it runs (0: leave it)")
    ap.add_argument("--daemon-cpu", type=int, default=0)
    ap.add_argument("--endpoint-cpu", type=int, default=1)
    ap.add_argument("--no-steer", dest="steer", action="store_false",
                    help="leave the endpoints' TCP input on the CPU that writes to their veth (no RPS)")
    ap.add_argument("--no-kernel", action="store_true", help="skip the reference without the daemon")
    ap.add_argument("--perf", metavar="DIR", help="perf record -e cpu-clock -g the worker during each window")
    ap.add_argument("--gw-arg", action="append", default=[], help="one more daemon argument (repeatable)")
    ap.add_argument("--exe", action="append", default=[],
                    help="daemon binary (repeatable: each case runs with each in turn; default: the release build)")
    ap.add_argument("--json", metavar="FILE", help="write every result here")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("benches/gateway_tun.py needs root (namespaces, TUN devices): skipped")
        return 0
    for exe in exes(a):
        if not Path(exe).exists():
            print(f"benches/gateway_tun.py: {exe} is not built (make build)")
            return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    b = Bench(a)
    results: list[dict[str, Any]] = []
    idle = []
    try:
        b.setup()
        for _ in range(a.repeat):
            if a.idle > 0:
                idle += [b.idle(exe) for exe in b.exes]
            for flows in (int(x) for x in a.flows.split(",")):
                if not a.no_kernel:
                    results.append(b.case(flows, None))
                for exe in b.exes:
                    results.append(b.case(flows, exe))
    finally:
        b.teardown()
    print(f"gateway daemon through TUN devices: 1500 B MTU, spoof mode (--rate {a.rate} --rtt {a.rtt}), "
          f"worker on CPU {a.daemon_cpu}{f' at nice {a.nice}' if a.nice else ''}, endpoints on CPU {a.endpoint_cpu}"
          f"{' (RPS: their TCP input too)' if a.steer else ', their TCP input on the writer CPU (no RPS)'}"
          f"{f', sources paced at {a.source_rate / 1e6:g} Mbit/s' if a.source_rate else ''}; "
          f"{a.secs:g} s windows after {a.warmup:g} s; "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    for i in idle:
        print(f"idle {label(i['exe'], b.exes)}: {i['cpu_share']:.2%} of a core, {i['wakeups_per_s']:.1f} wake-ups/s "
              f"over {i['secs']:.1f} s (load {i['load'][0]:.2f}–{i['load'][1]:.2f})")
    print("| path | flows | goodput Mbit/s | data pkts/s read | ACKs/s read | pkts/s written | data pkt B "
          "| worker CPU | run-delay ms/s | worker µs per data pkt | data pkts/s at 1 core "
          "| drops/s TUN / backlog, resent | CPU busy d / e | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(row(r, b.exes))
    if a.json:
        Path(a.json).write_text(json.dumps({"idle": idle, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
