"""Where data, models and the socket live, and which setting wins."""

from __future__ import annotations

import os
import stat

from compass_hooks.paths import _MAX_SOCKET_PATH, get_paths, plugin_root


def test_compass_home_beats_plugin_data(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "plugin"))
    p = get_paths()
    assert p.data == tmp_path / "home"
    assert p.db.parent == p.config.parent == p.audit_log.parent == tmp_path / "home"


def test_plugin_data_when_running_as_plugin(monkeypatch, tmp_path):
    monkeypatch.delenv("COMPASS_HOME")
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "plugin"))
    p = get_paths()
    assert p.data == tmp_path / "plugin"
    assert p.models == tmp_path / "plugin" / "models"


def test_platformdirs_when_nothing_is_set(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv("COMPASS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    p = get_paths()
    assert p.data == tmp_path / "xdg" / "compass-hooks"
    assert str(p.data) == platformdirs.user_data_dir("compass-hooks", appauthor=False)


def test_model_dir_precedence(monkeypatch, tmp_path):
    assert get_paths().models == plugin_root() / "models"  # COMPASS_HOME alone: the checkout's models/
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "plugin"))
    assert get_paths().models == plugin_root() / "models"  # COMPASS_HOME decides the data dir, not models
    monkeypatch.delenv("COMPASS_HOME")
    assert get_paths().models == tmp_path / "plugin" / "models"
    monkeypatch.setenv("COMPASS_MODEL_DIR", str(tmp_path / "mine"))
    assert get_paths().models == tmp_path / "mine"


def test_socket_prefers_runtime_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "rt"))
    sock = get_paths().socket
    assert sock.parent == tmp_path / "rt" / "compass-hooks"
    assert sock.name.startswith("w-") and sock.suffix == ".sock"


def test_socket_path_length_fallback(monkeypatch, tmp_path):
    long = tmp_path / ("x" * 120)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long))
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / "h"))
    sock = get_paths().socket
    assert len(str(sock).encode()) <= _MAX_SOCKET_PATH
    assert sock.parent == tmp_path / "h" / "run"  # runtime dir too long: under the data dir
    # Data dir too long as well: the temp-dir fallback, still short.
    monkeypatch.setenv("COMPASS_HOME", str(long / "home"))
    sock = get_paths().socket
    assert len(str(sock).encode()) <= _MAX_SOCKET_PATH
    assert sock.parent.name == f"compass-{os.getuid()}"


def test_socket_differs_per_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / "a"))
    a = get_paths().socket
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / "b"))
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
