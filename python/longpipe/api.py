"""The Python API: ``longpipe.run(path_or_dict, seed=None, **overrides) -> Result``.

The scenario schema is defined once, in the Rust core (serde); Python only reads TOML,
applies ``--set``-style overrides and converts to JSON.
"""

from __future__ import annotations

import copy
import datetime
import json
import math
import numbers
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core

if TYPE_CHECKING:  # NumPy and pandas load on first use: the CLI starts faster without them
    import pandas as pd

    from ._results import SimResult

# The sender reports an unset ("infinite") ssthresh as this value (u64::MAX / 4).
SSTHRESH_INFINITE = (2**64 - 1) // 4


#: Largest scenario file read (bytes); larger files are refused before parsing.
MAX_SCENARIO_BYTES = 4 * 1024 * 1024
#: Deepest nesting of tables/lists in a scenario (file, dict or override value).
MAX_NESTING = 64
_U64_MAX = 2**64 - 1
_I64_MIN = -(2**63)


def _numpy_types() -> tuple[tuple[type, ...], tuple[type, ...], tuple[type, ...]]:
    """NumPy's (bool, integer, floating) scalar types if NumPy is loaded, else empty:
    without NumPy imported no NumPy value can reach us, and importing it costs start-up."""
    np = sys.modules.get("numpy")
    if np is None:
        return (), (), ()
    return (np.bool_,), (np.integer,), (np.floating,)


