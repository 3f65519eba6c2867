"""TCP Reno throughput models (packets per second).

- :func:`pftk_full` — Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Reno Performance",
  IEEE/ACM ToN 8(2), 2000: the full model with timeouts and a receiver window limit
  (their eq. (31)/(32), as summarised in ALGORITHMS.md §6).
- :func:`pftk_approx` — the same paper's approximate formula (their eq. (33)).
- :func:`reno_no_timeout` — the no-timeout form given in the appendix of Endo et al.,
  "Analytical Model of TCP Hybla for Satellite IP Networks" (eqs. (A-1)–(A-15)), which
  that paper compares its Hybla model with.

Symbols: ``rtt`` mean round-trip time (s), ``p`` loss-indication probability, ``b``
packets acknowledged per ACK (2 with delayed ACKs), ``t0`` the first retransmission
timeout (s), ``wmax`` the receiver's window limit (packets; ``inf`` = none).
"""

from __future__ import annotations

import math

__all__ = ["pftk_full", "pftk_approx", "reno_no_timeout", "MODELS", "throughput", "check_args"]


def check_args(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> None:
    """Raises ValueError naming the first invalid argument."""
    if not (isinstance(rtt, (int, float)) and math.isfinite(rtt) and rtt > 0):
        raise ValueError(f"rtt: must be a positive number of seconds, got {rtt!r}")
    if not (isinstance(p, (int, float)) and 0 < p <= 1):
        raise ValueError(f"p: must be in (0, 1], got {p!r}")
    if not (isinstance(b, (int, float)) and b >= 1):
        raise ValueError(f"b: must be >= 1 packet per ACK, got {b!r}")
    if not (isinstance(t0, (int, float)) and t0 > 0):
        raise ValueError(f"t0: must be a positive number of seconds, got {t0!r}")
    if not (isinstance(wmax, (int, float)) and wmax >= 1):
        raise ValueError(f"wmax: must be at least 1 packet, got {wmax!r}")


def _qhat(w: float, p: float) -> float:
    """PFTK eq. (24): probability that a loss indication is a timeout, window w."""
    q = 1.0 - p
    if w <= 3:
        return 1.0
    den = 1.0 - q**w
    if den <= 0:
        return 1.0
    return min(1.0, (1.0 - q**3) * (1.0 + q**3 * (1.0 - q ** (w - 3))) / den)


def _f(p: float) -> float:
    """PFTK eq. (27): 1 + p + 2p² + … + 32p⁶ (timeout backoff sequence)."""
    return 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6


def pftk_full(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """PFTK full model with timeouts and window limit, packets/s (PFTK eqs. (31), (32))."""
    check_args(rtt, p, b, t0, wmax)
    if p >= 1:
        return 0.0
    q = 1.0 - p
    c = (2 + b) / (3 * b)
    ewu = c + math.sqrt(8 * q / (3 * b * p) + c * c)  # E[W_u], eq. (13)
    f = _f(p)
    if ewu < wmax:
        qh = _qhat(ewu, p)
        return (q / p + ewu + qh / q) / (rtt * (b * ewu / 2 + 1) + qh * t0 * f / q)
    qh = _qhat(wmax, p)
    return (q / p + wmax + qh / q) / (rtt * (b * wmax / 8 + q / (p * wmax) + 2) + qh * t0 * f / q)


def pftk_approx(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """PFTK approximate model, packets/s (PFTK eq. (33))."""
    check_args(rtt, p, b, t0, wmax)
    den = rtt * math.sqrt(2 * b * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    return min(wmax / rtt, 1.0 / den)


def reno_no_timeout(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """Reno without timeouts, packets/s: Endo et al. appendix, eqs. (A-1)–(A-15).

    Unlimited window: W from (A-5), X = b(W/2 + 1) (A-4), A = (X + 1)R (A-6),
    B = ((1 − p)/p + W)/A (A-7). When W > wmax the window-limited form applies:
    X = (1 − p)/(Wm p) + b Wm/8 + (b + 2)/4 (A-13), A = (X + 1)R (A-14),
    B = ((1 − p)/p + Wm)/A (A-15). ``t0`` is accepted for a uniform signature and
    ignored (the model has no timeouts).
    """
    check_args(rtt, p, b, t0, wmax)
    if p >= 1:
        return 0.0
    q = 1.0 - p
    k = (3 * b - 2) / (3 * b)
    w = math.sqrt(8 * q / (3 * b * p) + k * k) - k
    if w <= wmax:
        x = b * (w / 2 + 1)
        return (q / p + w) / ((x + 1) * rtt)
    x = q / (wmax * p) + b * wmax / 8 + (b + 2) / 4
    return (q / p + wmax) / ((x + 1) * rtt)


MODELS = {"pftk": pftk_full, "pftk-approx": pftk_approx, "reno": reno_no_timeout}


def throughput(model: str, rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """Throughput in packets/s of the named Reno model ("pftk", "pftk-approx", "reno")."""
    try:
        fn = MODELS[model]
    except KeyError:
        raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}") from None
    return fn(rtt, p, b, t0, wmax)
