"""longpipe: TCP over long, thin and lossy links — models, a deterministic packet-level
simulator (Rust core), parameter sweeps, and (later) live emulation and a TCP gateway.

The public names are imported on first use, so that ``import longpipe`` (and the
command line) start without loading NumPy or pandas.
"""

from __future__ import annotations

from ._core import __version__

TYPE_CHECKING = False  # typing itself costs start-up (the CLI answers Ctrl-C sooner)
if TYPE_CHECKING:
    from typing import Any

    from .api import Result, ScenarioError, load_scenario, run, schema
    from .sweeps.api import Sweep, sweep

__all__ = ["Result", "ScenarioError", "Sweep", "__version__", "load_scenario", "run", "schema", "sweep"]

_LAZY = {
    "Result": "api", "ScenarioError": "api", "load_scenario": "api", "run": "api", "schema": "api",
    "Sweep": "sweeps.api", "sweep": "sweeps.api",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'longpipe' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
