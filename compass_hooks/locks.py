"""Advisory file locks (``flock``), the one way processes here tell "someone is doing this" (a worker is alive,
a bootstrap build runs). Stdlib only: the hook process asks on its hot path.

An owner takes the lock exclusively with :func:`acquire` and keeps the fd for its life; anyone may ask
:func:`held`. flock has no "who holds it" query, so asking means trying for a moment: a probe takes a *shared*
lock (probes never see each other as a holder), and :func:`acquire` keeps trying for :data:`PATIENCE_S` (a probe
holds the lock for microseconds, an owner for its life). Without both, a worker that started while a hook or a
spawner was probing exited as if another worker ran, and no worker came up until the next prompt."""

from __future__ import annotations

import fcntl
import os
import time

PATIENCE_S = 0.25  # how long acquire() outwaits probes before concluding a real owner holds the lock
_RETRY_S = 0.002


def held(path: str | os.PathLike) -> bool:
    """True when another open file description holds an exclusive ``flock`` on ``path`` (False: free or absent)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def acquire(path: str | os.PathLike, patience_s: float = PATIENCE_S) -> int | None:
    """An fd holding the exclusive lock on ``path`` (created 0600), or None when an owner holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + patience_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(_RETRY_S)
