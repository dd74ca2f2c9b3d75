"""The memory store: one SQLite file (WAL) shared by the worker, the CLI and the MCP server.

Why it looks like this:
- **Per-thread connections** (the worker runs ops on threads; sqlite3 connections
  must not cross threads). Reads run concurrently under WAL.
- **One writer path** (:meth:`Store._write`): an in-process lock serialises this
  process's writers, ``BEGIN IMMEDIATE`` takes SQLite's write lock up front, and
  "database is locked"/"busy" (another process writing) is retried with
  exponential backoff and jitter on top of ``busy_timeout``. Several sessions,
  the CLI and an import can write at once without losing rows.
- **Durability**: WAL with ``synchronous=NORMAL`` survives a process crash (a
  worker killed after the commit keeps the row); only a power cut can lose the
  last transactions.
- **Ids** are INTEGER AUTOINCREMENT, never reused, so the dense index catches up
  with ``vectors_since(model, last_id)``. They are shown to users as plain numbers.
- **Audit**: every add/forget/edit of a memory is reported to the ``on_change``
  callback given to the store, a batch of :class:`Change` (actor, action, memory
  id, SHA-256 of the text; None for a removal) after the commit. The Core wires it
  to the audit log (:func:`compass_hooks.audit.memory_recorder`); the store knows
  nothing of the audit. So that a crash between the commit and the append never
  leaves a memory the log does not know, each change also writes an *intent*
  (table ``audit_pending``) in the same transaction, cleared once reported; what
  a crash or an unwritable log leaves is reported later (:meth:`Store.flush_audit`:
  the next write, the worker, ``audit repair``), and ``audit verify`` shows it as
  pending, not as tampering. A failed report does not fail the write (it is
  committed: a caller told "failed" would retry and store it twice); the caller
  reads :meth:`Store.audit_error`. Derived data (embeddings, the FTS ``context``
  column) is not reported: it is not memory content.
- **Failures are named**: a full disk (SQLITE_FULL, or an I/O error with no space
  left), a read-only file and a corrupt file each raise a :class:`StoreError` that
  says so; :func:`integrity_problems` runs ``PRAGMA quick_check``.
- The store does not redact or classify: callers (``memory.ops``, ``memory.capture``)
  run :mod:`.privacy` first. The store only validates and writes.

Global scope: memories with ``project == GLOBAL`` (``"__global__"``).
"""

from __future__ import annotations

import builtins  # Store.list shadows list in the class body: annotations after it say builtins.list
import contextlib
import hashlib
import json
import math
import os
import random
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence
from urllib.parse import quote

from ..errors import CompassError, InvalidInput, NotFound, StoreError
from . import migrations
from .audited import audit_content, forms
from .kinds import KINDS

GLOBAL = "__global__"
ROLES = ("user", "assistant", "tool")
SOURCES = ("hook", "cli", "mcp", "import")
FLAG_SUSPICIOUS = "suspicious-instruction"
FLAG_REDACTED = "redacted"
MAX_TEXT = 20_000  # characters; longer texts are cut (a memory is a turn, not a file)

_COLUMNS = ("id", "project", "session", "role", "kind", "text", "context", "created", "source", "ref", "pinned",
            "flags", "hash", "dedupe_key", "meta", "tags")
# tags live in their own table (migration 5); one comma list per row, read with the row.
_SELECT = ("SELECT " + ", ".join(_COLUMNS[:-1])
           + ", (SELECT group_concat(tag, ',') FROM memory_tags t WHERE t.memory_id = memories.id) FROM memories")
MAX_TAGS = 16
MAX_TAG_CHARS = 40
_RETRIES = 12
_BACKOFF_S = 0.01
_BACKOFF_MAX_S = 1.0
_CHUNK = 500  # ids per IN (...) query (SQLite's variable limit is 32766 on 3.32+, stay far below)
# Intents older than this are a crashed writer's (a live one clears its own within milliseconds): any writer
# reports them before its own change, so the log keeps the order in which things happened.
STALE_INTENT_S = 2.0
# SQLite primary result codes (sqlite3.SQLITE_* exist from Python 3.11 only).
_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 8, 10, 11, 13, 26


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalize_tags(tags: Any) -> list[str]:
    """Tags as stored: case-folded, a leading ``#`` dropped, sorted, unique; each one word of at most
    :data:`MAX_TAG_CHARS` characters without commas. A comma-separated string is split."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = tags.split(",")
    if not isinstance(tags, (list, tuple, set, frozenset)):
        raise InvalidInput(f"tags must be a list of strings, got {type(tags).__name__}")
    out: set[str] = set()
    for t in tags:
        if not isinstance(t, str):
            raise InvalidInput(f"a tag must be a string, got {t!r}")
        tag = t.strip().lstrip("#").casefold()
        if not tag:
            continue
        if len(tag) > MAX_TAG_CHARS or any(c.isspace() or c == "," or not c.isprintable() for c in tag):
            raise InvalidInput(f"bad tag {t!r}", f"a tag is one word of at most {MAX_TAG_CHARS} characters, "
                               "no spaces or commas")
        out.add(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInput(f"{len(out)} tags; a memory takes at most {MAX_TAGS}")
    return sorted(out)


def parse_id(value: Any) -> int:
    """A memory id: an int, or a string of ASCII digits (``"#12"`` too). ``int()`` alone would take "٥" (an
    Arabic-Indic five) or "１２" for 5 and 12 and delete a memory nobody named."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = value.strip().lstrip("#") if isinstance(value, str) else None
    if not text or not text.isascii() or not text.isdigit():
        raise InvalidInput(f"memory ids are numbers (ASCII digits), got {value!r}", "`compass-hook recall QUERY` shows ids")
    return int(text)


