"""Parsing and checking of the options every command shares (``--set``, ``--seed``),
and the error they raise. Imported by ``longpipe.cli`` and the sweep commands alike."""

from __future__ import annotations

import os
from pathlib import Path
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


def pcap_specs(specs: list[str] | None, out: Path) -> tuple[list[str], dict[str, Path]]:
    """--pcap A-B[=FILE] values: the capture specs in order and the file of each (default
    OUT/A-B.pcap); UsageError for an empty spec, a path without a file name, a spec given
    twice with different files, or two specs writing one file."""
    names: list[str] = []
    files: dict[str, Path] = {}
    for s in specs or []:
        spec, _, file = s.partition("=")
        if not spec:
            raise UsageError(f"--pcap {s!r}: expected A-B or A-B=FILE, e.g. --pcap server-client")
        if not file and (os.sep in spec or spec.startswith(".") or "\0" in spec):
            raise UsageError(f"--pcap {s!r}: name the file with {spec}=FILE")
        path = Path(file) if file else out / f"{spec}.pcap"
        if spec in files and files[spec] != path:
            raise UsageError(f"--pcap {spec}: given twice with different files")
        if spec not in files:
            names.append(spec)
        files[spec] = path
    dup = [p for p in set(files.values()) if list(files.values()).count(p) > 1]
    if dup:
        raise UsageError(f"--pcap: two captures would write the same file {dup[0]}")
    return names, files
