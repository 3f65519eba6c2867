"""Reproduction of paper [004] (Utsumi, Zabir, Shiratori: "Towards TCP-Cherry: Implementation
and Evaluation of TCP-Peach+"), fig. 5: throughput of NewReno, TCP-Peach and TCP-Peach+
against the per-segment link error rate over a 550 ms, 10 Mbit/s satellite link; plus
our experimental TCP-Cherry, a congestion case and the receiver's probe-ACK mechanism.

The paper gives RTT 550 ms, C = 10 Mbit/s and error rates 0-10 %; fig. 5 itself is not
in our copy, only its reading: NewReno's throughput falls steeply as the error rate
rises, TCP-Peach stays comparatively stable, TCP-Peach+ more stable still. Everything
else is our choice (docs/notes/peach.md):
- one link, 275 ms each way, 10 Mbit/s both ways; errors on the data direction, each
  packet (data and probes alike) lost with probability p; ACKs are not lost;
- a strict two-class priority queue of 1000 packets (probes are served last);
- receiver window 1 MB (the bandwidth-delay product is 687.5 KB), MSS 1460 B, delayed
  ACKs; bulk transfer for 120 s, throughput = goodput over the whole run;
- NewReno and TCP-Peach without SACK (Rapid Recovery is NewReno's), TCP-Peach+ and
  TCP-Cherry with SACK (Quick Recovery reads the SACK scoreboard), NewReno with SACK as
  a reference.

Congestion case: the same link without errors and a 200-packet buffer, 8 NewReno flows
from t = 0-1 s and one more flow (NewReno, Peach, Peach+ or Cherry) from t = 20-21 s (the
seed sets the start times: nothing else is random here), measured
over 40-140 s, at a priority, a GTNetS "peach-droptail" and a plain drop-tail queue: how
much do the newcomer's probes cost the NewReno traffic?
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_text, save_figure
from ..report import table
from .common import CITATIONS, STACK, Runner, csv_text, mean_ci95

RATE = "10Mbps"
DELAY = "275ms"
RWND = "1MB"
# (key, tcp, sack, label)
VARIANTS = (
    ("newreno", "newreno", False, "NewReno"),
    ("peach", "peach", False, "TCP-Peach"),
    ("peach+", "peach+", True, "TCP-Peach+"),
    ("cherry", "cherry", True, "TCP-Cherry (experimental)"),
    ("newreno-sack", "newreno", True, "NewReno with SACK (reference)"),
)
NEWCOMERS = ("newreno", "peach", "peach+", "cherry")
QUEUES = ("priority", "peach-droptail", "droptail")
CROSS = 8
PAPER_FIG5 = ("The paper's fig. 5 is missing from our copy (no numbers); its text reads it: NewReno's throughput "
              "falls steeply as the link error rate rises, TCP-Peach stays comparatively stable, TCP-Peach+ more "
              "stable than TCP-Peach. Those three statements are what we check.")


def grid(quick: bool) -> tuple[list[float], list[int], str]:
    """Error rates, seeds and duration of the fig. 5 sweep."""
    if quick:
        return [0.0, 0.01, 0.05, 0.10], [1, 2], "40s"
    return [0.0, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10], list(range(1, 11)), "120s"


def scenario(tcp: str, sack: bool, p: float, duration: str = "120s", probe_ack: str | None = None,
             queue: str = "priority") -> dict[str, Any]:
    link: dict[str, Any] = {"a": "sender", "b": "receiver", "rate": RATE, "delay": DELAY,
                            "queue": {"limit": "1000pkt", "kind": queue}}
    if p > 0:
        link["loss"] = {"kind": "bernoulli", "p": p}
    flow: dict[str, Any] = {"src": "sender", "dst": "receiver", "stack": STACK, "tcp": tcp, "sack": sack, "rwnd": RWND}
    if probe_ack:
        flow["peach"] = {"probe_ack": probe_ack}
    return {"name": f"peach-fig5-{tcp}{'-sack' if sack else ''}-p{p:g}", "duration": duration,
            "link": [link], "flow": [flow]}


def _jitter_ms(seed: int, i: int) -> int:
    """A start offset in [0, 1000) ms from the seed and the flow index (a fixed
    integer hash, so each seed is its own repeatable run)."""
    return (seed * 7919 + (i + 1) * 104_729) * 2_654_435_761 % 2**32 % 1000


def congestion_scenario(newcomer: str | None, queue: str, seed: int = 1) -> dict[str, Any]:
    """No link errors, so the seed varies the flows' start times: the 8 NewReno flows
    within the first second, the newcomer within a second of 20 s. The senders reach
    the satellite link through a router (100 Mbit/s, 1 ms access link)."""
    flows: list[dict[str, Any]] = [{"src": "sender", "dst": "receiver", "stack": STACK, "tcp": "newreno", "rwnd": RWND,
                                    "start": f"{_jitter_ms(seed, i)}ms"} for i in range(CROSS)]
    if newcomer:
        flows.append({"src": "sender", "dst": "receiver", "stack": STACK, "tcp": newcomer, "sack": newcomer in ("peach+", "cherry"),
                      "rwnd": RWND, "start": f"{20_000 + _jitter_ms(seed, CROSS)}ms"})
    return {"name": f"peach-congestion-{newcomer or 'none'}-{queue}", "duration": "140s", "warmup": "40s",
            # the bottleneck is a router's queue, as in the paper's topology: a sender's own
            # interface holds its segments back instead (docs/notes/host-interface.md)
            "node": [{"name": "router", "kind": "router"}],
            "link": [{"a": "router", "b": "receiver", "rate": RATE, "delay": DELAY,
                      "queue": {"limit": "200pkt", "kind": queue}},
                     {"a": "sender", "b": "router", "rate": "100Mbps", "delay": "1ms",
                      "queue": {"limit": "1000pkt"}}],
            "flow": flows}


def run_fig5(runner: Runner, quick: bool) -> list[dict[str, Any]]:
    ps, seeds, dur = grid(quick)
    keys = [(k, p, s) for k, *_ in VARIANTS for p in ps for s in seeds]
    spec = {k: (tcp, sack) for k, tcp, sack, _ in VARIANTS}
    items = [(scenario(*spec[k], p, dur), s, {"variant": k, "p": p}) for k, p, s in keys]
    res = dict(zip(keys, (d["flows"][0] for d in runner.results("fig5", items))))
    rows = []
    for k, _tcp, _sack, _label in VARIANTS:
        for p in ps:
            fs = [res[(k, p, s)] for s in seeds]
            m, ci = mean_ci95([f["goodput_bps"] / 1e6 for f in fs])
            rows.append({"variant": k, "p": p, "seeds": len(seeds), "throughput_mbps": m, "ci95": ci,
                         "timeouts": float(np.mean([f["timeouts"] for f in fs])),
                         "fast_recoveries": float(np.mean([f["fast_recoveries"] for f in fs])),
                         "retransmitted": float(np.mean([f["retransmitted_segments"] for f in fs])),
                         "probe_segments": float(np.mean([f.get("probe_segments", 0) for f in fs]))})
    return rows


def run_congestion(runner: Runner, quick: bool) -> list[dict[str, Any]]:
    seeds = [1, 2] if quick else list(range(1, 11))
    cases = [(x, q) for q in QUEUES for x in (None, *NEWCOMERS)]
    keys = [(x, q, s) for x, q in cases for s in seeds]
    items = [(congestion_scenario(x, q, s), s, {"newcomer": x or "none", "queue": q}) for x, q, s in keys]
    res = dict(zip(keys, runner.results("congestion", items)))
    rows = []
    for x, q in cases:
        docs = [res[(x, q, s)] for s in seeds]
        cross = [sum(f["goodput_bps"] for f in d["flows"][:CROSS]) / 1e6 for d in docs]
        new = [d["flows"][CROSS]["goodput_bps"] / 1e6 if x else 0.0 for d in docs]
        links = [d["links"][0] for d in docs]
        cm, cci = mean_ci95(cross)
        nm, nci = mean_ci95(new)
        rows.append({"newcomer": x or "none", "queue": q, "seeds": len(seeds), "cross_mbps": cm, "cross_ci95": cci,
                     "newcomer_mbps": nm, "newcomer_ci95": nci,
                     "utilization": float(np.mean([lk["utilization"] for lk in links])),
                     "drops_normal": float(np.mean([lk["drops_queue"] - lk.get("drops_queue_low", 0)
                                                    for lk in links])),
                     "drops_low": float(np.mean([lk.get("drops_queue_low", 0) for lk in links])),
                     "packets_low": float(np.mean([lk.get("packets_low", 0) for lk in links]))})
    return rows


def run_probe_ack(runner: Runner, quick: bool) -> list[dict[str, Any]]:
    """TCP-Peach and Peach+ with flagged probe ACKs against an unmodified receiver."""
    seeds = [1, 2] if quick else list(range(1, 11))
    dur = "40s" if quick else "120s"
    cases = [(tcp, sack, mode, p) for tcp, sack in (("peach", False), ("peach+", True))
             for mode in ("flagged", "plain") for p in (0.0, 0.01)]
    keys = [(*c, s) for c in cases for s in seeds]
    items = [(scenario(tcp, sack, p, dur, probe_ack=mode), s, {"tcp": tcp, "probe_ack": mode, "p": p})
             for tcp, sack, mode, p, s in keys]
    res = dict(zip(keys, (d["flows"][0] for d in runner.results("probe-ack", items))))
    rows = []
    for c in cases:
        fs = [res[(*c, s)] for s in seeds]
        m, ci = mean_ci95([f["goodput_bps"] / 1e6 for f in fs])
        rows.append({"tcp": c[0], "probe_ack": c[2], "p": c[3], "throughput_mbps": m, "ci95": ci,
                     "fast_recoveries": float(np.mean([f["fast_recoveries"] for f in fs])),
                     "probe_acks": float(np.mean([f.get("probe_acks", 0) for f in fs]))})
    return rows


def _at(rows: list[dict[str, Any]], variant: str, p: float) -> dict[str, Any]:
    return next(r for r in rows if r["variant"] == variant and r["p"] == p)


def checks(rows: list[dict[str, Any]], cong: list[dict[str, Any]], probe: list[dict[str, Any]]) -> list[str]:
    """The paper's claims (fig. 5 as its text reads it), and the congestion property."""
    ps = sorted({r["p"] for r in rows})
    pmax, lossy = ps[-1], [p for p in ps if p > 0]
    ret = {k: _at(rows, k, pmax)["throughput_mbps"] / _at(rows, k, 0.0)["throughput_mbps"] for k, *_ in VARIANTS}
    out = []
    nr1 = _at(rows, "newreno", 0.01)["throughput_mbps"] if 0.01 in ps else float("nan")
    nr0 = _at(rows, "newreno", 0.0)["throughput_mbps"]
    out.append(f"\"NewReno's throughput falls steeply as the error rate rises\": ours {nr0:.2f} Mbit/s at 0 %, "
               f"{nr1:.2f} at 1 %, {_at(rows, 'newreno', pmax)['throughput_mbps']:.3f} at {pmax * 100:g} % -> "
               f"{'AGREES' if nr1 < 0.25 * nr0 else 'DIFFERS'} (criterion: below a quarter of the error-free "
               "throughput at 1 %)")

    def above(a: str, b: str) -> list[float]:
        """Error rates where a's CI lies wholly above b's."""
        return [p for p in lossy if _at(rows, a, p)["throughput_mbps"] - _at(rows, a, p)["ci95"]
                > _at(rows, b, p)["throughput_mbps"] + _at(rows, b, p)["ci95"]]

    pe = above("peach", "newreno")
    ok = len(pe) == len(lossy) and ret["peach"] > ret["newreno"]
    out.append(f"\"TCP-Peach stays comparatively stable\": Peach above NewReno (95 % CIs apart) at {len(pe)} of "
               f"{len(lossy)} error rates; it keeps {ret['peach'] * 100:.0f} % of its error-free throughput at "
               f"{pmax * 100:g} % (NewReno {ret['newreno'] * 100:.1f} %) -> {'AGREES' if ok else 'DIFFERS'}")
    pp_mean = [p for p in lossy if _at(rows, "peach+", p)["throughput_mbps"] >= _at(rows, "peach", p)["throughput_mbps"]]
    pp_ci = above("peach+", "peach")
    ok = len(pp_mean) == len(lossy) and ret["peach+"] > ret["peach"]
    out.append(f"\"TCP-Peach+ is more stable than TCP-Peach\": Peach+ at or above Peach at {len(pp_mean)} of "
               f"{len(lossy)} error rates (CIs apart at {len(pp_ci)}); it keeps {ret['peach+'] * 100:.0f} % at "
               f"{pmax * 100:g} % (Peach {ret['peach'] * 100:.0f} %) -> {'AGREES' if ok else 'DIFFERS'}")
    out.append(f"TCP-Cherry (not in the paper's fig. 5; our reconstruction): {_at(rows, 'cherry', 0.0)['throughput_mbps']:.2f} "
               f"Mbit/s without errors (Peach+ {_at(rows, 'peach+', 0.0)['throughput_mbps']:.2f}: its supplement "
               "segments carry new data at low priority and arrive out of order behind normal segments), "
               f"{_at(rows, 'cherry', pmax)['throughput_mbps']:.2f} at {pmax * 100:g} % "
               f"(Peach+ {_at(rows, 'peach+', pmax)['throughput_mbps']:.2f})")
    sack = _at(rows, "newreno-sack", pmax)["throughput_mbps"]
    out.append(f"NewReno with SACK (reference, not in the paper) keeps {ret['newreno-sack'] * 100:.1f} % at "
               f"{pmax * 100:g} % ({sack:.3f} Mbit/s): SACK alone does not explain Peach+'s stability")

    def c(x: str, q: str) -> dict[str, Any]:
        return next(r for r in cong if r["newcomer"] == x and r["queue"] == q)

    prot = [x for x in NEWCOMERS[1:] if c(x, "priority")["cross_mbps"] > c(x, "droptail")["cross_mbps"]]
    out.append(f"congestion: NewReno cross traffic beside each Peach-family newcomer gets more at the priority queue "
               f"than at a drop-tail queue for {len(prot)} of {len(NEWCOMERS) - 1} ("
               + ", ".join(f"{x}: {c(x, 'priority')['cross_mbps']:.2f} vs {c(x, 'droptail')['cross_mbps']:.2f}"
                           for x in NEWCOMERS[1:])
               + f" Mbit/s) -> the priority scheme {'protects' if len(prot) == len(NEWCOMERS) - 1 else 'does NOT always protect'} "
               "normal traffic from the probes")
    base = c("newreno", "priority")["cross_mbps"]
    out.append("congestion, priority queue: NewReno cross traffic beside a NewReno newcomer "
               f"{base:.2f} Mbit/s; beside " + ", ".join(
                   f"{x} {c(x, 'priority')['cross_mbps']:.2f} ({c(x, 'priority')['cross_mbps'] / base * 100:.0f} %)"
                   for x in NEWCOMERS[1:])
               + ". Probes never displace a normal packet there (a normal arrival pushes out low-priority ones), "
               "but a probe that slips through when the queue is momentarily empty restores the newcomer's "
               "window, which then competes at normal priority")
    fl = {(r["tcp"], r["probe_ack"], r["p"]): r for r in probe}
    out.append("probe ACKs: with an unmodified receiver (probe_ack = \"plain\") TCP-Peach's dummies draw duplicate "
               f"ACKs: {fl[('peach', 'plain', 0.0)]['fast_recoveries']:.1f} fast recoveries per run without any "
               f"error (flagged: {fl[('peach', 'flagged', 0.0)]['fast_recoveries']:.1f}); at 1 % "
               f"{fl[('peach', 'plain', 0.01)]['throughput_mbps']:.2f} Mbit/s instead of "
               f"{fl[('peach', 'flagged', 0.01)]['throughput_mbps']:.2f} (Peach+: "
               f"{fl[('peach+', 'plain', 0.01)]['throughput_mbps']:.2f} instead of "
               f"{fl[('peach+', 'flagged', 0.01)]['throughput_mbps']:.2f})")
    return out


