"""Worker lifecycle on disk: the worker lock, the pid file and the ownership check
that must pass before anything is signalled.

One worker per data dir: the worker holds an exclusive ``flock`` on
``get_paths().worker_lock`` for its whole life, so "is the lock free" is the
truth about whether a worker is alive (a pid file can be stale; a lock cannot).
A pid is only ever signalled when ``/proc/<pid>/cmdline`` shows our worker
module *and* this data dir, and the process belongs to us: a stale pid file
pointing at a recycled pid never gets someone else's process killed.

Stdlib only (the client imports it).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from .. import locks
from .protocol import WORKER_MODULE


def read_pid(paths: Any) -> int | None:
    try:
        text = Path(paths.worker_pid).read_text(encoding="utf-8").strip()
        pid = int(text.split()[0])
        return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        return None


def write_pid(paths: Any) -> None:
    tmp = Path(str(paths.worker_pid) + ".tmp")
    tmp.write_text(f"{os.getpid()}\n", encoding="utf-8")
    os.replace(tmp, paths.worker_pid)


def remove_pid(paths: Any) -> None:
    """Remove the pid file if it still names this process."""
    if read_pid(paths) == os.getpid():
        try:
            os.unlink(paths.worker_pid)
        except OSError:
            pass


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def is_our_worker(pid: int, paths: Any) -> bool:
    """True only for a live process of ours running the worker for this data dir."""
    if pid <= 1 or pid == os.getpid():
        return False
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
    except OSError:
        return False
    args = cmdline(pid)
    if WORKER_MODULE not in args:
        return False
    try:
        home = args[args.index("--home") + 1]
    except (ValueError, IndexError):
        return False
    return os.path.realpath(home) == os.path.realpath(str(paths.data))


def acquire_lock(paths: Any) -> int | None:
    """The worker lock fd (kept open for the worker's life), or None if another worker holds it."""
    Path(paths.run).mkdir(parents=True, exist_ok=True, mode=0o700)
    return locks.acquire(paths.worker_lock)


def lock_held(paths: Any) -> bool:
    """True when some process holds the worker lock (a worker is alive or starting)."""
    return locks.held(paths.worker_lock)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (our own unreaped child) still answers kill(0); /proc says it is gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def terminate(pid: int, paths: Any, timeout: float = 5.0) -> bool:
    """SIGTERM (then SIGKILL) the worker ``pid`` if and only if it is ours. True if it is gone."""
    if not is_our_worker(pid, paths):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    if is_our_worker(pid, paths):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return True
        for _ in range(40):
            if not pid_alive(pid):
                return True
            time.sleep(0.05)
    return not pid_alive(pid)
