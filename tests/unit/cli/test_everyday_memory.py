"""Everyday memory management from the CLI (CliRunner, in process, fake embedder): list/recent with filters,
edit (audited, re-embedded, FTS updated), tags on remember/import/edit/export, recall's time window and
relevance floor, unknown projects, --yes off a terminal, backup and restore."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from compass_hooks.cli import cli
from compass_hooks.paths import get_paths


def run(runner, *args, code=0, **kw):
    res = runner.invoke(cli, list(args), **kw)
    assert res.exit_code == code, (args, res.output, res.stderr if res.stderr_bytes is not None else "")
    assert "Traceback" not in res.output
    return res


@pytest.fixture
def proj(tmp_path):
    d = tmp_path / "proj"
    (d / ".git").mkdir(parents=True)
    return d


def _remember(runner, proj, text, *extra):
    return json.loads(run(runner, "remember", text, "--project", str(proj), "--json", *extra).stdout)["memory"]


def test_list_recent_and_filters(cli_runner, proj):
    a = _remember(cli_runner, proj, "never push to main", "--kind", "constraint", "--tag", "git", "--tag", "Deploy")
    b = _remember(cli_runner, proj, "we use pnpm, not npm", "--kind", "decision")
    assert a["tags"] == ["deploy", "git"] and b["tags"] == []
    out = json.loads(run(cli_runner, "list", "--project", str(proj), "--json").stdout)
    assert [m["id"] for m in out["memories"]] == [b["id"], a["id"]] and out["total"] == 2
    out = json.loads(run(cli_runner, "list", "--project", str(proj), "--tag", "git", "--json").stdout)
    assert [m["id"] for m in out["memories"]] == [a["id"]]
    out = json.loads(run(cli_runner, "list", "--project", str(proj), "--kind", "decision", "--json").stdout)
    assert [m["id"] for m in out["memories"]] == [b["id"]]
    # Time windows in words: everything is from today.
    assert len(json.loads(run(cli_runner, "list", "--project", str(proj), "--since", "yesterday",
                              "--json").stdout)["memories"]) == 2
    assert json.loads(run(cli_runner, "list", "--project", str(proj), "--until", "last week",
                          "--json").stdout)["memories"] == []
    assert len(json.loads(run(cli_runner, "list", "--project", str(proj), "--since", "上周",
                              "--json").stdout)["memories"]) == 2
    res = run(cli_runner, "list", "--project", str(proj), "--since", "the day after never", code=1)
    assert "cannot read" in res.output and len(res.output.strip().splitlines()) == 1
    res = run(cli_runner, "recent", "--project", str(proj), "--limit", "1")
    assert f"[{b['id']}]" in res.stdout and f"[{a['id']}]" not in res.stdout
    assert "--offset 1 for more" in res.stderr
    res = run(cli_runner, "list", "--all-projects")
    assert str(proj) in res.stdout  # every project: each line says which


def test_edit_is_audited_reembedded_and_searchable(cli_runner, proj):
    m = _remember(cli_runner, proj, "deploy on fridays is fine", "--kind", "note")
    out = json.loads(run(cli_runner, "edit", str(m["id"]), "--text", "never deploy on fridays", "--kind",
                         "constraint", "--pin", "--tag", "deploy", "--json").stdout)
    assert out["changed"] == ["text", "kind", "pinned", "tags"]
    assert out["memory"]["id"] == m["id"] and out["memory"]["pinned"] is True
    # The FTS row follows the text; the old wording is gone from keyword search.
    hits = json.loads(run(cli_runner, "recall", "never deploy fridays", "--project", str(proj), "--json").stdout)
    assert [h["id"] for h in hits["memories"]] == [m["id"]]
    assert json.loads(run(cli_runner, "recall", "fine", "--project", str(proj), "--json").stdout)["memories"] == []
    # The constraint is now one of the project's rules.
    res = run(cli_runner, "constraints", "--project", str(proj))
    assert "never deploy on fridays" in res.stdout
    # One vector, made from the new text.
    from compass_hooks.embedding import get_embedder
    from compass_hooks.memory.store import Store

    store = Store(get_paths().db)
    try:
        ids, _, vecs = store.vectors_since("fake:64", 0)
        assert list(ids) == [m["id"]]
        want = get_embedder("fake").embed(["never deploy on fridays"])[0]
        assert float(vecs[0] @ want) > 0.999
    finally:
        store.close()
    # Audited: the log's last entry for it is the edit, and verify matches the edited row.
    lines = [json.loads(x) for x in get_paths().audit_log.read_text().splitlines()]
    assert [e["action"] for e in lines if e["object_id"] == str(m["id"])] == ["add", "edit"]
    assert "audit OK" in run(cli_runner, "audit", "verify").stdout
    res = run(cli_runner, "edit", str(m["id"]), "--untag", "deploy", "--unpin")
    assert "edited pinned, tags" in res.stdout
    run(cli_runner, "edit", str(m["id"]), code=1)  # nothing to change
    res = run(cli_runner, "edit", "999", "--pin", code=1)
    assert "no memory with id 999" in res.output


def test_tags_round_trip_through_export_and_import(cli_runner, proj, tmp_path):
    _remember(cli_runner, proj, "keep the changelog current", "--tag", "docs")
    dump = tmp_path / "dump.jsonl"
    run(cli_runner, "export", "--project", str(proj), "-o", str(dump))
    row = json.loads(dump.read_text().splitlines()[0])
    assert row["tags"] == ["docs"]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"text": "imported rule", "tags": ["a"]}) + "\n"
                   + json.dumps({"text": "bad tags", "tags": ["has space"]}) + "\n")
    res = run(cli_runner, "import", str(src), "--project", "other", "--tag", "batch", code=1)
    assert "line 2: 'tags': bad tag" in res.output
    out = json.loads(run(cli_runner, "list", "--project", "other", "--json").stdout)
    assert [m["tags"] for m in out["memories"]] == [["a", "batch"]]


def test_recall_relevance_floor_and_time_window(cli_runner, proj):
    _remember(cli_runner, proj, "the staging database is reset every night")
    res = run(cli_runner, "recall", "can I push to main?", "--project", str(proj))
    assert "nothing relevant found" in res.stdout
    out = json.loads(run(cli_runner, "recall", "can I push to main?", "--project", str(proj), "--json").stdout)
    assert out["memories"] == [] and out["below_floor"] == 1
    out = json.loads(run(cli_runner, "recall", "can I push to main?", "--project", str(proj), "--min-score", "-1",
                         "--json").stdout)
    assert len(out["memories"]) == 1
    out = json.loads(run(cli_runner, "recall", "staging database", "--project", str(proj), "--json").stdout)
    assert len(out["memories"]) == 1
    out = json.loads(run(cli_runner, "recall", "staging database", "--project", str(proj), "--until",
                         "yesterday", "--json").stdout)
    assert out["memories"] == []
    res = run(cli_runner, "recall", "x", "--since", "today", "--until", "yesterday", "--project", str(proj), code=1)
    assert "'since' is not before 'until'" in res.output


def test_unknown_project_is_an_error(cli_runner, proj):
    _remember(cli_runner, proj, "a rule")
    for args in (["recall", "rule", "--project", "nosuch"], ["list", "--project", "nosuch"],
                 ["export", "--project", "/nonexistent"], ["constraints", "--project", "nosuch"],
                 ["forget", "--project", "nosuch", "--yes"]):
        res = run(cli_runner, *args, code=1)
        assert "no memories in project" in res.output and str(proj) in res.output, args
    # This directory's own project may be new: that is "nothing", not an error.
    assert "nothing relevant found" in run(cli_runner, "recall", "rule").stdout


def test_forget_a_project_needs_yes_off_a_terminal(cli_runner, proj):
    _remember(cli_runner, proj, "a rule")
    res = run(cli_runner, "forget", "--project", str(proj), code=2)  # CliRunner's stdin is not a terminal
    assert "needs --yes" in res.output and len(res.output.strip().splitlines()) == 1
    assert json.loads(run(cli_runner, "list", "--project", str(proj), "--json").stdout)["total"] == 1
    run(cli_runner, "forget", "--project", str(proj), "--yes")


def test_usage_errors_are_one_line(cli_runner):
    for args in (["recall"], ["remember", "--kind", "preference", "x"], ["nosuch"], ["list", "--limit", "0"]):
        res = cli_runner.invoke(cli, args)
        assert res.exit_code == 2, args
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "--help" in lines[0], (args, res.output)


def test_kinds_are_one_list():
    """The CLI's choices, the MCP schemas and the store's CHECK constraint offer the same kinds."""
    import click

    from compass_hooks.cli.cmd_memory import remember_cmd
    from compass_hooks.memory import migrations
    from compass_hooks.memory.kinds import KINDS

    choice = next(p for p in remember_cmd.params if p.name == "kind").type
    assert isinstance(choice, click.Choice) and tuple(choice.choices) == KINDS
    check = migrations._V1.split("kind TEXT NOT NULL CHECK (kind IN (")[1].split("))")[0]
    assert {k.strip(" '") for k in check.split(",")} == set(KINDS)


def test_backup_and_restore(cli_runner, proj, tmp_path):
    keep = _remember(cli_runner, proj, "never push to main", "--tag", "git")
    bk = tmp_path / "bk"
    out = json.loads(run(cli_runner, "backup", str(bk), "--json").stdout)
    assert out["memories"] == 1 and out["audit_entries"] == 1 and "compass.db" in out["files"]
    assert oct(bk.stat().st_mode & 0o777) == "0o700" and oct((bk / "compass.db").stat().st_mode & 0o777) == "0o600"
    run(cli_runner, "backup", str(bk), code=1)  # never into a non-empty dir
    assert "backup OK" in run(cli_runner, "restore", str(bk), "--check").stdout
    later = _remember(cli_runner, proj, "a later memory")
    res = run(cli_runner, "restore", str(bk), code=2)  # over a store with memories, off a terminal: no
    assert "--yes" in res.output
    out = json.loads(run(cli_runner, "restore", str(bk), "--yes", "--json").stdout)
    assert out["restored"] and out["memories"] == 1 and Path(out["previous"], "compass.db").is_file()
    ids = [m["id"] for m in json.loads(run(cli_runner, "list", "--project", str(proj), "--json").stdout)["memories"]]
    assert ids == [keep["id"]] and later["id"] not in ids
    assert "audit OK" in run(cli_runner, "audit", "verify").stdout
    # A tampered backup is refused before anything is touched.
    rows = (bk / "audit.log").read_text().replace('"actor":"cli"', '"actor":"mcp"')
    (bk / "audit.log").write_text(rows)
    res = run(cli_runner, "restore", str(bk), "--yes", code=1)
    assert "backup damaged: audit.log" in res.output
    assert len(json.loads(run(cli_runner, "list", "--project", str(proj), "--json").stdout)["memories"]) == 1


def test_backup_keeps_a_consistent_pair_while_writing(cli_runner, proj, tmp_path):
    """Writers in another thread while the backup runs: whatever the copy holds, it verifies."""
    import threading

    from compass_hooks.service import get_service

    stop = threading.Event()

    def write():
        svc = get_service()
        n = 0
        while not stop.is_set():
            svc.call("remember", text=f"rule number {n}", project=str(proj), source="cli")
            n += 1
        svc.close()

    t = threading.Thread(target=write)
    t.start()
    try:
        time.sleep(0.2)
        run(cli_runner, "backup", str(tmp_path / "bk"))
    finally:
        stop.set()
        t.join()
    assert "backup OK" in run(cli_runner, "restore", str(tmp_path / "bk"), "--check").stdout
