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

Memory changes arrive in batches (:func:`record_changes`: one lock, one write, one
``fsync`` for a whole capture batch or import page) with the content's SHA-256
already computed by the store. A change the store replays after a crash carries
``since`` (when it was committed): it is skipped when the log already holds it,
so a crash between the append and the store clearing its intent never doubles an
entry.

Stdlib only: the store calls this on every memory write.
"""

from __future__ import annotations

import calendar
import errno
import fcntl
import hashlib
import json
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import AuditError, InvalidInput

GENESIS = "0" * 64
ACTORS = frozenset({"hook", "cli", "mcp", "import", "worker"})
OBJECT_TYPES = frozenset({"memory", "anchor", "pack"})
# Actions are an open set (features add their own) but must be short tokens, so a
# log line can never smuggle structure through them.
_TOKEN = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# Removals log no content hash. ``repair-forget``: `audit repair` recording a memory that vanished unlogged.
REMOVALS = frozenset({"forget", "anchor-remove", "pack-remove", "repair-forget"})
_FIELDS = ("seq", "time", "actor", "action", "object_type", "object_id", "content_sha256", "prev")
_TAIL_CHUNK = 4096
# A replayed change is looked for among the entries written since its commit, minus this much clock slack.
REPLAY_SLACK_S = 5.0


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


def _digest(action: str, content: str | bytes | None, content_sha256: str | None) -> str | None:
    if content is not None and content_sha256 is not None:
        raise InvalidInput("audit: give the content or its SHA-256, not both")
    if content_sha256 is not None:
        if not (isinstance(content_sha256, str) and len(content_sha256) == 64
                and set(content_sha256) <= set("0123456789abcdef")):
            raise InvalidInput(f"audit: content_sha256 {content_sha256!r} is not a lower-case hex SHA-256")
        return content_sha256
    if content is None:
        if action not in REMOVALS:
            raise InvalidInput(f"audit: action {action!r} needs the content to hash", "content=None is for removals only")
        return None
    return sha256_hex(content)


def entry_time(entry: Mapping[str, Any]) -> float | None:
    """An entry's ``time`` as unix seconds (None when unreadable)."""
    t = entry.get("time")
    if not isinstance(t, str) or len(t) < 19:
        return None
    try:
        base = calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    ms = t[20:23]
    return base + (int(ms) / 1000.0 if ms.isdigit() else 0.0)


def _logged_since(fd: int, size: int, since: float) -> set[tuple[Any, ...]]:
    """(object_type, object_id, action, content_sha256) of the entries written at or after ``since`` (less the
    slack), read backwards from the end: a replay only looks at the log's newest entries."""
    found: set[tuple[Any, ...]] = set()
    limit = since - REPLAY_SLACK_S
    end = size
    carry = b""
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start) + carry
        end = start
        lines = block.split(b"\n")
        carry = lines[0] if start > 0 else b""  # maybe the tail of a line that starts in the next block back
        for raw in reversed(lines if start == 0 else lines[1:]):
            if not raw.strip():
                continue
            try:
                e = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(e, dict):
                continue
            t = entry_time(e)
            if t is not None and t < limit:
                return found
            found.add((e.get("object_type"), e.get("object_id"), e.get("action"), e.get("content_sha256")))
    return found


def record_change(
    paths: Any,
    *,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    content: str | bytes | None,
    content_sha256: str | None = None,
) -> dict[str, Any]:
    """Append one entry for a change and return it (with ``seq`` and ``hash``).

    ``content`` is the object's new content (memory text, pack file bytes), or give its ``content_sha256``
    instead; neither for removals. Raises :class:`AuditError` when the log cannot be written
    (disk full, permissions, a corrupt tail); on failure nothing partial is left.
    """
    change = {"actor": actor, "action": action, "object_type": object_type, "object_id": object_id,
              "content": content, "content_sha256": content_sha256}
    return record_changes(paths, [change])[0]  # type: ignore[return-value]


def record_changes(paths: Any, changes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
    """Append one entry per change, all under one lock with one write and one ``fsync``; returns the entries.

    Each change: ``actor``, ``action``, ``object_type``, ``object_id``, and ``content`` or ``content_sha256``
    (neither for removals); optional ``since`` (unix seconds) marks a replay: when an entry with the same
    object, action and hash was written since then, nothing is appended for it and its result is None.
    All or nothing: on :class:`AuditError` no line of the batch is left in the log.
    """
    prepared = []
    for c in changes:
        _validate(c["actor"], c["action"], c["object_type"], c["object_id"])
        digest = _digest(c["action"], c.get("content"), c.get("content_sha256"))
        prepared.append((c, digest))
    if not prepared:
        return []
    path = Path(paths.audit_log)
    with held(paths) as fd:
        last, size = _read_tail(fd)
        replays = [c["since"] for c, _ in prepared if c.get("since") is not None]
        logged = _logged_since(fd, size, min(replays)) if replays and size else set()
        out: list[dict[str, Any] | None] = []
        lines = []
        for c, digest in prepared:
            if c.get("since") is not None and (c["object_type"], c["object_id"], c["action"], digest) in logged:
                out.append(None)
                continue
            entry: dict[str, Any] = {
                "seq": 0 if last is None else last["seq"] + 1,
                "time": _utc_now(),
                "actor": c["actor"],
                "action": c["action"],
                "object_type": c["object_type"],
                "object_id": c["object_id"],
                "content_sha256": digest,
                "prev": GENESIS if last is None else last["hash"],
            }
            entry["hash"] = entry_hash(entry)
            lines.append(json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
            out.append(entry)
            last = entry
        if not lines:
            return out
        data = "".join(lines).encode("utf-8")
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(errno.EIO, f"short write ({written} of {len(data)} bytes)")
            os.fsync(fd)
        except OSError as exc:
            # We hold the lock: cut back to the size we saw so no torn line stays behind.
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise AuditError(f"cannot append to audit log {path}: {_reason(exc)}", _hint(exc)) from None
        return out


@contextmanager
def held(paths: Any) -> Iterator[int]:
    """Hold the writers' lock on the log (``flock(LOCK_EX)`` on the file itself) and give its descriptor:
    :func:`record_changes` appends under it, and a backup copies the store and the log under it, so no change is in one copy and missing from the other
    (a change committed meanwhile waits to be logged, and its intent is in the store's copy)."""
    path = Path(paths.audit_log)
    try:
        fd = _open_log(path)
    except OSError as exc:
        raise AuditError(f"cannot open audit log {path}: {exc.strerror or exc}", _hint(exc)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # closing releases the flock


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return f"disk full (ENOSPC: {exc.strerror or exc})"
    return str(exc.strerror or exc)


def _hint(exc: OSError) -> str | None:
    if exc.errno == errno.ENOSPC:
        return "free disk space and retry"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "the data dir must be writable by you (compass-hook doctor)"
    return None


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line without newline) for every line of the log."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        for n, raw in enumerate(f, 1):
            yield n, raw.rstrip(b"\n")
