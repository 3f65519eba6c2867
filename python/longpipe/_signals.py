"""Signals handled as Ctrl-C is: SIGTERM and SIGHUP raise :class:`Terminated` (a
KeyboardInterrupt) where Ctrl-C raises KeyboardInterrupt, and :func:`interrupted` says so
in one line. Standard library only (the entry point uses it before anything else loads);
shared by the entry point and the CLI."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C raises KeyboardInterrupt (a subclass, so
    that every clean-up path for Ctrl-C runs: the simulation is cancelled, temporaries
    and staging directories are removed, pool workers are stopped)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def signals_like_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP end a command as Ctrl-C does; the previous handlers are
    restored afterwards (the CLI's main() may run in-process, in tests). Only the main
    thread can install handlers; elsewhere nothing changes."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def interrupted(e: KeyboardInterrupt) -> int:
    """Says so on stderr; returns the exit status, 128 + the signal."""
    import signal

    signum = e.signum if isinstance(e, Terminated) else int(signal.SIGINT)
    name = signal.Signals(signum).name
    print("interrupted" if signum == signal.SIGINT else f"interrupted by {name}", file=sys.stderr)
    return 128 + signum
