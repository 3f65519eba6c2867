"""``longpipe model {pftk,pftk-approx,reno,hybla,cubic,bbr}``: analytical TCP throughput.

    longpipe model NAME --rtt 560ms (--p P | --ber BER [--packet-size 1500B])
                   [--rate 25Mbps] [--wmax PKTS] [--b 2] [--t0 1s] [--mss 1460B]
                   [--rtt0 25ms] [--json] [--plot out.png [--p-min 1e-5 --p-max 0.1]]

Durations, rates and sizes take units as scenario files do (``560ms``, ``25Mbps``,
``1460B``); a bare number is seconds, bit/s or bytes. ``--ber`` gives the packet loss
probability of independent bit errors, ``1 - (1 - BER)^(8 × packet size)``; the packet
size defaults to the MSS plus 40 bytes of IPv4 and TCP headers (RFC 791, RFC 9293).
``--rate`` caps every model at the link rate (packets of MSS bytes); the BBR bound needs
it. The MSS defaults to 1460 bytes: a 1500-byte Ethernet MTU less 40 bytes of headers
(RFC 894, RFC 6691), what Linux uses without TCP options.
Prints a short table (packets/s, bit/s, regime), or one JSON document with ``--json``.
``--plot`` writes a PNG of throughput against p (log axes): the chosen model, and the
Reno forms for context. Invalid input: ``error: --ARG: ...`` on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from .modern import bbr_bound, ber_to_loss, cubic_model
from .pftk import MODELS, reno_model

RTT0 = 0.025  # the Hybla reference RTT (s); the same as longpipe.models.hybla.RTT0
#: The default MSS: a 1500-byte Ethernet MTU (RFC 894) less 20 bytes of IPv4 and 20 of
#: TCP header (RFC 6691); Linux's MSS without TCP options.
MSS = 1460.0
#: IPv4 + TCP header bytes added to the MSS for the default --packet-size of --ber.
HEADERS = 40.0

NAMES = ["pftk", "pftk-approx", "reno", "hybla", "cubic", "bbr"]
DESCRIPTIONS = {
    "pftk": "PFTK full model (timeouts, window limit)",
    "pftk-approx": "PFTK approximate model",
    "reno": "Reno without timeouts (paper [001], A-1..A-15)",
    "hybla": "TCP Hybla (paper [001], eqs. 3-20)",
    "cubic": "CUBIC response function (RFC 9438 section 5.1)",
    "bbr": "BBR bandwidth-delay bound (needs --rate)",
}

_DURATIONS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_RATES = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}
_SIZES = {"b": 1.0, "kb": 1e3, "mb": 1e6, "kib": 1024.0, "mib": 1024.0**2}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


def quantity(text: str | float, units: dict[str, float], option: str, what: str) -> float:
    """``"560ms"`` -> 0.56 with ``units`` (a bare number is in the base unit: seconds,
    bit/s, bytes); raises ModelUsageError naming ``option`` otherwise."""
    if isinstance(text, (int, float)):
        return float(text)
    try:
        return float(text)  # a bare number, also inf and nan (checked by the models)
    except ValueError:
        pass
    m = _QUANTITY.match(text)
    if m and m[2].lower() in units:
        return float(m[1]) * units[m[2].lower()]
    names = ", ".join(sorted({u if u != "mbps" else "Mbps" for u in units}))
    raise ModelUsageError(f"{option}: expected {what} (a number with one of the units {names}), got {text!r}")


class ModelUsageError(ValueError):
    """An invalid command-line value; the message starts with the option name."""


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``model`` subcommand to an argparse subparsers object; returns its parser."""
    m = subparsers.add_parser(
        "model", help="analytical TCP throughput models (PFTK, Reno, Hybla, CUBIC, a BBR bound)",
        description="Analytical TCP throughput in packets/s and bit/s. Durations, rates and sizes take units "
                    "(560ms, 25Mbps, 1460B); a bare number is seconds, bit/s or bytes.")
    m.add_argument("name", choices=NAMES, help="pftk (full, with timeouts), pftk-approx, reno (no timeouts, "
                   "paper [001] appendix), hybla (paper [001] eqs. 3-20), cubic (RFC 9438 section 5.1), "
                   "bbr (min(rate × (1 - p), wmax / RTT))")
    m.add_argument("--rtt", required=True, metavar="DURATION", help="mean round-trip time, e.g. 560ms")
    loss = m.add_mutually_exclusive_group(required=True)
    loss.add_argument("--p", type=float, metavar="P", help="loss (indication) probability, in (0, 1]")
    loss.add_argument("--ber", type=float, metavar="BER",
                      help="bit error rate: p = 1 - (1 - BER)^(8 × packet size)")
    m.add_argument("--packet-size", metavar="SIZE", default=None,
                   help="packet size for --ber (default: MSS + 40 B of IPv4 and TCP headers)")
    m.add_argument("--rate", metavar="RATE", default=None,
                   help="link rate, e.g. 25Mbps: caps every model (in MSS-byte packets); needed by bbr")
    m.add_argument("--wmax", type=float, default=math.inf, metavar="PKTS",
                   help="receiver window limit in packets (default: none)")
    m.add_argument("--b", type=float, default=2.0, help="packets per ACK, Reno forms (default 2: delayed ACKs)")
    m.add_argument("--t0", default=1.0, metavar="DURATION",
                   help="first retransmission timeout, PFTK forms (default 1 s: RFC 6298's initial RTO)")
    m.add_argument("--mss", default=MSS, metavar="SIZE",
                   help="segment payload, for bit/s (default 1460 B: a 1500-byte Ethernet MTU less 40 B of "
                        "IPv4 and TCP headers, RFC 894 and RFC 6691)")
    m.add_argument("--rtt0", default=RTT0, metavar="DURATION",
                   help=f"Hybla reference RTT (default {RTT0 * 1e3:g} ms, paper [001])")
    m.add_argument("--json", action="store_true", help="print one JSON document")
    m.add_argument("--plot", metavar="PNG", help="also write a PNG of throughput vs p over a log range")
    m.add_argument("--p-min", type=float, default=1e-5, help="plot range, lowest p (default 1e-5)")
    m.add_argument("--p-max", type=float, default=0.1, help="plot range, highest p (default 0.1)")
    m.set_defaults(func=run)
    parser: argparse.ArgumentParser = m
    return parser


