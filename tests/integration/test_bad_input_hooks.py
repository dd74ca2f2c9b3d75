"""Bad hook stdin through the real launcher, run the way hooks.json tells Claude Code to run it:
exit 0, nothing (or one valid JSON object) on stdout, the failure logged, and well inside the hook timeout."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from compass_hooks.paths import get_paths
from worker_helpers import stop_worker
import testdirs

ROOT = testdirs.ROOT
HOOKS = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]


def _command(event: str) -> tuple[str, float]:
    handler = HOOKS[event][0]["hooks"][0]
    return handler["command"], float(handler.get("timeout", 30))


def run_hook(event: str, stdin: bytes, argv_event: str | None = None) -> tuple[subprocess.CompletedProcess, float]:
    command, timeout = _command(event)
    if argv_event is not None:
        command = command.rsplit(" ", 1)[0] + " " + shlex.quote(argv_event)
    env = {k: v for k, v in os.environ.items() if k != "COMPASS_NO_WORKER"}
    env["CLAUDE_PLUGIN_ROOT"] = str(ROOT)
    t0 = time.monotonic()
    proc = subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env, timeout=timeout)
    return proc, time.monotonic() - t0


def _hook_log() -> str:
    log = get_paths().logs / "hook.log"
    return log.read_text() if log.exists() else ""


@pytest.fixture(autouse=True)
def no_leaked_worker():
    """A hook that gets far enough spawns a worker for this test's data dir: stop it afterwards."""
    yield
    stop_worker()


JUNK = [
    ("binary", bytes(range(256)) * 40),
    ("empty", b""),
    ("whitespace", b" \n\t\n"),
    ("truncated", b'{"session_id": "s", "prompt": "hel'),
    ("array", b"[1, 2, 3]"),
    ("number", b"42"),
    ("null", b"null"),
    ("string", b'"UserPromptSubmit"'),
    ("bad utf-8 in a string", b'{"prompt": "\xff\xfe oops", "hook_event_name": "UserPromptSubmit"}'),
    ("nesting bomb", b"[" * 200_000 + b"]" * 200_000),
    ("5 MB prompt", json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp",
                                "prompt": "x" * 5_000_000}).encode()),
]


@pytest.mark.parametrize("name, stdin", JUNK, ids=[n for n, _ in JUNK])
def test_junk_stdin_fails_open(name, stdin):
    proc, elapsed = run_hook("UserPromptSubmit", stdin)
    assert proc.returncode == 0
    assert proc.stdout == b"", proc.stdout[:200]
    assert proc.stderr == b"", proc.stderr[:200]
    assert elapsed < _command("UserPromptSubmit")[1]
    assert "failed open" in _hook_log()


@pytest.mark.parametrize("argv_event", ["nosuch", "UserPromptSubmit; touch pwned", "../../etc/passwd", "", "user-prompt-submit\n"])
def test_unknown_event_names_fail_open(argv_event):
    payload = json.dumps({"session_id": "s", "hook_event_name": "Nope", "prompt": "hi"}).encode()
    proc, _ = run_hook("UserPromptSubmit", payload, argv_event=argv_event)
    assert proc.returncode == 0 and proc.stdout == b""
    assert not Path("pwned").exists()


def test_repeated_failures_give_one_valid_notice_not_garbage():
    outs = [run_hook("UserPromptSubmit", b"\x00\x01 junk")[0].stdout for _ in range(4)]
    assert outs[0] == outs[1] == b""
    notices = [json.loads(o) for o in outs if o]
    assert len(notices) == 1 and set(notices[0]) == {"systemMessage"}
    assert notices[0]["systemMessage"].startswith("Compass") and "doctor" in notices[0]["systemMessage"]


WRONG_TYPES = [
    {"hook_event_name": "UserPromptSubmit", "prompt": 123, "session_id": "s"},
    {"hook_event_name": "UserPromptSubmit", "prompt": ["a", "b"], "session_id": {"x": 1}},
    {"hook_event_name": "UserPromptSubmit", "prompt": "fine", "cwd": 7, "transcript_path": False},
    {"hook_event_name": "UserPromptSubmit", "prompt": None},
    {"hook_event_name": "SessionStart", "prompt": "event in the payload disagrees with argv"},
    {},
]


@pytest.mark.slow
def test_wrong_types_fail_open_through_the_worker():
    for payload in WRONG_TYPES:
        proc, _ = run_hook("UserPromptSubmit", json.dumps(payload).encode())
        assert proc.returncode == 0, payload
        out = proc.stdout.strip()
        if out:  # a valid answer (or the failure notice), never partial or raw text
            obj = json.loads(out)
            assert set(obj) <= {"hookSpecificOutput", "systemMessage"}
            if "hookSpecificOutput" in obj:
                assert obj["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


@pytest.mark.parametrize("event", ["PreToolUse", "Stop", "PreCompact", "SessionStart"])
def test_other_events_with_junk_fail_open(event):
    proc, _ = run_hook(event, b"\xde\xad\xbe\xef")
    assert proc.returncode == 0 and proc.stdout == b""


def test_pretooluse_wrong_types_fail_open():
    for payload in [{"tool_name": "Bash", "tool_input": "rm -rf /"}, {"tool_name": "Bash", "tool_input": {"command": 5}},
                    {"tool_name": ["Bash"], "tool_input": {"command": "rm -rf /"}}]:
        proc, _ = run_hook("PreToolUse", json.dumps({"hook_event_name": "PreToolUse", **payload}).encode())
        assert proc.returncode == 0 and proc.stdout == b"", payload
