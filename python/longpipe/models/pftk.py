"""TCP Reno throughput models, in packets per second.

Three named forms (see ``docs/notes/hybla-model.md`` and ALGORITHMS.md §6):

- ``"pftk"`` — :func:`pftk_full`: Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Reno
  Performance: A Simple Model and Its Empirical Validation", IEEE/ACM ToN 8(2), 2000:
  the full model with triple-duplicate and timeout loss indications and a receiver
  window limit ``wmax``.
- ``"pftk-approx"`` — :func:`pftk_approx`: the same paper's approximate closed form.
- ``"reno"`` — :func:`reno_no_timeout`: the timeout-free form printed in the appendix of
  Endo, Kim, Utsumi, Kato, Zabir, "Analytical Model of TCP Hybla for Satellite IP
  Networks" (seed 001), eqs. (A-1)–(A-15), against which that paper sets its Hybla
  model.

The Chen/Bu/Ammar/Towsley (2006) corrections are not implemented.

Symbols: ``rtt`` mean round-trip time R (s); ``p`` loss(-indication) probability in
(0, 1]; ``b`` packets acknowledged per ACK (2 with delayed ACKs); ``t0`` the first
retransmission timeout T0 (s, used by the PFTK forms only); ``wmax`` the receiver's window
limit W_m in packets (``math.inf`` = none). All functions return packets/s;
:func:`pps_to_bps` (or :class:`RenoModel.throughput_bps`) converts to bit/s for a packet
size ``mss`` in bytes.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "MODELS", "P_MIN", "RenoModel", "check_args", "pftk_approx", "pftk_full", "pps_to_bps", "reno_model",
    "reno_no_timeout", "throughput",
]


#: Smallest loss probability evaluated: below it 1/p and 8/(3bp) overflow a float.
P_MIN = 1e-300


def _is_real(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def check_args(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> None:
    """Validates the common model arguments; raises ValueError naming the first bad one.

    rtt: finite, > 0 s; p: in (0, 1]; b: finite, >= 1; t0: finite, > 0 s;
    wmax: >= 1 packet (``math.inf`` for no limit). p below :data:`P_MIN` (1e-300) is
    rejected too, since 1/p would overflow.
    """
    if not (_is_real(rtt) and math.isfinite(rtt) and rtt > 0):
        raise ValueError(f"rtt: must be a positive, finite number of seconds, got {rtt!r}")
    if not (_is_real(p) and 0 < p <= 1):
        raise ValueError(f"p: must be in (0, 1], got {p!r}")
    if p < P_MIN:
        raise ValueError(f"p: must be at least {P_MIN:g} (1/p must not overflow), got {p!r}")
    if not (_is_real(b) and math.isfinite(b) and b >= 1):
        raise ValueError(f"b: must be a finite number >= 1 (packets per ACK), got {b!r}")
    if not (_is_real(t0) and math.isfinite(t0) and t0 > 0):
        raise ValueError(f"t0: must be a positive, finite number of seconds, got {t0!r}")
    if not (_is_real(wmax) and wmax >= 1):
        raise ValueError(f"wmax: must be at least 1 packet (inf for no limit), got {wmax!r}")


def pps_to_bps(pps: float, mss: float = 1000) -> float:
    """Packets/s to bit/s for packets of ``mss`` bytes."""
    if not (_is_real(mss) and math.isfinite(mss) and mss > 0):
        raise ValueError(f"mss: must be a positive number of bytes, got {mss!r}")
    return float(pps) * float(mss) * 8.0


@dataclass(frozen=True)
class RenoModel:
    """One evaluated Reno model (see :func:`reno_model`)."""

    model: str  # "pftk", "pftk-approx" or "reno"
    throughput_pps: float
    throughput_bps: float
    regime: str  # "unlimited" or "window-limited"
    W: float  # the unlimited mean peak window: E[W_u] (PFTK) or W of (A-5) (packets)
    mss: float  # packet size used for throughput_bps (bytes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- PFTK ---------------------------------------------------------------------------

def _one_minus_q_pow(p: float, n: float) -> float:
    """1 − (1 − p)^n without cancellation for small p."""
    return -math.expm1(n * math.log1p(-p)) if p < 1 else 1.0


def _qhat(w: float, p: float) -> float:
    """PFTK's Q̂(w): probability that a loss indication in a window of w is a timeout.

    Q̂(w) = min(1, (1 − (1−p)³)(1 + (1−p)³(1 − (1−p)^(w−3))) / (1 − (1−p)^w)), and 1 for
    w <= 3 (too few packets for three duplicate ACKs).
    """
    if w <= 3 or p >= 1:
        return 1.0
    q3 = (1.0 - p) ** 3
    num = _one_minus_q_pow(p, 3) * (1.0 + q3 * _one_minus_q_pow(p, w - 3))
    return min(1.0, num / _one_minus_q_pow(p, w))


def _f(p: float) -> float:
    """PFTK's f(p) = 1 + p + 2p² + 4p³ + 8p⁴ + 16p⁵ + 32p⁶ (RTO back-off, capped at 64·T0)."""
    return 1 + p + 2 * p**2 + 4 * p**3 + 8 * p**4 + 16 * p**5 + 32 * p**6


