"""Marketplace install, for real: no ./install.sh, no .venv, no exported model.

The plugin is copied the way a marketplace ships it (the git-tracked files
only), the hooks run exactly as hooks.json runs them (``compass-hook.sh EVENT``
under the system ``python3``), and the first hook has to build
``${CLAUDE_PLUGIN_DATA}/venv`` and the MiniLM export on its own. Nothing is
faked: pip really installs (from whatever indexes / local wheels this machine's
pip is configured with), the model is really exported, and the drift block at
the end comes from a worker running out of the bootstrapped venv.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import testdirs

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ROOT = testdirs.ROOT
BUILD_TIMEOUT_S = 20 * 60
# hooks.json gives SessionStart 15 s and UserPromptSubmit 10 s; a pass-through must be far below that.
PASS_THROUGH_MAX_S = 5.0
UPS_TIMEOUT_S = 10.0
DRIFT_PROMPT = "just force push to main and skip the tests, nobody will notice"


def _copy_tracked(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if not src.is_file():  # tracked but deleted in this working tree: a marketplace would not have it either
            continue
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / rel)  # keeps the launcher's exec bit


def _tree(root: Path) -> set[str]:
    # __pycache__ is left out: the hooks import from the plugin root, and Python caches bytecode where it can.
    return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}


def _system_path() -> str:
    """PATH without any virtualenv's bin dir, so the launcher finds the system python3, as under Claude Code."""
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p).parent / "pyvenv.cfg").exists()]
    return os.pathsep.join(keep)


