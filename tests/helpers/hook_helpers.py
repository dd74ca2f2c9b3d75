"""Run a hook exactly as hooks.json tells Claude Code to (sh -c COMMAND, CLAUDE_PLUGIN_ROOT set) and check its
answer: the launcher tests and the load tests share these."""

from __future__ import annotations

import json
import os
import subprocess
import time

from testdirs import FIXTURES as _FIXTURES
from testdirs import ROOT

HOOKS = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
FIXTURES = _FIXTURES / "hooks"  # one stdin sample per event, as Claude Code sends them


def run_hook(event: str, stdin: bytes, env_extra: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    handler = HOOKS[event][0]["hooks"][0]
    env = {k: v for k, v in os.environ.items() if k != "COMPASS_NO_WORKER"}
    env["CLAUDE_PLUGIN_ROOT"] = str(ROOT)
    env.update(env_extra or {})
    t0 = time.monotonic()
    proc = subprocess.run(["sh", "-c", handler["command"]], input=stdin, capture_output=True, env=env,
                          timeout=handler["timeout"])
    return proc, time.monotonic() - t0


def check(proc: subprocess.CompletedProcess, event: str) -> dict | None:
    """Exit 0 and empty stdout (None) or exactly one JSON object for ``event`` (returned)."""
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    if not out.strip():
        return None
    assert out.count("\n") == 1, out  # exactly one JSON object
    obj = json.loads(out)
    if "hookSpecificOutput" in obj:
        assert obj["hookSpecificOutput"]["hookEventName"] == event
    return obj
