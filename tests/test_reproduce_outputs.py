"""What every paper reproduction shares: the outputs committed under docs/reproductions/
are the files its code writes, and it pins the TCP stack of its flows (so that a change
of the simulator's default stack moves none of them). Each ``tests/test_reproduce_NAME.py``
checks that ``--quick`` writes exactly ``outputs(quick=True)``."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from longpipe import api
from longpipe.experiments import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "runs.jsonl"
PAPERS = ("wcdma", "hybla", "atm", "gateway", "peach")


def _without_sack(sc: dict) -> dict:
    """A scenario with its flows' ``sack`` removed (tests/golden/record.py runs one example
    with ``flow.sack`` overridden)."""
    sc = json.loads(json.dumps(sc))
    for f in sc.get("flow", []):
        f.pop("sack", None)
    return sc


def test_every_reproduction_run_pins_the_classic_stack():
    """The golden runs hold every simulation of every ``reproduce NAME --quick`` and the
    examples run as they are (and the TCP matrix); every run that is neither sets ``stack``
    on every flow, to the stack its paper used."""
    examples = [_without_sack(json.loads(json.dumps(api.load_scenario(p)[0])))
                for p in sorted((ROOT / "examples").glob("*.toml"))]
    recs = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    # (the TCP matrix, tests/golden/matrix.py, sets each stack explicitly: not a reproduction)
    repro = [r["scenario"] for r in recs if _without_sack(r["scenario"]) not in examples
             and not r["scenario"]["name"].startswith("matrix-")]
    names = {sc["name"].split("-")[0] for sc in repro}
    # all five papers' reproductions are among them (wcdma runs on its example, renamed not)
    assert {"atm", "hybla", "fig1", "wcdma", "gateway", "peach"} <= names, names
    unpinned = [sc["name"] for sc in repro for f in sc["flow"] if f.get("stack") != "classic"]
    assert not unpinned, f"reproduction runs without stack = \"classic\": {sorted(set(unpinned))[:10]}"
    # the ATM example is the reproduction's network: pinned too
    atm = api.load_scenario(ROOT / "examples" / "atm-wan.toml")[0]
    assert {f.get("stack") for f in atm["flow"]} == {"classic"}


def test_every_paper_has_its_committed_outputs():
    assert sorted(p.name for p in (ROOT / "docs" / "reproductions").iterdir()) == sorted(PAPERS)


@pytest.mark.parametrize("name", PAPERS)
def test_committed_outputs_are_the_files_the_code_writes(name):
    """docs/reproductions/NAME holds what ``longpipe reproduce NAME --out
    docs/reproductions/NAME`` writes, and its printed output as stdout.txt: no file the
    code no longer writes, none it writes missing."""
    wanted = sorted({*importlib.import_module(REGISTRY[name]).outputs(), "stdout.txt"})
    assert sorted(p.name for p in (ROOT / "docs" / "reproductions" / name).iterdir()) == wanted
