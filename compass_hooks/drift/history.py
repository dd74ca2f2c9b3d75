"""Drift history: every alert with time, project, session and score, plus the
user's fp/tp feedback on it.

Kept in this module's own table in the memory store's SQLite file, written and
read through the Core's store (:meth:`Store.write` / :meth:`Store.read`: its
per-thread connections and its one writer path, retried when another process
holds the lock). The table is created with ``CREATE TABLE IF NOT EXISTS`` on
first use, so it does not depend on the memory store's numbered migrations.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import weakref
from typing import Any

from ..errors import InvalidInput, NotFound
from ..textrules.secrets import scrub_text

_DDL = (
    """CREATE TABLE IF NOT EXISTS drift_alerts (
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
)""",
    "CREATE INDEX IF NOT EXISTS drift_alerts_ts ON drift_alerts(ts)",
)
_COLUMNS = ("id", "ts", "project", "session", "text", "drift", "probability", "category", "rule", "anchors", "model",
            "feedback", "feedback_ts")
_SELECT = "SELECT " + ", ".join(_COLUMNS) + " FROM drift_alerts"
MAX_TEXT = 4000
FEEDBACK = ("fp", "tp")

_ready: weakref.WeakSet = weakref.WeakSet()  # stores whose file has the table (checked once per store)
_ready_lock = threading.Lock()


def _table(store: Any) -> Any:
    if store not in _ready:
        with _ready_lock:
            if store not in _ready:
                store.write(lambda conn: [conn.execute(sql) for sql in _DDL])
                _ready.add(store)
    return store


def new_alert_id() -> str:
    return "d-" + secrets.token_hex(4)


def record_alert(store: Any, result: dict[str, Any], project: str | None = None, session: str | None = None,
                 model: str | None = None) -> str:
    alert_id = new_alert_id()
    # Redacted like a memory: the prompts that alert are exactly the ones with credentials in them.
    row = (alert_id, time.time(), project, session, scrub_text(result["text"], MAX_TEXT), float(result["drift"]),
           float(result["probability"]), result.get("category"), result.get("rule"),
           json.dumps(result.get("anchors", []), ensure_ascii=False), model)
    _table(store).write(lambda conn: conn.execute(
        "INSERT INTO drift_alerts (id, ts, project, session, text, drift, probability, category, rule, anchors, model)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?)", row))
    return alert_id


def _row(r: tuple) -> dict[str, Any]:
    d = dict(zip(_COLUMNS, r))
    d["anchors"] = json.loads(d["anchors"] or "[]")
    return d


def get_alert(store: Any, alert_id: str) -> dict[str, Any]:
    rows = _table(store).read(f"{_SELECT} WHERE id = ?", (alert_id,))
    if not rows:
        raise NotFound(f"no drift alert {alert_id!r}", "see `compass-hook drift history`")
    return _row(rows[0])


def set_feedback(store: Any, alert_id: str, label: str) -> dict[str, Any]:
    if label not in FEEDBACK:
        raise InvalidInput(f"feedback must be fp or tp, not {label!r}")
    changed = _table(store).write(lambda conn: conn.execute(
        "UPDATE drift_alerts SET feedback = ?, feedback_ts = ? WHERE id = ?", (label, time.time(), alert_id)).rowcount)
    if changed == 0:
        raise NotFound(f"no drift alert {alert_id!r}", "see `compass-hook drift history`")
    return get_alert(store, alert_id)


def list_alerts(store: Any, limit: int = 50, project: str | None = None,
                with_feedback: bool = False) -> list[dict[str, Any]]:
    sql, args = _SELECT, []
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
    return [_row(r) for r in _table(store).read(sql, args)]
