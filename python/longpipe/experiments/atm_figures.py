"""Figures of the reproduction of paper [002] (``longpipe reproduce atm``): the utilization
curves of the paper's figs. 3-7, each with the paper's reference where its text gives one,
and Tables 1-4 as ours against the paper's.

The paper's figures are missing from our copy; its text gives these references (§4):
fig. 3/4: the gap between PDU discard (EPD, SCD+EPD) and cell discard (UBR, SCD) at
1500 B closes only beyond about 20000 cells at 80 ms and 12000 cells at 10 ms; fig. 4:
with 80 connections UBR needs about 8000 cells for 85 % even at 10 ms (§4.1 (4)); figs.
5/6: 552 B is capped near 89 % (AAL5 padding) and under EPD reaches 85 % near 8000 cells,
4352 B near 12000; fig. 7: the skewed network slightly above the uniform one. Table 3
gives fig. 7's skewed network at 8000 and 16000 cells: the sum of its per-connection
throughputs over the relay payload rate (ours: the rate we chose for the missing figures).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import save_figure
from .atm_paper import FIGS, NAMES, PAPER_T3, POLICIES, SKEWED, payload_bps

#: the file each figure is written to
FILES = {"fig3": "fig3_util_1500B_80ms.png", "fig4": "fig4_util_1500B_10ms.png", "fig5": "fig5_util_552B_80ms.png",
         "fig6": "fig6_util_epd_sizes_80ms.png", "fig7": "fig7_util_uniform_vs_skewed.png"}
TABLES_FILE = "tables_ours_vs_paper.png"
CAP = 100 * 512 / 576
COLORS = {"ubr": "C0", "epd": "C1", "scd": "C2", "scd-epd": "C3"}
SIZE_COLORS = {552: "C0", 1500: "C1", 4352: "C2"}
MARKS = {"ubr": "o", "epd": "s", "scd": "^", "scd-epd": "D"}
PAPER_STYLE = {"color": "k", "marker": "*", "ms": 13, "mfc": "none", "mew": 1.3, "ls": "none"}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def table3_utilization(policy: str, buffer: int) -> float:
    """Fig. 7's skewed network from the paper's Table 3 (80 ms): its per-connection
    throughputs summed over the connections, over the relay line's payload rate, in %."""
    t4, t12 = PAPER_T3[(buffer, 80)][4][POLICIES.index(policy)], PAPER_T3[(buffer, 80)][12][POLICIES.index(policy)]
    n4, n12 = sum(k for k in SKEWED if k == 4), sum(k for k in SKEWED if k == 12)
    return 100 * (n4 * t4 + n12 * t12) * 1e6 / payload_bps()


def _curve(ax: Any, pts: list[dict[str, Any]], label: str, color: str, marker: str = "o") -> None:
    ax.errorbar([r["buffer"] for r in pts], [r["util"] * 100 for r in pts],
                yerr=[[(r["util"] - r["min"]) * 100 for r in pts], [(r["max"] - r["util"]) * 100 for r in pts]],
                fmt="-", marker=marker, capsize=3, ms=4, color=color, label=label)


def _paper_refs(ax: Any, fig_name: str) -> None:
    """The paper's references for one figure (module docstring)."""
    if fig_name in ("fig3", "fig4"):
        x = 20000 if fig_name == "fig3" else 12000
        ax.axvline(x, color="0.3", ls="-.", lw=1,
                   label=f"paper: PDU / cell-discard gap closes only beyond ~{x} cells")
    if fig_name == "fig4":
        ax.plot([8000], [85], **PAPER_STYLE, label="paper: UBR needs ~8000 cells for 85 %")
    if fig_name in ("fig5", "fig6"):
        ax.axhline(CAP, color=SIZE_COLORS[552], lw=1, ls=":", label="552 B cap: 512/576 = 88.9 % (paper: ~89 %)")
    if fig_name == "fig5":
        ax.plot([8000], [85], **PAPER_STYLE, label="paper: EPD reaches 85 % near 8000 cells")
    if fig_name == "fig6":
        for size, b in ((552, 8000), (4352, 12000)):
            ax.plot([b], [85], **{**PAPER_STYLE, "color": SIZE_COLORS[size]},
                    label=f"paper: {size} B reaches 85 % near {b} cells")
    if fig_name == "fig7":
        # UBR's and EPD's happen to coincide at 16000 cells: two shapes keep both visible
        for pol, marker in (("ubr", "*"), ("epd", "X")):
            ax.plot([8000, 16000], [table3_utilization(pol, b) for b in (8000, 16000)],
                    **{**PAPER_STYLE, "color": COLORS[pol], "marker": marker, "ms": 13 if marker == "*" else 10},
                    label=f"paper: {NAMES[pol]}, skewed, from Table 3")


