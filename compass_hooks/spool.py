"""The capture spool: hook captures kept on disk when the worker could not take them.

A hook that fails open (no worker yet, a worker killed mid-request, a cold start
longer than the budget, a store that cannot be written) still let the prompt
through: Claude Code got its answer and the user expects it remembered. So the
prompt (or the Stop reply) is written here and the worker moves it into the
store's capture queue (:mod:`compass_hooks.memory.queue`) when it next runs.

One small JSON file per entry in ``<data>/spool/`` (0600 in a 0700 dir), written
under a temporary name and renamed: a reader never sees half an entry and
concurrent hooks never interleave. Names sort by time, so entries are taken
oldest first. An entry the worker cannot read is renamed ``*.bad`` (kept for a
look, never retried). Writing stops at :data:`MAX_ENTRIES` files so a worker
that never comes back cannot fill the disk.

Entries: ``{"v": 1, "time": unix s, "event": "UserPromptSubmit"|"Stop", "payload": {...}}`` from the hook
process (texts already without ``<private>`` spans and secrets), or ``{"v": 1, "time", "event":
"prompt"|"stop", "items": [...]}`` from the worker (items cleaned as the store takes them).

Stdlib only: the hook process imports it on its failure path.
"""

from __future__ import annotations

import json
import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import in the hook process
    from typing import Any

DIR_NAME = "spool"
SUFFIX = ".json"
MAX_ENTRIES = 10_000
_seq = 0


def spool_dir(data: str | os.PathLike) -> str:
    return os.path.join(os.fspath(data), DIR_NAME)


def write(data: str | os.PathLike, entry: dict[str, Any]) -> str | None:
    """Write one entry; its path, or None when it could not be written (disk full, no permission, too many
    entries waiting). Never raises."""
    global _seq
    folder = spool_dir(data)
    tmp = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if count(data) >= MAX_ENTRIES:
            return None
        _seq += 1
        name = f"{time.time_ns():020d}-{os.getpid()}-{_seq}{SUFFIX}"
        tmp = os.path.join(folder, f".{name}.tmp")
        body = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        final = os.path.join(folder, name)
        os.replace(tmp, final)
        return final
    except (OSError, ValueError, TypeError):
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return None


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


def entries(data: str | os.PathLike, limit: int = 500) -> list[tuple[str, dict[str, Any] | None]]:
    """Up to ``limit`` entries, oldest first: (path, the entry, or None when it cannot be read as one)."""
    folder = spool_dir(data)
    out: list[tuple[str, dict[str, Any] | None]] = []
    for name in _names(data)[:limit]:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as fh:
                obj = json.loads(fh.read().decode("utf-8"))
        except FileNotFoundError:
            continue  # taken by another reader
        except (OSError, UnicodeDecodeError, ValueError):
            obj = None
        out.append((path, obj if isinstance(obj, dict) else None))
    return out


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def quarantine(path: str) -> None:
    """Keep an unreadable entry for a look (``*.bad``), out of the way of the reader."""
    try:
        os.replace(path, path + ".bad")
    except OSError:
        pass
