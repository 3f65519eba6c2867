"""The server end of the gateway's fault suite (runs unprivileged in the server's
namespace for the whole emulation): for each connection, reads "SIZE FLAGS ID\\n" and
answers with SIZE bytes of the deterministic stream, then closes its side and waits
for the client's end. Writes DIR/server/ID.json when the connection ends:

    {"sent": bytes written, "acked": bytes the peer acknowledged (TCP_INFO), "end":
     "eof" | "reset" | "timeout" | "error", "t_end": monotonic seconds}

FLAGS: "b" = a bare FIN (the FIN leaves after every byte was acknowledged, not on the
last data segment). Stops when DIR/done exists.

    agent_server.py DIR PORT
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time

from loadgen import buffer

SIOCOUTQ = 0x5411  # linux/sockios.h: bytes not yet acknowledged
TCP_INFO_BYTES_ACKED = 120  # struct tcp_info: tcpi_bytes_acked (u64)
WAIT_END_S = 240  # how long a connection may take to end after the data went out
STREAM = buffer(8 << 20)


def bytes_acked(c: socket.socket) -> int:
    try:
        info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        return int(struct.unpack_from("<Q", info, TCP_INFO_BYTES_ACKED)[0])
    except OSError:
        return -1


def outq(c: socket.socket) -> int:
    import fcntl

    return int(struct.unpack("i", fcntl.ioctl(c.fileno(), SIOCOUTQ, b"\0" * 4))[0])


def serve(d: str, c: socket.socket) -> None:
    res: dict[str, object] = {"sent": 0, "acked": 0, "end": "error"}
    cid = "unknown"
    with c:
        try:
            req = b""
            while not req.endswith(b"\n"):
                b = c.recv(128)
                if not b:
                    return
                req += b
            size_s, flags, cid = req.decode().split()
            size = int(size_s)
            view = memoryview(STREAM)
            off = 0
            while off < size:
                n = c.send(view[off:min(size, off + 65536)])
                off += n
                res["sent"] = off
                res["acked"] = bytes_acked(c)
            if "b" in flags:
                t = time.monotonic() + WAIT_END_S
                while outq(c) > 0 and time.monotonic() < t:
                    res["acked"] = bytes_acked(c)
                    time.sleep(0.05)
            c.shutdown(socket.SHUT_WR)
            c.settimeout(0.2)
            t = time.monotonic() + WAIT_END_S
            res["end"] = "timeout"
            while time.monotonic() < t:
                res["acked"] = max(int(res["acked"]), bytes_acked(c))  # type: ignore[call-overload]
                try:
                    b = c.recv(4096)
                except TimeoutError:
                    continue
                if not b:
                    # after its own FIN a socket that gets a RST reads as end of file
                    # too (Linux: SOCK_DONE before the error); the error is still set
                    err = c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    res["end"] = "reset" if err else "eof"
                    break
        except (ConnectionResetError, BrokenPipeError):
            res["end"] = "reset"
        except OSError as e:
            res["end"] = f"error: {e}"
        res["t_end"] = time.monotonic()
        out = os.path.join(d, "server", f"{cid}.json")
        with open(out + ".tmp", "w") as f:
            json.dump(res, f)
        os.rename(out + ".tmp", out)


def main() -> None:
    d, port = sys.argv[1], int(sys.argv[2])
    os.makedirs(os.path.join(d, "server"), exist_ok=True)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(256)
    s.settimeout(0.5)
    while not os.path.exists(os.path.join(d, "done")):
        try:
            c, _ = s.accept()
        except TimeoutError:
            continue
        c.settimeout(None)
        threading.Thread(target=serve, args=(d, c), daemon=True).start()


if __name__ == "__main__":
    main()