def _one_line(text: str) -> str:
    """Escapes control characters (newlines, NULs, ...) so a message stays on one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


#: A quoted excerpt of a scenario in a message is cut to this many characters, and a
#: whole message to MAX_MESSAGE.
MAX_QUOTE = 60
MAX_MESSAGE = 600
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`')
#: Keys naming files a scenario reads (traces, schedules): messages about them never
#: quote those files' content (a scenario could name /etc/shadow).
_LINKED = re.compile(r"^link\[\d+\]\.(?:(?:rate|rate_ba)\.trace|schedule\[\d+\]\.file)$")


def _excerpts(path: str, message: str) -> str:
    """A message with what it quotes from files cut short, and nothing quoted from the
    files a scenario names (only the scenario itself was named by the user)."""
    if _LINKED.match(path or ""):
        cut = _QUOTED.sub('"..."', message)
        return cut if cut == message else cut + " (the content of files a scenario names is not shown)"
    return _QUOTED.sub(lambda m: m[0] if len(m[0]) <= MAX_QUOTE else m[0][: MAX_QUOTE - 4] + "..." + m[0][-1],
                       message)


class ScenarioError(ValueError):
    """Bad scenario input. ``str()`` is ``"FILE: field.path: what was expected"``, always
    on one line (control characters in keys and values are shown escaped), quoting at
    most a short excerpt of the scenario (and nothing of the files it names)."""

    def __init__(self, source: str | None, path: str, message: str):
        self.source = source
        self.path = path
        self.message = _excerpts(path, message)
        where = f"{source}: " if source else ""
        text = _one_line(f"{where}{path or '(top level)'}: {self.message}")
        if len(text) > MAX_MESSAGE:
            text = text[: MAX_MESSAGE - 30] + f"... ({len(text)} characters)"
        super().__init__(text)


def _read_scenario_file(path: Path, src: str) -> bytes:
    """The bytes of a regular file of at most MAX_SCENARIO_BYTES; never blocks on a FIFO
    or a kernel file, and never reads an endless device such as /dev/zero."""
    from ._io import NotReadable, read_regular_file

    try:
        return read_regular_file(path, MAX_SCENARIO_BYTES)
    except NotReadable as e:
        if e.kind == "directory":
            msg = "is a directory; expected a scenario file (.toml or .json)"
        elif e.kind == "special":
            msg = f"{e}; expected a scenario file (.toml or .json)"
        elif e.kind == "too_large":
            msg = f"{e}; the limit is {MAX_SCENARIO_BYTES // (1024 * 1024)} MiB (docs/limits.md)"
        else:
            msg = str(e)
        raise ScenarioError(src, "(file)", msg) from None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def scenario_tree(obj: Any, source: str | None = None, path: str = "", depth: int = 0) -> Any:
    """A JSON-ready copy of a scenario (sub)tree, or ScenarioError naming the field path.

    Accepts tables (str keys), lists/tuples, str, bool, 64-bit integers and finite
    floats (NumPy scalars too). Refuses None/null, NaN and infinities, dates and times
    (TOML has them; the scenario uses duration strings), other Python objects, and
    nesting deeper than MAX_NESTING.
    """
    here = path or "(top level)"
    if depth > MAX_NESTING:
        short = here if len(here) <= 80 else here[:80] + "..."
        raise ScenarioError(source, short, f"nested deeper than {MAX_NESTING} levels")
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ScenarioError(source, here, f"keys must be strings, got {k!r} ({type(k).__name__})")
            out[k] = scenario_tree(v, source, f"{path}.{k}" if path else k, depth + 1)
        return out
    if isinstance(obj, (list, tuple)):
        return [scenario_tree(v, source, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj)]
    np_bool, np_int, np_float = _numpy_types()
    if isinstance(obj, (str, bool, *np_bool)):
        return obj if isinstance(obj, str) else bool(obj)
    if isinstance(obj, (int, *np_int)):
        v = int(obj)  # type: ignore[call-overload]
        if not _I64_MIN <= v <= _U64_MAX:
            shown = str(v) if v.bit_length() < 200 else f"an integer of {v.bit_length()} bits"
            raise ScenarioError(source, here, f"{shown} is out of range (integers are 64-bit: at most {_U64_MAX})")
        return v
    if isinstance(obj, (float, *np_float)):
        v = float(obj)  # type: ignore[arg-type]
        if not math.isfinite(v):
            raise ScenarioError(source, here, f"must be a finite number, got {v}")
        return v
    if obj is None:
        raise ScenarioError(source, here, "null/None is not a value; leave the key out to get its default")
    if isinstance(obj, (datetime.date, datetime.time)):
        raise ScenarioError(source, here, f"a date or time of day ({obj}) is not a value here; "
                                          "times are durations such as \"2s\"")
    raise ScenarioError(source, here, f"a value of type {type(obj).__name__} is not a scenario value "
                                      "(expected a string, number, boolean, list or table)")


def load_scenario(scenario: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Returns (scenario dict, source name) from a TOML/JSON path or a dict.

    A file must be a regular file of at most MAX_SCENARIO_BYTES, UTF-8 (a byte-order
    mark is allowed); ``.json`` files are JSON, anything else TOML. The files its links
    name (traces, schedule CSVs) are read in, relative to it. Raises
    ScenarioError for any problem with the file or its content, TypeError if
    ``scenario`` is neither a path (str or os.PathLike) nor a mapping.
    """
    if isinstance(scenario, Mapping):
        return scenario_tree(scenario), None
    if not isinstance(scenario, (str, os.PathLike)):
        raise TypeError(f"scenario: expected a file path (str or os.PathLike) or a dict, "
                        f"got {type(scenario).__name__}")
    try:
        path = Path(scenario)
    except TypeError:
        raise TypeError("scenario: expected a file path (str or os.PathLike) or a dict, "
                        f"got a PathLike of {type(os.fspath(scenario)).__name__}") from None
    src = str(path)
    if "\0" in src:
        raise ScenarioError(src, "(file)", "the file name contains a NUL character")
    if isinstance(scenario, str) and not scenario:
        raise ScenarioError(None, "(file)", "empty file name")
    raw = _read_scenario_file(path, src)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(src, "(file)", f"not UTF-8 text (byte {e.start})") from None
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark, as some editors write
    nest = f"nested too deeply (the limit is {MAX_NESTING} levels)"
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as e:
            raise ScenarioError(src, f"line {e.lineno}", f"invalid JSON: {e.msg}") from None
        except ValueError as e:  # a duplicate key
            raise ScenarioError(src, "(syntax)", f"invalid JSON: {e}") from None
        except RecursionError:
            raise ScenarioError(src, "(syntax)", nest) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(src, "(syntax)", f"invalid TOML: {e}") from None
        except RecursionError:
            raise ScenarioError(src, "(syntax)", nest) from None
    if not isinstance(data, dict):
        raise ScenarioError(src, "(top level)", f"expected a table of scenario keys, got a {type(data).__name__}")
    sc = scenario_tree(data, src)
    _load_link_files(sc, src)  # relative to the file, so the dict runs from anywhere
    return sc, src


