"""The phase lock of paper [002]'s network and what breaks it (docs/notes/atm.md, "The
phase lock"): :func:`desync_check` runs Table 1's network under each desynchronisation of
:data:`atm.DESYNC` and prints what the notes quote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..report import table

if TYPE_CHECKING:
    from .._results import SimResult
from .atm import flow_plan, scenario
from .atm_paper import CONDITIONS, DESYNC, DURATION_S, LOCAL_US, NAMES, PAPER_T1, POLICIES, UNIFORM


def desync_check(conds: Sequence[tuple[int, int]] = CONDITIONS, seeds: Sequence[int] = (1, 2, 3),
                 jobs: int | None = None, out: Any = print) -> list[dict[str, Any]]:
    """The measurements of docs/notes/atm.md, "The phase lock": Table 1's network (40
    connections of 552 B, 40 of 1500 B) under each desynchronisation of :data:`DESYNC`,
    each policy and condition, 30 s: per size the PDU loss rate (PDUs lost over PDUs
    sent, summed over connections and seeds), the mean throughput per connection and the
    coefficient of variation of the connections' throughputs (each over its size's mean
    in its run); under "per-host" the slope of a connection's relative throughput
    against its drawn access delay; and the mean absolute error against Table 1. Prints
    a table with ``out``; returns the rows."""
    from .. import api
    from .common import run_parallel

    keys = [(ds, pol, b, d, s) for ds in DESYNC for b, d in conds for pol in POLICIES for s in seeds]

    def one(k: tuple[str, str, int, int, int]) -> tuple[list[int], SimResult]:
        ds, pol, b, d, s = k
        sc = scenario(pol, b, d, (552, 1500), UNIFORM, DURATION_S, s, desync=ds)
        extra = [int(lk["delay"].removesuffix("us")) - LOCAL_US for lk in sc["link"]
                 if lk["a"][0] == "s" and lk["a"][1:].isdigit() and lk["delay"].endswith("us")]
        return extra, api.run(sc, seed=s).data

    res = dict(zip(keys, run_parallel(one, keys, jobs)))
    plan = flow_plan((552, 1500), UNIFORM)
    rows: list[dict[str, Any]] = []
    for ds in DESYNC:
        for b, d in conds:
            for pi, pol in enumerate(POLICIES):
                row: dict[str, Any] = {"desync": ds, "policy": pol, "buffer": b, "delay_ms": d}
                for size in (552, 1500):
                    lost = sent = 0
                    tput: list[float] = []
                    rel: list[float] = []
                    extra: list[int] = []
                    for s in seeds:
                        ex, doc = res[(ds, pol, b, d, s)]
                        atm = doc.get("atm")
                        assert atm is not None, "an ATM scenario's result has an `atm` section"
                        vcs = {v["flow"]: v for v in atm["vcs"] if v["dir"] == "data"}
                        idx = [n for n, (sz, _) in enumerate(plan) if sz == size]
                        g = np.array([doc["flows"][n]["goodput_bps"] for n in idx])
                        tput += list(g)
                        rel += list(g / g.mean())
                        extra += [ex[n] for n in idx] if ex else []
                        lost += sum(vcs[doc["flows"][n]["id"]]["pdus_lost"] for n in idx)
                        sent += sum(vcs[doc["flows"][n]["id"]]["pdus_sent"] for n in idx)
                    row[f"loss_{size}"] = lost / sent
                    row[f"mbps_{size}"] = float(np.mean(tput)) / 1e6
                    row[f"cv_{size}"] = float(np.std(rel))
                    row[f"slope_{size}"] = (float(np.polyfit(np.array(extra) / 1000, rel, 1)[0])
                                            if extra and max(extra) > 0 else float("nan"))
                    row[f"paper_{size}"] = PAPER_T1[(b, d)][size][pi]
                rows.append(row)
    body = [[r["desync"], NAMES[r["policy"]], f"{r['buffer']}, {r['delay_ms']} ms",
             f"{r['loss_552'] * 100:.2f}", f"{r['loss_1500'] * 100:.2f}",
             f"{r['paper_552']:.2f} | {r['mbps_552']:.2f}", f"{r['paper_1500']:.2f} | {r['mbps_1500']:.2f}",
             f"{r['cv_552']:.2f}", f"{r['cv_1500']:.2f}",
             "-" if np.isnan(r["slope_552"]) else f"{r['slope_552'] * 100:+.0f} / {r['slope_1500'] * 100:+.0f}"]
            for r in rows]
    out(table(["desync", "policy", "cells, delay", "loss 552 %", "loss 1500 %", "552 B paper | ours",
               "1500 B paper | ours", "CV 552", "CV 1500", "slope %/ms"], body, "lllrrrrrrr"))
    for ds in DESYNC:
        for pols, what in ((POLICIES, "all policies"), (("epd",), "EPD")):
            err = [abs(r[f"mbps_{z}"] - r[f"paper_{z}"]) for r in rows if r["desync"] == ds and r["policy"] in pols
                   for z in (552, 1500)]
            out(f"{ds}: mean |ours - paper| over Table 1's {len(err)} cells ({what}): {np.mean(err):.3f} Mbit/s")
    return rows
