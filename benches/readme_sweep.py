"""The README sweep's 140 simulations, each in its own process of the release `bench`
example: the part of `longpipe sweep examples/geo.toml --grid flow.tcp=newreno,hybla
--grid link[1].loss.ber=1e-8..1e-5:log:7 --seeds 10 --set duration=60s` that is the core's.

    python benches/readme_sweep.py [BENCH_BINARY]
    python benches/readme_sweep.py --sweep    # the whole `longpipe sweep ... --summary`

Time it from outside (BENCHMARKS.md: pairs of two binaries). ``--sweep`` runs the README's
command itself, into a fresh directory: the front end, the process pool and the store
too, with the ``longpipe`` package this interpreter imports (put another tree first on
``PYTHONPATH`` to compare two).
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def whole_sweep() -> None:
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-m", "longpipe", "sweep", "examples/geo.toml", "--grid",
                        "flow.tcp=newreno,hybla", "--grid", "link[1].loss.ber=1e-8..1e-5:log:7", "--seeds", "10",
                        "--set", "duration=60s", "--out", str(Path(d) / "out"), "--summary", "--quiet"],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    if sys.argv[1:] == ["--sweep"]:
        return whole_sweep()
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "release" / "examples" / "bench")
    base = (ROOT / "examples" / "geo.toml").read_text()
    assert 'tcp = "newreno"' in base and "ber = 1e-7" in base, "examples/geo.toml changed: update this script"
    bers = [10 ** (-8 + 3 * i / 6) for i in range(7)]  # 1e-8..1e-5:log:7
    with tempfile.TemporaryDirectory() as d:
        files = []
        for tcp in ("newreno", "hybla"):
            for ber in bers:
                for seed in range(1, 11):
                    s = base.replace('tcp = "newreno"', f'tcp = "{tcp}"').replace("ber = 1e-7", f"ber = {ber:.6g}")
                    s = re.sub(r"^seed = \d+", f"seed = {seed}", s, flags=re.M)
                    s = re.sub(r'^duration = "[^"]*"', 'duration = "60s"', s, flags=re.M)
                    f = Path(d) / f"p{len(files):03d}.toml"
                    f.write_text(s)
                    files.append(f)
        for f in files:
            subprocess.run([binary, str(f)], check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
