"""``longpipe model {pftk,pftk-approx,reno,hybla}``: analytical throughput in milliseconds."""

from __future__ import annotations

import argparse
import json
import math
import sys

from .hybla import RTT0, hybla_model
from .pftk import MODELS, check_args

NAMES = ["pftk", "pftk-approx", "reno", "hybla"]


class ModelUsageError(ValueError):
    pass


def register(subparsers) -> argparse.ArgumentParser:
    m = subparsers.add_parser("model", help="analytical TCP throughput models")
    m.add_argument("name", choices=NAMES, help="pftk (full, with timeouts), pftk-approx, reno (no timeouts, "
                   "seed 001 appendix), hybla (seed 001 eqs. 3-20)")
    m.add_argument("--rtt", type=float, required=True, help="round-trip time in seconds")
    m.add_argument("--p", type=float, required=True, help="loss (indication) probability, in (0, 1]")
    m.add_argument("--wmax", type=float, default=math.inf, help="receiver window limit in packets (default none)")
    m.add_argument("--b", type=float, default=2, help="packets per ACK (default 2: delayed ACKs)")
    m.add_argument("--t0", type=float, default=1.0, help="first retransmission timeout in seconds (default 1)")
    m.add_argument("--mss", type=float, default=1000, help="packet size in bytes for bit/s (default 1000)")
    m.add_argument("--rtt0", type=float, default=RTT0, help="Hybla reference RTT in seconds (default 0.025)")
    m.add_argument("--json", action="store_true", help="print one JSON document")
    m.add_argument("--plot", metavar="PNG", help="also plot throughput vs p over a log range")
    m.add_argument("--p-min", type=float, default=1e-5)
    m.add_argument("--p-max", type=float, default=0.1)
    return m


def evaluate(name: str, rtt: float, p: float, wmax: float, b: float, t0: float, rtt0: float) -> dict:
    if name == "hybla":
        if not (rtt0 > 0):
            raise ModelUsageError(f"--rtt0: must be positive, got {rtt0!r}")
        try:
            res = hybla_model(rtt, p, wmax, rtt0)
        except ValueError as e:
            raise ModelUsageError(f"--{str(e)}") from None
        return {"pps": res.throughput_pps, "regime": res.regime, "rho": res.rho, "W": res.W, "method": res.method}
    try:
        check_args(rtt, p, b, t0, wmax)
    except ValueError as e:
        raise ModelUsageError(f"--{str(e)}") from None
    pps = MODELS[name](rtt, p, b, t0, wmax)
    return {"pps": pps}


def _plot(args, path):
    import numpy as np

    from .._io import save_figure

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not (0 < args.p_min < args.p_max <= 1):
        raise ModelUsageError("--p-min/--p-max: need 0 < p-min < p-max <= 1")
    ps = np.logspace(math.log10(args.p_min), math.log10(args.p_max), 100)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for n in NAMES:
        if n != args.name and n == "hybla":
            continue
        ys = [evaluate(n, args.rtt, p, args.wmax, args.b, args.t0, args.rtt0)["pps"] * args.mss * 8 / 1e6 for p in ps]
        ax.plot(ps, ys, lw=2.2 if n == args.name else 1.0, label=n)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("loss probability p")
    ax.set_ylabel(f"throughput (Mbit/s, {args.mss:g} B packets)")
    wm = "no window limit" if math.isinf(args.wmax) else f"Wmax {args.wmax:g}"
    ax.set_title(f"RTT {args.rtt * 1e3:g} ms, {wm}, b {args.b:g}, T0 {args.t0:g} s")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run(args) -> int:
    try:
        if not (args.mss > 0):
            raise ModelUsageError(f"--mss: must be positive, got {args.mss!r}")
        r = evaluate(args.name, args.rtt, args.p, args.wmax, args.b, args.t0, args.rtt0)
        r["bps"] = r["pps"] * args.mss * 8
        if args.plot:
            _plot(args, args.plot)
    except ModelUsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    inputs = {"model": args.name, "rtt_s": args.rtt, "p": args.p, "wmax": None if math.isinf(args.wmax) else args.wmax,
              "b": args.b, "t0_s": args.t0, "mss": args.mss}
    if args.name == "hybla":
        inputs["rtt0_s"] = args.rtt0
    if args.json:
        print(json.dumps({"inputs": inputs, "throughput_pps": r["pps"], "throughput_bps": r["bps"],
                          **{k: v for k, v in r.items() if k not in ("pps", "bps")}}, indent=2))
    else:
        extra = f"   regime {r['regime']}, rho {r['rho']:.3g}, W {r['W']:.1f}" if "regime" in r else ""
        print(f"{args.name}: {r['pps']:.2f} packets/s = {r['bps'] / 1e6:.4f} Mbit/s ({args.mss:g} B packets){extra}")
    if args.plot:
        print(f"wrote {args.plot}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="longpipe")
    sub = p.add_subparsers(dest="cmd", required=True)
    register(sub)
    return run(p.parse_args(argv))
