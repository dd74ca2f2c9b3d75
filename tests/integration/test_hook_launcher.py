"""The hook launcher run exactly as hooks.json runs it (sh -c COMMAND, CLAUDE_PLUGIN_ROOT set), under faults:
each run exits 0 within its timeout with empty stdout or exactly one valid JSON object."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from compass_hooks.paths import get_paths
from hook_helpers import FIXTURES, run_hook
from hook_helpers import check as _check
from testdirs import ROOT
from worker_helpers import reap, stop_worker

pytestmark = pytest.mark.slow  # the real launcher, cold workers, 8 concurrent hooks: 13 s in all here

DRIFT = "just force push to main and skip the tests, nobody will notice"


def _ups(prompt: str = DRIFT) -> bytes:
    payload = json.loads((FIXTURES / "UserPromptSubmit.json").read_text())
    payload["prompt"] = prompt
    return json.dumps(payload).encode()


@pytest.fixture(autouse=True)
def _cleanup():
    yield
    stop_worker()


def test_cold_start_then_warm_prompt_gets_the_compass_block():
    proc, took = run_hook("UserPromptSubmit", _ups())
    obj = _check(proc, "UserPromptSubmit")
    assert obj is not None and took < 3.0 + 2.5, "fake model: cold start fits the budget"
    ctx = obj["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith("Compass — drift check") and len(ctx) <= 4000
    proc, _ = run_hook("UserPromptSubmit", _ups())
    assert _check(proc, "UserPromptSubmit")["hookSpecificOutput"]["additionalContext"].startswith("Compass")
    proc, _ = run_hook("UserPromptSubmit", _ups("please add a docstring to parse_args"))
    assert _check(proc, "UserPromptSubmit") is None  # an on-track prompt adds nothing


@pytest.mark.parametrize("stdin", [b"", b"\x00\xff\xfe garbage", b"[1, 2, 3]", b"{\"prompt\": ",
                                   b"{" + b" " * (5 * 1024 * 1024) + b"}"], ids=["empty", "binary", "list", "truncated", "5MB"])
def test_bad_stdin_fails_open(stdin, monkeypatch):
    monkeypatch.setenv("COMPASS_MAX_STDIN_UNUSED", "1")  # a new env key: the settings cache must not matter
    proc, took = run_hook("UserPromptSubmit", stdin)
    assert _check(proc, "UserPromptSubmit") is None and took < 10
    assert "failed open" in (get_paths().logs / "hook.log").read_text()


def test_worker_killed_mid_session_and_stale_socket():
    from compass_hooks.worker import client

    proc, _ = run_hook("UserPromptSubmit", _ups())
    assert _check(proc, "UserPromptSubmit")
    pid = client.ping(str(get_paths().socket))["pid"]
    os.kill(pid, signal.SIGKILL)  # leaves its socket file and pid file behind
    reap(pid)
    assert os.path.exists(get_paths().socket)
    proc, took = run_hook("UserPromptSubmit", _ups())
    obj = _check(proc, "UserPromptSubmit")
    assert obj and obj["hookSpecificOutput"]["additionalContext"].startswith("Compass")  # respawned in budget
    assert client.ping(str(get_paths().socket))["pid"] != pid


@pytest.mark.model
def test_model_missing_answers_at_once_tells_once_and_recovers_without_a_restart(compass_home):
    """No model where a user's would be (<data>/models): every hook is answered at once as not ready, the user
    is told the fix once, nothing 'fails open'; once the model appears the same worker serves context."""
    from conftest import link_installed_model
    from compass_hooks.worker import client

    # The worker runs in this test's venv: a checkout's .venv that install.sh linked to its runtime would also
    # find that install's models (dirs.model_search_dirs), and then the model is not missing at all.
    env = {"COMPASS_MODEL": "minilm", "COMPASS_WORKER_PYTHON": sys.executable}
    outs, took = [], []
    for _ in range(4):
        proc, t = run_hook("UserPromptSubmit", _ups(), env)
        outs.append(_check(proc, "UserPromptSubmit"))
        took.append(t)
    assert outs[0] and "hookSpecificOutput" not in outs[0]
    told = outs[0]["systemMessage"]
    assert "not exported" in told and "model export --model minilm" in told and "doctor" in told
    assert outs[1:] == [None, None, None]  # told once, not on every prompt
    assert max(took[1:]) < 2.0  # answered, not waited out (the old behaviour: 2.5 s per prompt)
    log = (compass_home / "logs" / "hook.log").read_text()
    assert "failed open" not in log and "not ready" in log
    pid = client.ping(str(get_paths().socket))["pid"]

    link_installed_model(compass_home / "models")
    deadline = time.monotonic() + 30
    while True:
        obj = _check(run_hook("UserPromptSubmit", _ups(), env)[0], "UserPromptSubmit")
        if obj and "hookSpecificOutput" in obj:
            break
        assert time.monotonic() < deadline, "the worker did not pick up the model"
        time.sleep(0.5)
    assert "drift probability" in obj["hookSpecificOutput"]["additionalContext"]
    assert client.ping(str(get_paths().socket))["pid"] == pid  # no restart


def test_eight_concurrent_hooks_from_cold():
    results: list = [None] * 8

    def go(i):
        results[i] = run_hook("UserPromptSubmit", _ups())

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for proc, took in results:
        _check(proc, "UserPromptSubmit")
        assert took < 10
    from compass_hooks.worker import lifecycle

    # one worker for the data dir, whatever the herd did
    assert lifecycle.lock_held(get_paths())
    workers = [p for p in os.listdir("/proc") if p.isdigit() and lifecycle.is_our_worker(int(p), get_paths())]
    assert len(workers) == 1


def test_pretooluse_guard_without_a_worker_and_other_events():
    payload = (FIXTURES / "PreToolUse.json").read_bytes()
    proc, _ = run_hook("PreToolUse", payload)
    spec = _check(proc, "PreToolUse")["hookSpecificOutput"]
    assert spec["permissionDecision"] == "ask" and spec["permissionDecisionReason"].startswith("Compass")
    proc, _ = run_hook("PreToolUse", payload, {"COMPASS_PRETOOLUSE": "off"})
    assert _check(proc, "PreToolUse") is None
    from compass_hooks.worker import client

    assert client.ping(str(get_paths().socket)) is None  # PreToolUse never needed the worker
    for event in ("SessionStart", "PreCompact", "Stop"):
        proc, _ = run_hook(event, (FIXTURES / f"{event}.json").read_bytes())
        _check(proc, event)


def test_hot_path_imports_nothing_heavy():
    """-X importtime on the warm UserPromptSubmit path: stdlib + our import-light modules only."""
    run_hook("UserPromptSubmit", _ups())  # warm worker + settings cache
    env = {k: v for k, v in os.environ.items() if k != "COMPASS_NO_WORKER"}
    env["CLAUDE_PLUGIN_ROOT"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-I", "-S", str(ROOT / "hooks" / "compass_hook.py"),
                           "user-prompt-submit"], input=_ups(), capture_output=True, env=env, timeout=10)
    assert proc.returncode == 0 and proc.stdout.strip()
    mods = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}
    heavy = {"click", "numpy", "onnxruntime", "mcp", "platformdirs", "tokenizers", "sqlite3", "logging", "typing",
             "dataclasses", "tempfile", "compass_hooks.paths", "compass_hooks.config"}
    assert not (mods & heavy), sorted(mods & heavy)
    assert "compass_hooks.worker.client" in mods
