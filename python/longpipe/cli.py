"""The ``longpipe`` command line.

Exit status: 0 success, 2 bad input (the message names the file, the field path and
what was expected), 1 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from ._io import OutputError
from .api import ScenarioError
from .options import UsageError
from .options import overrides as _overrides
from .options import pcap_specs as _pcap_specs
from .options import seed_option as _seed_option
from .progress import RunProgress as _Progress


def cmd_run(args: argparse.Namespace) -> int:
    args.seed = _seed_option(args.seed)
    if args.seeds is not None:
        from .sweeps.cli import run_seeds

        return run_seeds(args)
    from . import api
    from ._io import check_output_dir, check_output_file, staging_dir, write_outputs
    from .report import format_result

    out = Path(args.out) if args.out is not None else None
    names, files = _pcap_specs(args.pcap, out if out is not None else Path("."))
    # Every output path is checked before simulating: a bad one costs nothing.
    if out is not None:
        check_output_dir(out, "--out")
    for spec in names:
        check_output_file(files[spec], f"--pcap {spec}")
    # Time series stream to CSV files in a staging directory as the run goes (memory
    # stays flat); they are moved into place with the other outputs, or removed.
    default_out = out is None and args.timeseries
    if default_out:
        check_output_dir(Path("out") / "run", "--out")
    with contextlib.ExitStack() as stack:
        stage = (stack.enter_context(staging_dir(Path("out") / "run" if out is None else out))
                 if args.timeseries else None)
        progress = _Progress(args.quiet)
        try:
            res = api.run(args.scenario, seed=args.seed, timeseries=args.timeseries, pcap=names,
                          overrides=_overrides(args.set), progress=progress if progress.enabled else None,
                          force=args.force, timeseries_dir=stage)
        except OSError as e:  # streaming the time series: a full disk, a race
            print(f"error: cannot write the time series: {e.strerror or e}; nothing was written", file=sys.stderr)
            return 1
        finally:
            progress.clear()
        text = res.to_json()
        if default_out:  # a default directory, and say where
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(res.data["scenario"]))
            out = Path("out") / "run" / f"{name}-seed{res.data['seed']}"
            check_output_dir(out, "--out")
        outputs: dict[Path, bytes | Path] = {}
        if out is not None:
            outputs[out / "result.json"] = (text + "\n").encode()
            if res.records:  # the applications' tables: one CSV each that has rows
                from .workload import TABLES

                for table in TABLES:
                    df = getattr(res, table)
                    if len(df):
                        outputs[out / f"{table}.csv"] = df.to_csv(index=False).encode()
            if stage is not None:
                for f in sorted(stage.glob("flow*.csv")):
                    outputs[out / f.name] = f
        for spec, data in res.pcaps.items():
            outputs[files[spec]] = data
        # All files or none; only then is anything printed.
        try:
            write_outputs(outputs, out)
        except OSError as e:  # after the checks above: a full disk, a race; not bad input
            print(f"error: cannot write {e.filename or 'the outputs'}: {e.strerror or e}; nothing was written",
                  file=sys.stderr)
            return 1
    if default_out:
        n = len({f.name.split("-")[0] for f in outputs if f.name.startswith("flow")})
        print(f"wrote time series of {n} flow(s) to {out} (choose with --out)", file=sys.stderr)
    print(text if args.json else format_result(res.data, res.wall_s))
    if not args.json:
        for spec, data in res.pcaps.items():
            print(f"wrote {files[spec]} ({len(data)} bytes)")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from . import api

    print(json.dumps(api.result_schema() if args.result else api.schema(), indent=2))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ._io import check_output_file
    from .sweeps.compare import cmd_compare as compare

    args.seed = _seed_option(args.seed)
    if args.flow < 0:
        raise UsageError(f"--flow: expected a flow id (0, 1, ...), got {args.flow}")
    if args.bin is not None and not (math.isfinite(args.bin) and args.bin > 0):
        raise UsageError(f"--bin: expected a positive number of seconds, got {args.bin!r}")
    if args.plot is not None:
        check_output_file(Path(args.plot), "--plot")
        from matplotlib.backend_bases import FigureCanvasBase

        kinds = FigureCanvasBase.get_supported_filetypes()
        ext = Path(args.plot).suffix.lstrip(".").lower()
        if ext and ext not in kinds:
            raise UsageError(f"--plot: unknown image type .{ext}; use one of " + ", ".join(sorted(kinds)))
    return compare(args)


def cmd_reproduce(args: argparse.Namespace) -> int:
    import importlib

    from .experiments import REGISTRY

    # the crosschecks run in real time as root: not part of "all"
    names = [n for n in REGISTRY if not n.startswith("crosscheck")] if args.name == "all" else [args.name]
    from ._io import check_output_dir
    from .sweeps.engine import check_executor, check_jobs

    check_executor(args.executor)
    check_jobs(args.jobs)
    outs = {n: Path(args.out) / n if args.out and args.name == "all" else Path(args.out or f"out/reproduce/{n}")
            for n in names}
    for out in outs.values():  # before any run: a read-only or unwritable place costs nothing
        check_output_dir(out, "--out")
    for n in names:
        mod = importlib.import_module(REGISTRY[n])
        out = outs[n]
        rc: int = mod.main(quick=args.quick, out=out, jobs=args.jobs, executor=args.executor, quiet=args.quiet)
        if rc:
            return rc
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit status 2), like every other bad input."""

    def error(self, message: str) -> Any:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(only_run: bool = False) -> argparse.ArgumentParser:
    """The whole command line; ``only_run=True``: the same parser with only the ``run``
    command, for a command line that starts with ``run`` (the other commands' modules,
    emu, gateway, models, reproduce and compare, are then not imported: start-up time,
    BENCHMARKS.md "longpipe run --json against the bare core")."""
    from . import __version__
    from .sweeps import cli as sweeps_cli

    p = _Parser(prog="longpipe", description="TCP over long, thin and lossy links: simulate, "
                                "sweep, compare, model and reproduce papers. 'longpipe COMMAND --help' for details.")
    p.add_argument("--version", action="version", version=f"longpipe {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run one simulation")
    r.add_argument("scenario", help="scenario file (TOML or JSON)")
    r.add_argument("--json", action="store_true", help="print the result as one JSON document")
    r.add_argument("--seed", metavar="N", help="override the scenario's seed (0 to 2^64-1)")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario key, e.g. flow.tcp=reno or link[0].loss.p=0.01")
    r.add_argument("--pcap", action="append", metavar="A-B[=FILE]",
                   help="capture at node A's interface on link A-B (file A-B.pcap in --out)")
    r.add_argument("--timeseries", action="store_true", help="record per-flow time series (written with --out)")
    r.add_argument("--out", metavar="DIR",
                   help="directory for result.json, pcaps, time series and the applications' tables "
                        "(pages.csv, requests.csv, chunks.csv, stalls.csv, transfers.csv); a previous run's "
                        "files there are replaced, never mixed with this run's (see docs/limits.md)")
    r.add_argument("--seeds", metavar="N", help="run N seeds (S..S+N-1 from --seed or the scenario's seed; or A..B, "
                   "or a list 1,5,9) and print mean ± 95%% confidence interval per flow")
    sweeps_cli.add_exec_args(r)
    r.set_defaults(func=cmd_run)
    if only_run:
        return p
    from .sweeps.compare import register_args as compare_args

    s = sub.add_parser("schema", help="print the scenario JSON Schema (--result: the result's)")
    s.add_argument("--result", action="store_true", help="the result document's schema (what `run` writes)")
    s.set_defaults(func=cmd_schema)

    c = sub.add_parser("compare", help="compare variants (congestion controls, or any key) side by side",
                       description="Run a scenario once per variant (per seed with --seeds) and compare flow "
                       "--flow: goodput, retransmissions, RTOs, fast recoveries, completion time, RTT.")
    compare_args(c)
    c.set_defaults(func=cmd_compare)

    from .experiments import REGISTRY

    rp = sub.add_parser("reproduce", help="re-run a paper's experiment and print ours beside the paper's")
    rp.add_argument("name", choices=[*REGISTRY, "all"],
                    help="hybla (paper [001]: Hybla model vs simulation), wcdma (paper [000]: TCP profile for W-CDMA, "
                    "figs. 6-12), gateway (paper [003]: satellite TCP gateway, Table 1), peach (paper [004]: TCP-Peach and "
                    "Peach+ against link errors, fig. 5), atm (paper [002]: TCP over wide-area ATM, figs. 3-7 and "
                    "Tables 1-4), crosscheck (simulator against Linux TCP through longpipe emu; root), "
                    "crosscheck-linux (the Linux profile against Linux's reno, cubic, bbr; root), or all")
    rp.add_argument("--quick", action="store_true", help="fewer points and seeds (about a minute)")
    rp.add_argument("--out", help="output directory (default out/reproduce/NAME)")
    sweeps_cli.add_exec_args(rp)
    rp.set_defaults(func=cmd_reproduce)
    sweeps_cli.register(sub)
    from . import emu

    emu.register(sub)
    from . import gateway

    gateway.register(sub)

    try:
        from .models import cli as models_cli

        models_cli.register(sub)
        sub.choices["model"].set_defaults(func=models_cli.run)
    except ImportError:  # pragma: no cover - models package missing
        pass
    return p


def main(argv: list[str] | None = None) -> int:
    """Runs the command line ``argv`` (default: sys.argv); returns the exit status."""
    from ._signals import interrupted, signals_like_ctrl_c

    try:
        with signals_like_ctrl_c():
            return _main(argv)
    except KeyboardInterrupt as e:  # also while parsing or importing
        return interrupted(e)


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command: list[str] | None = None
    if argv[:1] == ["run"]:
        parser = build_parser(only_run=True)
    else:
        parser = build_parser()
        from .emu import split_command

        argv, command = split_command(argv)
    args = parser.parse_args(argv)
    if command is not None:
        args.cmd = command
    try:
        return int(args.func(args) or 0)
    except (ScenarioError, OutputError, UsageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as e:
        from ._signals import interrupted

        return interrupted(e)
    except OSError as e:  # after the checks: a full disk, a file system turned read-only, a race
        where = f"{e.filename}: " if e.filename else ""
        print(f"error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception:  # internal error: say so, with the traceback for a bug report
        import traceback  # only here: it and textwrap cost start-up (about 1 ms)

        print("internal error (please report):", file=sys.stderr)
        traceback.print_exc()
        return 1

