"""The ``longpipe`` command's entry point. It imports nothing but the standard library's
smallest modules before it can answer a signal, so that Ctrl-C, SIGTERM or SIGHUP at any
moment (even while the command's modules load, the first ~100 ms) ends the command
quietly: one line, exit status 128 + the signal (130, 143, 129), never a traceback."""

from __future__ import annotations

import os
import sys

from ._signals import interrupted, signals_like_ctrl_c


def console_main() -> None:
    """The ``longpipe`` command: ``longpipe.cli.main()``, then exit. After a signal
    (status 130, 143, 129) it exits at once, skipping the interpreter's slow clean-up of
    loaded modules (nothing is left to write: an interrupted run writes no output)."""
    try:
        with signals_like_ctrl_c():
            from .cli import main

            rc = main()
    except KeyboardInterrupt as e:  # while the modules load, or a second Ctrl-C
        rc = interrupted(e)
    if rc > 128 or _arrow_loaded_and_nothing_left_to_join():
        if rc <= 128:
            # pyarrow's C++ thread pools can abort the process while the interpreter
            # finalizes ("terminate called without an active exception", SIGABRT:
            # apache/arrow#34314), turning a finished command's exit status into -6.
            # Everything is written and closed by now: run the atexit handlers (pools,
            # temporary directories) and leave without the C++ static destructors.
            import atexit

            atexit._run_exitfuncs()
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except (OSError, ValueError):
                pass
        os._exit(rc)
    sys.exit(rc)


def _arrow_loaded_and_nothing_left_to_join() -> bool:
    """Whether pyarrow was imported and only the main thread (and daemon threads, which
    the interpreter would not wait for either) is left."""
    if "pyarrow" not in sys.modules:
        return False
    import threading

    return all(t.daemon or t is threading.main_thread() for t in threading.enumerate())
