"""Type stubs of the Rust extension (crates/longpipe-py)."""

from collections.abc import Callable
from typing import Literal, overload

import numpy as np

__all__ = ["ScenarioError", "__version__", "check_work", "result_schema", "run", "schema", "validate"]

__version__: str

class ScenarioError(ValueError):
    """args = (field_path, message)"""

@overload
def run(
    scenario_json: str,
    seed: int | None = None,
    trace_all: bool = False,
    trace_flows: list[int] | None = None,
    pcap: list[str] | None = None,
    *,
    progress: Callable[[int, int], object] | None = None,
    progress_every: float = 0.5,
    force: bool = False,
    trace_dir: str | None = None,
    records: Literal[False] = False,
) -> tuple[str, dict[int, dict[str, np.ndarray]], list[tuple[str, bytes]], float]: ...
@overload
def run(
    scenario_json: str,
    seed: int | None = None,
    trace_all: bool = False,
    trace_flows: list[int] | None = None,
    pcap: list[str] | None = None,
    *,
    progress: Callable[[int, int], object] | None = None,
    progress_every: float = 0.5,
    force: bool = False,
    trace_dir: str | None = None,
    records: Literal[True],
) -> tuple[
    str, dict[int, dict[str, np.ndarray]], list[tuple[str, bytes]], float, dict[str, dict[str, np.ndarray]]
]: ...
def validate(scenario_json: str) -> dict[str, float]: ...
def check_work(scenario_json: str) -> None: ...
def schema() -> str: ...
def result_schema() -> str: ...
