"""The append-only, hash-chained audit log (JSONL in ``get_paths().audit_log``).

Every entry is one line::

    {"seq": 0, "time": "...Z", "actor": "cli", "action": "add", "object_type": "memory",
     "object_id": "m_1", "content_sha256": "<hex>" | null, "prev": "<hex>", "hash": "<hex>"}

``hash`` is SHA-256 over the canonical JSON of every other field (sorted keys, no
spaces), so it commits to ``prev`` and therefore to the whole history before it.
The first entry's ``prev`` is :data:`GENESIS`.

Writers take ``fcntl.flock(LOCK_EX)`` on the log file itself while they read the
tail entry and append, so several processes (worker, CLI, MCP server, import)
can write at once without forking the chain. Only the last line is read (seek
from the end), so an append costs the same with 10 or 10 million entries.

Stdlib only: the store calls this on every memory write.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Iterator

from ..errors import AuditError, InvalidInput

GENESIS = "0" * 64
ACTORS = frozenset({"hook", "cli", "mcp", "import", "worker"})
OBJECT_TYPES = frozenset({"memory", "anchor", "pack"})
# Actions are an open set (features add their own) but must be short tokens, so a
# log line can never smuggle structure through them.
_TOKEN = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# Removals log no content hash.
REMOVALS = frozenset({"forget", "anchor-remove", "pack-remove"})
_FIELDS = ("seq", "time", "actor", "action", "object_type", "object_id", "content_sha256", "prev")
_TAIL_CHUNK = 4096


def sha256_hex(content: str | bytes) -> str:
    data = content.encode("utf-8") if isinstance(content, str) else content
    return hashlib.sha256(data).hexdigest()


def canonical(entry: dict[str, Any]) -> bytes:
    """The bytes an entry's hash is computed over (every field but ``hash``)."""
    body = {k: entry.get(k) for k in _FIELDS}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(entry)).hexdigest()


def _utc_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _validate(actor: str, action: str, object_type: str, object_id: str) -> None:
    if actor not in ACTORS:
        raise InvalidInput(f"audit: unknown actor {actor!r}", f"one of: {', '.join(sorted(ACTORS))}")
    if not isinstance(action, str) or not _TOKEN.match(action):
        raise InvalidInput(f"audit: bad action {action!r}", "a short lower-case token such as add, forget, edit")
    if object_type not in OBJECT_TYPES:
        raise InvalidInput(f"audit: unknown object_type {object_type!r}", f"one of: {', '.join(sorted(OBJECT_TYPES))}")
    if not isinstance(object_id, str) or not object_id or len(object_id) > 256 or "\n" in object_id:
        raise InvalidInput(f"audit: bad object_id {object_id!r}", "a non-empty single-line id of at most 256 chars")


def _read_tail(fd: int) -> tuple[dict[str, Any] | None, int]:
    """The last entry (or None for an empty log) and the file size, reading backwards."""
    size = os.fstat(fd).st_size
    if size == 0:
        return None, 0
    end = size
    buf = b""
    while True:
        start = max(0, end - _TAIL_CHUNK)
        buf = os.pread(fd, end - start, start) + buf
        end = start
        body = buf[:-1] if buf.endswith(b"\n") else buf
        nl = body.rfind(b"\n")
        if nl >= 0 or start == 0:
            break
    if not buf.endswith(b"\n"):
        raise AuditError(
            "audit log ends with a partial line (a crash or an edit)",
            "run `compass-hook audit verify`; the log is never rewritten automatically",
        )
    line = body[nl + 1 :] if nl >= 0 else body
    try:
        entry = json.loads(line)
        if not isinstance(entry, dict) or not isinstance(entry.get("seq"), int) or not isinstance(entry.get("hash"), str):
            raise ValueError("not an entry")
    except ValueError:
        raise AuditError(
            "audit log's last line is not a valid entry", "run `compass-hook audit verify` to find the first bad entry"
        ) from None
    return entry, size


def _open_log(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    return fd


def record_change(
    paths: Any,
    *,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    content: str | bytes | None,
) -> dict[str, Any]:
    """Append one entry for a change and return it (with ``seq`` and ``hash``).

    ``content`` is the object's new content (memory text, pack file bytes); pass
    None for removals. Raises :class:`AuditError` when the log cannot be written
    (disk full, permissions, a corrupt tail); on failure nothing partial is left.
    """
    _validate(actor, action, object_type, object_id)
    if content is None and action not in REMOVALS:
        raise InvalidInput(f"audit: action {action!r} needs the content to hash", "content=None is for removals only")
    digest = None if content is None else sha256_hex(content)
    path = Path(paths.audit_log)
    try:
        fd = _open_log(path)
    except OSError as exc:
        raise AuditError(f"cannot open audit log {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        last, size = _read_tail(fd)
        entry: dict[str, Any] = {
            "seq": 0 if last is None else last["seq"] + 1,
            "time": _utc_now(),
            "actor": actor,
            "action": action,
            "object_type": object_type,
            "object_id": object_id,
            "content_sha256": digest,
            "prev": GENESIS if last is None else last["hash"],
        }
        entry["hash"] = entry_hash(entry)
        line = (json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.EIO, f"short write ({written} of {len(line)} bytes)")
            os.fsync(fd)
        except OSError as exc:
            # We hold the lock: cut back to the size we saw so no torn line stays behind.
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            hint = "free disk space and retry" if exc.errno == errno.ENOSPC else None
            raise AuditError(f"cannot append to audit log {path}: {exc.strerror or exc}", hint) from None
        return entry
    finally:
        os.close(fd)  # closing releases the flock


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line without newline) for every line of the log."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        for n, raw in enumerate(f, 1):
            yield n, raw.rstrip(b"\n")
