"""Atomic file writes: a reader never sees a half-written result."""

from __future__ import annotations

import os
import tempfile
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
