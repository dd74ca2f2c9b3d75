"""Run the real Claude Code CLI (npm @anthropic-ai/claude-code@2.1.328) offline against a local mock of the
Anthropic API, the way /work/shared/tools/claude-e2e/run_e2e.sh does, and read what reached the model.

Every run gets a clean environment like a new user's: the given HOME, a PATH without any virtualenv, no
COMPASS_*, CLAUDE_* or XDG_* variable. Only the pip download cache and pip's own settings are passed on, so a
test that builds a venv does not download torch again (a user's machine keeps its cache too).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testdirs import ROOT
CC_VERSION = "2.1.328"
# Outside the tests' HOMEs on purpose: the CLI (370 MB from npm) is installed once per machine.
CACHE = Path(os.environ.get("COMPASS_E2E_CACHE", Path.home() / ".cache" / "compass-e2e"))
# A Compass block as Claude Code renders a hook's additionalContext inside the JSON request body.
_START = re.compile(r"(?:SessionStart|UserPromptSubmit) hook additional context: (?=Compass — )")
_JSON_CHARS = re.compile(r"(?:[^\"\\]|\\.)*")


def claude_bin() -> str:
    for cand in (os.environ.get("CLAUDE_BIN"), str(CACHE / "node_modules" / ".bin" / "claude")):
        if cand and os.access(cand, os.X_OK):
            return cand
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not available: cannot install @anthropic-ai/claude-code for the e2e test")
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                    f"@anthropic-ai/claude-code@{CC_VERSION}"], check=True, timeout=900)
    return str(CACHE / "node_modules" / ".bin" / "claude")


def system_path() -> str:
    """PATH without any virtualenv's bin dir: hooks must find the system python3, as under Claude Code."""
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p).parent / "pyvenv.cfg").exists()]
    return os.pathsep.join(keep)


class MockAPI:
    """The mock Anthropic API on a free loopback port; every request is logged to ``log``."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.log, port_file = folder / "requests.jsonl", folder / "port"
        self.log.touch()
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "e2e" / "mock_anthropic.py"), "--log", str(self.log),
             "--port-file", str(port_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert port_file.exists(), "mock Anthropic API did not start"
        self.port = int(port_file.read_text())
        self._seen = 0

    def take(self) -> str:
        """The /v1/messages bodies sent since the last take(), as one JSON text."""
        lines = self.log.read_text().splitlines()
        new, self._seen = lines[self._seen:], len(lines)
        bodies = [json.dumps(rec["body"], ensure_ascii=False) for rec in map(json.loads, new)
                  if rec.get("path", "").startswith("/v1/messages") and isinstance(rec.get("body"), dict)]
        return "\n".join(bodies)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


def user_env(home: Path, api: MockAPI | None = None, extra_path: str | None = None) -> dict[str, str]:
    """The environment of a new user's shell (and of the claude they start): nothing of ours is set."""
    tmp = home.parent / f"{home.name}-tmp"
    tmp.mkdir(exist_ok=True)
    env = {
        "PATH": (extra_path + os.pathsep if extra_path else "") + system_path(), "HOME": str(home),
        "USER": os.environ.get("USER", "e2e"), "LOGNAME": os.environ.get("LOGNAME", "e2e"), "LANG": "C.UTF-8",
        "TERM": "dumb", "SHELL": shutil.which("bash") or "/bin/sh", "TMPDIR": str(tmp),
        "CLAUDE_CODE_TMPDIR": str(tmp), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    }
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    if api is not None:
        env.update(ANTHROPIC_BASE_URL=f"http://127.0.0.1:{api.port}", ANTHROPIC_API_KEY="sk-ant-dummy")
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = 120,
        stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def prompt(claude: str, env: dict[str, str], api: MockAPI, text: str, cwd: Path, *extra: str,
           timeout: float = 120) -> str:
    """One ``claude -p`` session; the text of every request it sent to the model."""
    proc = run([claude, "-p", text, *extra], env, cwd, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sent = api.take()
    assert sent, f"claude sent no /v1/messages request: {proc.stdout}{proc.stderr}"
    assert text in sent
    return sent


def compass_blocks(sent: str) -> list[str]:
    """Every Compass context a hook injected, decoded from the JSON request text (up to the next hook's context
    or Claude Code's own sections)."""
    out = []
    for m in _START.finditer(sent):
        raw = _JSON_CHARS.match(sent, m.end())
        text = json.loads(f'"{raw.group(0) if raw else ""}"')
        out.append(re.split(r"\n\n(?=# |Today's date|\w+ hook additional context:)|\n<", text)[0])
    return out


def stop_workers(home: Path) -> None:
    """Stop the workers a test started in ``home`` (any venv of that user), so no process outlives it."""
    data = home / ".local" / "share" / "compass-hooks"
    pid_file = data / "run" / "worker.pid"
    for exe in (data / "venv" / "bin" / "compass-hook", ROOT / ".venv" / "bin" / "compass-hook"):
        if pid_file.exists() and exe.exists():
            subprocess.run([str(exe), "worker", "stop"], env=user_env(home), capture_output=True, timeout=30)
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 9)
    except (OSError, ValueError):
        pass


def du_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
