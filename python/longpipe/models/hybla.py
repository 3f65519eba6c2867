"""The TCP Hybla throughput model of Endo, Kim, Utsumi, Kato, Zabir, "Analytical Model of
TCP Hybla for Satellite IP Networks" (seed 001), and the data-sent curves of its eq. (2).

Throughput model (packets/s), per CA/FR cycle, no timeouts. ρ = max(RTT/RTT0, 1),
R = the mean RTT, p the loss rate.

Unlimited window, eqs. (3)–(11), W = mean peak window:

- L = 1 + pW (4) — expected losses per cycle (from A(W, m) of (3));
- D = (2 − p)^(W−1) / 2^W (5) — expected window reduction factor;
- Y = 1/p + W − L (6) — packets per cycle;
- W = DW + ρ²X (7), i.e. X = (1 − D)W/ρ² (8) — RTTs of congestion avoidance;
- Y = X(DW + ρ²(X + 1)/2) + 3W/4 − W/(4L) (9);
- (6) = (9) is an equation in W alone (the paper: "solved by Newton's method");
- A = (X + 1 + (1 − 1/L))·R (10), B = Y/A (11).

Window-limited, eqs. (12)–(20), used when the W solving (6) = (9) exceeds W_m:

- L_m = 1 + pW_m (12), D_m = (2 − p)^(W_m−1) / 2^(W_m) (13), Y = 1/p + W_m − L_m (14);
- W_m = D_m·W_m + ρ²U (15), i.e. U = (1 − D_m)W_m/ρ² (16); X = U + V (17);
- Y = ½(D_m + 1)W_m·U + W_m·V + W_m/2 + (W_m/4)(1 − 1/L_m) (18), linear in V;
- A = (X + 1 + (1 − 1/L_m))·R (19), B = Y/A (20).

Readings of the printed text (details in docs/notes/hybla-model.md):

1. (13) is printed ``(2-p)W_m^{-1}/2W_m``; the superscripts were lost. We read it as (5)
   at W = W_m: (2 − p)^(W_m−1)/2^(W_m). (Read literally it is not a reduction factor
   at all: it would be ≈ 1/W_m² and make U ≈ W_m/ρ².)
2. (18) counts the CA packets with the trapezoid ½(D_m + 1)W_m·U, whereas (9) sums
   Σ_{k=1..X}(DW + ρ²k) = ½(D + 1)W·X + ρ²X/2 exactly. Both are printed deliberately,
   so the default follows the paper; the consequence is that at the regime boundary
   (W = W_m) the window-limited form has V = (1 − D_m)/2 RTTs more per cycle than the
   unlimited one and B drops by the factor (X + 2 − 1/L)/(X + V + 2 − 1/L) — for
   W_m = 550: 1.4 % at ρ = 4, 6.1 % at ρ = 10, 13.5 % at ρ = 22. ``continuous=True``
   adds the ρ²U/2 term to (18) (our variant, not the paper's), which removes the jump.
3. Eq. (2) prints the CA term as (t − t_γ,0)/RTT0 and t_γ,0 = RTT·log2 γ; we use
   γ(t − t_γ,0)/RTT0 and t_γ,0 = RTT0·log2 γ (see :func:`data_sent`).

The W of (6) = (9) is found by Newton's method with the analytic derivative; when it does
not converge, or steps out of W > 0, a bracketed solver (scipy's brentq, or bisection
without scipy) on [0, W_hi] takes over. F(W) = (9) − (6) is −(1/p − 1) < 0 at W = 0 and
grows like 3W²/(8ρ²), so a bracket always exists for p < 1.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .pftk import P_MIN, _is_real, check_args, pps_to_bps

__all__ = [
    "RTT0", "HyblaModel", "data_sent", "hybla_data_sent", "hybla_model", "hybla_rho", "hybla_throughput",
    "reno_data_sent", "solve_w",
]

#: Hybla's reference RTT (s), the Linux default and the seed's example.
RTT0 = 0.025


def _check_rtt0(rtt0: Any) -> None:
    if not (_is_real(rtt0) and math.isfinite(rtt0) and rtt0 > 0):
        raise ValueError(f"rtt0: must be a positive, finite number of seconds, got {rtt0!r}")


def hybla_rho(rtt: float, rtt0: float = RTT0) -> float:
    """ρ = max(RTT/RTT0, 1), Hybla's normalised RTT (§2 of the seed; ρ >= 1 as in Linux)."""
    if not (_is_real(rtt) and math.isfinite(rtt) and rtt > 0):
        raise ValueError(f"rtt: must be a positive, finite number of seconds, got {rtt!r}")
    _check_rtt0(rtt0)
    return max(rtt / rtt0, 1.0)


