"""Every path compass-hooks uses comes from :func:`get_paths`.

Stdlib only. The rule for the data dir, the models dir and the runtime venv
lives in :mod:`compass_hooks.dirs` (os only, shared with the hook hot path):
one store per user for every surface, ``$COMPASS_HOME`` overriding; models in
``<data>/models``, ``$COMPASS_MODEL_DIR`` overriding. ``$CLAUDE_PLUGIN_DATA`` is
never the store (it holds one plugin install's bootstrap venv).

The worker socket is ``<data>/run/worker.sock``, decided by the data dir alone
so that every surface (hooks, CLI, MCP servers started by editors with other
environments) reaches the same worker; when that path is too long for
``sun_path`` it is ``/tmp/compass-<uid>/w-<hash of the data dir>.sock`` in a
dir we own (``trust.ensure_private_dir`` refuses a planted symlink or another
user's dir, with a one-line reason, and the client gives up at once instead of
waiting for a worker that cannot bind there).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from . import dirs, spool

APP_NAME = dirs.APP_NAME
# sun_path is 108 bytes on Linux, 104 on macOS; keep a margin.
_MAX_SOCKET_PATH = 100


def plugin_root() -> Path:
    """The plugin root: the folder this package was imported from (checkout, staged copy or Claude Code's cache)."""
    here = Path(__file__).resolve().parent.parent
    if (here / ".claude-plugin").is_dir():
        return here
    env = os.environ.get("CLAUDE_PLUGIN_ROOT")
    return Path(env) if env else here


def data_dir() -> Path:
    return Path(dirs.user_data_dir())


def models_dir() -> Path:
    return Path(dirs.models_dir())


def runtime_venv() -> Path:
    return Path(dirs.runtime_venv())


def _socket_path(data: Path) -> Path:
    """``<data>/run/worker.sock``, else a short path in ``/tmp/compass-<uid>`` (one per data dir)."""
    override = os.environ.get("COMPASS_SOCKET")
    if override:
        return Path(override)
    path = data / "run" / "worker.sock"
    if len(os.fsencode(str(path))) <= _MAX_SOCKET_PATH:
        return path
    tag = hashlib.sha256(os.fsencode(os.path.realpath(str(data)))).hexdigest()[:16]
    return Path("/tmp") / f"compass-{os.getuid()}" / f"w-{tag}.sock"


@dataclass(frozen=True)
class Paths:
    data: Path
    config: Path
    db: Path
    audit_log: Path
    logs: Path
    models: Path
    socket: Path
    run: Path
    anchors_user: Path
    plugin_root: Path

    @property
    def worker_lock(self) -> Path:
        return self.run / "worker.lock"

    @property
    def worker_pid(self) -> Path:
        return self.run / "worker.pid"

    @property
    def spawn_lock(self) -> Path:
        return self.run / "spawn.lock"

    @property
    def hook_state(self) -> Path:
        return self.run / "hook-state.json"

    @property
    def spool(self) -> Path:
        """Hook captures the worker could not take yet (:mod:`compass_hooks.spool`)."""
        return Path(spool.spool_dir(self.data))

    @property
    def capture_health(self) -> Path:
        """Capture failures seen (counts, last error, since when): ``doctor`` reads it."""
        return self.run / "capture-health.json"

    def as_dict(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}

    def ensure(self, socket_dir: bool = True) -> "Paths":
        """Create the private dirs (0700). Idempotent. Raises InvalidInput (one line) for a dir that is another
        user's or a symlink planted where we create ours; nothing is ever chmodded through a symlink.

        The data dir may be a symlink of the user's own (to another disk): followed, but its target must be
        ours. ``run/`` and ``logs/`` are ours to create and are never followed. ``socket_dir``: also the
        socket's dir when it is not ``run/`` (the ``/tmp/compass-<uid>`` fallback, a shared place where another
        user can pre-create the name); False for callers that only write files (logging)."""
        from .trust import ensure_private_dir

        ensure_private_dir(self.data, follow=True)
        ensure_private_dir(self.logs)
        ensure_private_dir(self.run)
        if socket_dir and self.socket.parent != self.run:
            ensure_private_dir(self.socket.parent)
        return self


def get_paths() -> Paths:
    data = data_dir()
    return Paths(
        data=data,
        config=data / "config.toml",
        db=data / "compass.db",
        audit_log=data / "audit.log",
        logs=data / "logs",
        models=models_dir(),
        socket=_socket_path(data),
        run=data / "run",
        anchors_user=data / "anchors",
        plugin_root=plugin_root(),
    )
