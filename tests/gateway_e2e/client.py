"""The client end of the gateway's end-to-end test (runs unprivileged in the client's
namespace): waits for DIR/go, downloads SIZE bytes from the server with a small
receive window, writes DIR/result.json (SHA-256, timings), then waits for DIR/done.

    client.py DIR SERVER_IP PORT SIZE RWND    (RWND 0: Linux's own buffers)
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time

TCP_WINDOW_CLAMP = 10


def main() -> None:
    d, ip, port, size, rwnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(d, "go")) and time.monotonic() < deadline:
        time.sleep(0.02)
    s = socket.socket()
    # the small window: buffer and clamp before the handshake (as longpipe emu maps rwnd)
    if rwnd > 0:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2 * rwnd)
        s.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, rwnd)
    t0 = time.monotonic()
    s.connect((ip, port))
    s.sendall(f"{size}\n".encode())
    h = hashlib.sha256()
    n = 0
    first = None
    while True:
        b = s.recv(65536)
        if not b:
            break
        if first is None:
            first = time.monotonic()
        h.update(b)
        n += len(b)
    end = time.monotonic()
    s.close()
    res = {"bytes": n, "sha256": h.hexdigest(), "total_s": end - t0,
           "first_byte_s": (first or end) - t0, "transfer_s": end - (first or end)}
    tmp = os.path.join(d, "result.json.tmp")
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.rename(tmp, os.path.join(d, "result.json"))
    while not os.path.exists(os.path.join(d, "done")) and time.monotonic() < deadline + 60:
        time.sleep(0.05)


if __name__ == "__main__":
    main()