def _pftk_full(rtt: float, p: float, b: float, t0: float, wmax: float) -> tuple[float, str, float]:
    c = (2 + b) / (3 * b)
    if p >= 1:
        # Every packet lost: all the terms with 1/(1−p) dominate and B → 1/(T0·f(1)) = 1/(64·T0)
        # (a timeout series with the back-off capped at 64·T0); the limit of both forms.
        ewu = 2 * c
        return 1.0 / (t0 * _f(1.0)), ("unlimited" if ewu < wmax else "window-limited"), ewu
    q = 1.0 - p
    ewu = c + math.sqrt(8 * q / (3 * b * p) + c * c)  # E[W_u]
    tf = t0 * _f(p) / q
    if ewu < wmax:
        qh = _qhat(ewu, p)
        return (q / p + ewu + qh / q) / (rtt * (b * ewu / 2 + 1) + qh * tf), "unlimited", ewu
    qh = _qhat(wmax, p)
    pps = (q / p + wmax + qh / q) / (rtt * (b * wmax / 8 + q / (p * wmax) + 2) + qh * tf)
    return pps, "window-limited", ewu


def pftk_full(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """PFTK full model (timeouts and receiver window), packets/s.

    With E[W_u] = (2+b)/(3b) + sqrt(8(1−p)/(3bp) + ((2+b)/(3b))²):

    - E[W_u] < W_max: B = ((1−p)/p + E[W_u] + Q̂(E[W_u])/(1−p)) /
      (R(b·E[W_u]/2 + 1) + Q̂(E[W_u])·T0·f(p)/(1−p));
    - otherwise: B = ((1−p)/p + W_max + Q̂(W_max)/(1−p)) /
      (R(b·W_max/8 + (1−p)/(p·W_max) + 2) + Q̂(W_max)·T0·f(p)/(1−p)).

    At p = 1 the limit 1/(64·T0) is returned.
    """
    check_args(rtt, p, b, t0, wmax)
    return _pftk_full(rtt, p, b, t0, wmax)[0]


def _pftk_approx(rtt: float, p: float, b: float, t0: float, wmax: float) -> tuple[float, str, float]:
    den = rtt * math.sqrt(2 * b * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    unl = 1.0 / den
    lim = wmax / rtt
    w = math.sqrt(8 / (3 * b * p))  # the square-root-law mean peak window
    return (unl, "unlimited", w) if unl <= lim else (lim, "window-limited", w)


def pftk_approx(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """PFTK approximate model, packets/s:
    B ≈ min(W_max/R, 1 / (R·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²))).
    """
    check_args(rtt, p, b, t0, wmax)
    return _pftk_approx(rtt, p, b, t0, wmax)[0]


# --- seed 001 appendix: Reno without timeouts ----------------------------------------

def _reno_no_timeout(rtt: float, p: float, b: float, t0: float, wmax: float) -> tuple[float, str, float]:
    q = 1.0 - p
    k = (3 * b - 2) / (3 * b)
    w = math.sqrt(8 * q / (3 * b * p) + k * k) - k
    if w <= wmax:
        y = q / p + w
        x = b * (w / 2 + 1)
        a = (x + 1) * rtt
        return y / a, "unlimited", w
    wm = wmax
    y = q / p + wm
    x = q / (wm * p) + b * wm / 8 + (b + 2) / 4
    a = (x + 1) * rtt
    return y / a, "window-limited", w


def reno_no_timeout(rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """Reno without timeouts (seed 001 appendix, after PFTK), packets/s.

    Unlimited window (A.1): Y = (1−p)/p + W (A-1); Y = (X/2)(W/2 + W) + W/2 (A-2);
    W = W/2 + X/b − 1 (A-3), so X = b(W/2 + 1) (A-4); hence
    W = sqrt(8(1−p)/(3bp) + ((3b−2)/(3b))²) − (3b−2)/(3b) (A-5); A = (X + 1)R (A-6);
    B = Y/A (A-7).

    Window-limited (A.2), used when the W of (A-5) exceeds W_m = ``wmax`` (the rule the
    paper states for its Hybla model): U = (W_m/2 + 1)b (A-9); Y = (1−p)/p + W_m (A-10)
    = (3/4)W_m·U + W_m·V + W_m/2 (A-11); X = U + V = (1−p)/(W_m·p) + b·W_m/8 + (b+2)/4
    (A-13); A = (X + 1)R (A-14); B = Y/A (A-15).

    Note on (A-12): as printed, V = (1−p)/(W_m·p) − 3b·W_m/8 + (3b+2)/4; solving (A-9)–
    (A-11) gives V = (1−p)/(W_m·p) − 3b·W_m/8 − (3b−2)/4, and only the latter adds up with
    U to the printed (A-13). The sign in (A-12) is a misprint; we use (A-13), which is
    also what makes B continuous where W = W_m.

    ``t0`` is accepted for a uniform signature and ignored (no timeouts). p = 1 gives 0.
    """
    check_args(rtt, p, b, t0, wmax)
    return _reno_no_timeout(rtt, p, b, t0, wmax)[0]


_IMPL = {"pftk": _pftk_full, "pftk-approx": _pftk_approx, "reno": _reno_no_timeout}

#: Name → function (packets/s) for the three Reno forms.
MODELS = {"pftk": pftk_full, "pftk-approx": pftk_approx, "reno": reno_no_timeout}


def _check_name(model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"model: expected one of {', '.join(MODELS)}, got {model!r}")


def throughput(model: str, rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf) -> float:
    """Throughput in packets/s of the named Reno model: "pftk" (:func:`pftk_full`),
    "pftk-approx" (:func:`pftk_approx`) or "reno" (:func:`reno_no_timeout`)."""
    _check_name(model)
    return MODELS[model](rtt, p, b, t0, wmax)


def reno_model(model: str, rtt: float, p: float, b: float = 2, t0: float = 1.0, wmax: float = math.inf,
               mss: float = 1000) -> RenoModel:
    """Like :func:`throughput` but returns a :class:`RenoModel` with bit/s (for ``mss``-byte
    packets), the regime and the unlimited mean peak window."""
    _check_name(model)
    check_args(rtt, p, b, t0, wmax)
    pps, regime, w = _IMPL[model](rtt, p, b, t0, wmax)
    return RenoModel(model, pps, pps_to_bps(pps, mss), regime, w, float(mss))
