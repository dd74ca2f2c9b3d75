"""Read the memories that exist now, for ``audit verify``: {id: text}.

Read-only: the SQLite file is opened with ``mode=ro`` so verification can never
migrate, repair or otherwise change the state it is judging.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from ..errors import AuditError

# Columns that mark a row as forgotten (soft delete); such a row does not "exist".
_SOFT_DELETE = ("forgotten_at", "deleted_at", "forgotten", "deleted")


def read_memories(paths: Any) -> tuple[dict[str, str], str]:
    """({memory id: current text}, a short description of where they were read from)."""
    db = Path(paths.db)
    if not db.exists():
        return {}, "no store"
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        raise AuditError(f"cannot open the store {db} read-only: {exc}") from None
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(memories)")]
        if not cols:
            return {}, "store has no memories table"
        text_col = "text" if "text" in cols else "content"
        if "id" not in cols or text_col not in cols:
            raise AuditError(f"the store's memories table has no id/text columns (has: {', '.join(cols)})")
        where = " AND ".join(f"({c} IS NULL OR {c} = 0)" for c in _SOFT_DELETE if c in cols) or "1"
        rows = con.execute(f"SELECT id, {text_col} FROM memories WHERE {where}").fetchall()
    except sqlite3.Error as exc:
        raise AuditError(f"cannot read memories from {db}: {exc}") from None
    finally:
        con.close()
    return {str(i): t if isinstance(t, str) else str(t) for i, t in rows}, "sqlite (read-only)"
