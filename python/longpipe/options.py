"""Parsing and checking of the options every command shares (``--set``, ``--seed``),
and the error they raise. Imported by ``longpipe.cli`` and the sweep commands alike."""

from __future__ import annotations

from typing import Any

from .api import parse_value


class UsageError(Exception):
    """Bad command-line input (exit status 2)."""


def overrides(pairs: list[str] | None) -> dict[str, Any]:
    ov = {}
    for p in pairs or []:
        if "=" not in p:
            raise UsageError(f"--set {p!r}: expected KEY=VALUE, e.g. flow.tcp=reno")
        k, v = p.split("=", 1)
        ov[k.strip()] = parse_value(v.strip())
    return ov


_U64_MAX = 2**64 - 1


def seed_option(text: str | int | None, option: str = "--seed") -> int | None:
    """The --seed value, checked here so that a bad one is blamed on the option."""
    if text is None:
        return None
    try:
        v = text if isinstance(text, int) else int(text.strip(), 10)
    except ValueError:
        raise UsageError(f"{option}: expected an integer from 0 to {_U64_MAX}, got {text!r}") from None
    if not 0 <= v <= _U64_MAX:
        raise UsageError(f"{option}: expected an integer from 0 to {_U64_MAX}, got {text}")
    return v