def fig5_table(rows: list[dict[str, Any]]) -> str:
    ps = sorted({r["p"] for r in rows})
    keys = [k for k, *_ in VARIANTS]
    body = [[f"{p * 100:g}"] + [f"{_at(rows, k, p)['throughput_mbps']:.3f} ± {_at(rows, k, p)['ci95']:.3f}"
                                for k in keys] + [f"{_at(rows, k, p)['timeouts']:.1f}" for k in keys[:4]]
            for p in ps]
    return table(["error %"] + [f"{label.split(' (')[0]} Mbit/s" for _, _, _, label in VARIANTS]
                 + [f"RTOs {k}" for k in keys[:4]], body)


def congestion_table(cong: list[dict[str, Any]]) -> str:
    body = [[r["queue"], r["newcomer"], f"{r['cross_mbps']:.2f} ± {r['cross_ci95']:.2f}",
             f"{r['newcomer_mbps']:.2f} ± {r['newcomer_ci95']:.2f}", f"{r['utilization']:.3f}",
             f"{r['drops_normal']:.0f}", f"{r['drops_low']:.0f}", f"{r['packets_low']:.0f}"] for r in cong]
    return table(["queue", "newcomer", f"{CROSS} NewReno Mbit/s", "newcomer Mbit/s", "utilization",
                  "drops normal", "drops low", "low pkts sent"], body, "llrrrrrr")


