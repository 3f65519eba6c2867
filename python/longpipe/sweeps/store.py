"""The results store: a Parquet dataset of finished runs, written through a journal.

Layout of a store directory::

    sweep.json                  what was asked: the base scenario, its hash, the grid axes, the seeds
    runs/part-<hash>.parquet    rows (run id, scenario hash, version, seed, the grid parameters,
                                the summary metrics and the whole result as JSON), sorted by run id
    runs/_journal-pid<P>-<n>.jsonl  the runs a sweep finished since its last compaction
    runs/<run_id>.parquet       one row (format 1: stores written before the journal; still read)
    wall_times.csv              run_id,wall_s (not part of the rows: wall time is not deterministic)
    .lock                       serialises updates of sweep.json and compactions

A run's id is a hash of its resolved scenario and its seed, so a point is stored at most
once, and a re-run skips every id already present.

Writing (format 2). The sweep's process appends each finished run to its own journal, one
line a run: ``<16 hex digits of SHA-256 of the payload> <payload>\n``, the payload being
the row as JSON (key order = column order). One ``write`` call a line: once it returns,
the run survives the death of the sweep at any moment (SIGKILL included: the bytes are
in the kernel). The journal is ``fdatasync``ed at most once a second and when the sweep
ends (:data:`SYNC_INTERVAL_S`), so a power failure or a kernel crash loses at most about
the last second of runs; a record cut short that way fails its checksum or lacks its
newline, and its run is run again. When the sweep ends, :meth:`Store.compact` (under the
lock) folds its journal, the journals of writers that are gone and every part into
canonical parts: rows grouped by column types, sorted by run id, at most
:data:`PART_RESULT_BYTES` of result text a part, named by the hash of their run ids,
each written to a temporary, fsynced and renamed; only then are the files it replaces
removed (a kill in between leaves a run twice, identical, read once). So the same sweep
gives the same bytes whatever the executor, the order of completion and the
interruptions on the way. A journal of a sweep still running is left to that sweep.

The previous format (one Parquet file a run, written and fsynced one by one) cost about
2 ms of CPU a run in the writer; a journal line costs a few tens of microseconds (see
BENCHMARKS.md, "Sweep store").

Seeds are 64-bit unsigned; the Parquet ``seed`` column is a signed 64-bit integer, so
seeds from 2^63 are stored there as negatives (seed - 2^64) and read back as they were.

One owner format: ``sweep.json`` says which scenario and which grid keys a store holds;
a sweep (or ``run --seeds``) over other keys is refused, never merged into it, so rows of
different variants are never pooled. A reader checks every file it reads (a regular
file of bounded size; a part: Parquet with the columns and types of :func:`part_table`,
rows sorted, each run id the hash of its scenario hash and seed, the name the hash of
its run ids; a journal: every complete line's checksum and row): a damaged one is an
error naming it (one line), never a traceback, and a resumed sweep runs its runs again
and replaces it.

Read it with :func:`longpipe.sweeps.load` or ``Store(DIR).read()`` (checked), or
``pandas.read_parquet(DIR / "runs")`` (not checked; the runs of an unfinished sweep
are still in its journal, which pandas does not read).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_bytes, atomic_write_text
from ..api import ScenarioError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

#: The manifest format written; 1 (runs one file each) is read too. A longpipe that
#: knows only format 1 refuses a format 2 store in one line instead of misreading it.
FORMAT = 2
FORMATS = (1, 2)
RUNS = "runs"
PART = "part-"
JOURNAL = "_journal-"
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


_ARROW_TYPES = ("string", "int64", "float64", "bool")
_I64 = 2**63


def _fixed_types() -> dict[str, str]:
    """The arrow type of every column that is not a grid parameter."""
    return {"run_id": "string", "scenario_hash": "string", "longpipe_version": "string", "seed": "int64",
            "result": "string", **{m: t for m, t, _ in METRICS}, **_user_metric_types()}


def _signature(row: Mapping[str, Any], fixed: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """A row's columns and arrow types: rows of one signature share a part."""
    return tuple((k, fixed[k] if k in fixed else _param_type(v)[0]) for k, v in row.items())


def part_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows of one signature (see :func:`_signature`) as an Arrow table, in the given order."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    fixed = _fixed_types()
    sig = _signature(rows[0], fixed)
    arrays = []
    for k, t in sig:
        if k == "seed":  # a 64-bit seed in a signed column: 2^63.. as negatives
            vals = [int(r[k]) - 2**64 if int(r[k]) >= _I64 else int(r[k]) for r in rows]
        elif k in fixed:
            vals = [r[k] for r in rows]
        else:
            vals = [_param_type(r[k])[1] for r in rows]
        arrays.append(pa.array(vals, type=types[t]))
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(k, types[t]) for k, t in sig]))


