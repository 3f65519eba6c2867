"""longpipe: TCP over long, thin and lossy links — models, a deterministic packet-level
simulator (Rust core), parameter sweeps, live emulation and a TCP gateway daemon.

The public names and the subpackages (``longpipe.sweeps.load``, ``longpipe.models``...)
are imported on first use, so that ``import longpipe`` (and the command line) start
without loading NumPy or pandas.
"""

from __future__ import annotations

from ._core import __version__

TYPE_CHECKING = False  # typing itself costs start-up (the CLI answers Ctrl-C sooner)
if TYPE_CHECKING:
    from typing import Any

    from . import api as api
    from . import models as models
    from . import plots as plots
    from . import sweeps as sweeps
    from . import workload as workload
    from .api import Result, ScenarioError, load_scenario, run, schema
    from .sweeps.api import Sweep, sweep

__all__ = ["Result", "ScenarioError", "Sweep", "__version__", "load_scenario", "run", "schema", "sweep"]

_LAZY = {
    "Result": "api", "ScenarioError": "api", "load_scenario": "api", "run": "api", "schema": "api",
    "Sweep": "sweeps.api", "sweep": "sweeps.api",
}

#: Subpackages and modules reachable as attributes after a plain ``import longpipe``.
_SUBMODULES = frozenset({"api", "emu", "experiments", "gateway", "models", "plots", "profiles", "report",
                         "sweeps", "workload"})


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
        globals()[name] = value
        return value
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'longpipe' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)
