"""Draws docs/architecture.png: the elements, the protocol and the two drivers.

    .venv/bin/python docs/figures/architecture.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "architecture.png"


def box(ax, x, y, w, h, text, fc="#dde8f4", ec="#2c4a6e", size=9, weight="normal", ls="-"):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", fc=fc, ec=ec,
                                lw=1.2, ls=ls))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight, wrap=True)


def arrow(ax, x0, y0, x1, y1, text="", color="#2c4a6e", style="-|>", ls="-", off=(0, 0.12)):
    ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle=style, mutation_scale=12, color=color, lw=1.3,
                                 ls=ls))
    if text:
        ax.text((x0 + x1) / 2 + off[0], (y0 + y1) / 2 + off[1], text, ha="center", va="bottom", fontsize=7.5,
                color=color)


fig, ax = plt.subplots(figsize=(13, 8.2))
ax.set_xlim(0, 13)
ax.set_ylim(0, 8.2)
ax.axis("off")
ax.text(0.1, 7.95, "longpipe-core: elements wired by a driver", fontsize=13, weight="bold")

# The network of elements (one flow, one link direction shown in full).
ax.add_patch(FancyBboxPatch((0.1, 3.55), 12.8, 4.0, boxstyle="round,pad=0.02", fc="#f7f9fc", ec="#9fb3c8", lw=1))
ax.text(0.25, 7.3, "elements (sans-IO, generic over the unit: packet | ATM cell | raw IPv4 buffer)", fontsize=9,
        style="italic", color="#44546a")
box(ax, 0.3, 5.4, 1.7, 1.1, "TCP endpoint\n(sender: Tx +\ncc + recovery)", fc="#e6f2e1", ec="#3b6e2c")
box(ax, 2.5, 5.4, 1.5, 1.1, "node\nforward /\nlocal demux", fc="#f5ecd9", ec="#8a6a1f")
# link direction = chain of stages
ax.add_patch(FancyBboxPatch((4.45, 5.05), 5.6, 1.8, boxstyle="round,pad=0.02", fc="#eef3fa", ec="#2c4a6e", lw=1.2))
ax.text(7.25, 6.6, "link direction = a chain of stages", ha="center", fontsize=9, weight="bold", color="#2c4a6e")
stages = ["queue discipline\n(Queue trait:\ndrop-tail, ...)", "transmitter\n(rate)", "impairment\n(loss, BER,\nGilbert, seq)",
          "delay line\n(propagation)"]
for i, s in enumerate(stages):
    box(ax, 4.6 + i * 1.37, 5.2, 1.2, 1.2, s, fc="white", size=7.5)
    if i:
        arrow(ax, 4.6 + i * 1.37 - 0.17, 5.8, 4.6 + i * 1.37, 5.8)
box(ax, 10.5, 5.4, 1.4, 1.1, "node\n(or gateway,\nATM switch)", fc="#f5ecd9", ec="#8a6a1f")
box(ax, 10.5, 3.8, 1.4, 1.1, "TCP endpoint\n(receiver)", fc="#e6f2e1", ec="#3b6e2c")
box(ax, 0.3, 3.75, 1.5, 0.95, "capture\n(pcap)", fc="#f0e6f4", ec="#6a3b7e", ls="--")
arrow(ax, 2.0, 5.95, 2.5, 5.95, "Now")
arrow(ax, 4.0, 5.95, 4.6, 5.95, "Now")
arrow(ax, 10.05, 5.95, 10.5, 5.95, "At", off=(0, 0.05))
arrow(ax, 11.2, 5.4, 11.2, 4.9, "Now", off=(0.3, -0.05))
arrow(ax, 6.55, 5.2, 1.8, 4.55, "TAP copy at transmission start", ls="--", color="#6a3b7e", off=(-0.4, -0.05))
ax.text(6.15, 4.35, "an element: handle(now, port, unit, out) · poll_timeout() · handle_timeout(now, out) · metrics(now)\n"
        "out: Emit::Now(port, unit) — handed on at once, depth first;  Emit::At(t, port, unit) — delivered by the driver at t",
        fontsize=7.6, color="#333", ha="center")
ax.text(6.15, 3.8, "link layers (RLC AM, ATM) replace queue + transmitter with their own element; nodes: forward, TCP "
        "gateway, ATM switch", fontsize=7.6, color="#555", ha="center")

# Drivers.
box(ax, 0.3, 1.45, 5.9, 1.7, "", fc="#fbf3e9", ec="#8a5a1f")
ax.text(3.25, 2.85, "simulator driver (sim/)", ha="center", fontsize=10, weight="bold", color="#8a5a1f")
ax.text(3.25, 1.6, "event queue (time, seq): Wake(elem), Deliver(elem, port, unit)\n"
        "one pending wake-up per element; FIFO lanes per wire\n"
        "builds + wires the elements of a ValidScenario\n"
        "warmup = snapshot of counters; result = end − warmup\n"
        "integer ns, seeded streams: same bytes every run", ha="center", fontsize=8)
box(ax, 6.8, 1.45, 5.9, 1.7, "", fc="#fbf3e9", ec="#8a5a1f", ls="--")
ax.text(9.75, 2.85, "wall-clock drivers (emulator, gateway daemon)", ha="center", fontsize=10, weight="bold",
        color="#8a5a1f")
ax.text(9.75, 1.6, "same Driver API: step_until(now), next_deadline(),\n"
        "inject(elem, port, unit) for what a TUN device delivers,\n"
        "take_exits() for what leaves unwired ports\n"
        "the same link elements over raw IPv4 buffers\n"
        "(wire codec: packet <-> bytes, shared with pcap)", ha="center", fontsize=8)
arrow(ax, 3.25, 3.15, 3.25, 3.55, color="#8a5a1f")
arrow(ax, 9.75, 3.15, 9.75, 3.55, color="#8a5a1f", ls="--")

# Layers.
ax.text(0.3, 0.95, "layers (imports point down, no circles):", fontsize=9, weight="bold")
ax.text(0.3, 0.25, "python/longpipe (api, cli, sweeps, models, experiments)  →  longpipe-py (PyO3)  →  sim, engine  →  "
        "scenario (parse, check references, assemble)  →\ncomponents: tcp/ (cc/, recovery/), net/, l2/, middlebox/ — "
        "each owns its spec and defaults  →  element, stats, error, units, time, rng, wire",
        fontsize=8, color="#333")
fig.savefig(OUT, dpi=110, bbox_inches="tight")
print(f"wrote {OUT}")