def _option_error(e: ValueError) -> ModelUsageError:
    """Maps a model ValueError ("p: must be ...") to "--p: must be ..."."""
    msg = str(e)
    name, sep, rest = msg.partition(":")
    opt = {"rtt": "--rtt", "p": "--p", "wmax": "--wmax", "b": "--b", "t0": "--t0", "mss": "--mss",
           "rtt0": "--rtt0", "rate": "--rate", "ber": "--ber", "packet-size": "--packet-size"}.get(name.strip())
    return ModelUsageError(f"{opt}:{rest}" if sep and opt else msg)


def evaluate(name: str, rtt: float, p: float, wmax: float = math.inf, b: float = 2, t0: float = 1.0,
             rtt0: float = RTT0, mss: float = MSS, rate: float | None = None) -> dict[str, Any]:
    """One model evaluation as a JSON-ready dict; raises ModelUsageError on bad input.
    With ``rate`` (bit/s), the throughput is capped at the link rate in packets of
    ``mss`` bytes (regime ``"link-limited"``)."""
    r = _evaluate(name, rtt, p, wmax, b, t0, rtt0, mss, rate)
    if rate is not None and name != "bbr" and r["throughput_bps"] > rate:
        r = r | {"throughput_pps": rate / (8 * mss), "throughput_bps": rate, "regime": "link-limited"}
    return r


