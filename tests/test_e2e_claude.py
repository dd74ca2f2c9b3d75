"""End to end with the real Claude Code CLI (npm @anthropic-ai/claude-code@2.1.328) against a local mock of the
Anthropic API: the plugin is loaded (a) with --plugin-dir and (b) by a local marketplace install, and the
Compass block from our UserPromptSubmit hook must reach the model's request. Real MiniLM, throwaway HOME.

Pattern from /work/shared/tools/claude-e2e/run_e2e.sh; the mock is tests/e2e/mock_anthropic.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from worker_helpers import stop_worker

pytestmark = [pytest.mark.e2e, pytest.mark.model]

ROOT = Path(__file__).resolve().parent.parent
CC_VERSION = "2.1.328"
CACHE = Path(os.environ.get("COMPASS_E2E_CACHE", Path.home() / ".cache" / "compass-e2e"))
PROMPT = "just force push to main and skip the tests"


def _claude() -> str:
    for cand in (os.environ.get("CLAUDE_BIN"), str(CACHE / "node_modules" / ".bin" / "claude")):
        if cand and os.access(cand, os.X_OK):
            return cand
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not available: cannot install @anthropic-ai/claude-code for the e2e test")
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                    f"@anthropic-ai/claude-code@{CC_VERSION}"], check=True, timeout=600)
    return str(CACHE / "node_modules" / ".bin" / "claude")


@pytest.fixture(scope="module")
def claude_bin():
    return _claude()


@pytest.fixture
def mock_api(tmp_path):
    log, port_file = tmp_path / "requests.jsonl", tmp_path / "port"
    log.touch()
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "e2e" / "mock_anthropic.py"), "--log", str(log),
                             "--port-file", str(port_file)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while not (port_file.exists() and port_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert port_file.exists(), "mock Anthropic API did not start"
    yield int(port_file.read_text()), log
    proc.terminate()
    proc.wait(5)


@pytest.fixture
def cc_env(tmp_path, mock_api, real_model, compass_home):
    port, _ = mock_api
    home, tmp = tmp_path / "home", tmp_path / "cctmp"
    home.mkdir()
    tmp.mkdir()
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "USER": os.environ.get("USER", "e2e"), "LANG": "C.UTF-8",
        "TERM": "dumb", "SHELL": shutil.which("bash") or "/bin/sh", "TMPDIR": str(tmp), "CLAUDE_CODE_TMPDIR": str(tmp),
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Our data dir and the real MiniLM; the first prompt may wait for the model to load (UPS timeout is 10 s).
        "COMPASS_HOME": str(compass_home), "COMPASS_MODEL_DIR": str(real_model.parent), "COMPASS_MODEL": "minilm",
        "COMPASS_COLD_START": "8", "HF_HUB_OFFLINE": "1",
    }
    yield env
    stop_worker()


def _run(claude: str, env: dict, args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([claude, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _sent_to_model(log: Path) -> str:
    bodies = []
    for line in log.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("path", "").startswith("/v1/messages") and isinstance(rec.get("body"), dict):
            bodies.append(json.dumps(rec["body"], ensure_ascii=False))
    assert bodies, "claude sent no /v1/messages request"
    return "\n".join(bodies)


def _assert_compass_block(text: str) -> None:
    assert PROMPT in text
    assert "UserPromptSubmit hook additional context: Compass — drift check" in text, text[-3000:]


def test_validate_strict(claude_bin, tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DISABLE_AUTOUPDATER": "1"}
    proc = _run(claude_bin, env, ["plugin", "validate", str(ROOT), "--strict"], tmp_path)
    assert proc.returncode == 0 and "Validation passed" in proc.stdout, proc.stdout + proc.stderr


def test_plugin_dir_block_reaches_the_model(claude_bin, cc_env, mock_api, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = _run(claude_bin, cc_env, ["-p", PROMPT, "--plugin-dir", str(ROOT), "--debug-file", str(tmp_path / "d.log")], work)
    assert proc.returncode == 0, proc.stderr
    _assert_compass_block(_sent_to_model(mock_api[1]))


def test_warm_worker_answers_claude_code_through_the_native_client(claude_bin, cc_env, mock_api, tmp_path, monkeypatch):
    from compass_hooks.hookio.native import status
    from compass_hooks.worker import client

    if status()["state"] != "ok":
        pytest.skip("the native hook client is not built next to this venv's python (compass-hook client build)")
    for key in ("COMPASS_HOME", "COMPASS_MODEL_DIR", "COMPASS_MODEL"):
        monkeypatch.setenv(key, cc_env[key])
    monkeypatch.delenv("COMPASS_NO_WORKER")
    client.ensure_worker(wait_s=60)
    work = tmp_path / "work"
    work.mkdir()
    proc = _run(claude_bin, cc_env, ["-p", PROMPT, "--plugin-dir", str(ROOT)], work)
    assert proc.returncode == 0, proc.stderr
    _assert_compass_block(_sent_to_model(mock_api[1]))
    from compass_hooks.paths import get_paths

    assert client.ping(str(get_paths().socket))["fast_hooks"] >= 2  # SessionStart and UserPromptSubmit (Stop may still be on its way)


def test_marketplace_install_block_reaches_the_model(claude_bin, cc_env, mock_api, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for args in (["plugin", "marketplace", "add", str(ROOT)], ["plugin", "install", "compass-hooks@compass-local"]):
        proc = _run(claude_bin, cc_env, args, work)
        assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
    proc = _run(claude_bin, cc_env, ["-p", PROMPT, "--debug-file", str(tmp_path / "d.log")], work)
    assert proc.returncode == 0, proc.stderr
    _assert_compass_block(_sent_to_model(mock_api[1]))


def test_claude_code_starts_the_plugin_mcp_server(claude_bin, cc_env, mock_api, tmp_path):
    """The plugin's .mcp.json server connects inside the real Claude Code and its six tools reach the model."""
    work = tmp_path / "work"
    work.mkdir()
    debug = tmp_path / "d.log"
    proc = _run(claude_bin, cc_env, ["-p", "hello", "--plugin-dir", str(ROOT), "--debug-file", str(debug)], work,
                timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert 'MCP server "plugin:compass-hooks:compass": Successfully connected' in debug.read_text()
    sent = _sent_to_model(mock_api[1])
    for name in ("drift_check", "recall", "remember", "forget", "constraints", "status"):
        assert f"mcp__plugin_compass-hooks_compass__{name}" in sent, name
