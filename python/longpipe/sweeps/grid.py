"""Grid axes (``--grid KEY=VALUES``), seeds, and their validation against the scenario.

An axis is a scenario key in ``--set`` syntax (``flow.tcp``, ``link[1].loss.p``) and a
list of values:

- ``KEY=V1,V2,...`` — each value a TOML value (``1e-3``, ``true``, ``"10ms"``, an
  inline table ``{kind = "ber", ber = 1e-7}``) or a bare word (``newreno``, ``10ms``);
- ``KEY=LO..HI:log:N`` — N values spaced evenly in log(value) from LO to HI;
- ``KEY=LO..HI:lin:N`` (or ``LO..HI:N``) — N evenly spaced values.

Range ends may carry a unit (``10ms..500ms:log:6``); the values then do too, each
rounded to the unit's resolution (a whole nanosecond, bit/s, byte or packet:
``21.867241ms``), and values that round to the same one are given once. Numbers without
a unit are rounded to 12 significant digits, so ``1e-4..1e-2:log:3`` is exactly
``1e-4, 1e-3, 1e-2``.

A sweep runs at most :data:`MAX_RUNS` simulations (points × seeds), checked before any
list of values or seeds is built; seeds are integers from 0 to 2^64 - 1.

Every key and value is applied to the scenario and validated by the core before
anything runs; an error names the key (``ScenarioError``: exit status 2 on the CLI).
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api import ScenarioError, apply_override, parse_value

SCALES = ("list", "lin", "log")
#: The most runs (grid points × seeds) one sweep, ``run --seeds`` or ``compare`` may ask
#: for: enough for any figure, and each run is validated before the first one starts.
MAX_RUNS = 100_000
_U64_MAX = 2**64 - 1
#: Base units per unit of the scenario's quantities (crates/longpipe-core/src/units.rs):
#: a range with a unit is rounded to whole base units (ns, bit/s, bytes, packets).
UNIT_SCALE = {
    "ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000,
    "bps": 1, "kbps": 1_000, "Kbps": 1_000, "Mbps": 1_000_000, "Gbps": 1_000_000_000,
    "B": 1, "KB": 1_000, "kB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000, "KiB": 1 << 10, "MiB": 1 << 20,
    "GiB": 1 << 30, "pkt": 1, "pkts": 1, "p": 1,
}
_RANGE = re.compile(r"^\s*(?P<lo>.+?)\.\.(?P<hi>.+?)(?::(?P<scale>lin|log))?:(?P<n>\d+)\s*$")
_NUM_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class Axis:
    """One grid dimension: a scenario key, its values (in the given order) and how they
    were spaced (``log`` axes are plotted on a log scale)."""

    key: str
    values: tuple[Any, ...]
    scale: str = "list"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "values": list(self.values), "scale": self.scale}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Axis:
        return cls(str(d["key"]), tuple(d["values"]), str(d.get("scale", "list")))


def canonical(value: Any) -> str:
    """The JSON text that identifies a value (for deduplication and hashing)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _round(x: float) -> float:
    return float(f"{x:.12g}")


def split_values(text: str) -> list[str]:
    """Splits on commas outside brackets, braces and quotes."""
    out, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [v.strip() for v in out]


def _where(spec: str, flag: str = "--grid") -> str:
    """``--grid SPEC`` (or the command's own flag, ``--vary``) for a message, a long SPEC
    shortened."""
    return f"{flag} {spec if len(spec) <= 80 else spec[:60] + '...'}"


