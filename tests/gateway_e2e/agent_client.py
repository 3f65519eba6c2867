"""The client end of the gateway's fault suite (runs unprivileged in the client's
namespace for the whole emulation): runs the downloads the test asks for, each in a
thread. A job is DIR/jobs/ID.json:

    {"id": ID, "server": "10.0.0.1", "port": 8080, "size": N, "rwnd": 8192 (0: Linux's
     buffers), "flags": "b" (passed to the server: a bare FIN), "pause_after": N (stop
     reading after N bytes, until DIR/go-ID exists or the timeout), "timeout": S}

When the connection is up, DIR/up/ID.json says its local port; when a paused job has
stopped reading, DIR/paused/ID.json says what its kernel received (TCP_INFO). When it
ends, DIR/results/ID.json:

    {"bytes": read, "sha_ok": bool (the stream's prefix), "end": "eof" | "reset" |
     "timeout" | "error: ...", "received": bytes its kernel received in order
     (TCP_INFO), "connect_s", "end_s", "first_s": monotonic seconds}

Stops when DIR/done exists.

    agent_client.py DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
import threading
import time

from loadgen import buffer

TCP_WINDOW_CLAMP = 10
TCP_INFO_BYTES_RECEIVED = 128  # struct tcp_info: tcpi_bytes_received (u64)
STREAM = buffer(8 << 20)


def received(s: socket.socket) -> int:
    try:
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        return int(struct.unpack_from("<Q", info, TCP_INFO_BYTES_RECEIVED)[0])
    except OSError:
        return -1


def put(d: str, sub: str, cid: str, obj: dict[str, object]) -> None:
    p = os.path.join(d, sub, f"{cid}.json")
    with open(p + ".tmp", "w") as f:
        json.dump(obj, f)
    os.rename(p + ".tmp", p)


def run(d: str, job: dict[str, object]) -> None:
    cid = str(job["id"])
    size = int(job["size"])  # type: ignore[call-overload]
    rwnd = int(job.get("rwnd", 0))  # type: ignore[call-overload]
    pause = job.get("pause_after")
    deadline = time.monotonic() + float(job.get("timeout", 120))  # type: ignore[arg-type]
    res: dict[str, object] = {"bytes": 0, "sha_ok": False, "end": "error", "received": 0}
    s = socket.socket()
    if rwnd > 0:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2 * rwnd)
        s.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, rwnd)
    h = hashlib.sha256()
    n = 0
    try:
        s.settimeout(max(1.0, deadline - time.monotonic()))
        s.connect((str(job["server"]), int(job["port"])))  # type: ignore[call-overload]
        res["connect_s"] = time.monotonic()
        put(d, "up", cid, {"port": s.getsockname()[1]})
        s.sendall(f"{size} {job.get('flags', '-') or '-'} {cid}\n".encode())
        s.settimeout(0.2)
        res["end"] = "timeout"
        paused = False
        while time.monotonic() < deadline:
            if pause is not None and n >= int(pause) and not os.path.exists(os.path.join(d, f"go-{cid}")):  # type: ignore[call-overload]
                if not paused:
                    paused = True
                    time.sleep(1.0)  # what is in flight arrives
                    put(d, "paused", cid, {"bytes": n, "received": received(s)})
                # not reading: the window shuts; a RST still ends the connection
                try:
                    err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                except OSError:
                    err = 1
                if err:
                    res["end"] = "reset"
                    break
                time.sleep(0.1)
                continue
            try:
                b = s.recv(65536)
            except TimeoutError:
                continue
            if not b:
                res["end"] = "eof"
                break
            if n == 0:
                res["first_s"] = time.monotonic()
            h.update(b)
            n += len(b)
        res["received"] = received(s)
    except ConnectionResetError:
        res["end"] = "reset"
    except OSError as e:
        res["end"] = f"error: {e}"
    res["bytes"] = n
    res["sha_ok"] = h.hexdigest() == hashlib.sha256(memoryview(STREAM)[:n]).hexdigest()
    res["end_s"] = time.monotonic()
    s.close()
    put(d, "results", cid, res)


def main() -> None:
    d = sys.argv[1]
    for sub in ("up", "paused", "results"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    jobs = os.path.join(d, "jobs")
    started: set[str] = set()
    while not os.path.exists(os.path.join(d, "done")):
        for f in sorted(os.listdir(jobs)) if os.path.isdir(jobs) else []:
            if f.endswith(".json") and f not in started:
                started.add(f)
                with open(os.path.join(jobs, f)) as fh:
                    job = json.load(fh)
                threading.Thread(target=run, args=(d, job), daemon=True).start()
        time.sleep(0.05)


if __name__ == "__main__":
    main()
