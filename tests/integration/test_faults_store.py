"""Store faults: another writer holding the lock, a full disk (SQLite's own SQLITE_FULL), a full disk under the
audit log. Each gives a clear error and leaves nothing partial; what was acknowledged stays."""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time

import pytest

from compass_hooks.memory.store import read_memories
from compass_hooks.audit import memory_recorder
from compass_hooks.audit.verify import verify
from compass_hooks.errors import StoreError
from compass_hooks.memory import store as store_mod
from compass_hooks.memory.store import Store
from compass_hooks.paths import get_paths


@pytest.fixture
def store():
    paths = get_paths().ensure()
    s = Store(paths.db, on_change=memory_recorder(paths))
    s.add("acknowledged before the fault", project="p", kind="decision")
    yield s
    s.close()


def _locker():
    """Another process's connection holding SQLite's write lock."""
    con = sqlite3.connect(get_paths().db, isolation_level=None, timeout=0, check_same_thread=False)
    con.execute("BEGIN EXCLUSIVE")
    con.execute("INSERT INTO tombstones (project, key, created) VALUES ('x', 'held', 0)")
    return con


def test_locked_db_write_retries_then_succeeds(store):
    store._conn().execute("PRAGMA busy_timeout = 20")  # make each attempt short so the retry loop is what waits
    con = _locker()
    threading.Timer(0.4, con.rollback).start()
    t0 = time.monotonic()
    mid = store.add("written while another writer held the lock", project="p")
    waited = time.monotonic() - t0
    con.close()
    assert mid is not None and waited >= 0.3  # it really waited for the other writer
    assert [r["text"] for r in store.iter_rows()] == ["acknowledged before the fault",
                                                      "written while another writer held the lock"]
    assert verify(get_paths(), read_memories).ok


def test_locked_db_write_gives_up_with_a_clear_message(store, monkeypatch):
    monkeypatch.setattr(store_mod, "_RETRIES", 3)
    store._conn().execute("PRAGMA busy_timeout = 10")
    con = _locker()
    try:
        with pytest.raises(StoreError) as info:
            store.add("never written", project="p")
    finally:
        con.rollback()
        con.close()
    assert "locked" in str(info.value) and "retry" in str(info.value)
    assert [r["text"] for r in store.iter_rows()] == ["acknowledged before the fault"]
    assert verify(get_paths(), read_memories).ok  # nothing half-written, nothing logged for the failed write
    assert store.add("after the lock is gone", project="p") is not None


def test_full_disk_in_sqlite_rolls_back_cleanly(store):
    conn = store._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the file cannot grow: SQLITE_FULL on the next big write
    with pytest.raises(StoreError) as info:
        store.add("x" * 15_000, project="p")
    assert "full" in str(info.value)
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert [r["text"] for r in store.iter_rows()] == ["acknowledged before the fault"]
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert verify(get_paths(), read_memories).ok


def test_full_disk_under_the_audit_log_is_named_kept_pending_then_recorded(store, monkeypatch):
    """The store commits, then the audit append hits ENOSPC: the write is not reported as failed (it is stored;
    a caller told "failed" would retry and store it twice), the store says why it is not audited yet, the log
    has no torn line, `audit verify` shows it pending (not tampering), and once space is back it is logged."""
    real_write = os.write

    def enospc(fd, data):
        if fd_is_log(fd):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    log = get_paths().audit_log

    def fd_is_log(fd):
        try:
            return os.path.samefile(f"/proc/self/fd/{fd}", log)
        except OSError:
            return False

    before = log.read_bytes()
    with monkeypatch.context() as m:
        m.setattr(os, "write", enospc)
        mid = store.add("stored, but its audit entry could not be written yet", project="p")
        assert mid is not None and "disk full" in store.audit_error() and "No space left" in store.audit_error()
    assert log.read_bytes() == before
    report = verify(get_paths(), read_memories)
    assert report.ok and report.pending == 1, report.problems
    assert store.flush_audit(min_age=0)["recorded"] == 1
    report = verify(get_paths(), read_memories)
    assert report.ok and report.pending == 0 and report.entries == 2
    assert store.flush_audit(min_age=0)["recorded"] == 0  # nothing twice
