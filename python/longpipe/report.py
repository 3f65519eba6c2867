"""Plain-text tables of results, for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._results import SimResult, Spread


def _fmt(v: Any, spec: str = "") -> str:
    if v is None:
        return "-"
    return format(v, spec)


def table(headers: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or ("l" + "r" * (len(headers) - 1))
    lines = []
    for k, r in enumerate(cells):
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align)]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _secs(s: Spread | None) -> str:
    if not s:
        return "-"
    return f"mean {s['mean']:.3g} s, p50 {s['p50']:.3g} s, p95 {s['p95']:.3g} s, max {s['max']:.3g} s"


def _rate(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:.3g} Mbit/s" if x >= 1e5 else f"{x / 1e3:.3g} kbit/s"


def format_workload(data: SimResult) -> list[str]:
    """Lines on the applications: pages, requests, chunks, transfers, and per-user figures
    across users (nothing for a run of bulk flows)."""
    w = data.get("workload")
    if not w:
        return []
    out = ["", f"applications: {w['users']} user{'s' if w['users'] != 1 else ''}"]
    for t, what, dur in ((w.get("pages"), "pages", "load"), (w.get("requests"), "requests", "response"),
                         (w.get("chunks"), "chunks", "download"), (w.get("transfers"), "transfers", "completion")):
        if t:
            out.append(f"  {what}: {t['count']} done, {t['unfinished']} unfinished; {dur} {_secs(t.get('time_s'))}")
    for b in w.get("fct_by_size") or []:
        hi = "" if b["max_bytes"] is None else f"{b['max_bytes'] / 1e3:g} kB"
        s = b.get("fct_s")
        out.append(f"    {b['min_bytes'] / 1e3:g} kB-{hi}: {b['count']} transfers"
                   + (f", FCT mean {s['mean']:.3g} s, p95 {s['p95']:.3g} s" if s else "")
                   + (f", {b['unfinished']} unfinished" if b["unfinished"] else ""))
    pu = w["per_user"]
    rows: list[list[Any]] = []
    for a, label, fmt in ((pu["goodput_bps"], "goodput", _rate), (pu.get("page_load_s"), "mean page load", None),
                          (pu.get("response_s"), "mean response", None), (pu.get("fct_s"), "mean FCT", None),
                          (pu.get("transfer_rate_bps"), "transfer rate", _rate),
                          (pu.get("rebuffer_ratio"), "rebuffer ratio", None)):
        if not a:
            continue

        def f(x: float | None, fmt: Any = fmt, label: str = label) -> str:
            if x is None:
                return "-"
            if fmt is not None:
                return str(fmt(x))
            return f"{x:.3g}" + ("" if label == "rebuffer ratio" else " s")

        rows.append([label, f(a["mean"]), f(a["p50"]), f(a["p95"]), f(a["min"]), f(a["max"]),
                     _fmt(a.get("jain"), ".3f")])
    if rows:
        out.append("")
        out.append(table(["per user", "mean", "p50", "p95", "min", "max", "Jain"], rows, "lrrrrrr"))
    users = data.get("users") or []
    if users:
        urows: list[list[Any]] = []
        for u in users:
            urows.append([u["name"], u["kind"], _rate(u["goodput_bps"]),
                          _fmt(u.get("page_load_mean_s"), ".3f"), _fmt(u.get("response_mean_s"), ".3f"),
                          _fmt(u.get("fct_mean_s"), ".3f"), _fmt(u.get("rebuffer_ratio"), ".3f")])
        if len(urows) > 20:
            urows = urows[:10] + [["..."] + [""] * 6] + urows[-5:]
        out.append("")
        out.append(table(["user", "apps", "goodput", "page s", "resp s", "FCT s", "rebuf"], urows, "llrrrrr"))
    return out


def format_result(data: SimResult, wall_s: float | None = None) -> str:
    out = [f"scenario {data['scenario']}  seed {data['seed']}  duration {data['duration_s']:g} s"
           + (f"  (statistics after {data['warmup_s']:g} s)" if data.get("warmup_s") else "")]
    rows: list[list[Any]] = []
    for f in data["flows"]:
        rows.append([
            f["id"], f"{f['src']}->{f['dst']}", f["tcp"], f"{f['goodput_bps'] / 1e6:.4f}", f["bytes_delivered"],
            f["segments_sent"], f["retransmitted_segments"], f["timeouts"], f["fast_recoveries"],
            _fmt(f["completion_time_s"], ".3f"), _fmt(None if f["mean_rtt_s"] is None else f["mean_rtt_s"] * 1e3, ".1f"),
        ])
    from .profiles import columns, profile_of, warning

    profiles = [profile_of(data, i) for i in range(len(data["flows"]))]
    pheads, pcells = columns(profiles)
    rows = [r[:3] + pc + r[3:] for r, pc in zip(rows, pcells)]
    if len(rows) > 20:
        rows = rows[:10] + [["..."] + [""] * (len(rows[0]) - 1)] + rows[-5:]
    out.append("")
    out.append(table(["flow", "path", "tcp"] + pheads
                     + ["goodput Mbit/s", "bytes", "segs", "retx", "RTO", "FR", "done s", "RTT ms"],
                     rows, "lll" + "l" * len(pheads) + "rrrrrrrr"))
    mixed = warning(profiles)
    if mixed:
        out.append(mixed)
    lrows: list[list[Any]] = []
    for lk in data["links"]:
        if lk["packets"] == 0 and lk["drops_queue"] == 0:
            continue
        lrows.append([f"{lk['a']}->{lk['b']}", f"{lk['utilization'] * 100:.1f}%", lk["packets"], lk["drops_queue"],
                      lk["drops_loss"], lk["max_queue_packets"]])
    if len(lrows) > 20:
        lrows = lrows[:10] + [["..."] + [""] * 5] + lrows[-5:]
    out.append("")
    out.append(table(["link", "util", "packets", "queue drops", "loss drops", "max queue"], lrows))
    for lk in data["links"]:
        l2 = lk.get("l2")
        if l2 and l2["kind"] == "atm":
            if l2.get("cells_dropped"):
                out.append(f"ATM {lk['a']}->{lk['b']} ({l2['policy']}, buffer {l2['buffer_cells']} cells): "
                           f"{l2['cells_dropped']} cells dropped (full {l2['dropped_full']}, tagged "
                           f"{l2['dropped_tagged']}, EPD {l2['dropped_epd']}, PPD {l2['dropped_ppd']}), "
                           f"{l2['pdus_discarded_whole']} PDUs discarded whole")
            if l2.get("cells_tagged"):
                out.append(f"ATM {lk['a']}->{lk['b']}: {l2['cells_tagged']} cells tagged CLP=1 by {lk['b']}'s UPC")
        elif l2 and l2["kind"] == "rlc-am" and l2["pdus_sent"]:
            d = l2["sdu_delay_p95_s"]
            out.append(f"RLC {lk['a']}->{lk['b']}: {l2['pdus_per_tti']} PDUs/TTI, {l2['pdus_sent']} PDUs sent, "
                       f"{l2['pdus_retransmitted']} retransmitted, {l2['status_sent']} STATUS, "
                       f"{l2['sdus_discarded']} SDUs discarded, SDU delay p95 "
                       + ("-" if d is None else f"{d * 1e3:.0f} ms"))
    for g in data.get("gateways", []):
        out.append(f"gateway {g['node']}: {g['spoofed_acks']} spoofed ACKs, {g['go_back_n']} go-back-N "
                   f"({g['go_back_n_timeout']} on timeout), {g['segments_resent']} segments resent, "
                   f"{g['client_overruns']} beyond the client window, max buffer {g['max_buffer_bytes']} B"
                   + ("" if g.get("satellite_efficiency") is None
                      else f", satellite efficiency {g['satellite_efficiency']:.3f}")
                   + (", FAILED" if g["failed"] else ""))
    atm = data.get("atm")
    vcs = atm["vcs"] if atm else []
    if vcs:
        out.append(f"ATM VCs: {len(vcs)}, {sum(v['pdus_sent'] for v in vcs)} PDUs sent, "
                   f"{sum(v['pdus_lost'] for v in vcs)} lost, {sum(v['loss_events'] for v in vcs)} loss events, "
                   f"{sum(v['cells_tagged'] for v in vcs)} cells tagged")
    nodes = [f"{n['name']} {n['ipv4'] or '-'} ({n['kind'] or '?'})" for n in data.get("nodes") or []]
    if nodes:
        shown = nodes if len(nodes) <= 12 else nodes[:8] + ["..."] + nodes[-3:]
        out.append("")
        out.append("nodes: " + ", ".join(shown))
    out.extend(format_workload(data))
    span = data["duration_s"] - data.get("warmup_s", 0.0)
    agg = sum(f["bytes_delivered"] for f in data["flows"]) * 8.0 / span if span > 0 else 0.0
    j = data["fairness_jain"]
    sim = data["sim"]
    wall = wall_s
    speed = ""
    if wall is not None:
        eps = sim["events"] / wall if wall > 0 else float("nan")
        speed = f"   wall {wall:.3f} s   ({eps / 1e6:.2f} M events/s)"
    out.append("")
    out.append(f"aggregate goodput {agg / 1e6:.3f} Mbit/s   Jain fairness {_fmt(j, '.4f')}   "
               f"events {sim['events']}{speed}")
    return "\n".join(out)
