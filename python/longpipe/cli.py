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
from typing import Any

from .api import ScenarioError, parse_value


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def _overrides(pairs: list[str] | None) -> dict[str, Any]:
    ov = {}
    for p in pairs or []:
        if "=" not in p:
            raise UsageError(f"--set {p!r}: expected KEY=VALUE, e.g. flow.tcp=reno")
        k, v = p.split("=", 1)
        ov[k.strip()] = parse_value(v.strip())
    return ov


def _pcap_specs(specs: list[str] | None, out: Path) -> tuple[list[str], dict[str, Path]]:
    names, files = [], {}
    for s in specs or []:
        spec, _, file = s.partition("=")
        names.append(spec)
        files[spec] = Path(file) if file else out / f"{spec}.pcap"
    return names, files


def cmd_run(args: argparse.Namespace) -> int:
    if args.seeds is not None:
        from .sweeps.cli import run_seeds

        return run_seeds(args)
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
    if args.timeseries and not args.out:  # a default directory, and say where
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(res.data["scenario"]))
        out = Path("out") / "run" / f"{name}-seed{res.data['seed']}"
        print(f"wrote time series of {len(res.traces)} flow(s) to {out} (choose with --out)", file=sys.stderr)
    if args.out or args.timeseries:
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


def cmd_schema(args: argparse.Namespace) -> int:
    from . import api

    print(json.dumps(api.schema(), indent=2))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .sweeps.compare import cmd_compare as compare

    return compare(args)


def cmd_reproduce(args: argparse.Namespace) -> int:
    import importlib

    from .experiments import REGISTRY

    names = list(REGISTRY) if args.name == "all" else [args.name]
    for n in names:
        mod = importlib.import_module(REGISTRY[n])
        out = Path(args.out) / n if args.out and args.name == "all" else Path(args.out or f"out/reproduce/{n}")
        rc: int = mod.main(quick=args.quick, out=out, jobs=args.jobs, executor=args.executor, quiet=args.quiet)
        if rc:
            return rc
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .sweeps import cli as sweeps_cli
    from .sweeps.compare import register_args as compare_args

    p = argparse.ArgumentParser(prog="longpipe", description="TCP over long, thin and lossy links: simulate, "
                                "sweep, compare, model and reproduce papers. 'longpipe COMMAND --help' for details.")
    p.add_argument("--version", action="version", version=f"longpipe {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

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
    r.add_argument("--seeds", metavar="N", help="run N seeds (S..S+N-1 from --seed or the scenario's seed; or A..B, "
                   "or a list 1,5,9) and print mean ± 95%% confidence interval per flow")
    sweeps_cli.add_exec_args(r)
    r.set_defaults(func=cmd_run)

    s = sub.add_parser("schema", help="print the scenario JSON Schema")
    s.set_defaults(func=cmd_schema)

    c = sub.add_parser("compare", help="compare variants (congestion controls, or any key) side by side",
                       description="Run a scenario once per variant (per seed with --seeds) and compare flow "
                       "--flow: goodput, retransmissions, RTOs, fast recoveries, completion time, RTT.")
    compare_args(c)
    c.set_defaults(func=cmd_compare)

    from .experiments import REGISTRY

    rp = sub.add_parser("reproduce", help="re-run a paper's experiment and print ours beside the paper's")
    rp.add_argument("name", choices=[*REGISTRY, "all"],
                    help="hybla (seed 001: Hybla model vs simulation), wcdma (seed 000: TCP profile for W-CDMA, "
                    "figs. 6-12), gateway (seed 003: satellite TCP gateway, Table 1), or all")
    rp.add_argument("--quick", action="store_true", help="fewer points and seeds (about a minute)")
    rp.add_argument("--out", help="output directory (default out/reproduce/NAME)")
    sweeps_cli.add_exec_args(rp)
    rp.set_defaults(func=cmd_reproduce)
    sweeps_cli.register(sub)

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
