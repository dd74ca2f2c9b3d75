"""The capture spool: hook captures on disk between the hook's answer and the memory store.

Every prompt and Stop reply a hook answers is written here first (~0.1 ms, no
lock shared with anything), then stored as a memory by the worker's background
thread (:mod:`compass_hooks.memory.queue`), which deletes the entry once the
memory is committed. A hook that fails open (no worker yet, a worker killed
mid-request, a cold start longer than the budget) writes its prompt here too, so
the next worker stores it. Nothing answered depends on a worker staying alive.

One small JSON file per entry in ``<data>/spool/`` (0600 in a 0700 dir), written
under a temporary name and renamed: a reader never sees half an entry and
concurrent writers never interleave. Names sort by time, so entries are taken
oldest first. An entry that cannot be stored is renamed ``*.bad`` (kept for a
look, counted by ``doctor``, never retried). Writing stops at
:data:`MAX_ENTRIES` waiting entries so a worker that never comes back cannot
fill the disk.

Entries: ``{"v": 1, "time": unix s, "event": "UserPromptSubmit"|"Stop", "payload": {...}}`` from the hook
process (texts already without ``<private>`` spans and secrets), or ``{"v": 1, "time", "event":
"prompt"|"stop", "items": [...]}`` from the worker (items cleaned as the store takes them).

Stdlib only: the hook process imports it on its failure path.
"""

from __future__ import annotations

import itertools
import json
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import in the hook process
    from typing import Any

DIR_NAME = "spool"
SUFFIX = ".json"
BAD = ".bad"
MAX_ENTRIES = 50_000  # ~1 KB each: tens of MB, days of prompts for a worker that does not come back
_CAP_CHECK_S = 1.0  # the cap is a directory scan: a busy worker checks it at most this often
_seq = itertools.count()  # next() is atomic: threads of one process never share a name
_cap = {"checked": 0.0, "full": False}


def spool_dir(data: str | os.PathLike) -> str:
    return os.path.join(os.fspath(data), DIR_NAME)


class SpoolFull(OSError):
    """:data:`MAX_ENTRIES` captures wait already: the worker is not storing them."""


def write(data: str | os.PathLike, entry: dict[str, Any]) -> str:
    """Write one entry; returns its path. Raises OSError (ENOSPC for a full disk) or :class:`SpoolFull`;
    nothing half-written is left behind."""
    folder = spool_dir(data)
    if not os.path.isdir(folder):  # makedirs gives only the leaf its mode: the data dir must be private too
        os.makedirs(data, mode=0o700, exist_ok=True)
        os.makedirs(folder, mode=0o700, exist_ok=True)
    now = time.monotonic()
    if now - _cap["checked"] >= _CAP_CHECK_S:
        _cap["checked"], _cap["full"] = now, count(data) >= MAX_ENTRIES
    if _cap["full"]:
        raise SpoolFull(f"{MAX_ENTRIES} captures already wait in {folder} (is the worker running?)")
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_seq)}{SUFFIX}"
    tmp = os.path.join(folder, f".{name}.tmp")
    body = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        final = os.path.join(folder, name)
        os.replace(tmp, final)
        return final
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _names(data: str | os.PathLike) -> list[str]:
    try:
        with os.scandir(spool_dir(data)) as it:
            return sorted(e.name for e in it if e.name.endswith(SUFFIX) and not e.name.startswith("."))
    except OSError:
        return []


def count(data: str | os.PathLike) -> int:
    """Entries waiting (not the unreadable ones)."""
    return len(_names(data))


def has_entries(data: str | os.PathLike) -> bool:
    try:
        with os.scandir(spool_dir(data)) as it:
            return any(e.name.endswith(SUFFIX) and not e.name.startswith(".") for e in it)
    except OSError:
        return False


def pending(data: str | os.PathLike, limit: int | None = None) -> list[str]:
    """Paths of the waiting entries, oldest first (at most ``limit``)."""
    folder = spool_dir(data)
    names = _names(data)
    return [os.path.join(folder, n) for n in (names if limit is None else names[:limit])]


def read(path: str) -> dict[str, Any] | None:
    """One entry; None when it is gone (taken by another reader) or cannot be read as an entry (the caller
    sets it aside: :func:`quarantine`). Raises nothing."""
    try:
        with open(path, "rb") as fh:
            obj = json.loads(fh.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def bad_count(data: str | os.PathLike) -> int:
    """Entries set aside (``*.bad``)."""
    try:
        with os.scandir(spool_dir(data)) as it:
            return sum(1 for e in it if e.name.endswith(BAD))
    except OSError:
        return 0


def sweep_tmp(data: str | os.PathLike, older_than_s: float = 600.0) -> int:
    """Remove temporary files a writer killed between writing and renaming left behind; how many."""
    removed = 0
    cutoff = time.time() - older_than_s
    try:
        with os.scandir(spool_dir(data)) as it:
            for e in it:
                if e.name.startswith(".") and e.name.endswith(".tmp") and e.stat().st_mtime < cutoff:
                    remove(e.path)
                    removed += 1
    except OSError:
        pass
    return removed


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def quarantine(path: str) -> None:
    """Keep an entry that cannot be stored for a look (``*.bad``), out of the way of the reader."""
    try:
        os.replace(path, path + BAD)
    except OSError:
        pass
