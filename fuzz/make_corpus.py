"""Regenerates the seed corpus of the fuzz targets (run from the repository root with
the project's venv: ``.venv/bin/python fuzz/make_corpus.py``).

* ``corpus/scenario/seed-*``: every example and every distinct scenario of the golden
  runs (tests/golden/runs.jsonl) as JSON, plus hand-written hostile cases;
* ``corpus/wire/seed-*``: distinct IPv4/TCP packets from pcaps of simulated runs
  (handshake with options, data, SACK ACKs, FIN, a gateway's packets).

Files found by fuzzing (cargo-fuzz names them by hash) live beside them.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import longpipe  # noqa: E402
from longpipe.api import load_scenario  # noqa: E402

HOSTILE = [
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms", '
    '"queue": {"limit": "18446744073709551617pkt"}}]}',
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms", "queue": {"limit": "1.5pkt"}}]}',
    '{"duration": 290, "link": []}',
    '{"duration": "1e9s", "link": [{"a": "a", "b": "b", "rate": "1kbps", "delay": "0s"}], '
    '"flow": [{"src": "a", "dst": "b", "count": 4294967295}]}',
    '{"duration": "1s", "warmup": "2s", "link": [{"a": "a", "b": "a", "rate": "0bps", "delay": "-1s"}]}',
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms", "layer2": '
    '{"kind": "rlc-am", "header": 4294967295, "pdu_payload": 0, "window": 0}}]}',
    '{"duration": "1s", "node": [{"name": "g", "kind": "tcp-gateway", "gateway": {"window": 0, "iw": 0, '
    '"mode": "split"}}], "link": [{"a": "s", "b": "g", "rate": "1Mbps", "delay": "1ms"}, '
    '{"a": "g", "b": "c", "rate": "1Mbps", "delay": "1ms"}], "flow": [{"src": "s", "dst": "c"}]}',
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"}], "flow": '
    '[{"src": "a", "dst": "b", "initial_rto": "0s", "min_rto": "1ns", "max_rto": "1ns", "iw": "rfc6928", '
    '"mss": 0, "rwnd": "0B", "app": {"kind": "bulk", "bytes": "0B"}}]}',
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms", "loss": '
    '{"kind": "gilbert", "p_gb": 2, "p_bg": -1, "loss_good": 1e308, "loss_bad": 0}}]}',
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms", "loss": '
    '{"kind": "list", "drop": [18446744073709551615, 0, 0]}}]}',
    '[]', '{}', 'null', '"\\u0000"', '{"duration": "1s", "link": [{}]}',
    '{"duration": "1s", "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"}], "flow": [1]}',
]


def scenario_corpus(out: Path) -> int:
    seen = set()
    texts = []
    for p in sorted((ROOT / "examples").glob("*.toml")):
        sc, _ = load_scenario(p)
        texts.append(json.dumps(sc, sort_keys=True))
    for line in (ROOT / "tests/golden/runs.jsonl").read_text().splitlines():
        texts.append(json.dumps(json.loads(line)["scenario"], sort_keys=True))
    texts += HOSTILE
    n = 0
    for t in texts:
        h = hashlib.sha1(t.encode()).hexdigest()[:12]
        if h in seen:
            continue
        seen.add(h)
        (out / f"seed-{h}.json").write_text(t)
        n += 1
    return n


def pcap_packets(data: bytes) -> list[bytes]:
    pkts, i = [], 24
    while i + 16 <= len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[i:i + 16])
        pkts.append(data[i + 16:i + 16 + incl])
        i += 16 + incl
    return pkts


def wire_corpus(out: Path) -> int:
    runs = [
        ("geo.toml", {"duration": "20s", "flow.sack": True}, ["gw-client", "client-gw"]),
        ("wcdma.toml", {"duration": "20s"}, ["ggsn-rnc"]),
        ("cellular.toml", {"duration": "10s"}, None),
    ]
    pkts = []
    for name, ov, specs in runs:
        sc, _ = load_scenario(ROOT / "examples" / name)
        if specs is None:
            specs = [f"{sc['link'][0]['a']}-{sc['link'][0]['b']}"]
        r = longpipe.run(sc, pcap=specs, overrides=ov)
        for data in r.pcaps.values():
            pkts += pcap_packets(data)
    # one packet per distinct (flags, option layout, length class): a small corpus
    keep, seen = [], set()
    for p in pkts:
        key = (p[33] if len(p) > 33 else None, p[32] >> 4 if len(p) > 32 else None, min(len(p), 100) // 20)
        if key not in seen:
            seen.add(key)
            keep.append(p)
    keep += [b"", b"\x45", b"\x45" + b"\x00" * 39, b"\x4f" + b"\x00" * 59]
    for p in keep:
        (out / f"seed-{hashlib.sha1(p).hexdigest()[:12]}").write_bytes(p)
    return len(keep)


def main() -> None:
    for name, fn in (("scenario", scenario_corpus), ("wire", wire_corpus)):
        d = ROOT / "fuzz" / "corpus" / name
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("seed-*"):
            old.unlink()
        print(f"{name}: {fn(d)} seed inputs")


if __name__ == "__main__":
    main()
