"""Read the memories that exist now, for ``audit verify``: {str(id): text}.

Through the store's public API (:meth:`Store.iter_rows`), and only when the
database file exists: verification never creates a store. (Opening an existing
store may run its pending schema migrations; that changes no memory content.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_memories(paths: Any) -> tuple[dict[str, str], str]:
    """({memory id: current text}, where they were read from)."""
    db = Path(paths.db)
    if not db.exists():
        return {}, "no store yet"
    from ..memory.store import Store

    store = Store(db, audit_log=paths.audit_log)
    try:
        return {str(row["id"]): row["text"] for row in store.iter_rows()}, f"store {db}"
    finally:
        store.close()
