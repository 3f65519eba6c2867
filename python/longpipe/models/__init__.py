"""Analytical throughput models (packets/s; multiply by 8 × packet bytes for bit/s)."""

from .hybla import HyblaModel, data_sent, hybla_model, hybla_rho, hybla_throughput
from .pftk import MODELS as RENO_MODELS
from .pftk import pftk_approx, pftk_full, reno_no_timeout, throughput

__all__ = [
    "HyblaModel", "RENO_MODELS", "data_sent", "hybla_model", "hybla_rho", "hybla_throughput",
    "pftk_approx", "pftk_full", "reno_no_timeout", "throughput",
]
