"""Ctrl-C latency of `longpipe run` (docs/limits.md, "Running"): a long run of
examples/geo.toml with its progress line on a pseudo-terminal; once the line shows the
simulation going, SIGINT (or --signal TERM/HUP); the time to the `interrupted` line on
stderr and to the process's exit. Prints the median, 90th percentile and worst of N
runs (default 20) and the load average, since the figures depend on the machine's load.

    .venv/bin/python benches/ctrl_c.py [N] [--signal INT|TERM|HUP] [--outputs]

``--outputs`` adds --out (a temporary directory), --timeseries and a --pcap, as the
test of tests/test_hostile.py does.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def once(sig: int, extra: list[str]) -> tuple[float, float]:
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "longpipe", "run", str(ROOT / "examples" / "geo.toml"), "--set",
                          "duration=1000000s", "--force", *extra], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave, env={**os.environ, "LONGPIPE_PROGRESS_AFTER": "0"})
    os.close(slave)
    buf = b""
    try:
        while b"simulated" not in buf:
            r, _, _ = select.select([master], [], [], 60)
            if not r:
                raise RuntimeError("no progress line")
            buf += os.read(master, 4096)
        t0 = time.perf_counter()
        p.send_signal(sig)
        said = None
        while True:
            r, _, _ = select.select([master], [], [], 5)
            if not r:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            if said is None and b"interrupted" in buf:
                said = time.perf_counter() - t0
        p.wait(timeout=30)
        gone = time.perf_counter() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    return (said if said is not None else float("nan")), gone


def main() -> None:
    args = sys.argv[1:]
    sig = signal.SIGINT
    if "--signal" in args:
        i = args.index("--signal")
        sig = getattr(signal, "SIG" + args[i + 1])
        del args[i:i + 2]
    extra: list[str] = []
    if "--outputs" in args:  # as tests/test_hostile.py's Ctrl-C test: time series and a capture
        args.remove("--outputs")
        tmp = tempfile.mkdtemp(prefix="longpipe-ctrl-c-")
        extra = ["--out", os.path.join(tmp, "out"), "--timeseries", "--pcap", "gw-client"]
        extra = [a for a in extra if a not in os.environ.get("LONGPIPE_BENCH_SKIP", "").split(",")]
    n = int(args[0]) if args else 20
    load = os.getloadavg()
    said, gone = zip(*(once(sig, extra) for _ in range(n)))

    def fmt(xs: tuple[float, ...]) -> str:
        s = sorted(xs)
        return (f"median {statistics.median(s) * 1e3:.0f} ms, p90 {s[int(0.9 * (len(s) - 1))] * 1e3:.0f} ms, "
                f"worst {s[-1] * 1e3:.0f} ms")

    print(f"{signal.Signals(sig).name}, {n} runs, load average {load[0]:.1f} on {os.cpu_count()} cores")
    print(f"  to the 'interrupted' line: {fmt(said)}")
    print(f"  to the process's exit:     {fmt(gone)}")


if __name__ == "__main__":
    main()
