"""Figures (matplotlib, Agg backend; written atomically as PNG)."""

from __future__ import annotations

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def goodput_series(ts, bin_s: float):
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


def compare_figure(runs: dict, path, title: str, bin_s: float):
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
