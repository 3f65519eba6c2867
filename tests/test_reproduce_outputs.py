"""What every paper reproduction shares: each pins the TCP stack of its flows (so that a
change of the simulator's default stack moves none of them)."""

from __future__ import annotations

import json
from pathlib import Path

from longpipe import api

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "runs.jsonl"


def _without_sack(sc: dict) -> dict:
    """A scenario with its flows' ``sack`` removed (tests/golden/record.py runs one example
    with ``flow.sack`` overridden)."""
    sc = json.loads(json.dumps(sc))
    for f in sc.get("flow", []):
        f.pop("sack", None)
    return sc


def test_every_reproduction_run_pins_the_classic_stack():
    """The golden runs hold every simulation of every ``reproduce NAME --quick`` and the
    examples run as they are; every run that is not an example as written sets ``stack``
    on every flow, to the stack its paper used."""
    examples = [_without_sack(json.loads(json.dumps(api.load_scenario(p)[0])))
                for p in sorted((ROOT / "examples").glob("*.toml"))]
    recs = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    repro = [r["scenario"] for r in recs if _without_sack(r["scenario"]) not in examples]
    names = {sc["name"].split("-")[0] for sc in repro}
    # all five papers' reproductions are among them (wcdma runs on its example, renamed not)
    assert {"atm", "hybla", "fig1", "wcdma", "gateway", "peach"} <= names, names
    unpinned = [sc["name"] for sc in repro for f in sc["flow"] if f.get("stack") != "classic"]
    assert not unpinned, f"reproduction runs without stack = \"classic\": {sorted(set(unpinned))[:10]}"
    # the ATM example is the reproduction's network: pinned too
    atm = api.load_scenario(ROOT / "examples" / "atm-wan.toml")[0]
    assert {f.get("stack") for f in atm["flow"]} == {"classic"}
