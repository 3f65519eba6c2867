"""Figures (matplotlib, Agg backend; written atomically as PNG)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def goodput_series(ts: Any, bin_s: float) -> tuple[Any, Any]:
    """Goodput over time (bit/s) from a sender trace: bytes newly acknowledged per bin."""
    t = ts["t"].to_numpy()
    una = ts["snd_una"].to_numpy().astype(float)
    if len(t) == 0:
        return np.array([]), np.array([])
    end = t[-1]
    edges = np.arange(0.0, end + bin_s, bin_s)
    # cumulative ACK at each edge (last value at or before the edge)
    idx = np.searchsorted(t, edges, side="right") - 1
    acked = np.where(idx >= 0, una[np.clip(idx, 0, None)], 0.0)
    rate = np.diff(acked) * 8.0 / bin_s
    return edges[1:], rate


_UNITS = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_RATES = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}


def parse_quantity(v: Any, units: dict[str, float]) -> float | None:
    """``"4MB"`` → 4e6 with the scenario's units (None if it is not a plain quantity)."""
    import re

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = re.match(r"^\s*([0-9.eE+-]+)\s*([A-Za-z]+)\s*$", str(v))
    if not m or m[2].lower() not in units:
        return None
    try:
        return float(m[1]) * units[m[2].lower()]
    except ValueError:
        return None


def window_lines(scenario: dict[str, Any], res: Any, flow: int) -> tuple[float | None, float | None]:
    """(receiver window, bandwidth-delay product) in bytes for a flow, when known: the
    window the run resolved (``flows[].profile.rwnd_bytes``: the stack's default when the
    scenario gives none), else the scenario's ``rwnd``; the BDP as the slowest link's
    rate × the smallest RTT sample."""
    rwnd: float | None = None
    flows = (getattr(res, "data", None) or {}).get("flows") or []
    if flow < len(flows) and isinstance(flows[flow].get("profile"), dict):
        rwnd = float(flows[flow]["profile"]["rwnd_bytes"])
    else:
        fl = scenario.get("flow", [{}])
        f = fl[min(flow, len(fl) - 1)] if isinstance(fl, list) and fl else {}
        given = f.get("rwnd") if isinstance(f, dict) else None
        rwnd = parse_quantity(given, _UNITS) if given is not None else None
    rates = [parse_quantity(lk.get("rate"), _RATES) for lk in scenario.get("link", []) if isinstance(lk, dict)]
    rates_ok = [r for r in rates if r]
    bdp = None
    try:
        rtt = res.rtt(flow)
        if len(rtt) and rates_ok:
            bdp = min(rates_ok) / 8 * float(rtt["rtt"].min())
    except KeyError:
        pass
    return rwnd, bdp


def parse_models(text: str | None) -> list[str]:
    """``--model cubic,bbr`` -> the model names (``longpipe model``'s); ValueError naming
    the option otherwise."""
    from .models.cli import NAMES

    if text is None:
        return []
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in NAMES]
    if not names or bad:
        raise ValueError(f"--model: expected a comma-separated list of {', '.join(NAMES)}, got {text!r}")
    return names


def model_inputs(res: Any, flow: int, scenario: dict[str, Any] | None) -> tuple[float | None, float, float | None]:
    """The run's own model inputs for a flow: (mean RTT in s, loss-indication rate p,
    slowest link rate in bit/s). p is as the models (PFTK, RFC 9438) define it: loss
    indications (fast recoveries + timeouts) per segment sent, not retransmissions, which
    count each lost segment of one window and go-back-N resends."""
    f = res.data["flows"][flow]
    sent = f["segments_sent"]
    p = (f["fast_recoveries"] + f["timeouts"]) / sent if sent else 0.0
    links = (scenario or {}).get("link", [])
    rates = [r for r in (parse_quantity(lk.get("rate"), _RATES) for lk in links if isinstance(lk, dict)) if r]
    return f["mean_rtt_s"], p, min(rates) if rates else None


def model_line(name: str, res: Any, flow: int, scenario: dict[str, Any] | None) -> tuple[float | None, str]:
    """A model's throughput (bit/s) for the run's own RTT, loss rate, MSS and slowest link
    (``longpipe model NAME --rtt RTT --p P --mss MSS --rate RATE``), and a legend label;
    None with the reason when the model is not defined there (no loss, no RTT sample)."""
    from .models.cli import ModelUsageError, evaluate

    rtt, p, rate = model_inputs(res, flow, scenario)
    mss = float(res.data["flows"][flow]["mss"])
    if rtt is None:
        return None, f"{name}: no RTT sample"
    if p <= 0 and name != "bbr":
        return None, f"{name}: no loss in the run"
    try:
        r = evaluate(name, rtt, p, mss=mss, rate=rate)
    except ModelUsageError as e:
        return None, f"{name}: {e}"
    return float(r["throughput_bps"]), f"{name} model: {r['throughput_bps'] / 1e6:.3g} Mbit/s (RTT {rtt * 1e3:.0f} ms, " \
                                        f"p {p:.2g})"