@dataclass(frozen=True)
class Added:
    """Outcome of one add: ``id`` of the row (existing one for a duplicate; None
    when the item was forgotten before and is not re-added), ``new`` if inserted."""

    id: int | None
    new: bool


def _is_busy(exc: sqlite3.Error) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _no_space(path: Path) -> bool:
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def describe_error(exc: sqlite3.Error, path: Path) -> tuple[str, str | None]:
    """(what went wrong, what to do) for a SQLite failure, naming a full disk, a read-only or a corrupt file:
    "cannot rollback - no transaction is active" says none of that."""
    code = getattr(exc, "sqlite_errorcode", None)
    code = None if code is None else code & 0xFF
    low = str(exc).lower()
    if code == _SQLITE_FULL or "disk is full" in low or (
            (code == _SQLITE_IOERR or "disk i/o error" in low) and _no_space(path)):
        return (f"disk full: the memory store {path} cannot grow (SQLITE_FULL: {exc})",
                f"free space on the disk holding {path.parent}; nothing half-written was kept")
    if code == _SQLITE_READONLY or "readonly" in low or "read-only" in low:
        return (f"the memory store {path} is read-only ({exc})",
                f"make {path}, its -wal/-shm files and {path.parent} writable by you")
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "malformed" in low or "not a database" in low:
        return (f"the memory store {path} is corrupt ({exc})",
                "`compass-hook doctor` runs an integrity check; restore a backup or move the file aside "
                "(a new store is created)")
    return f"memory store failure on {path}: {exc}", None


def integrity_problems(db_path: str | os.PathLike) -> list[str]:
    """``PRAGMA quick_check`` of an existing store: [] when sound, else what SQLite reports (first lines).
    Opens the file without creating it and writes nothing."""
    path = Path(db_path)
    try:
        con = sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        return [f"cannot open: {exc}"]
    try:
        rows = con.execute("PRAGMA quick_check(20)").fetchall()
    except sqlite3.Error as exc:
        return [str(exc)]
    finally:
        con.close()
    found = [str(r[0]) for r in rows]
    return [] if found == ["ok"] else found


def _row(r: sqlite3.Row | tuple) -> dict[str, Any]:
    d = dict(zip(_COLUMNS, r))
    d["pinned"] = bool(d["pinned"])
    d["flags"] = [f for f in (d["flags"] or "").split(",") if f]
    d["meta"] = json.loads(d["meta"]) if d["meta"] else {}
    d["tags"] = sorted(t for t in (d.get("tags") or "").split(",") if t)
    return d


def _inserted_id(cur: sqlite3.Cursor) -> int:
    """The id an INSERT gave its row (``lastrowid`` is None only after statements that insert nothing)."""
    if cur.lastrowid is None:  # pragma: no cover - not after an INSERT
        raise StoreError("memory store: an insert returned no row id")
    return cur.lastrowid


class Change(NamedTuple):
    """One change to a memory, as the store reports it: the text's SHA-256 (``memories.hash``), None for a
    removal; ``since`` is set when a change committed earlier is reported again (crash recovery)."""

    actor: str
    action: str  # add | edit | forget
    memory_id: int
    content_sha256: str | None
    since: float | None = None


# Hears of committed changes in batches; raises (AuditError) when it cannot record them.
ChangeHook = Callable[[Sequence[Change]], None]


