"""Writes cell.down and cell.up, the small Mahimahi traces of examples/cellular-trace.toml.

    python examples/traces/make_cell.py

A 10 s downlink whose capacity steps every 500 ms through a fixed pattern of 3 to
24 Mbit/s (a 1500-byte opportunity per ms is 12 Mbit/s), and a 10 s uplink of one
opportunity every 4 ms (3 Mbit/s). Deterministic: no randomness, the same files every time.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
# opportunities per 4 ms in each 500 ms step: 1 -> 3 Mbit/s ... 8 -> 24 Mbit/s
STEPS = [4, 8, 6, 2, 1, 3, 8, 5, 2, 4, 7, 1, 1, 3, 6, 8, 4, 2, 5, 3]


def down() -> list[int]:
    out = []
    for s, k in enumerate(STEPS):
        for block in range(125):  # 4 ms blocks in 500 ms
            t0 = s * 500 + block * 4
            # k opportunities spread over the block's times t0+1 .. t0+4, the last at t0+4
            out += [t0 + ((i + 1) * 4 + k - 1) // k for i in range(k)]
    return out


def up() -> list[int]:
    return list(range(4, 10_001, 4))


if __name__ == "__main__":
    for name, ts in (("cell.down", down()), ("cell.up", up())):
        assert ts == sorted(ts) and ts[-1] > 0
        (HERE / name).write_text("".join(f"{t}\n" for t in ts))
        print(name, len(ts), "opportunities")
