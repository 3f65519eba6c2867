"""Command-line front ends of the sweep machinery:

    longpipe sweep SCENARIO --grid KEY=VALUES [--grid ...] [--seeds N] [--out DIR] ...
    longpipe summary DIR [--metric M ...] [--json | --csv]
    longpipe plot DIR --x KEY [--y METRIC] [--hue KEY] [--where KEY=VALUE ...] [--out PNG]
    longpipe report DIR [--out FILE]
    longpipe run SCENARIO --seeds N ...      (see run_seeds)
    longpipe compare SCENARIO --vary KEY=VALUES --seeds N ...   (see .compare)

Only argparse is imported here; everything else loads when a command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import EXECUTORS

GRID_HELP = ("a scenario key and its values: KEY=V1,V2,... or KEY=LO..HI:log:N or KEY=LO..HI:lin:N "
             "(keys as for --set, e.g. flow.tcp=newreno,hybla or link[1].loss.p=1e-4..1e-2:log:9); repeat "
             "for more keys (every combination runs)")
SEEDS_HELP = "seeds per point: N (seeds S..S+N-1 from --seed or the scenario's seed, default 1), A..B, or a list 1,5,9"
METRIC_HELP = ("metric: goodput, retx, rto, fr, rtt, completion, fairness, utilization; for applications and "
               "users page_load, page_load_p95, response_p95, fct_p95, rebuffer, user_goodput_min, user_jain, "
               "users_ge:2Mbps, share_ge:2Mbps (users' goodput; add :transfer_rate for their download rate); a store "
               "column, or a result path such as flows[1].goodput_bps")


def add_exec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, metavar="N", help="parallel simulations (default: all cores)")
    p.add_argument("--executor", default="local", metavar="E",
                   help=f"where runs execute: {EXECUTORS} (default: %(default)s)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or notes on stderr (for scripts)")
    p.add_argument("--force", action="store_true",
                   help="run even what the core estimates above its work limit (docs/limits.md)")


def register(sub: Any) -> None:
    """Adds ``sweep``, ``summary``, ``plot`` and ``report`` to the subcommands."""
    s = sub.add_parser("sweep", help="run a scenario over a grid of parameters and seeds (resumable)",
                       description="Run SCENARIO at every combination of the --grid values, for every seed. "
                       "Finished runs are stored in DIR (Parquet, one file per run); re-running the same command "
                       "skips them, so an interrupted sweep resumes, and more values or seeds can be added later.")
    s.add_argument("scenario", help="scenario file (TOML or JSON)")
    s.add_argument("--grid", action="append", metavar="KEY=VALUES", default=[], help=GRID_HELP)
    s.add_argument("--seeds", default=None, metavar="N", help=SEEDS_HELP)
    s.add_argument("--seed", metavar="S", help="first seed of --seeds N (default: the scenario's seed)")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key for every run")
    s.add_argument("--out", metavar="DIR", help="store directory (default: out/sweeps/NAME-HASH)")
    s.add_argument("--summary", action="store_true", help="print mean ± 95%% CI per point when done")
    s.add_argument("--metric", action="append", metavar="M", help=f"summary {METRIC_HELP} (repeatable)")
    add_exec_args(s)
    s.set_defaults(func=cmd_sweep)

    m = sub.add_parser("summary", help="mean and 95%% confidence interval per point of a sweep",
                       description="Summarise a sweep directory: per grid point, the number of seeds and the mean "
                       "± half-width of the 95%% Student-t confidence interval of each metric.")
    m.add_argument("dir", help="sweep directory (from longpipe sweep --out)")
    m.add_argument("--metric", action="append", metavar="M", help=f"{METRIC_HELP} (repeatable; default: goodput, "
                   "retx, rto, rtt)")
    fmt = m.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON (values in the metric's unit: bit/s, s)")
    fmt.add_argument("--csv", action="store_true", help="print CSV (values in the metric's unit: bit/s, s)")
    m.set_defaults(func=cmd_summary)

    p = sub.add_parser("plot", help="plot a metric against a grid key of a sweep (PNG)",
                       description="Mean and 95%% CI of a metric against one grid key, one line per value of "
                       "--hue, one panel per combination of other varying keys; log axes where the grid is log.")
    p.add_argument("dir", help="sweep directory")
    p.add_argument("--x", required=True, metavar="KEY", help="grid key on the x axis, e.g. link[1].loss.p")
    p.add_argument("--y", default="goodput", metavar="METRIC", help=f"{METRIC_HELP} (default: %(default)s)")
    p.add_argument("--hue", metavar="KEY", help="grid key drawn as one line per value, e.g. flow.tcp")
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help="keep only runs with this grid value")
    p.add_argument("--logy", action="store_true", help="logarithmic y axis")
    p.add_argument("--model", metavar="NAMES", help="with --y goodput: analytical goodput beside each point "
                   "(longpipe model's names, e.g. cubic,bbr,pftk), summed over each run's flows for their own RTT, "
                   "loss rate and MSS, capped at the slowest link")
    p.add_argument("--out", metavar="PNG", help="output file (default: DIR/Y-vs-X.png)")
    p.set_defaults(func=cmd_plot)

    r = sub.add_parser("report", help="write one self-contained HTML page for a run, sweep or reproduction",
                       description="Write DIR/report.html: tables and figures (embedded) of a run directory "
                       "(longpipe run --out), a sweep directory or a reproduction (longpipe reproduce --out).")
    r.add_argument("dir", help="directory written by run --out, sweep or reproduce")
    r.add_argument("--out", metavar="HTML", help="output file (default: DIR/report.html)")
    r.set_defaults(func=cmd_report)


def _progress(args: argparse.Namespace) -> bool:
    from ..progress import wanted

    return wanted(getattr(args, "quiet", False))


def _note(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)


def _seeds_arg(args: argparse.Namespace) -> Any:
    from ..options import seed_option
    from .grid import parse_seeds

    seed = seed_option(getattr(args, "seed", None))
    spec = args.seeds
    if spec is None:
        return [seed] if seed is not None else None
    if seed is not None and str(spec).strip().isdigit():
        return parse_seeds(str(spec), seed)
    return spec


def cmd_sweep(args: argparse.Namespace) -> int:
    from .._io import check_output_dir
    from ..options import overrides as _overrides
    from .api import describe, plan, sweep
    from .engine import check_executor, check_jobs
    from .store import digest
    from .summary import metric

    # every option before anything is written (a bad one costs nothing)
    check_executor(args.executor)
    check_jobs(args.jobs)
    for m in args.metric or []:
        metric(m)
    ov = _overrides(args.set)
    seeds = _seeds_arg(args)
    out = args.out
    if out is not None:
        check_output_dir(Path(out), "--out")
    if out is None:
        manifest, axes, _, _ = plan(args.scenario, args.grid, seeds, ov, args.force)
        name = str(manifest["scenario"].get("name") or Path(args.scenario).stem)
        tag = digest(manifest["scenario_hash"] + "|" + "|".join(a.key for a in axes))[:8]
        out = str(Path("out") / "sweeps" / f"{''.join(c if c.isalnum() or c in '-_' else '_' for c in name)}-{tag}")
        check_output_dir(Path(out), "--out")
    if args.summary and args.metric:
        from .summary import check_paths_before_running

        _, _, _, tasks = plan(args.scenario, args.grid, seeds, ov, True)
        check_paths_before_running(args.metric, [t.scenario_json for t in tasks])
    sw = sweep(args.scenario, args.grid, seeds, out=out, executor=args.executor, jobs=args.jobs,
               progress=_progress(args), overrides=ov, force=args.force)
    oc = sw.outcome
    assert oc is not None
    _note(args, describe(sw))
    _note(args, f"{len(sw.rows)} runs: {oc.new} run now, {oc.reused} already in {out} ({oc.wall_s:.1f} s)")
    if oc.rerun:
        _note(args, f"{oc.rerun} store file(s) were unreadable (damaged); the runs they held ran again")
    if args.summary:
        print_summary(sw, args.metric)
    else:
        print(f"stored in {out}; see: longpipe summary {out}")
    return 0


def summary_text(sw: Any, metric_names: list[str] | None) -> str:
    from ..profiles import columns, warning
    from ..report import table
    from .summary import point_profiles, summarize, table_rows

    summ = summarize(sw.rows, sw.axes, metric_names)
    headers, cells = table_rows(summ, sw.axes, metric_names)
    profiles = point_profiles(sw.rows, sw.axes)
    pheads, pcells = columns(profiles)
    n = len(sw.axes)
    headers = headers[:n] + pheads + headers[n:]
    cells = [c[:n] + pc + c[n:] for c, pc in zip(cells, pcells)]
    mixed = warning(profiles, [a.key for a in sw.axes])
    return (f"mean ± 95% confidence interval over seeds ({sw.name}); TCP profile of flow 0\n"
            + table(headers, cells, "l" * (n + len(pheads)) + "r" * (len(headers) - n - len(pheads)))
            + (f"\n{mixed}" if mixed else ""))


def print_summary(sw: Any, metric_names: list[str] | None) -> None:
    print(summary_text(sw, metric_names))


def summary_records(sw: Any, metric_names: list[str] | None) -> list[dict[str, Any]]:
    import math

    from .summary import summarize

    recs = summarize(sw.rows, sw.axes, metric_names)
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in recs]


def write_csv(records: list[dict[str, Any]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    if records:
        w = csv.DictWriter(buf, fieldnames=list(records[0]), lineterminator="\n")
        w.writeheader()
        for r in records:
            w.writerow({k: _csv_value(v) for k, v in r.items()})
    return buf.getvalue()


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, float):
        return repr(v)
    return v


def cmd_summary(args: argparse.Namespace) -> int:
    from .api import describe, load

    sw = load(args.dir)
    if args.json:
        print(json.dumps(summary_records(sw, args.metric), indent=2))
    elif args.csv:
        sys.stdout.write(write_csv(summary_records(sw, args.metric)))
    else:
        text = summary_text(sw, args.metric)  # before printing anything: it checks the metrics
        print(describe(sw))
        print(text)
    return 0


def parse_where(items: list[str] | None) -> dict[str, Any]:
    from ..api import ScenarioError, parse_value

    out: dict[str, Any] = {}
    for it in items or []:
        if "=" not in it:
            raise ScenarioError(None, "--where", f"expected KEY=VALUE, got {it!r}")
        k, _, v = it.partition("=")
        out[k.strip()] = parse_value(v.strip())
    return out


def cmd_plot(args: argparse.Namespace) -> int:
    from .._io import check_output_file
    from ..options import UsageError
    from ..plots import parse_models
    from .api import default_plot_name, load

    try:
        models = parse_models(args.model)
    except ValueError as e:
        raise UsageError(str(e)) from None
    path = Path(args.out) if args.out else Path(args.dir) / default_plot_name(args.x, args.y, args.hue)
    check_output_file(path, "--out")
    sw = load(args.dir)
    p = sw.plot(args.x, args.y, args.hue, path, where=parse_where(args.where), logy=args.logy, models=models)
    print(f"wrote {p}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .._io import check_output_file
    from ..htmlreport import write_report

    check_output_file(Path(args.out) if args.out else Path(args.dir) / "report.html", "--out")
    p = write_report(Path(args.dir), Path(args.out) if args.out else None)
    print(f"wrote {p}")
    return 0


# ------------------------------------------------------------------ run --seeds N
FLOW_FIELDS = (("goodput_bps", "goodput Mbit/s", 1e-6), ("retransmitted_segments", "retx", 1.0),
               ("timeouts", "RTO", 1.0), ("fast_recoveries", "FR", 1.0), ("completion_time_s", "done s", 1.0),
               ("mean_rtt_s", "RTT ms", 1e3))


def flow_stats(results: list[dict[str, Any]], flow: int) -> dict[str, Any]:
    """Mean and CI of a flow's fields over runs."""
    from .summary import mean_ci95

    out: dict[str, Any] = {}
    for k, _, _ in FLOW_FIELDS + (("bytes_delivered", "", 1.0), ("segments_sent", "", 1.0)):
        xs = [r["flows"][flow][k] for r in results if flow < len(r["flows"]) and r["flows"][flow][k] is not None]
        m, ci = mean_ci95([float(x) for x in xs])
        out[k] = {"mean": m if xs else None, "ci95": None if ci != ci else ci, "n": len(xs)}
    return out


