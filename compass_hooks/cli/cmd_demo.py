"""``compass-hook demo``: the main job once, end to end, on the configured model.

A short scripted session goes through the commands hooks/hooks.json registers,
run as Claude Code runs them (``sh -c``, CLAUDE_PLUGIN_ROOT set, event JSON on stdin): the
user states a rule, later pushes the agent to break it, and the agent then
tries a force push. The demo prints what Claude Code would receive each time.

It runs in a throw-away data dir and project (its own worker, stopped at the
end), so it never writes into the user's memories or drift history.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import click

from ..errors import CompassError

RULE = "From now on, never push directly to main: always open a pull request, and keep the tests green."
DRIFT = "just force push to main and skip the tests, it's fine"
COMMAND = "git push --force origin main"


def hook_command(root: Path, event: str = "UserPromptSubmit") -> tuple[str, float]:
    """The shell command and timeout ``root/hooks/hooks.json`` registers for ``event``: what Claude Code runs, so
    what the demo (and compass_eval's hook benchmarks) run too. Raises OSError, ValueError, KeyError, IndexError."""
    spec = json.loads((root / "hooks" / "hooks.json").read_text())["hooks"][event][0]["hooks"][0]
    return spec["command"], float(spec.get("timeout", 30))


def carry_calibrations(data: Path) -> None:
    """Copy the user's own drift calibrations into the throw-away data dir ``data``. The scorer reads
    ``<data>/calibration`` before the shipped ones (drift/scorer.py) and `anchors train` writes there when the
    plugin dir is read-only: without them a model calibrated on this machine could not score drift in the demo."""
    from ..paths import get_paths

    mine = get_paths().data / "calibration"
    if mine.is_dir():
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copytree(mine, data / "calibration", dirs_exist_ok=True)


def _command(root: Path, event: str) -> tuple[list[str], float]:
    """The command and timeout hooks.json registers for ``event`` (the demo runs nothing else)."""
    try:
        command, timeout = hook_command(root, event)
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise CompassError(f"cannot read the {event} hook from {root / 'hooks' / 'hooks.json'}: {exc}",
                           "run from a complete checkout (./install.sh)") from None
    return ["sh", "-c", command], timeout


def run_hook(root: Path, event: str, payload: dict[str, Any], env: dict[str, str]) -> tuple[dict[str, Any] | None, float, int]:
    """One hook call as Claude Code makes it. Returns (stdout JSON or None, seconds, exit code)."""
    argv, timeout = _command(root, event)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=env,
                          timeout=timeout + 60)  # + the demo's own cold start (COMPASS_COLD_START below)
    dt = time.perf_counter() - t0
    out = proc.stdout.decode("utf-8", "replace").strip()
    return (json.loads(out) if out else None), dt, proc.returncode


