"""Analytical TCP throughput models, in packets/s (bit/s = packets/s × 8 × packet bytes).

- Reno: :func:`pftk_full`, :func:`pftk_approx` (Padhye et al. 2000) and
  :func:`reno_no_timeout` (seed 001 appendix, (A-1)–(A-15)); :func:`throughput` and
  :func:`reno_model` select them by name ("pftk", "pftk-approx", "reno").
- Hybla: :func:`hybla_model` (seed 001, eqs. (3)–(20)) and the data-sent curves of
  eq. (2): :func:`data_sent`, :func:`hybla_data_sent`, :func:`reno_data_sent`.

Equations, readings of the printed text and limits: docs/notes/hybla-model.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .pftk import (
        RenoModel,
        check_args,
        pftk_approx,
        pftk_full,
        pps_to_bps,
        reno_model,
        reno_no_timeout,
        throughput,
    )

__all__ = [
    "RENO_MODELS",
    "RTT0",
    "HyblaModel",
    "RenoModel",
    "check_args",
    "data_sent",
    "hybla_data_sent",
    "hybla_model",
    "hybla_rho",
    "hybla_throughput",
    "pftk_approx",
    "pftk_full",
    "pps_to_bps",
    "reno_data_sent",
    "reno_model",
    "reno_no_timeout",
    "solve_w",
    "throughput",
]

# Imported on first use (the Hybla model needs NumPy; the command line should not).
_HYBLA = {"RTT0", "HyblaModel", "data_sent", "hybla_data_sent", "hybla_model", "hybla_rho", "hybla_throughput",
          "reno_data_sent", "solve_w"}


def __getattr__(name: str) -> Any:
    if name in _HYBLA:
        from . import hybla

        return getattr(hybla, name)
    if name == "RENO_MODELS":
        from .pftk import MODELS

        return MODELS
    if name in __all__:
        from . import pftk

        return getattr(pftk, name)
    raise AttributeError(f"module 'longpipe.models' has no attribute {name!r}")
