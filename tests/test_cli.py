import json
import subprocess
import sys

import pytest

from conftest import EXAMPLES, cli

GOOD = """
duration = "5s"
[[link]]
a = "server"
b = "client"
rate = "10Mbps"
delay = "50ms"
[[flow]]
src = "server"
dst = "client"
"""


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_run_table_and_json(tmp_path):
    p = write(tmp_path, GOOD)
    r = cli("run", p, check=True)
    assert "goodput" in r.stdout and "server->client" in r.stdout
    r = cli("run", p, "--json", "--seed", "7", "--set", "flow.tcp=reno", check=True)
    d = json.loads(r.stdout)
    assert d["seed"] == 7 and d["flows"][0]["tcp"] == "reno"


def test_run_out_dir_writes_results(tmp_path):
    p = write(tmp_path, GOOD)
    out = tmp_path / "out"
    cli("run", p, "--out", out, "--timeseries", "--pcap", "client-server", check=True)
    assert json.loads((out / "result.json").read_text())["flows"]
    assert (out / "flow0-timeseries.csv").read_text().startswith("t,cwnd")
    assert (out / "client-server.pcap").stat().st_size > 24
    assert not list(out.glob(".*tmp"))


BAD = [
    ('colour = 1\n' + GOOD, "colour", "unknown field"),
    (GOOD.replace('dst = "client"', 'dst = "nowhere"'), "flow[0].dst", "unknown node"),
    (GOOD.replace('"10Mbps"', '"-10Mbps"'), "link[0].rate", "positive"),
    (GOOD.replace('delay = "50ms"', 'delay = "50ms"\nloss = { kind = "bernoulli", p = 1.5 }'), "link[0].loss.p", "[0, 1]"),
    (GOOD.replace('"50ms"', '"50 parsecs"'), "link[0].delay", "duration"),
    (GOOD + '[[link]]\na = "x"\nb = "y"\nrate = "1Mbps"\ndelay = "1ms"\n[[flow]]\nsrc = "server"\ndst = "y"\n',
     "flow[1]", "no route"),
    ("duration = \n", "(syntax)", "invalid TOML"),
]


@pytest.mark.parametrize("text,path,expect", BAD, ids=["unknown-key", "unknown-node", "negative-rate",
                                                       "p-range", "bad-unit", "no-route", "toml-syntax"])
def test_bad_input_exit_2(tmp_path, text, path, expect):
    p = write(tmp_path, text)
    out = tmp_path / "out"
    r = cli("run", p, "--out", out)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert str(p) in r.stderr and path in r.stderr and expect in r.stderr, r.stderr
    assert not out.exists(), "nothing written on bad input"


def test_missing_file_and_bad_set(tmp_path):
    r = cli("run", tmp_path / "nope.toml")
    assert r.returncode == 2 and "no such file" in r.stderr
    p = write(tmp_path, GOOD)
    r = cli("run", p, "--set", "flow.tcp")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr
    r = cli("run", p, "--set", "flow.tcp=cubic-ish")
    assert r.returncode == 2 and "flow[0].tcp" in r.stderr
    r = cli("run", p, "--pcap", "server-moon")
    assert r.returncode == 2 and "pcap" in r.stderr


def _run_subparser(parser):
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["run"]


def test_run_parser_is_the_full_parsers_run():
    """A command line starting with `run` is parsed by a parser holding only `run`
    (start-up time): the same options, help and parse as in the whole command line's."""
    from longpipe.cli import build_parser

    full, only = build_parser(), build_parser(only_run=True)
    a, b = _run_subparser(full), _run_subparser(only)
    assert b.format_help() == a.format_help()
    def actions(p):
        return [{k: v for k, v in vars(x).items() if k != "container"} for x in p._actions]

    assert actions(b) == actions(a)
    argv = ["run", "s.toml", "--json", "--seed", "3", "--set", "flow.tcp=reno", "--set", "duration=1s",
            "--pcap", "a-b=x.pcap", "--timeseries", "--out", "o", "--seeds", "2", "--jobs", "1", "-q", "--force"]
    assert vars(only.parse_args(argv)) == vars(full.parse_args(argv))


def test_run_json_imports_only_what_it_uses(tmp_path):
    """`longpipe run --json` (no file written) imports none of the other commands'
    modules, nor what writing files takes (BENCHMARKS.md: run --json against the bare
    core); `run --out` still writes through the same code."""
    p = write(tmp_path, GOOD)
    code = ("import sys, io, contextlib\nfrom longpipe.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['run', {str(p)!r}, '--json'])\n"
            "mods = ('longpipe.emu', 'longpipe.gateway', 'longpipe.models', 'longpipe.experiments',\n"
            "        'longpipe.sweeps.compare', 'tempfile', 'hashlib')\n"
            "print(rc, sorted(m for m in mods if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "0 []", r.stdout + r.stderr
    out = tmp_path / "out"
    r = cli("run", p, "--json", "--out", out, check=True)
    assert (out / "result.json").read_text() == r.stdout
    assert not list(out.glob(".*tmp"))


def test_internal_error_prints_the_traceback(tmp_path, monkeypatch, capsys):
    import longpipe.api
    from longpipe.cli import main

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(longpipe.api, "run", boom)
    assert main(["run", str(write(tmp_path, GOOD)), "--json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("internal error (please report):\nTraceback") and "RuntimeError: a bug" in err, err


def test_schema_command():
    d = json.loads(cli("schema", check=True).stdout)
    assert "properties" in d


def test_compare_writes_png(tmp_path):
    png = tmp_path / "cmp.png"
    r = cli("compare", EXAMPLES / "geo.toml", "--set", "duration=20s", "--plot", png, check=True)
    for v in ["cubic", "bbr", "hybla"]:
        assert v in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