class Store:
    """See the module docstring. ``on_change`` hears of every memory change (the Core passes the audit log's);
    None: nobody is told (reading an old store, benchmarks)."""

    def __init__(self, db_path: str | os.PathLike, on_change: ChangeHook | None = None):
        self.path = Path(db_path)
        self._on_change = on_change
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._wlock = threading.RLock()
        self._closed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():  # private from the first byte (memories are personal)
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        except OSError as exc:
            raise StoreError(f"cannot create the memory store {self.path}: {exc.strerror or exc}") from None
        conn = self._conn()
        for attempt in range(_RETRIES):
            try:
                self.schema_version = migrations.migrate(conn)
                break
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == _RETRIES - 1:
                    raise StoreError(f"cannot migrate the memory store {self.path}: {exc}") from None
                self._sleep(attempt)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot migrate the memory store {self.path}: {exc}") from None

    # ------------------------------------------------------------------ connections

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self._closed:
            raise StoreError("the memory store is closed")
        try:
            conn = sqlite3.connect(str(self.path), timeout=5.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"the memory store {self.path} cannot use WAL (journal_mode={mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")  # forgotten text is zeroed on disk, not left in free space
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the memory store {self.path}: {exc}") from None
        self._local.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    @staticmethod
    def _sleep(attempt: int) -> None:
        delay = min(_BACKOFF_MAX_S, _BACKOFF_S * (2**attempt))
        time.sleep(delay * (0.5 + random.random()))

    def _write(self, fn):
        """Run ``fn(conn)`` in one IMMEDIATE transaction, retrying on lock contention."""
        conn = self._conn()
        with self._wlock:
            for attempt in range(_RETRIES):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError as exc:
                    if _is_busy(exc) and attempt < _RETRIES - 1:
                        self._sleep(attempt)
                        continue
                    if _is_busy(exc):
                        raise StoreError(f"the memory store {self.path} stayed locked: {exc}",
                                         "another process holds a long write; retry") from None
                    raise StoreError(*describe_error(exc, self.path)) from None
                except sqlite3.Error as exc:
                    raise StoreError(*describe_error(exc, self.path)) from None
                try:
                    result = fn(conn)
                    conn.execute("COMMIT")
                    return result
                except sqlite3.OperationalError as exc:
                    self._rollback(conn)
                    if _is_busy(exc) and attempt < _RETRIES - 1:
                        self._sleep(attempt)
                        continue
                    message, hint = describe_error(exc, self.path)
                    raise StoreError(f"memory store write failed: {message}", hint) from None
                except sqlite3.IntegrityError as exc:
                    self._rollback(conn)
                    raise InvalidInput(f"memory rejected by the store: {exc}") from None
                except sqlite3.Error as exc:  # corrupt file, I/O error, a value SQLite cannot bind
                    self._rollback(conn)
                    message, hint = describe_error(exc, self.path)
                    raise StoreError(f"memory store write failed: {message}", hint) from None
                except BaseException:
                    self._rollback(conn)
                    raise
        raise StoreError("unreachable")  # pragma: no cover

    # Another feature's table in this file (drift's alerts) goes through these rather than a connection of its
    # own: the same per-thread connections, pragmas and the one writer path with its retry on "locked".
    def write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn(conn)`` in one IMMEDIATE transaction on the writer path; returns what it returns."""
        return self._write(fn)

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return self._read(sql, args)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        """Undo what is left: after SQLITE_FULL or a corrupt page SQLite has rolled back already, and a second
        ROLLBACK ("no transaction is active") must not replace the real error."""
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads in this thread inside the block see one state of the store (one read transaction: under WAL a
        writer goes on, unseen), so rows and their audit intents are read as of the same moment."""
        conn = self._conn()
        try:
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            message, hint = describe_error(exc, self.path)
            raise StoreError(f"memory store read failed: {message}", hint) from None
        try:
            yield
        finally:
            self._rollback(conn)  # nothing was written: ending the read transaction is all this does

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        try:
            return self._conn().execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            message, hint = describe_error(exc, self.path)
            raise StoreError(f"memory store read failed: {message}", hint) from None

    # ------------------------------------------------------------------ audit intents

    def _intents(self, conn: sqlite3.Connection, changes: Sequence[Change]) -> list[int]:
        """Write one intent per change inside the caller's transaction (nothing when nobody listens)."""
        if self._on_change is None or not changes:
            return []
        now = time.time()
        ids = []
        for c in changes:
            cur = conn.execute("INSERT INTO audit_pending (created, actor, action, memory_id, content_sha256)"
                               " VALUES (?,?,?,?,?)", (now, c.actor, c.action, int(c.memory_id), c.content_sha256))
            ids.append(_inserted_id(cur))
        return ids

    @staticmethod
    def _clear_intents(conn: sqlite3.Connection, ids: Sequence[int]) -> None:
        for i in range(0, len(ids), _CHUNK):
            part = list(ids[i : i + _CHUNK])
            conn.execute(f"DELETE FROM audit_pending WHERE id IN ({','.join('?' * len(part))})", part)

    def _report(self, changes: Sequence[Change], intent_ids: Sequence[int]) -> None:
        """Tell ``on_change`` of committed changes, then clear their intents. A failure is kept for
        :meth:`audit_error` and leaves the intents for :meth:`flush_audit`; it never undoes the change."""
        self._local.audit_error = None
        if self._on_change is None or not changes:
            return
        try:
            self.flush_audit(STALE_INTENT_S, exclude=intent_ids)  # a crashed writer's first: the log keeps order
        except CompassError:
            pass  # they stay pending; ours are reported regardless
        try:
            self._on_change(changes)
        except CompassError as exc:
            self._local.audit_error = str(exc)
            return
        try:
            self._write(lambda conn: self._clear_intents(conn, intent_ids))
        except CompassError:
            pass  # the entries are in the log; a later flush finds them there and only clears the intents

    def audit_error(self) -> str | None:
        """Why the audit log did not get this thread's last write (it is committed and will be logged later),
        or None when it did."""
        return getattr(self._local, "audit_error", None)

    def flush_audit(self, min_age: float = STALE_INTENT_S, exclude: Sequence[int] = ()) -> dict[str, Any]:
        """Report the intents at least ``min_age`` seconds old (a crashed writer's, or ones an unwritable log
        left) in order, skipping what the log already holds. ``{"recorded", "pending", "error"}``."""
        if self._on_change is None:
            return {"recorded": 0, "pending": 0, "error": None}
        skip = set(exclude)
        recorded = 0
        while True:
            rows = [r for r in self._read("SELECT id, created, actor, action, memory_id, content_sha256 FROM"
                                          " audit_pending WHERE created <= ? ORDER BY id LIMIT 2000",
                                          (time.time() - min_age,)) if int(r[0]) not in skip]
            if not rows:
                return {"recorded": recorded, "pending": 0, "error": None}
            changes = [Change(actor, action, int(mid), digest, since=float(created))
                       for _, created, actor, action, mid, digest in rows]
            try:
                self._on_change(changes)
            except CompassError as exc:
                return {"recorded": recorded, "pending": len(rows), "error": str(exc)}
            ids = [int(r[0]) for r in rows]
            self._write(lambda conn: self._clear_intents(conn, ids))
            recorded += len(rows)

    def pending_audit_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM audit_pending")[0][0])

    def pending_audit(self) -> list[dict[str, Any]]:
        """The intents not cleared yet, oldest first (``audit verify`` resolves them against the log)."""
        return [{"memory_id": str(mid), "action": action, "content_sha256": digest, "created": float(created),
                 "actor": actor}
                for created, actor, action, mid, digest in self._read(
                    "SELECT created, actor, action, memory_id, content_sha256 FROM audit_pending ORDER BY id")]

    def close(self) -> None:
        self._closed = True
        with self._conns_lock:
            for conn in self._conns:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._conns.clear()
        self._local = threading.local()

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _validate(item: dict[str, Any]) -> dict[str, Any]:
        """Check every field's type (a bad one is named, never handed to SQLite) and normalise it."""
        if not isinstance(item, dict):
            raise InvalidInput("a memory must be an object")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a memory needs non-empty text")
        project = item.get("project") or GLOBAL
        if not isinstance(project, str):
            raise InvalidInput(f"project must be a string, got {type(project).__name__}")
        role = item.get("role") or "user"
        kind = item.get("kind") or "note"
        source = item.get("source") or "cli"
        for name, value, allowed in (("role", role, ROLES), ("kind", kind, KINDS), ("source", source, SOURCES)):
            if not isinstance(value, str) or value not in allowed:
                raise InvalidInput(f"unknown {name} {value!r}", f"one of: {', '.join(allowed)}")
        session = item.get("session")
        if isinstance(session, int) and not isinstance(session, bool):
            session = str(session)
        if session is not None and not isinstance(session, str):
            raise InvalidInput(f"session must be a string, got {type(session).__name__}")
        created = item.get("created")
        if created is None:
            created = time.time()
        elif isinstance(created, bool) or not isinstance(created, (int, float)) or not math.isfinite(created):
            raise InvalidInput(f"created must be a finite number of unix seconds, got {created!r}")
        flags = item.get("flags") or ()
        if isinstance(flags, str):
            flags = [f for f in flags.split(",") if f]
        if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
            raise InvalidInput(f"flags must be a list of strings, got {flags!r}")
        if any("," in f for f in flags):
            raise InvalidInput(f"a flag cannot contain a comma: {flags!r}")
        text = text[:MAX_TEXT]
        ref = item.get("ref")
        if ref is not None and (isinstance(ref, bool) or not isinstance(ref, (str, int, float))):
            raise InvalidInput(f"ref must be a string or a number, got {type(ref).__name__}")
        meta = item.get("meta")
        if meta is not None and not isinstance(meta, dict):
            raise InvalidInput(f"meta must be an object, got {type(meta).__name__}")
        context = item.get("context") or ""
        if not isinstance(context, str):
            raise InvalidInput(f"context must be a string, got {type(context).__name__}")
        key = item.get("dedupe_key")
        if key is not None and not isinstance(key, str):
            raise InvalidInput(f"dedupe key must be a string, got {type(key).__name__}")
        return {
            "project": project, "session": session, "role": role, "kind": kind, "text": text,
            "context": context, "created": float(created), "source": source,
            "ref": None if ref is None else str(ref), "pinned": 1 if item.get("pinned") else 0,
            "flags": ",".join(sorted(set(flags))), "hash": content_hash(text), "dedupe_key": key,
            "meta": json.dumps(meta, ensure_ascii=False, sort_keys=True) if meta else None,
            "revive": bool(item.get("revive")), "tags": normalize_tags(item.get("tags")),
            "_embedding": item.get("embedding"), "_model": item.get("model"),
        }

    def add(self, text: str, **fields: Any) -> int | None:
        """Add one memory; returns its id (the existing id when ``dedupe_key`` is
        already stored, None when that key was forgotten). Fields as in :meth:`add_many`."""
        return self.add_many([{"text": text, **fields}])[0].id

    def add_many(self, items: Sequence[dict[str, Any]], actor: str | None = None) -> list[Added]:
        """Add many memories in one transaction.

        Item keys: text (required), project (default GLOBAL), session, role (user),
        kind (note), source (cli), created (unix s; now), ref, pinned, flags,
        context, dedupe_key, meta (dict), tags (list of strings), embedding (float32 vector) + model.
        An item whose ``dedupe_key`` exists in its project is not inserted again;
        one whose key or content hash was forgotten (tombstone) is skipped unless it
        says ``revive`` (the user asked for it again). ``actor`` is the audit actor
        (default: each item's source).
        """
        rows = [self._validate(it) for it in items]
        if not rows:
            return []

        def run(conn: sqlite3.Connection) -> tuple[list[Added], list[Change], list[int]]:
            out: list[Added] = []
            changes: list[Change] = []
            for r in rows:
                if r["dedupe_key"] is not None:
                    hit = conn.execute("SELECT id FROM memories WHERE project = ? AND dedupe_key = ?",
                                       (r["project"], r["dedupe_key"])).fetchone()
                    if hit:
                        out.append(Added(int(hit[0]), False))
                        continue
                    dead = None if r["revive"] else conn.execute(
                        "SELECT 1 FROM tombstones WHERE project = ? AND key IN (?, ?)",
                        (r["project"], r["dedupe_key"], "hash:" + r["hash"])).fetchone()
                    if dead:
                        out.append(Added(None, False))
                        continue
                cur = conn.execute(
                    "INSERT INTO memories (project, session, role, kind, text, context, created, source, ref, pinned,"
                    " flags, hash, dedupe_key, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (r["project"], r["session"], r["role"], r["kind"], r["text"], r["context"], r["created"],
                     r["source"], r["ref"], r["pinned"], r["flags"], r["hash"], r["dedupe_key"], r["meta"]),
                )
                mid = _inserted_id(cur)
                if r["tags"]:
                    conn.executemany("INSERT INTO memory_tags (memory_id, tag) VALUES (?,?)",
                                     [(mid, t) for t in r["tags"]])
                if r["_embedding"] is not None:
                    self._put_embedding(conn, mid, r["_model"], r["_embedding"])
                out.append(Added(mid, True))
                # The audited content is every field that changes what is injected (memory/audited.py), not the text.
                changes.append(Change(actor or r["source"], "add", mid, content_hash(audit_content(r))))
            return out, changes, self._intents(conn, changes)

        added, changes, intents = self._write(run)
        self._report(changes, intents)
        return added

    @staticmethod
    def _put_embedding(conn: sqlite3.Connection, memory_id: int, model: str | None, vector: Any) -> None:
        import numpy as np

        if not model:
            raise InvalidInput("an embedding needs its model name")
        vec = np.asarray(vector, dtype="<f4").reshape(-1)
        conn.execute("INSERT OR REPLACE INTO embeddings (memory_id, model, dim, vector) VALUES (?,?,?,?)",
                     (memory_id, model, int(vec.shape[0]), vec.tobytes()))

    def set_embeddings(self, ids: Sequence[int], model: str, vectors: Any) -> None:
        """Store (or replace) vectors for existing memories; ids that were forgotten meanwhile are skipped."""
        def run(conn: sqlite3.Connection) -> None:
            for mid, vec in zip(ids, vectors):
                if conn.execute("SELECT 1 FROM memories WHERE id = ?", (int(mid),)).fetchone():
                    self._put_embedding(conn, int(mid), model, vec)

        self._write(run)

    def set_contexts(self, pairs: Iterable[tuple[int, str]]) -> None:
        """Fill the FTS ``context`` column (neighbouring turns, dates) for windowed BM25.
        Derived data, not memory content: not audited."""
        rows = [(str(c or ""), int(m)) for m, c in pairs]
        self._write(lambda conn: conn.executemany("UPDATE memories SET context = ? WHERE id = ?", rows))

    def set_pinned(self, memory_id: int, pinned: bool, actor: str = "cli") -> dict[str, Any]:
        return self.edit(memory_id, pinned=pinned, actor=actor)

    def edit(self, memory_id: int, *, text: str | None = None, kind: str | None = None, pinned: bool | None = None,
             tags: Any = None, add_tags: Any = None, remove_tags: Any = None, flags: Sequence[str] | None = None,
             embedding: Any = None, model: str | None = None, actor: str = "cli") -> dict[str, Any]:
        """Change a memory in place (its id stays): text (with its ``flags`` as the privacy pass set them, and
        its new ``embedding`` by ``model``: the old vectors go, since they describe the old text), kind,
        pinned, tags (``tags`` replaces them; ``add_tags`` / ``remove_tags`` adjust). One transaction with its
        audit intent; the FTS row follows through the update trigger. A memory stored by ``remember`` gets the
        key of its new text, so remembering the new text again finds it and the old text is new again.
        A new text drops the standing instructions recorded from the old one. Returns the row after the change.
        Unknown id: :class:`NotFound`; a text another memory of the project already has (same kind):
        :class:`InvalidInput`."""
        before = self.get(memory_id)
        mid = int(before["id"])
        after = dict(before)
        if text is not None:
            if not isinstance(text, str) or not text.strip():
                raise InvalidInput("a memory needs non-empty text")
            after["text"] = text[:MAX_TEXT]
            after["flags"] = sorted(set(flags or ()))
        if kind is not None:
            if kind not in KINDS:
                raise InvalidInput(f"unknown kind {kind!r}", f"one of: {', '.join(KINDS)}")
            after["kind"] = kind
        if pinned is not None:
            after["pinned"] = bool(pinned)
        new_tags = set(normalize_tags(tags)) if tags is not None else set(before["tags"])
        new_tags |= set(normalize_tags(add_tags))
        new_tags -= set(normalize_tags(remove_tags))
        after["tags"] = normalize_tags(sorted(new_tags))
        key = before["dedupe_key"]
        if key and key.startswith("remember:") and (after["text"], after["kind"]) != (before["text"], before["kind"]):
            ident = f"{after['kind']}\x1f{after['role']}\x1f{after['text']}"
            key = "remember:" + hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32]
        after["dedupe_key"] = key
        change = Change(actor, "edit", mid, content_hash(audit_content(after)))

        def run(conn: sqlite3.Connection) -> list[int]:
            if key != before["dedupe_key"]:
                hit = conn.execute("SELECT id FROM memories WHERE project = ? AND dedupe_key = ? AND id != ?",
                                   (before["project"], key, mid)).fetchone()
                if hit:
                    raise InvalidInput(f"memory {hit[0]} already says this", f"forget {mid} or edit {hit[0]} instead")
            conn.execute("UPDATE memories SET text = ?, hash = ?, kind = ?, pinned = ?, flags = ?, dedupe_key = ?"
                         " WHERE id = ?", (after["text"], content_hash(after["text"]), after["kind"],
                                           1 if after["pinned"] else 0, ",".join(after["flags"]), key, mid))
            if after["tags"] != before["tags"]:
                conn.execute("DELETE FROM memory_tags WHERE memory_id = ?", (mid,))
                conn.executemany("INSERT INTO memory_tags (memory_id, tag) VALUES (?,?)",
                                 [(mid, t) for t in after["tags"]])
            if after["text"] != before["text"]:
                conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (mid,))
                if embedding is not None:
                    self._put_embedding(conn, mid, model, embedding)
                # The standing instructions said in the old words go with them, as forget's cascade takes them
                # (a rule kept after its words changed would go on being shown as the user's); the caller
                # detects the new text's rules (memory/ops.py edit).
                conn.execute("DELETE FROM instructions WHERE memory_id = ?", (mid,))
            return self._intents(conn, [change])

        self._report([change], self._write(run))
        return self.get(mid)

    def forget(self, memory_id: int | None = None, *, project: str | None = None, session: str | None = None,
               actor: str = "cli") -> list[dict[str, Any]]:
        """Delete memories by id, or all of a project, or all of a session (exactly one
        selector). Vectors go with them (FK cascade) and so do FTS rows (trigger).
        Tombstones keep their dedupe keys and hashes so transcript re-ingest does not
        resurrect them. Returns the removed rows. Unknown id: :class:`NotFound`."""
        chosen = [s for s in (memory_id, project, session) if s is not None]
        if len(chosen) != 1:
            raise InvalidInput("forget needs exactly one of: an id, a project, a session")
        args: tuple[Any, ...]
        if memory_id is not None:
            where, args = "id = ?", (int(memory_id),)
        elif project is not None:
            where, args = "project = ?", (project,)
        else:
            where, args = "session = ?", (session,)

        def run(conn: sqlite3.Connection) -> tuple[list[dict[str, Any]], list[Change], list[int]]:
            rows = [_row(r) for r in conn.execute(f"{_SELECT} WHERE {where}", args).fetchall()]
            now = time.time()
            tomb = []
            for r in rows:
                tomb.append((r["project"], "hash:" + r["hash"], now))
                if r["dedupe_key"]:
                    tomb.append((r["project"], r["dedupe_key"], now))
            conn.executemany("INSERT OR REPLACE INTO tombstones (project, key, created) VALUES (?,?,?)", tomb)
            conn.execute(f"DELETE FROM memories WHERE {where}", args)
            changes = [Change(actor, "forget", r["id"], None) for r in rows]
            return rows, changes, self._intents(conn, changes)

        removed, changes, intents = self._write(run)
        if memory_id is not None and not removed:
            raise NotFound(f"no memory with id {memory_id}", "`compass-hook recall QUERY` shows ids")
        self._report(changes, intents)
        return removed

    # ------------------------------------------------------------------ reads

    def get(self, memory_id: int) -> dict[str, Any]:
        mid = parse_id(memory_id)
        rows = self._read(f"{_SELECT} WHERE id = ?", (mid,))
        if not rows:
            raise NotFound(f"no memory with id {memory_id}", "`compass-hook recall QUERY` shows ids")
        return _row(rows[0])

    def get_many(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        """Rows for the ids that exist, in the order given (missing ids are left out)."""
        ids = [int(i) for i in ids]
        found: dict[int, dict[str, Any]] = {}
        for i in range(0, len(ids), _CHUNK):
            part = ids[i : i + _CHUNK]
            for r in self._read(f"{_SELECT} WHERE id IN ({','.join('?' * len(part))})", part):
                found[int(r[0])] = _row(r)
        return [found[i] for i in ids if i in found]

    def list(self, project: str | None = None, kinds: Sequence[str] | None = None, session: str | None = None,
             pinned: bool | None = None, limit: int | None = None, newest_first: bool = True,
             flags_exclude: Sequence[str] = (), since: float | None = None, until: float | None = None,
             tags: Sequence[str] = (), offset: int = 0) -> list[dict[str, Any]]:
        """Memories filtered by project (None: every project), kinds, session, pinned, created in
        [``since``, ``until``) and carrying every tag in ``tags``."""
        where, args = self._where(project, kinds, session, pinned, since, until, tags)
        for f in flags_exclude:
            where.append("(',' || flags || ',') NOT LIKE ?")
            args.append(f"%,{f},%")
        order = "DESC" if newest_first else "ASC"
        sql = f"{_SELECT} WHERE {' AND '.join(where) or '1'} ORDER BY created {order}, id {order}"
        if limit is not None or offset:
            sql += f" LIMIT {-1 if limit is None else int(limit)} OFFSET {max(0, int(offset))}"
        return [_row(r) for r in self._read(sql, args)]

    def count_where(self, project: str | None = None, kinds: Sequence[str] | None = None,
                    session: str | None = None, pinned: bool | None = None, since: float | None = None,
                    until: float | None = None, tags: Sequence[str] = ()) -> int:
        """How many memories :meth:`list` would give without a limit."""
        where, args = self._where(project, kinds, session, pinned, since, until, tags)
        return int(self._read(f"SELECT COUNT(*) FROM memories WHERE {' AND '.join(where) or '1'}", args)[0][0])

    def created_of(self, ids: Iterable[int]) -> dict[int, float]:
        """{id: created} for the ids that exist (time windows on search candidates)."""
        ids = [int(i) for i in ids]
        out: dict[int, float] = {}
        for i in range(0, len(ids), _CHUNK):
            part = ids[i : i + _CHUNK]
            for mid, created in self._read(f"SELECT id, created FROM memories WHERE id IN ({','.join('?' * len(part))})",
                                           part):
                out[int(mid)] = float(created)
        return out

    def tagged(self, ids: Iterable[int], tags: Sequence[str]) -> set[int]:
        """Which of ``ids`` carry every tag in ``tags``."""
        ids = [int(i) for i in ids]
        want = normalize_tags(tags)
        if not want:
            return set(ids)
        out: set[int] = set()
        for i in range(0, len(ids), _CHUNK):
            part = ids[i : i + _CHUNK]
            rows = self._read(f"SELECT memory_id FROM memory_tags WHERE memory_id IN ({','.join('?' * len(part))})"
                              f" AND tag IN ({','.join('?' * len(want))}) GROUP BY memory_id HAVING COUNT(*) = ?",
                              [*part, *want, len(want)])
            out.update(int(r[0]) for r in rows)
        return out

    @staticmethod
    def _where(project: str | None, kinds: Sequence[str] | None, session: str | None, pinned: bool | None,
               since: float | None = None, until: float | None = None,
               tags: Sequence[str] = ()) -> tuple[builtins.list[str], builtins.list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if since is not None:
            where.append("created >= ?")
            args.append(float(since))
        if until is not None:
            where.append("created < ?")
            args.append(float(until))
        for tag in normalize_tags(tags):
            where.append("EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = memories.id AND t.tag = ?)")
            args.append(tag)
        if project is not None:
            where.append("project = ?")
            args.append(project)
        if kinds:
            where.append(f"kind IN ({','.join('?' * len(kinds))})")
            args.extend(kinds)
        if session is not None:
            where.append("session = ?")
            args.append(session)
        if pinned is not None:
            where.append("pinned = ?")
            args.append(1 if pinned else 0)
        return where, args

    def iter_rows(self, project: str | None = None, batch: int = 1000, after_id: int = 0) -> Iterator[dict[str, Any]]:
        """Every memory (of a project) with id > ``after_id``, oldest id first, read in batches (export)."""
        last = int(after_id)
        while True:
            where, args = self._where(project, None, None, None)
            where.append("id > ?")
            args.append(last)
            rows = self._read(f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY id LIMIT {int(batch)}", args)
            if not rows:
                return
            for r in rows:
                yield _row(r)
            last = int(rows[-1][0])

    def count(self, project: str | None = None) -> int:
        where, args = self._where(project, None, None, None)
        return int(self._read(f"SELECT COUNT(*) FROM memories WHERE {' AND '.join(where) or '1'}", args)[0][0])

    def projects(self) -> builtins.list[tuple[str, int]]:
        return [(p, int(n)) for p, n in self._read("SELECT project, COUNT(*) FROM memories GROUP BY project ORDER BY 2 DESC")]

    def recent_ids(self, session: str, n: int) -> builtins.list[int]:
        """The ids of the last ``n`` memories of a session (newest first)."""
        rows = self._read("SELECT id FROM memories WHERE session = ? ORDER BY id DESC LIMIT ?", (session, int(n)))
        return [int(r[0]) for r in rows]

    def existing_keys(self, project: str, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are already stored or tombstoned in ``project`` (transcript idempotency)."""
        keys = list(dict.fromkeys(keys))
        out: set[str] = set()
        for i in range(0, len(keys), _CHUNK):
            part = keys[i : i + _CHUNK]
            marks = ",".join("?" * len(part))
            for (k,) in self._read(f"SELECT dedupe_key FROM memories WHERE project = ? AND dedupe_key IN ({marks})"
                                   f" UNION SELECT key FROM tombstones WHERE project = ? AND key IN ({marks})",
                                   [project, *part, project, *part]):
                out.add(k)
        return out

    def has_hash(self, project: str, text: str, session: str | None = None) -> bool:
        """Whether this exact text is stored in the project (optionally in this session)."""
        sql = "SELECT 1 FROM memories WHERE project = ? AND hash = ?"
        args: list[Any] = [project, content_hash(text)]
        if session is not None:
            sql += " AND session = ?"
            args.append(session)
        return bool(self._read(sql + " LIMIT 1", args))

    def common_terms(self, terms: Sequence[str], share: float = 0.5) -> set[str]:
        """The terms found in more than ``share`` of all rows. FTS5's BM25 clamps their IDF to ~0
        (log((N - n + 0.5) / (n + 0.5)) < 0), so they add nothing to any score but still make the search
        visit and score every row they occur in: dropping them first is rank-neutral and much cheaper
        on a store whose every row says "test" or "deploy". One doclist count per term."""
        conn = self._conn()
        try:
            n = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            if n < 20:  # tiny stores: nothing to save, and df noise would drop real words
                return set()
            out = set()
            for t in dict.fromkeys(terms):
                df = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                                  ('"' + t.replace('"', '""') + '"',)).fetchone()[0]
                if df > share * n:
                    out.add(t)
            return out
        except sqlite3.OperationalError:
            return set()  # the search itself reports a bad query

    def fts_search(self, match: str, project: str | None, limit: int,
                   weights: tuple[float, float] = (1.0, 0.7)) -> builtins.list[tuple[int, float]]:
        """FTS5 BM25 over (text, context): [(id, score)] best first, score = -bm25
        (higher is better). ``match`` is an FTS5 expression (build it with
        ``memory.text.fts_or_query``); ``project`` None searches every project."""
        if not match:
            return []
        sql = ("SELECT m.id, -bm25(memories_fts, ?, ?) AS s FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid"
               " WHERE memories_fts MATCH ?")
        args: list[Any] = [float(weights[0]), float(weights[1]), match]
        if project is not None:
            sql += " AND m.project = ?"
            args.append(project)
        sql += " ORDER BY s DESC LIMIT ?"
        args.append(int(limit))
        try:
            rows = self._conn().execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                raise InvalidInput(f"bad full-text query {match!r}: {exc}") from None
            raise StoreError(f"memory store search failed: {exc}") from None
        return [(int(i), float(s)) for i, s in rows]

    # ------------------------------------------------------------------ vectors

    def vectors_since(self, model: str, last_id: int = 0, project: str | None = None):
        """(ids int64 array, projects list, vectors float32 (n, dim)) for memories with
        id > last_id that have a vector from ``model``, in id order."""
        import numpy as np

        sql = ("SELECT e.memory_id, m.project, e.dim, e.vector FROM embeddings e JOIN memories m ON m.id = e.memory_id"
               " WHERE e.model = ? AND e.memory_id > ?")
        args: list[Any] = [model, int(last_id)]
        if project is not None:
            sql += " AND m.project = ?"
            args.append(project)
        rows = self._read(sql + " ORDER BY e.memory_id", args)
        if not rows:
            return np.zeros(0, dtype=np.int64), [], np.zeros((0, 0), dtype=np.float32)
        dim = int(rows[0][2])
        rows = [r for r in rows if int(r[2]) == dim]  # a dim change means a different model export: skip odd rows
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), dim).astype(np.float32)
        return ids, [r[1] for r in rows], vecs

    def missing_embeddings(self, model: str, limit: int = 10_000) -> builtins.list[tuple[int, str]]:
        """(id, text) of memories without a ``model`` vector (backfill after a model change)."""
        rows = self._read("SELECT m.id, m.text FROM memories m LEFT JOIN embeddings e ON e.memory_id = m.id AND"
                          " e.model = ? WHERE e.memory_id IS NULL ORDER BY m.id LIMIT ?", (model, int(limit)))
        return [(int(i), t) for i, t in rows]

    def stats(self) -> dict[str, Any]:
        size = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                size += os.path.getsize(str(self.path) + suffix)
            except OSError:
                pass
        n = int(self._read("SELECT COUNT(*) FROM memories")[0][0])
        e = int(self._read("SELECT COUNT(*) FROM embeddings")[0][0])
        return {"path": str(self.path), "memories": n, "embeddings": e, "bytes": size,
                "schema_version": self.schema_version, "projects": len(self.projects())}


def read_memories(paths: Any) -> tuple[dict[str, tuple[str, str]], str, list[dict[str, Any]]]:
    """({memory id: the audited forms of it, see :func:`.audited.forms`}, where they were read from, audit
    intents not cleared yet) in ``paths.db``: what ``audit verify`` checks. Raises :class:`StoreError` for a
    store that fails ``PRAGMA quick_check``.

    Only when the database file exists: verification never creates a store. (Opening an existing store may run
    its pending schema migrations; that changes no memory content.)"""
    db = Path(paths.db)
    if not db.exists():
        return {}, "no store yet", []
    problems = integrity_problems(db)
    if problems:
        raise StoreError(f"the memory store {db} is corrupt: {problems[0]}",
                         "restore a backup or move it aside (a new store is created); `compass-hook export` may "
                         "still read some rows first")
    store = Store(db)
    try:
        with store.snapshot():  # the rows and the intents as of one moment: the worker may be writing
            return {str(row["id"]): forms(row) for row in store.iter_rows()}, f"store {db}", store.pending_audit()
    finally:
        store.close()
