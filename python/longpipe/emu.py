"""``longpipe emu``: live emulation with real Linux TCP (the ``longpipe-emu`` binary does
the work; this module finds it, hands it the scenario as JSON and presents its result
like ``longpipe run``). See docs/emulation.md.

    longpipe emu SCENARIO --flows [--spawn NODE=CMD]... [--json] [--pcap A-B[=FILE]] [--out DIR]
    longpipe emu SCENARIO [--node NODE] [--spawn NODE=CMD] -- CMD [ARGS...]
    longpipe emu cleanup
    longpipe emu --selftest [--quick] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .options import UsageError

if TYPE_CHECKING:
    from ._results import SimResult

ROOT = Path(__file__).resolve().parent.parent.parent
BINARY = "longpipe-emu"


def find_binary() -> str:
    """The emulator binary: $LONGPIPE_EMU, the workspace's release build, or PATH."""
    env = os.environ.get("LONGPIPE_EMU")
    if env:
        return env
    built = ROOT / "target" / "release" / BINARY
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    found = shutil.which(BINARY)
    if found:
        return found
    raise UsageError(f"longpipe emu: the {BINARY} binary is not built; run `make build` "
                     f"(cargo build -p longpipe-emu --release) or set LONGPIPE_EMU")


def run_binary(cmd: list[str], *, capture_stderr: bool = False, timeout: float | None = None,
               stdin: int | None = subprocess.DEVNULL, command: bool = False) -> tuple[int, str]:
    """Runs the binary; (exit status, its stderr if captured). On Ctrl-C (SIGINT) or
    SIGTERM/SIGHUP (raised as :class:`~longpipe._signals.Terminated`) the signal is passed
    on to the binary, which tears down its namespaces (exit 130), and then re-raised;
    only if it has not ended 30 s later is it killed. ``subprocess.run`` would SIGKILL it
    at once and leave the namespaces behind. With ``command`` (``-- CMD``) Ctrl-C is the
    command's own (the terminal sends it to the whole process group: an interactive
    shell ignores it): this process ignores it while the binary runs."""
    import signal

    from ._signals import Terminated

    p = subprocess.Popen(cmd, stdin=stdin, stderr=subprocess.PIPE if capture_stderr else None, text=True)
    import threading

    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if command and main else None
    try:
        _, err = p.communicate(timeout=timeout)
    except BaseException as e:
        sig = e.signum if isinstance(e, Terminated) else signal.SIGINT
        if isinstance(e, subprocess.TimeoutExpired):
            sig = signal.SIGTERM
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(sig)
        try:
            p.communicate(timeout=30)
        except BaseException:
            p.kill()
            p.wait()
            raise
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)
    return p.returncode, err or ""


