"""The result schema (``longpipe schema --result``) and the TypedDicts generated from it
(``longpipe/_results.py``): the file is up to date, and the schema describes what the
core really writes (every golden run's result checked field by field)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from longpipe import _core, _typegen

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "runs.jsonl"


def _schema() -> dict[str, Any]:
    s: dict[str, Any] = json.loads(_core.result_schema())
    return s


def test_generated_types_are_up_to_date() -> None:
    committed = (ROOT / "python" / "longpipe" / "_results.py").read_text()
    assert committed == _typegen.generate(_core.result_schema()), (
        "python/longpipe/_results.py differs from the result schema: a result field was added or changed in "
        "Rust; run `make build` (or `python -m longpipe._typegen`) and commit the file")


def test_check_mode_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "_results.py"
    text = _typegen.generate(_core.result_schema())
    stale.write_text(text.replace("    goodput_bps: float\n", "", 1))
    assert _typegen.main(["--check", str(stale)]) == 1
    assert _typegen.main([str(stale)]) == 0
    assert stale.read_text() == text
    assert _typegen.main(["--check", str(stale)]) == 0


def test_a_new_schema_field_changes_the_types() -> None:
    s = _schema()
    s["definitions"]["FlowResult"]["properties"]["new_counter"] = {"type": "integer"}
    s["definitions"]["FlowResult"]["required"].append("new_counter")
    out = _typegen.generate(json.dumps(s))
    assert "    new_counter: int\n" in out
    assert out != _typegen.generate(_core.result_schema())


def test_cli_prints_the_result_schema() -> None:
    r = subprocess.run([sys.executable, "-m", "longpipe", "schema", "--result"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == _schema()
    assert json.loads(r.stdout)["title"] == "SimResult"


def _resolve(schema: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in s:
        s = schema["definitions"][s["$ref"].rsplit("/", 1)[-1]]
    return s


def _type_ok(v: Any, t: str) -> bool:
    return {
        "null": v is None,
        "boolean": isinstance(v, bool),
        "integer": isinstance(v, int) and not isinstance(v, bool),
        "number": isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": isinstance(v, str),
        "array": isinstance(v, list),
        "object": isinstance(v, dict),
    }[t]


def _check(schema: dict[str, Any], s: dict[str, Any], v: Any, path: str, errors: list[str]) -> None:
    """A small JSON Schema check of the keywords the result schema uses; strict about
    objects: every required key present, and no key the schema does not declare."""
    s = _resolve(schema, s)
    for key in ("allOf",):
        for sub in s.get(key, []):
            _check(schema, sub, v, path, errors)
    if "anyOf" in s or "oneOf" in s:
        subs = s.get("anyOf") or s["oneOf"]
        trials = []
        for sub in subs:
            e: list[str] = []
            _check(schema, sub, v, path, e)
            trials.append(e)
        if all(trials):
            errors.append(f"{path}: matches none of the alternatives: {min(trials, key=len)}")
        return
    if "enum" in s and v not in s["enum"]:
        errors.append(f"{path}: {v!r} not in {s['enum']}")
    t = s.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_type_ok(v, x) for x in types):
            errors.append(f"{path}: {v!r} is not {types}")
            return
    if isinstance(v, dict) and "properties" in s:
        props = s["properties"]
        for k in s.get("required", []):
            if k not in v:
                errors.append(f"{path}: required {k!r} missing")
        for k, x in v.items():
            if k not in props:
                errors.append(f"{path}.{k}: not in the schema")
            else:
                _check(schema, props[k], x, f"{path}.{k}", errors)
    if isinstance(v, list) and "items" in s:
        for i, x in enumerate(v):
            _check(schema, s["items"], x, f"{path}[{i}]", errors)


@pytest.mark.skipif(not GOLDEN.exists(), reason="no golden runs")
def test_every_golden_result_matches_the_schema() -> None:
    schema = _schema()
    seen: set[str] = set()
    n = 0
    for line in GOLDEN.read_text().splitlines():
        rec = json.loads(line)
        res = rec["result"]
        errors: list[str] = []
        _check(schema, schema, res, "result", errors)
        assert not errors, f"{res['scenario']} seed {res['seed']}: {errors[:5]}"
        seen.update(k for k in res if isinstance(res[k], (list, dict)) and res[k])
        n += 1
    assert n > 100
    # the optional sections are exercised, not only the plain ones
    assert {"gateways", "atm", "workload", "users", "flows", "links"} <= seen


def test_the_checker_catches_an_undeclared_and_a_missing_field() -> None:
    schema = _schema()
    rec = json.loads(GOLDEN.read_text().splitlines()[0])["result"]
    rec["flows"][0]["extra_field"] = 1
    del rec["flows"][0]["goodput_bps"]
    errors: list[str] = []
    _check(schema, schema, rec, "result", errors)
    assert any("extra_field" in e for e in errors)
    assert any("goodput_bps" in e for e in errors)

