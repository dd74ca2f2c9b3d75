"""The worker side of the native client (worker/hooks/fast.py), in process: what it answers and when it
hands the hook to the Python client instead."""

from __future__ import annotations

import json
import os

import pytest

from compass_hooks.core import Core
from compass_hooks.worker.hooks import fast
from compass_hooks.paths import get_paths


@pytest.fixture
def core():
    c = Core(get_paths().ensure())
    yield c
    c.close()


def _stdin(**fields) -> str:
    base = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "git push --force origin main"}}
    base.update(fields)
    return json.dumps(base)


def test_renders_the_exact_stdout(core):
    out = fast.serve(core, "pre-tool-use", _stdin())
    obj = json.loads(out["stdout"])
    assert out["stdout"].endswith("}\n") and obj["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert fast.serve(core, "PreToolUse", _stdin(tool_input={"command": "ls"})) == {"stdout": ""}


@pytest.mark.parametrize("event,stdin,why", [
    ("nope", "{}", "unknown hook event"),
    ("stop", "not json", "not JSON"),
    ("stop", "[1]", "not a JSON object"),
    ("stop", json.dumps({"x": "y" * 2_100_000}), "max_stdin_bytes"),
])
def test_hands_over_what_python_reports(core, event, stdin, why):
    assert why in fast.serve(core, event, stdin)["fallback"]


def test_disabled_hooks_answer_nothing(core, monkeypatch):
    monkeypatch.setitem(core.config.data["hooks"], "enabled", False)
    assert fast.serve(core, "pre-tool-use", _stdin()) == {"stdout": ""}


def test_a_plugin_update_goes_to_python(core, tmp_path, monkeypatch):
    venv = get_paths().data / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / ".compass-requirements.sha256").write_text("x\n")
    plugin = tmp_path / "plugin"
    (plugin / "hooks").mkdir(parents=True)
    (plugin / "pyproject.toml").write_text("[project]\n")
    os.utime(venv / ".compass-requirements.sha256", (1, 1))
    monkeypatch.setattr(fast.sys, "executable", str(venv / "bin" / "python"))
    assert "plugin was updated" in fast.serve(core, "pre-tool-use", _stdin(), str(plugin / "hooks" / "compass_hook.py"))["fallback"]


def test_success_ends_a_failure_streak(core):
    state = get_paths().hook_state
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"failures": 3}))
    fast.serve(core, "pre-tool-use", _stdin())
    assert not state.exists()


def test_endpoint_file_is_private_and_removed_only_by_its_writer(core):
    paths = get_paths()
    fast.write_endpoint(paths, core.config)
    path = paths.run / fast.ENDPOINT_NAME
    text = path.read_text()
    assert f"socket={paths.socket}\n" in text and f"pid={os.getpid()}\n" in text
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text(text.replace(f"pid={os.getpid()}", "pid=1"))  # a newer worker's file
    fast.remove_endpoint(paths)
    assert path.exists()
    path.write_text(text)
    fast.remove_endpoint(paths)
    assert not path.exists()