def _load_link_files(sc: dict[str, Any], src: str | None) -> None:
    from ._linkfiles import load_link_files

    try:
        load_link_files(sc, src)
    except ValueError as e:
        raise ScenarioError(src, *e.args) from None


_SEG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")
#: Top-level keys that hold arrays of tables ([[node]], [[link]], [[flow]]).
_ARRAYS = ("node", "link", "flow")


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML value if it parses as one, else the plain string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def apply_override(sc: dict[str, Any], key: str, value: Any, source: str | None = None) -> None:
    """Sets ``key`` (``flow.tcp``, ``link[1].loss.p``, ``duration``) in ``sc``.

    A list addressed without an index (``flow.tcp``) is set in every element; a list
    with no elements (or a missing ``node``/``link``/``flow``) is an error rather than
    a silent no-op.
    """
    if not isinstance(key, str):
        raise TypeError(f"overrides: keys must be strings like 'flow.tcp', got {key!r} ({type(key).__name__})")
    parts = key.split(".")
    if len(parts) > MAX_NESTING:
        raise ScenarioError(source, key[:60] + "...", f"nested deeper than {MAX_NESTING} levels")
    if not key or any(not _SEG.match(p) for p in parts):
        raise ScenarioError(source, key or "(override)", "expected a key like 'flow.tcp' or 'link[0].loss.p'")
    value = scenario_tree(value, source, key)

    def walk(node: Any, i: int, trail: str) -> None:
        m = _SEG.match(parts[i])
        assert m is not None  # checked above
        name, idx = m.groups()
        last = i == len(parts) - 1
        here = f"{trail}.{name}" if trail else name
        if not isinstance(node, dict):
            raise ScenarioError(source, trail, "is not a table; cannot set a key inside it")
        if not trail and name in _ARRAYS and idx is None and not last and not node.get(name):
            raise ScenarioError(source, name, f"the scenario has no [[{name}]] entries; cannot set {key}")
        if idx is None and isinstance(node.get(name), list) and not last:
            for k, el in enumerate(node[name]):
                walk(el, i + 1, f"{here}[{k}]")
            return
        if idx is not None:
            lst = node.get(name)
            if not isinstance(lst, list) or int(idx) >= len(lst):
                raise ScenarioError(source, f"{here}[{idx}]", "no such element")
            if last:
                lst[int(idx)] = copy.deepcopy(value)
            else:
                walk(lst[int(idx)], i + 1, f"{here}[{idx}]")
            return
        if last:
            node[name] = copy.deepcopy(value)
            return
        node.setdefault(name, {})
        walk(node[name], i + 1, here)

    walk(sc, 0, "")


@dataclass
class Result:
    """One simulation's results (the JSON contract of DESIGN.md) plus opt-in traces."""

    data: SimResult
    traces: dict[int, dict[str, Any]] = field(default_factory=dict)
    pcaps: dict[str, bytes] = field(default_factory=dict)
    #: Wall time of the simulation in seconds (not part of ``data``, which is the same for
    #: the same scenario and seed).
    wall_s: float = 0.0
    #: The applications' record tables as columns (see :mod:`longpipe.workload`).
    records: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def pages(self) -> pd.DataFrame:
        """Web pages: flow, start, end, load (s), bytes, objects (NaN end: unfinished)."""
        from .workload import frame

        return frame(self.records, "pages")

    @property
    def requests(self) -> pd.DataFrame:
        """Requests and responses: flow, conn, start, end, response_time (s), request and
        response bytes."""
        from .workload import frame

        return frame(self.records, "requests")

    @property
    def chunks(self) -> pd.DataFrame:
        """Video chunks: flow, index, start, end, download_time (s), bytes, bitrate."""
        from .workload import frame

        return frame(self.records, "chunks")

    @property
    def stalls(self) -> pd.DataFrame:
        """Times a video did not play: flow, start, end, duration (s), startup."""
        from .workload import frame

        return frame(self.records, "stalls")

    @property
    def transfers(self) -> pd.DataFrame:
        """Transfers of arrivals flows: flow, start, end, fct (s), bytes, rate_bps."""
        from .workload import frame

        return frame(self.records, "transfers")

    @property
    def users(self) -> pd.DataFrame:
        """One row per user (each ``[[user]]``, else each application flow, else each
        flow): goodput and the figures of its applications."""
        from .workload import users

        return users(self.data)

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


