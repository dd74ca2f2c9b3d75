"""Advisory file locks (``flock``), the one way processes here tell "someone is doing this" (a worker is alive,
a bootstrap build runs). Stdlib only: the hook process asks on its hot path."""

from __future__ import annotations

import fcntl
import os


def held(path: str | os.PathLike) -> bool:
    """True when another open file description holds an exclusive ``flock`` on ``path`` (False: free or absent)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
