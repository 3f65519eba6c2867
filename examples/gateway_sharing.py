"""The shared satellite gateway against the paper's per-connection gateway (issue 15, part 0).

    .venv/bin/python examples/gateway_sharing.py [--quick]

server -(100 Mbit/s, 2 ms)- gw -(GEO: 20 Mbit/s, 300 ms toward the client, 50 ms
terrestrial return, 1000-packet queue)- client. N users (1, 10, 100) are N NewReno
connections from the server to the client, each with an 8760 B client window (the paper's
client). Two workloads: bulk transfers for 60 s, and N x 3 MB finite transfers at BER 1e-6
on the satellite direction. Prints one table row per (workload, N, gateway); the figures of
docs/notes/gateway-sharing.md come from here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from longpipe import api


def scenario(n: int, shared: bool, size: str | None, ber: float, duration: str) -> dict[str, Any]:
    sat: dict[str, Any] = {"a": "gw", "b": "client", "rate": "20Mbps", "delay": "300ms", "delay_ba": "50ms",
                           "queue": {"limit": "1000pkt"}}
    if ber > 0:
        sat["loss"] = {"kind": "ber", "ber": ber}
    app: dict[str, Any] = {"kind": "bulk", **({"bytes": size} if size else {})}
    return {
        "name": f"gw-{'shared' if shared else 'paper'}-{n}", "duration": duration,
        "node": [{"name": "gw", "kind": "tcp-gateway", "gateway": {"shared": shared}}],
        "link": [{"a": "server", "b": "gw", "rate": "100Mbps", "delay": "2ms", "queue": {"limit": "1000pkt"}}, sat],
        "flow": [{"src": "server", "dst": "client", "count": n, "rwnd": "8760B", "app": app}],
    }


def row(label: str, n: int, shared: bool, res: dict[str, Any]) -> str:
    g = res["gateways"][0]
    sat = next(x for x in res["links"] if x["a"] == "gw" and x["b"] == "client")
    flows = res["flows"]
    good = sum(f["goodput_bps"] for f in flows) / 1e6
    eff = g["sat_bytes_delivered"] / g["sat_bytes_sent"] if g["sat_bytes_sent"] else float("nan")
    rtos = [f["timeouts"] for f in flows]
    done = [f["completion_time_s"] for f in flows if f["completion_time_s"] is not None]
    span = f"{min(done):.1f}-{max(done):.1f}" if done else "-"
    return (f"| {label} | {n} | {'shared' if shared else 'paper'} | {good:.2f} | {len(done)}/{n} | {span} | "
            f"{sat['drops_queue']} | {g['go_back_n']} ({g['go_back_n_timeout']}) | {g['segments_resent']} | "
            f"{eff:.3f} | {g['dropped_buffer_full']} | {min(rtos)}-{max(rtos)} | "
            f"{res['fairness_jain'] or 0:.3f} |")


def main() -> int:
    quick = "--quick" in sys.argv
    users = (1, 10) if quick else (1, 10, 100)
    print("| workload | users | gateway | goodput Mbit/s (sum) | done | completion s | sat queue drops "
          "| go-back-N (timeout) | resent segs | sat efficiency | server segs dropped at gw | server RTOs | Jain |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in users:
        for shared in (False, True):
            res = api.run(scenario(n, shared, None, 0.0, "60s")).data
            print(row("bulk 60 s", n, shared, res), flush=True)
    for n in users:
        dur = f"{max(120, 3 * n * 8 // 20 * 3)}s"
        for shared in (False, True):
            res = api.run(scenario(n, shared, "3MB", 1e-6, dur)).data
            print(row(f"{n} x 3 MB, BER 1e-6, {dur}", n, shared, res), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
