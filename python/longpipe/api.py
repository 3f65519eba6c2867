"""The Python API: ``longpipe.run(path_or_dict, seed=None, **overrides) -> Result``.

The scenario schema is defined once, in the Rust core (serde); Python only reads TOML,
applies ``--set``-style overrides and converts to JSON.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core

if TYPE_CHECKING:  # NumPy and pandas load on first use: the CLI starts faster without them
    import pandas as pd

# The sender reports an unset ("infinite") ssthresh as this value (u64::MAX / 4).
SSTHRESH_INFINITE = (2**64 - 1) // 4


class ScenarioError(ValueError):
    """Bad scenario input. ``str()`` is ``"FILE: field.path: what was expected"``."""

    def __init__(self, source: str | None, path: str, message: str):
        self.source = source
        self.path = path
        self.message = message
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{path}: {message}")


def load_scenario(scenario: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Returns (scenario dict, source name) from a TOML/JSON path or a dict."""
    if isinstance(scenario, Mapping):
        return copy.deepcopy(dict(scenario)), None
    path = Path(scenario)
    src = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ScenarioError(src, "(file)", "no such file") from None
    except OSError as e:
        raise ScenarioError(src, "(file)", f"cannot read: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(src, "(file)", "not UTF-8 text") from None
    if path.suffix == ".json":
        try:
            return json.loads(text), src
        except json.JSONDecodeError as e:
            raise ScenarioError(src, f"line {e.lineno}", f"invalid JSON: {e.msg}") from None
    try:
        return tomllib.loads(text), src
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(src, "(syntax)", f"invalid TOML: {e}") from None


_SEG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML value if it parses as one, else the plain string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(sc: dict[str, Any], key: str, value: Any, source: str | None = None) -> None:
    """Sets ``key`` (``flow.tcp``, ``link[1].loss.p``, ``duration``) in ``sc``.

    A list addressed without an index (``flow.tcp``) is set in every element.
    """
    parts = key.split(".")
    if not key or any(not _SEG.match(p) for p in parts):
        raise ScenarioError(source, key or "(override)", "expected a key like 'flow.tcp' or 'link[0].loss.p'")

    def walk(node: Any, i: int, trail: str) -> None:
        m = _SEG.match(parts[i])
        assert m is not None  # checked above
        name, idx = m.groups()
        last = i == len(parts) - 1
        here = f"{trail}.{name}" if trail else name
        if not isinstance(node, dict):
            raise ScenarioError(source, trail, "is not a table; cannot set a key inside it")
        if idx is None and isinstance(node.get(name), list) and not last:
            for k, el in enumerate(node[name]):
                walk(el, i + 1, f"{here}[{k}]")
            return
        if idx is not None:
            lst = node.get(name)
            if not isinstance(lst, list) or int(idx) >= len(lst):
                raise ScenarioError(source, f"{here}[{idx}]", "no such element")
            if last:
                lst[int(idx)] = value
            else:
                walk(lst[int(idx)], i + 1, f"{here}[{idx}]")
            return
        if last:
            node[name] = value
            return
        node.setdefault(name, {})
        walk(node[name], i + 1, here)

    walk(sc, 0, "")


@dataclass
class Result:
    """One simulation's results (the JSON contract of DESIGN.md) plus opt-in traces."""

    data: dict[str, Any]
    traces: dict[int, dict[str, Any]] = field(default_factory=dict)
    pcaps: dict[str, bytes] = field(default_factory=dict)
    #: Wall time of the simulation in seconds (not part of ``data``, which is the same for
    #: the same scenario and seed).
    wall_s: float = 0.0

    @property
    def flows(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.data["flows"])

    @property
    def links(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.data["links"])

    @property
    def fairness_jain(self) -> float | None:
        j = self.data["fairness_jain"]
        return None if j is None else float(j)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.data, **({"indent": 2} | kw))

    def _trace(self, flow: int) -> dict[str, Any]:
        if flow not in self.traces:
            raise KeyError(f"no time series for flow {flow}: run with timeseries=True (or a list of flow ids)")
        t: dict[str, Any] = self.traces[flow]
        return t

    def timeseries(self, flow: int = 0) -> pd.DataFrame:
        """Sender state after every ACK and timeout: t (s), cwnd, ssthresh (bytes; inf
        while no loss has set it), snd_una (cumulative ACK) and snd_max (highest
        sequence sent + 1)."""
        import numpy as np
        import pandas as pd

        t = self._trace(flow)
        ss = t["ssthresh"]
        return pd.DataFrame(
            {
                "t": t["t_ns"] / 1e9,
                "cwnd": t["cwnd"],
                "ssthresh": np.where(ss >= SSTHRESH_INFINITE, np.inf, ss.astype(float)),
                "snd_una": t["snd_una"],
                "snd_max": t["snd_max"],
            }
        )

    def rtt(self, flow: int = 0) -> pd.DataFrame:
        import pandas as pd

        t = self._trace(flow)
        return pd.DataFrame({"t": t["rtt_t_ns"] / 1e9, "rtt": t["rtt_ns"] / 1e9})

    def segments(self, flow: int = 0) -> pd.DataFrame:
        """Every data segment sent: t, seq (relative), len, retransmission flag."""
        import pandas as pd

        t = self._trace(flow)
        return pd.DataFrame(
            {"t": t["seg_t_ns"] / 1e9, "seq": t["seg_seq"], "len": t["seg_len"], "retx": t["seg_retx"]}
        )

    def sacks(self, flow: int = 0) -> pd.DataFrame:
        """SACK blocks the sender received: t, left, right (relative sequence numbers)."""
        import pandas as pd

        t = self._trace(flow)
        return pd.DataFrame({"t": t["sack_t_ns"] / 1e9, "left": t["sack_left"], "right": t["sack_right"]})

    def write_pcaps(self, out_dir: str | os.PathLike[str] = ".") -> list[Path]:
        from ._io import atomic_write_bytes

        paths = []
        for spec, data in self.pcaps.items():
            paths.append(atomic_write_bytes(Path(out_dir) / f"{spec}.pcap", data))
        return paths


