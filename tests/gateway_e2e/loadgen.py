"""The byte streams of the gateway's load test, shared by load_server.py, load_client.py
and the test: one pseudo-random buffer, computed once; connection ID's stream is the
slice of it starting at offset(ID), so that neighbouring connections get different
bytes (a gateway that mixed two connections' data up would be caught) while the server
only slices (it costs nothing per connection)."""

from __future__ import annotations

import hashlib
import random

SEED = 1015
# offsets fall in [0, SPAN): distinct for IDs below SPAN (7919 is prime, SPAN a power of 2)
SPAN = 1 << 16


def buffer(size_max: int) -> bytes:
    """Enough bytes for any stream of up to size_max bytes."""
    return random.Random(SEED).randbytes(size_max + SPAN)


def offset(cid: int) -> int:
    return (cid * 7919) % SPAN


def expected_sha256(buf: bytes, cid: int, size: int) -> str:
    o = offset(cid)
    return hashlib.sha256(memoryview(buf)[o:o + size]).hexdigest()


def raise_nofile() -> tuple[int, int]:
    """The soft limit on open files raised to the hard limit (a thousand sockets and
    more); returns (soft, hard) as they are now."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)
