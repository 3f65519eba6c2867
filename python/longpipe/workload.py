"""Applications' measurements in Python: the record tables of a run as DataFrames, each
user's figures, and the per-user statistics sweeps store.

A run with applications (``app.kind`` other than ``bulk``) returns, besides the result
JSON, one table per kind of measurement, as columns (never one object per row):

* ``pages`` — web pages: ``flow, start, end, load, bytes, objects``;
* ``requests`` — requests and their responses (web objects, request-response):
  ``flow, conn, start, end, response_time, request, response``;
* ``chunks`` — video chunks: ``flow, index, start, end, download_time, bytes, bitrate``;
* ``stalls`` — times a video did not play: ``flow, start, end, duration, startup``;
* ``transfers`` — transfers of an ``arrivals`` flow: ``flow, start, end, fct, bytes,
  rate_bps``.

Times are seconds from the start of the run; ``end`` (and the durations) are NaN for
what had not finished when the run ended.

Users: each user of a ``[[user]]`` group (the result's ``users``) and each other flow
with an application; with neither (bulk flows only), each flow. :func:`users` gives one row per user
with its goodput and figures; :func:`user_stats` the statistics across users that a
sweep stores per run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: The end of an unfinished row in the core's tables (u64::MAX).
UNFINISHED = 2**64 - 1

#: Table name -> (duration column, the core's column renames).
TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "pages": ("load", {}),
    "requests": ("response_time", {}),
    "chunks": ("download_time", {}),
    "stalls": ("duration", {}),
    "transfers": ("fct", {}),
}


def frame(records: Mapping[str, Mapping[str, Any]] | None, table: str) -> pd.DataFrame:
    """One record table as a DataFrame (empty, with its columns, if the run had none)."""
    import numpy as np
    import pandas as pd

    if table not in TABLES:
        raise KeyError(f"no table {table!r}: one of {', '.join(TABLES)}")
    cols = dict((records or {}).get(table) or {})
    dur = TABLES[table][0]
    if not cols:
        base = {"pages": ["flow", "start", "end", "load", "bytes", "objects"],
                "requests": ["flow", "conn", "start", "end", "response_time", "request", "response"],
                "chunks": ["flow", "index", "start", "end", "download_time", "bytes", "bitrate"],
                "stalls": ["flow", "start", "end", "duration", "startup"],
                "transfers": ["flow", "start", "end", "fct", "bytes", "rate_bps"]}[table]
        return pd.DataFrame({c: pd.Series(dtype=float) for c in base})
    start_ns = np.asarray(cols.pop("start_ns"), dtype=np.uint64)
    end_ns = np.asarray(cols.pop("end_ns"), dtype=np.uint64)
    start = start_ns / 1e9
    done = end_ns != np.uint64(UNFINISHED)
    end = np.where(done, end_ns / 1e9, np.nan)
    out: dict[str, Any] = {"flow": np.asarray(cols.pop("flow"))}
    rest = {k: np.asarray(v) for k, v in cols.items()}
    if "conn" in rest:
        out["conn"] = rest.pop("conn")
    if "index" in rest:
        out["index"] = rest.pop("index")
    out["start"] = start
    out["end"] = end
    # exact in integer ns, then seconds
    out[dur] = np.where(done, (end_ns - np.where(done, start_ns, end_ns)) / 1e9, np.nan)
    out.update(rest)
    if table == "transfers":
        with np.errstate(divide="ignore", invalid="ignore"):
            out["rate_bps"] = np.where(done, out["bytes"] * 8.0 / np.maximum(out[dur], 1e-9), np.nan)
    return pd.DataFrame(out)


def user_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One dict per user (see the module doc): ``user``, ``flows``, ``goodput_bps`` and
    the figures of its applications (``page_load_mean_s``, ``response_mean_s``,
    ``rebuffer_ratio``, ``fct_mean_s``, ``transfer_rate_mean_bps``... where they apply)."""
    users = data.get("users") or []
    rows = [{"user": u["name"], **{k: v for k, v in u.items() if k != "name"}} for u in users]
    grouped = {i for u in users for i in u.get("flows", [])}
    flows = [f for f in data.get("flows") or [] if f["id"] not in grouped]
    apps = [f for f in flows if isinstance(f.get("app"), dict)]
    if rows and not apps:
        return rows
    for f in apps or flows:
        r: dict[str, Any] = {"user": f"flow {f['id']}", "flows": [f["id"]], "goodput_bps": f["goodput_bps"],
                             "bytes_delivered": f["bytes_delivered"]}
        r.update(f.get("app") or {"kind": "bulk"})
        rows.append(r)
    return rows