def run_json(scenario_json: str, seed: int | None = None, *, source: str = "scenario",
             cc: str | None = None, pcaps: Mapping[str, Path] | None = None,
             timeout: float | None = None, spawn: list[str] | None = None,
             user: str | None = None) -> dict[str, Any]:
    """Runs a scenario's flows in the emulator; the result document (the fields of a
    simulated run, plus ``emu``). ``spawn``: ``NODE=CMD`` commands run (with ``sh -c``,
    as ``user``) in their nodes' namespaces while the flows run, stopped at the end.
    Raises UsageError with the binary's message on bad input (exit 2) and RuntimeError
    on a failure."""
    exe = find_binary()
    with tempfile.TemporaryDirectory(prefix="longpipe-emu-") as d:
        sc_path = Path(d) / "scenario.json"
        sc_path.write_text(scenario_json)
        res_path = Path(d) / "result.json"
        cmd = [exe, "run", "--scenario", str(sc_path), "--source", source, "--flows", "--result", str(res_path)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        if cc is not None:
            cmd += ["--cc", cc]
        if user is not None:
            cmd += ["--user", user]
        for sp in spawn or []:
            cmd += ["--spawn", sp]
        for spec, path in (pcaps or {}).items():
            cmd += ["--pcap", f"{spec}={path}"]
        rc, stderr = run_binary(cmd, capture_stderr=True, timeout=timeout)
        if rc == 2:
            raise UsageError(stderr.strip().removeprefix("error: "))
        if rc == 130:
            raise KeyboardInterrupt
        if rc != 0 or not res_path.exists():
            raise RuntimeError(f"{BINARY} failed (exit {rc}): {stderr.strip()}")
        if stderr.strip():
            sys.stderr.write(stderr)
        data: dict[str, Any] = json.loads(res_path.read_text())
        return data


def register(sub: Any) -> None:
    e = sub.add_parser("emu", help="live emulation: real Linux TCP through the scenario's links (root)",
                       description="Runs the scenario's links in real time between network namespaces (one per "
                       "node) and either its flows on real sockets (--flows: bulk transfers and the workload "
                       "kinds) or a command in the client's namespace (-- CMD). 'longpipe emu cleanup' removes "
                       "what a crashed run left; 'longpipe emu --selftest' measures the emulator's accuracy and "
                       "speed.")
    e.add_argument("scenario", nargs="?", help="scenario file (TOML or JSON), or 'cleanup'")
    e.add_argument("--flows", action="store_true", help="run the scenario's flows with real sockets")
    e.add_argument("--json", action="store_true", help="print the result as one JSON document")
    e.add_argument("--seed", metavar="N", help="override the scenario's seed (loss streams, the applications' draws)")
    e.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a scenario key")
    e.add_argument("--cc", metavar="NAME", help="kernel congestion control for every flow (e.g. reno, cubic, bbr)")
    e.add_argument("--pcap", action="append", metavar="A-B[=FILE]",
                   help="capture on node A's TUN device of link A-B (file A-B.pcap in --out)")
    e.add_argument("--out", metavar="DIR", help="directory for result.json and captures")
    e.add_argument("--node", help="node whose namespace runs CMD (default: 'client', else flow 0's receiver)")
    e.add_argument("--spawn", action="append", metavar="NODE=CMD",
                   help="also run CMD (with sh -c) in NODE's namespace while the command or the flows run")
    e.add_argument("--user", help="user for the ferry and the commands (default: the sudo user, else nobody)")
    e.add_argument("--selftest", action="store_true", help="measure delay, rate and loss accuracy and speed")
    e.add_argument("--quick", action="store_true", help="with --selftest: fewer probes, fewer rates")
    e.set_defaults(func=cmd_emu, cmd=[])


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``longpipe emu ... -- CMD ARGS``: the arguments before ``--`` and the command after
    it (argparse cannot mix optional arguments with a trailing command)."""
    if argv[:1] == ["emu"] and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def cmd_emu(args: argparse.Namespace) -> int:
    from .options import overrides as _overrides
    from .options import seed_option

    exe = find_binary()
    if args.selftest:
        return subprocess.call([exe, "selftest", *(["--quick"] if args.quick else []),
                                *(["--json"] if args.json else [])])
    if args.scenario == "cleanup":
        return subprocess.call([exe, "cleanup"])
    if args.scenario is None:
        raise UsageError("longpipe emu: expected a scenario file (or 'cleanup', or --selftest)")
    if args.flows == bool(args.cmd):
        raise UsageError("longpipe emu: give either --flows or -- COMMAND")
    for opt, v in (("--cc", args.cc), ("--user", args.user)):
        if v is not None and not v.strip():
            raise UsageError(f"longpipe emu: {opt}: expected a name, got an empty string")
    if args.flows and args.node is not None:
        raise UsageError("longpipe emu: --node goes with -- COMMAND, not --flows (--spawn NODE=CMD runs a "
                         "command in any node while the flows run)")
    from . import api
    from ._io import check_output_dir, check_output_file, write_outputs
    from .options import pcap_specs as _pcap_specs
    from .report import format_result

    seed = seed_option(args.seed)
    ov = _overrides(args.set)
    api.validate(args.scenario, ov)  # ScenarioError (exit 2) before anything is set up
    sc, src = api.prepare(args.scenario, ov)
    out = Path(args.out) if args.out is not None else None
    names, files = _pcap_specs(args.pcap, out if out is not None else Path("."))
    if out is not None:
        check_output_dir(out, "--out")
    for spec in names:
        check_output_file(files[spec], f"--pcap {spec}")
    with tempfile.TemporaryDirectory(prefix="longpipe-emu-") as d:
        tmp = {spec: Path(d) / f"{i}.pcap" for i, spec in enumerate(names)}
        if args.flows:
            try:
                data = run_json(json.dumps(sc, allow_nan=False), seed, source=src or "scenario", cc=args.cc,
                                pcaps=tmp, spawn=args.spawn, user=args.user)
            except RuntimeError as e:  # the binary failed and said why (not a bug of ours)
                print(f"error: {e}", file=sys.stderr)
                return 1
            rc = 0
        else:
            sc_path = Path(d) / "scenario.json"
            sc_path.write_text(json.dumps(sc, allow_nan=False))
            res_path = Path(d) / "result.json"
            cmd = [exe, "run", "--scenario", str(sc_path), "--source", src or "scenario", "--result", str(res_path)]
            for k, v in (("--seed", seed), ("--cc", args.cc), ("--node", args.node), ("--user", args.user)):
                if v is not None:
                    cmd += [k, str(v)]
            for s in args.spawn or []:
                cmd += ["--spawn", s]
            for spec, path in tmp.items():
                cmd += ["--pcap", f"{spec}={path}"]
            rc, _ = run_binary([*cmd, "--", *args.cmd], stdin=None, command=True)
            if not res_path.exists():
                return rc
            data = json.loads(res_path.read_text())
        text = json.dumps(data, indent=2)
        outputs: dict[Path, bytes] = {}
        if out is not None:
            outputs[out / "result.json"] = (text + "\n").encode()
        for spec in names:
            outputs[files[spec]] = tmp[spec].read_bytes() if tmp[spec].exists() else b""
        write_outputs(outputs, out)
    if args.json:
        print(text)
    elif args.flows:
        # the emulator writes the simulator's result contract (plus `emu`)
        print(format_result(cast("SimResult", data)))
        for note in data.get("emu", {}).get("unmapped", []):
            print(f"not mapped onto Linux: {note}")
        for g in data.get("emu", {}).get("gateways", []):
            print(f"gateway daemon at {g['node']} ({g['mode']}): exit {g['exit']}, peak {g['conns_peak']} "
                  f"connections, {g['reset_conns']} reset at the stop")
            for note in g["unmapped"]:
                print(f"not mapped onto the daemon: {note}")
    else:
        for lk in data["links"]:
            print(f"{lk['a']}->{lk['b']}: {lk['packets']} packets, {lk['drops_queue']} queue drops, "
                  f"{lk['drops_loss']} lost", file=sys.stderr)
    if not args.json:
        for spec in names:
            print(f"wrote {files[spec]}", file=sys.stderr if not args.flows else sys.stdout)
    return rc