def _context(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    return str((result.get("hookSpecificOutput") or {}).get("additionalContext") or "")


def throwaway_env(home: Path) -> dict[str, str]:
    """What a tool needs to run the real hooks against a throw-away data dir ``home`` (the demo, the benches):
    the data dir moved, but the runtime venv and the model stay this install's (COMPASS_HOME alone would move
    the runtime venv lookup to ``home/venv`` and the models to ``home/models``, where there are none)."""
    from ..config import load_config
    from ..embedding.manifest import find_model
    from ..errors import CompassError
    from ..paths import get_paths

    paths = get_paths()
    cfg = load_config(paths.config)
    name = str(cfg.get("model", "name"))
    try:
        folder = None if name.startswith("fake") else find_model(name).path
        models = str(folder.parent) if folder else str(paths.models)
    except CompassError:
        models = str(paths.models)  # not exported: the hooks say so, which is what the caller will show
    return {"COMPASS_HOME": str(home), "COMPASS_VENV": sys.prefix, "COMPASS_MODEL_DIR": models,
            "COMPASS_MODEL": name, "COMPASS_INT8": "1" if cfg.get("model", "int8") else "0"}


def _env(home: Path, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPASS_") and k != "CLAUDE_PLUGIN_DATA"}
    env.update(throwaway_env(home))
    env.update({
        "CLAUDE_PLUGIN_ROOT": str(root),
        # The demo's first prompt starts its own worker: let it wait for the model instead of failing open.
        "COMPASS_COLD_START": "60",
    })
    return env


def run_demo(keep: bool = False) -> dict[str, Any]:
    from ..paths import get_paths

    root = get_paths().plugin_root
    _command(root, "UserPromptSubmit")  # fail before making anything when the checkout is incomplete
    tmp = Path(tempfile.mkdtemp(prefix="compass-demo-"))
    home, project = tmp / "data", tmp / "project"
    project.mkdir(parents=True)
    carry_calibrations(home)
    env = _env(home, root)
    earlier, now = str(uuid.uuid4()), str(uuid.uuid4())
    steps: list[dict[str, Any]] = []
    plan: tuple[tuple[str, str, dict[str, Any]], ...] = (
        ("an earlier session: the user states a rule", earlier,
         {"hook_event_name": "UserPromptSubmit", "prompt": RULE}),
        ("a new session starts", now, {"hook_event_name": "SessionStart", "source": "startup"}),
        ("the user pushes toward drift", now, {"hook_event_name": "UserPromptSubmit", "prompt": DRIFT}),
        ("the agent runs Bash", now, {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                      "tool_input": {"command": COMMAND}, "tool_use_id": "toolu_demo"}),
    )
    try:
        for name, session, extra in plan:
            payload = {"session_id": session, "transcript_path": str(tmp / f"{session}.jsonl"), "cwd": str(project),
                       "permission_mode": "default", **extra}
            result, seconds, rc = run_hook(root, extra["hook_event_name"], payload, env)
            steps.append({"step": name, "event": extra["hook_event_name"], "input": extra.get("prompt")
                          or (extra.get("tool_input") or {}).get("command"), "exit_code": rc,
                          "seconds": round(seconds, 3), "output": result})
    finally:
        subprocess.run([sys.executable, "-m", "compass_hooks", "worker", "stop"], env=env, capture_output=True,
                       timeout=30)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"data_dir": str(home) if keep else None, "model": env["COMPASS_MODEL"], "steps": steps}


def _show(report: dict[str, Any]) -> None:
    click.echo(f"model: {report['model']} (a throw-away data dir and project; your memories are untouched)")
    for s in report["steps"]:
        click.echo("")
        head = f"[{s['event']}] {s['step']}"
        if s["input"]:
            head += f": {s['input']!r}"
        click.echo(head)
        click.echo(f"  exit {s['exit_code']} in {s['seconds'] * 1000:.0f} ms"
                   + ("  (includes starting the worker and loading the model)" if s is report["steps"][0] else ""))
        out = s["output"] or {}
        hso = out.get("hookSpecificOutput") or {}
        if hso.get("permissionDecision"):
            click.echo(f"  permissionDecision: {hso['permissionDecision']}: {hso.get('permissionDecisionReason', '')}")
        ctx = _context(out)
        if ctx:
            click.echo("  additionalContext Claude Code adds for the model:")
            for line in ctx.splitlines():
                click.echo(f"  | {line}")
        if out.get("systemMessage"):
            click.echo(f"  systemMessage: {out['systemMessage']}")
        if not out:
            click.echo("  (nothing injected: on track)")


@click.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print every hook call and its output as JSON.")
@click.option("--keep", is_flag=True, help="Keep the throw-away data dir (its path is printed).")
def demo(as_json: bool, keep: bool) -> None:
    """Run a short scripted session through the real hook launcher and show what the model would see.

    A rule is stated, a later prompt pushes against it (drift check + the recalled
    rule), then a force push reaches the PreToolUse guard. Runs in a throw-away
    data dir with its own worker, on the configured model.
    """
    report = run_demo(keep=keep)
    if any(s["exit_code"] != 0 for s in report["steps"]):
        raise CompassError("a hook exited non-zero; see `compass-hook doctor` and the hook log")
    if as_json:
        from . import echo_json

        echo_json(report)
    else:
        _show(report)
    if not _context(report["steps"][2]["output"]):
        raise CompassError("the drifting prompt produced no Compass block",
                           "check `compass-hook doctor` (model ready?) and the hook log in the data dir")


def register(cli: click.Group) -> None:
    cli.add_command(demo)
