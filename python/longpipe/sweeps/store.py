"""The results store: a Parquet dataset with one file (one row) per finished run.

Layout of a store directory::

    sweep.json            what was asked: the base scenario, its hash, the grid axes, the seeds
    runs/<run_id>.parquet one row: run id, scenario hash, version, seed, the grid
                          parameters, the summary metrics and the whole result (JSON)
    wall_times.csv        run_id,wall_s (not part of the rows: wall time is not deterministic)
    .lock                 serialises updates of sweep.json between concurrent sweeps

A run's id is a hash of its resolved scenario and its seed, so a point is stored at most
once, and a re-run skips every id already present. Each file is written to a temporary
name (holding the writer's process id), fsynced and renamed (``os.replace``): a sweep
killed at any moment (SIGKILL included) leaves complete files and, at worst, a stray
``.*.tmp`` that a later run removes once its writer is gone. Rows hold no timestamps or
wall times and have a fixed column order and types, so the same sweep gives the same
bytes whatever the executor and the order of completion. Seeds are 64-bit unsigned; the
``seed`` column is a signed 64-bit integer, so seeds from 2^63 are stored as negatives
(seed - 2^64) and read back as they were.

One owner format: ``sweep.json`` says which scenario and which grid keys a store holds;
a sweep (or ``run --seeds``) over other keys is refused, never merged into it, so rows of
different variants are never pooled. A reader checks every file it reads (a regular
file of bounded size, Parquet, the columns and types of :func:`row_bytes`, the run id
of its name): a damaged one is an error naming it (one line), never a traceback, and a
resumed sweep runs it again.

Read it with :func:`longpipe.sweeps.load` or ``Store(DIR).read()`` (checked), or
``pandas.read_parquet(DIR / "runs")`` (not checked).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
LOCK = ".lock"

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


def _table(row: Mapping[str, Any]) -> pa.Table:
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    fixed = {"run_id": "string", "scenario_hash": "string", "longpipe_version": "string", "seed": "int64",
             "result": "string", **{m: t for m, t, _ in METRICS}, **_user_metric_types()}
    fields, arrays = [], []
    for k, v in row.items():
        if k in fixed:
            t = fixed[k]
            if k == "seed":  # a 64-bit seed in a signed column: 2^63.. as negatives
                v = int(v) - 2**64 if int(v) >= 2**63 else int(v)
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


#: The largest run file read (a run of 10^6 flows stores a result of some tens of MB).
MAX_RUN_BYTES = 256 * 1024 * 1024
#: The largest sweep.json read (it holds the scenario with the trace files it names).
MAX_MANIFEST_BYTES = 1024 * 1024 * 1024
_U64_MAX = 2**64 - 1


class RunFileError(Exception):
    """A run file that is not a row longpipe wrote (its message says why);
    ``replaceable``: a regular file, which a resumed sweep replaces."""

    def __init__(self, message: str, replaceable: bool = True):
        super().__init__(message)
        self.replaceable = replaceable


def check_table(t: pa.Table, rid: str) -> dict[str, Any]:
    """The row of a run file's table, or RunFileError: one row; the columns HEAD, then
    parameters, then METRICS, then (in stores written since) the per-user columns, then
    ``result``, with the types :func:`_table` writes; a
    run id that is the file's name and the hash of its scenario hash and seed."""
    import pyarrow as pa

    if t.num_rows != 1:
        raise RunFileError(f"holds {t.num_rows} rows, expected 1")
    names = list(t.schema.names)
    # the per-user columns are additive: a store written before them has none
    users = tuple(_user_metric_types())
    body = names[:-1]
    if tuple(body[-len(users):]) == users:
        body = body[:-len(users)]
    n_head, n_metrics = len(HEAD), len(METRICS)
    if len(body) < n_head + n_metrics or tuple(names[:n_head]) != HEAD or names[-1] != "result" \
            or tuple(body[-n_metrics:]) != tuple(m for m, _, _ in METRICS):
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise RunFileError(f"has the columns {shown}; not a longpipe run")
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    want = {"run_id": "string", "scenario_hash": "string", "longpipe_version": "string", "seed": "int64",
            "result": "string", **{m: ty for m, ty, _ in METRICS}, **_user_metric_types()}
    for f in t.schema:
        if f.name in want:
            ok = f.type == types[want[f.name]]
        else:
            ok = f.type in types.values()
        if not ok:
            raise RunFileError(f"column {f.name!r} has type {f.type}")
    row = {k: v[0] for k, v in t.to_pydict().items()}
    for k in ("run_id", "scenario_hash", "longpipe_version", "seed", "result"):
        if row[k] is None:
            raise RunFileError(f"column {k!r} is empty")
    if row["run_id"] != rid:
        raise RunFileError(f"holds run {row['run_id']!r}, not the run of its name")
    row["seed"] = int(row["seed"]) % 2**64  # stored signed (see _table)
    if run_id(str(row["scenario_hash"]), row["seed"]) != rid:
        raise RunFileError("its run id is not the hash of its scenario hash and seed")
    return row


