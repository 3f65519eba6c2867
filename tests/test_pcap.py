"""pcap export: tshark parses the files and sees what the link reports."""

import subprocess

import longpipe
from conftest import path_scenario


def tshark_fields(tshark, path, *fields, filt=None):
    cmd = [tshark, "-r", str(path), "-T", "fields", "-E", "separator=/t", "-E", "aggregator=;"]
    if filt:
        cmd += ["-Y", filt]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return [line.split("\t") for line in p.stdout.splitlines() if line]


def test_tshark_counts_as_many_tcp_packets_as_the_link(tmp_path, tshark):
    sc = path_scenario(rwnd="256KB", app={"bytes": "2MB"}, duration="30s", queue="30pkt")
    r = longpipe.run(sc, pcap=["server-client"], timeseries=True)
    files = r.write_pcaps(tmp_path)
    rows = tshark_fields(tshark, files[0], "frame.number", "ip.src", "tcp.srcport", "tcp.len", "tcp.flags.syn")
    links = {row.dir: row for row in r.links.itertuples()}
    fwd, rev = links["forward"], links["reverse"]
    # at the server's interface: everything it sent (incl. packets later dropped by
    # nothing here: no loss) and everything that arrived from the client
    assert len(rows) == fwd.packets + rev.packets - rev.drops_loss
    sent = [x for x in rows if x[1] == "10.0.0.1"]
    assert len(sent) == fwd.packets
    # what was put on the wire: the server's own interface holds its segments back when
    # its 30-packet queue is full instead of dropping them (docs/notes/host-interface.md),
    # so every segment the sender sent is on the wire, and some waited in the socket
    on_wire = sum(int(x[3]) for x in sent)
    assert on_wire == r.segments(0).len.sum() >= 2_000_000
    assert fwd.drops_queue == 0 and r.data["links"][0]["held"] > 0
    assert sum(1 for x in rows if x[4] == "1") == 2  # SYN and SYN-ACK


def test_tshark_tcp_analysis_sees_retransmissions_and_window_scaling(tmp_path, tshark):
    # the classic stack: on the Linux profile the second hole is resent 1.2 ms after the
    # first, and tshark's heuristic calls it "out-of-order", not a retransmission
    sc = path_scenario(rwnd="1MB", app={"bytes": "3MB"}, duration="60s", queue="1000pkt",
                       loss={"kind": "list", "drop": [40, 43]}, stack="classic")
    r = longpipe.run(sc, pcap=["server-client"], timeseries=True)
    f = r.write_pcaps(tmp_path)[0]
    retx = tshark_fields(tshark, f, "frame.number", filt="tcp.analysis.retransmission || tcp.analysis.fast_retransmission")
    assert len(retx) == r.data["flows"][0]["retransmitted_segments"] == 2
    # payload bytes and relative sequence numbers agree with the simulator's trace
    data = tshark_fields(tshark, f, "tcp.seq", "tcp.len", filt="ip.src==10.0.0.1 && tcp.len>0")
    segs = r.segments(0)
    assert [int(s) for s, _ in data] == list(segs.seq)
    assert [int(n) for _, n in data] == list(segs.len)
    # the receiver's scaled window is understood: 1 MB buffer, window scale 4
    win = tshark_fields(tshark, f, "tcp.window_size", "tcp.window_size_scalefactor",
                        filt="ip.src==10.0.0.2 && tcp.flags.syn==0")
    assert win[0] == ["1000000", "16"]


def test_pcap_is_deterministic(tmp_path):
    sc = path_scenario(loss={"kind": "bernoulli", "p": 0.02}, duration="10s")
    a = longpipe.run(sc, pcap=["client-server"]).pcaps["client-server"]
    b = longpipe.run(sc, pcap=["client-server"]).pcaps["client-server"]
    assert a == b and len(a) > 1000


def test_sack_blocks_in_pcap(tmp_path, tshark):
    sc = path_scenario(rwnd="1MB", app={"bytes": "3MB"}, duration="60s", queue="1000pkt", sack=True,
                       loss={"kind": "list", "drop": [40, 43, 46]})
    r = longpipe.run(sc, pcap=["client-server"])
    f = r.write_pcaps(tmp_path)[0]
    syn = tshark_fields(tshark, f, "tcp.options.sack_perm", filt="tcp.flags.syn==1")
    assert len(syn) == 2 and all(x[0] for x in syn)  # both SYNs offer SACK
    sacks = tshark_fields(tshark, f, "tcp.options.sack.count", "tcp.options.sack_le", "tcp.options.sack_re",
                          filt="tcp.options.sack.count > 0")
    assert sacks, "ACKs carry SACK blocks"
    counts = {int(x[0]) for x in sacks}
    assert max(counts) == 3 and min(counts) == 1  # up to three holes -> up to three blocks
    # every block is a non-empty range above the cumulative ACK
    for row in sacks:
        for le, re_ in zip(row[1].split(";"), row[2].split(";")):
            assert int(re_) > int(le)


def test_timestamps_in_pcap(tmp_path, tshark):
    # the Linux profile negotiates RFC 7323 timestamps: every segment carries TSopt, the
    # receiver echoes the sender's TSval, and each end's clock never runs backwards
    sc = path_scenario(stack="linux", app={"bytes": "500KB"}, duration="20s", queue="1000pkt",
                       loss={"kind": "list", "drop": [30]})
    r = longpipe.run(sc, pcap=["server-client"])
    f = r.write_pcaps(tmp_path)[0]
    rows = tshark_fields(tshark, f, "ip.src", "tcp.flags.syn", "tcp.options.timestamp.tsval",
                         "tcp.options.timestamp.tsecr", "tcp.len")
    assert len(rows) == sum(link.packets - link.drops_loss * (link.dir == "reverse")
                            for link in r.links.itertuples())
    assert all(row[2] and row[3] for row in rows), "TSopt on every segment"
    assert sum(1 for row in rows if row[1] == "1") == 2
    sent = [row for row in rows if row[0] == "10.0.0.1"]
    acks = [row for row in rows if row[0] == "10.0.0.2" and row[1] == "0"]
    for side in (sent, acks):
        vals = [int(row[2]) for row in side]
        assert all((b - a) % 2**32 < 2**31 for a, b in zip(vals, vals[1:])), "TSval never decreases"
    tsvals = {int(row[2]) for row in sent}
    assert all(int(row[3]) in tsvals for row in acks), "ACKs echo a TSval the sender sent"
    # data segments carry MSS - 12 B (the option's 12 bytes)
    assert max(int(row[4]) for row in sent) == 1448