def users(data: Mapping[str, Any]) -> pd.DataFrame:
    """:func:`user_rows` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(user_rows(data))


def _quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (NumPy's default, as the core)."""
    s = sorted(xs)
    if not s:
        return math.nan
    h = (len(s) - 1) * q
    lo, hi = math.floor(h), math.ceil(h)
    return s[lo] + (s[hi] - s[lo]) * (h - lo)


def _jain(xs: Sequence[float]) -> float | None:
    sq = sum(x * x for x in xs)
    return None if not xs or sq <= 0 else sum(xs) ** 2 / (len(xs) * sq)


#: Per-run statistics a sweep stores (column, arrow type, description), after the
#: store's own metrics. Additive: older stores lack them and are read from the result.
USER_METRICS: tuple[tuple[str, str, str], ...] = (
    ("users", "int64", "users (each [[user]] and each other application flow; else each flow)"),
    ("user_goodput_mean_bps", "float64", "mean of the users' goodputs (bit/s)"),
    ("user_goodput_p50_bps", "float64", "median of the users' goodputs (bit/s)"),
    ("user_goodput_p5_bps", "float64", "5th percentile of the users' goodputs (bit/s)"),
    ("user_goodput_min_bps", "float64", "smallest user goodput (bit/s)"),
    ("user_goodput_jain", "float64", "Jain's fairness index over the users' goodputs"),
    ("page_load_mean_s", "float64", "mean page load time, all pages (s)"),
    ("page_load_p95_s", "float64", "95th percentile of page load times, all pages (s)"),
    ("pages_unfinished", "int64", "pages still loading at the end"),
    ("response_mean_s", "float64", "mean response time, all requests (s)"),
    ("response_p95_s", "float64", "95th percentile of response times, all requests (s)"),
    ("fct_mean_s", "float64", "mean flow completion time, all transfers (s)"),
    ("fct_p95_s", "float64", "95th percentile of flow completion times (s)"),
    ("transfer_rate_min_bps", "float64", "smallest user mean transfer rate (bit/s)"),
    ("rebuffer_ratio_mean", "float64", "mean of the users' rebuffer ratios"),
    ("rebuffer_ratio_max", "float64", "largest user rebuffer ratio"),
    ("startup_mean_s", "float64", "mean video start-up delay of the users (s)"),
)


def user_stats(data: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`USER_METRICS` of one result (None where they do not apply)."""
    rows = user_rows(data)
    g = [float(r["goodput_bps"]) for r in rows]
    w = data.get("workload") or {}

    def spread(table: str, key: str) -> Any:
        t = w.get(table) or {}
        s = t.get("time_s") or {}
        return None if s.get(key) is None else float(s[key])

    def col(key: str) -> list[float]:
        return [float(r[key]) for r in rows if r.get(key) is not None]

    rb = col("rebuffer_ratio")
    tr = col("transfer_rate_mean_bps")
    st = col("startup_s")
    return {
        "users": len(rows),
        "user_goodput_mean_bps": sum(g) / len(g) if g else None,
        "user_goodput_p50_bps": _quantile(g, 0.5) if g else None,
        "user_goodput_p5_bps": _quantile(g, 0.05) if g else None,
        "user_goodput_min_bps": min(g) if g else None,
        "user_goodput_jain": _jain(g),
        "page_load_mean_s": spread("pages", "mean"),
        "page_load_p95_s": spread("pages", "p95"),
        "pages_unfinished": (w.get("pages") or {}).get("unfinished"),
        "response_mean_s": spread("requests", "mean"),
        "response_p95_s": spread("requests", "p95"),
        "fct_mean_s": spread("transfers", "mean"),
        "fct_p95_s": spread("transfers", "p95"),
        "transfer_rate_min_bps": min(tr) if tr else None,
        "rebuffer_ratio_mean": sum(rb) / len(rb) if rb else None,
        "rebuffer_ratio_max": max(rb) if rb else None,
        "startup_mean_s": sum(st) / len(st) if st else None,
    }


def rated_users(data: Mapping[str, Any], key: str = "goodput_bps") -> list[float | None]:
    """Each user's ``key`` (goodput, or ``transfer_rate_mean_bps``: None for a user whose
    transfers all were unfinished; a user without any transfer is left out)."""
    out: list[float | None] = []
    for r in user_rows(data):
        if key == "transfer_rate_mean_bps" and not (r.get("transfers") or r.get("transfers_unfinished")):
            continue
        out.append(None if r.get(key) is None else float(r[key]))
    return out


def users_at_least(data: Mapping[str, Any], bps: float, key: str = "goodput_bps") -> int:
    """How many users reach ``bps`` (their goodput, or another per-user rate ``key``)."""
    return sum(1 for v in rated_users(data, key) if v is not None and v >= bps)
