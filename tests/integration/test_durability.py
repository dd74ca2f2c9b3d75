"""Durability (issue 14): captures durable before the hook answers; a crash between a memory's commit and its
audit entry leaves it pending, never a permanent 'tampered'; `audit repair` for genuine gaps; failures counted,
named and told once; a closed pipe keeps the exit status. In process, fake embedder; the real worker and the
real launcher are in test_durability_load.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compass_hooks import spool
from compass_hooks.audit.verify import walk_chain
from compass_hooks.audit.verify import verify
from compass_hooks.cli import cli
from compass_hooks.core import Core
from compass_hooks.memory import api, queue
from compass_hooks.memory.store import read_memories
from compass_hooks.paths import get_paths
import testdirs

ROOT = testdirs.ROOT


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def core():
    c = Core()
    yield c
    c.close()


def ups(repo, prompt, prompt_id, session="s1"):
    return {"session_id": session, "cwd": str(repo), "prompt": prompt, "prompt_id": prompt_id}


def prompt_of(core, payload):
    """The prompt context the UserPromptSubmit handler prepares (once) and hands to capture."""
    from compass_hooks.worker.hooks import events, handlers

    return handlers.prepare_prompt(core, events.parse("UserPromptSubmit", payload), mem=api)


class Worker:
    """What the worker wires into core.state, recorded: deferred rounds run when the test says."""

    def __init__(self, core):
        self.jobs, self.told, self.cleared = [], [], []
        core.state["worker.defer"] = lambda fn, activity=True: self.jobs.append(fn)
        core.state["notices.tell"] = lambda topic, reason, text: self.told.append((topic, reason, text))
        core.state["notices.clear"] = self.cleared.append

    def run(self):
        while self.jobs:
            self.jobs.pop(0)()


# --------------------------------------------------------------------------- the capture queue


def waiting():
    return spool.count(get_paths().data)


def test_prompt_is_on_disk_before_the_answer_and_stored_once_after_it(core, repo):
    w = Worker(core)
    assert api.capture_prompt(core, prompt_of(core, ups(repo, "keep retries idempotent in fetch_user", "p1"))) == []
    assert waiting() == 1 and core.store.count() == 0
    api.capture_prompt(core, prompt_of(core, ups(repo, "keep retries idempotent in fetch_user", "p1")))  # a retry: same prompt id
    assert len(w.jobs) == 1  # one round waits, however many captures
    w.run()
    (m,) = core.store.list()
    assert m["text"] == "keep retries idempotent in fetch_user" and m["source"] == "hook"
    assert waiting() == 0
    assert verify(get_paths(), read_memories).ok


def test_without_a_worker_a_capture_is_stored_at_once(core, repo):
    ids = api.capture_prompt(core, prompt_of(core, ups(repo, "stored right away", "p1")))
    assert len(ids) == 1 and waiting() == 0 and core.store.get(ids[0])["text"] == "stored right away"


def test_captured_time_is_the_hooks_not_the_processings(core, repo):
    Worker(core)
    api.capture_prompt(core, prompt_of(core, ups(repo, "first", "p1")))
    (path,) = spool.pending(get_paths().data)
    when = spool.read(path)["time"]
    queue.process(core)
    assert core.store.list()[0]["created"] == pytest.approx(when)


def test_processing_waits_for_the_model_and_stops_at_the_stop_deadline(core, repo):
    import time

    w = Worker(core)
    ready = [False]
    core.state["worker.ready"] = lambda: ready[0]
    for i in range(3):
        api.capture_prompt(core, prompt_of(core, ups(repo, f"prompt number {i}", f"p{i}")))
    w.run()
    assert core.store.count() == 0 and waiting() == 3  # no vector-less memories
    ready[0] = True
    core.state["worker.stop_at"] = time.monotonic() - 1  # a stopping worker past its drain budget
    queue.run_round(core)
    assert core.store.count() == 0  # left for the next worker
    core.state.pop("worker.stop_at")
    queue.run_round(core)
    assert core.store.count() == 3 and waiting() == 0


def test_an_entry_that_keeps_failing_is_set_aside_without_blocking_the_rest(core, repo, monkeypatch):
    from compass_hooks.memory import capture

    Worker(core)
    for i in range(3):
        api.capture_prompt(core, prompt_of(core, ups(repo, f"prompt number {i}", f"p{i}")))
    real = capture.store_items

    def picky(c, items, **kw):
        if any(it["text"] == "prompt number 0" for it in items):
            raise RuntimeError("a bug that only this capture triggers")
        return real(c, items, **kw)

    monkeypatch.setattr(capture, "store_items", picky)
    for _ in range(queue.MAX_ATTEMPTS):
        queue.process(core)
    assert sorted(m["text"] for m in core.store.list()) == ["prompt number 1", "prompt number 2"]
    assert waiting() == 0 and spool.bad_count(get_paths().data) == 1
    health = queue.read_health(get_paths())
    assert "only this capture" in health["last_error"] and health["failures"] == queue.MAX_ATTEMPTS


def test_a_hook_that_failed_open_spools_the_prompt_redacted_and_the_worker_stores_it(core, repo):
    from compass_hooks.hookclient import runner

    w = Worker(core)
    secret = "ghp_" + "Qq1Ww2Ee" * 4 + "Rr34"
    s = {"data": str(get_paths().data)}
    runner._spool(s, "UserPromptSubmit", ups(repo, f"deploy with {secret} <private>my salary</private>", "p9"))
    runner._spool(s, "PreToolUse", {"tool_name": "Bash"})  # nothing to keep
    (path,) = Path(spool.spool_dir(get_paths().data)).glob("*.json")
    on_disk = path.read_text()
    assert secret not in on_disk and "salary" not in on_disk and (path.stat().st_mode & 0o777) == 0o600
    Path(spool.spool_dir(get_paths().data), "00-garbage.json").write_text("{not json")
    queue.tick(core)
    w.run()
    (m,) = core.store.list()
    assert secret not in m["text"] and "redacted" in m["flags"] and m["source"] == "hook"
    assert spool.count(get_paths().data) == 0  # stored, and the unreadable one set aside
    assert list(Path(spool.spool_dir(get_paths().data)).glob("*.bad"))


def test_an_opted_out_project_is_not_even_spooled(core, repo):
    from compass_hooks.hookclient import runner

    (repo / ".compass-ignore").write_text("")
    (repo / "sub").mkdir()
    runner._spool({"data": str(get_paths().data)}, "UserPromptSubmit", ups(repo / "sub", "private project", "p1"))
    assert spool.count(get_paths().data) == 0


# --------------------------------------------------------------------------- failures, visibly


@pytest.mark.slow
def test_disk_full_is_named_the_capture_kept_and_the_user_told_once(core, repo):
    w = Worker(core)
    for i in range(3):
        api.capture_prompt(core, prompt_of(core, ups(repo, f"long prompt {i} " + "x" * 15_000, f"p{i}")))
    conn = core.store._conn()  # the thread that processes: this one
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL on the next write that needs a page
    for _ in range(3):
        queue._state(core).retry_at = 0  # the backoff would otherwise hold the next rounds
        w.jobs.append(lambda: queue.run_round(core))
        w.run()
    assert [t[:2] for t in w.told] == [("capture", "disk-full")]  # once, however many failures
    assert "disk is full" in w.told[0][2] and "kept on disk" in w.told[0][2]
    health = queue.read_health(get_paths())
    assert health["failures"] >= 3 and health["failing"] and "disk full" in health["last_error"]
    assert "cannot rollback" not in health["last_error"]
    assert waiting() == 3 and core.store.count() == 0
    conn.execute("PRAGMA max_page_count = 1073741823")  # space again
    queue._state(core).retry_at = 0
    queue.run_round(core)
    assert core.store.count() == 3 and waiting() == 0
    assert w.cleared == ["capture"] and not queue.read_health(get_paths())["failing"]


def test_without_a_worker_a_failing_store_spools_the_capture(core, repo):
    core.state["notices.tell"] = lambda *a: None
    core.store._conn().execute("PRAGMA query_only = 1")  # SQLITE_READONLY (file modes do not stop root)
    assert api.capture_prompt(core, prompt_of(core, ups(repo, "kept somewhere", "p1"))) == []
    assert waiting() == 1 and queue.read_health(get_paths())["kind"] == "read-only"


def test_read_only_store_is_named(core, repo):
    w = Worker(core)
    api.capture_prompt(core, prompt_of(core, ups(repo, "kept somewhere", "p1")))
    core.store._conn().execute("PRAGMA query_only = 1")
    w.run()
    assert w.told and w.told[0][1] == "read-only" and "read-only" in w.told[0][2]
    assert waiting() == 1


def test_a_capture_that_cannot_even_be_spooled_is_counted_lost_and_told(core, repo, monkeypatch):
    import errno

    w = Worker(core)

    def enospc(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spool, "write", enospc)
    api.capture_prompt(core, prompt_of(core, ups(repo, "nowhere to go", "p1")))
    assert w.told[0][1] == "disk-full" and "was not stored" in w.told[0][2]
    assert queue.read_health(get_paths())["lost"] == 1


def test_doctor_and_verify_report_a_corrupt_store(cli_runner, core, repo):
    core.store.add("a memory", project="p")
    core.close()
    db = get_paths().db
    with open(db, "r+b") as fh:  # the pages after the header: the schema and the rows
        fh.seek(4096)
        fh.write(b"garbage!" * 1024)
    r = cli_runner.invoke(cli, ["doctor", "--json"])
    report = json.loads(r.output)
    assert r.exit_code == 0 and report["store"]["integrity"].startswith("CORRUPT") and not report["ok"]
    assert any("corrupt" in a for a in report["advice"])
    r = cli_runner.invoke(cli, ["audit", "verify"])
    assert r.exit_code == 1 and "corrupt" in r.output


def test_audit_verify_keeps_failed_when_the_reader_closes_the_pipe(cli_runner, core, monkeypatch):
    """`audit verify | head -1`: the second line hits a closed pipe; the exit status is still the result."""
    from compass_hooks.cli import cmd_audit

    core.store.add("audited", project="p")
    con = sqlite3.connect(get_paths().db)
    with con:
        con.execute("UPDATE memories SET text = 'tampered'")
    con.close()
    real, lines = cmd_audit.click.echo, []

    def head_one(message=None, *a, **k):
        if lines:
            raise BrokenPipeError(32, "Broken pipe")
        lines.append(message)
        real(message, *a, **k)

    monkeypatch.setattr(cmd_audit.click, "echo", head_one)
    r = cli_runner.invoke(cli, ["audit", "verify"])
    assert r.exit_code == 1 and "FAILED" in r.output


@pytest.mark.slow
def test_audit_verify_piped_into_head_as_a_shell_pipeline(core):
    core.store.add("audited", project="p")
    for i in range(200):  # many problems: many lines, so the writer meets the closed pipe
        con = sqlite3.connect(get_paths().db)
        with con:
            con.execute("INSERT INTO memories (project, role, kind, text, created, source, hash) "
                        "VALUES ('p', 'user', 'note', ?, 0, 'cli', 'x')", (f"slipped in {i}",))
        con.close()
    env = {k: v for k, v in os.environ.items()}
    cmd = f"{sys.executable} -m compass_hooks audit verify | head -1"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, env=env, timeout=60)
    assert proc.returncode == 1 and proc.stdout.startswith(b"audit FAILED"), proc
    assert b"Traceback" not in proc.stderr and b"Exception ignored" not in proc.stderr


# --------------------------------------------------------------------------- crash between commit and audit


CRASH = textwrap.dedent("""
    import os, sys
    from compass_hooks.audit import memory_recorder
    from compass_hooks.memory.store import Store
    from compass_hooks.paths import get_paths

    paths = get_paths().ensure()
    record = memory_recorder(paths)
    when = sys.argv[1]

    def on_change(changes):
        if when == "before":
            os._exit(9)  # killed after the SQLite commit, before the audit append
        record(changes)
        os._exit(9)  # killed after the append, before the intent is cleared

    Store(paths.db, on_change=on_change).add("written just before the crash", project="p")
