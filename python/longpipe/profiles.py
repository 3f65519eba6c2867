"""The resolved TCP profile (``flows[].profile`` of a result) in summary tables.

Every table that sets runs side by side (``run``'s flows, ``compare``'s variants, a
sweep's points) shows a ``stack`` column and one column per profile field that differs
between its rows, and warns when the rows mix profiles that no varied key explains: a
"difference" between congestion controls that comes from a 64 KiB window against a
6 MiB one is the profile's, not the controls' (issue 25). The congestion control itself
(``cc``) is the ``tcp`` column's business and never counts as a difference of profile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: Profile fields in table order: result key -> (column header, scenario key of a flow).
FIELDS: dict[str, tuple[str, str]] = {
    "recovery": ("recovery", "recovery"), "mss": ("mss", "mss"), "iw_bytes": ("IW", "iw"),
    "rwnd_bytes": ("rwnd", "rwnd"), "sack": ("SACK", "sack"), "dsack": ("D-SACK", "dsack"),
    "timestamps": ("TS", "timestamps"), "ecn": ("ECN", "ecn"), "pacing": ("pacing", "pacing"),
    "prr": ("PRR", "prr"), "rack": ("RACK", "rack"), "limited_transmit": ("LT", "limited_transmit"),
    "delayed_ack": ("delack", "delayed_ack"), "delayed_ack_timeout_s": ("delack timer", "delayed_ack_timeout"),
    "quickack": ("quickack", "quickack"), "min_rto_s": ("min RTO", "min_rto"),
    "initial_rto_s": ("initial RTO", "initial_rto"), "max_rto_s": ("max RTO", "max_rto"),
}
#: Fields that follow from the variant (``tcp``) rather than from the profile.
_FROM_TCP = {"recovery"}
_FLOW_KEY = re.compile(r"^flow(?:\[\d+\])?\.([A-Za-z_]+)")


def profile_of(result: Mapping[str, Any], flow: int = 0) -> Mapping[str, Any] | None:
    """The resolved profile of one flow of a result (None for a result without one)."""
    flows = result.get("flows") or []
    if flow >= len(flows):
        return None
    p = flows[flow].get("profile")
    return p if isinstance(p, Mapping) else None


def _bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % (size // 4) == 0:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def fmt(key: str, v: Any) -> str:
    """A profile value for a table cell."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "on" if v else "off"
    if key.endswith("_bytes"):
        return _bytes(int(v))
    if key.endswith("_s"):
        return f"{float(v) * 1e3:g} ms" if float(v) < 1 else f"{float(v):g} s"
    return str(v)


def differing(profiles: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The profile fields (keys of :data:`FIELDS`) whose values differ between rows."""
    have = [p for p in profiles if p is not None]
    return [k for k in FIELDS if len({repr(p.get(k)) for p in have}) > 1]


def columns(profiles: Sequence[Mapping[str, Any] | None]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the profile columns: ``stack``, then every differing field."""
    diff = differing(profiles)
    headers = ["stack"] + [FIELDS[k][0] for k in diff]
    cells = [["-"] * len(headers) if p is None else [str(p.get("stack", "-"))] + [fmt(k, p.get(k)) for k in diff]
             for p in profiles]
    return headers, cells


def warning(profiles: Sequence[Mapping[str, Any] | None], varied: Sequence[str] = ()) -> str | None:
    """The warning line for rows that mix profiles, or None. Differences that a varied
    key explains (``flow.stack`` explains all of them, ``flow.sack`` the SACK column)
    are what the user asked for and need no warning."""
    have = [p for p in profiles if p is not None]
    stacks = sorted({str(p.get("stack")) for p in have})
    names = {m[1] for m in (_FLOW_KEY.match(k) for k in varied) if m}
    if "stack" in names:
        return None
    # BBR always paces (tcp_bbr.c sets its own pacing rate): part of the control, not the profile
    norm = [{**p, "pacing": False} if p.get("cc") == "bbr" else p for p in have]
    diff = [k for k in differing(norm) if k not in _FROM_TCP and FIELDS[k][1] not in names]
    if len(stacks) < 2 and not diff:
        return None
    what = ", ".join(FIELDS[k][0] for k in diff)
    return ("warning: these rows run on different TCP profiles"
            + (f" (stacks {' and '.join(stacks)})" if len(stacks) > 1 else "")
            + (f": {what} differ" if what else "")
            + "; differences between rows may come from the profile, not the congestion control "
            "(pin one with --set flow.stack=linux or classic; docs/notes/defaults.md)")
