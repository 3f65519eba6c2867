"""The client end of the gateway's load test (runs unprivileged in the client's
namespace): waits for DIR/go, then opens N connections to the server at once (one
process, one asyncio loop), asks each for SIZE bytes of its own stream ("SIZE ID\\n"),
reads each to end of file and checks its bytes against the stream's SHA-256
(loadgen.py). Writes DIR/result.json atomically — per connection: bytes, ok, error,
its local port, and times (connected, first byte, end of file) in seconds since the start; the most
connections open at once (between connected and end of file), counted as they open
and end; the namespace's TCP counters (SYN retransmissions, ...) — then waits for
DIR/done. Gives up on what has not ended after TIMEOUT seconds (recorded as errors).

    load_client.py DIR SERVER_IP PORT N SIZE [TIMEOUT]
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from typing import Any

from loadgen import buffer, expected_sha256, raise_nofile

COUNTERS = ("TCPSynRetrans", "TCPTimeouts", "RetransSegs", "ActiveOpens", "AttemptFails", "EstabResets",
            "TCPAbortOnData", "TCPAbortOnClose", "TCPRcvQDrop", "ListenOverflows", "ListenDrops")


def tcp_counters() -> dict[str, int]:
    """The namespace's TCP counters (/proc/net/snmp and netstat: pairs of lines)."""
    out: dict[str, int] = {}
    for f in ("/proc/net/snmp", "/proc/net/netstat"):
        with open(f) as fh:
            lines = fh.read().splitlines()
        for names, values in zip(lines[::2], lines[1::2], strict=False):
            for k, v in zip(names.split()[1:], values.split()[1:], strict=False):
                if k in COUNTERS:
                    out[k] = int(v)
    return out


class Load:
    def __init__(self, n: int) -> None:
        self.t0 = time.monotonic()
        self.open = self.max_open = 0
        self.conns: list[dict[str, Any]] = [{"id": i, "bytes": 0, "ok": False, "error": None} for i in range(n)]

    def now(self) -> float:
        return time.monotonic() - self.t0

    def opened(self) -> None:
        self.open += 1
        self.max_open = max(self.max_open, self.open)


class Download(asyncio.Protocol):
    def __init__(self, load: Load, rec: dict[str, Any], size: int, done: asyncio.Future[None]) -> None:
        self.load, self.rec, self.size, self.done = load, rec, size, done
        self.h = hashlib.sha256()
        self.counted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.rec["connected_s"] = self.load.now()
        self.rec["port"] = transport.get_extra_info("sockname")[1]
        self.load.opened()
        self.counted = True
        transport.write(f"{self.size} {self.rec['id']}\n".encode())

    def data_received(self, data: bytes) -> None:
        if "first_byte_s" not in self.rec:
            self.rec["first_byte_s"] = self.load.now()
        self.h.update(data)
        self.rec["bytes"] += len(data)

    def end(self) -> None:
        if self.counted:
            self.counted = False
            self.load.open -= 1

    def eof_received(self) -> bool:
        self.rec["eof_s"] = self.load.now()
        self.rec["sha256"] = self.h.hexdigest()
        self.end()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.end()
        if exc is not None and self.rec["error"] is None:
            self.rec["error"] = repr(exc)
        if not self.done.done():
            self.done.set_result(None)


async def one(load: Load, ip: str, port: int, size: int, i: int) -> None:
    rec = load.conns[i]
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    tr: asyncio.BaseTransport | None = None
    try:
        tr, _ = await loop.create_connection(lambda: Download(load, rec, size, done), ip, port)
        await done
    except (OSError, asyncio.CancelledError) as e:
        rec["error"] = rec["error"] or repr(e) or type(e).__name__
        if tr is not None:
            tr.abort()
        if isinstance(e, asyncio.CancelledError):
            raise


async def run(ip: str, port: int, n: int, size: int, timeout: float) -> dict[str, Any]:
    before = tcp_counters()
    cpu0 = time.process_time()
    load = Load(n)
    tasks = [asyncio.create_task(one(load, ip, port, size, i)) for i in range(n)]
    _, pending = await asyncio.wait(tasks, timeout=timeout)
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for rec in load.conns:
        if "eof_s" not in rec and rec["error"] is None:
            rec["error"] = f"not ended after {timeout} s"
    wall = load.now()
    after = tcp_counters()
    return {"n": n, "size": size, "wall_s": wall, "cpu_s": time.process_time() - cpu0, "max_open": load.max_open,
            "tcp": {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS}, "conns": load.conns}


def main() -> None:
    d, ip, port, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    timeout = float(sys.argv[6]) if len(sys.argv) > 6 else 60.0
    nofile = raise_nofile()
    buf = buffer(size)
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(d, "go")) and time.monotonic() < deadline:
        time.sleep(0.02)
    res = asyncio.run(run(ip, port, n, size, timeout))
    for rec in res["conns"]:
        rec["ok"] = rec["error"] is None and rec["bytes"] == size and rec.get("sha256") == expected_sha256(
            buf, rec["id"], size)
    res["complete"] = sum(r["ok"] for r in res["conns"])
    res["nofile"] = list(nofile)
    tmp = os.path.join(d, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.replace(tmp, os.path.join(d, "result.json"))
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(d, "done")) and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
