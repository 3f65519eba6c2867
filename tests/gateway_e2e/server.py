"""The server end of the gateway's end-to-end test (runs unprivileged in the server's
namespace): for each connection, reads "SIZE\\n" and answers with SIZE bytes of a
deterministic stream (SHA-256 of a counter), then closes.

    server.py PORT [SNDBUF]   (SNDBUF: the server's send buffer, bytes: a small window)"""

from __future__ import annotations

import hashlib
import socket
import sys
import threading


def stream(n: int) -> bytes:
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(i.to_bytes(8, "big")).digest()
        i += 1
    return bytes(out[:n])


def serve(c: socket.socket) -> None:
    with c:
        req = b""
        while not req.endswith(b"\n"):
            b = c.recv(64)
            if not b:
                return
            req += b
        c.sendall(stream(int(req)))
        c.shutdown(socket.SHUT_WR)
        c.recv(1)  # until the client closes


def main() -> None:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if len(sys.argv) > 2:
        # accepted sockets inherit it: at most about this much in flight
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(sys.argv[2]))
    s.bind(("0.0.0.0", int(sys.argv[1])))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
