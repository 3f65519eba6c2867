"""Reproduction of paper [000] (Ishikawa, Inamura, Takahashi: "A TCP profile for W-CDMA"):
figs. 6-12 on examples/wcdma.toml (its comments document every choice the paper
leaves open).

- fig. 6: throughput of a 1 MB transfer vs radio PDU loss rate for TCP buffers 8-128 KB,
  with the RLC-only payload limit;
- fig. 7: transfer time vs size, IW = 1 (RFC 1122) vs RFC 2414;
- fig. 8: bytes delivered vs time for MTU 256, 512, 1000, 1500;
- figs. 9-12: time-sequence graphs of a 1 MB transfer through a limited buffer, without
  and with SACK.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import api
from .._io import atomic_write_text, save_figure
from ..plots import time_sequence
from ..report import table
from .common import CITATIONS, STACK, Runner, mean_ci95, run_parallel

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "wcdma.toml"
KIB = 1024
BUFFERS_KB = (8, 16, 32, 64, 128)
# (rows, text table, checks, figure paths) of one part
Part = tuple[list[dict[str, Any]], str, list[str], list[Path]]


def base() -> dict[str, Any]:
    sc, _ = api.load_scenario(EXAMPLE)
    return sc


def configure(*, p: float = 0.0, rwnd_kb: int = 64, iw: int | str = 1, mtu: int = 1500, size: str | None = "1MB",
              sack: bool = False, buffer_pkts: int = 1000, duration: str = "300s") -> dict[str, Any]:
    sc = base()
    radio = sc["link"][2]
    radio["loss"] = {"kind": "bernoulli", "p": p}
    radio["queue"] = {"limit": f"{buffer_pkts}pkt"}
    f = sc["flow"][0]
    f.update({"stack": STACK, "rwnd": f"{rwnd_kb}KiB", "iw": iw, "mtu": mtu, "sack": sack,
              "app": {"kind": "bulk", **({"bytes": size} if size else {})}})
    sc["duration"] = duration
    return sc


def _run(args: tuple[dict[str, Any], int, bool]) -> api.Result:
    kw, seed, ts = args
    r = api.run(configure(**kw), seed=seed, timeseries=ts)
    return r


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ----------------------------------------------------------------------------- fig. 6
def fig6(out: Path, quick: bool, jobs: int | None, runner: Runner) -> Part:
    ps = [0.0, 0.1, 0.2] if quick else [0.0, 0.02, 0.05, 0.08, 0.1, 0.15, 0.2]
    seeds = [1, 2] if quick else [1, 2, 3, 4, 5]
    items: list[tuple[dict[str, Any], int, bool]] = [({"p": p, "rwnd_kb": b}, s, False) for p in ps
                                                     for b in BUFFERS_KB for s in seeds]
    res = runner.results("fig6", [(configure(**kw), s, kw) for kw, s, _ in items])
    thr: dict[tuple[float, int], list[float]] = {}
    for (kw, _, _), r in zip(items, res):
        f = r["flows"][0]
        thr.setdefault((kw["p"], kw["rwnd_kb"]), []).append(f["goodput_bps"])
    rows, out_rows = [], []
    for p in ps:
        limit = 384_000 * (1 - p) * 1460 / 1500
        row = {"p": p, "limit_bps": limit}
        for b in BUFFERS_KB:
            m, ci = mean_ci95(thr[(p, b)])
            row[f"{b}KB"] = m
            row[f"{b}KB_ci95"] = ci
        rows.append(row)
        out_rows.append([f"{p:.2f}"] + [f"{row[f'{b}KB'] / 1e3:.1f}" for b in BUFFERS_KB] + [f"{limit / 1e3:.1f}"])
    text = table(["PDU loss"] + [f"{b} KB" for b in BUFFERS_KB] + ["limit"], out_rows)
    r64_16 = [r["64KB"] / r["16KB"] for r in rows]
    r128_64 = [r["128KB"] / r["64KB"] for r in rows]
    checks = [
        f"64 KB / 16 KB throughput: {', '.join(f'{x:.2f}' for x in r64_16)} over PDU loss {', '.join(f'{p:g}' for p in ps)} "
        f"(paper: about 2); max {max(r64_16):.2f} -> {'AGREES' if 1.7 <= max(r64_16) <= 2.3 else 'DIFFERS'}",
        f"128 KB / 64 KB: {', '.join(f'{x:.2f}' for x in r128_64)} (paper: about equal) -> "
        f"{'AGREES' if all(abs(x - 1) < 0.1 for x in r128_64) else 'DIFFERS'}",
    ]
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8.6, 7.2), sharex=True, gridspec_kw={"height_ratios": [3, 1.4]})
    styles = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", (0, (5, 1, 1, 1)))]
    dx = (max(ps) - min(ps)) * 0.012
    for k, b in enumerate(BUFFERS_KB):
        # distinct markers and dashes, nudged sideways: curves that coincide stay visible
        mk, ls = styles[k % len(styles)]
        ax.errorbar([p + (k - 2) * dx for p in ps], [r[f"{b}KB"] / 1e3 for r in rows],
                    yerr=[r[f"{b}KB_ci95"] / 1e3 for r in rows], marker=mk, ls=ls, ms=5, mfc="none" if k % 2 else None,
                    capsize=3, color=f"C{k}", label=f"TCP buffer {b} KB")
    ax.plot(ps, [r["limit_bps"] / 1e3 for r in rows], "k--", lw=1, label="RLC payload limit × MSS/MTU")
    ax.text(0.01, 0.02, "points nudged sideways where curves coincide; bars: 95% CI over "
            f"{len(seeds)} seeds", transform=ax.transAxes, ha="left", va="bottom", fontsize=7, color="0.35")
    ax.set_ylabel("throughput of a 1 MB transfer (kbit/s)")
    ax.set_title("TCP buffer size (cf. paper fig. 6)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    # the three largest buffers lie on one curve at this scale: their differences, below
    ax2.axhline(0, color="C4", lw=1.2, label="128 KB (reference)")
    for k, b in ((2, 32), (3, 64)):
        mk, ls = styles[k]
        # paired by seed: the same seed draws the same radio losses for every buffer
        paired = [mean_ci95([(x - y) / 1e3 for x, y in zip(thr[(p, b)], thr[(p, 128)])]) for p in ps]
        diff, bars = [m for m, _ in paired], [c for _, c in paired]
        ax2.errorbar([p + (k - 2) * dx for p in ps], diff, yerr=bars, marker=mk, ls=ls, ms=5, mfc="none" if k % 2 else None,
                     capsize=3, color=f"C{k}", label=f"{b} KB minus 128 KB")
    if all(thr[(p, b)] == thr[(p, 128)] for p in ps for b in (32, 64)):
        ax2.text(0.5, 0.75, "32, 64 and 128 KB: identical runs, seed by seed (the window never binds above 32 KB)",
                 transform=ax2.transAxes, ha="center", fontsize=8, color="0.2")
    ax2.set_ylabel("difference (kbit/s)")
    ax2.set_xlabel("radio PDU loss rate")
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax2.text(0.01, 0.03, f"mean of the {len(seeds)} seeds' differences (same seed, same radio losses); bars: 95% CI",
             transform=ax2.transAxes, fontsize=7, color="0.35")
    fig.tight_layout()
    path = save_figure(fig, out / "fig6_buffer.png", dpi=110)
    plt.close(fig)
    return rows, text, checks, [path]


# ----------------------------------------------------------------------------- fig. 7
def fig7(out: Path, quick: bool, jobs: int | None, runner: Runner) -> Part:
    sizes = [10, 50, 100, 500] if quick else [10, 20, 50, 100, 200, 500, 1000]
    iws = {"IW = 1 (RFC 1122)": 1, "RFC 2414": "rfc2414"}
    items: list[tuple[dict[str, Any], int, bool]] = [({"size": f"{k}KB", "iw": iw}, 1, False) for k in sizes
                                                     for iw in iws.values()]
    res = runner.results("fig7", [(configure(**kw), s, {"size": kw["size"], "iw": str(kw["iw"])})
                                  for kw, s, _ in items])
    t = {(kw["size"], str(kw["iw"])): r["flows"][0]["completion_time_s"] for (kw, _, _), r in zip(items, res)}
    rows, out_rows = [], []
    for k in sizes:
        a, b = t[(f"{k}KB", "1")], t[(f"{k}KB", "rfc2414")]
        rows.append({"size_kb": k, "iw1_s": a, "rfc2414_s": b, "saving_s": a - b})
        out_rows.append([k, f"{a:.2f}", f"{b:.2f}", f"{a - b:.2f}"])
    text = table(["size KB", "IW=1 s", "RFC 2414 s", "saving s"], out_rows)
    sav = [r["saving_s"] for r in rows]
    r100 = next((r for r in rows if r["size_kb"] == 100), rows[0])
    checks = [f"saving from RFC 2414: {min(sav):.2f} … {max(sav):.2f} s across sizes (paper: about 1 s, roughly constant)",
              f"100 KB: {r100['iw1_s']:.2f} s with IW=1 vs {r100['rfc2414_s']:.2f} s with RFC 2414 (paper: 5 s vs 4 s)"]
    plt = _plt()
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7.0, 7.0), sharex=True, gridspec_kw={"height_ratios": [3, 1.6]})
    for (label, iw), color in zip(iws.items(), ("C0", "C1")):
        ax.plot(sizes, [t[(f"{k}KB", str(iw))] for k in sizes], marker="o", color=color, label=f"{label}, ours")
    # the paper's numbers (its text): 100 KB in 5 s with IW = 1 and 4 s with RFC 2414
    for (label, paper), color in zip((("IW = 1", 5.0), ("RFC 2414", 4.0)), ("C0", "C1")):
        ax.plot([100], [paper], "*", ms=14, mfc="none", mew=1.4, color=color, label=f"{label}, paper: 100 KB in {paper:g} s")
    ax.set_xscale("log")
    ax.set_ylabel("transfer time (s, from SYN)")
    ax.set_title("Initial window (cf. paper fig. 7)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    ax2.plot(sizes, [r["saving_s"] for r in rows], "o-", color="C2", label="ours")
    ax2.axhline(1.0, color="k", ls="--", lw=1, label="paper: about 1 s at every size")
    ax2.set_ylim(0, max(1.5, max(r["saving_s"] for r in rows) * 1.2))
    ax2.set_xlabel("transfer size (KB)")
    ax2.set_ylabel("time saved by\nRFC 2414 (s)")
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = save_figure(fig, out / "fig7_initial_window.png", dpi=110)
    plt.close(fig)
    return rows, text, checks, [path]


# ----------------------------------------------------------------------------- fig. 8
def fig8(out: Path, quick: bool, jobs: int | None, runner: Runner) -> Part:
    mtus = (256, 512, 1000, 1500)
    items = [({"mtu": m, "size": None, "duration": "20s"}, 1, True) for m in mtus]
    res = run_parallel(_run, items, jobs)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    rows: list[dict[str, Any]] = []
    out_rows: list[list[Any]] = []
    for m, r in zip(mtus, res):
        ts = r.timeseries(0)
        rwnd = 64 * KIB
        # slow start ends when the window (cwnd) first reaches the receiver window
        reach = ts.t[ts.cwnd >= rwnd - (m - 40)]
        t_ss = float(reach.iloc[0]) if len(reach) else None
        at10 = float(np.interp(10.0, ts.t, ts.snd_una)) / 1e3
        rows.append({"mtu": m, "slow_start_end_s": t_ss, "kbytes_at_10s": at10})
        out_rows.append([m, "-" if t_ss is None else f"{t_ss:.2f}", f"{at10:.0f}"])
        ax.plot(ts.t, ts.snd_una / 1e3, label=f"MTU {m}")
    text = table(["MTU", "slow start ends s", "KB acked at 10 s"], out_rows)
    ss: dict[int, Any] = {r["mtu"]: r["slow_start_end_s"] for r in rows}
    checks = [
        f"MTU 1500: slow start ends at {ss[1500]:.2f} s (paper: by about 6 s) -> "
        f"{'AGREES' if ss[1500] is not None and ss[1500] <= 7 else 'DIFFERS'}",
        f"MTU 256: slow start {f'ends at {ss[256]:.2f} s' if ss[256] else 'has not ended by 20 s'} (paper: still in slow "
        f"start at 10 s) -> {'AGREES' if ss[256] is None or ss[256] > 10 else 'DIFFERS'}",
        "larger MTU always ahead: " + ("yes" if all(a["kbytes_at_10s"] <= b["kbytes_at_10s"] for a, b in zip(rows, rows[1:]))
                                       else "no"),
    ]
    ax.set_xlabel("time (s)")
    ax.set_ylabel("data acknowledged (KB)")
    ax.set_title("MTU (cf. paper fig. 8)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = save_figure(fig, out / "fig8_mtu.png", dpi=110)
    plt.close(fig)
    return rows, text, checks, [path]


# ------------------------------------------------------------------------- figs. 9-12
def figs9_12(out: Path, quick: bool, jobs: int | None, runner: Runner, buffer_pkts: int = 20) -> Part:
    items = [({"sack": s, "buffer_pkts": buffer_pkts, "p": 0.0}, 1, True) for s in (False, True)]
    plain, sack = run_parallel(_run, items, jobs)
    fp, fs = plain.data["flows"][0], sack.data["flows"][0]
    first_loss = None
    rx = plain.segments(0)
    if rx.retx.any():
        first_loss = float(rx.t[rx.retx].iloc[0])
    rows = [{"sack": False, **{k: fp[k] for k in ("completion_time_s", "timeouts", "fast_recoveries", "retransmitted_segments")}},
            {"sack": True, **{k: fs[k] for k in ("completion_time_s", "timeouts", "fast_recoveries", "retransmitted_segments")}}]
    text = table(["SACK", "1 MB done s", "RTOs", "fast recoveries", "retransmissions"],
                 [[str(r["sack"]).lower(), f"{r['completion_time_s']:.2f}", r["timeouts"], r["fast_recoveries"],
                   r["retransmitted_segments"]] for r in rows])
    tp, ts_ = fp["completion_time_s"], fs["completion_time_s"]
    gain = tp - ts_ if tp is not None and ts_ is not None else float("nan")
    checks = [
        f"buffer {buffer_pkts} packets: first loss repaired at {first_loss:.1f} s (paper: multiple losses near 10 s)"
        if first_loss else "no loss occurred: buffer too large for this check",
        f"without SACK: {fp['timeouts']} RTO(s); with SACK: {fs['timeouts']} (paper: SACK avoids the timeout) -> "
        f"{'AGREES' if fp['timeouts'] > 0 and fs['timeouts'] == 0 else 'DIFFERS'}",
        f"SACK finishes {gain:.1f} s sooner (paper: about 10 s sooner)",
    ]
    paths = []
    plt = _plt()
    def episode(run: api.Result) -> tuple[float, float] | None:
        """Frames a run's first loss episode: from just before its first retransmission to
        just after the last one that follows within 15 s."""
        sg = run.segments(0)
        t = [float(x) for x in sg.t[sg.retx]]
        if not t:
            return None
        return (t[0] - 1.5, max(x for x in t if x <= t[0] + 15) + 2.0)

    seed_note = "seed 1, 384 kbit/s RLC AM bearer"
    for n, (r, name, z) in enumerate([(plain, "without SACK", None), (sack, "with SACK", None),
                                       (plain, "without SACK, zoom", episode(plain)),
                                       (sack, "with SACK, zoom", episode(sack))]):
        fig, ax = plt.subplots(figsize=(7.5, 5))
        time_sequence(ax, r, f"1 MB transfer, buffer {buffer_pkts} pkts, {name} (cf. paper fig. {9 + n})\n"
                      f"{seed_note}", z, rwnd=64 * KIB)
        fig.tight_layout()
        paths.append(save_figure(fig, out / f"fig{9 + n}_tsg_{'sack' if r is sack else 'nosack'}{'_zoom' if z else ''}.png",
                                 dpi=110))
        plt.close(fig)
    return rows, text, checks, paths


def outputs(quick: bool = False) -> list[str]:
    """The files :func:`main` writes into its output directory (besides the run store)."""
    tsg = [f"fig{9 + n}_tsg_{which}.png" for n, which in enumerate(("nosack", "sack", "nosack_zoom", "sack_zoom"))]
    return sorted(["results.json", "report.md", "fig6_buffer.png", "fig7_initial_window.png", "fig8_mtu.png", *tsg])


def main(quick: bool = False, out: str | Path = "out/reproduce/wcdma", jobs: int | None = None,
         executor: str = "local", quiet: bool = False) -> int:
    out = Path(out)
    runner = Runner(out, jobs, executor, quiet, "wcdma")
    print(f"Paper: {CITATIONS['wcdma']}")
    print(f"W-CDMA TCP profile (paper [000]) on {EXAMPLE.name}{' (quick)' if quick else ''}")
    report = ["# W-CDMA TCP profile (paper [000])", "", f"Paper: {CITATIONS['wcdma']}.", ""]
    results = {}
    all_paths = []
    for name, fn in (("fig6", fig6), ("fig7", fig7), ("fig8", fig8), ("figs9-12", figs9_12)):
        rows, text, checks, paths = fn(out, quick, jobs, runner)
        results[name] = rows
        all_paths += paths
        print(f"\n== {name}")
        print(text)
        for c in checks:
            print(" - " + c)
        report += [f"## {name}", "", "```", text, "```", ""] + [f"- {c}" for c in checks] + [""]
    atomic_write_text(out / "results.json", json.dumps(results, indent=2, default=str) + "\n")
    atomic_write_text(out / "report.md", "\n".join(report))
    for p in all_paths:
        print(f"wrote {p}")
    return 0