def _check_overrides(overrides: Any) -> dict[str, Any]:
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides: expected a dict such as {{'flow.tcp': 'reno'}}, got {type(overrides).__name__}")
    for k in overrides:
        if not isinstance(k, str):
            raise TypeError(f"overrides: keys must be strings like 'flow.tcp', got {k!r} ({type(k).__name__})")
    return dict(overrides)


def prepare(scenario: str | os.PathLike[str] | Mapping[str, Any],
            overrides: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], str | None]:
    """The scenario as a JSON-ready dict with ``overrides`` applied and the files its links
    name (traces, schedule CSVs) read in, and its source name."""
    ov = _check_overrides(overrides)
    sc, src = load_scenario(scenario)
    for k, v in ov.items():
        apply_override(sc, k, v, src)
    _load_link_files(sc, src)
    return sc, src


def _check_seed(seed: Any, src: str | None) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, (bool, *_numpy_types()[0])) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed: expected an int (or None for the scenario's seed), got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    assert isinstance(seed, int)
    if not 0 <= seed <= _U64_MAX:
        raise ScenarioError(src, "seed", f"must be an integer from 0 to {_U64_MAX}, got {seed}")
    return seed


def _check_timeseries(timeseries: Any, src: str | None) -> tuple[bool, list[int] | None]:
    """(trace_all, trace_flows) from ``timeseries=``."""
    if timeseries is None or timeseries is False:
        return False, None
    if timeseries is True:
        return True, None
    what = "timeseries: expected True, False or a list of flow ids (int)"
    if isinstance(timeseries, (str, bytes, Mapping)) or not isinstance(timeseries, Iterable):
        raise TypeError(f"{what}, got {type(timeseries).__name__} {timeseries!r}")
    ids = []
    for x in timeseries:
        if isinstance(x, (bool, *_numpy_types()[0])) or not isinstance(x, numbers.Integral):
            raise TypeError(f"{what}, got an element {x!r} ({type(x).__name__})")
        x = int(x)
        if not 0 <= x <= _U64_MAX:
            raise ScenarioError(src, "timeseries", f"no flow {x}: flow ids are 0, 1, ... in scenario order")
        ids.append(x)
    return False, ids


def _check_pcap(pcap: Any) -> list[str]:
    if pcap is None:
        return []
    if isinstance(pcap, str):
        return [pcap]  # one capture point, not a list of characters
    what = "pcap: expected a capture spec such as 'a-b' or a list of them"
    if isinstance(pcap, (bytes, Mapping)) or not isinstance(pcap, Iterable):
        raise TypeError(f"{what}, got {type(pcap).__name__} {pcap!r}")
    specs = list(pcap)
    for x in specs:
        if not isinstance(x, str):
            raise TypeError(f"{what}, got an element {x!r} ({type(x).__name__})")
    return specs


def _check_timeseries_dir(d: str) -> None:
    """``timeseries_dir``: an existing directory where files can be created (checked by
    creating and removing one: os.access says yes to root on a read-only file system,
    and /proc is a directory no file can be created in). ScenarioError otherwise."""
    import tempfile

    if not os.path.isdir(d):
        raise ScenarioError(None, "timeseries_dir", f"{d!r} is not an existing directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".longpipe-probe.", dir=d)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise ScenarioError(None, "timeseries_dir", f"cannot write in {d!r}: {e.strerror or e}") from None


def run(
    scenario: str | os.PathLike[str] | Mapping[str, Any],
    seed: int | None = None,
    *,
    timeseries: bool | Iterable[int] | None = False,
    pcap: str | Iterable[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], Any] | None = None,
    force: bool = False,
    timeseries_dir: str | os.PathLike[str] | None = None,
    **kw_overrides: Any,
) -> Result:
    """Runs one simulation.

    ``scenario`` is a TOML/JSON file (str or os.PathLike) or a dict with the scenario
    keys. Overrides are ``{"flow.tcp": "reno"}`` or keyword arguments with ``__`` for
    dots (``flow__tcp="reno"``). ``seed`` replaces the scenario's seed (0 to 2**64-1).
    ``timeseries=True`` records every flow's sender state (or pass a list of flow
    ids; ``False``/``None``: none). ``pcap="a-b"`` (or a list of such specs) captures
    at node a's interface on link a-b. ``progress(simulated_ns, duration_ns)``, if
    given, is called about twice a second while the simulation runs.
    ``timeseries_dir=D`` (an existing directory) streams the time series to CSV files
    there as the run goes instead of holding them (memory stays flat however long the
    run): ``flow{id}-timeseries.csv``, ``-segments.csv`` and ``-rtt.csv`` per traced
    flow (every flow unless ``timeseries`` lists some), with the columns of
    ``Result.timeseries()``, ``.segments()`` and ``.rtt()``, times as exact decimal
    seconds; the returned ``Result`` then holds no traces. The files are written in
    place (the CLI stages them and moves them into ``--out`` only when the run ends).

    Errors:

    * ``ScenarioError`` (a ``ValueError``) for anything wrong with the scenario or a
      value: a missing/unreadable/oversized file, bad syntax, an unknown key, a value
      out of range (``seed=2**64``, ``seed=-1``, ``timeseries=[-1]`` or a flow id the
      scenario lacks), NaN, ``None``, dates. Its ``str()`` is one line:
      ``"FILE: field.path: what was expected"``.
    * ``ScenarioError`` with path ``timeseries_dir`` for a ``timeseries_dir`` that is not
      an existing directory where files can be created.
    * ``TypeError`` with a message naming the argument when an argument of ``run``
      itself has the wrong Python type: ``run(123)``, ``seed=True`` or ``1.0``,
      ``timeseries="abc"`` or ``[1.5]``, ``pcap=[1]``, ``overrides={1: 2}``.
    * ``ScenarioError`` with path ``(work)`` when the core estimates the run above its work
      limit (about 1e9 events, a few minutes; docs/limits.md); ``force=True`` runs it.
    * ``KeyboardInterrupt`` on Ctrl-C: the simulation stops within a few tens of
      milliseconds and nothing is returned.
    """
    if not isinstance(scenario, (str, os.PathLike, Mapping)):
        raise TypeError(f"scenario: expected a file path (str or os.PathLike) or a dict, "
                        f"got {type(scenario).__name__}")
    ov = _check_overrides(overrides)
    ov.update(_split_overrides(kw_overrides))
    specs = _check_pcap(pcap)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable(simulated_ns, duration_ns), got {type(progress).__name__}")
    if isinstance(seed, (bool, *_numpy_types()[0])) or not (seed is None or isinstance(seed, numbers.Integral)):
        _check_seed(seed, None)  # raises the TypeError before any file is read
    sc, src = prepare(scenario, ov)
    seed = _check_seed(seed, src)
    if timeseries_dir is not None:
        if not isinstance(timeseries_dir, (str, os.PathLike)):
            raise TypeError(f"timeseries_dir: expected a directory path, got {type(timeseries_dir).__name__}")
        _check_timeseries_dir(os.fspath(timeseries_dir))
        if timeseries is None or timeseries is False:
            timeseries = True
    trace_all, trace_flows = _check_timeseries(timeseries, src)
    text = json.dumps(sc, allow_nan=False)
    try:
        js, traces, pcaps, wall_s, records = _core.run(
            text, seed, trace_all, trace_flows, specs, progress=progress, force=bool(force),
            trace_dir=None if timeseries_dir is None else os.fspath(timeseries_dir), records=True)
    except _core.ScenarioError as e:
        path, msg = e.args
        raise ScenarioError(src, path, msg) from None
    if traces:
        import numpy as np

        traces = {int(k): {c: np.asarray(v) for c, v in d.items()} for k, d in traces.items()}
    data = json.loads(js)
    if "workload" not in data:
        records = {}
    return Result(data, traces, dict(pcaps), wall_s, records)


def validate(scenario: str | os.PathLike[str] | Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Checks a scenario without running it: ScenarioError as ``run`` would raise.

    Returns ``{"flows": number of flows (after count), "duration_ns": ...}``.
    """
    sc, src = prepare(scenario, overrides)
    try:
        return dict(_core.validate(json.dumps(sc, allow_nan=False)))
    except _core.ScenarioError as e:
        path, msg = e.args
        raise ScenarioError(src, path, msg) from None


def schema() -> dict[str, Any]:
    d: dict[str, Any] = json.loads(_core.schema())
    return d


def result_schema() -> dict[str, Any]:
    """The JSON Schema of a result (``Result.data``), derived from the Rust structs that
    write it; ``longpipe._results`` holds the same as TypedDicts."""
    d: dict[str, Any] = json.loads(_core.result_schema())
    return d
