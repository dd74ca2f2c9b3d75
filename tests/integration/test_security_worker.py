"""The real worker: private socket and dirs, peer-uid check, no TCP listener."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import tempfile

import pytest

from compass_hooks import trust
from netinspect import socket_inodes, tcp_listeners
from compass_hooks.paths import get_paths
from worker_helpers import start_worker, stop_worker

NOBODY = 65534


@pytest.fixture
def sock_base(monkeypatch):
    """A socket path in a dir other users may traverse (so only the worker's own checks keep them out)."""
    base = tempfile.mkdtemp(prefix="csec-", dir="/tmp")
    os.chmod(base, 0o711)
    monkeypatch.setenv("COMPASS_SOCKET", os.path.join(base, "s", "w.sock"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def worker(sock_base):
    info = start_worker()
    yield info
    stop_worker()


def test_socket_is_0600_in_a_0700_dir_and_data_is_private(worker):
    paths = get_paths()
    st = os.stat(paths.socket)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert stat.S_IMODE(os.stat(paths.socket.parent).st_mode) == 0o700
    for d in (paths.data, paths.run, paths.logs):
        assert trust.private_problems(d) == [], d


def test_worker_has_no_tcp_listener(worker):
    pid = worker["pid"]
    assert socket_inodes(pid), "the worker's own sockets should be visible in /proc"
    assert tcp_listeners(pid) == []


def _connect_as(uid: int, path: str) -> dict:
    """Fork, drop to ``uid``, send a ping over the socket; report what happened."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            os.close(r)
            os.setgid(uid)
            os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            try:
                s.connect(path)
                try:
                    s.sendall(b'{"id": 1, "op": "ping", "args": {}}\n')
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a refusing worker answers and closes at once: its answer is still ours to read
                data = b""
                while not data.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                out = {"connected": True, "answer": data.decode()}
            except OSError as exc:
                out = {"connected": False, "errno": exc.errno}
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = json.load(f)
    os.waitpid(pid, 0)
    return out


def test_other_user_is_kept_out_by_file_modes(worker):
    out = _connect_as(NOBODY, str(get_paths().socket))
    assert out == {"connected": False, "errno": 13}  # EACCES: the 0700 dir / 0600 socket


def test_other_user_is_refused_by_peer_uid_even_with_loose_modes(worker):
    paths = get_paths()
    os.chmod(paths.socket.parent, 0o711)  # simulate modes loosened by someone else
    os.chmod(paths.socket, 0o666)
    out = _connect_as(NOBODY, str(paths.socket))
    assert out["connected"], out
    answer = json.loads(out["answer"])
    assert answer["ok"] is False and "wrong user" in answer["error"]["message"]
    assert "pid" not in json.dumps(answer)  # nothing about the worker leaks to the other user
    own = _connect_as(os.getuid(), str(paths.socket))
    assert json.loads(own["answer"])["ok"] is True