def probe_table(probe: list[dict[str, Any]]) -> str:
    body = [[r["tcp"], r["probe_ack"], f"{r['p'] * 100:g}", f"{r['throughput_mbps']:.2f} ± {r['ci95']:.2f}",
             f"{r['fast_recoveries']:.1f}", f"{r['probe_acks']:.0f}"] for r in probe]
    return table(["tcp", "probe_ack", "error %", "Mbit/s", "fast recoveries", "probe ACKs"], body, "llrrrr")


#: PFTK's NewReno line in fig. 5: delayed ACKs (b = 2), the first timeout at RFC 6298's
#: 1 s floor (the 550 ms path's RTO), the 1 MB receiver window in segments
PFTK_B, PFTK_T0, MSS = 2, 1.0, 1460
RTT_S = 0.55


def pftk_mbps(p: float) -> float:
    """NewReno's throughput by the full PFTK model (Padhye et al. 2000) at per-segment loss
    rate ``p``, capped at the line's goodput (10 Mbit/s x MSS/MTU)."""
    from ..models import pftk_full

    wmax = 1_000_000 // MSS
    return min(pftk_full(RTT_S, p, b=PFTK_B, t0=PFTK_T0, wmax=wmax) * MSS * 8 / 1e6, 10 * MSS / (MSS + 40))


