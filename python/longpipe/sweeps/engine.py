"""Runs many simulations: tasks, executors (in-process, local process pool, Dask) and
the loop that skips finished runs and stores each new one as it completes.

Workers only simulate and build the row (:func:`execute`); the calling process writes
the store, so Dask workers need no shared file system and a store has one writer.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api import ScenarioError
from . import EXECUTORS
from .store import Store, canonical_json, make_row, run_id, scenario_hash


@dataclass(frozen=True)
class Task:
    """One simulation: a resolved scenario (canonical JSON, without ``seed``), a seed and
    the parameters to store beside its result."""

    run_id: str
    scenario_hash: str
    scenario_json: str
    seed: int
    params: tuple[tuple[str, Any], ...] = field(default=())


def make_task(scenario: Mapping[str, Any], seed: int, params: Iterable[tuple[str, Any]] = ()) -> Task:
    sc = {k: v for k, v in scenario.items() if k != "seed"}
    h = scenario_hash(sc)
    return Task(run_id(h, seed), h, canonical_json(sc), int(seed), tuple(params))


def execute(task: Task) -> tuple[dict[str, Any], float | None]:
    """Runs one task (in a worker); returns (store row, wall seconds)."""
    import json

    from .. import __version__, _core

    # the work limit was checked when the tasks were planned
    js, _, _, wall = _core.run(task.scenario_json, task.seed, False, None, [], force=True)
    data = json.loads(js)
    return make_row(task.run_id, task.scenario_hash, __version__, task.seed, task.params, data), wall


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def check_executor(executor: Any) -> str:
    """The executor, checked: "local", "dask" or a scheduler address with a host and a
    port (TypeError for a non-string, ScenarioError for anything else)."""
    import re

    if not isinstance(executor, str):
        raise TypeError(f"executor: expected a string ({EXECUTORS}), got {type(executor).__name__} {executor!r}")
    e = executor.strip()
    if e in ("local", "dask"):
        return e
    m = re.match(r"^(dask|tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$", e)
    if m and 0 < int(m[3]) < 65536:
        return e
    if e.startswith(("dask://", "tcp://", "tls://")):
        raise ScenarioError(None, "--executor", f"expected a scheduler address such as dask://HOST:PORT "
                            f"(a port from 1 to 65535), got {executor!r}")
    raise ScenarioError(None, "--executor", f"expected {EXECUTORS}, got {executor!r}")


def check_jobs(jobs: Any) -> int | None:
    """--jobs: None (all cores) or a positive int."""
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise TypeError(f"jobs: expected a positive int or None, got {type(jobs).__name__} {jobs!r}")
    if jobs < 1:
        raise ScenarioError(None, "--jobs", f"expected a positive number, got {jobs}")
    return jobs


Done = Callable[[Task, dict[str, Any], "float | None"], None]


def _serial(tasks: Sequence[Task], done: Done) -> None:
    for t in tasks:
        row, wall = execute(t)
        done(t, row, wall)


def _worker_init(parent: int) -> None:
    """A pool worker's set-up: it dies with the sweep that started it, however that ends
    (SIGKILL included: Linux's parent-death signal, prctl(PR_SET_PDEATHSIG)), and leaves
    Ctrl-C and SIGHUP, which reach the whole process group from a terminal, to that
    parent, which stops the pool itself (no tracebacks from workers)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1  # <linux/prctl.h>
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


#: The management threads of pools stopped by :func:`_stop_workers`: what they raise when
#: their workers vanish is expected, and must not print a traceback after the one-line
#: "interrupted by ..." (seen under load with SIGTERM).
_STOPPED_MANAGERS: weakref.WeakSet[Any] = weakref.WeakSet()


def _quiet_stopped_managers(args: Any) -> None:
    if args.thread is not None and args.thread in _STOPPED_MANAGERS:
        return
    _previous_excepthook(args)


_previous_excepthook = threading.excepthook


def _stop_workers(ex: Any) -> None:
    """Ends a process pool's workers now (SIGTERM, then SIGKILL after 2 s): an interrupted
    sweep does not wait for the runs in flight, whose results it would not keep. Its
    management thread's complaints about the vanished workers are not printed."""
    manager = getattr(ex, "_executor_manager_thread", None)  # CPython's pool manager thread
    if manager is not None:
        _STOPPED_MANAGERS.add(manager)
        if threading.excepthook is not _quiet_stopped_managers:
            threading.excepthook = _quiet_stopped_managers
    procs = list((getattr(ex, "_processes", None) or {}).values())  # CPython's pid -> Process map
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(2.0)
        if p.is_alive():
            p.kill()
            p.join(2.0)


_TRACKER_QUIET = "ignore:resource_tracker:UserWarning"


def _local(tasks: Sequence[Task], jobs: int, done: Done) -> None:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    # The resource tracker (a process multiprocessing starts beside the pool, with this
    # interpreter's -W options) reports the pool's semaphores as "leaked" when a signal
    # ends the sweep before the pool is joined, and removes them: nothing is lost, and
    # its warning would follow our one-line "interrupted by ..." on stderr.
    if _TRACKER_QUIET not in sys.warnoptions:
        sys.warnoptions.append(_TRACKER_QUIET)
    # spawn: workers start clean (no inherited threads or locks from this process)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                             initargs=(os.getpid(),)) as ex:
        pending: dict[Future[tuple[dict[str, Any], float | None]], Task] = {}
        todo = iter(tasks)
        try:
            # keep a bounded number in flight, so an interrupt does not leave thousands queued
            for t in todo:
                pending[ex.submit(execute, t)] = t
                if len(pending) >= 4 * jobs:
                    break
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    t = pending.pop(fut)
                    row, wall = fut.result()
                    done(t, row, wall)
                    nxt = next(todo, None)
                    if nxt is not None:
                        pending[ex.submit(execute, nxt)] = nxt
        except BaseException:
            for fut in pending:
                fut.cancel()
            _stop_workers(ex)
            ex.shutdown(wait=False, cancel_futures=True)
            raise


def _dask(tasks: Sequence[Task], executor: str, jobs: int | None, done: Done) -> None:
    try:
        from importlib import import_module

        dist: Any = import_module("distributed")  # untyped: called through Any
    except ImportError:
        raise ScenarioError(None, "--executor", "Dask is not installed: pip install 'longpipe[dask]'") from None
    import logging

    cluster = None
    if executor == "dask":
        # ":0": the scheduler's HTTP server on a free port. With None, distributed still
        # tries its default 8787 and warns when another cluster holds it.
        cluster = dist.LocalCluster(n_workers=jobs or default_jobs(), threads_per_worker=1, processes=True,
                                    dashboard_address=":0", silence_logs=logging.ERROR)
        client = dist.Client(cluster)
    else:
        address = "tcp://" + executor[len("dask://"):] if executor.startswith("dask://") else executor
        try:
            client = dist.Client(address, timeout="5s")
        except (OSError, TimeoutError) as e:
            raise ScenarioError(None, "--executor", f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        futures = client.map(execute, list(tasks), key=[f"longpipe-run-{t.run_id}" for t in tasks], pure=False)
        by_key = {f.key: t for f, t in zip(futures, tasks)}
        for fut, (row, wall) in dist.as_completed(futures, with_results=True):
            done(by_key[fut.key], row, wall)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@dataclass
class Outcome:
    """What :func:`run_tasks` did: rows in task order, how many were new."""

    rows: list[dict[str, Any]]
    new: int
    reused: int
    wall_s: float
    #: Store files that were unreadable (damaged); the runs they held ran again.
    rerun: int = 0


def run_tasks(tasks: Sequence[Task], store: Store | None = None, *, executor: str = "local",
              jobs: int | None = None, progress: bool = False, label: str = "runs") -> Outcome:
    """Runs every task not already in ``store`` and returns all rows in task order.

    Identical tasks (same scenario and seed) run once. With a store, each finished run
    is appended to the store's journal as it completes, so an interrupted call resumes
    where it stopped; a call that ends normally compacts the store (:meth:`Store.compact`).
    """
    import time

    from ..progress import Progress

    executor = check_executor(executor)
    jobs = check_jobs(jobs)
    unique: dict[str, Task] = {}
    for t in tasks:
        unique.setdefault(t.run_id, t)
    have: dict[str, dict[str, Any]] = {}
    damaged: dict[str, str] = {}
    if store is not None:
        store.clean()
        for path, kind in store.foreign():  # what cannot be replaced: before any run
            raise ScenarioError(str(path), "(file)", f"is {kind}, not a file longpipe wrote; "
                                "remove it and run the sweep again")
        have, damaged = store.load(unique)
    todo = [t for rid, t in unique.items() if rid not in have]
    results: dict[str, dict[str, Any]] = dict(have)
    t0 = time.perf_counter()
    bar = Progress(len(unique), label, enabled=progress, initial=len(have))

    def done(t: Task, row: dict[str, Any], wall: float | None) -> None:
        if store is not None:
            store.write(row, wall)
        results[t.run_id] = row
        bar.update(1)

    n_jobs = jobs or default_jobs()
    try:
        if not todo:
            pass
        elif executor == "local" and (n_jobs == 1 or len(todo) == 1):
            _serial(todo, done)
        elif executor == "local":
            _local(todo, min(n_jobs, len(todo)), done)
        else:
            _dask(todo, executor, jobs, done)
    except BaseException:
        if store is not None:  # the journal keeps every finished run; the next sweep folds it in
            store.close_journal()
        raise
    finally:
        bar.close()
    if store is not None:
        store.compact()
    rows = [results[t.run_id] for t in tasks]
    return Outcome(rows, len(todo), len(have), time.perf_counter() - t0, len(damaged))


def eprint(*a: object) -> None:
    print(*a, file=sys.stderr)
