"""Files in and out, safely (docs/limits.md, "Input files" and "Outputs").

Reading (:func:`read_regular_file`): regular files only, never more than a limit, and
never blocking: a FIFO, a device or a kernel interface such as ``/proc/kmsg`` (a
"regular" file of size 0 whose read blocks) is refused at once.

Writing: a reader never sees a half-written file (each file goes to a temporary beside
its target, is fsynced and renamed into place). An existing target is replaced only if
it is a regular file: a rename would replace a device node (``/dev/null``), a FIFO or a
socket itself, and a symbolic link would be replaced instead of written through, so
those are refused (:class:`OutputError`). A directory's earlier outputs are removed
only when their content still has the hash longpipe recorded when it wrote them.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# hashlib, shutil and tempfile are imported where they are used: `longpipe run --json`,
# which writes no file, then loads none of them (start-up time, BENCHMARKS.md).

# --- reading --------------------------------------------------------------------------


class NotReadable(Exception):
    """Why a file cannot be read: ``kind`` is ``missing``, ``directory``, ``special``,
    ``too_large`` or ``error``; ``str()`` says what is wrong in a few words."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


def _proc_devices() -> set[int]:
    """The device numbers of /proc and /sys (kernel interfaces, not files to read)."""
    devs = set()
    for p in ("/proc", "/sys"):
        try:
            devs.add(os.stat(p).st_dev)
        except OSError:
            pass
    return devs


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or :class:`NotReadable`.

    The file is opened and read non-blocking, so a FIFO without a writer, a device or a
    kernel file whose read would wait (``/proc/kmsg``) cannot hang the caller; files of
    /proc and /sys are refused outright. At most ``limit + 1`` bytes are ever read, so a
    file that grows while it is read is refused too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotReadable("missing", "no such file") from None
    except OSError as e:
        raise NotReadable("error", f"cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotReadable("directory", "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise NotReadable("special", "not a regular file (a FIFO, device or socket)")
        if st.st_dev in _proc_devices():
            raise NotReadable("special", "a kernel interface of /proc or /sys, not a regular file")
        if st.st_size > limit:
            raise NotReadable("too_large", f"too large ({st.st_size} bytes)")
        chunks: list[bytes] = []
        n = 0
        while n <= limit:
            try:
                b = os.read(fd, min(1 << 20, limit + 1 - n))
            except BlockingIOError:
                raise NotReadable("special", "reading it would block: not a regular file") from None
            if not b:
                break
            chunks.append(b)
            n += len(b)
        if n > limit:
            raise NotReadable("too_large", f"too large (more than {limit} bytes)")
        return b"".join(chunks)
    except OSError as e:
        raise NotReadable("error", f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)


# --- writing --------------------------------------------------------------------------


class OutputError(Exception):
    """An output path that cannot be written; the message starts with the option name
    (or the path). Bad input: exit status 2."""


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def non_regular(path: Path) -> str | None:
    """What ``path`` is if it exists and is not a regular file ("a FIFO", "a symbolic
    link", ...); None if it is a regular file or does not exist."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # (a parent that is a file fails later)
        return None
    return None if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)


def check_target(path: Path, option: str | None = None) -> None:
    """``path`` may be replaced by a rename: it does not exist or is a regular file.
    Anything else (a device node, FIFO, socket, directory, symbolic link) raises
    OutputError: a rename would replace the node or the link itself."""
    try:
        kind = non_regular(path)
    except OSError as e:
        raise OutputError(f"{option or path}: cannot check {path}: {e.strerror or e}") from None
    if kind is not None:
        raise OutputError(f"{option or path}: {path} exists and is {kind}; longpipe only replaces "
                          "regular files (remove it or choose another name)")


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, option: str | None = None) -> Path:
    """Writes ``data`` to ``path`` through a synced temporary and a rename; an existing
    ``path`` that is not a regular file raises OutputError and is left alone."""
    import tempfile

    path = Path(path)
    check_target(path, option)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.pid{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as a plain open() would (mkstemp makes it 0600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        check_target(path, option)  # again: it may have changed while we wrote
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None:  # name the file (a full disk)
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str, option: str | None = None) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), option)


def save_figure(fig: Any, path: str | os.PathLike[str], option: str | None = None, **kwargs: Any) -> Path:
    """Saves a matplotlib figure atomically (PNG unless the suffix says otherwise)."""
    import io

    path = Path(path)
    check_target(path, option)  # before drawing
    buf = io.BytesIO()
    fmt = path.suffix.lstrip(".") or "png"
    fig.savefig(buf, format=fmt, **kwargs)
    return atomic_write_bytes(path, buf.getvalue(), option)


# --- all-or-nothing output sets (the CLI's --out / --pcap) ---------------------------

#: The file in an --out directory that lists what the last run wrote there, with the
#: SHA-256 of each file's content: ``{"format": 2, "files": {"result.json": "ab12..."}}``.
MANIFEST = ".longpipe-run.json"
MANIFEST_FORMAT = 2
#: The largest manifest read (a run writes a few files per flow).
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


def _probe_dir(d: Path, option: str) -> None:
    """Creates and removes a temporary file in ``d``: the only reliable writability test
    (os.access says yes to root on a read-only file system)."""
    import tempfile

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
    """``path`` will be written as a file (its directory created if missing); an existing
    one must be a regular file."""
    if not path.name or "\0" in str(path):
        raise OutputError(f"{option}: {str(path)!r} is not a usable file name")
    if path.is_dir() and not path.is_symlink():
        raise OutputError(f"{option}: {path} is a directory; expected a file name")
    check_target(path, option)
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


STAGING_PREFIX = ".staging-"
_STAGING_LOCK = ".lock"


def _remove_abandoned_staging(near: Path) -> None:
    """Removes staging directories in ``near`` whose run is gone (killed with SIGKILL,
    or by a power cut): those whose lock file nobody holds. A directory without the
    lock file is never touched (it may be one being created, or not longpipe's)."""
    import fcntl
    import shutil

    try:
        entries = [e for e in os.scandir(near) if e.name.startswith(STAGING_PREFIX)]
    except OSError:
        return
    for e in entries:
        try:
            if not e.is_dir(follow_symlinks=False):
                continue
            fd = os.open(os.path.join(e.path, _STAGING_LOCK), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: its run is alive
            shutil.rmtree(e.path, ignore_errors=True)
        except OSError:
            continue
        finally:
            os.close(fd)


@contextlib.contextmanager
def staging_dir(near: Path) -> Iterator[Path]:
    """A fresh hidden directory inside ``near`` (created as needed) for files a run writes
    as it goes, to be moved into place with ``write_outputs``. On exit (an error, Ctrl-C,
    SIGTERM) it is removed with whatever is left in it, and so are the directories
    created for it if empty. It holds a lock file, locked while the run lives: a later
    run into ``near`` removes the staging directories of runs killed outright."""
    import fcntl
    import shutil
    import tempfile

    _remove_abandoned_staging(near)
    created = _makedirs(near)
    staged: Path | None = None
    fd = -1
    try:
        staged = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=near))
        # locked under a temporary name, then renamed: a lock file that exists is held
        fd = os.open(staged / ".lock.new", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(staged / ".lock.new", staged / _STAGING_LOCK)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        for c in reversed(created):
            with contextlib.suppress(OSError):
                c.rmdir()
        raise
    d = staged
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
        os.close(fd)
        for c in reversed(created):
            with contextlib.suppress(OSError):
                c.rmdir()


def _sha256_file(p: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(p, "rb") as f:
        while b := f.read(1 << 20):
            h.update(b)
    return h.hexdigest()


def _hash_of(data: bytes | Path) -> str:
    import hashlib

    return _sha256_file(data) if isinstance(data, Path) else hashlib.sha256(data).hexdigest()


def write_outputs(files: Mapping[Path, bytes | Path], out_dir: Path | None = None,
                  option: str | None = None) -> list[Path]:
    """Writes every file or none: each goes to a temporary file beside its target first
    (a ``Path`` value is a file already written and synced on the same file system, a
    staged file, used as that temporary); only when all of them are written are they
    renamed into place. Every existing target must be a regular file (checked before
    anything is written). On failure (or Ctrl-C) the temporaries and any directory
    created here are removed, and earlier files are untouched.

    ``out_dir``: the run's output directory. Its MANIFEST, listing the files written
    there with their hashes, is written with the other files; a previous run's files
    that this run does not write again are then removed, each only if its content still
    has the hash the previous manifest recorded (so a forged or stale manifest cannot
    make longpipe delete a file it did not write).
    """
    written = list(files)
    if not written and out_dir is None:
        return written  # nothing to write (`run --json` without --out or --pcap)
    import tempfile

    files = dict(files)
    mine: dict[str, str] = {}
    old: dict[str, str] = {}
    if out_dir is not None:
        mine = {p.name: _hash_of(d) for p, d in files.items() if p.parent.resolve() == out_dir.resolve()}
        text = json.dumps({"format": MANIFEST_FORMAT, "files": dict(sorted(mine.items()))}, indent=1) + "\n"
        old = _read_manifest(out_dir)
        files[out_dir / MANIFEST] = text.encode()
    for final in files:
        check_target(final, option)
    created: list[Path] = []
    temps: list[tuple[str, Path]] = []
    umask = _umask()
    try:
        for final, data in files.items():
            created += _makedirs(final.parent)
            if isinstance(data, Path):
                temps.append((str(data), final))
                continue
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.pid{os.getpid()}.", suffix=".tmp", dir=final.parent)
            temps.append((tmp, final))
            os.fchmod(fd, 0o666 & ~umask)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for tmp, final in temps:
            os.replace(tmp, final)
    except BaseException as e:
        for tmp, _ in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()
        if isinstance(e, OSError) and e.filename is None and temps:  # name the file (a full disk)
            raise OSError(e.errno, e.strerror, str(temps[-1][1])) from None
        raise
    if out_dir is not None:
        _remove_stale(out_dir, old, set(mine))
    return written


def _read_manifest(out_dir: Path) -> dict[str, str]:
    """The {name: sha256} a previous run recorded in ``out_dir`` (empty if none, or
    unreadable, or of the first format, which held no hashes)."""
    try:
        doc = json.loads(read_regular_file(out_dir / MANIFEST, MAX_MANIFEST_BYTES))
    except (NotReadable, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def _remove_stale(out_dir: Path, old: Mapping[str, str], keep: set[str]) -> None:
    for name, digest in sorted(old.items()):
        if name in keep or "/" in name or "\0" in name or name in ("", ".", "..") or name.startswith("."):
            continue
        p = out_dir / name
        try:
            if not stat.S_ISREG(os.lstat(p).st_mode) or _sha256_file(p) != digest:
                continue  # not what longpipe wrote there: never touched
            p.unlink()
        except OSError:
            continue
