"""The TCP Hybla throughput model of Endo, Kim, Utsumi, Kato, Zabir, "Analytical Model
of TCP Hybla for Satellite IP Networks" (seed 001), and Hybla's data-sent curve.

Model (packets/s). ρ = max(RTT/RTT0, 1). Per loss cycle (no timeouts):

- unlimited window, eqs. (3)–(11): with W the mean peak window,
  L = 1 + pW (4), D = (2 − p)^(W−1) / 2^W (5), Y = 1/p + W − L (6),
  X = (1 − D)W/ρ² (8), Y = X(DW + ρ²(X + 1)/2) + 3W/4 − W/(4L) (9);
  (6) = (9) is solved for W by Newton's method (bracketed bisection/Brent as a safe
  fallback), then A = (X + 1 + (1 − 1/L))R (10) and B = Y/A (11);
- window-limited, eqs. (12)–(20), used when that W exceeds Wm:
  L_m = 1 + pWm (12), D_m = (2 − p)^(Wm−1)/2^Wm (13), Y = 1/p + Wm − L_m (14),
  U = (1 − D_m)Wm/ρ² (16), X = U + V (17),
  Y = ½(D_m + 1)Wm·U + Wm·V + Wm/2 + (Wm/4)(1 − 1/L_m) (18) — linear in V,
  A = (X + 1 + (1 − 1/L_m))R (19), B = Y/A (20).

Reading of the printed equations: (13) is printed as ``(2-p)W_m^{-1}/2W_m``, which we
read as (5) with W = Wm, i.e. (2 − p)^(Wm−1)/2^Wm. (9) is used with its second form.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .pftk import check_args

__all__ = ["HyblaModel", "hybla_rho", "hybla_model", "hybla_throughput", "data_sent"]

RTT0 = 0.025


def hybla_rho(rtt: float, rtt0: float = RTT0) -> float:
    """ρ = max(RTT/RTT0, 1) (Hybla's normalised RTT)."""
    if not (rtt > 0):
        raise ValueError(f"rtt: must be positive, got {rtt!r}")
    if not (rtt0 > 0):
        raise ValueError(f"rtt0: must be positive, got {rtt0!r}")
    return max(rtt / rtt0, 1.0)


@dataclass
class HyblaModel:
    """A solution of the Hybla model."""

    throughput_pps: float
    regime: str  # "unlimited" or "window-limited"
    W: float  # mean peak window of the unlimited solution (packets)
    rho: float
    L: float
    D: float
    X: float
    Y: float
    A: float
    method: str  # "newton", "brent" or "closed-form"
    iterations: int

    def bps(self, packet_bytes: float) -> float:
        return self.throughput_pps * packet_bytes * 8.0

    def as_dict(self) -> dict:
        return asdict(self)


def _D(w: float, p: float) -> float:
    # (5): (2 − p)^(W−1)/2^W = ½ (1 − p/2)^(W−1), computed without overflow
    return 0.5 * math.exp((w - 1.0) * math.log1p(-p / 2.0))


def _residual(w: float, p: float, rho: float) -> float:
    """(9) − (6) as a function of W."""
    L = 1.0 + p * w
    D = _D(w, p)
    X = (1.0 - D) * w / rho**2
    y9 = X * (D * w + rho**2 * (X + 1.0) / 2.0) + 0.75 * w - w / (4.0 * L)
    y6 = 1.0 / p + w - L
    return y9 - y6


def _solve_unlimited(p: float, rho: float, tol: float = 1e-10, max_iter: int = 60, newton: bool = True):
    """Returns (W, method, iterations)."""
    w0 = rho * math.sqrt(8.0 / (3.0 * p)) + 1.0
    if newton:
        w = w0
        for it in range(1, max_iter + 1):
            f = _residual(w, p, rho)
            h = 1e-6 * max(w, 1.0)
            df = (_residual(w + h, p, rho) - _residual(w - h, p, rho)) / (2 * h)
            if df == 0 or not math.isfinite(df):
                break
            step = f / df
            w_new = w - step
            if not math.isfinite(w_new) or w_new <= 0:
                break
            if abs(w_new - w) <= tol * max(1.0, w):
                return w_new, "newton", it
            w = w_new
    # Bracketed fallback: the residual is negative for small W (Y(9) < 1/p) and grows
    # without bound with W.
    lo, hi = 1e-9, w0
    while _residual(hi, p, rho) < 0:
        hi *= 2.0
        if hi > 1e15:
            raise ValueError(f"hybla model: no solution found for p={p}, rho={rho}")
    from scipy.optimize import brentq

    w, r = brentq(_residual, lo, hi, args=(p, rho), xtol=1e-12, rtol=1e-14, full_output=True)
    return w, "brent", r.iterations


def hybla_model(rtt: float, p: float, wmax: float = math.inf, rtt0: float = RTT0, newton: bool = True) -> HyblaModel:
    """Solves the seed's Hybla model; see the module docstring for the equations."""
    check_args(rtt, p, 2, 1.0, wmax)
    rho = hybla_rho(rtt, rtt0)
    if p >= 1:
        raise ValueError("p: the model needs p < 1")
    w, method, iters = _solve_unlimited(p, rho, newton=newton)
    if w <= wmax:
        L = 1.0 + p * w  # (4)
        D = _D(w, p)  # (5)
        Y = 1.0 / p + w - L  # (6)
        X = (1.0 - D) * w / rho**2  # (8)
        A = (X + 1.0 + (1.0 - 1.0 / L)) * rtt  # (10)
        return HyblaModel(Y / A, "unlimited", w, rho, L, D, X, Y, A, method, iters)  # (11)
    wm = wmax
    Lm = 1.0 + p * wm  # (12)
    Dm = _D(wm, p)  # (13)
    Y = 1.0 / p + wm - Lm  # (14)
    U = (1.0 - Dm) * wm / rho**2  # (16)
    V = (Y - 0.5 * (Dm + 1.0) * wm * U - wm / 2.0 - wm / 4.0 * (1.0 - 1.0 / Lm)) / wm  # (18)
    V = max(V, 0.0)
    X = U + V  # (17)
    A = (X + 1.0 + (1.0 - 1.0 / Lm)) * rtt  # (19)
    return HyblaModel(Y / A, "window-limited", w, rho, Lm, Dm, X, Y, A, "closed-form", iters)  # (20)


def hybla_throughput(rtt: float, p: float, wmax: float = math.inf, rtt0: float = RTT0) -> float:
    """Throughput in packets/s (eq. (11) or (20))."""
    return hybla_model(rtt, p, wmax, rtt0).throughput_pps


def data_sent(t, rtt: float, gamma: float, variant: str = "hybla", rtt0: float = RTT0, as_printed: bool = False):
    """Packets sent by time t without loss, eq. (2): slow start to the threshold γ,
    then congestion avoidance.

    For Hybla the curve is Reno's with RTT replaced by RTT0 (when RTT > RTT0); for Reno
    it uses RTT itself. SS: T = (2^(t/R) − 1)/ln 2 until t_γ = R·log2 γ; CA:
    T = (γ − 1)/ln 2 + (t − t_γ)²/(2R²) + γ(t − t_γ)/R. Eq. (2) as printed has
    (t − t_γ)/R for the last term, which makes the sending rate jump from γ/R to 1/R at
    t_γ; ``as_printed=True`` evaluates it literally.
    """
    if variant not in ("hybla", "reno"):
        raise ValueError(f"variant: expected 'hybla' or 'reno', got {variant!r}")
    if gamma < 1:
        raise ValueError(f"gamma: must be >= 1, got {gamma!r}")
    r = rtt if variant == "reno" else min(rtt, rtt0) if rtt < rtt0 else rtt0
    t = np.asarray(t, dtype=float)
    tg = r * math.log2(gamma)
    ss = (np.exp2(t / r) - 1.0) / math.log(2)
    d = t - tg
    lin = d / r if as_printed else gamma * d / r
    ca = (gamma - 1.0) / math.log(2) + d**2 / (2 * r * r) + lin
    return np.where(t < tg, ss, ca)