def _evaluate(name: str, rtt: float, p: float, wmax: float, b: float, t0: float, rtt0: float, mss: float,
              rate: float | None) -> dict[str, Any]:
    if name not in NAMES:
        raise ModelUsageError(f"name: expected one of {', '.join(NAMES)}, got {name!r}")
    try:
        if name in ("cubic", "bbr"):
            if name == "bbr" and rate is None:
                raise ModelUsageError("--rate: the BBR bound needs the link rate, e.g. --rate 25Mbps")
            c = cubic_model(rtt, p, wmax, mss) if name == "cubic" else bbr_bound(rtt, p, rate or 0.0, wmax, mss)
            return _finite({"throughput_pps": c.throughput_pps, "throughput_bps": c.throughput_bps,
                            "regime": c.regime, "W": c.W})
        if name == "hybla":
            from .hybla import hybla_model

            m = hybla_model(rtt, p, wmax, rtt0, mss=mss)
            return _finite({"throughput_pps": m.throughput_pps, "throughput_bps": m.throughput_bps,
                            "regime": m.regime, "W": m.W, "rho": m.rho, "X": m.X, "method": m.method,
                            "iterations": m.iterations})
        r = reno_model(name, rtt, p, b, t0, wmax, mss)
        return _finite({"throughput_pps": r.throughput_pps, "throughput_bps": r.throughput_bps,
                        "regime": r.regime, "W": r.W})
    except ValueError as e:
        raise _option_error(e) from None
    except ArithmeticError as e:  # overflow / division by zero deep in a formula
        raise ModelUsageError(f"--rtt/--p: these inputs are outside the range the {name} model can be evaluated "
                              f"in floating point ({type(e).__name__}); try less extreme values") from None


