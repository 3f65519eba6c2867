"""``longpipe reproduce crosscheck-linux``: the simulator's Linux profile (``stack = "linux"``)
against real Linux (through ``longpipe emu``, the same links in real time) with reno, cubic
and bbr, on the four scenarios of ``reproduce crosscheck``. Both sides run the profile's
defaults (IW 10, SACK, D-SACK, timestamps, min RTO 200 ms); the scenarios keep their
receive windows. The table goes into docs/notes/linux-profile.md. Needs root (it emulates).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import csv_text
from .crosscheck import scenarios

TCPS = ("reno", "cubic", "bbr")


def linux_flow(sc: dict[str, Any], tcp: str) -> dict[str, Any]:
    """The scenario with its flow on the Linux profile: the classic choices the crosscheck
    scenarios make (IW, SACK, the congestion control) give way to the profile's."""
    sc = copy.deepcopy(sc)
    for f in sc["flow"]:
        for k in ("iw", "sack", "tcp"):
            f.pop(k, None)
        f["stack"] = "linux"
        f["tcp"] = tcp
    return sc


def main(quick: bool = False, out: Path | None = None, jobs: int | None = None, executor: str = "local",
         quiet: bool = False) -> int:
    from .. import api
    from ..emu import run_json
    from ..report import table

    if os.geteuid() != 0:
        print("error: reproduce crosscheck-linux runs Linux TCP in network namespaces: it needs root (sudo)",
              file=sys.stderr)
        return 2
    out = Path(out or "out/reproduce/crosscheck-linux")
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for name, base in scenarios(quick).items():
        for tcp in TCPS:
            sc = linux_flow(base, tcp)
            sim = api.run(sc).data
            if not quiet:
                print(f"emulating {name}, {tcp} ({sc['duration']} of real time)", file=sys.stderr)
            emu = run_json(json.dumps(sc), source=name)
            for engine, r in (("sim", sim), ("linux", emu)):
                f = r["flows"][0]
                rows.append({"scenario": name, "tcp": tcp, "engine": engine,
                             "goodput_mbps": round(f["goodput_bps"] / 1e6, 4),
                             "bytes": f["bytes_delivered"],
                             "completion_s": None if f["completion_time_s"] is None else round(f["completion_time_s"], 3),
                             "retransmitted": f["retransmitted_segments"], "timeouts": f["timeouts"],
                             "fast_recoveries": f["fast_recoveries"],
                             "mean_rtt_ms": None if f["mean_rtt_s"] is None else round(f["mean_rtt_s"] * 1e3, 1)})
    (out / "crosscheck-linux.csv").write_text(csv_text(rows))
    body = []
    for i in range(0, len(rows), 2):
        s, e = rows[i], rows[i + 1]
        ratio = e["goodput_mbps"] / s["goodput_mbps"] if s["goodput_mbps"] else float("nan")
        body.append([s["scenario"], s["tcp"], f"{s['goodput_mbps']:.3f}", f"{e['goodput_mbps']:.3f}",
                     f"{ratio:.2f}", f"{s['retransmitted']}/{e['retransmitted']}",
                     f"{s['timeouts']}/{e['timeouts']}", f"{s['fast_recoveries']}/{e['fast_recoveries']}",
                     f"{s['mean_rtt_ms']}/{e['mean_rtt_ms']}"])
    text = table(["scenario", "tcp", "sim Mbit/s", "linux Mbit/s", "linux/sim", "retx sim/linux",
                  "RTO sim/linux", "FR sim/linux", "RTT ms sim/linux"], body, "llrrrrrrr")
    print(text)
    print("differences explained in docs/notes/linux-profile.md")
    (out / "crosscheck-linux.txt").write_text(text + "\n")
    return 0
