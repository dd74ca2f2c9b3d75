"""Every path compass-hooks uses comes from :func:`get_paths`.

Stdlib only at import time (the hook launcher imports this on every prompt);
platformdirs is imported lazily, only when no environment variable decides.

Data dir: ``$COMPASS_HOME`` > ``$CLAUDE_PLUGIN_DATA`` (running as a Claude Code
plugin) > platformdirs' user data dir for ``compass-hooks``.
Models:   ``$COMPASS_MODEL_DIR`` > ``$CLAUDE_PLUGIN_DATA/models`` > ``<plugin root>/models``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, asdict
from pathlib import Path

APP_NAME = "compass-hooks"
# sun_path is 108 bytes on Linux, 104 on macOS; keep a margin.
_MAX_SOCKET_PATH = 100


def plugin_root() -> Path:
    """The plugin root: this checkout (the package sits at the repo root)."""
    env = os.environ.get("CLAUDE_PLUGIN_ROOT")
    here = Path(__file__).resolve().parent.parent
    if (here / ".claude-plugin").is_dir() or not env:
        return here
    return Path(env)


def _user_data_dir() -> Path:
    try:
        import platformdirs  # noqa: PLC0415 - lazy on purpose

        return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    except ImportError:  # hook launcher without site-packages: same rule as platformdirs on Linux
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        return Path(base) / APP_NAME


def data_dir() -> Path:
    for var in ("COMPASS_HOME", "CLAUDE_PLUGIN_DATA"):
        value = os.environ.get(var)
        if value:
            return Path(value).expanduser()
    return _user_data_dir()


def models_dir() -> Path:
    value = os.environ.get("COMPASS_MODEL_DIR")
    if value:
        return Path(value).expanduser()
    value = os.environ.get("CLAUDE_PLUGIN_DATA")
    if value and not os.environ.get("COMPASS_HOME"):
        return Path(value).expanduser() / "models"
    return plugin_root() / "models"


def _socket_path(data: Path) -> Path:
    """Socket in the user runtime dir, one per data dir (hash of its path)."""
    override = os.environ.get("COMPASS_SOCKET")
    if override:
        return Path(override)
    tag = hashlib.sha256(str(data.resolve()).encode()).hexdigest()[:12]
    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        candidates.append(Path(runtime) / APP_NAME)
    candidates.append(data / "run")
    candidates.append(Path(tempfile.gettempdir()) / f"compass-{os.getuid()}")
    for base in candidates:
        path = base / f"w-{tag}.sock"
        if len(str(path).encode()) <= _MAX_SOCKET_PATH:
            return path
    return candidates[-1] / f"w-{tag}.sock"


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

    def as_dict(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}

    def ensure(self) -> "Paths":
        """Create the private dirs (0700). Idempotent."""
        for d in (self.data, self.logs, self.run, self.socket.parent):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                os.chmod(d, 0o700)
            except OSError:
                pass
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
