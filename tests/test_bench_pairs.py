"""benches/pairs.py, the paired timing BENCHMARKS.md's ratios cite."""

import subprocess
import sys
from pathlib import Path

PAIRS = Path(__file__).resolve().parent.parent / "benches" / "pairs.py"


def pairs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PAIRS), *args], capture_output=True, text=True, timeout=120)


def test_a_pair_of_commands_gives_each_side_and_the_ratio() -> None:
    # A burns about twice B's CPU: the ratio says so, pair by pair
    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < {}: pass')"
    r = pairs("-n", "3", "--warmup", "0", "--vs", f'{sys.executable} -c "{burn.format(0.1)}"',
              "--", sys.executable, "-c", burn.format(0.2))
    assert r.returncode == 0, r.stderr
    rows = {line.split("  ")[0].strip(): line for line in r.stdout.splitlines()}
    ratio = float(rows["A/B cpu"].split()[2])
    assert 1.5 < ratio < 2.5, r.stdout
    assert "3 pairs" in r.stdout


def test_a_failing_command_stops_the_pairs_with_its_status() -> None:
    r = pairs("-n", "2", "--vs", "false", "--", "true")
    assert r.returncode == 1
    assert "false: exit status 1" in r.stderr


def test_bad_usage_is_status_2_without_a_traceback() -> None:
    for args in (["--", "true"], ["-n", "0", "--vs", "true", "--", "true"], ["--vs", "true"]):
        r = pairs(*args)
        assert r.returncode == 2, args
        assert "Traceback" not in r.stderr
