"""Shared helpers for reproductions: parallel runs, confidence intervals, output."""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

import numpy as np


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def run_parallel(fn: Callable, items: Iterable, jobs: int | None = None) -> list:
    """Maps ``fn`` over ``items`` on threads. The simulator releases the GIL, so runs
    proceed on all cores; results come back in input order (deterministic)."""
    items = list(items)
    jobs = jobs or default_jobs()
    if jobs <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(fn, items))


def mean_ci95(values) -> tuple[float, float]:
    """Mean and half-width of the 95 % Student-t confidence interval."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    m = float(v.mean())
    if n < 2:
        return m, math.nan
    from scipy.stats import t

    return m, float(t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n))
