"""Where data, models, the runtime venv and the socket live, and which setting wins.

Every test starts as a new user (conftest: a fresh HOME, no COMPASS_*, XDG_* or CLAUDE_* variables), so the
defaults asserted here are the ones a user gets.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from compass_hooks import dirs
from compass_hooks.paths import _MAX_SOCKET_PATH, get_paths


def test_one_user_store_by_default(compass_home):
    p = get_paths()
    assert p.data == compass_home == Path(os.environ["HOME"]) / ".local" / "share" / "compass-hooks"
    assert str(p.data) == platformdirs.user_data_dir("compass-hooks", appauthor=False)
    assert p.db.parent == p.config.parent == p.audit_log.parent == p.data
    assert p.models == p.data / "models"
    assert p.logs == p.data / "logs"


def test_plugin_data_is_never_the_store(monkeypatch, tmp_path, compass_home):
    """Inside Claude Code CLAUDE_PLUGIN_DATA is set; the hooks still use the user's one store (issue 11)."""
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "plugin"))
    p = get_paths()
    assert p.data == compass_home and p.models == compass_home / "models"
    assert dirs.plugin_install_data() == str(tmp_path / "plugin")


def test_compass_home_overrides_everything(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / "mine"))
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "plugin"))
    p = get_paths()
    assert p.data == tmp_path / "mine" and p.models == tmp_path / "mine" / "models"
    assert dirs.runtime_venv() == str(tmp_path / "mine" / "venv")


def test_xdg_data_home_follows_platformdirs(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert get_paths().data == tmp_path / "xdg" / "compass-hooks"
    assert dirs.user_data_dir() == platformdirs.user_data_dir("compass-hooks", appauthor=False)


def test_model_dir_and_venv_overrides(monkeypatch, tmp_path, compass_home):
    assert dirs.runtime_venv() == str(compass_home / "venv")
    monkeypatch.setenv("COMPASS_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("COMPASS_VENV", str(tmp_path / "venv"))
    assert get_paths().models == tmp_path / "models"
    assert dirs.runtime_venv() == str(tmp_path / "venv")


def test_socket_is_in_the_store(compass_home):
    """Decided by the data dir alone: an editor's MCP server with another environment reaches the same worker."""
    sock = compass_home / "run" / "worker.sock"
    if len(str(sock)) <= _MAX_SOCKET_PATH:  # a real user's is; a deep pytest tmp dir may not be
        assert get_paths().socket == sock
    else:
        assert get_paths().socket.parent == Path("/tmp") / f"compass-{os.getuid()}"


def test_socket_path_length_fallback(monkeypatch, tmp_path):
    long = tmp_path / ("x" * 120)
    monkeypatch.setenv("COMPASS_HOME", str(long / "home"))
    sock = get_paths().socket
    assert len(str(sock).encode()) <= _MAX_SOCKET_PATH
    assert sock.parent == Path("/tmp") / f"compass-{os.getuid()}"


def test_socket_differs_per_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / ("a" * 110)))
    a = get_paths().socket
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / ("b" * 110)))
    assert get_paths().socket != a
    monkeypatch.setenv("COMPASS_SOCKET", str(tmp_path / "s.sock"))
    assert get_paths().socket == tmp_path / "s.sock"


def test_as_dict_and_ensure(compass_home):
    p = get_paths()
    d = p.as_dict()
    assert {"data", "db", "audit_log", "socket", "models", "config", "logs"} <= d.keys()
    assert all(isinstance(v, str) for v in d.values())
    p.ensure()
    p.ensure()  # idempotent
    for folder in (p.data, p.logs, p.run):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
