"""reproduce crosscheck-linux: its scenarios are the crosscheck's with the flow on the
Linux profile (the emulated half needs root and real time; it is run by hand)."""

import longpipe
from longpipe.experiments import REGISTRY
from longpipe.experiments.crosscheck import scenarios
from longpipe.experiments.crosscheck_linux import TCPS, linux_flow


def test_scenarios_run_the_linux_profile():
    assert REGISTRY["crosscheck-linux"] == "longpipe.experiments.crosscheck_linux"
    base = scenarios(quick=True)
    geo = next(v for k, v in base.items() if k.startswith("geo"))
    assert geo["flow"][0]["iw"] == "rfc3390"
    for tcp in TCPS:
        sc = linux_flow(geo, tcp)
        f = sc["flow"][0]
        assert (f["stack"], f["tcp"]) == ("linux", tcp)
        assert "iw" not in f and "sack" not in f and f["rwnd"] == geo["flow"][0]["rwnd"]
        sc["duration"] = "3s"
        r = longpipe.run(sc, timeseries=True)
        assert r.data["flows"][0]["tcp"] == tcp
        seg = r.segments(0)
        # the profile's IW 10 of MSS - 12 B (timestamps), not the crosscheck's RFC 3390 IW 3
        assert (seg.t == seg.t.iloc[0]).sum() == 10 and seg.len.iloc[0] == 1448
    assert geo["flow"][0]["iw"] == "rfc3390", "the crosscheck's scenario is not modified"
