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
file of bounded size; a part: Parquet with the columns and types of
:func:`.storefiles.part_table`,
rows sorted, each run id the hash of its scenario hash and seed, the name the hash of
its run ids; a journal: every complete line's checksum and row): a damaged one is an
error naming it (one line), never a traceback, and a resumed sweep runs its runs again
and replaces it.

The row is defined in :mod:`.rows`, the files' encodings and checks in
:mod:`.storefiles`; this module is the directory (what is written when, the lock, the
manifest) and re-exports their public names.

Read it with :func:`longpipe.sweeps.load` or ``Store(DIR).read()`` (checked), or
``pandas.read_parquet(DIR / "runs")`` (not checked; the runs of an unfinished sweep
are still in its journal, which pandas does not read).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_bytes, atomic_write_text
from ..api import ScenarioError
from .rows import HEAD as HEAD
from .rows import METRICS as METRICS
from .rows import _param_type as _param_type
from .rows import canonical_json as canonical_json
from .rows import digest as digest
from .rows import make_row as make_row
from .rows import param_names as param_names
from .rows import run_id as run_id
from .rows import scenario_hash as scenario_hash
from .rows import stable_result as stable_result
from .storefiles import (
    _U64_MAX,
    JOURNAL,
    JOURNAL_ROTATE_BYTES,
    MAX_MANIFEST_BYTES,
    SYNC_INTERVAL_S,
    _first_sentence,
    parts_of,
)
from .storefiles import MAX_RUN_BYTES as MAX_RUN_BYTES
from .storefiles import PART as PART
from .storefiles import RunFileError as RunFileError
from .storefiles import journal_line as journal_line
from .storefiles import part_bytes as part_bytes
from .storefiles import read_journal as read_journal
from .storefiles import read_part as read_part
from .storefiles import read_run_file as read_run_file

if TYPE_CHECKING:
    import pandas as pd

#: The manifest format written; 1 (runs one file each) is read too. A longpipe that
#: knows only format 1 refuses a format 2 store in one line instead of misreading it.
FORMAT = 2
FORMATS = (1, 2)
RUNS = "runs"
MANIFEST = "sweep.json"
WALL = "wall_times.csv"
LOCK = ".lock"

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