@dataclass(frozen=True)
class HyblaModel:
    """A solution of the seed's Hybla model.

    ``W`` is always the root of (6) = (9) (the unlimited mean peak window, which exceeds
    ``wmax`` in the window-limited regime). ``L``, ``D`` are L, D of (4), (5) or L_m, D_m
    of (12), (13); ``X``, ``Y``, ``A`` the cycle's CA RTTs, packets and duration (s);
    ``U``, ``V`` the window-limited split of X (nan when unlimited).
    """

    throughput_pps: float
    throughput_bps: float
    regime: str  # "unlimited" or "window-limited"
    W: float
    wmax: float
    rho: float
    L: float
    D: float
    X: float
    Y: float
    A: float
    U: float
    V: float
    method: str  # how W was found: "newton", "brent", "bisection", or "p=1"
    iterations: int  # iterations of that method
    mss: float  # packet size (bytes) for throughput_bps

    def bps(self, packet_bytes: float) -> float:
        """Throughput in bit/s for packets of ``packet_bytes`` bytes."""
        return pps_to_bps(self.throughput_pps, packet_bytes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _log_half_minus(p: float) -> float:
    return math.log1p(-p / 2.0)


def _D(w: float, p: float) -> float:
    """(5): (2 − p)^(W−1)/2^W = ½(1 − p/2)^(W−1), evaluated without overflow."""
    return 0.5 * math.exp((w - 1.0) * _log_half_minus(p))


def _residual(w: float, p: float, rho: float) -> float:
    """F(W) = (9) − (6), with L, D, X from (4), (5), (8)."""
    L = 1.0 + p * w
    D = _D(w, p)
    r2 = rho * rho
    X = (1.0 - D) * w / r2
    y9 = X * (D * w + r2 * (X + 1.0) / 2.0) + 0.75 * w - w / (4.0 * L)
    y6 = 1.0 / p + w - L
    return y9 - y6


def _residual_and_slope(w: float, p: float, rho: float) -> tuple[float, float]:
    """F(W) and dF/dW (analytic: D' = D·ln(1 − p/2), X' = (1 − D − W·D')/ρ², L' = p)."""
    c = _log_half_minus(p)
    L = 1.0 + p * w
    D = _D(w, p)
    dD = D * c
    r2 = rho * rho
    X = (1.0 - D) * w / r2
    dX = (1.0 - D - w * dD) / r2
    f = X * (D * w + r2 * (X + 1.0) / 2.0) + 0.75 * w - w / (4.0 * L) - (1.0 / p + w - L)
    df = dX * D * w + X * (dD * w + D) + r2 * (X + 0.5) * dX + 0.75 - 1.0 / (4.0 * L * L) - (1.0 - p)
    return f, df


def _initial_guess(p: float, rho: float) -> float:
    """Positive root of F with D = ½, L = 1: 3W²/(8ρ²) + (p − ¼)W − (1/p − 1) = 0."""
    a, b, c = 3.0 / (8.0 * rho * rho), p - 0.25, 1.0 / p - 1.0
    return (-b + math.sqrt(b * b + 4 * a * c)) / (2 * a)


def _bracketed(p: float, rho: float, hi: float, tol: float) -> tuple[float, str, int]:
    lo = 0.0  # F(0) = −(1/p − 1) < 0
    hi = max(hi, 1.0)
    while _residual(hi, p, rho) <= 0:
        lo, hi = hi, 2.0 * hi
        if hi > 1e300:  # pragma: no cover - F grows quadratically, cannot happen
            raise ArithmeticError(f"hybla model: no bracket for W at p={p}, rho={rho}")
    try:
        from scipy.optimize import brentq
    except ImportError:  # pragma: no cover - scipy is a dependency; bisection keeps us honest
        brentq = None
    if brentq is not None:
        w, r = brentq(_residual, lo, hi, args=(p, rho), xtol=1e-300, rtol=max(tol, 4 * np.finfo(float).eps),
                      maxiter=500, full_output=True)
        return float(w), "brent", int(r.iterations)
    it = 0
    while hi - lo > tol * hi and it < 2000:
        mid = 0.5 * (lo + hi)
        if _residual(mid, p, rho) <= 0:
            lo = mid
        else:
            hi = mid
        it += 1
    return 0.5 * (lo + hi), "bisection", it


def solve_w(p: float, rho: float, *, newton: bool = True, max_iter: int = 50,
            tol: float = 1e-12) -> tuple[float, str, int]:
    """Solves (6) = (9) for W, with L, D, X from (4), (5), (8).

    Newton's method from the D = ½, L = 1 approximation's root, with the analytic
    derivative; falls back to a bracketed root finder (brentq; bisection without scipy)
    when Newton does not meet ``tol`` (relative step) within ``max_iter`` iterations or
    leaves W > 0. ``newton=False`` goes straight to the bracketed solver.
    Returns (W, method, iterations).
    """
    if not (_is_real(p) and P_MIN <= p < 1):
        raise ValueError(f"p: must be in [{P_MIN:g}, 1) for the W equation, got {p!r}")
    if not (_is_real(rho) and math.isfinite(rho) and rho >= 1):
        raise ValueError(f"rho: must be a finite number >= 1, got {rho!r}")
    if not (isinstance(max_iter, int) and max_iter >= 0):
        raise ValueError(f"max_iter: must be a non-negative integer, got {max_iter!r}")
    w0 = _initial_guess(p, rho)
    if newton:
        w = w0
        for it in range(1, max_iter + 1):
            f, df = _residual_and_slope(w, p, rho)
            if not (math.isfinite(f) and math.isfinite(df)) or df == 0:
                break
            w_new = w - f / df
            if not math.isfinite(w_new) or w_new <= 0:
                break
            if abs(w_new - w) <= tol * w_new:
                return w_new, "newton", it
            w = w_new
    return _bracketed(p, rho, w0, tol)


def hybla_model(rtt: float, p: float, wmax: float = math.inf, rtt0: float = RTT0, newton: bool = True, *,
                mss: float = 1000, continuous: bool = False, max_iter: int = 50) -> HyblaModel:
    """Evaluates the seed's Hybla model: eqs. (3)–(11), or (12)–(20) when the unlimited
    W exceeds ``wmax`` (W_m).

    rtt: mean RTT R (s); p: loss rate in (0, 1]; wmax: receiver window W_m (packets,
    ``inf`` = none); rtt0: Hybla's RTT0 (s); newton: solve (6) = (9) by Newton (False:
    bracketed solver only); mss: packet size in bytes for ``throughput_bps``;
    continuous: add ρ²U/2 to (18) (our variant, see the module docstring; default off
    = the paper as printed); max_iter: Newton's iteration cap before the fallback.

    At p = 1 every packet is lost: (6) = (9) has the root W = 0, Y = 0 and B = 0 (the
    model has no timeouts; compare :func:`~longpipe.models.pftk.reno_no_timeout`).
    """
    check_args(rtt, p, 2, 1.0, wmax)
    rho = hybla_rho(rtt, rtt0)
    pps_to_bps(0.0, mss)  # validates mss

    def bps(pps: float) -> float:
        return pps_to_bps(pps, mss)

    nan = math.nan
    if p >= 1:
        # W = 0: L = 1, D = ½, X = 0, Y = 0, A = R (10)
        return HyblaModel(0.0, 0.0, "unlimited", 0.0, float(wmax), rho, 1.0, 0.5, 0.0, 0.0, float(rtt), nan, nan,
                          "p=1", 0, float(mss))
    w, method, iters = solve_w(p, rho, newton=newton, max_iter=max_iter)
    r2 = rho * rho
    if w <= wmax:
        L = 1.0 + p * w  # (4)
        D = _D(w, p)  # (5)
        Y = 1.0 / p + w - L  # (6)
        X = (1.0 - D) * w / r2  # (8)
        A = (X + 1.0 + (1.0 - 1.0 / L)) * rtt  # (10)
        B = Y / A  # (11)
        return HyblaModel(B, bps(B), "unlimited", w, float(wmax), rho, L, D, X, Y, A, nan, nan, method, iters,
                          float(mss))
    wm = float(wmax)
    Lm = 1.0 + p * wm  # (12)
    Dm = _D(wm, p)  # (13), read as (5) at W = W_m
    Y = 1.0 / p + wm - Lm  # (14)
    U = (1.0 - Dm) * wm / r2  # (16)
    ca_u = 0.5 * (Dm + 1.0) * wm * U + (r2 * U / 2.0 if continuous else 0.0)
    V = (Y - ca_u - wm / 2.0 - wm / 4.0 * (1.0 - 1.0 / Lm)) / wm  # (18) solved for V
    # V = (ρ²U/2 − F(W_m))/W_m > 0 here since F(W_m) < 0 < F(W); guard rounding only.
    V = max(V, 0.0)
    X = U + V  # (17)
    A = (X + 1.0 + (1.0 - 1.0 / Lm)) * rtt  # (19)
    B = Y / A  # (20)
    return HyblaModel(B, bps(B), "window-limited", w, wm, rho, Lm, Dm, X, Y, A, U, V, method, iters, float(mss))


def hybla_throughput(rtt: float, p: float, wmax: float = math.inf, rtt0: float = RTT0) -> float:
    """Throughput of the seed's Hybla model in packets/s: B of eq. (11) or (20)."""
    return hybla_model(rtt, p, wmax, rtt0).throughput_pps


# --- data sent without loss, eq. (2) ----------------------------------------------------

def _data_sent_curve(t: Any, r: float, gamma: float, as_printed: bool) -> Any:
    t = np.asarray(t, dtype=float)
    if np.any(np.isnan(t)) or np.any(t < 0):
        raise ValueError("t: times must be >= 0 (and not NaN)")
    tg = r * math.log2(gamma)  # t_γ: the window reaches γ
    d = t - tg
    ss = np.expm1(np.minimum(t, tg) / r * math.log(2)) / math.log(2)  # (2), SS
    lin = d / r if as_printed else gamma * d / r
    ca = (gamma - 1.0) / math.log(2) + d * d / (2 * r * r) + lin  # (2), CA
    out = np.where(t < tg, ss, ca)
    return out if out.ndim else float(out)


def data_sent(t: Any, rtt: float, gamma: float, variant: str = "hybla", rtt0: float = RTT0,
              as_printed: bool = False) -> Any:
    """Packets sent by time t (s) without loss, eq. (2): slow start up to the threshold γ,
    then congestion avoidance. Vectorised over ``t`` (array in, array out; scalar in,
    float out).

    Eq. (2) with reference time r:
    SS:  T(t) = (2^(t/r) − 1)/ln 2                              for 0 <= t < t_γ,
    CA:  T(t) = (γ − 1)/ln 2 + (t − t_γ)²/(2r²) + γ(t − t_γ)/r    for t >= t_γ,
    with t_γ = r·log2 γ. For Hybla r = RTT0 whatever the RTT (the seed's point: Hybla
    sends like Reno with RTT = RTT0), except that ρ >= 1 makes r = RTT when RTT < RTT0;
    for Reno r = RTT.

    Readings: the printed CA term is (t − t_γ,0)/RTT0, which makes the sending rate drop
    from γ/RTT0 to 1/RTT0 at t_γ,0 although the window is γ there; γ(t − t_γ,0)/RTT0 is
    the integral of the CA window γ + (t − t_γ,0)/RTT0 per RTT0 and keeps T′ continuous
    (``as_printed=True`` evaluates the printed form). The printed t_γ,0 = RTT·log2 γ is
    read as RTT0·log2 γ, the time 2^(t/RTT0) takes to reach γ (which is what makes T
    continuous).
    """
    if variant not in ("hybla", "reno"):
        raise ValueError(f"variant: expected 'hybla' or 'reno', got {variant!r}")
    if not (_is_real(gamma) and math.isfinite(gamma) and gamma >= 1):
        raise ValueError(f"gamma: must be a finite number >= 1 (packets), got {gamma!r}")
    if variant == "hybla":
        hybla_rho(rtt, rtt0)  # validates rtt, rtt0
        r = min(rtt, rtt0)  # RTT/ρ with ρ = max(RTT/RTT0, 1)
    else:
        r = rtt
        if not (_is_real(rtt) and math.isfinite(rtt) and rtt > 0):
            raise ValueError(f"rtt: must be a positive, finite number of seconds, got {rtt!r}")
    return _data_sent_curve(t, r, gamma, as_printed)


def hybla_data_sent(t: Any, rtt: float, gamma: float, rtt0: float = RTT0, as_printed: bool = False) -> Any:
    """Hybla's T(t) of eq. (2); see :func:`data_sent`."""
    return data_sent(t, rtt, gamma, "hybla", rtt0, as_printed)


def reno_data_sent(t: Any, rtt: float, gamma: float, as_printed: bool = False) -> Any:
    """Reno's T(t): eq. (2) with RTT0 = RTT (ρ = 1); see :func:`data_sent`."""
    return data_sent(t, rtt, gamma, "reno", as_printed=as_printed)
