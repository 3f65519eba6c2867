"""Atomic file writes: a reader never sees a half-written result."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # as a plain open() would (mkstemp makes it 0600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def save_figure(fig: Any, path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Saves a matplotlib figure atomically (PNG unless the suffix says otherwise)."""
    import io

    path = Path(path)
    buf = io.BytesIO()
    fmt = path.suffix.lstrip(".") or "png"
    fig.savefig(buf, format=fmt, **kwargs)
    return atomic_write_bytes(path, buf.getvalue())


# --- all-or-nothing output sets (the CLI's --out / --pcap) ---------------------------

#: The file in an --out directory that lists what the last run wrote there.
MANIFEST = ".longpipe-run.json"
_LEGACY = re.compile(r"^(result\.json|flow\d+-(timeseries|segments|rtt)\.csv)$")


class OutputError(Exception):
    """An output path that cannot be written; the message starts with the option name."""


def _probe_dir(d: Path, option: str) -> None:
    """Creates and removes a temporary file in ``d``: the only reliable writability test
    (os.access says yes to root on a read-only file system)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".longpipe-probe.", dir=d)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise OutputError(f"{option}: cannot write in {d}: {e.strerror or e}") from None


def _existing_ancestor(p: Path) -> Path:
    p = Path(os.path.abspath(p))
    while not os.path.lexists(p):
        p = p.parent
    return p


def check_output_dir(path: Path, option: str) -> None:
    """``path`` will be a directory that outputs are written into (created if missing):
    raises OutputError now, before any work, if that cannot succeed."""
    if not str(path):
        raise OutputError(f"{option}: needs a directory name")
    if "\0" in str(path):
        raise OutputError(f"{option}: the name contains a NUL character")
    if os.path.lexists(path):
        if not path.is_dir():
            raise OutputError(f"{option}: {path} exists and is not a directory")
        _probe_dir(path, option)
        return
    anc = _existing_ancestor(path)
    if not anc.is_dir():
        raise OutputError(f"{option}: cannot create {path}: {anc} is not a directory")
    _probe_dir(anc, option)


def check_output_file(path: Path, option: str) -> None:
    """``path`` will be written as a file (its directory created if missing)."""
    if not path.name or "\0" in str(path):
        raise OutputError(f"{option}: {str(path)!r} is not a usable file name")
    if path.is_dir():
        raise OutputError(f"{option}: {path} is a directory; expected a file name")
    check_output_dir(path.parent, option)


def _makedirs(d: Path) -> list[Path]:
    """mkdir -p; returns the directories it created, outermost first."""
    missing = []
    p = Path(os.path.abspath(d))
    while not os.path.lexists(p):
        missing.append(p)
        p = p.parent
    for m in reversed(missing):
        m.mkdir()
    return list(reversed(missing))


@contextlib.contextmanager
def staging_dir(near: Path) -> Iterator[Path]:
    """A fresh hidden directory inside ``near`` (created as needed) for files a run writes
    as it goes, to be moved into place with ``write_outputs``. On exit it is removed
    with whatever is left in it, and so are the directories created for it if empty."""
    created = _makedirs(near)
    try:
        d = Path(tempfile.mkdtemp(prefix=".staging-", dir=near))
    except BaseException:
        for c in reversed(created):
            c.rmdir()
        raise
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
        for c in reversed(created):
            try:
                c.rmdir()
            except OSError:
                pass


def write_outputs(files: Mapping[Path, bytes | Path], out_dir: Path | None = None) -> list[Path]:
    """Writes every file or none: each goes to a temporary file beside its target first
    (a ``Path`` value is a file already written and synced on the same file system, a
    staged file, used as that temporary); only when all of them are written are they
    renamed into place. On failure (or
    Ctrl-C) the temporaries and any directory created here are removed, and earlier
    files are untouched.

    ``out_dir``: the run's output directory. A previous run's files there that this
    run does not write again (listed in its MANIFEST) are removed after the new ones
    are in place, so the directory holds one run's outputs, never a mix.
    """
    created: list[Path] = []
    temps: list[tuple[str, Path]] = []
    umask = os.umask(0)
    os.umask(umask)
    try:
        for final, data in files.items():
            created += _makedirs(final.parent)
            if isinstance(data, Path):
                temps.append((str(data), final))
                continue
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
            temps.append((tmp, final))
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for tmp, final in temps:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        for d in reversed(created):
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    if out_dir is not None:
        _replace_manifest(out_dir, [p for p in files if p.parent.resolve() == out_dir.resolve()])
    return list(files)


def _replace_manifest(out_dir: Path, written: list[Path]) -> None:
    names = {p.name for p in written}
    stale = set()
    man = out_dir / MANIFEST
    try:
        old = json.loads(man.read_text())
        stale |= {n for n in old.get("files", []) if isinstance(n, str)}
    except (OSError, ValueError, AttributeError):
        pass
    if (out_dir / "result.json").exists():
        stale |= {e.name for e in os.scandir(out_dir) if _LEGACY.match(e.name)}
    for n in sorted(stale - names):
        if "/" in n or n in ("", ".", "..") or n.startswith("."):
            continue
        p = out_dir / n
        if p.is_file() and not p.is_symlink():
            p.unlink()
    atomic_write_text(man, json.dumps({"files": sorted(names)}, indent=1) + "\n")
