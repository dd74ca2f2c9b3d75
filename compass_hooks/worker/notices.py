"""Tell the user once: a small record of what was already said, in ``<data>/run/notices.json``.

A worker that cannot load its model answers every hook at once; the user should
see the fix one time, not on every prompt. The record is keyed by topic and
holds the reason told, so a different problem is told again and a problem that
was fixed (:func:`clear`) is told again if it comes back.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

NAME = "notices.json"
PENDING = "notices-pending.json"  # things the worker did that the next hook tells the user (one stat per hook)
_lock = threading.Lock()


def _path(paths: Any) -> str:
    return os.path.join(str(paths.run), NAME)


def _load(path: str) -> Any:
    """The JSON in ``path``; None when it cannot be read or parsed (these files are a courtesy, never an error)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _save(path: str, obj: Any) -> None:
    """Replace ``path`` with ``obj`` as JSON, atomically (a per-process, per-thread temporary file renamed over it)."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


def _read(paths: Any) -> dict[str, Any]:
    obj = _load(_path(paths))
    return obj if isinstance(obj, dict) else {}


def _write(paths: Any, obj: dict[str, Any]) -> None:
    _save(_path(paths), obj)


def once(paths: Any, topic: str, reason: str, text: str) -> str | None:
    """``text`` the first time ``topic`` is raised for ``reason``; None after that."""
    with _lock:
        seen = _read(paths)
        if isinstance(seen.get(topic), dict) and seen[topic].get("reason") == reason:
            return None
        seen[topic] = {"reason": reason, "ts": time.time()}
        try:
            _write(paths, seen)
        except OSError:
            return None  # cannot remember having said it: say nothing rather than say it on every prompt
        return text


def clear(paths: Any, topic: str) -> None:
    with _lock:
        seen = _read(paths)
        if topic in seen:
            seen.pop(topic)
            try:
                _write(paths, seen)
            except OSError:
                pass


def _pending_path(paths: Any) -> str:
    return os.path.join(str(paths.run), PENDING)


def add_pending(paths: Any, text: str) -> None:
    """Queue ``text`` for the next hook's ``systemMessage`` (kept across worker restarts until told)."""
    with _lock:
        path = _pending_path(paths)
        _save(path, _read_queue(path) + [text])


def take_pending(paths: Any) -> str | None:
    """The oldest queued notice, removed from the queue; None (after one failed open) when there is none."""
    path = _pending_path(paths)
    if not os.path.exists(path):
        return None
    with _lock:
        queue = _read_queue(path)
        if not queue:
            _unlink(path)
            return None
        first, rest = queue[0], queue[1:]
        if rest:
            _save(path, rest)
        else:
            _unlink(path)
        return first


def _read_queue(path: str) -> list[str]:
    """The queued notices at ``path``, oldest first; an unreadable or malformed file is an empty queue."""
    queue = _load(path)
    return [q for q in queue if isinstance(q, str)] if isinstance(queue, list) else []


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
