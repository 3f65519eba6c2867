"""``longpipe compare``: a scenario under a few variants (congestion controls by default,
or any key with ``--vary``), over one or more seeds, side by side."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from .cli import FLOW_FIELDS, _progress, _seeds_arg, add_exec_args, flow_stats, write_csv

#: What a user compares first (issue 25): three controls a Linux host offers, on one profile.
DEFAULT_TCP = "cubic,bbr,hybla"
#: The most goodput bins of ``--plot`` (a figure is some hundreds of pixels wide).
MAX_BINS = 100_000


def register_args(c: argparse.ArgumentParser) -> None:
    """The options of ``compare`` (the parser itself is made in longpipe.cli)."""
    c.add_argument("scenario", help="scenario file (TOML or JSON)")
    c.add_argument("--tcp", help=f"comma-separated congestion controls (default without --vary or --stack: "
                   f"{DEFAULT_TCP})")
    c.add_argument("--stack", help="comma-separated stack profiles to compare: classic (the papers' TCP), linux "
                   "(a Linux 6.x profile: IW 10, SACK, timestamps, PRR, RACK-TLP, 200 ms min RTO, CUBIC unless "
                   "--tcp says otherwise; the default for every --tcp it runs)")
    c.add_argument("--vary", action="append", metavar="KEY=VALUES",
                   help="compare the values of any scenario key, e.g. flow.sack=false,true (grid syntax as for "
                   "sweep; repeat for every combination)")
    c.add_argument("--flow", type=int, default=0, help="flow to report and plot (default 0)")
    c.add_argument("--seed", metavar="N", help="override the scenario's seed, 0 to 2^64-1 (first seed with --seeds N)")
    c.add_argument("--seeds", metavar="N", help="runs per variant: N seeds, A..B or a list; prints mean ± 95%% CI")
    c.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key for every variant")
    c.add_argument("--plot", metavar="PNG", help="write a PNG of goodput and cwnd over time (first seed)")
    c.add_argument("--bin", type=float, metavar="SECONDS", help="goodput bin width of --plot (default duration/100)")
    c.add_argument("--model", metavar="NAMES", help="with --plot: analytical throughput beside each run (longpipe "
                   "model's names, e.g. cubic,bbr,pftk), for the run's own RTT, loss rate, MSS and slowest link")
    fmt = c.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the comparison as JSON")
    fmt.add_argument("--csv", action="store_true", help="print the comparison as CSV")
    c.add_argument("--engine", default="sim", metavar="sim|emu|sim,emu",
                   help="sim: the simulator (default); emu: Linux TCP through longpipe emu, in real time, "
                   "one run after another (root); sim,emu: both, rows side by side")
    add_exec_args(c)


def cmd_compare(args: argparse.Namespace) -> int:
    from .. import api
    from ..api import ScenarioError
    from ..options import UsageError
    from ..options import overrides as _overrides
    from ..profiles import columns, profile_of, warning
    from ..report import table
    from .api import plan
    from .engine import run_tasks
    from .grid import display_value, format_value, parse_axis, seeds_text
    from .summary import fmt_mean_ci

    engines = [e.strip() for e in str(args.engine).split(",")]
    if not engines or any(e not in ("sim", "emu") for e in engines) or len(set(engines)) != len(engines):
        raise UsageError(f"--engine: expected sim, emu or sim,emu, got {args.engine!r}")
    grid = list(args.vary or [])
    if args.stack is not None:
        if not [v for v in args.stack.split(",") if v.strip()]:
            raise ScenarioError(None, "--stack", "expected a comma-separated list such as classic,linux")
        grid.append(f"flow.stack={args.stack}")
    if args.tcp is not None or not grid:
        tcp = DEFAULT_TCP if args.tcp is None else args.tcp
        if not [v for v in tcp.split(",") if v.strip()]:
            raise ScenarioError(None, "--tcp", "expected a comma-separated list such as cubic,bbr,hybla")
        grid.append(f"flow.tcp={tcp}")
    for spec in grid:  # the syntax first, so an error names --vary
        parse_axis(spec, "--vary")
    from ..plots import parse_models

    try:
        models = parse_models(args.model)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if models and not args.plot:
        raise UsageError("--model: draws beside the simulation on --plot; give --plot PNG too")
    ov = _overrides(args.set)
    v = api.validate(args.scenario, ov)
    n_flows = int(v["flows"])
    if args.plot and args.bin is not None and float(v["duration_ns"]) / 1e9 / args.bin > MAX_BINS:
        dur = float(v["duration_ns"]) / 1e9
        raise UsageError(f"--bin: {args.bin:g} s makes more than {MAX_BINS} bins over the {dur:g} s run; "
                         f"at least {dur / MAX_BINS:.3g} s (docs/limits.md)")
    if args.flow >= n_flows:  # before anything runs
        raise ScenarioError(None, "--flow", f"no flow {args.flow}; the scenario has {n_flows} flow(s), ids 0 to "
                            f"{n_flows - 1}" if n_flows else "the scenario has no flows")
    _, axes, seeds, tasks = plan(args.scenario, grid, _seeds_arg(args), ov, getattr(args, "force", False), "--vary")
    if "emu" in engines and args.plot:
        raise UsageError("--plot: the emulator records no time series; compare --engine sim for figures")
    done: list[tuple[str, Any, dict[str, Any]]] = []  # (engine, task, result)
    for engine in engines:
        if engine == "emu":  # real time, namespaces: one after another, not stored
            from ..emu import run_json

            done += [("emu", t, run_json(t.scenario_json, t.seed)) for t in tasks]
        else:
            oc = run_tasks(tasks, None, executor=args.executor, jobs=args.jobs, progress=_progress(args),
                           label="compare")
            done += [("sim", t, json.loads(r["result"])) for t, r in zip(tasks, oc.rows)]
    results = [r for _, _, r in done]
    n_flows = len(results[0]["flows"])
    if not 0 <= args.flow < n_flows:
        raise ScenarioError(None, "--flow", f"the scenario has flows 0..{n_flows - 1}, got {args.flow}")
    # a point's values may be tables or lists (--vary 'node=[...],[...]'): keyed by their JSON
    points: dict[str, tuple[Any, ...]] = {}
    by_key: dict[str, list[dict[str, Any]]] = {}
    both = len(engines) > 1  # the engine is then the first column
    for engine, t, res in done:
        pt = ((engine,) if both else ()) + tuple(v for _, v in t.params)
        k = json.dumps(list(pt), sort_keys=True)
        points.setdefault(k, pt)
        by_key.setdefault(k, []).append(res)
    per_point = [(points[k], rs) for k, rs in by_key.items()]
    keys = (["engine"] if both else []) + [a.key for a in axes]
    records = []
    # applications: their figures across users beside flow --flow's
    app_fields = workload_fields(results)
    profiles = [profile_of(rs[0], args.flow) for _, rs in per_point]
    for (pt, rs), prof in zip(per_point, profiles):
        st = flow_stats(rs, args.flow)
        rec: dict[str, Any] = dict(zip(keys, pt))
        rec["profile"] = prof
        rec["seeds"] = len(rs)
        for k, _, _ in FLOW_FIELDS:
            rec[f"{k}_mean"] = st[k]["mean"]
            rec[f"{k}_ci95"] = st[k]["ci95"]
        rec["segments_sent_mean"] = st["segments_sent"]["mean"]
        for k, (m, ci) in workload_stats(rs, app_fields).items():
            rec[f"{k}_mean"] = m
            rec[f"{k}_ci95"] = ci
        records.append(rec)
    name = results[0]["scenario"]
    sets = " ".join(f"--set {k}={format_value(v)}" for k, v in ov.items())
    if args.json:
        print(json.dumps({"scenario": name, "flow": args.flow, "seeds": seeds, "set": ov, "vary": keys,
                          "variants": records}, indent=2))
    elif args.csv:
        sys.stdout.write(write_csv(records))
    else:
        s = seeds_text(seeds)
        print(f"scenario {name} (flow {args.flow}), seed{'s' if len(seeds) > 1 else ''} {s}, "
              f"{results[0]['duration_s']:g} s "
              f"{' and '.join({'sim': 'simulated', 'emu': 'emulated'}[e] for e in engines)}"
              + (", mean ± 95% CI" if len(seeds) > 1 else ""))
        if sets:
            print(f"applied: {sets}")
        rows = []
        nan = float("nan")
        fields = list(FLOW_FIELDS) + app_fields
        pheads, pcells = columns(profiles)
        for rec, pc in zip(records, pcells):
            rows.append([display_value(rec[k]) for k in keys] + pc
                        + [fmt_mean_ci(nan if rec[f"{k}_mean"] is None else rec[f"{k}_mean"],
                                       nan if rec[f"{k}_ci95"] is None else rec[f"{k}_ci95"], sc)
                           for k, _, sc in fields])
        print(table(keys + pheads + [h for _, h, _ in fields], rows,
                    "l" * (len(keys) + len(pheads)) + "r" * len(fields)))
        mixed = warning(profiles, keys)
        if mixed:
            print(mixed)
        if app_fields:
            print("applications: page/response/FCT p95 over all of a run's pages, requests, transfers; user "
                  "goodput across users")
    if args.plot:
        from .. import api
        from ..plots import compare_figure
        from .grid import apply_point

        base, src = api.prepare(args.scenario, ov)
        if app_fields:  # applications: their distributions, one line per variant
            from .._io import save_figure
            from ..plots import workload_figure
            from ..workload import TABLES

            tables = {}
            for pt, _ in per_point:
                label = ", ".join(display_value(v) for v in pt)
                r = api.run(apply_point(base, list(zip(keys, pt)), src, "--vary"), seed=seeds[0])
                tables[label] = {t: getattr(r, t) for t in TABLES} | {"users": r.users}
            title = f"{name}: applications, seed {seeds[0]}, {caption(base, keys)}" + (f"\n{sets}" if sets else "")
            fig = workload_figure(tables, title)
            if fig is not None:
                save_figure(fig, args.plot, dpi=110)
            if not (args.json or args.csv):
                print(f"wrote {args.plot}")
            return 0
        runs = {}
        for pt, _ in per_point:
            label = ", ".join(display_value(v) for v in pt)
            sc = apply_point(base, list(zip(keys, pt)), src, "--vary")
            runs[label] = (api.run(sc, seed=seeds[0], timeseries=[args.flow]), args.flow)
        dur = float(results[0]["duration_s"])
        bin_s = args.bin or max(dur / 100.0, 0.1)
        title = f"{name}: flow {args.flow}, seed {seeds[0]}, {caption(base, keys)}" + (f"\n{sets}" if sets else "")
        compare_figure(runs, args.plot, title, bin_s, scenario=base, models=models)
        if not (args.json or args.csv):
            print(f"wrote {args.plot}")
    return 0


#: Figures of applications shown by compare: (user_stats key, header, display scale).
APP_FIELDS = (("page_load_p95_s", "page p95 s", 1.0), ("response_p95_s", "resp p95 s", 1.0),
              ("fct_p95_s", "FCT p95 s", 1.0), ("rebuffer_ratio_mean", "rebuffer", 1.0),
              ("user_goodput_min_bps", "user min Mbit/s", 1e-6), ("user_goodput_p50_bps", "user p50 Mbit/s", 1e-6))


def workload_fields(results: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """The application figures that apply to these results (none without applications)."""
    from ..workload import user_stats

    if not any(r.get("workload") for r in results):
        return []
    stats = [user_stats(r) for r in results]
    return [f for f in APP_FIELDS if any(s.get(f[0]) is not None for s in stats)]


def workload_stats(results: list[dict[str, Any]], fields: list[tuple[str, str, float]]) -> dict[str, tuple[Any, Any]]:
    """Mean and 95 % CI half-width over runs of each application figure."""
    from ..workload import user_stats
    from .summary import mean_ci95

    stats = [user_stats(r) for r in results]
    out: dict[str, tuple[Any, Any]] = {}
    for k, _, _ in fields:
        xs = [float(s[k]) for s in stats if s.get(k) is not None]
        m, ci = mean_ci95(xs)
        out[k] = (m if xs else None, None if ci != ci else ci)
    return out


def caption(sc: dict[str, Any], varied: Sequence[str] = ()) -> str:
    """The scenario in a few words for a figure title: path RTT (from the one-way
    delays), bottleneck rate, loss. A figure that a ``varied`` key changes between its
    lines says "per line" rather than the base scenario's value."""
    from ..plots import _RATES, parse_quantity

    def touched(i: int, what: str) -> bool:
        return any(re.match(rf"^link(\[{i}\])?\.{what}", k) for k in varied)

    links = [lk for lk in sc.get("link", []) if isinstance(lk, dict)]
    n = len(links)
    if any(touched(i, "(delay|schedule)") for i in range(n)):
        links_rtt = None
    else:
        links_rtt = links
    delays = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    rtt = 0.0
    for lk in links_rtt or []:
        d = parse_quantity(lk.get("delay", "0s"), delays) or 0.0
        rtt += d + (parse_quantity(lk.get("delay_ba", lk.get("delay", "0s")), delays) or 0.0)
    rates = [r for r in (parse_quantity(lk.get("rate"), _RATES) for lk in links) if r]
    parts = [f"base RTT {rtt * 1e3:.0f} ms"] if rtt else (["RTT per line"] if links_rtt is None else [])
    if any(touched(i, "rate") for i in range(n)):
        parts.append("rates per line")
    elif rates:
        parts.append(f"bottleneck {min(rates) / 1e6:g} Mbit/s")
    for i, lk in enumerate(links):
        if touched(i, "loss"):
            parts.append(f"link[{i}] loss per line")
            continue
        loss = lk.get("loss")
        if isinstance(loss, dict):
            kind = loss.get("kind")
            if kind == "ber":
                parts.append(f"BER {loss.get('ber')}")
            elif kind == "bernoulli":
                parts.append(f"loss p {loss.get('p')}")
            elif kind:
                parts.append(f"{kind} loss")
    return ", ".join(parts)