""")


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_crash_between_commit_and_audit_is_pending_then_recorded_once(when, core):
    proc = subprocess.run([sys.executable, "-c", CRASH, when], capture_output=True, env=dict(os.environ),
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 9, proc.stderr.decode()
    report = verify(get_paths(), read_memories)
    assert report.ok, report.problems  # not "exists but the log has no add entry"
    assert report.pending == (1 if when == "before" else 0)
    assert core.store.flush_audit(min_age=0)["error"] is None  # what the next worker (or audit repair) does
    report = verify(get_paths(), read_memories)
    assert report.ok and report.pending == 0 and report.entries == 1  # once, never twice
    assert core.store.pending_audit_count() == 0


def test_a_stale_intent_is_written_before_a_later_change_to_the_same_memory(core):
    """Order: a crashed writer's add must reach the log before a later forget of that memory."""
    from compass_hooks.errors import AuditError
    from compass_hooks.memory.store import Store

    def unwritable(changes):
        raise AuditError("log unwritable")

    bare = Store(get_paths().db, on_change=unwritable)
    mid = bare.add("added while the log was unwritable", project="p")
    bare.close()
    con = sqlite3.connect(get_paths().db)
    with con:
        con.execute("UPDATE audit_pending SET created = created - 60")  # a crashed writer's, not a live one's
    con.close()
    core.store.forget(mid)
    actions = [(e["action"], e["object_id"]) for e in walk_chain(get_paths().audit_log)[0]]
    assert actions == [("add", str(mid)), ("forget", str(mid))]
    assert verify(get_paths(), read_memories).ok


