"""Numbered schema migrations of the memory store.

Each migration runs in one transaction together with the bump of
``schema_version``; a failure rolls both back, so a database is always at a
whole version. Migrations are append-only: never edit a released one, add the
next number. Stdlib only.

Schema (v5):

- ``memories``: ``id`` INTEGER PRIMARY KEY AUTOINCREMENT (ids are never reused,
  so the dense index can catch up by "id > last seen"); ``project`` (project id,
  ``__global__`` for the global scope); ``session``; ``role`` user/assistant/tool;
  ``kind`` prompt/constraint/decision/correction/note/lesson; ``text`` (redacted);
  ``context`` (free for the retrieval engine: neighbouring turns, dates; indexed
  by FTS5 as a second column); ``created`` unix seconds (float); ``source``
  hook/cli/mcp/import; ``ref`` caller's external id, verbatim; ``pinned`` 0/1;
  ``flags`` comma-separated (``suspicious-instruction``, ``redacted``);
  ``hash`` sha256 of ``text``; ``dedupe_key`` (e.g. ``prompt:<session>:<id>``,
  ``uuid:<uuid>``) unique per project; ``meta`` JSON text.
- ``embeddings(memory_id, model, dim, vector)``: float32 little-endian BLOB,
  one row per memory and model; deleted with the memory (FK cascade).
- ``memories_fts``: FTS5 external-content table over (text, context) with the
  ``porter unicode61`` tokenizer, kept in sync by triggers (forget removes rows).
- ``tombstones(project, key)`` (v2): dedupe keys and content hashes of forgotten
  memories, so re-reading a transcript does not bring a forgotten turn back.
- ``audit_pending`` (v3): one intent per memory change (actor, action, id, the
  content's SHA-256), committed with the change and cleared once the audit log
  has its entry; what a crash leaves between the two is appended later
  (``Store.flush_audit``) and shown as pending by ``audit verify``.
- ``instructions`` (v4): standing instructions the user set (:mod:`.standing`): the rule ``text`` whole, its
  ``scope`` (session / project / global; ``project`` is ``__global__`` for global ones, ``session`` set only
  for session ones), its normalised ``subjects`` (``|a|b|``), ``state`` active / revoked / replaced with when
  and by which memory, and ``memory_id``, the prompt it was said in (deleted with it: forgetting the prompt
  forgets the rule; ``capture_key``: the prompt's dedupe key, while the rule is recorded at once and the prompt
  still waits in the capture spool, linked to ``memory_id`` when it is stored). ``inherited_from``: the rule of an earlier session id this row carries on (a compaction
  that gave the session a new id). Indexed for the one query every prompt makes.
- ``session_handoffs`` (v4): (project, session, when) of each PreCompact, so a SessionStart(compact) shortly
  after with a new session id knows which session it continues.
- ``memory_tags(memory_id, tag)`` (v5): the user's labels for a memory (``remember --tag``, ``edit``,
  ``list --tag``); deleted with the memory. Labels for finding memories, never injected, so not audited
  content (memory/audited.py).
"""

from __future__ import annotations

import sqlite3
from typing import Callable, Sequence

Migration = Callable[[sqlite3.Connection], None]

_V1 = """
CREATE TABLE memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    session TEXT,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    kind TEXT NOT NULL CHECK (kind IN ('prompt', 'constraint', 'decision', 'correction', 'note', 'lesson')),
    text TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('hook', 'cli', 'mcp', 'import')),
    ref TEXT,
    pinned INTEGER NOT NULL DEFAULT 0,
    flags TEXT NOT NULL DEFAULT '',
    hash TEXT NOT NULL,
    dedupe_key TEXT,
    meta TEXT
);
CREATE UNIQUE INDEX memories_dedupe ON memories(project, dedupe_key) WHERE dedupe_key IS NOT NULL;
CREATE INDEX memories_project_kind ON memories(project, kind, created);
CREATE INDEX memories_session ON memories(session, id);
CREATE INDEX memories_hash ON memories(project, hash);

CREATE TABLE embeddings (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (memory_id, model)
);
CREATE INDEX embeddings_model ON embeddings(model, memory_id);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, context, content='memories', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, context) VALUES (new.id, new.text, new.context);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, context) VALUES ('delete', old.id, old.text, old.context);
END;
CREATE TRIGGER memories_au AFTER UPDATE OF text, context ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, context) VALUES ('delete', old.id, old.text, old.context);
    INSERT INTO memories_fts(rowid, text, context) VALUES (new.id, new.text, new.context);
END;
"""

_V2 = """
CREATE TABLE tombstones (
    project TEXT NOT NULL,
    key TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (project, key)
) WITHOUT ROWID;
"""




def _script(sql: str) -> Migration:
    def run(conn: sqlite3.Connection) -> None:
        # executescript() would COMMIT first; run statement by statement instead so
        # the migration stays inside the caller's transaction.
        for stmt in _split(sql):
            conn.execute(stmt)

    return run


def _split(sql: str) -> list[str]:
    """Split a script into statements (triggers contain ';' inside BEGIN..END)."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


_V3 = """
CREATE TABLE audit_pending (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    memory_id INTEGER NOT NULL,
    content_sha256 TEXT
);
"""

_V4 = """
CREATE TABLE instructions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT NOT NULL,
    session TEXT,
    scope TEXT NOT NULL CHECK (scope IN ('session', 'project', 'global')),
    text TEXT NOT NULL,
    subjects TEXT NOT NULL DEFAULT '',
    lang TEXT,
    prob REAL,
    created REAL NOT NULL,
    origin TEXT,
    memory_id INTEGER REFERENCES memories(id) ON DELETE CASCADE,
    state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'revoked', 'replaced')),
    retired REAL,
    retired_by INTEGER REFERENCES memories(id) ON DELETE SET NULL,
    inherited_from INTEGER,
    hash TEXT NOT NULL,
    capture_key TEXT
);
CREATE INDEX instructions_active ON instructions(state, project, session);
CREATE INDEX instructions_memory ON instructions(memory_id);
CREATE INDEX instructions_capture ON instructions(capture_key) WHERE memory_id IS NULL;
CREATE TABLE session_handoffs (
    project TEXT NOT NULL,
    session TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (project, session)
) WITHOUT ROWID;
"""

_V5 = """
CREATE TABLE memory_tags (
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (memory_id, tag)
) WITHOUT ROWID;
CREATE INDEX memory_tags_tag ON memory_tags(tag, memory_id);
"""

# Index i holds the migration to version i + 1.
MIGRATIONS: list[Migration] = [_script(_V1), _script(_V2), _script(_V3), _script(_V4), _script(_V5)]
LATEST = len(MIGRATIONS)


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the database to the latest version; returns it. ``conn`` must be in
    autocommit mode (isolation_level=None) so we control the transactions."""
    version = current_version(conn)
    if version > len(migrations):
        from ..errors import StoreError

        raise StoreError(
            f"the memory store is at schema version {version}, newer than this compass-hooks ({len(migrations)})",
            "upgrade compass-hooks",
        )
    for target in range(version + 1, len(migrations) + 1):
        # IMMEDIATE: take the write lock first, then re-check, so two processes
        # opening a fresh file at once do not both run migration 1.
        conn.execute("BEGIN IMMEDIATE")
        try:
            if current_version(conn) >= target:
                conn.execute("ROLLBACK")
                continue
            migrations[target - 1](conn)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (target,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return current_version(conn)
