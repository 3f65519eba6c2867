"""longpipe: TCP over long, thin and lossy links — models, a deterministic packet-level
simulator (Rust core), and (later) live emulation and a TCP gateway."""

from ._core import __version__
from .api import Result, ScenarioError, load_scenario, run, schema

__all__ = ["Result", "ScenarioError", "load_scenario", "run", "schema", "__version__"]
