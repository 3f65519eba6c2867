"""The results store: a Parquet dataset with one file (one row) per finished run.

Layout of a store directory::

    sweep.json            what was asked: the base scenario, its hash, the grid axes, the seeds
    runs/<run_id>.parquet one row: run id, scenario hash, version, seed, the grid
                          parameters, the summary metrics and the whole result (JSON)
    wall_times.csv        run_id,wall_s (not part of the rows: wall time is not deterministic)

A run's id is a hash of its resolved scenario and its seed, so a point is stored at most
once, and a re-run skips every id already present. Each file is written to a temporary
name, fsynced and renamed (``os.replace``): a sweep killed at any moment — SIGKILL
included — leaves complete files and, at worst, a stray ``.*.tmp`` that the next run
removes. Rows hold no timestamps or wall times and have a fixed column order and types,
so the same sweep gives the same bytes whatever the executor and the order of completion.

Read it with :func:`load_rows` or ``pandas.read_parquet(DIR / "runs")``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_bytes, atomic_write_text
from ..api import ScenarioError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

FORMAT = 1
RUNS = "runs"
MANIFEST = "sweep.json"
WALL = "wall_times.csv"

# Summary metrics of a run (all flows and link directions), in column order:
# (column, arrow type, description).
METRICS: tuple[tuple[str, str, str], ...] = (
    ("goodput_bps", "float64", "sum of the flows' goodputs (bit/s)"),
    ("bytes_delivered", "int64", "bytes delivered in order to the receivers (all flows)"),
    ("segments_sent", "int64", "data segments sent, retransmissions included (all flows)"),
    ("retransmitted_segments", "int64", "retransmitted segments (all flows)"),
    ("timeouts", "int64", "retransmission timeouts (all flows)"),
    ("fast_recoveries", "int64", "fast retransmit / recovery episodes (all flows)"),
    ("mean_rtt_s", "float64", "mean of the flows' mean RTTs (s)"),
    ("completion_time_s", "float64", "time the last flow finished (s); empty if any flow did not"),
    ("fairness_jain", "float64", "Jain's fairness index over the flows' goodputs"),
    ("utilization_max", "float64", "utilization of the busiest link direction (0..1)"),
    ("drops_queue", "int64", "packets dropped by full queues (all links)"),
    ("drops_loss", "int64", "packets dropped by loss models (all links)"),
    ("events", "int64", "simulator events"),
    ("n_flows", "int64", "number of flows"),
)
HEAD = ("run_id", "scenario_hash", "longpipe_version", "seed")


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def scenario_hash(sc: Mapping[str, Any]) -> str:
    """Hash of a resolved scenario, ignoring its ``seed`` key (the run's seed is separate)."""
    return digest(canonical_json({k: v for k, v in sc.items() if k != "seed"}))


def run_id(sc_hash: str, seed: int) -> str:
    return digest(f"{sc_hash}/{seed}")


def stable_result(data: dict[str, Any]) -> dict[str, Any]:
    """The result without its wall time (the only field that changes between identical runs)."""
    d = dict(data)
    if isinstance(d.get("sim"), dict):
        d["sim"] = {k: v for k, v in d["sim"].items() if k != "wall_s"}
    return d


def metrics(data: Mapping[str, Any]) -> dict[str, Any]:
    """The summary metrics of one result (see METRICS)."""
    flows = data.get("flows", [])
    links = data.get("links", [])
    rtts = [f["mean_rtt_s"] for f in flows if f.get("mean_rtt_s") is not None]
    done = [f.get("completion_time_s") for f in flows]
    return {
        "goodput_bps": float(sum(f["goodput_bps"] for f in flows)),
        "bytes_delivered": sum(int(f["bytes_delivered"]) for f in flows),
        "segments_sent": sum(int(f["segments_sent"]) for f in flows),
        "retransmitted_segments": sum(int(f["retransmitted_segments"]) for f in flows),
        "timeouts": sum(int(f["timeouts"]) for f in flows),
        "fast_recoveries": sum(int(f["fast_recoveries"]) for f in flows),
        "mean_rtt_s": float(sum(rtts) / len(rtts)) if rtts else None,
        "completion_time_s": float(max(done)) if done and all(d is not None for d in done) else None,
        "fairness_jain": None if data.get("fairness_jain") is None else float(data["fairness_jain"]),
        "utilization_max": float(max((lk["utilization"] for lk in links), default=0.0)),
        "drops_queue": sum(int(lk["drops_queue"]) for lk in links),
        "drops_loss": sum(int(lk["drops_loss"]) for lk in links),
        "events": int(data.get("sim", {}).get("events", 0)),
        "n_flows": len(flows),
    }


def make_row(rid: str, sc_hash: str, version: str, seed: int, params: Sequence[tuple[str, Any]],
             data: dict[str, Any]) -> dict[str, Any]:
    """One store row (a plain dict; column order as inserted)."""
    row: dict[str, Any] = {"run_id": rid, "scenario_hash": sc_hash, "longpipe_version": version, "seed": int(seed)}
    for k, v in params:
        row[k] = _param_type(v)[1]
    row.update(metrics(data))
    row.update(_user_metrics(data))
    row["result"] = json.dumps(stable_result(data), separators=(",", ":"))
    return row


# Per-user statistics (longpipe.workload.USER_METRICS): extra columns after the metrics
# above, so that "how many users get 2 Mbit/s" or "page load p95" needs no pass over the
# stored results. Additive: a store written before them is read from its results.
def _user_metrics(data: Mapping[str, Any]) -> dict[str, Any]:
    from ..workload import user_stats

    return user_stats(data)


def _user_metric_types() -> dict[str, str]:
    from ..workload import USER_METRICS

    return {m: t for m, t, _ in USER_METRICS}


def _param_type(v: Any) -> tuple[str, Any]:
    """(arrow type name, stored value) of a grid parameter."""
    if isinstance(v, bool):
        return "bool", v
    if isinstance(v, int):
        return "int64", v
    if isinstance(v, float):
        return "float64", v
    if isinstance(v, str):
        return "string", v
    return "string", canonical_json(v)  # tables and lists: their JSON text


def _table(row: Mapping[str, Any]) -> pa.Table:
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    fixed = {"run_id": "string", "scenario_hash": "string", "longpipe_version": "string", "seed": "int64",
             "result": "string", **{m: t for m, t, _ in METRICS}, **_user_metric_types()}
    fields, arrays = [], []
    for k, v in row.items():
        if k in fixed:
            t = fixed[k]
        else:
            t, v = _param_type(v)
        fields.append(pa.field(k, types[t]))
        arrays.append(pa.array([v], type=types[t]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def row_bytes(row: Mapping[str, Any]) -> bytes:
    """One row as Parquet bytes: fixed writer options, no timestamps."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(_table(row), buf, compression="zstd", compression_level=3, store_schema=True,
                   write_statistics=False)
    return buf.getvalue()


class Store:
    """A store directory (see the module doc)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.runs = self.root / RUNS

    def exists(self) -> bool:
        return (self.root / MANIFEST).exists() or self.runs.is_dir()

    # -- manifest ------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        p = self.root / MANIFEST
        if not p.exists():
            return None
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise ScenarioError(str(p), "(file)", f"not a sweep manifest: {e}") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ScenarioError(str(p), "format", f"expected a longpipe sweep manifest of format {FORMAT}")
        return d

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        atomic_write_text(self.root / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    # -- runs ----------------------------------------------------------------------
    def clean(self) -> None:
        """Removes temporary files left by a killed writer."""
        if self.runs.is_dir():
            for p in self.runs.glob(".*.tmp"):
                p.unlink(missing_ok=True)

    def done(self) -> set[str]:
        """Run ids already in the store."""
        if not self.runs.is_dir():
            return set()
        return {p.stem for p in self.runs.glob("*.parquet")}

    def path(self, rid: str) -> Path:
        return self.runs / f"{rid}.parquet"

    def write(self, row: Mapping[str, Any], wall_s: float | None = None) -> None:
        atomic_write_bytes(self.path(str(row["run_id"])), row_bytes(row))
        if wall_s is not None:
            with (self.root / WALL).open("a", newline="") as f:
                csv.writer(f).writerow([row["run_id"], f"{wall_s:.6f}"])

    def read(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts (all, or those of ``ids`` that are present)."""
        import pyarrow.parquet as pq

        wanted = sorted(self.done() if ids is None else set(ids) & self.done())
        rows = []
        for rid in wanted:
            t = pq.read_table(self.path(rid))
            rows.append({k: v[0] for k, v in t.to_pydict().items()})
        return rows

    def frame(self) -> pd.DataFrame:
        """All rows as a DataFrame, sorted by run id (parameters of mixed types as text)."""
        import pandas as pd

        rows = self.read()
        df = pd.DataFrame(rows)
        return df

    def wall_times(self) -> dict[str, float]:
        out: dict[str, float] = {}
        p = self.root / WALL
        if not p.exists():
            return out
        with p.open(newline="") as f:
            for rec in csv.reader(f):
                if len(rec) == 2:
                    try:
                        out[rec[0]] = float(rec[1])
                    except ValueError:
                        continue  # a line cut short by a kill
        return out
