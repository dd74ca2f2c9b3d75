"""What TCP ports a process listens on, from /proc (Linux): the tests show there is no network listener."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _hex_addr(hexaddr: str) -> str:
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if len(raw) == 4:
        addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:  # /proc stores IPv6 as four little-endian 32-bit words
        addr = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return f"{addr}:{int(port, 16)}"


def tcp_listeners(pid: int) -> list[str]:
    """``addr:port`` of every TCP socket process ``pid`` has in LISTEN state (Linux /proc; [] elsewhere)."""
    if not Path("/proc/net/tcp").exists():
        return []
    inodes = socket_inodes(pid)
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[9]) in inodes:  # 0A = TCP_LISTEN
                out.append(_hex_addr(cols[1]))
    return sorted(out)
