"""Hand-made TCP segments for the gateway's fault suite (a blind RST, a SYN flood),
sent through a raw socket (root, in the namespace the test runs it in).

    python rawtcp.py rst SRC:PORT DST:PORT SEQ
    python rawtcp.py synflood DST:PORT COUNT SECONDS   (sources 10.8.x.y, spoofed)
"""

from __future__ import annotations

import socket
import struct
import sys
import time


def csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def segment(src: str, sport: int, dst: str, dport: int, seq: int, ack: int, flags: int,
            window: int = 0) -> bytes:
    """An IPv4/TCP packet without payload or options, checksums filled in."""
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, window, 0, 0)
    pseudo = s + d + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", csum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0x4242, 0, 64, socket.IPPROTO_TCP, 0, s, d)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return ip + tcp


RST, SYN, ACK = 0x04, 0x02, 0x10


def addr(a: str) -> tuple[str, int]:
    h, p = a.rsplit(":", 1)
    return h, int(p)


def main() -> None:
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    if sys.argv[1] == "rst":
        (sh, sp), (dh, dp), seq = addr(sys.argv[2]), addr(sys.argv[3]), int(sys.argv[4])
        raw.sendto(segment(sh, sp, dh, dp, seq, 0, RST), (dh, 0))
    elif sys.argv[1] == "synflood":
        (dh, dp), n, secs = addr(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        gap = secs / n
        t = time.monotonic()
        for i in range(n):
            src = f"10.8.{(i >> 8) & 255}.{i & 255}"
            raw.sendto(segment(src, 1024 + i % 60000, dh, dp, i * 7919, 0, SYN, 65535), (dh, 0))
            t += gap
            while time.monotonic() < t:
                pass
    else:
        raise SystemExit(f"unknown command {sys.argv[1]}")


if __name__ == "__main__":
    main()
