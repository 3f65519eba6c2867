"""Seed 002's network and the paper's figures, for the ATM reproduction
(:mod:`.atm`) and its figures (:mod:`.atm_figures`): line rates, buffers, policies,
the desynchronisation settings, the paper's Tables 1-4 and the utilization figures' plans.
Numbers only: no simulation, no plotting."""

from __future__ import annotations

RELAY_BPS = 44_736_000
RELAY = "44.736Mbps"
ACCESS = "149.76Mbps"
LOCAL_US = 10
LOCAL_DELAY = f"{LOCAL_US}us"
#: Desynchronisation (docs/notes/atm.md, "The phase lock"): each sender host's packets
#: wait a random time before its ATM adapter, uniform in [0, JITTER] and redrawn every
#: JITTER_TICK (the shortest period a link schedule allows), in the manner of ns-2's
#: Agent/TCP ``overhead_`` (a uniform random delay before each packet a Tahoe source
#: sends, "to avoid phase effects") after Floyd and Jacobson, "On traffic phase effects in
#: packet-switched gateways" (1992). 2 ms is the smallest range of 0.3, 1 and 2 ms that
#: brings the 552 B connections' EPD loss rate near the 1500 B ones' (the notes).
JITTER = "2ms"
JITTER_TICK = "1ms"
#: the host's hand-off to its adapter is a delay element, not a line: 10 Gbit/s
HOST_BUS = "10Gbps"
#: "per-packet" (the reproduction), "per-host" (a fixed random 0-2 ms more on each
#: sender's access line, compared in the notes), "none" (identical paths: phase-locked)
DESYNC = ("per-packet", "per-host", "none")
#: "sufficient" buffer of every switch port but the congested one, cells
SUFFICIENT = 1_000_000
DURATION_S = 30
POLICIES = ("ubr", "epd", "scd", "scd-epd")
NAMES = {"ubr": "UBR", "epd": "EPD", "scd": "SCD", "scd-epd": "SCD+EPD"}
WINDOW_TARGET = 24 * 1024
#: EPD threshold: this many packets' worth of cells (the paper: 40 TCP packets)
EPD_PACKETS = 40
UNIFORM = (8,) * 10
SKEWED = (4, 12) * 5
CONDITIONS = ((8000, 80), (8000, 10), (16000, 80), (16000, 10))

# The paper's tables: {(buffer, delay ms): {row: (UBR, EPD, SCD, SCD+EPD)}}
PAPER_T1 = {(8000, 80): {552: (0.31, 0.34, 0.37, 0.37), 1500: (0.49, 0.51, 0.45, 0.48)},
            (8000, 10): {552: (0.32, 0.29, 0.40, 0.40), 1500: (0.52, 0.56, 0.44, 0.45)},
            (16000, 80): {552: (0.33, 0.37, 0.37, 0.38), 1500: (0.54, 0.48, 0.48, 0.48)},
            (16000, 10): {552: (0.26, 0.26, 0.39, 0.39), 1500: (0.61, 0.61, 0.47, 0.47)}}
PAPER_T2 = {(8000, 80): {552: (205, 186, 173, 152), 1500: (286, 226, 302, 227)},
            (8000, 10): {552: (612, 596, 622, 507), 1500: (658, 628, 640, 563)},
            (16000, 80): {552: (111, 100, 91, 69), 1500: (112, 61, 159, 99)},
            (16000, 10): {552: (340, 369, 321, 243), 1500: (458, 357, 478, 358)}}
PAPER_T3 = {(8000, 80): {4: (0.51, 0.51, 0.43, 0.48), 12: (0.38, 0.42, 0.43, 0.43)},
            (8000, 10): {4: (0.60, 0.77, 0.49, 0.53), 12: (0.36, 0.33, 0.40, 0.41)},
            (16000, 80): {4: (0.51, 0.48, 0.44, 0.44), 12: (0.42, 0.43, 0.44, 0.45)},
            (16000, 10): {4: (0.75, 0.63, 0.46, 0.47), 12: (0.34, 0.38, 0.43, 0.44)}}
PAPER_T4 = {(8000, 80): {4: (31.5, 27.6, 34.5, 26.0), 12: (43.8, 33.8, 36.4, 29.1)},
            (8000, 10): {4: (61.0, 72.8, 76.5, 71.2), 12: (67.8, 66.3, 74.4, 65.2)},
            (16000, 80): {4: (11.3, 10.3, 18.3, 12.8), 12: (18.3, 15.3, 20.1, 14.3)},
            (16000, 10): {4: (34.8, 40.3, 56.5, 38.8), 12: (59.4, 49.3, 58.1, 46.8)}}

#: The utilization figures: name -> (packet sizes, delay ms, lines, policies, caption)
FIGS: dict[str, tuple[tuple[int, ...], int, tuple[int, ...], tuple[str, ...], str]] = {
    "fig3": ((1500,), 80, UNIFORM, POLICIES, "1500 B, 80 ms"),
    "fig4": ((1500,), 10, UNIFORM, POLICIES, "1500 B, 10 ms"),
    "fig5": ((552,), 80, UNIFORM, POLICIES, "552 B, 80 ms"),
    "fig6": ((4352,), 80, UNIFORM, ("epd",), "EPD, 80 ms, 552 / 1500 / 4352 B"),
    "fig7": ((1500,), 80, SKEWED, ("ubr", "epd"), "1500 B, 80 ms, lines of 4 and 12 connections"),
}


def cells(size: int) -> int:
    """Cells of an AAL5 PDU carrying a ``size``-byte packet (no LLC/SNAP)."""
    return -(-(size + 8) // 48)


def window(size: int) -> int:
    """The multiple of the segment (``size`` - 40) nearest 24 KB, in bytes."""
    mss = size - 40
    return max(1, round(WINDOW_TARGET / mss)) * mss


def payload_bps(rate_bps: int = RELAY_BPS) -> float:
    """ATM-layer payload rate of a line."""
    return rate_bps * 48 / 53