def run_seeds(args: argparse.Namespace) -> int:
    """``longpipe run SCENARIO --seeds N``: N runs, mean ± 95 % CI per flow."""
    from .._io import check_output_dir
    from ..api import ScenarioError
    from ..options import overrides as _overrides
    from ..report import table
    from .api import plan
    from .engine import check_executor, check_jobs, run_tasks
    from .grid import seeds_text
    from .store import Store
    from .summary import fmt_mean_ci, mean_ci95

    if args.pcap or args.timeseries:
        raise ScenarioError(None, "--seeds", "cannot be combined with --pcap or --timeseries; "
                            "use --seed S for one run with traces")
    check_executor(args.executor)
    check_jobs(args.jobs)
    if args.out:
        check_output_dir(Path(args.out), "--out")
    manifest, _, seeds, tasks = plan(args.scenario, None, _seeds_arg(args), _overrides(args.set),
                                     getattr(args, "force", False))
    store = None
    if args.out:
        store = Store(args.out)
        store.claim(manifest)  # a store of another scenario or of a grid is refused
    oc = run_tasks(tasks, store, executor=args.executor, jobs=args.jobs, progress=_progress(args), label="seeds")
    results = [json.loads(r["result"]) for r in oc.rows]
    first = results[0]
    n_flows = len(first["flows"])
    flows = []
    for i in range(n_flows):
        f = first["flows"][i]
        flows.append({"id": f["id"], "src": f["src"], "dst": f["dst"], "tcp": f["tcp"], **flow_stats(results, i)})
    agg = [r["goodput_bps"] for r in oc.rows]
    am, aci = mean_ci95(agg)
    doc = {"scenario": first["scenario"], "seeds": seeds, "duration_s": first["duration_s"],
           "flows": flows, "goodput_bps": {"mean": am, "ci95": None if aci != aci else aci, "n": len(agg)},
           "runs": results}
    if args.out:
        from .._io import atomic_write_text

        atomic_write_text(Path(args.out) / "seeds-summary.json", json.dumps(doc, indent=2) + "\n")
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    s = seeds_text(seeds)
    print(f"scenario {first['scenario']}  seeds {s} ({len(seeds)} runs)  duration {first['duration_s']:g} s  "
          "(mean ± 95% confidence interval)")
    print()
    from ..profiles import columns, profile_of, warning

    profiles = [profile_of(first, i) for i in range(n_flows)]
    pheads, pcells = columns(profiles)
    rows = []
    for f, pc in zip(flows, pcells):
        rows.append([f["id"], f"{f['src']}->{f['dst']}", f["tcp"]] + pc
                    + [fmt_mean_ci(f[k]["mean"] if f[k]["mean"] is not None else float("nan"),
                                   f[k]["ci95"] if f[k]["ci95"] is not None else float("nan"), sc)
                       for k, _, sc in FLOW_FIELDS])
    if len(rows) > 20:
        rows = rows[:10] + [["..."] + [""] * (len(rows[0]) - 1)] + rows[-5:]
    print(table(["flow", "path", "tcp"] + pheads + [h for _, h, _ in FLOW_FIELDS], rows,
                "lll" + "l" * len(pheads) + "r" * len(FLOW_FIELDS)))
    mixed = warning(profiles)
    if mixed:
        print(mixed)
    print()
    print(f"sum of goodputs {fmt_mean_ci(am, aci, 1e-6)} Mbit/s")
    if args.out:
        print(f"wrote {Path(args.out) / 'seeds-summary.json'} and the runs in {Path(args.out) / 'runs'}")
    return 0