# --------------------------------------------------------------------------- audit repair


def test_audit_repair_help_dry_run_and_repair(cli_runner, core):
    from compass_hooks.memory.store import Store

    r = cli_runner.invoke(cli, ["audit", "repair", "--help"])
    assert r.exit_code == 0 and "--dry-run" in r.output and "--accept-modified" in r.output
    kept = core.store.add("logged and kept", project="p")
    gone = core.store.add("logged, then deleted without a forget", project="p")
    unaudited = Store(get_paths().db)  # an old version's store write that never reached the log
    orphan = unaudited.add("stored by a writer killed before it logged", project="p")
    unaudited.close()
    con = sqlite3.connect(get_paths().db)
    with con:
        con.execute("DELETE FROM memories WHERE id = ?", (gone,))
    con.close()
    assert not verify(get_paths(), read_memories).ok

    r = cli_runner.invoke(cli, ["audit", "repair", "--dry-run", "--json"])
    plan = json.loads(r.output)["plan"]
    assert r.exit_code == 0 and plan["add"] == [str(orphan)] and plan["forget"] == [str(gone)]
    assert not verify(get_paths(), read_memories).ok  # a dry run writes nothing
    r = cli_runner.invoke(cli, ["audit", "repair"])  # not a terminal, no --yes: refused
    assert r.exit_code == 2 and "--yes" in r.output

    r = cli_runner.invoke(cli, ["audit", "repair", "--yes", "--json"])
    out = json.loads(r.output)
    assert r.exit_code == 0 and out["verify"]["ok"], out
    assert out["done"]["added"] == [str(orphan)] and out["done"]["forgotten"] == [str(gone)]
    entries = walk_chain(get_paths().audit_log)[0]
    assert [(e["action"], e["actor"]) for e in entries[-2:]] == [("repair-add", "cli"), ("repair-forget", "cli")]
    assert str(kept) in {e["object_id"] for e in entries}
    r = cli_runner.invoke(cli, ["audit", "repair", "--yes"])
    assert r.exit_code == 0 and "audit OK" in r.output and "repair-add" not in r.output  # nothing left


