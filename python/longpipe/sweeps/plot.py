"""Metric-vs-parameter figures of a sweep: mean and 95 % CI over seeds, one line per
``hue`` value, one panel per combination of the other varying keys; log axes where the
grid was log-spaced."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..api import ScenarioError
from .grid import Axis, display_value, format_value
from .store import _param_type
from .summary import check_present, mean_ci95, metric, values

_NUM_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%]*)\s*$")


def _numeric(vals: Sequence[Any]) -> tuple[list[float], str] | None:
    """Numbers (and their common unit) when every value is a number or number+unit."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return [float(v) for v in vals], ""
    if all(isinstance(v, str) for v in vals):
        ms = [_NUM_UNIT.match(v) for v in vals]
        if all(ms):
            units = {m[2] for m in ms if m}
            if len(units) == 1:
                return [float(m[1]) for m in ms if m], units.pop()
    return None


def _log_axis(axis: Axis, nums: Sequence[float]) -> bool:
    if axis.scale == "log":
        return True
    if axis.scale == "lin":
        return False
    pos = [x for x in nums if x > 0]
    return len(pos) == len(nums) and len(nums) > 2 and max(pos) / min(pos) >= 100


def _point_scenario(row: Mapping[str, Any], axes: Sequence[Axis], base: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario a stored run ran: the sweep's base with the run's grid values."""
    from .grid import apply_point

    point = []
    for a in axes:
        for v in a.values:
            if _param_type(v)[1] == row.get(a.key):
                point.append((a.key, v))
                break
    return apply_point(base, point, None)


def model_goodput(name: str, pts: Sequence[Mapping[str, Any]], axes: Sequence[Axis],
                  base: Mapping[str, Any]) -> float | None:
    """A model's aggregate goodput (bit/s) at a grid point: for each stored run, the sum
    over its flows of the model's throughput for that flow's own mean RTT, loss-indication
    rate and MSS (``plots.model_line``, as ``compare --model`` draws it), capped at the
    slowest link's rate; the mean over the point's runs. None when the model is not
    defined for some flow (no loss, no RTT sample)."""
    import json
    from types import SimpleNamespace

    from ..plots import _RATES, model_line, parse_quantity

    totals = []
    for r in pts:
        res = SimpleNamespace(data=json.loads(r["result"]))
        sc = _point_scenario(r, axes, base)
        flows = res.data.get("flows", [])
        ys = [model_line(name, res, i, sc)[0] for i in range(len(flows))]
        if not flows or any(y is None for y in ys):
            return None
        total = sum(y for y in ys if y is not None)
        rates = [q for q in (parse_quantity(lk.get("rate"), _RATES) for lk in sc.get("link", [])
                             if isinstance(lk, dict)) if q]
        totals.append(min(total, min(rates)) if rates else total)
    return sum(totals) / len(totals) if totals else None


def plot_sweep(rows: Sequence[Mapping[str, Any]], axes: Sequence[Axis], path: str | os.PathLike[str], *, x: str,
               y: str = "goodput", hue: str | None = None, where: Mapping[str, Any] | None = None,
               title: str | None = None, logy: bool = False, models: Sequence[str] = (),
               base: Mapping[str, Any] | None = None) -> Path:
    """Writes a PNG of metric ``y`` against grid key ``x``; returns its path."""
    from .._io import save_figure

    fig = figure(rows, axes, x=x, y=y, hue=hue, where=where, title=title, logy=logy, models=models, base=base)
    return save_figure(fig, path, dpi=110)


def figure(rows: Sequence[Mapping[str, Any]], axes: Sequence[Axis], *, x: str, y: str = "goodput",
           hue: str | None = None, where: Mapping[str, Any] | None = None, title: str | None = None,
           logy: bool = False, models: Sequence[str] = (), base: Mapping[str, Any] | None = None) -> Any:
    """The matplotlib Figure of :func:`plot_sweep`. ``models`` (``longpipe model``'s
    names, goodput only): each model's :func:`model_goodput` at every point, dashed in
    the colour of its line; ``base`` is the sweep's scenario (its links' rates)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    by_key = {a.key: a for a in axes}
    for opt, k in (("--x", x), ("--hue", hue)):
        if k is not None and k not in by_key:
            raise ScenarioError(None, opt, f"{k!r} is not a grid key of this sweep (keys: {', '.join(by_key) or 'none'})")
    if hue == x:
        raise ScenarioError(None, "--hue", "must differ from --x")
    m = metric(y)
    if models and (m.name != "goodput_bps" or base is None):
        raise ScenarioError(None, "--model", "models are drawn beside the goodput (--y goodput) only")
    sel = list(rows)
    fixed: dict[str, Any] = {}
    for k, v in (where or {}).items():
        if k not in by_key:
            raise ScenarioError(None, "--where", f"{k!r} is not a grid key of this sweep")
        nv = _param_type(v)[1]
        sel = [r for r in sel if r.get(k) == nv]
        fixed[k] = v
        if not sel:
            raise ScenarioError(None, "--where", f"no runs with {k}={format_value(v)}")
    if not sel:
        raise ScenarioError(None, "plot", "the sweep has no finished runs")
    check_present(sel, m)

    def present(a: Axis) -> list[Any]:
        have = {r.get(a.key) for r in sel}
        return [v for v in a.values if _param_type(v)[1] in have]

    xa = by_key[x]
    xs = present(xa)
    hues = present(by_key[hue]) if hue else [None]
    facet_axes = [a for a in axes if a.key not in (x, hue) and a.key not in fixed and len(present(a)) > 1]
    import itertools

    facets = list(itertools.product(*(present(a) for a in facet_axes))) or [()]
    if len(facets) > 12:
        raise ScenarioError(None, "--where", f"{len(facets)} panels: fix some of {', '.join(a.key for a in facet_axes)} "
                            "with --where KEY=VALUE or choose one as --hue")
    num = _numeric(xs)
    ncols = min(3, len(facets))
    nrows = math.ceil(len(facets) / ncols)
    fig = Figure(figsize=(6.4 * ncols if ncols > 1 else 7.2, 4.6 * nrows))
    FigureCanvasAgg(fig)
    seeds = sorted({int(r["seed"]) for r in sel})
    for i, facet in enumerate(facets):
        ax = fig.add_subplot(nrows, ncols, i + 1)
        fsel = [r for r in sel if all(r.get(a.key) == _param_type(v)[1] for a, v in zip(facet_axes, facet))]
        n_h = len(hues)
        for j, hv in enumerate(hues):
            hsel = fsel if hv is None or hue is None else [r for r in fsel if r.get(hue) == _param_type(hv)[1]]
            px: list[float] = []
            py: list[float] = []
            pe: list[float] = []
            mod: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in models}
            for xi, xv in enumerate(xs):
                pts = [r for r in hsel if r.get(x) == _param_type(xv)[1]]
                ys = [v for v in values(pts, m) if v is not None]
                if not ys:
                    continue
                mean, ci = mean_ci95(ys)
                if num:
                    px.append(num[0][xi])
                else:  # categorical: dodge the hues so the intervals do not overlap
                    px.append(xi + (j - (n_h - 1) / 2) * 0.8 / max(n_h, 1) * (1 if n_h > 1 else 0))
                for name in models:
                    g = model_goodput(name, pts, axes, base or {})
                    if g is not None:
                        mod[name][0].append(px[-1])
                        mod[name][1].append(g * m.scale)
                py.append(mean * m.scale)
                pe.append(0.0 if math.isnan(ci) else ci * m.scale)
            label = None if hv is None else display_value(hv)
            if num:  # mean line and markers, the 95 % interval as a band
                (line,) = ax.plot(px, py, marker="o", ms=4, lw=1.5, label=label)
                lo = [a - e for a, e in zip(py, pe)]
                hi = [a + e for a, e in zip(py, pe)]
                ax.fill_between(px, lo, hi, color=line.get_color(), alpha=0.18, lw=0)
            else:
                line = ax.errorbar(px, py, yerr=pe, marker="o", ms=5, capsize=4, lw=1.5, ls="none",
                                   label=label).lines[0]
            for mi, (name, (mx, my)) in enumerate(mod.items()):
                style = ("--", ":", "-.")[mi % 3]
                ml = f"{name} model" + (f" ({label})" if label else "")
                if num:
                    ax.plot(mx, my, ls=style, lw=1.2, color=line.get_color(), label=ml)
                else:
                    ax.plot(mx, my, ls="none", marker="_x+"[mi % 3], ms=12, mew=1.5, color=line.get_color(),
                            label=ml)
        if num:
            if _log_axis(xa, num[0]):
                ax.set_xscale("log")
            ax.set_xlabel(f"{x} ({num[1]})" if num[1] else x)
        else:
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([display_value(v) for v in xs])
            ax.set_xlim(-0.6, len(xs) - 0.4)
            ax.set_xlabel(x)
        if logy:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(m.title)
        ax.grid(alpha=0.35, which="major")
        ax.grid(alpha=0.12, which="minor")
        if facet:
            ax.set_title(", ".join(f"{a.key} = {display_value(v)}" for a, v in zip(facet_axes, facet)), fontsize=9)
        if hue or models:
            ax.legend(title=hue, fontsize=8, title_fontsize=8)
    if len(seeds) > 1:
        fig.text(0.995, 0.005, "shaded: 95 % confidence interval of the mean (Student t)", ha="right", va="bottom",
                 fontsize=7, color="0.4")
    ci_note = f"mean and 95 % CI over {len(seeds)} seeds" if len(seeds) > 1 else f"seed {seeds[0]}"
    extra = "".join(f", {k} = {display_value(v)}" for k, v in fixed.items())
    if models:
        extra += ")\n(models: each run's own RTT, loss-indication rate, MSS and slowest link"
    fig.suptitle(f"{title or 'sweep'}: {m.label} vs {x}\n({ci_note}{extra})", fontsize=11)
    fig.tight_layout()
    return fig