def compare_figure(runs: dict[str, Any], path: str | os.PathLike[str], title: str, bin_s: float,
                   scenario: dict[str, Any] | None = None, models: list[str] | None = None) -> None:
    """runs: label -> (Result, flow id). Goodput and cwnd over time, one line per label;
    on the cwnd panel the receiver window and the bandwidth-delay product (when the
    scenario is given), retransmissions (ticks) and RTOs (crosses); cwnd above 1.3 × the
    receiver window is clipped so that one spike does not flatten the rest. ``models``
    (names of ``longpipe model``): each model's throughput for each run's own mean RTT,
    loss-indication rate, MSS and slowest link, a dashed level on the goodput panel in
    the run's colour."""
    from ._io import save_figure

    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9.5, 7.5), sharex=True)
    peak, bdp = 0.0, None
    rwnds: dict[str, float] = {}
    for k, (label, (res, flow)) in enumerate(runs.items()):
        color = f"C{k % 10}"
        ts = res.timeseries(flow)
        x, g = goodput_series(ts, bin_s)
        ax1.step(x, g / 1e6, where="post", label=label, color=color)
        for m, name in enumerate(models or []):
            y, note = model_line(name, res, flow, scenario)
            if y is not None:
                ax1.axhline(y / 1e6, color=color, ls=("--", ":", "-.")[m % 3], lw=1.2, label=f"{label}: {note}")
            else:
                ax1.plot([], [], " ", label=f"{label}: {note}")
        ax2.step(ts["t"], ts["cwnd"] / 1e3, where="post", label=label, color=color, lw=1.1)
        peak = max(peak, float(ts["cwnd"].max()) if len(ts) else 0.0)
        if scenario is not None:
            w, b = window_lines(scenario, res, flow)
            if w:
                rwnds[label] = w
            bdp = bdp or b
        segs = res.segments(flow)
        rtx = segs[segs.retx]
        if len(rtx):
            # the window at each retransmission, from the trace just before it
            cw = np.interp(rtx.t.to_numpy(), ts["t"].to_numpy(), ts["cwnd"].to_numpy()) / 1e3
            ax2.plot(rtx.t, cw, "|", color=color, ms=9, mew=1.2, alpha=0.8)
        mss = float(res.data["flows"][flow].get("mss", 1460))
        c = ts["cwnd"].to_numpy()
        rto = np.nonzero((c[1:] <= mss) & (c[:-1] > 2 * mss))[0] + 1
        if len(rto):
            ax2.plot(ts["t"].to_numpy()[rto], c[rto] / 1e3, "x", color=color, ms=8, mew=1.8)
    for w in sorted(set(rwnds.values())):  # each run's own window (they differ across stacks)
        who = [lb for lb, v in rwnds.items() if v == w]
        ax2.axhline(w / 1e3, color="0.3", ls="--", lw=1, label=f"receiver window {w / 1e3:g} kB"
                    + ("" if len(who) == len(rwnds) else f" ({', '.join(who)})"))
    rwnd = max(rwnds.values(), default=None)
    if rwnd:
        if peak > 1.3 * rwnd:
            ax2.set_ylim(0, 1.3 * rwnd / 1e3)
            ax2.text(0.99, 0.97, f"clipped: cwnd peaks at {peak / 1e3:.0f} kB", transform=ax2.transAxes,
                     ha="right", va="top", fontsize=8, color="0.3")
    if bdp:
        ax2.axhline(bdp / 1e3, color="0.55", ls=":", lw=1.2,
                    label=f"BDP ≈ {bdp / 1e3:.0f} kB (slowest link × min RTT)")
    ax2.plot([], [], "|", color="k", ms=9, label="retransmission")
    ax2.plot([], [], "x", color="k", ms=7, label="RTO (cwnd back to 1 MSS)")
    ax1.set_ylabel(f"goodput (Mbit/s, {bin_s:g} s bins)")
    ax2.set_ylabel("cwnd (kB)")
    ax2.set_xlabel("time (s)")
    ax1.set_title(title, fontsize=10)
    for a in (ax1, ax2):
        a.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def time_sequence(ax: Any, r: Any, title: str, zoom: tuple[float, float] | None = None, rwnd: int | None = None,
                  flow: int = 0) -> None:
    """tcptrace-style: segments as vertical bars (retransmissions in red, each also ringed:
    a bar a segment high vanishes at the scale of a whole transfer), the ACK line, the
    receive-window line, and SACK blocks."""
    segs, ts = r.segments(flow), r.timeseries(flow)
    new = segs[~segs.retx]
    rtx = segs[segs.retx]
    # drawing order: SACK blocks below, then segments, retransmissions on top
    ax.vlines(new.t, new.seq / 1e3, (new.seq + new.len) / 1e3, color="k", lw=0.8, label="segment", zorder=3)
    ax.vlines(rtx.t, rtx.seq / 1e3, (rtx.seq + rtx.len) / 1e3, color="r", lw=2.0, zorder=5)
    ax.plot(rtx.t, (rtx.seq + rtx.len / 2) / 1e3, "o", mfc="none", mec="r", ms=6, mew=1.2, zorder=6,
            label=f"retransmission ({len(rtx)})")
    ax.step(ts.t, ts.snd_una / 1e3, where="post", color="g", lw=0.9, label="ACK")
    if rwnd:
        ax.step(ts.t, (ts.snd_una + rwnd) / 1e3, where="post", color="y", lw=0.9, label="receive window")
    sk = r.sacks(flow)
    if len(sk):
        ax.vlines(sk.t, sk.left / 1e3, sk.right / 1e3, color="m", lw=1.5, alpha=0.6, label="SACK block", zorder=2)
    if zoom:
        ax.set_xlim(*zoom)
        sel = segs[(segs.t >= zoom[0]) & (segs.t <= zoom[1])]
        if len(sel):
            ax.set_ylim(sel.seq.min() / 1e3 - 5, (sel.seq + sel.len).max() / 1e3 + 5)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("sequence number (KB)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")


