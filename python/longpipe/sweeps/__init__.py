"""Sweeps: a scenario over a grid of parameters × seeds, run by a local process pool or
Dask, stored in a resumable Parquet dataset, summarised with 95 % confidence intervals.

- :mod:`.grid` — ``--grid`` axes, seeds, validation against the scenario;
- :mod:`.store` — the Parquet store (a journal of finished runs, compacted into parts; resumable);
  :mod:`.rows` (a stored row), :mod:`.storefiles` (its files and their checks);
- :mod:`.engine` — tasks and executors (in-process, process pool, Dask);
- :mod:`.api` — ``longpipe.sweep()``, :class:`Sweep`, :func:`load`;
- :mod:`.summary`, :mod:`.plot` — means, intervals and figures;
- :mod:`.cli` — ``longpipe sweep | summary | plot | report`` and ``run/compare --seeds``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Sweep, load, sweep

__all__ = ["Sweep", "load", "sweep"]

EXECUTORS = "local | dask | dask://HOST:PORT (or tcp://HOST:PORT)"


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'longpipe.sweeps' has no attribute {name!r}")
