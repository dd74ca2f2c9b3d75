"""A consistent copy of the memory store: SQLite's online backup (``Connection.backup``), which copies every
page of one read snapshot while the worker, hooks and other processes keep writing. Stdlib only.

The orchestration (the audit log copied under its writers' lock, the manifest, verification before a restore)
is ``compass-hook backup`` / ``restore`` (compass_hooks/cli/cmd_backup.py): the store knows nothing of the audit.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .store import describe_error, integrity_problems


def snapshot(db: Path, dest: Path) -> dict[str, Any]:
    """Copy the store at ``db`` into the new file ``dest`` (0600) in one step (one read snapshot); checks the
    copy with ``PRAGMA quick_check``. -> ``{"memories", "schema_version", "bytes"}``."""
    if not db.is_file():
        raise StoreError(f"no memory store at {db}", "nothing to back up yet")
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.close(fd)
    src = dst = None
    try:
        src = sqlite3.connect(str(db), timeout=10.0)
        src.execute("PRAGMA busy_timeout = 10000")
        dst = sqlite3.connect(str(dest))
        src.backup(dst)  # pages=-1: every page in one step, under one read lock: a consistent snapshot
        dst.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
        memories = int(dst.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        version = int(dst.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0)
    except sqlite3.Error as exc:
        message, hint = describe_error(exc, db)
        raise StoreError(f"backup of the memory store failed: {message}", hint) from None
    finally:
        for conn in (dst, src):
            if conn is not None:
                conn.close()
    problems = integrity_problems(dest)
    if problems:
        raise StoreError(f"the backup copy of {db} fails its integrity check: {problems[0]}",
                         "`compass-hook doctor` checks the store itself")
    return {"memories": memories, "schema_version": version, "bytes": dest.stat().st_size}


def count_memories(db: Path) -> int | None:
    """How many memories the store at ``db`` holds; None when there is no readable store."""
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None
