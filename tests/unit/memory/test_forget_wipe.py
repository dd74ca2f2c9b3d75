"""``forget`` leaves no text behind: not in the drift alerts, the neighbours' FTS context, the FTS index, free
pages of the database file or the WAL (issue 14, finding 6). Checked by reading the files' bytes."""

from __future__ import annotations

import secrets
import sqlite3

import pytest

from compass_hooks.paths import get_paths
from compass_hooks.service import LocalService

CWD = "/tmp/proj-wipe"


def _word() -> str:
    # Lower case letters only: FTS5 stores the token as is (porter leaves a word like this alone), and its
    # last 8 letters are unique, so finding them in the bytes means the word is still there.
    return "zq" + "".join(secrets.choice("bcdfghjklmnpqrstvwxz") for _ in range(12))


def _prompt(svc, text: str, session: str = "s-wipe", n: int = 0) -> dict:
    return svc.call("hook", event="UserPromptSubmit", payload={
        "session_id": session, "cwd": CWD, "hook_event_name": "UserPromptSubmit", "prompt_id": f"p{n}",
        "prompt": text})


def _disk() -> bytes:
    db = get_paths().db
    return b"".join(p.read_bytes() for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def _tails(words: list[str]) -> list[bytes]:
    return [w[-8:].encode() for w in words]


@pytest.fixture
def svc():
    s = LocalService()
    yield s
    s.close()


def test_forget_project_wipes_memories_alerts_fts_pages_and_wal(svc):
    words = [_word() for _ in range(6)]
    key = "ghp_" + "R2d2C3po" * 4 + "Xy12"  # a credential: the prompt raises a drift alert
    for n, w in enumerate(words):
        _prompt(svc, f"rename the {w} helper and use {key} for the deploy", n=n)
    con = sqlite3.connect(get_paths().db)
    assert con.execute("SELECT count(*) FROM drift_alerts").fetchone()[0] == len(words)
    assert all(key not in t for (t,) in con.execute("SELECT text FROM drift_alerts"))  # stored redacted
    con.close()
    assert all(t in _disk() for t in _tails(words))  # the check below can see them

    out = svc.call("forget", project=CWD)
    assert out["removed"] >= len(words) and out["alerts_removed"] == len(words) and out["wiped"] is True
    con = sqlite3.connect(get_paths().db)
    assert con.execute("SELECT count(*) FROM drift_alerts").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (words[0],)).fetchone()[0] == 0
    con.close()
    left = [t for t in _tails(words) if t in _disk()]
    assert not left, f"forgotten words still on disk: {left}"


def test_forget_one_memory_rebuilds_its_neighbours_context(svc):
    before, doomed, after = _word(), _word(), _word()
    for n, w in enumerate((before, doomed, after)):
        _prompt(svc, f"please look at the {w} module next", n=n)
    con = sqlite3.connect(get_paths().db)
    (mid,) = con.execute("SELECT id FROM memories WHERE text LIKE ?", (f"%{doomed}%",)).fetchone()
    assert con.execute("SELECT count(*) FROM memories WHERE context LIKE ?", (f"%{doomed}%",)).fetchone()[0] == 2
    con.close()
    out = svc.call("forget", id=mid)
    assert out["contexts_rebuilt"] == 2
    con = sqlite3.connect(get_paths().db)
    assert con.execute("SELECT count(*) FROM memories WHERE context LIKE ?", (f"%{doomed}%",)).fetchone()[0] == 0
    contexts = [c for (c,) in con.execute("SELECT context FROM memories")]
    con.close()
    assert any(before in c for c in contexts) and any(after in c for c in contexts)  # the rest stays searchable
    assert doomed[-8:].encode() not in _disk()
