"""The files of a sweep store and their checks: parts (Parquet, many rows), format 1
run files (Parquet, one row) and journals (one checksummed JSON line a run). What a
writer here writes is exactly what the readers here accept; :mod:`.store` says when
each is written and read (the module doc there is the format's description)."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .rows import HEAD, METRICS, _param_type, _user_metric_types, digest, run_id

if TYPE_CHECKING:
    import pyarrow as pa

PART = "part-"
JOURNAL = "_journal-"

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
    """Rows of one signature (see :func:`_signature`) as an Arrow table, in the given order.

    Each column is built from its buffers (:func:`_column`), not with ``pa.array``: that
    call, on any Python list or NumPy array, first asks whether the values are pandas
    objects, which imports pandas (0.17 s, measured with ``python -X importtime``) at
    the end of every sweep that stores its runs."""
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
        arrays.append(_column(vals, t, k))
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(k, types[t]) for k, t in sig]))


def _bits(flags: Sequence[bool]) -> bytes:
    """Booleans as an Arrow bitmap (least significant bit first)."""
    out = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _column(vals: Sequence[Any], t: str, name: str) -> pa.Array:
    """A column of arrow type ``t`` (one of :data:`_ARROW_TYPES`) holding ``vals`` (None:
    null), from its validity bitmap and value buffers (Arrow columnar format: little-
    endian values, a string column's int32 offsets and UTF-8 bytes). A value of another
    type raises TypeError naming the column (integers out of 64 bits OverflowError)."""
    import sys
    from array import array

    import pyarrow as pa

    n = len(vals)
    valid = [v is not None for v in vals]
    validity = None if all(valid) else pa.py_buffer(_bits(valid))
    buffers: list[Any]
    try:
        if t == "string":
            data = [v.encode("utf-8") if isinstance(v, str) else _not(v, t) for v in vals]
            offsets = array("i", [0])
            end = 0
            for b in data:
                end += len(b)
                offsets.append(end)  # past 2^31 - 1 bytes: OverflowError
            buffers = [offsets, b"".join(data)]
        elif t == "bool":
            buffers = [_bits([bool(v) if isinstance(v, bool) else _not(v, t) for v in vals])]
        elif t == "int64":
            buffers = [array("q", [v if isinstance(v, int) and not isinstance(v, bool) else _not(v, t) for v in vals])]
        else:  # float64: an int only if the double holds it exactly (as pa.array)
            buffers = [array("d", [v if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool)
                                                                and float(v) == v) else _not(v, t) for v in vals])]
    except (TypeError, OverflowError) as e:
        raise type(e)(f"column {name!r}: {e}") from None
    if sys.byteorder != "little":
        for b in buffers:
            if isinstance(b, array):
                b.byteswap()
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    return pa.Array.from_buffers(types[t], n, [validity, *(pa.py_buffer(b) for b in buffers)])


def _not(v: Any, t: str) -> Any:
    """The placeholder of a null (None) in a column of type ``t``; TypeError for a value
    that is not of that type."""
    if v is None:
        return b"" if t == "string" else False if t == "bool" else 0
    raise TypeError(f"{v!r:.40} ({type(v).__name__}) in a {t} column")


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
    # the result text is read back by summary, plot and report: a damaged one is the
    # file's fault, said in one line, not a traceback later
    try:
        res = json.loads(str(row["result"]))
    except ValueError:
        res = None
    if not isinstance(res, dict) or not isinstance(res.get("flows", []), list):
        raise RunFileError(f"run {str(row['run_id'])[:16]!r}: its result is not a result document")


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
        # process, apache/arrow#34314); ParquetFile, not pq.read_table, which imports
        # pyarrow.dataset and with it pandas (see part_table)
        return pq.ParquetFile(pa.BufferReader(raw), pre_buffer=False).read(use_threads=False)
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
