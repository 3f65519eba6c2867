"""Per-point summaries of a sweep: mean and 95 % confidence interval over seeds.

The interval is Student's t: mean ± t(0.975, n − 1) · s / √n, with s the sample standard
deviation over the n seeds of a point (no interval for n = 1).

Metrics are named by a store column (``goodput_bps``, ``timeouts``…), a short alias
(``goodput``, ``rto``, ``rtt``…) or a path into the stored result
(``flows[1].goodput_bps``, ``links[2].drops_queue``, ``gateways[0].go_back_n``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api import ScenarioError
from .grid import Axis, display_value
from .store import METRICS, _param_type

ALIASES = {
    "goodput": "goodput_bps", "throughput": "goodput_bps", "bytes": "bytes_delivered", "segs": "segments_sent",
    "segments": "segments_sent", "retx": "retransmitted_segments", "retransmissions": "retransmitted_segments",
    "rto": "timeouts", "rtos": "timeouts", "fr": "fast_recoveries", "rtt": "mean_rtt_s",
    "completion": "completion_time_s", "done": "completion_time_s", "fairness": "fairness_jain",
    "jain": "fairness_jain", "utilization": "utilization_max", "util": "utilization_max",
    # applications and users (longpipe.workload.USER_METRICS)
    "page_load": "page_load_mean_s", "page_load_mean": "page_load_mean_s", "page_load_p95": "page_load_p95_s",
    "response": "response_mean_s", "response_mean": "response_mean_s", "response_p95": "response_p95_s",
    "fct": "fct_mean_s", "fct_mean": "fct_mean_s", "fct_p95": "fct_p95_s", "rebuffer": "rebuffer_ratio_mean",
    "rebuffer_max": "rebuffer_ratio_max", "startup": "startup_mean_s", "user_goodput": "user_goodput_mean_bps",
    "user_goodput_min": "user_goodput_min_bps", "user_goodput_p5": "user_goodput_p5_bps",
    "user_goodput_p50": "user_goodput_p50_bps", "user_jain": "user_goodput_jain",
    "transfer_rate_min": "transfer_rate_min_bps",
}
DEFAULT_METRICS = ("goodput_bps", "retransmitted_segments", "timeouts", "mean_rtt_s")
_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?)*$")


@dataclass(frozen=True)
class Metric:
    """A metric: the column or result path, a label, and the display scale and unit."""

    name: str
    label: str
    scale: float = 1.0
    unit: str = ""

    @property
    def title(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


_LABELS = {
    "goodput_bps": ("goodput", 1e-6, "Mbit/s"), "mean_rtt_s": ("mean RTT", 1e3, "ms"),
    "completion_time_s": ("completion time", 1.0, "s"), "utilization_max": ("utilization", 100.0, "%"),
    "retransmitted_segments": ("retransmissions", 1.0, ""), "timeouts": ("RTOs", 1.0, ""),
    "fast_recoveries": ("fast recoveries", 1.0, ""), "fairness_jain": ("Jain fairness", 1.0, ""),
    "bytes_delivered": ("bytes delivered", 1e-6, "MB"), "segments_sent": ("segments sent", 1.0, ""),
    "drops_queue": ("queue drops", 1.0, ""), "drops_loss": ("loss drops", 1.0, ""), "events": ("events", 1.0, ""),
    "users": ("users", 1.0, ""), "user_goodput_mean_bps": ("mean user goodput", 1e-6, "Mbit/s"),
    "user_goodput_p50_bps": ("median user goodput", 1e-6, "Mbit/s"),
    "user_goodput_p5_bps": ("5th-percentile user goodput", 1e-6, "Mbit/s"),
    "user_goodput_min_bps": ("lowest user goodput", 1e-6, "Mbit/s"),
    "user_goodput_jain": ("Jain fairness across users", 1.0, ""),
    "page_load_mean_s": ("mean page load", 1.0, "s"), "page_load_p95_s": ("page load p95", 1.0, "s"),
    "pages_unfinished": ("pages unfinished", 1.0, ""), "response_mean_s": ("mean response time", 1.0, "s"),
    "response_p95_s": ("response time p95", 1.0, "s"), "fct_mean_s": ("mean FCT", 1.0, "s"),
    "fct_p95_s": ("FCT p95", 1.0, "s"), "transfer_rate_min_bps": ("lowest user transfer rate", 1e-6, "Mbit/s"),
    "rebuffer_ratio_mean": ("mean rebuffer ratio", 1.0, ""), "rebuffer_ratio_max": ("largest rebuffer ratio", 1.0, ""),
    "startup_mean_s": ("mean start-up delay", 1.0, "s"),
}
KNOWN = {m for m, _, _ in METRICS}
#: Per-user statistics: a store column, or computed from the stored result.
USER_KEYS = {"users", "user_goodput_mean_bps", "user_goodput_p50_bps", "user_goodput_p5_bps", "user_goodput_min_bps",
             "user_goodput_jain", "page_load_mean_s", "page_load_p95_s", "pages_unfinished", "response_mean_s",
             "response_p95_s", "fct_mean_s", "fct_p95_s", "transfer_rate_min_bps", "rebuffer_ratio_mean",
             "rebuffer_ratio_max", "startup_mean_s"}
KNOWN |= USER_KEYS
#: ``users_ge:2Mbps`` (users whose goodput reaches 2 Mbit/s) and ``share_ge:2Mbps`` (their
#: share of the users); ``...:transfer_rate`` compares the users' mean transfer rate (of
#: their arrivals flows' transfers) instead of their goodput.
_AT_LEAST = re.compile(r"^(users|share)_ge:\s*([0-9.eE+-]+\s*[A-Za-z/]+?)(?::(goodput|transfer_rate))?$")
_PER_USER_RATE = {None: "goodput_bps", "goodput": "goodput_bps", "transfer_rate": "transfer_rate_mean_bps"}


def _threshold(text: str) -> float | None:
    from ..plots import _RATES, parse_quantity

    return parse_quantity(text.replace("bit/s", "bps").replace("Mbit/s", "Mbps"), _RATES)


def metric(name: str) -> Metric:
    """Resolves a metric name; raises ScenarioError for an unknown one."""
    at = _AT_LEAST.match(name.strip())
    if at:
        if _threshold(at[2]) is None:
            raise ScenarioError(None, "metric", f"{name!r}: expected a rate such as users_ge:2Mbps")
        what = "users" if at[1] == "users" else "share of users"
        rate = "" if at[3] is None else f":{at[3]}"
        of = "goodput" if at[3] is None else at[3].replace("_", " ")
        return Metric(f"{at[1]}_ge:{at[2].strip()}{rate}", f"{what} with {of} ≥ {at[2].strip()}", 1.0, "")
    n = ALIASES.get(name.strip().lower(), name.strip())
    if n in _LABELS:
        label, scale, unit = _LABELS[n]
        return Metric(n, label, scale, unit)
    if n in KNOWN:
        return Metric(n, n)
    if _PATH.match(n) and n.split(".")[0].split("[")[0] in {"flows", "links", "gateways", "sim", "nodes"}:
        if "." not in n or n.endswith("]"):
            raise ScenarioError(None, "--metric", f"{name}: names a table, not a number; e.g. "
                                "flows[0].goodput_bps")
        leaf = n.rsplit(".", 1)[-1]
        if leaf.endswith("_bps"):
            return Metric(n, n[: -len("_bps")], 1e-6, "Mbit/s")
        if leaf.endswith("_s"):
            return Metric(n, n[: -len("_s")], 1.0, "s")
        return Metric(n, n)
    known = ", ".join(sorted(set(ALIASES) | KNOWN))
    raise ScenarioError(None, "metric", f"unknown metric {name!r}: use one of {known}, users_ge:RATE, "
                        "share_ge:RATE, or a result path such as flows[0].goodput_bps")


_MISSING = object()


def _walk(doc: Any, path: str) -> Any:
    """The value at a result path, or _MISSING where the result has no such element."""
    for part in path.split("."):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$", part)
        if not m or not isinstance(doc, dict) or m[1] not in doc:
            return _MISSING
        doc = doc[m[1]]
        if m[2] is not None:
            if not isinstance(doc, list) or int(m[2]) >= len(doc):
                return _MISSING
            doc = doc[int(m[2])]
    return doc


def values(rows: Sequence[Mapping[str, Any]], m: Metric) -> list[float | None]:
    """The metric of each row (None where absent)."""
    from ..workload import rated_users, user_stats, users_at_least

    out: list[float | None] = []
    at = _AT_LEAST.match(m.name)
    for r in rows:
        if at:
            data = json.loads(r["result"])
            key = _PER_USER_RATE[at[3]]
            n = users_at_least(data, _threshold(at[2]) or 0.0, key)
            total = len(rated_users(data, key))
            v: Any = n if at[1] == "users" else (n / total if total else None)
        elif m.name in r:
            v = r.get(m.name)
        elif m.name in USER_KEYS:  # a store written before these columns
            v = user_stats(json.loads(r["result"])).get(m.name)
        else:
            v = _walk(json.loads(r["result"]), m.name)
        out.append(None if v is None or v is _MISSING or isinstance(v, (str, dict, list)) else float(v))
    return out


def check_paths_before_running(names: Sequence[str] | None, scenarios_json: Sequence[str]) -> None:
    """Before a sweep runs: a ``flows[i]`` or ``links[i]`` metric must name a flow or a
    link direction that at least one of the runs will have (``flows[99].goodput_bps`` in
    a sweep of one flow is refused before anything is stored). Other result paths are
    checked against the results (:func:`check_present`)."""
    ms = [metric(x) for x in names or []]
    heads = []
    for m in ms:
        h = re.match(r"^(flows|links)\[(\d+)\]", m.name) if m.name not in KNOWN else None
        if h is not None:
            heads.append((m, h))
    if not heads:
        return
    from .. import _core

    unique = set(scenarios_json)
    n_flows = max(int(_core.validate(s)["flows"]) for s in unique)
    n_dirs = max(2 * len(json.loads(s).get("link", [])) for s in unique)  # a result lists both directions
    for m, h in heads:
        have = n_flows if h[1] == "flows" else n_dirs
        what = f"{n_flows} flow(s)" if h[1] == "flows" else f"{n_dirs} link directions"
        if int(h[2]) >= have:
            raise ScenarioError(None, "--metric", f"{m.name}: no run will have it (the runs have {what})")


def check_present(rows: Sequence[Mapping[str, Any]], m: Metric) -> None:
    """ScenarioError for a result path that no stored run has (``flows[99].goodput_bps``
    in a sweep of one flow), or that names a table rather than a number: a typo, not a
    metric whose value is missing."""
    if not rows or m.name in rows[0] or m.name in USER_KEYS or _AT_LEAST.match(m.name):
        return
    found = [_walk(json.loads(r["result"]), m.name) for r in rows]
    if all(v is _MISSING for v in found):
        n = max(len(json.loads(r["result"]).get("flows", [])) for r in rows)
        raise ScenarioError(None, "--metric", f"{m.name}: no stored run has it (the runs have {n} flow(s); "
                            "result paths as in longpipe run --json)")
    if all(v is _MISSING or isinstance(v, (str, dict, list)) for v in found):
        raise ScenarioError(None, "--metric", f"{m.name}: is not a number in the stored results")


def mean_ci95(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of the 95 % Student-t interval (nan for fewer than 2 values)."""
    n = len(xs)
    if n == 0:
        return math.nan, math.nan
    m = math.fsum(xs) / n
    if n < 2:
        return m, math.nan
    var = math.fsum((x - m) ** 2 for x in xs) / (n - 1)
    return m, t975(n - 1) * math.sqrt(var / n)


