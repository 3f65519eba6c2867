"""Progress on standard error (tqdm), the one implementation of it: :class:`Progress`,
a bar with an ETA for commands that run many simulations, and :class:`RunProgress`, the
simulated time of one long run (``longpipe run``). Shown only when standard error is a
terminal and ``--quiet`` is not given, so scripts and logs get no control characters."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


def _tqdm(stream: TextIO | None, **kw: Any) -> Any:
    """A tqdm bar on ``stream`` (standard error by default); None without tqdm."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    # One line, never nested: a fixed screen height, as a fresh pty reports 0 rows and
    # tqdm would hide a bar it thinks is below the screen.
    return tqdm(file=stream or sys.stderr, nrows=1000, **kw)


def wanted(quiet: bool = False, stream: TextIO | None = None) -> bool:
    """Whether to draw a bar: not quiet, and the stream is a terminal."""
    s = stream or sys.stderr
    return not quiet and hasattr(s, "isatty") and s.isatty()


class Progress:
    """``Progress(total, "runs", enabled)``; ``update(n)``; ``close()``. A no-op when disabled."""

    def __init__(self, total: int, label: str, enabled: bool, initial: int = 0, stream: TextIO | None = None):
        self._bar: Any = None
        if enabled and total > 0:
            self._bar = _tqdm(stream, total=total, initial=initial, desc=label, unit="run", smoothing=0.1,
                              dynamic_ncols=True,
                              leave=True, bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                                                     "[{elapsed} elapsed, {remaining} left]")

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunProgress:
    """One simulation's progress line, as the ``progress(simulated_ns, duration_ns)``
    callback of :func:`longpipe.api.run`: simulated time of the duration, wall time
    elapsed and left. It appears once the run has taken LONGPIPE_PROGRESS_AFTER seconds
    (default 2), so short runs print nothing; ``clear()`` removes it."""

    def __init__(self, quiet: bool, stream: TextIO | None = None) -> None:
        self._stream = stream
        self.enabled = wanted(quiet, stream)
        try:
            self.after = float(os.environ.get("LONGPIPE_PROGRESS_AFTER", "2"))
        except ValueError:
            self.after = 2.0
        self._bar: Any = None
        self._s = 0.0

    def __call__(self, ns: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._bar = _tqdm(self._stream, total=total / 1e9, delay=self.after, mininterval=0, leave=False,
                              ncols=200,  # figures, no bar: not cut to a width a fresh pty reports as 0
                              bar_format="simulated {n:.6g} s of {total:.6g} s ({percentage:.0f} %), "
                                         "{elapsed} elapsed, about {remaining} left")
            if self._bar is None:  # pragma: no cover - tqdm is a dependency
                self.enabled = False
                return
        self._bar.update(ns / 1e9 - self._s)
        self._s = ns / 1e9

    def clear(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
