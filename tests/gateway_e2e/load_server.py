"""The server end of the gateway's load test (runs unprivileged in the server's
namespace): one process, one asyncio loop, a listen backlog of BACKLOG (default 4096;
the kernel caps it at net.core.somaxconn). Each connection sends "SIZE ID\\n"; the
answer is SIZE bytes of connection ID's stream (a slice of one buffer computed at the
start: loadgen.py), then the server closes. Every half second, DIR/server.json says how
many connections were accepted, answered and open at once (atomically replaced).

    load_server.py PORT SIZE_MAX DIR [BACKLOG]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from loadgen import buffer, offset, raise_nofile


class Server:
    def __init__(self, size_max: int, d: str) -> None:
        self.size_max = size_max
        self.view = memoryview(buffer(size_max))
        self.dir = d
        self.accepted = self.answered = self.errors = self.open = self.max_open = 0
        self.bytes = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        try:
            line = await asyncio.wait_for(reader.readline(), 120)
            size, cid = (int(x) for x in line.split())
            if not 0 <= size <= self.size_max or cid < 0:
                raise ValueError(f"bad request {line!r}")
            o = offset(cid)
            writer.write(self.view[o:o + size])
            await writer.drain()
            self.bytes += size
            self.answered += 1
        except (OSError, ValueError, TimeoutError, asyncio.IncompleteReadError):
            self.errors += 1
        finally:
            self.open -= 1
            writer.close()  # a FIN once the bytes are sent
            try:
                await writer.wait_closed()
            except OSError:
                pass

    def report(self, nofile: tuple[int, int]) -> None:
        d = {"accepted": self.accepted, "answered": self.answered, "errors": self.errors, "open": self.open,
             "max_open": self.max_open, "bytes": self.bytes, "nofile": list(nofile),
             "cpu_s": time.process_time()}
        tmp = os.path.join(self.dir, "server.json.tmp")
        with open(tmp, "w") as f:
            json.dump(d, f)
        os.replace(tmp, os.path.join(self.dir, "server.json"))


async def main() -> None:
    port, size_max, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    backlog = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
    nofile = raise_nofile()
    srv = Server(size_max, d)
    server = await asyncio.start_server(srv.serve, "0.0.0.0", port, backlog=backlog, reuse_address=True)
    async with server:
        while True:
            srv.report(nofile)
            await asyncio.sleep(0.5)


if __name__ == "__main__":
    asyncio.run(main())