def figure5(out: Path, rows: list[dict[str, Any]]) -> Path:
    """Throughput against the link error rate, mean and 95 % CI (cf. the paper's fig. 5),
    on a log scale (NewReno's 0.04-0.3 Mbit/s would sit on the axis of a linear one), with
    the PFTK model's NewReno line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter, StrMethodFormatter

    style = {"newreno": ("s-", "C3"), "peach": ("^-", "C1"), "peach+": ("o-", "C0"), "cherry": ("D--", "C2"),
             "newreno-sack": ("v:", "0.45")}
    fig, ax = plt.subplots(figsize=(7.6, 5.4))
    for k, _tcp, _sack, label in VARIANTS:
        sel = [r for r in rows if r["variant"] == k]
        fmt, color = style[k]
        # a CI reaching below zero cannot be drawn on a log axis: clip its lower arm at 1 % of the mean
        lower = [min(r["ci95"], 0.99 * r["throughput_mbps"]) for r in sel]
        ax.errorbar([r["p"] * 100 for r in sel], [r["throughput_mbps"] for r in sel],
                    yerr=[lower, [r["ci95"] for r in sel]], fmt=fmt, color=color, capsize=3, ms=5,
                    mfc="none" if k in ("cherry", "newreno-sack") else color, label=label)
    ps = np.linspace(0.004, max(r["p"] for r in rows), 200)
    ax.plot(ps * 100, [pftk_mbps(float(p)) for p in ps], "-", color="k", lw=1.2,
            label=f"NewReno, PFTK model (b = {PFTK_B}, T0 = {PFTK_T0:g} s, RTT {RTT_S * 1e3:.0f} ms)")
    ax.set_yscale("log")
    ax.set_ylim(0.02, 15)
    ax.yaxis.set_major_locator(FixedLocator([0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10]))
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("per-segment link error rate (%)")
    ax.set_ylabel("throughput (Mbit/s, log scale)")
    ax.set_xlim(-0.3, max(r["p"] for r in rows) * 100 + 0.3)
    n = rows[0]["seeds"]
    ax.set_title(f"RTT 550 ms, 10 Mbit/s (cf. paper [004] fig. 5): mean and 95% CI of {n} seeds", fontsize=10)
    ax.grid(alpha=0.3, which="major")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    fig.tight_layout()
    path = save_figure(fig, out / "fig5_throughput_vs_error.png", dpi=110)
    plt.close(fig)
    return path


def congestion_figure(out: Path, cong: list[dict[str, Any]]) -> Path:
    """Goodput of the NewReno cross traffic and of the newcomer, per queue discipline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(QUEUES), figsize=(10.5, 4.2), sharey=True)
    names = ["none", *NEWCOMERS]
    x = np.arange(len(names))
    for ax, q in zip(axes, QUEUES):
        sel = [next(r for r in cong if r["queue"] == q and r["newcomer"] == n) for n in names]
        ax.bar(x, [r["cross_mbps"] for r in sel], yerr=[r["cross_ci95"] for r in sel], capsize=3, color="C3",
               label=f"{CROSS} NewReno flows")
        ax.bar(x, [r["newcomer_mbps"] for r in sel], bottom=[r["cross_mbps"] for r in sel],
               yerr=[r["newcomer_ci95"] for r in sel], capsize=3, color="C0", label="the newcomer")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=30, fontsize=8)
        ax.set_title(f"queue: {q}", fontsize=10)
        ax.set_ylim(0, 10.5)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_ylabel("goodput, 40-140 s (Mbit/s)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=2)
    fig.suptitle(f"Congestion case: 10 Mbit/s, RTT 550 ms, 200-packet buffer; newcomer from 20 s; mean and 95% CI "
                 f"of {cong[0]['seeds']} seeds", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path = save_figure(fig, out / "congestion.png", dpi=110)
    plt.close(fig)
    return path


def outputs(quick: bool = False) -> list[str]:
    """The files :func:`main` writes into its output directory (besides the run store)."""
    return sorted(["report.md", "table.json", "table.csv", "congestion.json", "congestion.csv", "probe_ack.json",
                   "fig5_throughput_vs_error.png", "congestion.png"])


def main(quick: bool = False, out: str | Path = "out/reproduce/peach", jobs: int | None = None,
         executor: str = "local", quiet: bool = False) -> int:
    out = Path(out)
    runner = Runner(out, jobs, executor, quiet, "peach")
    ps, seeds, dur = grid(quick)
    print(f"Paper: {CITATIONS['peach']}")
    print(PAPER_FIG5)
    print(f"Fig. 5: RTT 550 ms, 10 Mbit/s, error rates {', '.join(f'{p * 100:g}' for p in ps)} %, {len(seeds)} seeds, "
          f"{dur} each{' (quick)' if quick else ''}")
    rows = run_fig5(runner, quick)
    cong = run_congestion(runner, quick)
    probe = run_probe_ack(runner, quick)
    t5, tc, tp = fig5_table(rows), congestion_table(cong), probe_table(probe)
    found = checks(rows, cong, probe)
    print(t5)
    print()
    print(f"Congestion case ({CROSS} NewReno flows + one newcomer from 20 s; 40-140 s):")
    print(tc)
    print()
    print("Probe ACK mechanism (TCP-Peach and Peach+, flagged vs an unmodified receiver):")
    print(tp)
    print()
    for c in found:
        print(" - " + c)
    atomic_write_text(out / "table.json", json.dumps(rows, indent=2) + "\n")
    atomic_write_text(out / "table.csv", csv_text(rows))
    atomic_write_text(out / "congestion.json", json.dumps(cong, indent=2) + "\n")
    atomic_write_text(out / "congestion.csv", csv_text(cong))
    atomic_write_text(out / "probe_ack.json", json.dumps(probe, indent=2) + "\n")
    paths = [figure5(out, rows), congestion_figure(out, cong)]
    atomic_write_text(out / "report.md", "\n".join([
        "# TCP-Peach and TCP-Peach+ over a satellite link (paper [004], fig. 5)", "",
        f"Paper: {CITATIONS['peach']}.", "",
        PAPER_FIG5, "",
        "Setup and choices: docs/notes/peach.md.", "",
        "## Throughput against the link error rate (fig. 5)", "", "```", t5, "```", "",
        "![fig. 5](fig5_throughput_vs_error.png)", "",
        f"## Congestion case: {CROSS} NewReno flows and a newcomer", "", "```", tc, "```", "",
        "![congestion](congestion.png)", "",
        "## The receiver's probe-ACK mechanism", "", "```", tp, "```", "",
        "## The paper's claims and ours", "", *[f"- {c}" for c in found], ""]))
    for p in paths:
        print(f"wrote {p}")
    return 0
