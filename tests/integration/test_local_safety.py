"""Other local users (issue 14, local safety): a planted socket dir, a taken HTTP port, config targets that are
not regular files. Each is refused with one line, fails fast, and touches nothing it does not own.

The tests run as root (the suite chowns to nobody to play the other user); they never touch the real
/tmp/compass-<uid> (other checkouts' tests use it): every path here is under the test's tmp_path."""

from __future__ import annotations

import dataclasses
import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from compass_hooks.cli import cli
from compass_hooks.errors import InvalidInput, WorkerUnavailable
from compass_hooks.paths import get_paths
from mcp_client import COMPASS_MCP, server_env

NOBODY = 65534


def _foreign_dir(path: Path, mode: int = 0o777) -> Path:
    path.mkdir()
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)
    return path


def _with_socket_in(folder: Path):
    return dataclasses.replace(get_paths(), socket=folder / "w.sock")


@pytest.mark.parametrize("kind", ["foreign", "symlink-to-foreign", "symlink-to-ours", "file"])
def test_a_planted_socket_dir_is_refused_and_never_chmodded(tmp_path, kind):
    fallback = tmp_path / "compass-0"
    target = tmp_path / "target"
    if kind == "foreign":
        _foreign_dir(fallback)
    elif kind == "file":
        fallback.write_text("x")
    else:
        _foreign_dir(target) if kind == "symlink-to-foreign" else target.mkdir(mode=0o755)
        os.chmod(target, 0o777 if kind == "symlink-to-foreign" else 0o755)
        fallback.symlink_to(target)
    with pytest.raises(InvalidInput) as err:
        _with_socket_in(fallback).ensure()
    assert "\n" not in err.value.message and str(fallback) in err.value.message
    if target.exists():
        assert stat.S_IMODE(target.stat().st_mode) == (0o777 if kind == "symlink-to-foreign" else 0o755)


def test_a_planted_socket_dir_fails_fast_instead_of_waiting(tmp_path):
    from compass_hooks.worker import client

    paths = _with_socket_in(_foreign_dir(tmp_path / "compass-0", 0o755))
    t0 = time.monotonic()
    with pytest.raises(WorkerUnavailable, match="refusing the worker socket: .* owned by uid 65534"):
        client.ensure_worker(paths, wait_s=10)
    assert time.monotonic() - t0 < 2  # no spawn, no polling until the deadline


def test_run_dir_symlink_in_the_data_dir_is_not_followed(tmp_path):
    paths = get_paths()
    paths.data.mkdir(parents=True, exist_ok=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o755)
    paths.run.symlink_to(elsewhere)
    with pytest.raises(InvalidInput, match="symlink"):
        paths.ensure()
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


def test_the_users_own_data_dir_symlink_is_fine(tmp_path):
    real = tmp_path / "disk" / "compass"
    real.mkdir(parents=True, mode=0o755)
    paths = get_paths()
    paths.data.parent.mkdir(parents=True, exist_ok=True)
    if paths.data.exists():  # the test user's calibration (conftest) moves to the real dir behind the link
        os.rename(paths.data, real / "moved")
    paths.data.symlink_to(real)
    paths.ensure()
    assert stat.S_IMODE(real.stat().st_mode) == 0o700 and paths.run.is_dir()


# --------------------------------------------------------------------------- the HTTP transport


@pytest.mark.slow
def test_http_on_a_taken_port_says_so_in_one_line_and_shows_no_token(tmp_path, compass_home):
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    port = squatter.getsockname()[1]
    try:
        proc = subprocess.run([str(COMPASS_MCP), "--http", "--port", str(port)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, env={**os.environ, **server_env()})
    finally:
        squatter.close()
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "already in use by another process" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "token:" not in proc.stderr
    assert not (compass_home / "mcp-http-token").exists()  # not even created: nothing to hand out


# --------------------------------------------------------------------------- editor config writes


def _write(cli_runner, path: Path):
    return cli_runner.invoke(cli, ["mcp", "config", "cursor", "--write", "--path", str(path), "--json"])


def test_a_symlinked_config_is_refused_and_stays_a_symlink(cli_runner, tmp_path):
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    r = _write(cli_runner, link)
    assert r.exit_code == 1 and "is a symlink; not writing through it" in r.output
    assert link.is_symlink() and real.read_text() == "{}"


def test_a_device_is_refused_and_left_alone(cli_runner, tmp_path):
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own: the real one is shared
    r = _write(cli_runner, dev)
    assert r.exit_code == 1 and "character device" in r.output and "internal error" not in r.output
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_fifo_is_refused_without_hanging(cli_runner, tmp_path):
    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    r = _write(cli_runner, fifo)
    assert r.exit_code == 1 and "FIFO" in r.output and time.monotonic() - t0 < 5
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_parent_that_is_a_file_is_one_line(cli_runner, tmp_path):
    (tmp_path / "cfg").write_text("not a folder")
    r = _write(cli_runner, tmp_path / "cfg" / "mcp.json")
    assert r.exit_code == 1 and "is a file, not a directory" in r.output and "internal error" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_the_write_is_atomic_and_keeps_the_mode(cli_runner, tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"fs": {"command": "npx"}}}')
    os.chmod(path, 0o640)
    r = _write(cli_runner, path)
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and not path.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if "compass-tmp" in p.name) == []
    backups = [p for p in tmp_path.iterdir() if ".bak-" in p.name]
    assert len(backups) == 1 and stat.S_IMODE(backups[0].stat().st_mode) == 0o640
