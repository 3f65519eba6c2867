"""``longpipe reproduce crosscheck``: the simulator's NewReno against Linux's reno (through
``longpipe emu``, the same links in real time), SACK off and on, on four scenarios:
window-limited GEO, a lossy 200 ms path at p = 0.1 % and 1 %, and the 384 kbit/s RLC
radio bearer of examples/wcdma.toml. Prints both side by side with the ratio; the
differences are explained in docs/notes/sim-vs-linux.md. Needs root (it emulates).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import csv_text

ROOT = Path(__file__).resolve().parent.parent.parent.parent


def _path(rate: str, delay: str, duration: str, rwnd: str, loss: float | None = None) -> dict[str, Any]:
    link: dict[str, Any] = {"a": "server", "b": "client", "rate": rate, "delay": delay,
                            "queue": {"limit": "1000pkt"}}
    if loss:
        link["loss"] = {"kind": "bernoulli", "p": loss}
    return {"duration": duration, "seed": 1, "link": [link],
            "flow": [{"src": "server", "dst": "client", "stack": "classic", "tcp": "newreno", "rwnd": rwnd,
                      "iw": "rfc3390"}]}


def scenarios(quick: bool) -> dict[str, dict[str, Any]]:
    import tomllib

    d = "8s" if quick else "30s"
    lossy = "15s" if quick else "60s"
    wcdma = tomllib.loads((ROOT / "examples" / "wcdma.toml").read_text())
    wcdma["flow"][0]["app"] = {"kind": "bulk", "bytes": "200KB" if quick else "1MB"}
    wcdma["duration"] = "25s" if quick else "60s"
    wcdma["flow"][0]["stack"] = "classic"  # the classic model against Linux (the default is now linux)
    return {
        "geo-window (10 Mbit/s, 600 ms RTT, rwnd 64 KB)": _path("10Mbps", "300ms", d, "64KB"),
        "lossy 200 ms, p = 0.1 %": _path("10Mbps", "100ms", lossy, "4MB", 0.001),
        "lossy 200 ms, p = 1 %": _path("10Mbps", "100ms", lossy, "4MB", 0.01),
        "RLC 384 kbit/s (wcdma.toml)": wcdma,
    }


def main(quick: bool = False, out: Path | None = None, jobs: int | None = None, executor: str = "local",
         quiet: bool = False) -> int:
    from .. import api
    from ..emu import run_json
    from ..report import table

    if os.geteuid() != 0:
        print("error: reproduce crosscheck runs Linux TCP in network namespaces: it needs root (sudo)",
              file=sys.stderr)
        return 2
    out = Path(out or "out/reproduce/crosscheck")
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for name, base in scenarios(quick).items():
        for sack in (False, True):
            sc = copy.deepcopy(base)
            sc["flow"][0]["sack"] = sack
            sim = api.run(sc).data
            if not quiet:
                print(f"emulating {name}, SACK {'on' if sack else 'off'} ({sc['duration']} of real time)",
                      file=sys.stderr)
            emu = run_json(json.dumps(sc), source=name)
            for engine, r in (("sim newreno", sim), ("linux reno", emu)):
                f = r["flows"][0]
                rows.append({"scenario": name, "sack": sack, "engine": engine,
                             "goodput_mbps": round(f["goodput_bps"] / 1e6, 4),
                             "bytes": f["bytes_delivered"],
                             "completion_s": None if f["completion_time_s"] is None else round(f["completion_time_s"], 3),
                             "retransmitted": f["retransmitted_segments"], "timeouts": f["timeouts"],
                             "fast_recoveries": f["fast_recoveries"],
                             "mean_rtt_ms": None if f["mean_rtt_s"] is None else round(f["mean_rtt_s"] * 1e3, 1)})
    (out / "crosscheck.csv").write_text(csv_text(rows))
    body = []
    for i in range(0, len(rows), 2):
        s, e = rows[i], rows[i + 1]
        ratio = e["goodput_mbps"] / s["goodput_mbps"] if s["goodput_mbps"] else float("nan")
        body.append([s["scenario"], "on" if s["sack"] else "off",
                     f"{s['goodput_mbps']:.3f}", f"{e['goodput_mbps']:.3f}", f"{ratio:.2f}",
                     f"{s['retransmitted']}/{e['retransmitted']}", f"{s['timeouts']}/{e['timeouts']}",
                     f"{s['fast_recoveries']}/{e['fast_recoveries']}",
                     f"{s['mean_rtt_ms']}/{e['mean_rtt_ms']}"])
    text = table(["scenario", "SACK", "sim Mbit/s", "linux Mbit/s", "linux/sim", "retx sim/linux",
                  "RTO sim/linux", "FR sim/linux", "RTT ms sim/linux"], body, "llrrrrrrr")
    print(text)
    print("differences explained in docs/notes/sim-vs-linux.md")
    (out / "crosscheck.txt").write_text(text + "\n")
    return 0
