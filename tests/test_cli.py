import json

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


def test_schema_command():
    d = json.loads(cli("schema", check=True).stdout)
    assert "properties" in d


def test_compare_writes_png(tmp_path):
    png = tmp_path / "cmp.png"
    r = cli("compare", EXAMPLES / "geo.toml", "--set", "duration=20s", "--plot", png, check=True)
    for v in ["cubic", "bbr", "hybla"]:
        assert v in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
