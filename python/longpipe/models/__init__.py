"""Analytical TCP throughput models, in packets/s (bit/s = packets/s × 8 × packet bytes).

- Reno: :func:`pftk_full`, :func:`pftk_approx` (Padhye et al. 2000) and
  :func:`reno_no_timeout` (seed 001 appendix, (A-1)–(A-15)); :func:`throughput` and
  :func:`reno_model` select them by name ("pftk", "pftk-approx", "reno").
- Hybla: :func:`hybla_model` (seed 001, eqs. (3)–(20)) and the data-sent curves of
  eq. (2): :func:`data_sent`, :func:`hybla_data_sent`, :func:`reno_data_sent`.

Equations, readings of the printed text and limits: docs/notes/hybla-model.md.
"""

from .hybla import (
    RTT0,
    HyblaModel,
    data_sent,
    hybla_data_sent,
    hybla_model,
    hybla_rho,
    hybla_throughput,
    reno_data_sent,
    solve_w,
)
from .pftk import MODELS as RENO_MODELS
from .pftk import RenoModel, check_args, pftk_approx, pftk_full, pps_to_bps, reno_model, reno_no_timeout, throughput

__all__ = [
    "RTT0", "HyblaModel", "RENO_MODELS", "RenoModel", "check_args", "data_sent", "hybla_data_sent", "hybla_model",
    "hybla_rho", "hybla_throughput", "pftk_approx", "pftk_full", "pps_to_bps", "reno_data_sent", "reno_model",
    "reno_no_timeout", "solve_w", "throughput",
]