def part_bytes(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """Rows as Parquet bytes: fixed writer options, no timestamps (one row gives the bytes
    of a format 1 run file)."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(part_table(rows), buf, compression="zstd", compression_level=3, store_schema=True,
                   write_statistics=False)
    return buf.getvalue()


def part_name(ids: Sequence[str]) -> str:
    """The file name of a part holding the runs ``ids`` (sorted)."""
    return f"{PART}{digest(' '.join(ids))}.parquet"


def parts_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Rows as canonical parts {file name: rows}: grouped by signature, sorted by run id,
    a new part whenever the next row's result would pass :data:`PART_RESULT_BYTES`."""
    fixed = _fixed_types()
    groups: dict[tuple[tuple[str, str], ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(_signature(r, fixed), []).append(r)
    out: dict[str, list[Mapping[str, Any]]] = {}
    for g in groups.values():
        g.sort(key=lambda r: str(r["run_id"]))
        chunk: list[Mapping[str, Any]] = []
        size = 0
        for r in g:
            n = len(r["result"])
            if chunk and size + n > PART_RESULT_BYTES:
                out[part_name([str(x["run_id"]) for x in chunk])] = chunk
                chunk, size = [], 0
            chunk.append(r)
            size += n
        out[part_name([str(x["run_id"]) for x in chunk])] = chunk
    return out


def journal_line(row: Mapping[str, Any]) -> bytes:
    """One journal record: ``<16 hex digits of SHA-256 of the payload> <payload>\\n``, the
    payload the row as JSON (ASCII, no line breaks; key order = column order)."""
    payload = json.dumps(row, separators=(",", ":"))
    return f"{digest(payload)} {payload}\n".encode("ascii")


#: The largest run file read (a run of 10^6 flows stores a result of some tens of MB).
MAX_RUN_BYTES = 256 * 1024 * 1024
#: Result text per part (uncompressed) before the next part starts: parts stay far below
#: MAX_RUN_BYTES, so each is read in one piece.
PART_RESULT_BYTES = 64 * 1024 * 1024
#: A journal is closed and the next run starts a new one past this size.
JOURNAL_ROTATE_BYTES = 64 * 1024 * 1024
#: The largest journal read: the rotation size plus one run's record.
MAX_JOURNAL_BYTES = JOURNAL_ROTATE_BYTES + MAX_RUN_BYTES
#: A journal is fdatasynced at most this often (seconds) and when its sweep ends: what a
#: power failure or kernel crash can cost (the runs are run again); a killed sweep loses
#: nothing written (our choice: one sync a run cost more than the run on small sweeps).
SYNC_INTERVAL_S = 1.0
#: The largest sweep.json read (it holds the scenario with the trace files it names).
MAX_MANIFEST_BYTES = 1024 * 1024 * 1024
_U64_MAX = 2**64 - 1


class RunFileError(Exception):
    """A store file that is not one longpipe wrote (its message says why);
    ``replaceable``: a regular file, which a resumed sweep replaces."""

    def __init__(self, message: str, replaceable: bool = True):
        super().__init__(message)
        self.replaceable = replaceable


def _check_names(names: Sequence[str]) -> None:
    """The columns HEAD, then parameters, then METRICS, then (in stores written since) the
    per-user columns, then ``result``."""
    users = tuple(_user_metric_types())
    body = list(names[:-1])
    if tuple(body[-len(users):]) == users:
        body = body[:-len(users)]
    n_head, n_metrics = len(HEAD), len(METRICS)
    if len(body) < n_head + n_metrics or tuple(names[:n_head]) != HEAD or not names or names[-1] != "result" \
            or tuple(body[-n_metrics:]) != tuple(m for m, _, _ in METRICS):
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise RunFileError(f"has the columns {shown}; not a longpipe run")


def _check_identity(row: dict[str, Any]) -> None:
    for k in ("run_id", "scenario_hash", "longpipe_version", "seed", "result"):
        if row[k] is None:
            raise RunFileError(f"column {k!r} is empty")
    if run_id(str(row["scenario_hash"]), row["seed"]) != row["run_id"]:
        raise RunFileError(f"run {str(row['run_id'])[:16]!r}: its id is not the hash of its scenario hash and seed")


def table_rows(t: pa.Table) -> list[dict[str, Any]]:
    """The rows of a run file's or part's table, checked (RunFileError): the columns of
    :func:`_check_names` with the types :func:`part_table` writes; each run id the hash of
    its scenario hash and seed. Seeds as they were (unsigned)."""
    import pyarrow as pa

    _check_names(list(t.schema.names))
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    want = _fixed_types()
    for f in t.schema:
        ok = f.type == types[want[f.name]] if f.name in want else f.type in types.values()
        if not ok:
            raise RunFileError(f"column {f.name!r} has type {f.type}")
    rows: list[dict[str, Any]] = t.to_pylist()
    for row in rows:
        if row["seed"] is not None:
            row["seed"] = int(row["seed"]) % 2**64  # stored signed (see part_table)
        _check_identity(row)
    return rows


def check_table(t: pa.Table, rid: str) -> dict[str, Any]:
    """The row of a format 1 run file's table (one row, the run of its name), or RunFileError."""
    if t.num_rows != 1:
        raise RunFileError(f"holds {t.num_rows} rows, expected 1")
    row = table_rows(t)[0]
    if row["run_id"] != rid:
        raise RunFileError(f"holds run {row['run_id']!r}, not the run of its name")
    return row


def check_row(row: Any) -> dict[str, Any]:
    """A row decoded from a journal, checked as :func:`table_rows` checks a table's: the
    columns in order, each value of its column's type (integers within 64 bits)."""
    if not isinstance(row, dict) or not all(isinstance(k, str) for k in row):
        raise RunFileError("a record that is not a row")
    _check_names(list(row))
    want = _fixed_types()
    for k, v in row.items():
        t = want.get(k)
        if v is None:
            ok = True
        elif t is None:  # a grid parameter
            ok = isinstance(v, (bool, str, float)) or (isinstance(v, int) and -_I64 <= v < _I64)
        elif t == "string":
            ok = isinstance(v, str)
        elif t == "float64":
            ok = isinstance(v, float)
        elif k == "seed":
            ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _U64_MAX
        else:
            ok = isinstance(v, int) and not isinstance(v, bool) and -_I64 <= v < _I64
        if not ok:
            raise RunFileError(f"column {k!r} holds a {type(v).__name__}, not a {t or 'parameter'}")
    _check_identity(row)
    return row


def _read_bytes(path: Path, limit: int) -> bytes:
    from .._io import NotReadable, non_regular, read_regular_file

    try:
        kind = non_regular(path)
        if kind is not None:
            raise RunFileError(f"is {kind}, not a file longpipe wrote", replaceable=False)
        return read_regular_file(path, limit)
    except NotReadable as e:
        raise RunFileError(str(e), replaceable=e.kind != "special") from None
    except OSError as e:
        raise RunFileError(f"cannot read: {e.strerror or e}", replaceable=False) from None


def _parquet(raw: bytes) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # no thread pools (Arrow's pool threads alive at interpreter exit can abort the
        # process, apache/arrow#34314)
        return pq.read_table(pa.BufferReader(raw), use_threads=False, pre_buffer=False)
    except Exception as e:  # pyarrow raises many kinds (ArrowInvalid, OSError, ...) on damaged bytes
        raise RunFileError(f"not a readable Parquet file ({_first_sentence(e)})") from None


def read_run_file(path: Path) -> dict[str, Any]:
    """The row of one format 1 run file (checked, see :func:`check_table`), or RunFileError."""
    raw = _read_bytes(path, MAX_RUN_BYTES)
    return check_table(_parquet(raw), path.name[: -len(".parquet")])


def read_part(path: Path) -> list[dict[str, Any]]:
    """The rows of a part (checked, see :func:`table_rows`; at least one, sorted by run
    id, the file named by their hash), or RunFileError."""
    rows = table_rows(_parquet(_read_bytes(path, MAX_RUN_BYTES)))
    ids = [str(r["run_id"]) for r in rows]
    if not ids:
        raise RunFileError("holds no rows")
    if any(a >= b for a, b in zip(ids, ids[1:])):
        raise RunFileError("its rows are not sorted by run id, each once")
    if part_name(ids) != path.name:
        raise RunFileError("its name is not the hash of the runs it holds (another file's content?)")
    return rows


def read_journal(path: Path) -> tuple[list[dict[str, Any]], RunFileError | None]:
    """The rows of a journal's complete, intact records, and the first damaged record
    (RunFileError, None if there is none). What follows the last line break is a record
    being written or cut short by a crash: not a record yet, not an error. RunFileError
    if the file cannot be read at all."""
    lines = _read_bytes(path, MAX_JOURNAL_BYTES).split(b"\n")
    lines.pop()
    rows, err = [], None
    for i, ln in enumerate(lines, 1):
        try:
            if len(ln) < 18 or ln[16:17] != b" ":
                raise RunFileError("not a journal record")
            payload = ln[17:]
            if hashlib.sha256(payload).hexdigest()[:16].encode("ascii") != ln[:16]:
                raise RunFileError("a damaged record (its checksum does not match)")
            try:
                row = json.loads(payload)
            except (ValueError, RecursionError) as e:
                raise RunFileError(f"not JSON ({_first_sentence(e)})") from None
            rows.append(check_row(row))
        except RunFileError as e:
            err = err or RunFileError(f"line {i}: {e}")
    return rows, err


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
    _need(d.get("format") in FORMATS and not isinstance(d.get("format"), bool), where, "format",
          f"expected a longpipe sweep manifest of format {' or '.join(map(str, FORMATS))}")
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


@dataclass
class Listing:
    """The files of a store's ``runs/`` that hold rows: format 1 run files by run id,
    parts and journals, each sorted by name."""

    singles: dict[str, Path] = field(default_factory=dict)
    parts: list[Path] = field(default_factory=list)
    journals: list[Path] = field(default_factory=list)

    def files(self) -> list[Path]:
        return [*self.singles.values(), *self.parts, *self.journals]


@dataclass
class Scan:
    """What :meth:`Store.scan` read: rows by run id, the file each came from, and the
    files that could not be read (or, journals, had a damaged record) with the reason."""

    listing: Listing
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    where: dict[str, Path] = field(default_factory=dict)
    bad: dict[Path, RunFileError] = field(default_factory=dict)


class Store:
    """A store directory (see the module doc)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.runs = self.root / RUNS
        self._where: dict[str, Path] = {}
        self._fd: int | None = None  # this process's journal, open for appending
        self._journal: Path | None = None
        self._size = 0
        self._synced = 0.0
        self._mine: set[Path] = set()  # the journals this process wrote

    def exists(self) -> bool:
        return os.path.lexists(self.root / MANIFEST) or self.runs.is_dir()

    def has_runs(self) -> bool:
        return bool(self.listing().files())

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
            if old is None and self.has_runs():
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

    def listing(self) -> Listing:
        """The files of ``runs/`` that hold rows (of any file kind), by kind, sorted."""
        out = Listing()
        if not self.runs.is_dir():
            return out
        for name in sorted(os.listdir(self.runs)):
            p = self.runs / name
            if name.startswith(JOURNAL) and name.endswith(".jsonl"):
                out.journals.append(p)
            elif name.startswith(".") or not name.endswith(".parquet"):
                continue
            elif name.startswith(PART):
                out.parts.append(p)
            else:
                out.singles[name[: -len(".parquet")]] = p
        return out

    def foreign(self) -> list[tuple[Path, str]]:
        """Entries of ``runs/`` named as store files that are not regular files (a
        directory, FIFO, device, symbolic link): never replaced or removed by longpipe."""
        from .._io import non_regular

        out = []
        for p in self.listing().files():
            kind = non_regular(p)
            if kind is not None:
                out.append((p, kind))
        return out

    def scan(self) -> Scan:
        """Every row stored (format 1 files, then parts, then journals; a run found twice is
        taken from the first), where each came from, and every file that could not be read.
        A file removed while it is read (a concurrent compaction) starts the scan again."""
        for _ in range(8):
            ls = self.listing()
            sc = Scan(ls)
            vanished = False
            for p in ls.files():
                try:
                    if p in ls.journals:
                        rows, err = read_journal(p)
                        if err is not None:
                            sc.bad[p] = err
                    elif p.name.startswith(PART):
                        rows = read_part(p)
                    else:
                        rows = [read_run_file(p)]
                except RunFileError as e:
                    if not os.path.lexists(p):
                        vanished = True
                        break
                    sc.bad[p] = e
                    continue
                for r in rows:
                    rid = str(r["run_id"])
                    if rid not in sc.rows:
                        sc.rows[rid] = r
                        sc.where[rid] = p
            if not vanished:
                return sc
        raise ScenarioError(str(self.runs), "(directory)", "its files keep changing while they are read")

    def load(self, ids: Iterable[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """The stored rows of ``ids`` that are readable, and why each file that is not
        readable is not ({file: reason}). A resumed sweep runs again what they held."""
        sc = self.scan()
        self._where = sc.where
        rows = {rid: sc.rows[rid] for rid in sorted(set(ids) & set(sc.rows))}
        return rows, {str(p): str(e) for p, e in sc.bad.items()}

    def read(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts, sorted by run id (all, or those of ``ids`` that are present);
        ScenarioError naming the first file that cannot be read (or has a damaged record)."""
        sc = self.scan()
        self._where = sc.where
        for p, e in sorted(sc.bad.items()):
            fix = "delete it, or run the sweep again to replace it" if e.replaceable else "remove it"
            raise ScenarioError(str(p), "(file)", f"{e}; {fix}")
        return [sc.rows[rid] for rid in sorted(set(sc.rows) if ids is None else set(ids) & set(sc.rows))]

    def where(self, rid: str) -> Path:
        """The file the last :meth:`read` or :meth:`load` took run ``rid`` from."""
        return self._where.get(rid, self.runs)

    def frame(self) -> pd.DataFrame:
        """All rows as a DataFrame, sorted by run id (parameters of mixed types as text)."""
        import pandas as pd

        return pd.DataFrame(self.read())

    def write(self, row: Mapping[str, Any], wall_s: float | None = None) -> None:
        """Appends a finished run to this process's journal (see the module doc)."""
        import time

        line = journal_line(row)
        if self._fd is None:
            self._open_journal()
        assert self._fd is not None and self._journal is not None
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]
            now = time.monotonic()
            if now - self._synced >= SYNC_INTERVAL_S:
                os.fdatasync(self._fd)
                self._synced = now
        except OSError as e:  # a full disk: name the file
            raise OSError(e.errno, e.strerror, str(self._journal)) from None
        self._size += len(line)
        if self._size >= JOURNAL_ROTATE_BYTES:
            self.close_journal()
        if wall_s is not None:
            try:
                _append_line(self.root / WALL, f"{row['run_id']},{wall_s:.6f}\r\n")
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENXIO):  # a symbolic link, a FIFO without reader
                    return
                raise

    def _open_journal(self) -> None:
        import time

        self.runs.mkdir(parents=True, exist_ok=True)
        p = self.runs / f"{JOURNAL}pid{os.getpid()}-{os.urandom(4).hex()}.jsonl"
        try:
            self._fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW,
                               0o666)
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(p)) from None
        self._journal, self._size, self._synced = p, 0, time.monotonic()
        self._mine.add(p)

    def close_journal(self) -> None:
        """Syncs and closes this process's journal (the next :meth:`write` opens a new one)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)

    def compact(self) -> None:
        """Folds this process's journals, those of writers that are gone and every part
        into canonical parts (see the module doc), under the store's lock; removes the
        files folded and damaged parts only once the new parts are synced. Nothing to
        fold (no such journal, no damaged part): nothing changes."""
        self.close_journal()
        if not self.runs.is_dir():
            return
        with self.lock():
            sc = self.scan()
            ls = sc.listing
            folded = [j for j in ls.journals if (j in self._mine or not _alive(_journal_pid(j)))
                      and (j not in sc.bad or sc.bad[j].replaceable)]
            damaged = [p for p in ls.parts if p in sc.bad and sc.bad[p].replaceable]
            if not folded and not damaged:
                return
            sources = set(ls.parts) | set(folded)
            keep = [r for rid, r in sc.rows.items() if sc.where[rid] in sources]
            new = parts_of(keep)
            for name, rows in new.items():
                p = self.runs / name
                if p in ls.parts and p not in sc.bad:
                    continue  # that part holds exactly these runs already
                atomic_write_bytes(p, part_bytes(rows))
            _sync_dir(self.runs)
            kept = {str(r["run_id"]) for r in keep}
            gone = [p for p in ls.parts if p.name not in new and (p not in sc.bad or sc.bad[p].replaceable)]
            gone += folded
            gone += [p for rid, p in ls.singles.items() if rid in kept and p in sc.bad and sc.bad[p].replaceable]
            for p in gone:
                p.unlink(missing_ok=True)
            _sync_dir(self.runs)
            self._mine -= set(folded)

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


def _journal_pid(p: Path) -> int:
    """The writer's process id in a journal's name (0, never alive, if there is none)."""
    import re

    m = re.match(rf"^{JOURNAL}pid(\d+)-", p.name)
    return int(m[1]) if m else 0


def _sync_dir(d: Path) -> None:
    """fsync of a directory: its renames and removals survive a power failure."""
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
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
