"""Reproduction of seed 002 (Hasegawa, Ano, Kato: "Performance Evaluation using Simulation of
TCP over Wide Area ATM Networks"): utilization against switch buffer (figs. 3-7) and
Tables 1-4, at cell level.

Network (the paper's figs. 1 and 2 are missing from our copy; rebuilt from its text):
80 sender hosts, each on its own access line to one of 10 edge ATM switches; each edge
switch feeds one input line of the relay switch ``sw1``; ``sw1`` and ``sw2`` are joined by
the congested relay line (one-way delay 80 ms or 10 ms); ``sw2`` feeds the 80 receivers.
Only ``sw1``'s port toward ``sw2`` congests: every other switch port has a buffer of
``SUFFICIENT`` cells (the paper's "sufficient buffers"). Fig. 1: 8 connections per input
line; fig. 2: five lines with 4 and five with 12. One VC per TCP connection; ``sw1``
polices each input line (its VP) with SCR = relay cell rate x the line's share of the
connections and MBS = buffer x the same share, tagging CLP = 1 (used by SCD and SCD+EPD).
TCP: 4.3BSD Tahoe with delayed ACK; window = the multiple of the segment nearest 24 KB
(24576 B); packet sizes 552, 1500, 4352 B with TCP/IP headers; 30 s; connections start at
random times in the first second (drawn from the seed: the network has no other
randomness).

Line rates (in the missing figures): the relay line carries cells at the DS3 rate,
44.736 Mbit/s (ATM payload 40.5 Mbit/s); access and input lines at the OC-3c cell rate,
149.76 Mbit/s. 80 connections then share about 40 Mbit/s: the paper's Tables 1 and 3 sum
to 33-36 Mbit/s (0.3-0.6 Mbit/s per connection), 82-89 % of that payload rate.

EPD threshold: "a value equivalent to 40 TCP packets". Read as an occupancy of 40 packets,
EPD could not depend on the buffer size at all, yet the paper's EPD results change with
it (Tables 1 and 3, fig. 6); we read it as 40 packets of headroom (EPD engages when fewer
than 40 packets' worth of cells are free) and report the literal reading beside it.
With mixed sizes the larger packet counts. See docs/notes/atm.md.

Utilization (the paper's §4): the TCP throughput summed over connections over the relay
line's ATM-layer payload rate (48/53 of its cell rate).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_text, save_figure
from ..report import table
from .common import CITATIONS, STACK, Runner, csv_text, mean_ci95

RELAY_BPS = 44_736_000
RELAY = "44.736Mbps"
ACCESS = "149.76Mbps"
LOCAL_DELAY = "10us"
#: "sufficient" buffer of every switch port but the congested one, cells
SUFFICIENT = 1_000_000
DURATION_S = 30
POLICIES = ("ubr", "epd", "scd", "scd-epd")
NAMES = {"ubr": "UBR", "epd": "EPD", "scd": "SCD", "scd-epd": "SCD+EPD"}
WINDOW_TARGET = 24 * 1024
#: EPD threshold: this many packets' worth of cells (the paper: 40 TCP packets)
EPD_PACKETS = 40
UNIFORM = (8,) * 10
SKEWED = (4, 12) * 5
CONDITIONS = ((8000, 80), (8000, 10), (16000, 80), (16000, 10))

# The paper's tables: {(buffer, delay ms): {row: (UBR, EPD, SCD, SCD+EPD)}}
PAPER_T1 = {(8000, 80): {552: (0.31, 0.34, 0.37, 0.37), 1500: (0.49, 0.51, 0.45, 0.48)},
            (8000, 10): {552: (0.32, 0.29, 0.40, 0.40), 1500: (0.52, 0.56, 0.44, 0.45)},
            (16000, 80): {552: (0.33, 0.37, 0.37, 0.38), 1500: (0.54, 0.48, 0.48, 0.48)},
            (16000, 10): {552: (0.26, 0.26, 0.39, 0.39), 1500: (0.61, 0.61, 0.47, 0.47)}}
PAPER_T2 = {(8000, 80): {552: (205, 186, 173, 152), 1500: (286, 226, 302, 227)},
            (8000, 10): {552: (612, 596, 622, 507), 1500: (658, 628, 640, 563)},
            (16000, 80): {552: (111, 100, 91, 69), 1500: (112, 61, 159, 99)},
            (16000, 10): {552: (340, 369, 321, 243), 1500: (458, 357, 478, 358)}}
PAPER_T3 = {(8000, 80): {4: (0.51, 0.51, 0.43, 0.48), 12: (0.38, 0.42, 0.43, 0.43)},
            (8000, 10): {4: (0.60, 0.77, 0.49, 0.53), 12: (0.36, 0.33, 0.40, 0.41)},
            (16000, 80): {4: (0.51, 0.48, 0.44, 0.44), 12: (0.42, 0.43, 0.44, 0.45)},
            (16000, 10): {4: (0.75, 0.63, 0.46, 0.47), 12: (0.34, 0.38, 0.43, 0.44)}}
PAPER_T4 = {(8000, 80): {4: (31.5, 27.6, 34.5, 26.0), 12: (43.8, 33.8, 36.4, 29.1)},
            (8000, 10): {4: (61.0, 72.8, 76.5, 71.2), 12: (67.8, 66.3, 74.4, 65.2)},
            (16000, 80): {4: (11.3, 10.3, 18.3, 12.8), 12: (18.3, 15.3, 20.1, 14.3)},
            (16000, 10): {4: (34.8, 40.3, 56.5, 38.8), 12: (59.4, 49.3, 58.1, 46.8)}}

#: The utilization figures: name -> (packet sizes, delay ms, lines, policies, caption)
FIGS: dict[str, tuple[tuple[int, ...], int, tuple[int, ...], tuple[str, ...], str]] = {
    "fig3": ((1500,), 80, UNIFORM, POLICIES, "1500 B, 80 ms"),
    "fig4": ((1500,), 10, UNIFORM, POLICIES, "1500 B, 10 ms"),
    "fig5": ((552,), 80, UNIFORM, POLICIES, "552 B, 80 ms"),
    "fig6": ((4352,), 80, UNIFORM, ("epd",), "EPD, 80 ms, 552 / 1500 / 4352 B"),
    "fig7": ((1500,), 80, SKEWED, ("ubr", "epd"), "1500 B, 80 ms, lines of 4 and 12 connections"),
}


def cells(size: int) -> int:
    """Cells of an AAL5 PDU carrying a ``size``-byte packet (no LLC/SNAP)."""
    return -(-(size + 8) // 48)


def window(size: int) -> int:
    """The multiple of the segment (``size`` - 40) nearest 24 KB, in bytes."""
    mss = size - 40
    return max(1, round(WINDOW_TARGET / mss)) * mss


def payload_bps(rate_bps: int = RELAY_BPS) -> float:
    """ATM-layer payload rate of a line."""
    return rate_bps * 48 / 53


def flow_plan(sizes: Sequence[int], lines: Sequence[int]) -> list[tuple[int, int]]:
    """(packet size, connections on its input line) of each connection, in flow order:
    ``sizes`` are assigned in turn on each line."""
    return [(sizes[q % len(sizes)], k) for k in lines for q in range(k)]


def scenario(policy: str = "epd", buffer: int = 8000, delay_ms: int = 80, sizes: Sequence[int] = (1500,),
             lines: Sequence[int] = UNIFORM, duration_s: int = DURATION_S, seed: int = 1,
             epd: str = "headroom") -> dict[str, Any]:
    """The paper's network with ``sw1``'s discard policy and buffer. ``sizes``: packet
    sizes given to the connections of each line in turn. ``lines``: connections per input
    line. ``epd``: "headroom" (EPD when fewer than 40 packets' worth of cells are free) or
    "absolute" (when 40 packets' worth are queued)."""
    n = sum(lines)
    epd_cells = EPD_PACKETS * cells(max(sizes))
    thr: Any = {"headroom": epd_cells} if epd == "headroom" else min(epd_cells, buffer)
    rng = random.Random(seed)
    nodes: list[dict[str, Any]] = [
        {"name": "sw1", "kind": "atm-switch", "atm": {"buffer": buffer, "epd_threshold": thr}},
        {"name": "sw2", "kind": "atm-switch", "atm": {"buffer": SUFFICIENT}},
    ]
    links: list[dict[str, Any]] = [{"a": "sw1", "b": "sw2", "rate": RELAY, "delay": f"{delay_ms}ms",
                                    "layer2": {"kind": "atm"}}]
    flows: list[dict[str, Any]] = []
    j = 0
    for i, k in enumerate(lines):
        nodes.append({"name": f"e{i}", "kind": "atm-switch", "atm": {"buffer": SUFFICIENT}})
        upc = {"scr": f"{RELAY_BPS * k // n}bps", "mbs": max(1, buffer * k // n)}
        links.append({"a": f"e{i}", "b": "sw1", "rate": ACCESS, "delay": LOCAL_DELAY,
                      "layer2": {"kind": "atm", "upc": upc}})
        for q in range(k):
            size = sizes[q % len(sizes)]
            links.append({"a": f"s{j}", "b": f"e{i}", "rate": ACCESS, "delay": LOCAL_DELAY,
                          "layer2": {"kind": "atm"}})
            links.append({"a": "sw2", "b": f"r{j}", "rate": ACCESS, "delay": LOCAL_DELAY,
                          "layer2": {"kind": "atm"}})
            flows.append({"src": f"s{j}", "dst": f"r{j}", "stack": STACK, "tcp": "tahoe", "mss": size - 40,
                          "rwnd": f"{window(size)}B", "delayed_ack": True, "start": f"{rng.randrange(1000)}ms"})
            j += 1
    name = (f"atm-wan-{policy}-{buffer}c-{delay_ms}ms-{'+'.join(map(str, sizes))}B"
            f"{'-skewed' if len(set(lines)) > 1 else ''}{'-absepd' if epd != 'headroom' else ''}")
    return {"name": name, "duration": f"{duration_s}s", "seed": seed, "atm": {"policy": policy},
            "node": nodes, "link": links, "flow": flows}


# --- running --------------------------------------------------------------------------

Key = tuple[str, int, int, tuple[int, ...], tuple[int, ...], str]  # policy, buffer, delay, sizes, lines, epd


def summarize(key: Key, doc: dict[str, Any], duration_s: int) -> dict[str, Any]:
    """What the figures and tables need from one run: utilization, and per connection its
    size, line, throughput and loss events."""
    _, _, _, sizes, lines, _ = key
    plan = flow_plan(sizes, lines)
    data = {v["flow"]: v for v in doc["atm"]["vcs"] if v["dir"] == "data"}
    tput = [f["bytes_delivered"] * 8 / duration_s for f in doc["flows"]]
    return {"util": sum(tput) / payload_bps(), "tput": tput,
            "events": [data[f["id"]]["loss_events"] if f["id"] in data else 0 for f in doc["flows"]],
            "lost": [data[f["id"]]["pdus_lost"] if f["id"] in data else 0 for f in doc["flows"]],
            "size": [p[0] for p in plan], "line": [p[1] for p in plan],
            "timeouts": sum(f["timeouts"] for f in doc["flows"]),
            "fast_retransmits": sum(f["fast_recoveries"] for f in doc["flows"])}


class Plan:
    """Runs keyed by (policy, buffer, delay, sizes, lines, epd) over seeds, on the sweep
    machinery (stored, resumable, parallel, with a progress bar)."""

    def __init__(self, runner: Runner, duration_s: int):
        self.runner, self.duration_s = runner, duration_s
        self.want: dict[tuple[Key, int], None] = {}
        self.res: dict[tuple[Key, int], dict[str, Any]] = {}

    def add(self, key: Key, seeds: Sequence[int]) -> None:
        for s in seeds:
            self.want[(key, s)] = None

    def run(self) -> None:
        keys = list(self.want)
        items = [(scenario(k[0], k[1], k[2], k[3], k[4], self.duration_s, s, k[5]), s,
                  {"policy": k[0], "buffer": k[1], "delay_ms": k[2], "sizes": "+".join(map(str, k[3])),
                   "lines": "skewed" if len(set(k[4])) > 1 else "uniform", "epd": k[5]})
                 for k, s in keys]
        for (k, s), doc in zip(keys, self.runner.results("runs", items)):
            self.res[(k, s)] = summarize(k, doc, self.duration_s)

    def get(self, key: Key, seeds: Sequence[int]) -> list[dict[str, Any]]:
        return [self.res[(key, s)] for s in seeds]


def group_mean(runs: list[dict[str, Any]], field: str, value: int, by: str) -> tuple[float, float]:
    """Per seed, the mean of ``field`` over the connections whose ``by`` (size or line)
    is ``value``; the mean and 95 % CI over seeds."""
    vals = [float(np.mean([x for x, g in zip(r[field], r[by]) if g == value])) for r in runs]
    return mean_ci95(vals)


def group_sum(runs: list[dict[str, Any]], field: str, value: int, by: str) -> tuple[float, float]:
    """As :func:`group_mean`, summed over the connections."""
    vals = [float(np.sum([x for x, g in zip(r[field], r[by]) if g == value])) for r in runs]
    return mean_ci95(vals)


# --- tables ---------------------------------------------------------------------------

def paper_tables(plan: Plan, conds: Sequence[tuple[int, int]], seeds: Sequence[int], epd: str = "headroom"
                 ) -> dict[str, list[dict[str, Any]]]:
    """Rows of Tables 1-4 (ours beside the paper's) for the conditions ``conds``."""
    out: dict[str, list[dict[str, Any]]] = {"table1": [], "table2": [], "table3": [], "table4": []}
    for buf, d in conds:
        for pol_i, pol in enumerate(POLICIES):
            # the EPD threshold matters only to the policies that use EPD
            e = epd if pol in ("epd", "scd-epd") else "headroom"
            mixed = plan.get((pol, buf, d, (552, 1500), UNIFORM, e), seeds)
            skew = plan.get((pol, buf, d, (1500,), SKEWED, e), seeds)
            for size in (552, 1500):
                m, ci = group_mean(mixed, "tput", size, "size")
                out["table1"].append({"buffer": buf, "delay_ms": d, "row": size, "policy": pol, "ours_mbps": m / 1e6,
                                      "ci95": ci / 1e6, "paper": PAPER_T1[(buf, d)][size][pol_i]})
                m, ci = group_sum(mixed, "events", size, "size")
                out["table2"].append({"buffer": buf, "delay_ms": d, "row": size, "policy": pol, "ours": m,
                                      "ci95": ci, "paper": PAPER_T2[(buf, d)][size][pol_i]})
            for k in (4, 12):
                m, ci = group_mean(skew, "tput", k, "line")
                out["table3"].append({"buffer": buf, "delay_ms": d, "row": k, "policy": pol, "ours_mbps": m / 1e6,
                                      "ci95": ci / 1e6, "paper": PAPER_T3[(buf, d)][k][pol_i]})
                m, ci = group_mean(skew, "events", k, "line")
                lost, lci = group_mean(skew, "lost", k, "line")
                out["table4"].append({"buffer": buf, "delay_ms": d, "row": k, "policy": pol, "ours": m,
                                      "ci95": ci, "paper": PAPER_T4[(buf, d)][k][pol_i], "ours_packets_lost": lost,
                                      "packets_lost_ci95": lci})
    return out


TITLES = {
    "table1": ("Table 1: mean throughput per connection (Mbit/s), 40 connections of 552 B + 40 of 1500 B",
               "size", "ours_mbps", "{:.2f}"),
    "table2": ("Table 2: loss events (simultaneous losses once), sum over the 40 connections of each size",
               "size", "ours", "{:.0f}"),
    "table3": ("Table 3: mean throughput per connection (Mbit/s), 1500 B, input lines with 4 and 12 connections",
               "conns/line", "ours_mbps", "{:.2f}"),
    "table4": ("Table 4: loss events per connection, 1500 B, input lines with 4 and 12 connections",
               "conns/line", "ours", "{:.1f}"),
}


def format_table(name: str, rows: list[dict[str, Any]]) -> str:
    title, rowname, field, fmt = TITLES[name]
    keys = sorted({(r["buffer"], r["delay_ms"], r["row"]) for r in rows}, key=lambda x: (x[0], -x[1], x[2]))
    body = []
    for buf, d, row in keys:
        cells_ = []
        for pol in POLICIES:
            r = next(x for x in rows if (x["buffer"], x["delay_ms"], x["row"], x["policy"]) == (buf, d, row, pol))
            ours = fmt.format(r[field])
            paper = fmt.format(r["paper"])
            cells_.append(f"{paper} | {ours}")
        body.append([f"{buf} cells, {d} ms", row, *cells_])
    return title + " (paper | ours)\n" + table(["buffer, delay", rowname, *(NAMES[p] for p in POLICIES)], body,
                                                "lrrrrr")


# --- figures --------------------------------------------------------------------------

def util_rows(plan: Plan, buffers: Sequence[int], seeds: Sequence[int], figs: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for fig in figs:
        sizes, d, lines, pols, _ = FIGS[fig]
        extra = [((552,), "epd"), ((1500,), "epd")] if fig == "fig6" else []
        for sz, pol in [(sizes, p) for p in pols] + extra:
            for b in buffers:
                runs = plan.get((pol, b, d, sz, lines, "headroom"), seeds)
                m, ci = mean_ci95([r["util"] for r in runs])
                # EPD's threshold (the buffer less 40 packets) is 0 when 40 packets do not fit
                degenerate = pol in ("epd", "scd-epd") and b <= EPD_PACKETS * cells(max(sz))
                rows.append({"fig": fig, "policy": pol, "size": sz[0], "delay_ms": d,
                             "lines": "skewed" if len(set(lines)) > 1 else "uniform", "buffer": b, "util": m,
                             "ci95": ci, "min": min(r["util"] for r in runs), "max": max(r["util"] for r in runs),
                             "threshold_zero": degenerate})
    return rows


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def util_figures(out: Path, rows: list[dict[str, Any]], note: str) -> list[Path]:
    plt = _plt()
    paths = []
    for fig_name, (_, _, _, pols, caption) in FIGS.items():
        sel = [r for r in rows if r["fig"] == fig_name]
        if not sel:
            continue
        fig, ax = plt.subplots(figsize=(6.6, 4.6))
        series: list[tuple[str, str, Any]]  # label, field, value
        if fig_name == "fig6":
            series = [(f"EPD, {s} B", "size", s) for s in (552, 1500, 4352)]
        else:
            tag = ", skewed (lines of 4 and 12)" if fig_name == "fig7" else ""
            series = [(NAMES[p] + tag, "policy", p) for p in pols]
        for label, field, value in series:
            pts = sorted((r for r in sel if r[field] == value and not r["threshold_zero"]), key=lambda r: r["buffer"])
            if not pts:
                continue
            ax.errorbar([r["buffer"] for r in pts], [r["util"] * 100 for r in pts],
                        yerr=[[(r["util"] - r["min"]) * 100 for r in pts], [(r["max"] - r["util"]) * 100 for r in pts]],
                        fmt="o-", capsize=3, ms=4, label=label)
        if fig_name == "fig7":
            for p, color in (("ubr", "C0"), ("epd", "C1")):
                pts = sorted((r for r in rows if r["fig"] == "fig3" and r["policy"] == p and not r["threshold_zero"]),
                             key=lambda r: r["buffer"])
                if pts:
                    ax.plot([r["buffer"] for r in pts], [r["util"] * 100 for r in pts], "s--", color=color,
                            mfc="none", ms=6, label=f"{NAMES[p]}, uniform (8 per line)")
        if fig_name in ("fig5", "fig6"):
            ax.axhline(100 * 512 / 576, color="gray", lw=0.8, ls=":")
            ax.text(20000, 100 * 512 / 576 - 0.3, "552 B cap: 512/576 = 88.9 % ", fontsize=7, color="gray",
                    ha="right", va="top")
        foot = note
        if any(r["threshold_zero"] for r in sel):
            foot += "\nnot drawn: buffers too small for 40 packets (EPD threshold 0)"
        if fig_name == "fig6":
            ax.axhline(85, color="gray", lw=0.8, ls="--")
            ax.plot([8000, 12000], [85, 85], "kx", ms=9, mew=2,
                    label="paper: 85 % reached near 8000 (552 B), 12000 cells (4352 B)")
        num = fig_name[3:]
        ax.set_title(f"Relay-line utilization, {caption} (cf. paper fig. {num})", fontsize=10)
        ax.set_xlabel("relay switch buffer (cells)")
        ax.set_ylabel("utilization (% of ATM payload rate)")
        ax.grid(alpha=0.3)
        if fig_name == "fig6":  # the 552 B curve runs along the bottom: legend outside
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            fig.set_size_inches(9.0, 4.6)
        else:
            ax.legend(fontsize=8, loc="lower right")
        fig.text(0.01, 0.005, foot, fontsize=6.5, color="gray")
        fig.tight_layout(rect=(0, 0.03 * (1 + foot.count("\n")), 1, 1))
        tag = {"fig3": "1500B_80ms", "fig4": "1500B_10ms", "fig5": "552B_80ms", "fig6": "epd_sizes_80ms",
               "fig7": "uniform_vs_skewed"}[fig_name]
        paths.append(save_figure(fig, out / f"{fig_name}_util_{tag}.png", dpi=110))
        plt.close(fig)
    return paths


def table_figure(out: Path, tables: dict[str, list[dict[str, Any]]], note: str) -> Path:
    """Tables 1-4 as scatter plots of ours against the paper's, one marker per cell."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    marks = {"ubr": "o", "epd": "s", "scd": "^", "scd-epd": "D"}
    for ax, (tp, ev) in zip(axes, (("table1", "table3"), ("table2", "table4"))):
        for name, color in ((tp, "C0"), (ev, "C1")):
            for pol in POLICIES:
                rs = [r for r in tables[name] if r["policy"] == pol]
                if not rs:
                    continue
                key = "ours_mbps" if "ours_mbps" in rs[0] else "ours"
                ax.plot([r["paper"] for r in rs], [r[key] for r in rs], marks[pol], color=color, mfc="none",
                        label=f"{name.replace('table', 'Table ')}, {NAMES[pol]}")
        lo, hi = ax.get_xlim()
        lo2, hi2 = ax.get_ylim()
        m = (min(lo, lo2), max(hi, hi2))
        ax.plot(m, m, "k:", lw=0.8)
        ax.set_xlabel("paper")
        ax.set_ylabel("ours")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, ncol=2)
    axes[0].set_title("per-connection throughput (Mbit/s): Tables 1 and 3", fontsize=10)
    axes[1].set_title("loss events: Table 2 (sum of 40), Table 4 (per connection)", fontsize=10)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    fig.text(0.01, 0.005, note, fontsize=6.5, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = save_figure(fig, out / "tables_ours_vs_paper.png", dpi=110)
    plt.close(fig)
    return path


# --- the paper's findings -------------------------------------------------------------

def verdict(ok: bool) -> str:
    return "AGREES" if ok else "DIFFERS"


def _gap(rs: list[dict[str, Any]], buf: int, d: int, pol: str, who: str, a: int, b: int) -> float:
    """|row a - row b| of a table's column ``who`` at one condition and policy."""
    x = {r["row"]: float(r[who]) for r in rs if (r["buffer"], r["delay_ms"], r["policy"]) == (buf, d, pol)}
    return abs(x[a] - x[b])


def checks(util: list[dict[str, Any]], tables: dict[str, list[dict[str, Any]]], quick: bool) -> list[str]:
    out = []

    def u(fig: str, pol: str, size: int | None = None) -> dict[int, float]:
        return {r["buffer"]: r["util"] for r in util if r["fig"] == fig and r["policy"] == pol
                and (size is None or r["size"] == size) and not r["threshold_zero"]}

    # (6.4) utilization order over the buffer sweeps of figs. 3-5
    for fig in ("fig3", "fig4", "fig5"):
        means = {p: float(np.mean(list(u(fig, p).values()))) for p in POLICIES if u(fig, p)}
        if len(means) < 4:
            continue
        order = sorted(means, key=lambda p: -means[p])
        ok = set(order[:2]) == {"epd", "scd-epd"} and order[2:] == ["scd", "ubr"]
        out.append(f"{fig} ({FIGS[fig][4]}), mean utilization over the buffers: "
                   + ", ".join(f"{NAMES[p]} {means[p] * 100:.1f} %" for p in order)
                   + f"; paper: EPD ~ SCD+EPD > SCD > UBR -> {verdict(ok)}")
    # the 552 B padding cap
    u552 = [r["util"] for r in util if r["size"] == 552]
    if u552:
        top = max(u552)
        out.append(f"552 B: highest utilization {top * 100:.1f} %; paper: at most about 89 % (AAL5 padding: "
                   f"512/576 = 88.9 %) -> {verdict(top <= 512 / 576)}")
    # fig. 6: buffer needed for 85 % under EPD
    for size, paper_b in ((552, 8000), (4352, 12000), (1500, None)):
        curve = u("fig6", "epd", size) or (u("fig3", "epd") if size == 1500 else {})
        if not curve:
            continue
        need = next((b for b in sorted(curve) if curve[b] >= 0.85), None)
        txt = f"EPD, {size} B, 80 ms: 85 % first reached at {need} cells" if need else \
            f"EPD, {size} B, 80 ms: 85 % not reached (best {max(curve.values()) * 100:.1f} %)"
        if paper_b:
            ok = need is not None and abs(need - paper_b) <= 4000
            out.append(f"{txt}; paper: about {paper_b} cells -> {verdict(ok)} (within 4000 cells)")
        else:
            out.append(txt + " (the paper: 1500 B the highest of the three up to 16000 cells)")
    # delay: 10 ms at least as good as 80 ms
    a, b = u("fig3", "ubr"), u("fig4", "ubr")
    if a and b:
        cmp_ = [(p, float(np.mean([u("fig4", p)[x] - u("fig3", p)[x] for x in u("fig3", p) if x in u("fig4", p)])))
                for p in POLICIES]
        ok = all(d > -0.01 for _, d in cmp_)
        out.append("1500 B, 10 ms minus 80 ms utilization, mean over buffers: "
                   + ", ".join(f"{NAMES[p]} {d * 100:+.1f} pt" for p, d in cmp_)
                   + f"; paper: 10 ms rarely below 80 ms -> {verdict(ok)}")
    # fig. 7: non-uniform slightly above uniform, not markedly
    for pol in ("ubr", "epd"):
        sk, un = u("fig7", pol), u("fig3", pol)
        common = [x for x in sk if x in un]
        if common:
            d = float(np.mean([sk[x] - un[x] for x in common]))
            out.append(f"{NAMES[pol]}, 1500 B, 80 ms: skewed minus uniform utilization {d * 100:+.1f} pt; paper: "
                       f"skewed slightly higher, not markedly -> {verdict(-0.01 < d < 0.05)}")
    # gaps: tagging narrows the 552/1500 and 4/12 throughput gaps
    for name, a_, b_, what in (("table1", 1500, 552, "1500 B minus 552 B"), ("table3", 4, 12, "4 minus 12 per line")):
        rs = tables[name]
        for buf, d in sorted({(r["buffer"], r["delay_ms"]) for r in rs}):
            ours = {p: _gap(rs, buf, d, p, "ours_mbps", a_, b_) for p in POLICIES}
            paper = {p: _gap(rs, buf, d, p, "paper", a_, b_) for p in POLICIES}
            ok = max(ours["scd"], ours["scd-epd"]) < min(ours["ubr"], ours["epd"])
            out.append(f"{name} {buf} cells {d} ms, |{what}| gap (Mbit/s): ours "
                       + " ".join(f"{NAMES[p]} {ours[p]:.2f}" for p in POLICIES) + "; paper "
                       + " ".join(f"{NAMES[p]} {paper[p]:.2f}" for p in POLICIES)
                       + f"; tagging narrows it -> {verdict(ok)}")
    # Table 4: under tagging, losses per connection about equal (proportional to line load)
    rs = tables["table4"]
    if rs:
        def ratio(pol: str, who: str) -> float:
            v = [r for r in rs if r["policy"] == pol]
            r12 = float(np.mean([r[who] for r in v if r["row"] == 12]))
            r4 = float(np.mean([r[who] for r in v if r["row"] == 4]))
            return float(r12 / r4) if r4 else float("nan")
        ours = {p: ratio(p, "ours") for p in POLICIES}
        paper = {p: ratio(p, "paper") for p in POLICIES}
        ok = max(abs(ours["scd"] - 1), abs(ours["scd-epd"] - 1)) < min(abs(ours["ubr"] - 1), abs(ours["epd"] - 1))
        out.append("Table 4, loss events per connection, 12-per-line / 4-per-line: ours "
                   + " ".join(f"{NAMES[p]} {ours[p]:.2f}" for p in POLICIES) + "; paper "
                   + " ".join(f"{NAMES[p]} {paper[p]:.2f}" for p in POLICIES)
                   + f"; under tagging losses follow the line's load (ratio near 1) -> {verdict(ok)}")
    # Table 2: UBR/EPD lose about as often for 552 B as for 1500 B; tagging hits 1500 B more
    rs = tables["table2"]
    if rs:
        def share(pol: str, who: str) -> float:
            v = [r for r in rs if r["policy"] == pol]
            big = sum(r[who] for r in v if r["row"] == 1500)
            return float(big / max(1e-9, sum(r[who] for r in v)))
        ours = {p: share(p, "ours") for p in POLICIES}
        paper = {p: share(p, "paper") for p in POLICIES}
        ok = min(ours["scd"], ours["scd-epd"]) > ours["ubr"]
        out.append("Table 2, share of loss events on 1500 B connections: ours "
                   + " ".join(f"{NAMES[p]} {ours[p]:.2f}" for p in POLICIES) + "; paper "
                   + " ".join(f"{NAMES[p]} {paper[p]:.2f}" for p in POLICIES)
                   + f"; tagging shifts losses onto the faster-growing 1500 B connections -> {verdict(ok)}")
    if quick:
        out.append("(--quick: 10 s runs, one seed, one buffer for fig. 3: a smoke test of the pipeline, not the "
                   "reproduction)")
    return out


# --- main -----------------------------------------------------------------------------

#: (duration s, table seeds, curve seeds, buffers, table conditions, figures)
Setup = tuple[int, list[int], list[int], list[int], list[tuple[int, int]], list[str]]
FULL: Setup = (DURATION_S, [1, 2, 3], [1, 2], list(range(2000, 20001, 2000)), list(CONDITIONS), list(FIGS))
QUICK: Setup = (10, [1], [1], [12000], [(8000, 80)], ["fig3"])


def main(quick: bool = False, out: str | Path = "out/reproduce/atm", jobs: int | None = None,
         executor: str = "local", quiet: bool = False) -> int:
    out = Path(out)
    if quick:
        duration, seeds_t, seeds_u, buffers, conds, figs = QUICK
    else:
        duration, seeds_t, seeds_u, buffers, conds, figs = FULL
    print(f"Paper: {CITATIONS['atm']}")
    print(f"TCP over wide-area ATM (seed 002): 80 Tahoe connections, {duration} s, relay line {RELAY} of cells "
          f"(payload {payload_bps() / 1e6:.2f} Mbit/s), access/input lines {ACCESS}; tables {len(seeds_t)} seed(s), "
          f"curves {len(seeds_u)} seed(s){' (quick)' if quick else ''}")
    plan = Plan(Runner(out, jobs, executor, quiet, "atm"), duration)
    for fig in figs:
        sizes, d, lines, pols, _ = FIGS[fig]
        for pol in pols:
            for b in buffers:
                plan.add((pol, b, d, sizes, lines, "headroom"), seeds_u)
    for buf, d in conds:
        for pol in POLICIES:
            plan.add((pol, buf, d, (552, 1500), UNIFORM, "headroom"), seeds_t)
            plan.add((pol, buf, d, (1500,), SKEWED, "headroom"), seeds_t)
            if not quick and pol in ("epd", "scd-epd"):
                plan.add((pol, buf, d, (552, 1500), UNIFORM, "absolute"), seeds_t)
                plan.add((pol, buf, d, (1500,), SKEWED, "absolute"), seeds_t)
    plan.run()
    util = util_rows(plan, buffers, seeds_u, figs)
    tables = paper_tables(plan, conds, seeds_t)
    texts = [format_table(name, rows) for name, rows in tables.items()]
    if not quick:
        absolute = paper_tables(plan, conds, seeds_t, "absolute")
        for name in ("table1", "table3"):
            rows = [r for r in absolute[name] if r["policy"] in ("epd", "scd-epd")]
            hdr = ["buffer, delay", "row", "EPD (paper | ours)", "SCD+EPD (paper | ours)"]
            body = []
            for buf, d in conds:
                for row in sorted({r["row"] for r in rows}):
                    c = [next(r for r in rows if (r["buffer"], r["delay_ms"], r["row"], r["policy"]) ==
                              (buf, d, row, p)) for p in ("epd", "scd-epd")]
                    body.append([f"{buf} cells, {d} ms", row, *(f"{x['paper']:.2f} | {x['ours_mbps']:.2f}" for x in c)])
            texts.append(f"{TITLES[name][0].split(':')[0]} with the EPD threshold read literally (EPD when 40 "
                         f"packets' worth of cells are queued, whatever the buffer)\n" + table(hdr, body, "lrrr"))
    lost_rows = []
    for buf, d in conds:
        for k in (4, 12):
            c = [next(r for r in tables["table4"] if (r["buffer"], r["delay_ms"], r["row"], r["policy"]) ==
                      (buf, d, k, p)) for p in POLICIES]
            lost_rows.append([f"{buf} cells, {d} ms", k, *(f"{x['paper']:.1f} | {x['ours_packets_lost']:.1f}" for x in c)])
    texts.insert(4, "Table 4 with packets lost per connection instead of loss events (paper | ours)\n"
                 + table(["buffer, delay", "conns/line", *(NAMES[p] for p in POLICIES)], lost_rows, "lrrrrr"))
    curves = sorted({(r["fig"], r["policy"], r["size"], r["delay_ms"], r["lines"]) for r in util})
    at = {(r["fig"], r["policy"], r["size"], r["buffer"]): r["util"] for r in util}
    zero = {(r["fig"], r["policy"], r["size"], r["buffer"]) for r in util if r["threshold_zero"]}
    util_text = table(["figure", "policy", "size B", "delay ms", "lines", *[str(b) for b in buffers]],
                      [[f, NAMES[p], sz, d, ln, *("-" if (f, p, sz, b) in zero else f"{at[(f, p, sz, b)] * 100:.1f}"
                                                  for b in buffers)]
                       for f, p, sz, d, ln in curves], "lllrl" + "r" * len(buffers))
    texts.insert(0, "Utilization of the relay line (% of its ATM payload rate) against the relay switch buffer "
                 "(cells); -: 40 packets do not fit, EPD's threshold would be 0\n" + util_text)
    found = checks(util, tables, quick)
    for t in texts:
        print()
        print(t)
    print()
    print("The paper's findings:")
    for finding in found:
        print(" - " + finding)
    atomic_write_text(out / "utilization.csv", csv_text(util))
    for name, trows in tables.items():
        atomic_write_text(out / f"{name}.csv", csv_text(trows))
    atomic_write_text(out / "tables.json", json.dumps({"utilization": util, **tables}, indent=1) + "\n")
    note = f"cell-level ATM, relay {RELAY}, access {ACCESS}; Tahoe, delayed ACK; {duration} s; "
    paths = util_figures(out, util, note + f"mean of {len(seeds_u)} seed(s), bars: lowest to highest")
    paths.append(table_figure(out, tables, note + f"mean of {len(seeds_t)} seed(s)"))
    atomic_write_text(out / "report.md", "# TCP over wide-area ATM (seed 002)\n\n"
                      + f"Paper: {CITATIONS['atm']}.\n\n"
                      + "".join(f"```\n{t}\n```\n\n" for t in texts)
                      + "The paper's findings, checked:\n\n" + "\n".join(f"- {c}" for c in found) + "\n")
    for p in paths:
        print(f"wrote {p}")
    return 0