def util_figures(out: Path, rows: list[dict[str, Any]], note: str) -> list[Path]:
    """Figs. 3-7: utilization against the relay buffer, ours (mean, bars: lowest to
    highest seed) with the paper's references."""
    plt = _plt()
    paths = []
    for fig_name, (_, _, _, pols, caption) in FIGS.items():
        sel = [r for r in rows if r["fig"] == fig_name]
        if not sel:
            continue
        fig, ax = plt.subplots(figsize=(7.4, 5.4))
        ok = [r for r in sel if not r["threshold_zero"]]
        if fig_name == "fig6":
            for s in (552, 1500, 4352):
                pts = sorted((r for r in ok if r["size"] == s), key=lambda r: r["buffer"])
                if pts:
                    _curve(ax, pts, f"EPD, {s} B", SIZE_COLORS[s])
        else:
            for p in pols:
                pts = sorted((r for r in ok if r["policy"] == p), key=lambda r: r["buffer"])
                if pts:
                    _curve(ax, pts, NAMES[p] + (", skewed (lines of 4 and 12)" if fig_name == "fig7" else ""),
                           COLORS[p], marker=MARKS[p])
        if fig_name == "fig7":
            for p in ("ubr", "epd"):
                pts = sorted((r for r in rows if r["fig"] == "fig3" and r["policy"] == p and not r["threshold_zero"]),
                             key=lambda r: r["buffer"])
                if pts:
                    ax.plot([r["buffer"] for r in pts], [r["util"] * 100 for r in pts], "--", marker=MARKS[p],
                            color=COLORS[p], mfc="none", ms=6, label=f"{NAMES[p]}, uniform (8 per line)")
        _paper_refs(ax, fig_name)
        foot = note
        if len(ok) < len(sel):
            foot += "\nnot drawn: buffers too small for 40 packets (EPD threshold 0)"
        ax.set_title(f"Relay-line utilization, {caption} (cf. paper fig. {fig_name[3:]})", fontsize=10)
        ax.set_xlim(1000, 21000)
        ax.set_xlabel("relay switch buffer (cells)")
        ax.set_ylabel("utilization (% of ATM payload rate)")
        ax.grid(alpha=0.3)
        # below the axes: the curves fill the plot area at every height
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
        fig.text(0.01, 0.005, foot, fontsize=6.5, color="gray")
        fig.tight_layout(rect=(0, 0.02 * (1 + foot.count("\n")), 1, 1))
        paths.append(save_figure(fig, out / FILES[fig_name], dpi=110))
        plt.close(fig)
    return paths


# (table, value field, CI field, row kind, title)
PANELS = (("table1", "ours_mbps", "ci95", "size", "Table 1: throughput per connection (Mbit/s)"),
          ("table3", "ours_mbps", "ci95", "line", "Table 3: throughput per connection (Mbit/s)"),
          ("table2", "ours", "ci95", "size", "Table 2: loss events, sum over the 40 connections"),
          ("table4", "ours", "ci95", "line", "Table 4: losses per connection, counted both ways"))
ROW_STYLE = {("size", 552): ("C0", "552 B connections"), ("size", 1500): ("C1", "1500 B connections"),
             ("line", 4): ("C2", "lines of 4 connections"), ("line", 12): ("C3", "lines of 12 connections")}


def table_figure(out: Path, tables: dict[str, list[dict[str, Any]]], note: str) -> Path:
    """Tables 1-4, ours (mean, bars: 95 % CI over seeds) against the paper's, one panel
    per table: colour = the row (packet size or connections per line), marker = the
    policy; Table 4 both as loss events (filled) and as packets lost (open)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator, NullFormatter, StrMethodFormatter

    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(11, 10.4))
    for ax, (name, field, ci, kind, title) in zip(axes.flat, PANELS):
        rs = tables[name]
        for (k, row), (color, _) in ROW_STYLE.items():
            if k != kind:
                continue
            for pol in POLICIES:
                sel = [r for r in rs if r["row"] == row and r["policy"] == pol]
                if not sel:
                    continue
                x = [r["paper"] for r in sel]
                ax.errorbar(x, [r[field] for r in sel], yerr=[r[ci] for r in sel], fmt=MARKS[pol], color=color,
                            ms=6, capsize=2.5, lw=0.9)
                if name == "table4":
                    ax.errorbar(x, [r["ours_packets_lost"] for r in sel], yerr=[r["packets_lost_ci95"] for r in sel],
                                fmt=MARKS[pol], color=color, mfc="none", ms=7, capsize=2.5, lw=0.9)
        if name in ("table2", "table4"):
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(StrMethodFormatter("{x:g}"))
                axis.set_minor_formatter(NullFormatter())
        lo, hi = ax.get_xlim()
        lo2, hi2 = ax.get_ylim()
        m = (min(lo, lo2), max(hi, hi2))
        ax.plot(m, m, "k:", lw=0.8)
        ax.set_xlim(*m)
        ax.set_ylim(*m)
        ax.set_xlabel("paper")
        ax.set_ylabel("ours")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, which="both")
        handles = [Line2D([], [], color=ROW_STYLE[(kind, r)][0], marker="o", ls="none", label=ROW_STYLE[(kind, r)][1])
                   for r in ((552, 1500) if kind == "size" else (4, 12))]
        handles += [Line2D([], [], color="k", marker=MARKS[p], ls="none", mfc="none", label=NAMES[p])
                    for p in POLICIES]
        if name == "table4":
            handles += [Line2D([], [], color="0.4", marker="o", ls="none", label="filled: loss events"),
                        Line2D([], [], color="0.4", marker="o", mfc="none", ls="none", label="open: packets lost")]
        ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4,
                  frameon=False)
    fig.text(0.01, 0.005, note + "; dotted: ours = paper", fontsize=6.5, color="gray")
    fig.tight_layout(rect=(0, 0.02, 1, 1), h_pad=2.5)
    path = save_figure(fig, out / TABLES_FILE, dpi=110)
    plt.close(fig)
    return path
