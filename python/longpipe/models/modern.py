"""Throughput models of the congestion controls a modern Linux host runs: the CUBIC
response function and a BBR bandwidth-delay bound.

CUBIC (RFC 9438 section 5.1; Ha, Rhee and Xu 2008): with a loss probability ``p`` and a
round-trip time ``RTT`` (seconds), the average window in segments is

    AVG_W_cubic = (C (3 + beta) / (4 (1 - beta)))^(1/4) * RTT^(3/4) / p^(3/4)

with ``C = 0.4`` and ``beta = 0.7`` (RFC 9438 section 4.1, the Linux defaults). Where the
window of standard AIMD (Reno) is larger, CUBIC runs in its Reno-friendly region
(RFC 9438 section 4.3) and follows AIMD, whose average window with CUBIC's alpha
``3 (1 - beta) / (1 + beta)`` is ``sqrt(3 / (2 p))`` (RFC 9438 section 5.1): the model
takes the larger of the two. Throughput = window / RTT.

BBR (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016): BBR
paces at its estimate of the bottleneck bandwidth and keeps at most ``cwnd_gain`` (2)
bandwidth-delay products in flight; it does not treat random loss as congestion. Its
delivery rate is therefore bounded by the bottleneck rate less what random loss takes,
``rate (1 - p)``, and by a receive window, ``wmax / RTT``. This is an upper bound (it
leaves out ProbeRTT, start-up and queueing), not a prediction; it needs ``--rate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: CUBIC's scaling constant C and multiplicative decrease factor beta (RFC 9438 section
#: 4.1; Linux tcp_cubic.c: bic_scale 41 -> C = 0.4, beta 717/1024 = 0.7).
CUBIC_C = 0.4
CUBIC_BETA = 0.7


@dataclass(frozen=True)
class RateModel:
    """A model's result: throughput in packets/s and bit/s, the mean window (packets)
    and which regime bounds it."""

    throughput_pps: float
    throughput_bps: float
    W: float
    regime: str


def _check(rtt: float, p: float, mss: float) -> None:
    if not (math.isfinite(rtt) and rtt > 0):
        raise ValueError(f"rtt: must be a positive, finite number of seconds, got {rtt!r}")
    if not (0 <= p <= 1) or math.isnan(p):
        raise ValueError(f"p: must be in [0, 1], got {p!r}")
    if not (math.isfinite(mss) and mss > 0):
        raise ValueError(f"mss: must be a positive number of bytes, got {mss!r}")


def cubic_window(rtt: float, p: float, c: float = CUBIC_C, beta: float = CUBIC_BETA) -> tuple[float, str]:
    """CUBIC's average window in segments (RFC 9438 section 5.1) and the region it
    runs in: ``"cubic"``, or ``"reno-friendly"`` when the AIMD window is larger."""
    w_cubic = (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * rtt**0.75 / p**0.75
    w_aimd = math.sqrt(3 / (2 * p))
    return (w_cubic, "cubic") if w_cubic >= w_aimd else (w_aimd, "reno-friendly")


def cubic_model(rtt: float, p: float, wmax: float = math.inf, mss: float = 1460) -> RateModel:
    """CUBIC's throughput for loss probability ``p`` (> 0) and ``rtt`` seconds, capped at
    a window of ``wmax`` packets."""
    _check(rtt, p, mss)
    if p == 0:
        raise ValueError("p: the CUBIC response function needs a loss probability above 0")
    w, regime = cubic_window(rtt, p)
    if w > wmax:
        w, regime = wmax, "window-limited"
    pps = w / rtt
    return RateModel(pps, pps * 8 * mss, w, regime)


def bbr_bound(rtt: float, p: float, rate_bps: float, wmax: float = math.inf, mss: float = 1460) -> RateModel:
    """BBR's bandwidth-delay bound: min(rate × (1 − p), wmax × mss / rtt), in packets of
    ``mss`` bytes (``rate_bps`` counts the segments' payload bits)."""
    _check(rtt, p, mss)
    if not (math.isfinite(rate_bps) and rate_bps > 0):
        raise ValueError(f"rate: the BBR bound needs the bottleneck rate (a positive bit rate), got {rate_bps!r}")
    pps = rate_bps * (1 - p) / (8 * mss)
    regime = "bandwidth-limited"
    if wmax / rtt < pps:
        pps, regime = wmax / rtt, "window-limited"
    return RateModel(pps, pps * 8 * mss, pps * rtt, regime)


def ber_to_loss(ber: float, packet_bytes: float) -> float:
    """The probability that a packet of ``packet_bytes`` bytes has at least one bit error
    with independent bit errors at rate ``ber``: 1 − (1 − ber)^(8 × bytes)."""
    if not (0 <= ber < 1):
        raise ValueError(f"ber: must be in [0, 1), got {ber!r}")
    if not (math.isfinite(packet_bytes) and packet_bytes > 0):
        raise ValueError(f"packet-size: must be a positive number of bytes, got {packet_bytes!r}")
    # -expm1(n log1p(-ber)): exact for the tiny BERs of real links
    return -math.expm1(8 * packet_bytes * math.log1p(-ber))