@functools.cache
def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` (a positive integer) degrees of freedom.

    Exact to double precision without SciPy (whose import alone took 0.83 s of every
    ``--summary``, issue 31): for integer ``df`` the two-sided probability
    P(|T| < t) is a finite sum in theta = atan(t / sqrt(df)) (Abramowitz and Stegun
    26.7.3-26.7.4), increasing in theta on (0, pi/2); bisection on theta finds where it
    is 0.95.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")

    def inside(theta: float) -> float:  # P(|T| < sqrt(df) tan theta)
        c2, s = math.cos(theta) ** 2, math.sin(theta)
        if df % 2:
            term, acc = math.cos(theta), 0.0
            for k in range(1, (df - 1) // 2 + 1):  # cos^(2k-1) * (2*4..(2k-2))/(1*3..(2k-1))
                acc += term
                term *= c2 * (2 * k) / (2 * k + 1)
            return 2 / math.pi * (theta + s * acc)
        term, acc = 1.0, 0.0
        for k in range(1, df // 2 + 1):  # cos^(2k-2) * (1*3..(2k-3))/(2*4..(2k-2))
            acc += term
            term *= c2 * (2 * k - 1) / (2 * k)
        return s * acc

    lo, hi = 0.0, math.pi / 2
    while True:
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if inside(mid) < 0.95 else (lo, mid)
    return math.sqrt(df) * math.tan((lo + hi) / 2)


def group(rows: Sequence[Mapping[str, Any]], axes: Sequence[Axis]) -> list[tuple[tuple[Any, ...], list[Mapping[str, Any]]]]:
    """Rows grouped by point, in grid order (points without rows are left out)."""
    import itertools

    keys = [a.key for a in axes]
    index: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        index.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    seen = set()
    for combo in itertools.product(*(a.values for a in axes)):
        key = tuple(_param_type(v)[1] for v in combo)
        if key in index and key not in seen:
            seen.add(key)
            out.append((combo, sorted(index[key], key=lambda r: int(r["seed"]))))
    for key, rs in index.items():  # rows outside the axes (should not happen): at the end
        if key not in seen:
            out.append((key, sorted(rs, key=lambda r: int(r["seed"]))))
    return out


def summarize(rows: Sequence[Mapping[str, Any]], axes: Sequence[Axis],
              metrics: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One dict per point: the axis values, ``n`` (seeds), and for each metric
    ``<name>_mean`` and ``<name>_ci95`` (in the metric's own unit: bit/s, s…)."""
    ms = [metric(x) for x in (metrics or DEFAULT_METRICS)]
    for m in ms:
        check_present(rows, m)
    out = []
    for combo, rs in group(rows, axes):
        d: dict[str, Any] = {a.key: v for a, v in zip(axes, combo)}
        d["n"] = len(rs)
        for m in ms:
            xs = [x for x in values(rs, m) if x is not None]
            mean, ci = mean_ci95(xs)
            d[f"{m.name}_mean"] = mean
            d[f"{m.name}_ci95"] = ci
        out.append(d)
    return out


def fmt_num(x: float | None, digits: int = 4) -> str:
    """A number without float noise: ``digits`` significant digits."""
    if x is None or math.isnan(x):
        return "-"
    return f"{x:.{digits}g}"


def fmt_mean_ci(mean: float, ci: float, scale: float = 1.0) -> str:
    if math.isnan(mean):
        return "-"
    if math.isnan(ci):
        return fmt_num(mean * scale)
    m, c = mean * scale, ci * scale
    if c <= 1e-9 * abs(m):  # equal values: an interval of rounding noise
        return f"{fmt_num(m)} ± 0"
    if c > 0:
        # as many decimals as the interval's second significant digit needs
        dec = max(0, 1 - math.floor(math.log10(c)))
        return f"{m:.{dec}f} ± {c:.{dec}f}"
    return f"{fmt_num(m)} ± 0"


def table_rows(summary: Sequence[Mapping[str, Any]], axes: Sequence[Axis],
               metrics: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of a summary table for the terminal."""
    ms = [metric(x) for x in (metrics or DEFAULT_METRICS)]
    headers = [a.key for a in axes] + ["seeds"] + [m.title for m in ms]
    cells = []
    for d in summary:
        cells.append([display_value(d[a.key]) for a in axes] + [str(d["n"])]
                     + [fmt_mean_ci(d[f"{m.name}_mean"], d[f"{m.name}_ci95"], m.scale) for m in ms])
    return headers, cells
