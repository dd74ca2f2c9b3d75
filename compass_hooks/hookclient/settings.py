"""The settings a hook needs, without importing ``paths``/``config`` on every prompt.

``compass_hooks.paths`` and ``config`` pull in dataclasses, pathlib, tempfile,
hashlib and tomllib: about as long to import as Python takes to start. So the
first hook computes its settings the slow way and caches them in
``<data>/run/hook-settings.json`` (the data dir comes from :mod:`..dirs`, os
only); later hooks read that file while the cache key still matches: the
package version, the plugin root this code runs from, every ``COMPASS_*`` /
``XDG_*`` / ``CLAUDE_PLUGIN_*`` / ``HOME`` variable, and the config file's mtime
and size. Anything else takes the slow path, which is always correct. Stdlib
only (json, os).
"""

from __future__ import annotations

import json
import os
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import on the hook hot path
    from typing import Any

from .. import PROTOCOL_VERSION, __version__, dirs

CACHE_NAME = "hook-settings.json"
HOOK_KEYS = ("budget_chars", "cold_start_s", "connect_timeout_s", "request_timeout_s", "failures_before_notice",
             "max_stdin_bytes", "pretooluse", "enabled")


# The plugin root this code was imported from: two installs (a checkout, Claude Code's cache) share one store.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _key(data: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items()
           if k.startswith(("COMPASS_", "XDG_", "CLAUDE_PLUGIN_")) or k == "HOME"}
    try:
        st = os.stat(os.path.join(data, "config.toml"))
        conf: list[int] | None = [st.st_mtime_ns, st.st_size]
    except OSError:
        conf = None
    return {"version": __version__, "protocol": PROTOCOL_VERSION, "root": _ROOT, "env": env, "config": conf}


def compute() -> dict[str, Any]:
    """The slow, authoritative way: get_paths() + load_config()."""
    from ..config import load_config
    from ..paths import get_paths

    paths = get_paths()
    cfg = load_config(paths.config)
    hooks = cfg.section("hooks")
    out: dict[str, Any] = {k: hooks[k] for k in HOOK_KEYS}
    out.update({
        "data": str(paths.data), "socket": str(paths.socket), "logs": str(paths.logs), "run": str(paths.run),
        "hook_state": str(paths.hook_state), "plugin_root": str(paths.plugin_root), "models": str(paths.models),
        "plugin_data": dirs.plugin_install_data(), "runtime_venv": dirs.runtime_venv(),
        "start_timeout_s": cfg.get("worker", "start_timeout_s"),
    })
    return out


def load() -> dict[str, Any]:
    """Hook settings: from the cache when its key matches, else computed (and cached)."""
    data = dirs.user_data_dir()
    cache = os.path.join(data, "run", CACHE_NAME)
    key = _key(data)
    if cache:
        try:
            with open(cache, encoding="utf-8") as fh:
                cached = json.load(fh)
            if isinstance(cached, dict) and cached.get("key") == key and isinstance(cached.get("settings"), dict):
                return cached["settings"]
        except (OSError, ValueError):
            pass
    settings = compute()
    if os.path.realpath(settings["data"]) == os.path.realpath(data):
        try:
            os.makedirs(os.path.dirname(cache), mode=0o700, exist_ok=True)
            tmp = f"{cache}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "settings": settings}, fh)
            os.replace(tmp, cache)
        except OSError:
            pass  # read-only data dir: every hook takes the slow path, still correct
    return settings


def bootstrap_dir(s: dict[str, Any]) -> str:
    """Where this plugin install keeps its bootstrap venv, stamps and build log: ``$CLAUDE_PLUGIN_DATA``
    (one per install), else the user data dir. Never the memories: those are in ``s["data"]`` for every surface."""
    return s.get("plugin_data") or s["data"]
