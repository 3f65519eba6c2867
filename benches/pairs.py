"""Paired timing of two commands, the method of BENCHMARKS.md's ratios.

    python benches/pairs.py [-n RUNS] [--warmup W] --vs 'COMMAND_B' -- COMMAND_A [ARG ...]

A and B run in turn, A B A B ..., after W unmeasured warm-up pairs (default 1). Each run
is one whole process, started with empty input and its output discarded; its CPU time is
the kernel's account of the finished child (user + system, from ``wait4``), its wall time
a monotonic clock around it, its peak the child's largest resident set (which cannot
read below this launcher's own, about 14 MiB: the child starts as its copy). The ratio A/B is
taken pair by pair, so that a drift of the machine's speed during the call (the other
core's load) moves both sides of a pair alike. Prints, for A, B and A/B, the median, min
and max: quote the median; a wide range says the machine was noisy.

Exit status 0, 1 if a command failed (its status is printed), 2 on bad usage.
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass
class Run:
    wall: float
    cpu: float
    peak_mib: float


def run_once(cmd: list[str]) -> Run:
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print(f"pairs.py: {shlex.join(cmd)}: exit status {p.returncode}", file=sys.stderr)
        sys.exit(1)
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024)


def spread(xs: list[float], fmt: str) -> str:
    return f"{statistics.median(xs):{fmt}}  ({min(xs):{fmt}} - {max(xs):{fmt}})"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="pairs.py", description="A B A B ... paired timing of two commands")
    ap.add_argument("-n", type=int, default=10, help="measured pairs (default 10)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured pairs first (default 1)")
    ap.add_argument("--vs", required=True, metavar="COMMAND_B", help="the baseline, one string split as a shell does")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND_A [ARG ...]")
    args = ap.parse_args(argv)
    a = args.command[1:] if args.command[:1] == ["--"] else args.command
    b = shlex.split(args.vs)
    if not a or not b or args.n < 1 or args.warmup < 0:
        ap.print_usage(sys.stderr)
        print("pairs.py: error: give -n >= 1, --vs 'COMMAND_B' and -- COMMAND_A", file=sys.stderr)
        return 2
    for _ in range(args.warmup):
        run_once(a)
        run_once(b)
    pairs = [(run_once(a), run_once(b)) for _ in range(args.n)]
    print(f"A = {shlex.join(a)}\nB = {shlex.join(b)}\n{args.n} pairs, median (min - max)")
    for name, side in (("A", 0), ("B", 1)):
        runs = [p[side] for p in pairs]
        print(f"{name} cpu s   {spread([r.cpu for r in runs], '.3f')}")
        print(f"{name} wall s  {spread([r.wall for r in runs], '.3f')}")
        print(f"{name} peak MiB {spread([r.peak_mib for r in runs], '.1f')}")
    print(f"A/B cpu    {spread([x.cpu / y.cpu for x, y in pairs], '.3f')}")
    print(f"A/B wall   {spread([x.wall / y.wall for x, y in pairs], '.3f')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