def _finite(r: dict[str, Any]) -> dict[str, Any]:
    bad = [k for k, v in r.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise ModelUsageError(f"--rtt/--p: the model's {bad[0]} is not finite for these inputs ({r[bad[0]]}); "
                              "try less extreme values")
    return r


#: Command-line ranges (beyond them the formulas overflow or lose all precision).
SECONDS_RANGE = (1e-6, 1e6)
MSS_RANGE = (1.0, 1e9)


def _parse(args: argparse.Namespace) -> None:
    """Durations, rates and sizes with units -> floats (seconds, bit/s, bytes); --ber -> --p."""
    args.rtt = quantity(args.rtt, _DURATIONS, "--rtt", "a duration such as 560ms")
    args.t0 = quantity(args.t0, _DURATIONS, "--t0", "a duration such as 1s")
    args.rtt0 = quantity(args.rtt0, _DURATIONS, "--rtt0", "a duration such as 25ms")
    args.mss = quantity(args.mss, _SIZES, "--mss", "a size such as 1460B")
    if args.rate is not None:
        args.rate = quantity(args.rate, _RATES, "--rate", "a rate such as 25Mbps")
        if not (math.isfinite(args.rate) and args.rate > 0):
            raise ModelUsageError(f"--rate: must be a positive, finite bit rate, got {args.rate!r}")
    size = args.packet_size
    if size is not None and args.ber is None:
        raise ModelUsageError("--packet-size: applies to --ber only (with --p, give the packet loss directly)")
    if args.ber is not None:
        if not (0 <= args.ber < 1):
            raise ModelUsageError(f"--ber: must be in [0, 1), got {args.ber!r}")
        args.packet_size = (quantity(size, _SIZES, "--packet-size", "a size such as 1500B") if size is not None
                            else (args.mss + HEADERS if math.isfinite(args.mss) else args.mss))
        if not (math.isfinite(args.packet_size) and args.packet_size > 0):
            raise ModelUsageError(f"--packet-size: must be a positive number of bytes, got {args.packet_size!r}")
        args.p = ber_to_loss(args.ber, args.packet_size)


def _check(args: argparse.Namespace) -> None:
    # Everything the chosen model does not itself validate; names as on the command line.
    lo, hi = SECONDS_RANGE
    for opt, v in (("--rtt", args.rtt), ("--t0", args.t0), ("--rtt0", args.rtt0)):
        if math.isfinite(v) and v > 0 and not lo <= v <= hi:
            raise ModelUsageError(f"{opt}: must be between {lo:g} and {hi:g} seconds, got {v!r}")
    if math.isfinite(args.mss) and args.mss > 0 and not MSS_RANGE[0] <= args.mss <= MSS_RANGE[1]:
        raise ModelUsageError(f"--mss: must be between {MSS_RANGE[0]:g} and {MSS_RANGE[1]:g} bytes, got {args.mss!r}")
    for opt, v in (("--b", args.b), ("--t0", args.t0)):
        if not math.isfinite(v):
            raise ModelUsageError(f"{opt}: must be finite, got {v!r}")
    if not (args.b >= 1):
        raise ModelUsageError(f"--b: must be >= 1 (packets per ACK), got {args.b!r}")
    if not (args.t0 > 0):
        raise ModelUsageError(f"--t0: must be a positive number of seconds, got {args.t0!r}")
    if not (math.isfinite(args.rtt0) and args.rtt0 > 0):
        raise ModelUsageError(f"--rtt0: must be a positive, finite number of seconds, got {args.rtt0!r}")
    if not (math.isfinite(args.mss) and args.mss > 0):
        raise ModelUsageError(f"--mss: must be a positive number of bytes, got {args.mss!r}")
    if args.plot is not None:
        if not args.plot:
            raise ModelUsageError("--plot: needs a file name")
        if Path(args.plot).suffix.lower() != ".png":
            raise ModelUsageError(f"--plot: writes a PNG; give a file name ending in .png, got {args.plot!r}")
        if Path(args.plot).is_dir():
            raise ModelUsageError(f"--plot: {args.plot} is a directory; expected a file name ending in .png")
        from .._io import OutputError, check_output_file

        try:
            check_output_file(Path(args.plot), "--plot")
        except OutputError as e:
            raise ModelUsageError(str(e)) from None
        if not (0 < args.p_min < args.p_max <= 1):
            raise ModelUsageError(f"--p-min/--p-max: need 0 < p-min < p-max <= 1, got {args.p_min!r}, {args.p_max!r}")


def plot(args: argparse.Namespace, path: str | os.PathLike[str]) -> Path:
    """Throughput (Mbit/s) vs p on log axes: the chosen model (thick) plus the Reno forms."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ps = np.geomspace(args.p_min, args.p_max, 120)
    fig = Figure(figsize=(6.4, 4.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    curves = [args.name] + [n for n in MODELS if n != args.name]
    if args.name != "cubic":
        curves.append("cubic")
    if args.rate is not None and args.name != "bbr":
        curves.append("bbr")
    for n in curves:
        ys = [evaluate(n, args.rtt, p, args.wmax, args.b, args.t0, args.rtt0, args.mss, args.rate)["throughput_bps"] / 1e6
              for p in ps]
        ax.plot(ps, ys, lw=2.4 if n == args.name else 1.1, ls="-" if n == args.name else "--",
                label=f"{n}: {DESCRIPTIONS[n]}")
    if args.p_min <= args.p <= args.p_max:
        here = evaluate(args.name, args.rtt, args.p, args.wmax, args.b, args.t0, args.rtt0, args.mss, args.rate)
        ax.plot([args.p], [here["throughput_bps"] / 1e6], "o", color="k", ms=5, label=f"p = {args.p:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("loss probability p")
    ax.set_ylabel(f"throughput (Mbit/s, {args.mss:g}-byte packets)")
    wm = "no window limit" if math.isinf(args.wmax) else f"Wmax {args.wmax:g} pkts"
    extra = f", RTT0 {args.rtt0 * 1e3:g} ms" if args.name == "hybla" else ""
    cap = "" if args.rate is None else f", link {args.rate / 1e6:g} Mbit/s"
    ax.set_title(f"RTT {args.rtt * 1e3:g} ms, {wm}, b {args.b:g}, T0 {args.t0:g} s{extra}{cap}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    from .._io import save_figure

    return save_figure(fig, path, "--plot", dpi=110)


def _table(args: argparse.Namespace, r: dict[str, Any]) -> str:
    loss = f"p {args.p:.4g}" + ("" if args.ber is None else
                                 f" (BER {args.ber:g} over {args.packet_size:g}-byte packets)")
    rows = [("model", f"{args.name} — {DESCRIPTIONS[args.name]}"),
            ("inputs", f"RTT {args.rtt:g} s, {loss}, "
                       + ("" if args.rate is None else f"link {args.rate / 1e6:g} Mbit/s, ")
                       + f"MSS {args.mss:g} B" + (" (default)" if args.mss == MSS else "") + ", "
                       + ("no window limit" if math.isinf(args.wmax) else f"Wmax {args.wmax:g} packets")
                       + (f", RTT0 {args.rtt0:g} s" if args.name == "hybla"
                          else "" if args.name in ("cubic", "bbr")
                          else f", b {args.b:g}" + (f", T0 {args.t0:g} s" if args.name != "reno" else ""))),
            ("packets/s", f"{r['throughput_pps']:.2f}"),
            ("bit/s", f"{r['throughput_bps']:.6g} ({args.mss:g}-byte packets)"),
            ("regime", r["regime"])]
    if args.name == "hybla":
        rows.append(("W", f"{r['W']:.2f} packets (rho {r['rho']:.4g}; {r['method']}, {r['iterations']} iterations)"))
    elif args.name in ("cubic", "bbr"):
        rows.append(("W", f"{r['W']:.2f} packets (mean window)"))
    else:
        rows.append(("W", f"{r['W']:.2f} packets (unlimited mean peak window)"))
    return "\n".join(f"{k:<10} {v}" for k, v in rows)


def run(args: argparse.Namespace) -> int:
    """Runs the ``model`` subcommand on parsed ``args``; returns the exit status."""
    from .._io import OutputError

    try:
        _parse(args)
        _check(args)
        r = evaluate(args.name, args.rtt, args.p, args.wmax, args.b, args.t0, args.rtt0, args.mss, args.rate)
        if args.plot:
            plot(args, args.plot)
    except ModelUsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OutputError as e:  # the --plot target changed into a FIFO, a device... meanwhile
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: --plot: cannot write {args.plot}: {e.strerror or e}", file=sys.stderr)
        return 1
    if args.json:
        inputs = {"model": args.name, "rtt_s": args.rtt, "p": args.p,
                  "wmax": None if math.isinf(args.wmax) else args.wmax, "mss": args.mss,
                  "rate_bps": args.rate}
        if args.ber is not None:
            inputs["ber"] = args.ber
            inputs["packet_size"] = args.packet_size
        if args.name == "hybla":
            inputs["rtt0_s"] = args.rtt0
        elif args.name not in ("cubic", "bbr"):
            inputs["b"] = args.b
            if args.name != "reno":
                inputs["t0_s"] = args.t0
        doc = {"inputs": inputs, **r}
        if args.plot:
            doc["plot"] = str(args.plot)
        print(json.dumps(doc, indent=2, allow_nan=False))
    else:
        print(_table(args, r))
        if args.plot:
            print(f"wrote {args.plot}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """A parser with just the ``model`` subcommand (as ``longpipe model ...``)."""
    p = argparse.ArgumentParser(prog="longpipe")
    sub = p.add_subparsers(dest="cmd", required=True)
    register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point: ``main(["model", "hybla", "--rtt", "0.55", "--p", "1e-3"])``.

    Returns the exit status (argparse's own usage errors included) instead of exiting.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return run(args)