def _range(spec: str, key: str, text: str, flag: str = "--grid") -> Axis | None:
    m = _RANGE.match(text)
    if not m:
        return None
    where = _where(spec, flag)
    lo_m, hi_m = _NUM_UNIT.match(m["lo"]), _NUM_UNIT.match(m["hi"])
    if not lo_m or not hi_m:
        raise ScenarioError(None, where, "a range is LO..HI:log:N or LO..HI:lin:N with numbers, e.g. 1e-4..1e-2:log:9")
    lo, hi, unit = float(lo_m[1]), float(hi_m[1]), lo_m[2]
    if hi_m[2] != unit:
        raise ScenarioError(None, where, f"both ends of a range need the same unit, got {lo_m[2]!r} and {hi_m[2]!r}")
    if len(m["n"]) > 7 or int(m["n"]) > MAX_RUNS:
        raise ScenarioError(None, where, f"at most {MAX_RUNS} values (a sweep runs at most {MAX_RUNS} "
                            "simulations; docs/limits.md)")
    n = int(m["n"])
    scale = m["scale"] or "lin"
    if n < 1:
        raise ScenarioError(None, where, "the number of values must be at least 1")
    if n == 1 and lo != hi:
        raise ScenarioError(None, where, "one value needs LO == HI")
    if scale == "log" and (lo <= 0 or hi <= 0):
        raise ScenarioError(None, where, "a log range needs positive ends")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ScenarioError(None, where, "range ends must be finite")
    nums: list[float] = []
    for i in range(n):
        f = i / (n - 1) if n > 1 else 0.0
        if scale == "log":
            x = 10 ** (math.log10(lo) + f * (math.log10(hi) - math.log10(lo)))
        else:
            x = lo + f * (hi - lo)
        if i == 0:
            x = lo
        elif i == n - 1:
            x = hi
        nums.append(_round(x))
    written = (lo_m[1] + hi_m[1]).lower()
    vals: list[Any]
    if unit:
        vals = [_with_unit(v, lo_m[1] if i == 0 else hi_m[1] if i == n - 1 else None, unit)
                for i, v in enumerate(nums)]
        vals = list(dict.fromkeys(vals))  # values that round to the same one, once
    elif scale == "lin" and "." not in written and "e" not in written and all(v.is_integer() for v in nums):
        vals = [int(v) for v in nums]
    else:
        vals = nums
    return Axis(key, tuple(vals), scale)


def _with_unit(x: float, written: str | None, unit: str) -> str:
    """A range point with its unit, rounded to whole base units of that unit (a
    nanosecond of ms, a bit/s of Mbps...); an end is taken as it was written."""
    from decimal import ROUND_HALF_EVEN, Context, Decimal

    f = UNIT_SCALE.get(unit)
    if f is None:  # a unit the core does not know: it names it in its error
        return f"{written or f'{x:.12g}'}{unit}"
    ctx = Context(prec=60)
    d = Decimal(written) if written is not None else Decimal(repr(x))
    base = ctx.multiply(d, Decimal(f)).quantize(Decimal(1), rounding=ROUND_HALF_EVEN, context=ctx)
    return format(ctx.divide(base, Decimal(f)).normalize(ctx), "f") + unit


def parse_axis(spec: str, flag: str = "--grid") -> Axis:
    """``KEY=V1,V2`` or ``KEY=LO..HI:log:N`` → :class:`Axis` (raises ScenarioError naming
    ``flag``, the option that gave it)."""
    if "=" not in spec:
        raise ScenarioError(None, _where(spec, flag), "expected KEY=V1,V2,... or KEY=LO..HI:log:N, "
                            "e.g. flow.tcp=newreno,hybla or link[1].loss.p=1e-4..1e-2:log:9")
    key, _, text = spec.partition("=")
    key = key.strip()
    if not key:
        raise ScenarioError(None, _where(spec, flag), "missing the key before '='")
    if key == "seed":
        raise ScenarioError(None, _where(spec, flag), "use --seeds N to repeat runs over seeds")
    rng = _range(spec, key, text, flag)
    if rng is not None:
        return rng
    raw = split_values(text)
    if any(r == "" for r in raw):
        raise ScenarioError(None, _where(spec, flag), "empty value (two commas in a row, or a trailing comma?)")
    return make_axis(key, [parse_value(r) for r in raw])


