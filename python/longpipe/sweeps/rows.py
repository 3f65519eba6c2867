"""A sweep's stored row: its columns (run id, scenario hash, version, seed, the grid
parameters, the summary metrics, the per-user statistics and the whole result), how a
result becomes one, and the hashes that name runs. The files that hold rows are in
:mod:`.storefiles`, the store directory in :mod:`.store`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

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


def param_names(row: Mapping[str, Any]) -> list[str]:
    """The grid parameters of a row (its columns between HEAD and METRICS), in order."""
    fixed = {*HEAD, *(m for m, _, _ in METRICS), *_user_metric_types(), "result"}
    return [k for k in row if k not in fixed]


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
