"""Analytical throughput models (packets/s; multiply by 8 × packet bytes for bit/s)."""

from .pftk import MODELS as RENO_MODELS
from .pftk import pftk_approx, pftk_full, reno_no_timeout, throughput

__all__ = ["RENO_MODELS", "pftk_approx", "pftk_full", "reno_no_timeout", "throughput"]
