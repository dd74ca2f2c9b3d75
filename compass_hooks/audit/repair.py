"""``audit repair``: record genuine gaps as new, audited entries; never edit or remove history.

``audit verify`` stays read-only and never re-baselines. Some gaps are not
tampering, though: a memory stored by a version that committed before it logged
and was killed in between; a store restored from a backup; a crash in the middle
of a log append (a torn last line, after which nothing can be appended). Repair
handles exactly these, explicitly, and each fix is itself an entry:

- a memory that exists with no entry -> ``repair-add`` (its current hash);
- a memory that is logged but gone -> ``repair-forget``;
- a torn last line (not JSON: an append cut short) -> moved to
  ``audit.log.torn-<time>`` next to the log, the log cut back to the last
  whole entry; a last entry that only lacks its newline gets it;
- only when the user says so (``accept_modified``): a memory whose text differs
  from its entry, or that was forgotten and is back -> ``repair-edit`` /
  ``repair-add``. By default these stay reported: that is what tampering looks like.

A broken chain anywhere else (an entry edited, removed, inserted) is not
repaired: that is the log's evidence. Changes the store committed with an intent
are written first (the caller's ``flush``), as the worker would.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import AuditError
from .log import record_changes, sha256_hex
from .verify import MISSING, MODIFIED, RESURRECTED, UNLOGGED, last_by_object, object_diff, walk_chain

ACTOR = "cli"


@dataclass
class Plan:
    tail: str | None = None  # "newline" | "cut": what the log's last line needs
    tail_line: int | None = None
    blocked: str | None = None  # a problem inside the log that repair does not touch
    add: list[str] = field(default_factory=list)  # unlogged memories
    forget: list[str] = field(default_factory=list)  # logged memories that are gone
    modified: list[str] = field(default_factory=list)  # text differs from the entry
    resurrected: list[str] = field(default_factory=list)  # forgotten in the log, present in the store
    pending: int = 0  # intents the store still has (written first)

    @property
    def empty(self) -> bool:
        return not (self.tail or self.add or self.forget or self.modified or self.resurrected or self.pending)

    def as_dict(self) -> dict[str, Any]:
        return {"tail": self.tail, "tail_line": self.tail_line, "blocked": self.blocked, "add": self.add,
                "forget": self.forget, "modified": self.modified, "resurrected": self.resurrected,
                "pending": self.pending}


def _last_line_start(fd: int, size: int) -> int:
    """Offset of the last line (ignoring a final newline)."""
    end = size - 1 if size and os.pread(fd, 1, size - 1) == b"\n" else size
    pos = end
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def _tail_state(path: Path) -> str | None:
    """"newline" when the last line is whole but unterminated, "cut" when it is not an entry at all."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with open(path, "rb") as fh:
        fh.seek(_last_line_start(fh.fileno(), size))
        last = fh.read()
    if last.endswith(b"\n"):
        return None
    import json

    try:
        entry = json.loads(last)
        return "newline" if isinstance(entry, dict) and "hash" in entry else "cut"
    except ValueError:
        return "cut"


def plan(paths: Any, memories: dict[str, str], pending: int) -> Plan:
    """What repair would do (nothing is written)."""
    out = Plan(pending=pending)
    log_path = Path(paths.audit_log)
    entries, lines, problem = walk_chain(log_path)
    tail = _tail_state(log_path)
    if problem is not None:
        torn = problem.line == lines and problem.kind == "entry" and "not JSON" in problem.message
        if torn:
            tail = "cut"
        else:
            out.blocked = problem.message
    out.tail = tail
    out.tail_line = lines if tail else None
    for oid, how in object_diff(memories, last_by_object(entries, "memory")):
        {UNLOGGED: out.add, MISSING: out.forget, MODIFIED: out.modified, RESURRECTED: out.resurrected}[how].append(oid)
    return out


def fix_tail(paths: Any, how: str) -> str | None:
    """Complete or cut the log's last line under the writers' lock; returns the side file a cut line went to."""
    path = Path(paths.audit_log)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _tail_state(path) != how:
            return None  # someone fixed it meanwhile
        size = os.fstat(fd).st_size
        if how == "newline":
            os.write(fd, b"\n")
            os.fsync(fd)
            return None
        start = _last_line_start(fd, size)
        torn = os.pread(fd, size - start, start)
        side = path.with_name(f"{path.name}.torn-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
        sfd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(sfd, torn)
            os.fsync(sfd)
        finally:
            os.close(sfd)
        os.ftruncate(fd, start)
        os.fsync(fd)
        return str(side)
    except OSError as exc:
        raise AuditError(f"cannot repair the end of {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def apply(paths: Any, read: Callable[[], tuple[dict[str, str], int]], flush: Callable[[], dict[str, Any]],
          accept_modified: bool = False) -> dict[str, Any]:
    """Repair: the log's tail, then the store's pending intents (``flush``), then the object gaps found in a
    fresh read (``read() -> ({id: text}, intents left)``). Returns what was done."""
    memories, pending = read()
    p = plan(paths, memories, pending)
    if p.blocked:
        raise AuditError(f"the log itself is invalid: {p.blocked}",
                         "repair never rewrites history; `compass-hook audit verify` names the first bad entry")
    done: dict[str, Any] = {"tail": None, "side_file": None, "recorded_pending": 0, "added": [], "forgotten": [],
                            "accepted": [], "left": []}
    if p.tail:
        done["side_file"] = fix_tail(paths, p.tail)
        done["tail"] = p.tail
    flushed = flush()
    if flushed.get("error"):
        raise AuditError(f"cannot write the pending entries: {flushed['error']}")
    done["recorded_pending"] = flushed.get("recorded", 0)
    memories, _ = read()
    p = plan(paths, memories, 0)
    changes = [{"action": "repair-add", "oid": oid} for oid in p.add]
    changes += [{"action": "repair-forget", "oid": oid} for oid in p.forget]
    if accept_modified:
        changes += [{"action": "repair-edit", "oid": oid} for oid in p.modified]
        changes += [{"action": "repair-add", "oid": oid} for oid in p.resurrected]
    else:
        done["left"] = p.modified + p.resurrected
    record_changes(paths, [{"actor": ACTOR, "action": c["action"], "object_type": "memory", "object_id": c["oid"],
                            "content_sha256": None if c["action"] == "repair-forget"
                            else sha256_hex(memories[c["oid"]])} for c in changes])
    done["added"] = p.add + (p.resurrected if accept_modified else [])
    done["forgotten"] = p.forget
    done["accepted"] = p.modified if accept_modified else []
    return done