def test_audit_repair_leaves_a_modified_memory_reported_unless_accepted(cli_runner, core):
    mid = core.store.add("the original text", project="p")
    con = sqlite3.connect(get_paths().db)
    with con:
        con.execute("UPDATE memories SET text = 'restored from an older backup' WHERE id = ?", (mid,))
    con.close()
    r = cli_runner.invoke(cli, ["audit", "repair", "--yes"])
    assert r.exit_code == 1 and "left as reported" in r.output and "still FAILED" in r.output
    r = cli_runner.invoke(cli, ["audit", "repair", "--yes", "--accept-modified"])
    assert r.exit_code == 0 and "repair-edit" in r.output and verify(get_paths(), read_memories).ok


def test_audit_repair_moves_a_torn_last_line_aside(cli_runner, core):
    core.store.add("before the crash", project="p")
    log = get_paths().audit_log
    with open(log, "ab") as fh:
        fh.write(b'{"seq": 1, "time": "2026-')  # an append cut short
    core.store.add("after the crash: its entry waits", project="p")
    assert "partial line" in core.store.audit_error()
    r = cli_runner.invoke(cli, ["audit", "repair", "--yes", "--json"])
    out = json.loads(r.output)
    assert r.exit_code == 0 and out["done"]["tail"] == "cut" and out["verify"]["ok"], out
    assert Path(out["done"]["side_file"]).read_bytes() == b'{"seq": 1, "time": "2026-'
    assert out["done"]["recorded_pending"] == 1 and out["verify"]["entries"] == 2


