"""The memory CLI commands through CliRunner (in-process service, fake embedder)."""

from __future__ import annotations

import json

import pytest

from compass_hooks.cli import cli


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "myrepo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def run(runner, *args, input=None):
    res = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
    return res


def test_remember_recall_constraints_forget(cli_runner, repo):
    r = run(cli_runner, "remember", "--kind", "constraint", "--pin", "never force-push to main", "--json")
    assert r.exit_code == 0, r.output
    mem = json.loads(r.output)["memory"]
    assert mem["project"] == str(repo) and mem["pinned"] and mem["kind"] == "constraint"
    r = run(cli_runner, "remember", "we decided to use pnpm, api_key=abcd-efgh-1234")
    assert r.exit_code == 0 and "decision" in r.output and "abcd-efgh" not in r.output
    r = run(cli_runner, "recall", "force", "push", "--json")
    hits = json.loads(r.output)["memories"]
    assert hits[0]["id"] == mem["id"]
    r = run(cli_runner, "recall", "force push", "--project", "myrepo")  # by name
    assert f"[{mem['id']}] constraint" in r.output.splitlines()[0]
    r = run(cli_runner, "constraints")
    assert "never force-push to main" in r.output and "pnpm" not in r.output
    r = run(cli_runner, "forget", str(mem["id"]))
    assert r.exit_code == 0 and "forgot 1 memory" in r.output
    r = run(cli_runner, "forget", str(mem["id"]))
    assert r.exit_code != 0 and "no memory with id" in r.output
    assert run(cli_runner, "forget").exit_code == 2


def test_recall_jsonl_keeps_input_order(cli_runner, repo, tmp_path):
    for text in ("the cache lives in redis", "logs rotate daily", "the cache key includes the user id"):
        run(cli_runner, "remember", text)
    other = tmp_path / "elsewhere"
    (other / ".git").mkdir(parents=True)
    run(cli_runner, "remember", "--project", str(other), "unrelated other project cache")
    lines = [{"query": "cache"}, "oops", {"query": "logs", "k": 1}, {"query": "cache", "project": str(other)}]
    stdin = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    r = run(cli_runner, "recall", "--jsonl", "-", input=stdin)
    assert r.exit_code == 1  # a bad line fails the run, after every line was answered
    out = [json.loads(l) for l in r.stdout.splitlines()]
    assert [o["query"] for o in out] == ["cache", None, "logs", "cache"]
    assert all("cache" in h["text"] for h in out[0]["results"][:2])
    assert out[1]["error"] and out[1]["line"] == 2
    assert len(out[2]["results"]) == 1 and out[2]["results"][0]["text"] == "logs rotate daily"
    assert [h["text"] for h in out[3]["results"]] == ["unrelated other project cache"]
    assert set(out[0]["results"][0]) == {"id", "ref", "text", "score", "kind", "session", "created"}


def test_import_reports_bad_lines_and_export_round_trips(cli_runner, repo, tmp_path):
    src = tmp_path / "in.jsonl"
    good = [
        {"text": "Speaker A: I moved to Lisbon", "ref": "D1:1", "project": "conv-1", "session": "s1",
         "role": "user", "kind": "note", "ts": "2023-05-08T13:56:00Z"},
        {"text": "Speaker B: nice!", "ref": "D1:2", "project": "conv-1", "session": "s1", "role": "assistant",
         "ts": 1683554200},
        {"text": "global fact without ref"},
    ]
    lines = [json.dumps(good[0]), "{broken", json.dumps({"ref": "x"}), json.dumps(good[1]), "",
             json.dumps({"text": "t", "role": "system"}), json.dumps(good[2])]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run(cli_runner, "import", str(src), "--json")
    counts = json.loads(r.stdout)
    assert r.exit_code == 1 and (counts["added"], counts["duplicates"]) == (3, 0)
    assert [e["line"] for e in counts["errors"]] == [2, 3, 6]
    r = run(cli_runner, "import", str(src))  # again: nothing new, nothing lost
    assert "imported 0, duplicates 3, bad lines 3" in r.stdout and "line 2:" in r.stderr

    exported = run(cli_runner, "export").stdout
    rows = [json.loads(l) for l in exported.splitlines()]
    assert len(rows) == 3 and rows[0]["ref"] == "D1:1" and rows[0]["project"] == "conv-1"
    assert rows[0]["ts"] == 1683554160.0
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported, encoding="utf-8")

    # Into a fresh store: the same rows come back (ids aside).
    fresh = tmp_path / "fresh-home"
    r = cli_runner.invoke(cli, ["import", str(dump)], env={"COMPASS_HOME": str(fresh)}, catch_exceptions=False)
    assert "imported 3" in r.stdout
    again = cli_runner.invoke(cli, ["export"], env={"COMPASS_HOME": str(fresh)}, catch_exceptions=False).stdout
    strip = lambda rs: [{k: v for k, v in x.items() if k != "id"} for x in rs]
    assert strip([json.loads(l) for l in again.splitlines()]) == strip(rows)
    only = run(cli_runner, "export", "--project", "conv-1").stdout
    assert len(only.splitlines()) == 2


def test_forget_project_and_session(cli_runner, repo, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"text": f"turn {i}", "session": f"s{i % 2}", "ref": str(i)})
                             for i in range(6)) + "\n")
    run(cli_runner, "import", str(src), "--project", "demo")
    r = run(cli_runner, "forget", "--session", "s0", "--yes")
    assert "forgot 3 memories" in r.output
    r = run(cli_runner, "forget", "--project", "demo", "--yes", "--json")
    assert json.loads(r.output)["removed"] == 3
    assert run(cli_runner, "export").stdout == ""


def test_help_texts(cli_runner):
    for cmd in ("remember", "recall", "import", "export", "forget", "constraints"):
        r = run(cli_runner, cmd, "--help")
        assert r.exit_code == 0 and "Usage:" in r.output and len(r.output.splitlines()) > 4
