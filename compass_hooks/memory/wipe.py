"""What ``forget`` does after the rows are deleted, so that forgotten text is gone from the disk, not only from
query results.

Deleting a row leaves its text in several places SQLite and we keep on our own:

- **derived rows**: a drift alert keeps the prompt that raised it (table ``drift_alerts``, same file), and the
  neighbouring memories of the same session carry up to 300 characters of it in their FTS ``context``
  column (:func:`.recall.build_contexts`). Alerts of a forgotten project or session go, and so do alerts
  whose text holds a forgotten memory's text; the neighbours' contexts are rebuilt from what remains.
- **the FTS index**: an external-content FTS5 table records a deletion as a new segment holding the deleted
  tokens; the old segment keeps them too until segments are merged. ``'optimize'`` merges every segment
  into one, dropping both.
- **free pages**: deleted cells and pages keep their bytes unless ``secure_delete`` is on (the store and the
  drift history set it on every connection), in which case SQLite overwrites them with zeros.
- **the WAL**: the frames that inserted the text stay in ``compass.db-wal`` until a checkpoint copies the
  new pages into the database and the log is truncated (``wal_checkpoint(TRUNCATE)``).

Embeddings go with their memory (foreign key cascade) and the vector index is told by ``recall.invalidate``.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any, Iterable

from ..logs import get_logger

if TYPE_CHECKING:  # pragma: no cover
    from .corelike import CoreLike

log = get_logger("memory")

_CHECKPOINT_TRIES = 20


def _fold(text: str | None) -> str:
    return " ".join(str(text or "").split())


def forget_alerts(conn: sqlite3.Connection, removed: list[dict[str, Any]], project: str | None = None,
                  session: str | None = None) -> int:
    """Delete the drift alerts that hold forgotten text; returns how many. ``project``/``session``: the whole
    project or session was forgotten, so every alert of it goes."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drift_alerts'").fetchone():
        return 0
    gone = 0
    if project is not None:
        gone += conn.execute("DELETE FROM drift_alerts WHERE project = ?", (project,)).rowcount
    if session is not None:
        gone += conn.execute("DELETE FROM drift_alerts WHERE session = ?", (session,)).rowcount
    by_scope: dict[tuple[Any, Any], list[str]] = {}
    for r in removed:
        by_scope.setdefault((r.get("project"), r.get("session")), []).append(_fold(r.get("text")))
    for (proj, sess), texts in by_scope.items():
        rows = conn.execute("SELECT id, text FROM drift_alerts WHERE project IS ? AND session IS ?", (proj, sess))
        doomed = [aid for aid, text in rows.fetchall() if any(t and t in _fold(text) for t in texts)]
        for aid in doomed:
            gone += conn.execute("DELETE FROM drift_alerts WHERE id = ?", (aid,)).rowcount
    return gone


def _connect(path: Any) -> sqlite3.Connection:
    # Our own short-lived connection: the wipe needs secure_delete, an FTS command and a checkpoint, none of
    # which the store's API offers; SQLite's own locking orders it with the store's writers.
    conn = sqlite3.connect(str(path), timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA secure_delete = ON")
    return conn


def _refresh_contexts(store: Any, conn: sqlite3.Connection, removed: list[dict[str, Any]]) -> int:
    """Rebuild the FTS ``context`` of the memories that sat next to forgotten ones (same project and session),
    and blank the context of any other row that still quotes a forgotten text (an imported context)."""
    from .recall import build_contexts

    pairs: list[tuple[int, str]] = []
    scopes = {(r["project"], r["session"]) for r in removed if r.get("session") is not None}
    for project, session in scopes:
        rows = sorted(store.list(project=project, session=session, newest_first=False),
                      key=lambda r: (r["created"], r["id"]))
        ctx = build_contexts(rows)
        pairs += [(int(r["id"]), ctx[int(r["id"])]) for r in rows if ctx[int(r["id"])] != r.get("context")]
    done = {mid for mid, _ in pairs}
    snippets = [str(r.get("text") or "")[:200] for r in removed if len(str(r.get("text") or "")) >= 12]
    for snippet in snippets:
        for (mid,) in conn.execute("SELECT id FROM memories WHERE instr(context, ?) > 0", (snippet,)).fetchall():
            if int(mid) not in done:
                pairs.append((int(mid), ""))
                done.add(int(mid))
    if pairs:
        store.set_contexts(pairs)
    return len(pairs)


def _optimize_and_checkpoint(conn: sqlite3.Connection) -> bool:
    """Merge the FTS segments, then copy the WAL into the database and truncate it. True when the WAL was
    emptied (a reader holding an old snapshot can delay that; we retry briefly, then report)."""
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
    for attempt in range(_CHECKPOINT_TRIES):
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return True
        time.sleep(min(0.2, 0.01 * (2 ** attempt)))
    return False


def after_forget(core: CoreLike, removed: Iterable[dict[str, Any]], project: str | None = None,
                 session: str | None = None) -> dict[str, Any]:
    """Wipe what the forgotten rows leave behind (see the module docstring). Returns what was done; a failure
    here is logged and reported (``wiped: False``), never raised: the memories themselves are already gone."""
    removed = list(removed)
    out: dict[str, Any] = {"alerts_removed": 0, "contexts_rebuilt": 0, "wiped": False}
    if not removed and project is None and session is None:
        return out
    store = core.store
    try:
        conn = _connect(store.path)
        try:
            out["contexts_rebuilt"] = _refresh_contexts(store, conn, removed)
            conn.execute("BEGIN IMMEDIATE")
            try:
                out["alerts_removed"] = forget_alerts(conn, removed, project, session)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            out["wiped"] = _optimize_and_checkpoint(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        log.warning("forget: could not wipe what the forgotten memories left behind: %s", exc)
        return out
    if not out["wiped"]:
        log.warning("forget: the WAL still holds pages of forgotten memories (a reader kept it busy); "
                    "the next forget or checkpoint removes them")
    return out