def test_audit_repair_refuses_a_log_edited_in_the_middle(cli_runner, core):
    for t in ("one", "two", "three"):
        core.store.add(t, project="p")
    log = get_paths().audit_log
    lines = log.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"add"', '"edit"')
    log.write_text("".join(lines))
    r = cli_runner.invoke(cli, ["audit", "repair", "--yes"])
    assert r.exit_code == 1 and "never rewrites history" in r.output


# --------------------------------------------------------------------------- batch input and ids


def test_import_names_every_bad_field_keeps_the_good_lines_and_exits_1(cli_runner, tmp_path):
    src = tmp_path / "in.jsonl"
    lines = [{"text": "good one", "ref": "1"}, {"text": "bad flags", "flags": 5}, {"text": "bad kind", "kind": 7},
             {"text": "bad session", "session": {}}, '{"text": "bad ts", "ts": NaN}', {"text": "good two", "ref": "2"},
             {"text": "bad pinned", "pinned": "yes"}, {"text": "bad meta", "meta": []}, {"text": "bad ref", "ref": [1]},
             {"text": "bad project", "project": 3}, {"text": "good three", "session": 12, "ts": 1700000000}]
    src.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    r = cli_runner.invoke(cli, ["import", str(src), "--json"])
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["added"] == 3
    assert [e["line"] for e in out["errors"]] == [2, 3, 4, 5, 7, 8, 9, 10]
    for e, word in zip(out["errors"], ("flags", "kind", "session", "ts", "pinned", "meta", "ref", "project")):
        assert word in e["error"], e
    texts = sorted(json.loads(l)["text"] for l in cli_runner.invoke(cli, ["export"]).stdout.splitlines())
    assert texts == ["good one", "good three", "good two"]


def test_import_and_recall_jsonl_where_every_line_is_bad_exit_1(cli_runner, tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"nope": 1}\n[1]\n')
    r = cli_runner.invoke(cli, ["import", str(src)])
    assert r.exit_code == 1 and "bad lines 2" in r.stdout
    r = cli_runner.invoke(cli, ["recall", "--jsonl", "-"], input='{"query": "x", "k": "abc"}\n{"query": ""}\n')
    assert r.exit_code == 1 and "internal error" not in r.output
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert [o["line"] for o in out] == [1, 2] and '"k"' in out[0]["error"]


def test_recall_jsonl_big_k_is_split_into_calls_under_the_message_ceiling(cli_runner, monkeypatch):
    from compass_hooks.cli import cmd_memory

    calls = []
    monkeypatch.setattr(cmd_memory, "_service", lambda: type("S", (), {
        "call": lambda self, op, **a: calls.append(list(a["queries"])) or {"results": [
            {"query": q["query"], "results": []} for q in a["queries"]]},
        "close": lambda self: None})())
    stdin = "".join(json.dumps({"query": f"q{i}", "k": 40}) + "\n" for i in range(5))
    r = cli_runner.invoke(cli, ["recall", "--jsonl", "-"], input=stdin)
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 5
    assert [len(c) for c in calls] == [2, 2, 1]  # at most 100 results asked per call


@pytest.mark.parametrize("arg", ["٥", "５", "5x", "-1", "1.0", ""])
def test_forget_takes_ascii_digit_ids_only(cli_runner, core, arg):
    for i in range(6):
        core.store.add(f"memory {i}", project="p")
    r = cli_runner.invoke(cli, ["forget", arg])
    assert r.exit_code == 2 and core.store.count() == 6
    with pytest.raises(Exception) as info:
        core.call("forget", {"id": arg})
    assert "ASCII" in str(info.value) or "exactly one" in str(info.value)
    assert core.store.count() == 6
    assert cli_runner.invoke(cli, ["forget", "#5"]).exit_code == 0 and core.store.count() == 5


