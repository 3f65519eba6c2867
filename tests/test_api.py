import numpy as np
import pandas as pd
import pytest

import longpipe
from conftest import EXAMPLES, path_scenario


def test_run_dict_returns_dataframes():
    r = longpipe.run(path_scenario(app={"bytes": "200KB"}))
    assert isinstance(r.flows, pd.DataFrame) and isinstance(r.links, pd.DataFrame)
    f = r.flows.iloc[0]
    assert f.bytes_delivered == 200_000
    assert f.completion_time_s > 0.1
    assert set(r.links.dir) == {"forward", "reverse"}
    assert r.data["sim"]["events"] > 0 and r.wall_s > 0
    assert "wall_s" not in r.data["sim"], "the result holds nothing that varies between identical runs"


def test_result_json_has_the_contract_fields():
    r = longpipe.run(path_scenario())
    d = r.data
    for k in ["scenario", "seed", "duration_s", "flows", "links", "fairness_jain", "sim"]:
        assert k in d
    for k in ["id", "src", "dst", "tcp", "goodput_bps", "bytes_delivered", "segments_sent",
              "retransmitted_segments", "timeouts", "fast_recoveries", "completion_time_s", "mean_rtt_s"]:
        assert k in d["flows"][0]
    for k in ["a", "b", "dir", "utilization", "packets", "drops_queue", "drops_loss"]:
        assert k in d["links"][0]


def test_timeseries_columns():
    r = longpipe.run(path_scenario(app={"bytes": "500KB"}), timeseries=True)
    ts = r.timeseries(0)
    assert list(ts.columns) == ["t", "cwnd", "ssthresh", "snd_una", "snd_max"]
    assert (np.diff(ts.t) >= 0).all()
    assert (ts.snd_una <= ts.snd_max).all()
    assert ts.snd_una.iloc[-1] == 500_000 + 2  # SYN + data + FIN
    segs = r.segments(0)
    assert segs.len.sum() == 500_000  # no loss: every byte sent once
    rtt = r.rtt(0)
    assert (rtt.rtt > 0.1).all()  # 2 x 50 ms propagation at least
    with pytest.raises(KeyError):
        longpipe.run(path_scenario()).timeseries(0)


def test_overrides_and_seed():
    sc = path_scenario(loss=None)
    sc["link"][0]["loss"] = {"kind": "bernoulli", "p": 0.01}
    a = longpipe.run(sc, seed=1)
    b = longpipe.run(sc, seed=1)
    c = longpipe.run(sc, seed=2)
    assert a.to_json() == b.to_json()
    assert a.data["links"][0]["drops_loss"] != c.data["links"][0]["drops_loss"] or \
        a.data["flows"][0]["bytes_delivered"] != c.data["flows"][0]["bytes_delivered"]
    r = longpipe.run(sc, flow__tcp="tahoe", overrides={"duration": "5s"})
    assert r.data["flows"][0]["tcp"] == "tahoe" and r.data["duration_s"] == 5.0


def test_count_replicates_and_fairness():
    sc = path_scenario(count=4, rwnd="32KB")
    r = longpipe.run(sc)
    assert len(r.flows) == 4
    assert 0.9 < r.fairness_jain <= 1.0


def test_scenario_error_names_path():
    with pytest.raises(longpipe.ScenarioError) as e:
        longpipe.run(path_scenario(rwnd="lots"))
    assert e.value.path == "flow[0].rwnd"
    with pytest.raises(ValueError):
        longpipe.run({"duration": "1s", "link": []})


def test_schema_is_json_schema():
    s = longpipe.schema()
    assert s["title"] == "Scenario"
    assert "flow" in s["properties"] and "link" in s["properties"]


def test_examples_parse():
    for p in EXAMPLES.glob("*.toml"):
        sc, _ = longpipe.load_scenario(p)
        sc["duration"] = "1s"
        sc.pop("warmup", None)  # must be shorter than the duration
        longpipe.run(sc)
