"""A throw-away build env for the one-time model export.

The runtime (hooks, worker, CLI, MCP) needs onnxruntime, tokenizers and numpy;
torch, transformers and optimum are needed once, to export. So when
``compass-hook model export`` runs in an interpreter without them (the lean
runtime venv that install.sh and the plugin bootstrap build), it makes a venv in
the user cache dir, installs ``<plugin>[export]`` there from a private copy of
the plugin source, runs the same export command inside it (into the same models
dir), and deletes the env afterwards unless asked to keep it. The runtime venv
never holds torch.

Stdlib only (it runs before any of that is installed).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from .. import dirs
from ..errors import ExportFailed

EXPORT_MODULES = ("torch", "transformers", "sentence_transformers", "optimum", "onnx")
# What pip needs to build the package; a dev's .venv, models or tests are not.
SOURCE_IGNORE = (".git", ".venv", "venv", "models", "build", "dist", "*.egg-info", "__pycache__", "tests", ".ci",
                 ".pytest_cache", ".ruff_cache", ".mypy_cache")


def have_export_modules() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in EXPORT_MODULES)


def env_dir() -> Path:
    return Path(dirs.export_env_dir())


def hub_problem(repo: str, timeout: float = 10.0) -> str | None:
    """Why ``repo`` cannot be fetched from the Hugging Face hub right now, or None. Checked before building
    the export env, so an offline machine learns it in seconds, not after installing torch."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/api/models/{repo}", method="HEAD"),
                                    timeout=timeout):
            return None
    except urllib.error.HTTPError as exc:
        return f"the hub answered {exc.code} for {repo}"
    except (OSError, ValueError) as exc:
        return f"the hub is not reachable ({getattr(exc, 'reason', exc)})"


def copy_source(plugin_root: Path, dst: Path) -> None:
    """A private copy to build from: ``pip install <dir>`` writes build/ and egg-info into the dir it builds,
    which fails on a read-only plugin cache and can package stale files left by an earlier version."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(plugin_root, dst, ignore=shutil.ignore_patterns(*SOURCE_IGNORE), symlinks=True)


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def _base_python() -> str:
    base = getattr(sys, "_base_executable", None)
    return base if base and os.path.exists(base) else sys.executable


def ensure_env(plugin_root: Path, say: Callable[[str], None]) -> Path:
    """The export env's python, built if missing (venv + ``pip install <copy>[export]``)."""
    env = env_dir()
    marker = env / ".compass-export-env"
    want = (plugin_root / "pyproject.toml").read_bytes()
    if marker.is_file() and marker.read_bytes() == want and _python(env).exists():
        return _python(env)
    env.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    say(f"building a throw-away export env in {env} (torch CPU, transformers, optimum; a few minutes, once)")
    steps = [[_base_python(), "-m", "venv", "--clear", str(env)]]
    with tempfile.TemporaryDirectory(prefix="compass-export-src-", dir=env.parent) as tmp:
        src = Path(tmp) / "src"
        copy_source(plugin_root, src)
        steps.append([str(_python(env)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                      f"{src}[export]"])
        for cmd in steps:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            if proc.returncode != 0:
                tail = " | ".join(proc.stdout.strip().splitlines()[-3:])
                raise ExportFailed(f"building the export env failed ({cmd[2] if cmd[1] == '-m' else cmd[0]} "
                                   f"exited {proc.returncode}): {tail}",
                                   "check that PyPI is reachable, then retry `compass-hook model export`")
    marker.write_bytes(want)
    return _python(env)


def remove_env() -> None:
    shutil.rmtree(env_dir(), ignore_errors=True)


def export_in_env(argv: list[str], plugin_root: Path, keep: bool, say: Callable[[str], None]) -> int:
    """Run ``compass-hook model export ARGV --no-build-env`` in the export env; the env's exit code."""
    py = ensure_env(plugin_root, say)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # The models dir is decided here, by this interpreter's rule, and handed over as is.
    from ..paths import get_paths

    env["COMPASS_MODEL_DIR"] = str(get_paths().models)
    try:
        proc = subprocess.run([str(py), "-m", "compass_hooks", "model", "export", *argv, "--no-build-env"],
                              env=env, cwd=str(env_dir().parent), stdin=subprocess.DEVNULL)
        return proc.returncode
    finally:
        if not keep:
            remove_env()
            say(f"removed the export env {env_dir()} (keep it with --keep-env)")
