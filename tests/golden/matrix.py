"""The TCP matrix: every congestion control on each stack it runs on, with and without
SACK, over three loss rates and two round-trip times, plus the profile's switches one at
a time. Two uses:

- ``record.py`` records each run (result, time-series and pcap digests) into
  ``runs.jsonl``, so that a change of the TCP code that moves any number is caught;
- ``table.md`` is its readable summary (goodput, retransmissions, timeouts per cell),
  written by ``python tests/golden/matrix.py`` and compared by ``tests/test_golden.py``:
  a change that moves results shows up in a diff a reviewer can read.

The path: server - 100 Mbit/s, 1 ms - router - 10 Mbit/s (1 Mbit/s back), one-way
delay RTT/2 - 1 ms, 100-packet queue, Bernoulli loss on the 10 Mbit/s hop's data
direction - client. One unlimited bulk flow with a 4 MB receive window, 30 s (the
variants marked "2MB" send 2 MB and close, for the FIN's paths).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE / "table.md"

RTTS_MS = (40, 600)
LOSSES = (0.0, 0.0005, 0.01)

def _rows() -> tuple[tuple[str, str, bool], ...]:
    """(stack, tcp, sack) rows: every ``tcp`` the scenario schema names, on each stack
    the core accepts it on (its variant table), without and with SACK, classic stack
    first. A variant added later joins the table (which then must be re-recorded)."""
    from longpipe import _core

    defs = json.loads(_core.schema())
    defs = defs.get("definitions") or defs["$defs"]
    names = [n for v in defs["TcpKind"]["oneOf"] for n in v["enum"]]
    rows = []
    for stack in ("classic", "linux"):
        for tcp in names:
            try:
                _core.validate(json.dumps(scenario(stack, tcp, None, 40, 0.0)))
            except _core.ScenarioError:
                continue
            rows += [(stack, tcp, False), (stack, tcp, True)]
    return tuple(rows)


#: Single switches on top of a row, at RTT 600 ms and loss 1 %: (label, stack, tcp, flow keys).
VARIANTS: tuple[tuple[str, str, str, dict], ...] = (
    ("classic newreno partial_ack_timer=every", "classic", "newreno", {"partial_ack_timer": "every"}),
    ("classic newreno limited_transmit", "classic", "newreno", {"limited_transmit": True}),
    ("classic newreno sack prr", "classic", "newreno", {"sack": True, "prr": True}),
    ("classic newreno sack timestamps dsack", "classic", "newreno", {"sack": True, "timestamps": True, "dsack": True}),
    ("classic newreno pacing", "classic", "newreno", {"pacing": True}),
    ("classic newreno iw=rfc6928 rwnd=1MB", "classic", "newreno", {"iw": "rfc6928", "rwnd": "1MB"}),
    ("classic hybla ssthresh=8", "classic", "hybla", {"ssthresh": 8}),
    ("classic cubic sack ecn (codel)", "classic", "cubic", {"sack": True, "ecn": True}),
    ("classic peach+ sack probe_ack=plain", "classic", "peach+", {"sack": True, "peach": {"probe_ack": "plain"}}),
    ("linux cubic rack=false", "linux", "cubic", {"rack": False}),
    ("linux cubic pacing", "linux", "cubic", {"pacing": True}),
    ("linux cubic timestamps=false", "linux", "cubic", {"timestamps": False}),
    ("linux cubic ecn (codel)", "linux", "cubic", {"ecn": True}),
    ("linux bbr ecn (codel)", "linux", "bbr", {"ecn": True}),
    ("linux reno delayed_ack=false", "linux", "reno", {"delayed_ack": False}),
    ("linux cubic min_rto=1s quickack=0", "linux", "cubic", {"min_rto": "1s", "quickack": 0}),
    ("classic newreno 2MB", "classic", "newreno", {"app": {"kind": "bulk", "bytes": "2MB"}}),
    ("classic newreno sack 2MB", "classic", "newreno", {"sack": True, "app": {"kind": "bulk", "bytes": "2MB"}}),
    ("classic peach+ sack 2MB", "classic", "peach+", {"sack": True, "app": {"kind": "bulk", "bytes": "2MB"}}),
    ("linux cubic 2MB", "linux", "cubic", {"app": {"kind": "bulk", "bytes": "2MB"}}),
    ("linux bbr 2MB", "linux", "bbr", {"app": {"kind": "bulk", "bytes": "2MB"}}),
    ("linux reno nosack 2MB", "linux", "reno", {"sack": False, "app": {"kind": "bulk", "bytes": "2MB"}}),
)


def scenario(stack: str, tcp: str, sack: bool | None, rtt_ms: int, loss: float, extra: dict | None = None,
             name: str | None = None) -> dict:
    """One matrix run (a dict scenario)."""
    flow: dict = {"src": "server", "dst": "client", "tcp": tcp, "stack": stack, "rwnd": "4MB"}
    if sack is not None:
        flow["sack"] = sack
    extra = dict(extra or {})
    ecn = extra.get("ecn", False)
    flow.update(extra)
    sat: dict = {"a": "router", "b": "client", "rate": "10Mbps", "rate_ba": "1Mbps",
                 "delay": f"{rtt_ms // 2 - 1}ms", "queue": {"limit": "100pkt"}}
    if ecn:
        sat["queue"] = {"limit": "100pkt", "kind": "codel", "ecn": True}
    if loss > 0:
        sat["loss"] = {"kind": "bernoulli", "p": loss}
    name = "matrix-" + (name or f"{stack}-{tcp}-{'sack' if sack else 'nosack'}-{rtt_ms}ms-{loss:g}")
    return {
        "name": name,
        "duration": "30s",
        "seed": 1,
        "link": [{"a": "server", "b": "router", "rate": "100Mbps", "delay": "1ms"}, sat],
        "flow": [flow],
    }


def runs() -> list[tuple[str, dict]]:
    """(label, scenario) of every matrix run, table cells first, then the variants."""
    out = []
    for stack, tcp, sack in _rows():
        for rtt in RTTS_MS:
            for loss in LOSSES:
                out.append((f"{stack} {tcp} sack={sack} rtt={rtt}ms p={loss:g}", scenario(stack, tcp, sack, rtt, loss)))
    for label, stack, tcp, extra in VARIANTS:
        out.append((label, scenario(stack, tcp, None, 600, 0.01, extra, name=label.replace(" ", "-"))))
    return out


def pcap(sc: dict) -> list[str] | None:
    """The capture point of a run whose packets are recorded too (600 ms, 1 %: the table's
    last column and every variant), else None."""
    sat = sc["link"][1]
    return ["router-client"] if sat["delay"] == "299ms" and sat.get("loss", {}).get("p") == 0.01 else None


def cell(result: dict) -> str:
    f = result["flows"][0]
    return f"{f['goodput_bps'] / 1e6:.3f} / {f['retransmitted_segments']} / {f['timeouts']}"


def table(results: dict[str, dict]) -> str:
    """The readable table from {label: result dict}."""
    head = ["stack", "tcp", "sack"] + [f"{r} ms, p={p:g}" for r in RTTS_MS for p in LOSSES]
    lines = [
        "# TCP matrix (generated by tests/golden/matrix.py; compared by tests/test_golden.py)",
        "",
        "Each cell: goodput Mbit/s / retransmitted segments / timeouts. One bulk flow (4 MB",
        "receive window), 30 s, server - 100 Mbit/s - router - 10 Mbit/s (100-packet queue,",
        "Bernoulli loss p on data) - client, seed 1.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for stack, tcp, sack in _rows():
        cells = [cell(results[f"{stack} {tcp} sack={sack} rtt={r}ms p={p:g}"]) for r in RTTS_MS for p in LOSSES]
        lines.append(f"| {stack} | {tcp} | {'yes' if sack else 'no'} | " + " | ".join(cells) + " |")
    lines += ["", "Single switches (600 ms, p=0.01; \"2MB\": a 2 MB transfer):", "",
              "| variant | result |", "|---|---|"]
    for label, *_ in VARIANTS:
        lines.append(f"| {label} | {cell(results[label])} |")
    return "\n".join(lines) + "\n"


def run_all() -> dict[str, dict]:
    from longpipe import _core

    out = {}
    for label, sc in runs():
        js, *_ = _core.run(json.dumps(sc), None, False, None, None)
        out[label] = json.loads(js)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1] / "python"))
    TABLE.write_text(table(run_all()))
    print(f"wrote {TABLE}")
