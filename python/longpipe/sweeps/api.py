"""``longpipe.sweep(scenario, grid, seeds, out=...)`` and ``longpipe.sweeps.load(DIR)``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api import ScenarioError, prepare
from .engine import Outcome, Task, check_executor, check_jobs, make_task, run_tasks
from .grid import (
    Axis,
    apply_point,
    axes_from,
    count_runs,
    display_value,
    parse_seeds,
    points,
    seeds_text,
    validate_grid,
)
from .store import FORMAT, Store, param_names, scenario_hash

if TYPE_CHECKING:
    import pandas as pd


class Sweep:
    """The runs of a sweep (one row each) with its grid; ``summary()``, ``plot()``."""

    def __init__(self, manifest: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], out: Path | None = None,
                 outcome: Outcome | None = None):
        self.manifest = dict(manifest)
        self.rows = [dict(r) for r in rows]
        self.out = out
        self.outcome = outcome

    @property
    def axes(self) -> list[Axis]:
        return [Axis.from_json(a) for a in self.manifest.get("axes", [])]

    @property
    def keys(self) -> list[str]:
        return [a.key for a in self.axes]

    @property
    def name(self) -> str:
        return str(self.manifest.get("scenario", {}).get("name") or self.manifest.get("source") or "sweep")

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run: ids, seed, the grid parameters, summary metrics, ``result``
        (the whole result document as JSON)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    @property
    def users(self) -> pd.DataFrame:
        """One row per user per run: run id, seed, the grid parameters, then the user's
        goodput and figures (:func:`longpipe.workload.user_rows`)."""
        import json

        import pandas as pd

        from ..workload import user_rows

        rows = []
        for r in self.rows:
            head = {"run_id": r["run_id"], "seed": r["seed"], **{k: r.get(k) for k in self.keys}}
            for u in user_rows(json.loads(r["result"])):
                rows.append({**head, **u})
        return pd.DataFrame(rows)

    def summary(self, metrics: Sequence[str] | None = None) -> pd.DataFrame:
        """Mean and 95 % CI half-width per point (``<metric>_mean``, ``<metric>_ci95``)."""
        import pandas as pd

        from .summary import summarize

        return pd.DataFrame(summarize(self.rows, self.axes, metrics))

    def plot(self, x: str, y: str = "goodput", hue: str | None = None, path: str | os.PathLike[str] | None = None,
             where: Mapping[str, Any] | None = None, logy: bool = False, models: Sequence[str] = ()) -> Path:
        """Writes a PNG of metric ``y`` against grid key ``x`` (mean, 95 % CI); ``models``
        (``longpipe model``'s names) drawn beside the goodput."""
        from .plot import plot_sweep

        if path is None:
            if self.out is None:
                raise ScenarioError(None, "path", "give a file name (this sweep has no output directory)")
            path = self.out / default_plot_name(x, y, hue)
        return plot_sweep(self.rows, self.axes, path, x=x, y=y, hue=hue, where=where, title=self.name, logy=logy,
                          models=models, base=self.manifest.get("scenario", {}))


def default_plot_name(x: str, y: str, hue: str | None) -> str:
    def clean(s: str) -> str:
        return "".join(c if c.isalnum() else "_" for c in s).strip("_")

    return f"{clean(y)}-vs-{clean(x)}" + (f"-by-{clean(hue)}" if hue else "") + ".png"


def plan(scenario: str | os.PathLike[str] | Mapping[str, Any], grid: Mapping[str, Any] | Sequence[str] | None = None,
         seeds: int | str | Sequence[int] | None = None, overrides: Mapping[str, Any] | None = None,
         force: bool = False, flag: str = "--grid") -> tuple[dict[str, Any], list[Axis], list[int], list[Task]]:
    """Validates everything and expands the grid: (manifest, axes, seeds, tasks). Unless
    ``force``, a point whose run the core estimates above its work limit is refused.
    ``flag`` is the option that gave the grid, for messages (``--vary`` in compare)."""
    from .grid import _validate

    base, src = prepare(scenario, overrides)
    _validate(base, src, "the scenario" + (" and --set" if overrides else ""))
    axes = axes_from(grid, flag)
    first = base.get("seed", 1)
    seed_list = parse_seeds(seeds, first if isinstance(first, int) and 0 <= first < 2**64 else 1)
    count_runs(axes, len(seed_list))
    validate_grid(base, src, axes, flag)
    base_noseed = {k: v for k, v in base.items() if k != "seed"}
    from .. import __version__

    manifest = {"format": FORMAT, "source": src, "scenario": base_noseed, "scenario_hash": scenario_hash(base),
                "axes": [a.to_json() for a in axes], "seeds": seed_list, "longpipe_version": __version__}
    tasks = [make_task(apply_point(base, pt, src, flag), s, pt) for pt in points(axes) for s in seed_list]
    if not force:
        from .. import _core

        for t in {t.scenario_json: t for t in tasks}.values():
            try:
                _core.check_work(t.scenario_json)
            except _core.ScenarioError as e:
                where = ", ".join(f"{k}={val}" for k, val in t.params)
                path, msg = e.args
                raise ScenarioError(src, path, f"{'at ' + where + ': ' if where else ''}{msg}") from None
    return manifest, axes, seed_list, tasks


def sweep(scenario: str | os.PathLike[str] | Mapping[str, Any], grid: Mapping[str, Any] | Sequence[str] | None = None,
          seeds: int | str | Sequence[int] | None = None, *, out: str | os.PathLike[str] | None = None,
          executor: str = "local", jobs: int | None = None, progress: bool = False,
          overrides: Mapping[str, Any] | None = None, force: bool = False) -> Sweep:
    """Runs ``scenario`` at every point of ``grid`` for every seed.

    ``grid``: ``{"flow.tcp": ["newreno", "hybla"], "link[1].loss.p": "1e-4..1e-2:log:9"}``
    (or CLI specs ``["flow.tcp=newreno,hybla", ...]``); ``seeds``: a count N (seeds
    s..s+N-1 from the scenario's seed, default 1), ``"A..B"`` or a list. With ``out``,
    each finished run is stored there (Parquet, see :mod:`longpipe.sweeps.store`) and a
    repeated call skips the runs already stored — also after a crash or a kill; a later
    call may add values or seeds. ``executor``: ``"local"`` (process pool, ``jobs``
    workers, default all cores), ``"dask"`` (a local Dask cluster) or a scheduler
    address ``"dask://HOST:PORT"``. Every key and value is validated before anything
    runs (ScenarioError naming the key).
    """
    check_executor(executor)
    check_jobs(jobs)
    manifest, axes, seed_list, tasks = plan(scenario, grid, seeds, overrides, force)
    store = None
    outdir = None
    if out is not None:
        outdir = Path(out)
        store = Store(outdir)
        manifest = store.claim(manifest)
    outcome = run_tasks(tasks, store, executor=executor, jobs=jobs, progress=progress, label="sweep")
    return Sweep({**manifest, "axes": [a.to_json() for a in axes], "seeds": seed_list}, outcome.rows, outdir, outcome)


def load(directory: str | os.PathLike[str]) -> Sweep:
    """Every run stored in a sweep directory (of any number of ``sweep`` calls)."""
    store = Store(directory)
    manifest = store.read_manifest()
    if manifest is None:
        raise ScenarioError(str(directory), "sweep.json", "not a sweep directory (no sweep.json); run "
                            "'longpipe sweep ... --out DIR' first")
    rows = store.read()
    keys = [a["key"] for a in manifest["axes"]]
    for r in rows:  # one owner format: never pool rows of another grid with these
        params = param_names(r)
        if params != keys:
            raise ScenarioError(str(store.where(str(r["run_id"]))), "(file)",
                                f"holds a run over {', '.join(params) or 'no grid keys'}, but sweep.json lists "
                                f"{', '.join(keys) or 'no grid keys'}: the store mixes variants (written by an older "
                                "longpipe?); re-run the sweep into a new --out")
    return Sweep(manifest, rows, Path(directory))


def describe(sw: Sweep) -> str:
    """One line: the scenario, grid and seeds."""
    grid = "; ".join(f"{a.key} = {', '.join(display_value(v) for v in a.values)}" for a in sw.axes) or "no grid"
    return f"scenario {sw.name}: {grid}; seeds {seeds_text(sw.manifest.get('seeds', []))}"
