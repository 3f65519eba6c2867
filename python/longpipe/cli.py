"""The ``longpipe`` command line.

Exit status: 0 success, 2 bad input (the message names the file, the field path and
what was expected), 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from .api import ScenarioError, parse_value


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def _overrides(pairs: list[str]) -> dict:
    ov = {}
    for p in pairs or []:
        if "=" not in p:
            raise UsageError(f"--set {p!r}: expected KEY=VALUE, e.g. flow.tcp=reno")
        k, v = p.split("=", 1)
        ov[k.strip()] = parse_value(v.strip())
    return ov


def _pcap_specs(specs: list[str], out: Path) -> tuple[list[str], dict]:
    names, files = [], {}
    for s in specs or []:
        spec, _, file = s.partition("=")
        names.append(spec)
        files[spec] = Path(file) if file else out / f"{spec}.pcap"
    return names, files


def cmd_run(args) -> int:
    from . import api
    from ._io import atomic_write_text
    from .report import format_result

    out = Path(args.out) if args.out else Path(".")
    names, files = _pcap_specs(args.pcap, out)
    res = api.run(args.scenario, seed=args.seed, timeseries=args.timeseries, pcap=names,
                  overrides=_overrides(args.set))
    text = res.to_json()
    if args.json:
        print(text)
    else:
        print(format_result(res.data, res.wall_s))
    if args.out:
        atomic_write_text(out / "result.json", text + "\n")
        if args.timeseries:
            for fid in res.traces:
                atomic_write_text(out / f"flow{fid}-timeseries.csv", res.timeseries(fid).to_csv(index=False))
                atomic_write_text(out / f"flow{fid}-segments.csv", res.segments(fid).to_csv(index=False))
                atomic_write_text(out / f"flow{fid}-rtt.csv", res.rtt(fid).to_csv(index=False))
    from ._io import atomic_write_bytes

    for spec, data in res.pcaps.items():
        atomic_write_bytes(files[spec], data)
        if not args.json:
            print(f"wrote {files[spec]} ({len(data)} bytes)")
    return 0


def cmd_schema(args) -> int:
    from . import api

    print(json.dumps(api.schema(), indent=2))
    return 0


def cmd_compare(args) -> int:
    from . import api
    from .plots import compare_figure
    from .report import table

    variants = [v.strip() for v in args.tcp.split(",") if v.strip()]
    if not variants:
        raise UsageError("--tcp: expected a comma-separated list such as tahoe,reno,newreno")
    ov = _overrides(args.set)
    runs, rows = {}, []
    for v in variants:
        res = api.run(args.scenario, seed=args.seed, timeseries=[args.flow], overrides=ov | {"flow.tcp": v})
        runs[v] = (res, args.flow)
        f = res.data["flows"][args.flow]
        rows.append([v, f"{f['goodput_bps'] / 1e6:.4f}", f["segments_sent"], f["retransmitted_segments"],
                     f["timeouts"], f["fast_recoveries"],
                     "-" if f["completion_time_s"] is None else f"{f['completion_time_s']:.2f}",
                     "-" if f["mean_rtt_s"] is None else f"{f['mean_rtt_s'] * 1e3:.1f}"])
    first = next(iter(runs.values()))[0].data
    print(f"scenario {first['scenario']} (flow {args.flow}), seed {first['seed']}, {first['duration_s']:g} s simulated")
    print(table(["tcp", "goodput Mbit/s", "segs", "retx", "RTO", "FR", "done s", "mean RTT ms"], rows))
    if args.plot:
        bin_s = args.bin or max(first["duration_s"] / 100.0, 0.1)
        compare_figure(runs, args.plot, f"{first['scenario']}: goodput and cwnd of flow {args.flow}", bin_s)
        print(f"wrote {args.plot}")
    return 0


def cmd_reproduce(args) -> int:
    import importlib

    from .experiments import REGISTRY

    names = list(REGISTRY) if args.name == "all" else [args.name]
    for n in names:
        mod = importlib.import_module(REGISTRY[n])
        out = Path(args.out) / n if args.out and args.name == "all" else Path(args.out or f"out/reproduce/{n}")
        rc = mod.main(quick=args.quick, out=out, jobs=args.jobs)
        if rc:
            return rc
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="longpipe", description="TCP over long, thin and lossy links.")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run one simulation")
    r.add_argument("scenario", help="scenario file (TOML or JSON)")
    r.add_argument("--json", action="store_true", help="print the result as one JSON document")
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario key, e.g. flow.tcp=reno or link[0].loss.p=0.01")
    r.add_argument("--pcap", action="append", metavar="A-B[=FILE]",
                   help="capture at node A's interface on link A-B (file A-B.pcap in --out)")
    r.add_argument("--timeseries", action="store_true", help="record per-flow time series (written with --out)")
    r.add_argument("--out", help="directory for result.json, pcaps and time series")
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("schema", help="print the scenario JSON Schema")
    s.set_defaults(func=cmd_schema)

    c = sub.add_parser("compare", help="run a scenario once per congestion control and compare")
    c.add_argument("scenario")
    c.add_argument("--tcp", default="tahoe,reno,newreno", help="comma-separated variants (default: %(default)s)")
    c.add_argument("--flow", type=int, default=0, help="flow to trace and plot")
    c.add_argument("--seed", type=int)
    c.add_argument("--set", action="append", metavar="KEY=VALUE")
    c.add_argument("--plot", help="write a PNG of goodput and cwnd over time")
    c.add_argument("--bin", type=float, help="goodput bin width in seconds (default duration/100)")
    c.set_defaults(func=cmd_compare)

    from .experiments import REGISTRY

    rp = sub.add_parser("reproduce", help="re-run a paper's experiment and print ours beside the paper's")
    rp.add_argument("name", choices=[*REGISTRY, "all"])
    rp.add_argument("--quick", action="store_true", help="fewer points and seeds (about a minute)")
    rp.add_argument("--out", help="output directory (default out/reproduce/NAME)")
    rp.add_argument("--jobs", type=int, help="parallel simulations (default: all cores)")
    rp.set_defaults(func=cmd_reproduce)

    try:
        from .models import cli as models_cli

        models_cli.register(sub)
        sub.choices["model"].set_defaults(func=models_cli.run)
    except ImportError:  # pragma: no cover - models package missing
        pass
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception:  # internal error: say so, with the traceback for a bug report
        print("internal error (please report):", file=sys.stderr)
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
