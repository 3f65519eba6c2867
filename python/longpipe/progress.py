"""A progress bar with an ETA on standard error (tqdm), for commands that run many
simulations. Shown only when standard error is a terminal and ``--quiet`` is not given,
so scripts and logs get no control characters."""

from __future__ import annotations

import sys
from typing import Any, TextIO


def wanted(quiet: bool = False, stream: TextIO | None = None) -> bool:
    """Whether to draw a bar: not quiet, and the stream is a terminal."""
    s = stream or sys.stderr
    return not quiet and hasattr(s, "isatty") and s.isatty()


class Progress:
    """``Progress(total, "runs", enabled)``; ``update(n)``; ``close()``. A no-op when disabled."""

    def __init__(self, total: int, label: str, enabled: bool, initial: int = 0, stream: TextIO | None = None):
        self._bar: Any = None
        if enabled and total > 0:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                return
            self._bar = tqdm(total=total, initial=initial, desc=label, unit="run", file=stream or sys.stderr,
                             dynamic_ncols=True, smoothing=0.1, leave=True,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
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
