"""Files a scenario names (Mahimahi traces, schedule CSVs, applications' empirical
distributions), read for the core.

The core never reads files: the front end puts each named file's text into the
scenario beside the key that names it (``loaded = { file, text }``), so the scenario
JSON handed to the core, recorded in golden runs or shipped to a sweep's workers is
self-contained. Paths are relative to the scenario file (to the working directory for
a scenario given as a dict).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The largest file a scenario may name (a published cellular trace is a few MB).
MAX_LINK_FILE_BYTES = 64 * 1024 * 1024


def _read_text(path: Path) -> str:
    """The UTF-8 text of a regular file of at most MAX_LINK_FILE_BYTES, or ValueError with
    what is wrong; never blocks on a FIFO or a kernel file, nor reads an endless device."""
    from ._io import NotReadable, read_regular_file

    try:
        raw = read_regular_file(path, MAX_LINK_FILE_BYTES)
    except NotReadable as e:
        if e.kind == "missing":
            raise ValueError(f"no such file: {path}") from None
        if e.kind == "too_large":
            raise ValueError(f"{path} is {e}; the limit is {MAX_LINK_FILE_BYTES // (1024 * 1024)} MiB "
                             "(docs/limits.md)") from None
        if e.kind in ("directory", "special"):
            raise ValueError(f"{path} is not a regular file ({e})") from None
        raise ValueError(f"{path}: {e}") from None
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text (byte {e.start})") from None


def _load(table: dict[str, Any], key: str, base: Path, where: str) -> None:
    """Sets ``table["loaded"]`` to the content of the file ``table[key]`` names, unless it
    already holds that file's content."""
    name = table.get(key)
    if not isinstance(name, str):
        return  # the core reports the type error with its field path
    loaded = table.get("loaded")
    if isinstance(loaded, dict) and loaded.get("file") == name and isinstance(loaded.get("text"), str):
        return
    if not name or "\0" in name:
        raise ValueError(f"{where}.{key}", "expected a file name")
    try:
        text = _read_text(base / name)
    except ValueError as e:
        raise ValueError(f"{where}.{key}", str(e)) from None
    table["loaded"] = {"file": name, "text": text}


def _load_app_files(sc: dict[str, Any], base: Path) -> None:
    """The CSV files of empirical distributions in flows' ``app`` tables
    (``size = { kind = "empirical", file = "sizes.csv" }``), also in ``[[user.flow]]``."""
    tables: list[tuple[str, Any]] = []
    flows = sc.get("flow")
    if isinstance(flows, list):
        tables += [(f"flow[{i}]", f) for i, f in enumerate(flows)]
    users = sc.get("user")
    if isinstance(users, list):
        for g, u in enumerate(users):
            if isinstance(u, dict) and isinstance(u.get("flow"), list):
                tables += [(f"user[{g}].flow[{j}]", f) for j, f in enumerate(u["flow"])]
    for where, f in tables:
        app = f.get("app") if isinstance(f, dict) else None
        if not isinstance(app, dict):
            continue
        for key, dist in app.items():
            if isinstance(dist, dict) and "file" in dist:
                _load(dist, "file", base, f"{where}.app.{key}")


def load_link_files(sc: dict[str, Any], source: str | None) -> None:
    """Reads every file the links (and the applications) of ``sc`` name into ``sc`` (in
    place). Raises ``ValueError(field_path, message)``."""
    base = Path(source).parent if source else Path.cwd()
    _load_app_files(sc, base)
    links = sc.get("link")
    if not isinstance(links, list):
        return
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            continue
        for key in ("rate", "rate_ba"):
            if isinstance(link.get(key), dict):
                _load(link[key], "trace", base, f"link[{i}].{key}")
        sched = link.get("schedule")
        if isinstance(sched, list):
            for j, entry in enumerate(sched):
                if isinstance(entry, dict):
                    _load(entry, "file", base, f"link[{i}].schedule[{j}]")
