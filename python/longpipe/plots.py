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


def compare_figure(runs: dict[str, Any], path: str | os.PathLike[str], title: str, bin_s: float) -> None:
    """runs: label -> (Result, flow id). Goodput and cwnd over time, one line per label."""
    from ._io import save_figure

    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for label, (res, flow) in runs.items():
        ts = res.timeseries(flow)
        x, g = goodput_series(ts, bin_s)
        ax1.step(x, g / 1e6, where="post", label=label)
        ax2.step(ts["t"], ts["cwnd"] / 1e3, where="post", label=label)
    ax1.set_ylabel(f"goodput (Mbit/s, {bin_s:g} s bins)")
    ax2.set_ylabel("cwnd (kB)")
    ax2.set_xlabel("time (s)")
    ax1.set_title(title)
    for a in (ax1, ax2):
        a.grid(alpha=0.3)
        a.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def time_sequence(ax: Any, r: Any, title: str, zoom: tuple[float, float] | None = None, rwnd: int | None = None,
                  flow: int = 0) -> None:
    """tcptrace-style: segments as vertical bars (retransmissions in red), the ACK line,
    the receive-window line, and SACK blocks."""
    segs, ts = r.segments(flow), r.timeseries(flow)
    new = segs[~segs.retx]
    rtx = segs[segs.retx]
    ax.vlines(new.t, new.seq / 1e3, (new.seq + new.len) / 1e3, color="k", lw=0.8, label="segment")
    ax.vlines(rtx.t, rtx.seq / 1e3, (rtx.seq + rtx.len) / 1e3, color="r", lw=2.0, label="retransmission")
    ax.step(ts.t, ts.snd_una / 1e3, where="post", color="g", lw=0.9, label="ACK")
    if rwnd:
        ax.step(ts.t, (ts.snd_una + rwnd) / 1e3, where="post", color="y", lw=0.9, label="receive window")
    sk = r.sacks(flow)
    if len(sk):
        ax.vlines(sk.t, sk.left / 1e3, sk.right / 1e3, color="m", lw=1.5, label="SACK block")
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
