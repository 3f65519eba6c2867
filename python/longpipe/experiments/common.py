"""Shared helpers for reproductions: runs on the sweep machinery (stored, resumable,
parallel, with a progress bar), confidence intervals, citations, CSV output."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..sweeps.summary import mean_ci95 as _mean_ci95

T = TypeVar("T")
R = TypeVar("R")

# The seed papers, as named in our copies (shared/seeds): authors, affiliation, title. The
# copies carry no venue or year, so none is given here.
CITATIONS = {
    "wcdma": "Taro Ishikawa, Hiroshi Inamura, Osamu Takahashi (NTT DoCoMo Multimedia Laboratories): "
             "\"A TCP profile for W-CDMA\" (in Japanese; seed paper 000)",
    "hybla": "Takanobu Endo, Jeyeon Kim, Satoshi Utsumi, Yasushi Kato, Salim Zabir: \"Analytical Model of TCP "
             "Hybla for Satellite IP Networks\" (in Japanese; seed paper 001)",
    "atm": "Toru Hasegawa, Shigehiro Ano, Toshihiko Kato (KDD R&D Laboratories): \"Performance Evaluation using "
           "Simulation of TCP over Wide Area ATM Networks\" (in Japanese; seed paper 002)",
    "gateway": "Yutaka Miyake, Teruyuki Hasegawa, Toru Hasegawa, Toshihiko Kato (KDD R&D Laboratories): "
               "\"A Proposal of TCP Gateway System for Satellite-based Internet Access\" (in Japanese; seed paper 003)",
    "peach": "Satoshi Utsumi, S. M. Salim Zabir, Norio Shiratori (Tohoku University; JSPS; France Telecom Japan): "
             "\"Towards TCP-Cherry: Implementation and Evaluation of TCP-Peach+\" (in Japanese; seed paper 004)",
}


#: The TCP stack of every flow a reproduction builds, set explicitly so that a change of
#: the simulator's default stack moves no reproduction. "classic" (RFC 5681/6582/6675/6298)
#: is what each paper ran: paper [000] a 4.4BSD-Lite-like TCP, [001] ns-2's agents, [002] REAL's
#: 4.3BSD Tahoe, 003 an unmodified server TCP of its day (no Linux features), 004 NewReno and
#: the Peach family (which the Linux profile does not implement).
STACK = "classic"


def default_jobs() -> int:
    from ..sweeps.engine import default_jobs as dj

    return dj()


def run_parallel(fn: Callable[[T], R], items: Iterable[T], jobs: int | None = None) -> list[R]:
    """Maps ``fn`` over ``items`` on threads (the simulator releases the GIL); results in
    input order. For runs that need traces (figures); bulk runs use :class:`Runner`."""
    from concurrent.futures import ThreadPoolExecutor

    items = list(items)
    jobs = jobs or default_jobs()
    if jobs <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(fn, items))


def mean_ci95(values: Iterable[float]) -> tuple[float, float]:
    """Mean and half-width of the 95 % Student-t confidence interval."""
    return _mean_ci95([float(v) for v in values])


@dataclass
class Runner:
    """Runs a reproduction's simulations on the sweep machinery: each part's runs are
    stored under ``out/store/PART`` (Parquet, one file per run), so an interrupted
    reproduction resumes and a repeated one reuses its runs."""

    out: Path
    jobs: int | None = None
    executor: str = "local"
    quiet: bool = False
    name: str = ""

    def results(self, part: str, items: Sequence[tuple[Mapping[str, Any], int, Mapping[str, Any]]]
                ) -> list[dict[str, Any]]:
        """``items``: (scenario dict, seed, parameters to store); returns each run's
        result document (without the wall time), in order."""
        from ..progress import wanted
        from ..sweeps.engine import make_task, run_tasks
        from ..sweeps.store import Store

        tasks = [make_task(sc, seed, sorted(params.items())) for sc, seed, params in items]
        oc = run_tasks(tasks, Store(self.out / "store" / part), executor=self.executor, jobs=self.jobs,
                       progress=wanted(self.quiet), label=f"{self.name} {part}".strip())
        return [json.loads(r["result"]) for r in oc.rows]


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows (dicts with the same keys) as CSV text, written with the csv module."""
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()