def _split_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    return {k.replace("__", "."): v for k, v in overrides.items()}


def prepare(scenario: str | os.PathLike[str] | Mapping[str, Any],
            overrides: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], str | None]:
    sc, src = load_scenario(scenario)
    for k, v in (overrides or {}).items():
        apply_override(sc, k, v, src)
    return sc, src


def run(
    scenario: str | os.PathLike[str] | Mapping[str, Any],
    seed: int | None = None,
    *,
    timeseries: bool | Iterable[int] = False,
    pcap: Iterable[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    **kw_overrides: Any,
) -> Result:
    """Runs one simulation.

    ``scenario`` is a TOML/JSON file or a dict with the scenario keys. Overrides are
    ``{"flow.tcp": "reno"}`` or keyword arguments with ``__`` for dots
    (``flow__tcp="reno"``). ``timeseries=True`` records every flow's sender state (or
    pass flow ids). ``pcap=["a-b"]`` captures at node a's interface on link a-b.
    """
    ov = dict(overrides or {})
    ov.update(_split_overrides(kw_overrides))
    sc, src = prepare(scenario, ov)
    if seed is not None and (not isinstance(seed, int) or seed < 0):
        raise ScenarioError(src, "seed", f"expected a non-negative integer, got {seed!r}")
    try:
        text = json.dumps(sc)
    except (TypeError, ValueError) as e:
        raise ScenarioError(src, "(top level)", f"not representable as JSON: {e}") from None
    trace_all = timeseries is True
    trace_flows = None if isinstance(timeseries, bool) else [int(x) for x in timeseries]
    try:
        js, traces, pcaps, wall_s = _core.run(text, seed, trace_all, trace_flows, list(pcap or []))
    except _core.ScenarioError as e:
        path, msg = e.args
        raise ScenarioError(src, path, msg) from None
    if traces:
        import numpy as np

        traces = {int(k): {c: np.asarray(v) for c, v in d.items()} for k, d in traces.items()}
    return Result(json.loads(js), traces, dict(pcaps), wall_s)


def schema() -> dict[str, Any]:
    d: dict[str, Any] = json.loads(_core.schema())
    return d
