"""Runs many simulations: tasks, executors (in-process, local process pool, Dask) and
the loop that skips finished runs and stores each new one as it completes.

Workers only simulate and build the row (:func:`execute`); the calling process writes
the store, so Dask workers need no shared file system and a store has one writer.
"""

from __future__ import annotations

import os
import sys
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


def check_executor(executor: str) -> str:
    e = executor.strip()
    if e in ("local", "dask") or e.startswith(("dask://", "tcp://", "tls://")):
        return e
    raise ScenarioError(None, "--executor", f"expected {EXECUTORS}, got {executor!r}")


Done = Callable[[Task, dict[str, Any], "float | None"], None]


def _serial(tasks: Sequence[Task], done: Done) -> None:
    for t in tasks:
        row, wall = execute(t)
        done(t, row, wall)


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops the pool (no tracebacks)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _local(tasks: Sequence[Task], jobs: int, done: Done) -> None:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    # spawn: workers start clean (no inherited threads or locks from this process)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"), initializer=_ignore_sigint) as ex:
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


def run_tasks(tasks: Sequence[Task], store: Store | None = None, *, executor: str = "local",
              jobs: int | None = None, progress: bool = False, label: str = "runs") -> Outcome:
    """Runs every task not already in ``store`` and returns all rows in task order.

    Identical tasks (same scenario and seed) run once. With a store, each finished run
    is written as it completes, so an interrupted call resumes where it stopped.
    """
    import time

    from ..progress import Progress

    executor = check_executor(executor)
    if jobs is not None and jobs < 1:
        raise ScenarioError(None, "--jobs", f"expected a positive number, got {jobs}")
    unique: dict[str, Task] = {}
    for t in tasks:
        unique.setdefault(t.run_id, t)
    have = set()
    if store is not None:
        store.clean()
        have = store.done() & set(unique)
    todo = [t for rid, t in unique.items() if rid not in have]
    results: dict[str, dict[str, Any]] = {}
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
    finally:
        bar.close()
    if have and store is not None:
        for row in store.read(have):
            results[str(row["run_id"])] = row
    rows = [results[t.run_id] for t in tasks]
    return Outcome(rows, len(todo), len(have), time.perf_counter() - t0)


def eprint(*a: object) -> None:
    print(*a, file=sys.stderr)