def read_run_file(path: Path) -> dict[str, Any]:
    """The row of one run file (checked, see :func:`check_table`), or RunFileError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .._io import NotReadable, non_regular, read_regular_file

    try:
        kind = non_regular(path)
        if kind is not None:
            raise RunFileError(f"is {kind}, not a run file longpipe wrote", replaceable=False)
        raw = read_regular_file(path, MAX_RUN_BYTES)
    except NotReadable as e:
        raise RunFileError(str(e), replaceable=e.kind != "special") from None
    except OSError as e:
        raise RunFileError(f"cannot read: {e.strerror or e}", replaceable=False) from None
    try:
        # one row: no thread pools (Arrow's pool threads alive at interpreter exit can
        # abort the process, apache/arrow#34314)
        t = pq.read_table(pa.BufferReader(raw), use_threads=False, pre_buffer=False)
    except Exception as e:  # pyarrow raises many kinds (ArrowInvalid, OSError, ...) on damaged bytes
        raise RunFileError(f"not a readable Parquet file ({_first_sentence(e)})") from None
    return check_table(t, path.name[: -len(".parquet")])


def _first_sentence(e: BaseException) -> str:
    """The start of an exception's message, short and on one line (never file content
    beyond what the message itself quotes)."""
    text = str(e).split("\n")[0].split(". ")[0] or type(e).__name__
    return text if len(text) <= 100 else text[:100] + "..."


def _need(cond: bool, where: str, path: str, what: str) -> None:
    if not cond:
        raise ScenarioError(where, path, what)


def check_manifest(d: Any, where: str) -> dict[str, Any]:
    """A sweep.json document, checked: ScenarioError naming the file and the field."""
    from .grid import SCALES

    _need(isinstance(d, dict), where, "(top level)", "expected a JSON object (a longpipe sweep manifest)")
    _need(d.get("format") == FORMAT, where, "format", f"expected a longpipe sweep manifest of format {FORMAT}")
    _need(isinstance(d.get("scenario"), dict), where, "scenario", "expected the scenario as a JSON object")
    h = d.get("scenario_hash")
    _need(isinstance(h, str) and len(h) == 16 and all(c in "0123456789abcdef" for c in h), where,
          "scenario_hash", "expected 16 hexadecimal digits")
    _need(d.get("source") is None or isinstance(d.get("source"), str), where, "source", "expected a file name")
    _need(isinstance(d.get("longpipe_version", ""), str), where, "longpipe_version", "expected a version string")
    axes = d.get("axes")
    _need(isinstance(axes, list), where, "axes", "expected a list of grid axes")
    keys: set[str] = set()
    for i, a in enumerate(axes):
        _need(isinstance(a, dict), where, f"axes[{i}]", "expected a JSON object with key, values and scale")
        _need(isinstance(a.get("key"), str) and a["key"] not in keys and a["key"] not in HEAD, where,
              f"axes[{i}].key", "expected a scenario key such as flow.tcp, each key once")
        keys.add(a["key"])
        _need(isinstance(a.get("values"), list) and len(a["values"]) > 0, where, f"axes[{i}].values",
              "expected a non-empty list")
        _need(a.get("scale", "list") in SCALES, where, f"axes[{i}].scale", f"expected one of {', '.join(SCALES)}")
    seeds = d.get("seeds")
    _need(isinstance(seeds, list) and len(seeds) > 0, where, "seeds", "expected a non-empty list of seeds")
    for i, x in enumerate(seeds):
        _need(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= _U64_MAX, where, f"seeds[{i}]",
              f"expected an integer from 0 to {_U64_MAX}")
    checked: dict[str, Any] = d
    return checked


class Store:
    """A store directory (see the module doc)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.runs = self.root / RUNS

    def exists(self) -> bool:
        return os.path.lexists(self.root / MANIFEST) or self.runs.is_dir()

    # -- manifest ------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        """sweep.json, checked (ScenarioError naming the field); None if there is none."""
        from .._io import NotReadable, read_regular_file

        p = self.root / MANIFEST
        if not os.path.lexists(p):
            return None
        try:
            raw = read_regular_file(p, MAX_MANIFEST_BYTES)
            d = json.loads(raw.decode("utf-8"))
        except NotReadable as e:
            raise ScenarioError(str(p), "(file)", f"{e}; expected a longpipe sweep manifest") from None
        except (ValueError, RecursionError) as e:
            raise ScenarioError(str(p), "(file)", f"not a sweep manifest (not JSON: {_first_sentence(e)})") from None
        return check_manifest(d, str(p))

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        atomic_write_text(self.root / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Holds the store's lock (an exclusive flock on DIR/.lock, created as needed):
        concurrent sweeps into one store update sweep.json one after the other."""
        import fcntl

        self.root.mkdir(parents=True, exist_ok=True)
        p = self.root / LOCK
        try:
            fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
        except OSError as e:
            raise ScenarioError(str(p), "(file)", f"cannot open the store's lock file: {e.strerror or e}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ScenarioError(str(p), "(file)", "the store's lock file is not a regular file")
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def claim(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Records a sweep (or ``run --seeds``) in the store, under its lock: a new store
        gets ``manifest``; an existing one must hold the same scenario and the same grid
        keys, and gets the union of its values and seeds. Returns what was written.
        ScenarioError (nothing written) for a store of another scenario or grid."""
        from .grid import Axis, canonical

        with self.lock():
            old = self.read_manifest()
            if old is None and self.runs.is_dir() and any(self.runs.iterdir()):
                raise ScenarioError(str(self.root), "runs", "has runs but no sweep.json: not a sweep store; "
                                    "use another --out")
            if old is None:
                new = dict(manifest)
            else:
                if old["scenario_hash"] != manifest["scenario_hash"]:
                    raise ScenarioError(str(self.root), "scenario", "holds a sweep of another scenario (or other "
                                        "--set values); use another --out")
                old_axes = [Axis.from_json(a) for a in old["axes"]]
                axes = [Axis.from_json(a) for a in manifest["axes"]]
                if [a.key for a in old_axes] != [a.key for a in axes]:
                    def keys(ax: list[Axis]) -> str:
                        return ", ".join(a.key for a in ax) or "no grid keys"

                    raise ScenarioError(str(self.root), "axes", f"holds a sweep over {keys(old_axes)}; this one is "
                                        f"over {keys(axes)}: use another --out (a store holds one grid, so that "
                                        "different variants are never pooled)")
                merged = []
                for o, n in zip(old_axes, axes):
                    seen = {canonical(v) for v in o.values}
                    merged.append(Axis(o.key, o.values + tuple(v for v in n.values if canonical(v) not in seen),
                                       o.scale if o.scale == n.scale else "list"))
                new = {**manifest, "axes": [a.to_json() for a in merged],
                       "seeds": sorted(set(old["seeds"]) | set(manifest["seeds"]))}
            self.write_manifest(new)
            return new

    # -- runs ----------------------------------------------------------------------
    def clean(self) -> None:
        """Removes temporary files left by killed writers (whose process is gone)."""
        if not self.runs.is_dir():
            return
        import re

        for p in self.runs.glob(".*.tmp"):
            m = re.search(r"\.pid(\d+)\.", p.name)
            if m is not None and _alive(int(m[1])):
                continue  # another sweep writing into this store
            p.unlink(missing_ok=True)

    def entries(self) -> dict[str, Path]:
        """Every ``runs/*.parquet`` entry (of any kind) by run id."""
        if not self.runs.is_dir():
            return {}
        return {e.name[: -len(".parquet")]: Path(e.path) for e in os.scandir(self.runs)
                if e.name.endswith(".parquet") and not e.name.startswith(".")}

    def done(self) -> set[str]:
        """Run ids with a file in the store (not checked: see :meth:`load`)."""
        return set(self.entries())

    def path(self, rid: str) -> Path:
        return self.runs / f"{rid}.parquet"

    def write(self, row: Mapping[str, Any], wall_s: float | None = None) -> None:
        atomic_write_bytes(self.path(str(row["run_id"])), row_bytes(row))
        if wall_s is not None:
            try:
                _append_line(self.root / WALL, f"{row['run_id']},{wall_s:.6f}\r\n")
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENXIO):  # a symbolic link, a FIFO without reader
                    return
                raise

    def load(self, ids: Iterable[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """The stored rows of ``ids`` that are readable, and why each other stored one is
        not ({run id: reason}); ids without a file are in neither. A resumed sweep runs
        the unreadable ones again (their files are replaced)."""
        have = self.entries()
        rows, bad = {}, {}
        for rid in sorted(set(ids) & set(have)):
            try:
                rows[rid] = read_run_file(have[rid])
            except RunFileError as e:
                bad[rid] = str(e)
        return rows, bad

    def read(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts, sorted by run id (all, or those of ``ids`` that are present);
        ScenarioError naming the first file that is not a readable run."""
        have = self.entries()
        out = []
        for rid in sorted(set(have) if ids is None else set(ids) & set(have)):
            try:
                out.append(read_run_file(have[rid]))
            except RunFileError as e:
                fix = "delete it, or run the sweep again to replace it" if e.replaceable else "remove it"
                raise ScenarioError(str(have[rid]), "(file)", f"{e}; {fix}") from None
        return out

    def frame(self) -> pd.DataFrame:
        """All rows as a DataFrame, sorted by run id (parameters of mixed types as text)."""
        import pandas as pd

        return pd.DataFrame(self.read())

    def wall_times(self) -> dict[str, float]:
        from .._io import NotReadable, read_regular_file

        out: dict[str, float] = {}
        try:
            text = read_regular_file(self.root / WALL, MAX_RUN_BYTES).decode("utf-8", "replace")
        except NotReadable:
            return out
        for rec in csv.reader(io.StringIO(text)):
            if len(rec) == 2:
                try:
                    out[rec[0]] = float(rec[1])
                except ValueError:
                    continue  # a line cut short by a kill
        return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _append_line(path: Path, line: str) -> None:
    """Appends one line to a regular file (created as needed); a FIFO or device in its
    place is left alone (the wall times are a convenience, never worth a hang)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, line.encode())
    finally:
        os.close(fd)
