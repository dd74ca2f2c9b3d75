"""Where the user's store is, decided with ``os`` alone.

The hook launcher runs ``python -I -S`` on every prompt and cannot afford
platformdirs (or pathlib); the native C client and the shell launchers follow
the same rule. So the rule lives here once, in plain functions:

- data dir: ``$COMPASS_HOME``, else platformdirs' user data dir for
  ``compass-hooks`` (``$XDG_DATA_HOME`` or ``~/.local/share`` on Linux,
  ``~/Library/Application Support`` on macOS). A test keeps this equal to
  ``platformdirs.user_data_dir("compass-hooks", appauthor=False)``.
- runtime venv (what install.sh builds and every launcher prefers):
  ``$COMPASS_VENV``, else ``<user data dir>/venv``.
- plugin install data: ``$CLAUDE_PLUGIN_DATA``, set by Claude Code for one
  plugin install. It holds only that install's bootstrap venv, stamps and build
  log, never memories: every surface (hooks, MCP, CLI) shares one store.
- models: exported into ``models_dir()``; read from there, then from the models
  dir recorded by the install that built the running venv (``INSTALL_RECORD`` in
  ``sys.prefix``), so a model exported by any install path serves the others
  (for example a checkout set up by ./install.sh and loaded with ``claude
  --plugin-dir`` under another HOME) and is never exported twice.
"""

from __future__ import annotations

import json
import os
import sys

APP_NAME = "compass-hooks"
# Written by install.sh and the plugin bootstrap into the venv they build: where that install keeps its models.
INSTALL_RECORD = "compass-install.json"
# Written last into a bootstrapped venv: sha256 of the pyproject.toml it was built for.
BOOTSTRAP_STAMP = ".compass-requirements.sha256"


def platform_data_dir() -> str:
    """platformdirs' user data dir for compass-hooks, without importing platformdirs."""
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Application Support", APP_NAME)
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    if not base:
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, APP_NAME)


def user_data_dir() -> str:
    """The user's one store: ``$COMPASS_HOME``, else the platform's user data dir."""
    value = os.environ.get("COMPASS_HOME")
    if value:
        return os.path.expanduser(value)
    return platform_data_dir()


def models_dir() -> str:
    """The one models dir every install path exports into and every surface reads."""
    value = os.environ.get("COMPASS_MODEL_DIR")
    if value:
        return os.path.expanduser(value)
    return os.path.join(user_data_dir(), "models")


def runtime_venv() -> str:
    """The lean runtime venv install.sh builds (onnxruntime, tokenizers, numpy; no torch)."""
    value = os.environ.get("COMPASS_VENV")
    if value:
        return os.path.expanduser(value)
    return os.path.join(user_data_dir(), "venv")


def user_cache_dir() -> str:
    """platformdirs' user cache dir for compass-hooks (the dev env, the throw-away export env)."""
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches", APP_NAME)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, APP_NAME)


def export_env_dir() -> str:
    """The throw-away env with torch and optimum that a model export builds, and removes unless kept."""
    return os.path.join(user_cache_dir(), "export-env")


def plugin_install_data() -> str | None:
    """``$CLAUDE_PLUGIN_DATA`` when running as an installed Claude Code plugin (bootstrap venv only)."""
    value = os.environ.get("CLAUDE_PLUGIN_DATA")
    return os.path.expanduser(value) if value else None


def install_record(prefix: str | None = None) -> dict[str, str]:
    """What the install that built the venv at ``prefix`` (default: the running one) recorded, or {}."""
    try:
        with open(os.path.join(prefix or sys.prefix, INSTALL_RECORD), encoding="utf-8") as fh:
            rec = json.load(fh)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in rec.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(rec, dict) else {}


def model_search_dirs() -> list[str]:
    """Where models are looked for, in order: the user's models dir, then the one the running venv's install used."""
    out = [models_dir()]
    other = install_record().get("models")
    if other and os.path.realpath(other) != os.path.realpath(out[0]):
        out.append(other)
    return out


def plugin_updated(bootstrap_dir: str, plugin_root: str, executable: str) -> bool:
    """Running from the venv bootstrapped in ``bootstrap_dir`` while the plugin's pyproject.toml is newer than
    that venv's stamp: a plugin update may need other packages. Two stats (it runs on every hook); the
    bootstrap compares the hashes."""
    venv = os.path.join(bootstrap_dir, "venv")
    # Not sys.prefix: under -S it is the base interpreter's. The venv's python is a symlink: keep its dir.
    if os.path.realpath(os.path.dirname(os.path.dirname(executable))) != os.path.realpath(venv):
        return False
    try:
        stamp = os.stat(os.path.join(venv, BOOTSTRAP_STAMP)).st_mtime_ns
        return os.stat(os.path.join(plugin_root, "pyproject.toml")).st_mtime_ns > stamp
    except OSError:
        return True