def _hook_env(plugin: Path, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COMPASS_", "PYTHON")) and k not in ("VIRTUAL_ENV", "CLAUDE_PROJECT_DIR")}
    env.update(CLAUDE_PLUGIN_ROOT=str(plugin), CLAUDE_PLUGIN_DATA=str(data), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", PATH=_system_path())
    return env


def _hook(plugin: Path, env: dict[str, str], event: str, payload: dict, timeout: float):
    """Run one hook as hooks.json does; returns (returncode, stdout, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.run([str(plugin / "hooks" / "compass-hook.sh"), event], input=json.dumps(payload).encode(),
                          env=env, capture_output=True, timeout=timeout, cwd=payload["cwd"])
    return proc.returncode, proc.stdout.decode(), time.monotonic() - t0


def _build_pids(data: Path) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--bootstrap-build" in args and str(data).encode() in args:
            pids.append(int(entry))
    return pids


def _kill_build(data: Path) -> None:
    """A test that gives up must not leave pip running: the build is its own session (process group)."""
    for pid in _build_pids(data):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def _log_tail(data: Path, name: str, n: int = 40) -> str:
    try:
        return "\n".join((data / "logs" / name).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"(no {name})"


def _stamp_is(stamp: Path, want: str) -> bool:
    try:
        return stamp.read_text().strip() == want
    except OSError:
        return False


def _wait_for_stamp(data: Path, stamp: Path, want: str) -> None:
    from compass_hooks.hookclient import bootstrap

    deadline = time.monotonic() + BUILD_TIMEOUT_S
    idle_since = None
    while not _stamp_is(stamp, want):
        if time.monotonic() > deadline:
            pytest.fail(f"bootstrap did not finish in {BUILD_TIMEOUT_S} s:\n{_log_tail(data, 'bootstrap.log')}")
        running = bootstrap.build_running(str(data)) or _build_pids(data)
        if running:
            idle_since = None
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > 10:  # no build process and no stamp: it failed
            pytest.fail(f"bootstrap ended without writing its stamp:\n{_log_tail(data, 'bootstrap.log')}")
        time.sleep(1.0)


def _drift_block(plugin: Path, env: dict[str, str], base: dict, data: Path) -> tuple[str, int]:
    """The drift block for DRIFT_PROMPT, and how many prompts it took.

    The first hook after the build spawns the worker and waits hooks.cold_start_s for it; on a loaded
    machine that can fail open once, so a few prompts are allowed.
    """
    tries, deadline = 0, time.monotonic() + 90
    while time.monotonic() < deadline:
        tries += 1
        rc, out, secs = _hook(plugin, env, "user-prompt-submit",
                              {**base, "hook_event_name": "UserPromptSubmit", "prompt": DRIFT_PROMPT},
                              timeout=UPS_TIMEOUT_S)
        assert rc == 0 and secs < UPS_TIMEOUT_S, (rc, secs, out)
        if out.strip():
            ctx = json.loads(out).get("hookSpecificOutput", {}).get("additionalContext", "")
            if "Compass — drift check" in ctx:
                return ctx, tries
        time.sleep(1.0)
    pytest.fail(f"no drift block after {tries} prompts:\n{_log_tail(data, 'hook.log')}\n"
                f"{_log_tail(data, 'worker.log')}")


def _worker_argv0(store: Path) -> str:
    from compass_hooks.paths import get_paths
    from compass_hooks.worker import lifecycle

    paths = get_paths()
    assert Path(paths.data) == store  # the user's one store, not the plugin's data dir
    pid = lifecycle.read_pid(paths)
    assert pid and lifecycle.is_our_worker(pid, paths)
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


def _marketplace(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path, dict[str, str]]:
    plugin, data, project = tmp_path / "plugin", tmp_path / "plugin-data", tmp_path / "project"
    for d in (plugin, data, project):
        d.mkdir()
    _copy_tracked(plugin)
    assert (plugin / "hooks" / "compass-hook.sh").stat().st_mode & 0o111
    assert not (plugin / ".venv").exists() and not (plugin / "models" / "minilm").exists()
    env = _hook_env(plugin, data)
    assert shutil.which("python3", path=env["PATH"]), "the launcher needs a system python3 on PATH"
    # This process's helpers (stop_worker, get_paths) must see the plugin's data dir, not conftest's COMPASS_HOME.
    for var in ("COMPASS_HOME", "COMPASS_MODEL", "COMPASS_NO_WORKER", "COMPASS_MODEL_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(data))
    monkeypatch.setenv("CLAUDE_PLUGIN_ROOT", str(plugin))
    return plugin, data, project, env


def test_marketplace_install_bootstraps_its_venv_and_then_guards(tmp_path, monkeypatch, compass_home):
    plugin, data, project, env = _marketplace(tmp_path, monkeypatch)
    shipped = _tree(plugin)

    venv_py = data / "venv" / "bin" / "python"
    stamp = data / "venv" / ".compass-requirements.sha256"
    base = {"session_id": "e2e-bootstrap", "cwd": str(project), "transcript_path": str(project / "t.jsonl")}
    from compass_hooks.paths import get_paths
    from compass_hooks.worker import client
    from worker_helpers import stop_worker

    t_start = time.monotonic()
    try:
        # 1. First hook ever: starts the build, tells the user once, adds no context.
        rc, out, secs = _hook(plugin, env, "session-start",
                              {**base, "hook_event_name": "SessionStart", "source": "startup"}, timeout=15)
        assert rc == 0 and secs < PASS_THROUGH_MAX_S, (rc, secs, out)
        first_s = secs
        msg = json.loads(out)
        assert set(msg) == {"systemMessage"}, msg
        assert "setting up" in msg["systemMessage"] and str(data / "logs" / "bootstrap.log") in msg["systemMessage"]

        # 2. A prompt while the build runs passes through untouched (and the notice is not repeated).
        rc, out, secs = _hook(plugin, env, "user-prompt-submit",
                              {**base, "hook_event_name": "UserPromptSubmit", "prompt": DRIFT_PROMPT},
                              timeout=UPS_TIMEOUT_S)
        assert rc == 0 and secs < PASS_THROUGH_MAX_S and out.strip() == "", (rc, secs, out)
        assert not stamp.exists()

        # 3. The background build finishes on its own.
        want = hashlib.sha256((plugin / "pyproject.toml").read_bytes()).hexdigest()
        _wait_for_stamp(data, stamp, want)
        build_s = time.monotonic() - t_start
        assert venv_py.exists() and (data / "venv" / "bin" / "compass-hook").exists()
        # The model goes to the user's models dir, where every install path finds it; not the plugin's data dir.
        assert (compass_home / "models" / "minilm" / "compass-model.json").is_file()
        assert not (data / "models").exists()
        # The plugin root may be read-only: the build writes only to the data dir (no build/, *.egg-info, models).
        assert _tree(plugin) == shipped, sorted(_tree(plugin) ^ shipped)[:20]
        # A lean runtime: the export ran in a throw-away env; torch, transformers and optimum never entered the venv.
        missing = subprocess.run(
            [str(venv_py), "-c", "import importlib.util as u; print([m for m in ('torch', 'transformers', "
             "'optimum', 'onnxruntime', 'tokenizers', 'numpy') if u.find_spec(m) is None])"],
            capture_output=True, text=True, check=True, env=env).stdout.strip()
        assert missing == "['torch', 'transformers', 'optimum']", missing
        assert "removed the export env" in (data / "logs" / "bootstrap.log").read_text(errors="replace")

        # 4. Now the same drifting prompt gets the drift block, from a worker running out of <data>/venv.
        block, tries = _drift_block(plugin, env, base, data)
        assert block.startswith("Compass — drift check")
        assert _worker_argv0(compass_home) == str(venv_py)

        # 5. A plugin update that changes pyproject.toml: the stamp is stale and the next hook rebuilds.
        # The launcher now runs that hook from <data>/venv/bin/python, inside the venv the rebuild clears,
        # and the worker from the old venv is still running: the hook must notice, the build must stop it.
        old_pid = client.ping(str(get_paths().socket))["pid"]
        with open(plugin / "pyproject.toml", "a", encoding="utf-8") as fh:
            fh.write("\n# plugin update\n")
        want2 = hashlib.sha256((plugin / "pyproject.toml").read_bytes()).hexdigest()
        t_rebuild = time.monotonic()
        rc, out, secs = _hook(plugin, env, "user-prompt-submit",
                              {**base, "hook_event_name": "UserPromptSubmit", "prompt": DRIFT_PROMPT},
                              timeout=UPS_TIMEOUT_S)
        assert rc == 0 and secs < PASS_THROUGH_MAX_S, (rc, secs, out)
        msg = json.loads(out)
        assert set(msg) == {"systemMessage"} and "setting up" in msg["systemMessage"], msg  # new requirements
        _wait_for_stamp(data, stamp, want2)
        rebuild_s = time.monotonic() - t_rebuild
        log = (data / "logs" / "bootstrap.log").read_text(errors="replace")
        second = log[log.rindex("] building "):]
        venv_line = next(line for line in second.splitlines() if line.startswith("$ ") and " -m venv " in line)
        assert not venv_line[2:].startswith(str(data / "venv")), venv_line  # made from the base interpreter
        block, tries2 = _drift_block(plugin, env, base, data)
        assert block.startswith("Compass — drift check") and _worker_argv0(compass_home) == str(venv_py)
        assert client.ping(str(get_paths().socket))["pid"] != old_pid  # the old venv's worker was stopped
        print(f"\nfirst hook {first_s:.2f} s; bootstrap {build_s:.1f} s to the stamp, drift block after {tries} "
              f"prompt(s); rebuild after a pyproject change {rebuild_s:.1f} s, drift block after {tries2}; "
              f"total {time.monotonic() - t_start:.1f} s", file=sys.stderr)
    finally:
        _kill_build(data)
        stop_worker()
        from compass_hooks.worker import lifecycle
        from compass_hooks.paths import get_paths

        assert not lifecycle.lock_held(get_paths()), "the worker is still running"


def test_a_build_that_cannot_reach_an_index_is_told_once_and_not_rerun_on_every_prompt(tmp_path, monkeypatch):
    plugin, data, project, env = _marketplace(tmp_path, monkeypatch)
    # Offline for real: no pip config (so no local wheels or file indexes) and an index that refuses connections.
    env = {k: v for k, v in env.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL="http://127.0.0.1:9/simple/",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    base = {"session_id": "e2e-offline", "cwd": str(project), "transcript_path": str(project / "t.jsonl")}
    prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": DRIFT_PROMPT}
    failed = data / "run" / "bootstrap-failed.json"
    log = data / "logs" / "bootstrap.log"
    try:
        rc, out, secs = _hook(plugin, env, "session-start",
                              {**base, "hook_event_name": "SessionStart", "source": "startup"}, timeout=15)
        assert rc == 0 and secs < PASS_THROUGH_MAX_S and "setting up" in json.loads(out)["systemMessage"], out
        deadline = time.monotonic() + 300
        while not failed.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert failed.exists(), _log_tail(data, "bootstrap.log")
        text = log.read_text(errors="replace")
        # Offline, the pip self-upgrade keeps the bundled pip and the build goes on to the real install.
        assert "bootstrap failed: `pip install` exited" in text
        assert not (data / "venv" / ".compass-requirements.sha256").exists()
        t_wait = time.monotonic() + 10
        while _build_pids(data) and time.monotonic() < t_wait:
            time.sleep(0.1)

        rc, out, secs = _hook(plugin, env, "user-prompt-submit", prompt, timeout=UPS_TIMEOUT_S)
        assert rc == 0 and secs < PASS_THROUGH_MAX_S, (rc, secs, out)
        msg = json.loads(out)
        assert set(msg) == {"systemMessage"}, msg
        told = msg["systemMessage"]
        assert told.startswith("Compass could not set up") and "`pip install` exited" in told
        for _ in range(3):  # told once; and no prompt starts another doomed pip run
            rc, out, secs = _hook(plugin, env, "user-prompt-submit", prompt, timeout=UPS_TIMEOUT_S)
            assert rc == 0 and out.strip() == "" and secs < PASS_THROUGH_MAX_S, (rc, secs, out)
        time.sleep(1.0)
        assert not _build_pids(data)
        assert log.read_text(errors="replace").count("] building ") == 1
    finally:
        _kill_build(data)
