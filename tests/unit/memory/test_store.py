"""The SQLite memory store: schema, migrations, writes, forget, vectors, FTS, concurrency."""

from __future__ import annotations

import json
import sqlite3
import threading

import numpy as np
from pathlib import Path

import pytest

from compass_hooks.errors import InvalidInput, NotFound
from compass_hooks.memory import migrations
from compass_hooks.memory.store import GLOBAL, Store


def read_entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def audited(db) -> Store:
    """A store whose changes go to the audit log next to it, wired the way the Core wires it."""
    from types import SimpleNamespace

    from compass_hooks.audit import memory_recorder

    return Store(db, on_change=memory_recorder(SimpleNamespace(audit_log=Path(db).with_name("audit.log"))))


@pytest.fixture
def store(tmp_path):
    s = audited(tmp_path / "data" / "compass.db")
    yield s
    s.close()


def test_pragmas_and_schema(store):
    conn = store._conn()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert store.schema_version == migrations.LATEST
    cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
    for c in ("id", "project", "session", "role", "kind", "text", "context", "created", "source", "ref", "pinned",
              "flags", "hash"):
        assert c in cols
    assert (store.path.stat().st_mode & 0o077) == 0  # private file


def test_add_get_list_and_audit(store):
    a = store.add("never push to main", project="p1", session="s1", kind="constraint", source="hook", ref="ext-1")
    b = store.add("a note", project="p1", kind="note", pinned=True, meta={"x": 1})
    g = store.add("global thing")
    row = store.get(a)
    assert row["text"] == "never push to main" and row["ref"] == "ext-1" and row["kind"] == "constraint"
    assert store.get(b)["pinned"] is True and store.get(b)["meta"] == {"x": 1}
    assert store.get(g)["project"] == GLOBAL
    assert [r["id"] for r in store.list(project="p1", kinds=["constraint"])] == [a]
    assert store.count("p1") == 2 and store.count() == 3
    entries = read_entries(store.path.with_name("audit.log"))
    assert [(e["action"], e["object_id"], e["actor"]) for e in entries] == [
        ("add", str(a), "hook"), ("add", str(b), "cli"), ("add", str(g), "cli")]


def test_validation(store):
    with pytest.raises(InvalidInput):
        store.add("  ")
    with pytest.raises(InvalidInput):
        store.add("x", kind="rumour")
    with pytest.raises(InvalidInput):
        store.add("x", role="system")
    with pytest.raises(NotFound):
        store.get(999)


def test_dedupe_key_and_tombstone(store):
    first = store.add("hello", project="p", dedupe_key="uuid:1")
    assert store.add("hello again", project="p", dedupe_key="uuid:1") == first
    assert store.add("hello", project="other", dedupe_key="uuid:1") != first  # keys are per project
    store.forget(first)
    assert store.add("hello", project="p", dedupe_key="uuid:1") is None  # forgotten stays forgotten
    assert store.existing_keys("p", ["uuid:1", "uuid:2"]) == {"uuid:1"}


def test_forget_removes_vectors_and_fts(store):
    ids = [store.add(f"deploy the rocket {i}", project="p", session="s1" if i < 2 else "s2",
                     embedding=np.ones(4, np.float32) / 2, model="fake:4") for i in range(3)]
    assert len(store.fts_search('"rocket"', "p", 10)) == 3
    removed = store.forget(session="s1")
    assert sorted(r["id"] for r in removed) == ids[:2]
    assert [i for i, _ in store.fts_search('"rocket"', "p", 10)] == [ids[2]]
    got, projects, vecs = store.vectors_since("fake:4")
    assert got.tolist() == [ids[2]] and projects == ["p"] and vecs.shape == (1, 4)
    store.forget(project="p")
    assert store.count() == 0 and store.fts_search('"rocket"', None, 10) == []
    assert store._conn().execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 0
    actions = [e["action"] for e in read_entries(store.path.with_name("audit.log"))]
    assert actions.count("forget") == 3
    with pytest.raises(NotFound):
        store.forget(ids[0])
    with pytest.raises(InvalidInput):
        store.forget(1, project="p")


