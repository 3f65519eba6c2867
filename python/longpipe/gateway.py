"""``longpipe gateway``: the satellite TCP gateway daemon (the ``longpipe-gateway``
binary does the work; this module finds it and hands over, with the same arguments).
See docs/notes/gateway-daemon.md.

    longpipe gateway run --uplink IF --rate RATE --rtt TIME [--mode spoof|split] [--clients CIDR,...] [...]
    longpipe gateway status [--name PREFIX] [--json]
    longpipe gateway cleanup [--name PREFIX] [--table N] [--pref N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .options import UsageError

ROOT = Path(__file__).resolve().parent.parent.parent
BINARY = "longpipe-gateway"


def find_binary() -> str:
    """The daemon binary: $LONGPIPE_GATEWAY, the workspace's release build, or PATH."""
    env = os.environ.get("LONGPIPE_GATEWAY")
    if env:
        return env
    built = ROOT / "target" / "release" / BINARY
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    found = shutil.which(BINARY)
    if found:
        return found
    raise UsageError(f"longpipe gateway: the {BINARY} binary is not built; run `make build` "
                     f"(cargo build -p longpipe-gateway --release) or set LONGPIPE_GATEWAY")


def register(sub: Any) -> None:
    g = sub.add_parser("gateway", help="the satellite TCP gateway (ACK spoofing or split) as a daemon on a router (root)",
                       description="Runs the simulator's gateway on real packets: transit TCP between the "
                       "clients behind --uplink and the servers passes through two TUN devices and the core's "
                       "gateway element ('--mode split': a transparent split-connection proxy on kernel sockets, "
                       "nftables TPROXY). 'run' needs root for the set-up, then handles packets as an "
                       "unprivileged user; SIGTERM drains and reports. 'status' lists a running instance's "
                       "connections; 'cleanup' undoes what a dead instance left (never a running one's). "
                       "The daemon's options: longpipe gateway run --help.")
    g.add_argument("action", choices=["run", "status", "cleanup"],
                   help="run the daemon, list its connections, or undo a dead instance's set-up")
    g.add_argument("args", nargs=argparse.REMAINDER, help="the daemon's options (--uplink IF --rate R --rtt T ...)")
    g.set_defaults(func=cmd_gateway)


def cmd_gateway(args: argparse.Namespace) -> int:
    exe = find_binary()
    if "--help" in args.args or "-h" in args.args:
        os.execv(exe, [exe, "--help"])
    sys.stdout.flush()
    sys.stderr.flush()
    # the daemon takes over this process: signals (SIGTERM: drain and stop) reach it
    os.execv(exe, [exe, args.action, *args.args])
    return 1  # pragma: no cover - execv does not return
