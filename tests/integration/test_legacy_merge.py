"""0.1.0 kept the memories of hooks run inside Claude Code under $CLAUDE_PLUGIN_DATA; now every surface shares the
user's one store. The first worker to start merges such a store once, through the import path (audited, nothing
lost), keeps the old file as a backup and tells the user once (issue 11)."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from compass_hooks.paths import get_paths
from compass_hooks.service import LocalService
from worker_helpers import start_worker, stop_worker

pytestmark = pytest.mark.slow  # a real worker merging a store: ~2.5 s here

OLD_TEXTS = ["From now on never push to main; open a pull request.", "We decided to keep SQLite for the cache.",
             "Use pnpm, not npm, in this repo."]


def _old_store(home: Path, monkeypatch) -> Path:
    """A 0.1.0 store where 0.1.0 put it (COMPASS_HOME is how that layout is made here, nothing else)."""
    old = home / ".claude" / "plugins" / "data" / "compass-hooks-compass-local"
    with monkeypatch.context() as mp:
        mp.setenv("COMPASS_HOME", str(old))
        svc = LocalService()
        try:
            for i, text in enumerate(OLD_TEXTS):
                svc.call("remember", text=text, kind="constraint" if i != 1 else "decision",
                         project="/work/proj", source="hook")
        finally:
            svc.close()
    assert (old / "compass.db").is_file()
    return old


def test_an_old_plugin_store_is_merged_once_audited_and_told_once(monkeypatch, compass_home, cli_runner):
    from compass_hooks.hookclient.runner import run

    old = _old_store(Path(os.environ["HOME"]), monkeypatch)
    monkeypatch.delenv("COMPASS_NO_WORKER")
    svc = LocalService()
    svc.call("remember", text="A memory already in the user store.", project="/work/proj", source="cli")
    svc.close()
    try:
        start_worker()
        from compass_hooks.worker.client import WorkerService

        ws = WorkerService()
        deadline = time.monotonic() + 30
        while (old / "compass.db").exists():
            assert time.monotonic() < deadline, "the old store was not merged"
            time.sleep(0.1)
        rows = ws.call("export", project=None, after_id=0, limit=100)["rows"]
        texts = [r["text"] for r in rows]
        assert sorted(texts) == sorted(OLD_TEXTS + ["A memory already in the user store."])
        assert {r["kind"] for r in rows if r["text"] == OLD_TEXTS[1]} == {"decision"}
        backups = list(old.glob("compass.db.merged-*.bak"))
        assert len(backups) == 1 and backups[0].stat().st_size > 0  # the old file is kept
        ws.close()

        def hook() -> dict | None:
            out = io.StringIO()
            payload = {"session_id": "s", "cwd": "/work/proj", "hook_event_name": "UserPromptSubmit",
                       "prompt": "add a health endpoint", "transcript_path": "/nonexistent"}
            run("user-prompt-submit", io.BytesIO(json.dumps(payload).encode()), out)
            return json.loads(out.getvalue()) if out.getvalue().strip() else None

        first = hook()
        assert first and "merged 3 memories" in first["systemMessage"] and str(backups[0]) in first["systemMessage"]
        second = hook()
        assert not second or "merged" not in second.get("systemMessage", "")  # told once
    finally:
        stop_worker()
    # A second worker finds nothing left to merge (and the dedupe keys would make a repeat a no-op anyway).
    assert not (old / "compass.db").exists()
    log = "".join(f.read_text() for f in get_paths().logs.glob("*.log"))
    assert log.count("INFO compass.legacy: merged ") == 1, log
    from compass_hooks.cli import cli

    r = cli_runner.invoke(cli, ["audit", "verify", "--json"])  # every merged memory has its audit entry
    assert r.exit_code == 0, r.output