def _cdf(ax: Any, x: Any, label: str | None) -> None:
    """An empirical CDF: the fraction of values at or below each value."""
    v = np.sort(np.asarray(x, dtype=float))
    if len(v) == 0:
        return
    ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", lw=1.4, label=label)


def _log_axis(axis: Any) -> None:
    """Log scale with plain numbers at 1, 2, 5 × 10^k (not 2 × 10^0)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def workload_figure(runs: dict[str, dict[str, Any]], title: str) -> Any | None:
    """Distributions of an application run (or of several, one line per label): CDFs of
    page load time, response time and flow completion time, FCT against transfer size,
    and the CDF of per-user goodput. ``runs`` maps a label to ``{"pages": DataFrame, ...,
    "users": DataFrame}`` (:mod:`longpipe.workload`). Only panels with data are drawn;
    None when there is nothing to draw. Unfinished rows (NaN) are left out and counted
    in the legend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels: list[tuple[str, str, str]] = []  # (table, column, label)
    for table, col, label in (("pages", "load", "page load time (s)"), ("requests", "response_time", "response time (s)"),
                              ("transfers", "fct", "flow completion time (s)"),
                              ("chunks", "download_time", "chunk download time (s)")):
        if any(len(t.get(table, [])) for t in runs.values()):
            panels.append((table, col, label))
    scatter = any(len(t.get("transfers", [])) for t in runs.values())
    users = any(len(t.get("users", [])) > 1 for t in runs.values())
    n = len(panels) + scatter + users
    if n == 0:
        return None
    ncols = min(n, 2)
    nrows = (n + ncols - 1) // ncols
    fig = Figure(figsize=(6.2 * ncols, 4.2 * nrows))
    FigureCanvasAgg(fig)
    k = 0
    for table, col, label in panels:
        k += 1
        ax = fig.add_subplot(nrows, ncols, k)
        for name, t in runs.items():
            df = t.get(table)
            if df is None or len(df) == 0:
                continue
            x = df[col].dropna()
            open_ = int(df[col].isna().sum())
            _cdf(ax, x, f"{name} ({len(x)}" + (f", {open_} unfinished" if open_ else "") + ")")
        ax.set_xscale("log")
        _log_axis(ax.xaxis)
        ax.set_xlabel(label)
        ax.set_ylabel("fraction at or below")
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(f"CDF of {label.split(' (')[0]}", fontsize=10)
    if scatter:
        k += 1
        ax = fig.add_subplot(nrows, ncols, k)
        for name, t in runs.items():
            df = t.get("transfers")
            if df is None or len(df) == 0:
                continue
            d = df.dropna(subset=["fct"])
            ax.scatter(d["bytes"], d["fct"], s=6, alpha=0.5, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
        ax.set_xlabel("transfer size (bytes)")
        ax.set_ylabel("flow completion time (s)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, markerscale=2)
        ax.set_title("FCT against size", fontsize=10)
    if users:
        k += 1
        ax = fig.add_subplot(nrows, ncols, k)
        for name, t in runs.items():
            u = t.get("users")
            if u is None or len(u) == 0:
                continue
            _cdf(ax, u["goodput_bps"] / 1e6, f"{name} ({len(u)} users)")
        ax.set_xlabel("goodput per user (Mbit/s)")
        ax.set_ylabel("fraction of users at or below")
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title("CDF of per-user goodput", fontsize=10)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
