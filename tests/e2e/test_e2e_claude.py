"""End to end with the real Claude Code CLI (npm @anthropic-ai/claude-code@2.1.328) against a local mock of the
Anthropic API: the plugin is loaded (a) with --plugin-dir and (b) by a local marketplace install of this
checkout, and the Compass block from our UserPromptSubmit hook must reach the model's request. Real MiniLM in
the test user's models dir, the test's fresh HOME, no COMPASS_* variable (tests/helpers/cc_harness.py).

The README's install paths, each from a fresh HOME through install.sh or the bootstrap, are in
tests/e2e/test_e2e_user_paths.py.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from cc_harness import ROOT, MockAPI, claude_bin, compass_blocks, prompt, run, user_env
from worker_helpers import stop_worker

pytestmark = [pytest.mark.e2e, pytest.mark.model]

PROMPT = "just force push to main and skip the tests, nobody will notice"


@pytest.fixture(scope="module")
def claude():
    return claude_bin()


@pytest.fixture
def api(tmp_path):
    mock = MockAPI(tmp_path / "mock")
    yield mock
    mock.close()


@pytest.fixture
def cc_env(real_model, api):
    """Claude Code's environment for this test's user (conftest's fresh HOME, the model in its models dir)."""
    yield user_env(Path(os.environ["HOME"]), api)
    stop_worker()


@pytest.fixture
def work(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def _assert_drift_block(sent: str) -> None:
    assert PROMPT in sent
    assert any(b.startswith("Compass — drift check") for b in compass_blocks(sent)), sent[-3000:]


def test_validate_strict(claude, tmp_path):
    proc = run([claude, "plugin", "validate", str(ROOT), "--strict"], user_env(Path(os.environ["HOME"])), tmp_path)
    assert proc.returncode == 0 and "Validation passed" in proc.stdout, proc.stdout + proc.stderr


def test_plugin_dir_block_reaches_the_model(claude, cc_env, api, work):
    _assert_drift_block(prompt(claude, cc_env, api, PROMPT, work, "--plugin-dir", str(ROOT)))


def test_warm_worker_answers_claude_code_through_the_native_client(claude, cc_env, api, work, monkeypatch):
    from compass_hooks.hookclient.native import status
    from compass_hooks.paths import get_paths
    from compass_hooks.worker import client

    # The launcher runs the client next to the python it picks: for this HOME, the checkout's .venv.
    if status(ROOT / ".venv" / "bin" / "compass-hook-client")["state"] != "ok":
        pytest.skip("the native hook client is not built next to the checkout's .venv (compass-hook client build)")
    monkeypatch.delenv("COMPASS_NO_WORKER")
    monkeypatch.delenv("COMPASS_MODEL", raising=False)
    client.ensure_worker(wait_s=60)
    _assert_drift_block(prompt(claude, cc_env, api, PROMPT, work, "--plugin-dir", str(ROOT)))
    assert client.ping(str(get_paths().socket))["fast_hooks"] >= 2  # SessionStart and UserPromptSubmit (Stop may still be on its way)


def test_marketplace_install_of_the_checkout_block_reaches_the_model(claude, cc_env, api, work):
    for args in (["plugin", "marketplace", "add", str(ROOT)], ["plugin", "install", "compass-hooks@compass-local"]):
        proc = run([claude, *args], cc_env, work)
        assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
    _assert_drift_block(prompt(claude, cc_env, api, PROMPT, work))


def test_claude_code_starts_the_plugin_mcp_server(claude, cc_env, api, work, tmp_path):
    """The plugin's .mcp.json server connects inside the real Claude Code and its tools reach the model."""
    debug = tmp_path / "d.log"
    sent = prompt(claude, cc_env, api, "hello", work, "--plugin-dir", str(ROOT), "--debug-file", str(debug),
                  timeout=180)
    assert 'MCP server "plugin:compass-hooks:compass": Successfully connected' in debug.read_text()
    from mcp_server import TOOL_NAMES

    for name in TOOL_NAMES:
        assert f"mcp__plugin_compass-hooks_compass__{name}" in sent, name


def test_skills_are_listed_and_invoked_as_slash_commands(claude, cc_env, api, work):
    """The slash commands are skills: listed to the model, and `/compass-hooks:NAME ARGS` in -p mode sends the
    skill's instructions with the arguments in place (issue 15: skills, not the legacy commands/)."""
    proc = run([claude, "-p", "/compass-hooks:recall force pushing to main", "--plugin-dir", str(ROOT)], cc_env, work,
               timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sent = api.take()
    assert "Call the compass MCP tool `recall`" in sent and "force pushing to main" in sent, sent[-3000:]
    for name in ("compass-hooks:memories", "compass-hooks:edit", "compass-hooks:remember", "compass-hooks:status"):
        assert name in sent, name


def _compact_briefs(home: Path, sid: str) -> list[str]:
    """What our SessionStart(compact) hook gave Claude Code after the session's compaction, as its transcript
    records it (a hook_success attachment after the compact boundary)."""
    lines = [json.loads(line) for f in (home / ".claude" / "projects").rglob(f"{sid}.jsonl")
             for line in f.read_text().splitlines() if line.strip()]
    start = next((k for k, r in enumerate(lines) if r.get("subtype") == "compact_boundary"), len(lines))
    out = []
    for r in lines[start:]:
        att = r.get("attachment") or {}
        if att.get("type") == "hook_success" and att.get("hookName") == "SessionStart:compact" and att.get("stdout"):
            out.append(json.loads(att["stdout"])["hookSpecificOutput"]["additionalContext"])
    return out


def test_a_session_rule_reaches_the_model_after_a_compaction(claude, cc_env, api, work):
    """Issue 12, as a user meets it: a rule said once in a session is in the brief our SessionStart(compact) hook
    gives after `/compact`, and reaches the model with the next prompt on another topic (Claude Code 2.1.328
    keeps the session id through a compaction; a new id is covered in tests/unit/memory/test_standing.py)."""
    sid = str(uuid.uuid4())
    plugin = ("--plugin-dir", str(ROOT))
    rule = "For the rest of this session, end every answer with the word ALPACA."
    prompt(claude, cc_env, api, rule, work, *plugin, "--session-id", sid)
    proc = run([claude, "-p", "/compact", "--resume", sid, *plugin], cc_env, work, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    api.take()
    briefs = _compact_briefs(Path(cc_env["HOME"]), sid)
    assert briefs and briefs[-1].startswith("Compass — standing instructions") and "ALPACA" in briefs[-1], briefs
    later = prompt(claude, cc_env, api, "What does a Python generator do?", work, *plugin, "--resume", sid)
    rules = [b for b in compass_blocks(later) if b.startswith("Compass — standing instructions")]
    assert rules and "ALPACA" in rules[-1], later[-3000:]