def test_fts_porter_stemming_and_context(store):
    a = store.add("we are deploying services", project="p")
    b = store.add("unrelated", project="p")
    store.set_contexts([(b, "deployed yesterday")])
    hits = dict(store.fts_search('"deploy"', "p", 10))
    assert a in hits and b in hits
    assert hits[a] > hits[b]  # text column outweighs context (1.0 vs 0.7)
    assert dict(store.fts_search('"deploy"', "p", 10, weights=(1.0, 0.0))).get(b, 0.0) == 0.0


def test_embeddings_round_trip(store):
    ids = [store.add(f"t{i}", project="p") for i in range(3)]
    mat = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    store.set_embeddings(ids, "m", mat)
    got, _, vecs = store.vectors_since("m", 0)
    assert got.tolist() == ids and np.array_equal(vecs, mat)
    assert store.vectors_since("m", ids[1])[0].tolist() == [ids[2]]
    assert store.missing_embeddings("m") == [] and len(store.missing_embeddings("other")) == 3


def test_migrate_v1_db_to_latest(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    assert migrations.migrate(conn, migrations.MIGRATIONS[:1]) == 1
    conn.execute("INSERT INTO memories (project, role, kind, text, created, source, hash) "
                 "VALUES ('p', 'user', 'note', 'from v1', 1.0, 'cli', 'h')")
    conn.close()
    s = audited(db)
    try:
        assert s.schema_version == migrations.LATEST
        assert s.list(project="p")[0]["text"] == "from v1"
        assert s._conn().execute("SELECT COUNT(*) FROM tombstones").fetchone()[0] == 0
    finally:
        s.close()


def test_migrate_v4_db_with_standing_instructions_to_latest(tmp_path):
    """A store at v4 (standing instructions, released before tags) keeps its rules and gets tags at v5."""
    db = tmp_path / "v4.db"
    conn = sqlite3.connect(db, isolation_level=None)
    assert migrations.migrate(conn, migrations.MIGRATIONS[:4]) == 4
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("INSERT INTO memories (project, role, kind, text, created, source, hash) "
                 "VALUES ('p', 'user', 'prompt', 'From now on, never use pandas.', 1.0, 'hook', 'h')")
    conn.execute("INSERT INTO instructions (project, scope, text, created, memory_id, hash) "
                 "VALUES ('p', 'project', 'From now on, never use pandas.', 1.0, 1, 'r')")
    conn.close()
    s = audited(db)
    try:
        assert s.schema_version == migrations.LATEST == 5
        s.edit(1, add_tags=["style"])
        assert s.get(1)["tags"] == ["style"]
        assert s.read("SELECT text, state FROM instructions") == [("From now on, never use pandas.", "active")]
        s.forget(1)
        assert s.read("SELECT COUNT(*) FROM instructions")[0][0] == 0
        assert s.read("SELECT COUNT(*) FROM memory_tags")[0][0] == 0
    finally:
        s.close()


def test_failing_migration_rolls_back(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    migrations.migrate(conn, migrations.MIGRATIONS[:1])

    def broken(c):
        c.execute("CREATE TABLE half_done (x)")
        c.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(sqlite3.OperationalError):
        migrations.migrate(conn, [migrations.MIGRATIONS[0], broken])
    assert migrations.current_version(conn) == 1
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None


def test_concurrent_writers_lose_nothing(tmp_path):
    """Threads on one Store and a second Store (another process's view) all land."""
    db = tmp_path / "c.db"
    s1, s2 = audited(db), audited(db)
    errors: list[BaseException] = []

    def work(store, tag):
        try:
            for i in range(25):
                store.add_many([{"text": f"{tag} {i} {j}", "project": "p"} for j in range(2)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s, f"w{n}")) for n, s in enumerate([s1, s1, s2, s2])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        assert s1.count("p") == 4 * 25 * 2
        assert len(read_entries(db.with_name("audit.log"))) == 200
    finally:
        s1.close()
        s2.close()


def test_common_terms_are_the_ones_bm25_ignores(store):
    store.add_many([{"text": f"deploy the service number {i}", "project": "p"} for i in range(30)]
                   + [{"text": "the redis deploy broke", "project": "p"}])
    assert store.common_terms(["deploy", "redis", "service"]) == {"deploy", "service"}
    full = store.fts_search('"deploy" OR "redis"', "p", 5)
    lean = store.fts_search('"redis"', "p", 5)
    assert full[0][0] == lean[0][0]  # the common word changed nothing about the best hit
    assert store.common_terms(['we"ird']) == set()  # quoted safely, no syntax error