def test_remember_twice_is_one_memory_and_forgotten_text_can_be_remembered_again(cli_runner):
    r1 = json.loads(cli_runner.invoke(cli, ["remember", "--json", "use uv, not pip"]).output)
    r2 = json.loads(cli_runner.invoke(cli, ["remember", "--json", "use uv, not pip"]).output)
    assert r1["new"] and not r2["new"] and r1["memory"]["id"] == r2["memory"]["id"]
    assert cli_runner.invoke(cli, ["forget", str(r1["memory"]["id"])]).exit_code == 0
    r3 = json.loads(cli_runner.invoke(cli, ["remember", "--json", "use uv, not pip"]).output)
    assert r3["new"] and r3["memory"]["id"] != r1["memory"]["id"]


def test_remember_with_an_unwritable_audit_log_succeeds_and_says_so(cli_runner):
    log = get_paths().ensure().audit_log
    log.mkdir()  # cannot be opened as a file: the append fails
    r = cli_runner.invoke(cli, ["remember", "never commit .env files"])
    assert r.exit_code == 0 and "remembered" in r.stdout and "audit log was not written" in r.stderr
    r = cli_runner.invoke(cli, ["remember", "never commit .env files"])  # the retry a user makes
    assert "already remembered" in r.stdout
    log.rmdir()
    assert verify(get_paths(), read_memories).pending == 1


def test_export_to_a_file_is_0600_and_atomic(cli_runner, core, tmp_path, monkeypatch):
    from compass_hooks.cli import cmd_memory
    from compass_hooks import service

    for i in range(5):
        core.store.add(f"memory {i}", project="p")
    out = tmp_path / "dump.jsonl"
    r = cli_runner.invoke(cli, ["export", "-o", str(out)])
    assert r.exit_code == 0 and (out.stat().st_mode & 0o777) == 0o600 and len(out.read_text().splitlines()) == 5
    before = out.read_bytes()

    from compass_hooks.errors import WorkerUnavailable

    class Dies(service.LocalService):
        def call(self, op, **args):
            if args.get("after_id"):
                raise WorkerUnavailable("the worker died")
            return super().call(op, **{**args, "limit": 2})

    monkeypatch.setattr(cmd_memory, "_service", lambda: Dies())
    r = cli_runner.invoke(cli, ["export", "-o", str(out)])
    assert r.exit_code != 0 and out.read_bytes() == before  # the old file, untouched
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".dump")] == []


def test_export_pages_stop_at_the_byte_budget(core):
    from compass_hooks.memory import ops

    for i in range(6):
        core.store.add(f"{i} " + "y" * 19_000, project="p")
    page = ops.export(core, max_bytes=50_000)
    assert len(page["rows"]) == 2 and page["next_after"] == page["rows"][-1]["id"]
    rest = ops.export(core, after_id=page["next_after"], max_bytes=10)  # one row at least, always
    assert len(rest["rows"]) == 1
    last = ops.export(core, after_id=page["rows"][-1]["id"] + 3)
    assert len(last["rows"]) == 1 and last["next_after"] is None


@pytest.mark.parametrize("answer, kept_by_hook", [({"not_ready": "model missing", "captured": False}, 1),
                                                   ({"not_ready": "model missing", "captured": True}, 0),
                                                   ({"additionalContext": "Compass — memory\nx"}, 0)])
def test_the_hook_process_keeps_what_the_worker_could_not(repo, answer, kept_by_hook):
    import io

    from compass_hooks.hookclient import runner

    stdin = io.BytesIO(json.dumps({**ups(repo, "a prompt the worker may not keep", "p1"),
                                   "hook_event_name": "UserPromptSubmit"}).encode())
    assert runner.run("UserPromptSubmit", stdin, io.StringIO(), call=lambda e, p: answer) == 0
    assert spool.count(get_paths().data) == kept_by_hook


def test_spool_sweeps_what_a_killed_writer_left_and_keeps_the_data_dir_private(tmp_path):
    data = tmp_path / "fresh" / "data"
    path = spool.write(data, {"v": 1, "event": "prompt", "items": []})
    assert (data.stat().st_mode & 0o777) == 0o700 and (Path(path).parent.stat().st_mode & 0o777) == 0o700
    stale = Path(spool.spool_dir(data)) / ".123-1-1.json.tmp"
    stale.write_text("{half")
    os.utime(stale, (1, 1))
    fresh = Path(spool.spool_dir(data)) / ".124-1-2.json.tmp"
    fresh.write_text("{being written")
    assert spool.sweep_tmp(data) == 1 and not stale.exists() and fresh.exists()
    assert spool.pending(data) == [path]