def make_axis(key: str, values: Sequence[Any], scale: str = "list") -> Axis:
    """An axis from Python values; duplicates are dropped (first kept)."""
    if scale not in SCALES:
        raise ScenarioError(None, key, f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    seen: set[str] = set()
    vals = []
    for v in values:
        try:
            c = canonical(v)
        except (TypeError, ValueError):
            raise ScenarioError(None, key, f"value {v!r} is not a number, string, boolean, list or table") from None
        if c not in seen:
            seen.add(c)
            vals.append(v)
    if not vals:
        raise ScenarioError(None, key, "needs at least one value")
    return Axis(key, tuple(vals), scale)


def axes_from(grid: Mapping[str, Any] | Sequence[str] | None, flag: str = "--grid") -> list[Axis]:
    """Axes from CLI specs (``["flow.tcp=reno,hybla", ...]``) or a dict
    ``{"flow.tcp": ["reno", "hybla"], "link[1].loss.p": "1e-4..1e-2:log:9"}``."""
    if grid is None:
        return []
    axes: list[Axis] = []
    if isinstance(grid, Mapping):
        for k, v in grid.items():
            if isinstance(v, Axis):
                axes.append(v)
            elif isinstance(v, str):
                axes.append(parse_axis(f"{k}={v}", flag))
            elif isinstance(v, (list, tuple)):
                if str(k) == "seed":
                    raise ScenarioError(None, "seed", "use seeds=N to repeat runs over seeds")
                axes.append(make_axis(str(k), list(v)))
            else:
                axes.append(make_axis(str(k), [v]))
    else:
        axes = [parse_axis(s, flag) for s in grid]
    keys = [a.key for a in axes]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ScenarioError(None, f"{flag} {dup[0]}", f"given twice; list all its values in one {flag}")
    return axes


def _count(n: int, first: int) -> list[int]:
    if n < 1:
        raise ScenarioError(None, "--seeds", f"expected a positive count, got {n}")
    if n > MAX_RUNS:
        raise ScenarioError(None, "--seeds", f"{n} seeds: at most {MAX_RUNS} runs (docs/limits.md)")
    if first + n - 1 > _U64_MAX:
        raise ScenarioError(None, "--seeds", f"{n} seeds from {first} would pass the largest seed, {_U64_MAX}")
    return list(range(first, first + n))


def _seed_text(x: str, spec: str) -> int:
    t = x.strip()
    if not t.isdigit() or len(t) > 20 or int(t) > _U64_MAX:
        raise ScenarioError(None, "--seeds", f"expected N, A..B or a comma-separated list of seeds (integers from 0 "
                            f"to {_U64_MAX}), got {spec!r}")
    return int(t)


def parse_seeds(spec: Any, first: int = 1) -> list[int]:
    """``N`` → first..first+N-1; ``"3,7,9"`` or a list → those; ``"1..20"`` → 1..20.

    Seeds are integers from 0 to 2^64 - 1, at most MAX_RUNS of them (checked before any
    list is built). ScenarioError for a bad value (blamed on ``--seeds``), TypeError for
    a Python value of the wrong type (``seeds=[1.5]``, ``seeds=["a"]``)."""
    if spec is None:
        return [first]
    if isinstance(spec, bool):
        raise TypeError(f"seeds: expected a count, a string such as '1..20' or a list of ints, got {spec!r}")
    if isinstance(spec, numbers.Integral):
        return _count(int(spec), first)
    if isinstance(spec, str):
        s = spec.strip()
        if ".." in s:
            a, b = (_seed_text(x, spec) for x in s.split("..", 1))
            if b < a:
                raise ScenarioError(None, "--seeds", f"A..B needs A <= B, got {spec!r}")
            if b - a + 1 > MAX_RUNS:
                raise ScenarioError(None, "--seeds", f"{b - a + 1} seeds: at most {MAX_RUNS} runs (docs/limits.md)")
            return list(range(a, b + 1))
        if "," in s:
            items = [x for x in s.split(",") if x.strip()]
            if len(items) > MAX_RUNS:
                raise ScenarioError(None, "--seeds", f"{len(items)} seeds: at most {MAX_RUNS} runs (docs/limits.md)")
            seeds = [_seed_text(x, spec) for x in items]
        else:
            t = s.lstrip("+")
            if t.isdigit() and len(t) <= 20:
                return _count(int(t), first)
            raise ScenarioError(None, "--seeds", f"expected N, A..B or a comma-separated list, got {spec!r}")
    else:
        if isinstance(spec, (bytes, Mapping)) or not isinstance(spec, Iterable):
            raise TypeError(f"seeds: expected a count, a string such as '1..20' or a list of ints, "
                            f"got {type(spec).__name__}")
        seeds = []
        for x in spec:
            if isinstance(x, bool) or not isinstance(x, numbers.Integral):
                raise TypeError(f"seeds: expected ints, got {x!r} ({type(x).__name__})")
            if not 0 <= int(x) <= _U64_MAX:
                raise ScenarioError(None, "seeds", f"expected integers from 0 to {_U64_MAX}, got {int(x)}")
            seeds.append(int(x))
            if len(seeds) > MAX_RUNS:
                raise ScenarioError(None, "seeds", f"more than {MAX_RUNS} seeds (docs/limits.md)")
    if not seeds:
        raise ScenarioError(None, "--seeds", f"expected at least one seed, got {spec!r}")
    return sorted(set(seeds))


def seeds_text(seeds: Sequence[int]) -> str:
    """Seeds for a header: ``A..B`` when they are consecutive (more than two), else a
    list (shortened beyond 12)."""
    if len(seeds) > 2 and seeds[-1] - seeds[0] + 1 == len(seeds) and list(seeds) == sorted(set(seeds)):
        return f"{seeds[0]}..{seeds[-1]}"
    shown = [str(x) for x in seeds] if len(seeds) <= 12 else [*map(str, seeds[:8]), "...", *map(str, seeds[-3:])]
    return ", ".join(shown)


def count_runs(axes: Sequence[Axis], n_seeds: int) -> int:
    """Points × seeds; ScenarioError above MAX_RUNS (before anything is expanded)."""
    n = n_seeds
    for a in axes:
        n *= len(a.values)
    if n > MAX_RUNS:
        sizes = " × ".join([str(len(a.values)) for a in axes] + [f"{n_seeds} seed(s)"])
        raise ScenarioError(None, "--grid", f"{sizes} = {n} runs; at most {MAX_RUNS} in one sweep (docs/limits.md)")
    return n


def points(axes: Sequence[Axis]) -> Iterator[tuple[tuple[str, Any], ...]]:
    """Every combination of axis values, in grid order (the last axis varies fastest)."""
    for combo in itertools.product(*(a.values for a in axes)):
        yield tuple((a.key, v) for a, v in zip(axes, combo))


def _validate(sc: Mapping[str, Any], src: str | None, what: str) -> None:
    from .. import _core

    try:
        text = json.dumps(sc, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ScenarioError(src, what, f"not representable as JSON: {e}") from None
    try:
        _core.validate(text)
    except _core.ScenarioError as e:
        path, msg = e.args
        raise ScenarioError(src, path, f"{msg} (with {what})") from None


def apply_point(base: Mapping[str, Any], point: Sequence[tuple[str, Any]], src: str | None,
                flag: str = "--grid") -> dict[str, Any]:
    """The base scenario with a point's values set (a deep copy). An element the
    scenario lacks (``node[0].kind`` without a ``[[node]]``) is refused with the way to
    vary the whole list instead."""
    sc: dict[str, Any] = json.loads(json.dumps(base))
    for k, v in point:
        try:
            apply_override(sc, k, json.loads(json.dumps(v)), src)
        except ScenarioError as e:
            hint = ""
            head = re.match(r"^([A-Za-z_]+)\[\d+\]", k)
            if head and "no such element" in e.message:
                hint = (f"; the scenario has no {e.path}: vary whole tables instead, e.g. "
                        f"{flag} '{head[1]}=[{{...}}],[{{...}}]'")
            raise ScenarioError(src, e.path, f"{e.message} ({flag} key {k}{hint})") from None
    return sc


def validate_grid(base: Mapping[str, Any], src: str | None, axes: Sequence[Axis], flag: str = "--grid") -> None:
    """Applies every key and value (alone, then every combination) and validates the
    result with the core; raises ScenarioError naming the key and value."""
    for a in axes:
        for v in a.values:
            what = f"{flag} {a.key}={format_value(v)}"
            _validate(apply_point(base, [(a.key, v)], src, flag), src, what)
    if len(axes) > 1:
        for pt in points(axes):
            what = f"{flag} " + ", ".join(f"{k}={format_value(v)}" for k, v in pt)
            _validate(apply_point(base, pt, src, flag), src, what)


def format_value(v: Any) -> str:
    """A value as the user would type it (no float noise, strings bare)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.12g}"
    if isinstance(v, str):
        return v
    return canonical(v)


def display_value(v: Any) -> str:
    """A value for tables, legends and titles: floats to 6 significant digits."""
    if isinstance(v, float):
        return f"{v:.6g}"
    return format_value(v)
