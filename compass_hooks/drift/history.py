"""Drift history: every alert with time, project, session and score, plus the
user's fp/tp feedback on it.

Kept in this module's own table on the shared SQLite file (``get_paths().db``)
with ``CREATE TABLE IF NOT EXISTS`` and short-lived WAL connections, so it does
not depend on the memory store's numbered migrations.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..errors import InvalidInput, NotFound, StoreError
from ..textrules.secrets import scrub_text

_SCHEMA = """
CREATE TABLE IF NOT EXISTS drift_alerts (
    id TEXT PRIMARY KEY,
    ts REAL NOT NULL,
    project TEXT,
    session TEXT,
    text TEXT NOT NULL,
    drift REAL NOT NULL,
    probability REAL NOT NULL,
    category TEXT,
    rule TEXT,
    anchors TEXT NOT NULL,          -- JSON list of the nearest anchors
    model TEXT,
    feedback TEXT CHECK (feedback IN ('fp', 'tp')),
    feedback_ts REAL
);
CREATE INDEX IF NOT EXISTS drift_alerts_ts ON drift_alerts(ts);
"""
MAX_TEXT = 4000
FEEDBACK = ("fp", "tp")


@contextmanager
def connect(db: Path) -> Iterator[sqlite3.Connection]:
    db.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(db), timeout=5.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {db}: {exc}") from None
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA secure_delete = ON")  # a forgotten alert's text is zeroed, not left in free pages
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(_SCHEMA)
        conn.row_factory = sqlite3.Row
        yield conn
    except sqlite3.Error as exc:
        raise StoreError(f"drift history in {db}: {exc}") from None
    finally:
        conn.close()


def new_alert_id() -> str:
    return "d-" + secrets.token_hex(4)


def record_alert(db: Path, result: dict[str, Any], project: str | None = None, session: str | None = None,
                 model: str | None = None) -> str:
    alert_id = new_alert_id()
    with connect(db) as conn:
        conn.execute(
            "INSERT INTO drift_alerts (id, ts, project, session, text, drift, probability, category, rule, anchors, model)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            # Redacted like a memory: the prompts that alert are exactly the ones with credentials in them.
            (alert_id, time.time(), project, session, scrub_text(result["text"], MAX_TEXT), float(result["drift"]),
             float(result["probability"]), result.get("category"), result.get("rule"),
             json.dumps(result.get("anchors", []), ensure_ascii=False), model),
        )
    return alert_id


def _row(r: sqlite3.Row) -> dict[str, Any]:
    d = dict(r)
    d["anchors"] = json.loads(d["anchors"] or "[]")
    return d


def get_alert(db: Path, alert_id: str) -> dict[str, Any]:
    with connect(db) as conn:
        row = conn.execute("SELECT * FROM drift_alerts WHERE id = ?", (alert_id,)).fetchone()
    if row is None:
        raise NotFound(f"no drift alert {alert_id!r}", "see `compass-hook drift history`")
    return _row(row)


def set_feedback(db: Path, alert_id: str, label: str) -> dict[str, Any]:
    if label not in FEEDBACK:
        raise InvalidInput(f"feedback must be fp or tp, not {label!r}")
    with connect(db) as conn:
        cur = conn.execute("UPDATE drift_alerts SET feedback = ?, feedback_ts = ? WHERE id = ?", (label, time.time(), alert_id))
        if cur.rowcount == 0:
            raise NotFound(f"no drift alert {alert_id!r}", "see `compass-hook drift history`")
    return get_alert(db, alert_id)


def list_alerts(db: Path, limit: int = 50, project: str | None = None, with_feedback: bool = False) -> list[dict[str, Any]]:
    sql, args = "SELECT * FROM drift_alerts", []
    where = []
    if project:
        where.append("project = ?")
        args.append(project)
    if with_feedback:
        where.append("feedback IS NOT NULL")
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY ts DESC, rowid DESC"
    if limit and limit > 0:
        sql += f" LIMIT {int(limit)}"
    if not db.exists():
        return []
    with connect(db) as conn:
        return [_row(r) for r in conn.execute(sql, args).fetchall()]
