"""CLI start-up time (make bench): wall time of `longpipe --help`, `longpipe --version` and
`longpipe run benches/small.toml --json`, each run as a new process through the installed
console script; median and best of 15 runs. Targets: --help < 100 ms, run --json < 150 ms."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXE = Path(sys.executable).parent / "longpipe"
CASES = [
    ("longpipe --help", ["--help"], 0.100),
    ("longpipe --version", ["--version"], None),
    ("longpipe run benches/small.toml --json", ["run", str(ROOT / "benches" / "small.toml"), "--json"], 0.150),
]


def measure(args: list[str], n: int = 15) -> list[float]:
    out = []
    for _ in range(n + 2):
        t0 = time.perf_counter()
        subprocess.run([str(EXE), *args], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out[2:]  # the first two warm the file cache


def main() -> None:
    print("| command | median ms | best ms | target |")
    print("|---|---|---|---|")
    for label, args, target in CASES:
        ts = measure(args)
        print(f"| `{label}` | {statistics.median(ts) * 1e3:.0f} | {min(ts) * 1e3:.0f} | "
              + (f"< {target * 1e3:.0f} ms |" if target else "- |"))


if __name__ == "__main__":
    main()
