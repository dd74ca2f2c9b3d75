"""Worker lifecycle on the fake embedder: start, ping, concurrency, slow op isolation, stop, idle exit,
stale socket, pid ownership, version-mismatch restart."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from compass_hooks import PROTOCOL_VERSION, __version__
from compass_hooks.paths import get_paths
from worker_helpers import reap, start_worker, stop_worker


@pytest.fixture
def worker():
    info = start_worker()
    yield info
    stop_worker()


def _sock() -> str:
    return str(get_paths().socket)


def test_start_ping_status_and_stop(worker):
    from compass_hooks.worker import client, lifecycle

    assert worker["ready"] and worker["protocol"] == PROTOCOL_VERSION and worker["version"] == __version__
    assert worker["model"] == "fake:64"
    info = client.ping(_sock())
    assert set(info) >= {"protocol", "version", "model", "ready", "pid", "uptime"}
    paths = get_paths()
    assert lifecycle.read_pid(paths) == info["pid"] and lifecycle.is_our_worker(info["pid"], paths)
    assert client.worker_status()["running"] is True
    # a second ensure reuses it
    assert client.ensure_worker(wait_s=5)["pid"] == info["pid"]
    result = client.stop_worker()
    assert result["stopped"] and not result["signalled"]
    reap(info["pid"])
    assert not lifecycle.pid_alive(info["pid"]) and not os.path.exists(_sock())
    assert client.worker_status()["running"] is False


def test_concurrent_requests_from_8_threads(worker):
    from compass_hooks.worker import client

    errors, results = [], []

    def go(i):
        try:
            r = client.request("score", {"texts": [f"prompt {i} force push to main"]}, socket_path=_sock(), timeout=10)
            results.append(r["results"][0])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(results) == 8


def test_typed_errors_cross_the_socket(worker):
    from compass_hooks.errors import InvalidInput
    from compass_hooks.worker import client

    with pytest.raises(InvalidInput, match="unknown op"):
        client.request("no_such_op", socket_path=_sock(), timeout=5)
    with pytest.raises(InvalidInput):
        client.request("score", {"texts": "not a list"}, socket_path=_sock(), timeout=5)


def test_slow_op_does_not_stall_a_fast_one(tmp_path):
    """In-thread server so a test-only op can be registered; the slow op holds one pool thread."""
    from compass_hooks import ops
    from compass_hooks.core import Core
    from compass_hooks.worker import client
    from compass_hooks.worker.server import WorkerServer

    release = threading.Event()

    @ops.op("test_slow")
    def _slow(core):
        release.wait(10)
        return {"slow": True}

    srv = WorkerServer(core=Core(), idle_timeout=0)
    th = threading.Thread(target=srv.serve, kwargs={"install_signals": False}, daemon=True)
    th.start()
    try:
        assert client.wait_ready(_sock(), time.monotonic() + 10)["ready"]
        slow = threading.Thread(target=lambda: client.request("test_slow", socket_path=_sock(), timeout=15))
        slow.start()
        time.sleep(0.1)
        t0 = time.monotonic()
        assert client.request("ping", socket_path=_sock(), timeout=2)["ready"]
        assert client.request("score", {"texts": ["hi"]}, socket_path=_sock(), timeout=2)["results"]
        fast = time.monotonic() - t0
        assert slow.is_alive(), "the slow op should still be running"
        assert fast < 2.0
    finally:
        release.set()
        ops.OPS.pop("test_slow", None)
        srv.request_stop("test over")
        th.join(10)
    assert not th.is_alive()


def test_the_fast_endpoint_is_written_before_the_worker_says_ready(monkeypatch):
    """A hook that sees "ready" on ping may run the native client at once, and that client finds the worker only
    through the endpoint file: written after ready, it lost that race about one run in three (CI stop 25)."""
    from compass_hooks.core import Core
    from compass_hooks.worker import client
    from compass_hooks.worker.hooks import fast
    from compass_hooks.worker.server import WorkerServer

    srv = WorkerServer(core=Core(), idle_timeout=0)
    seen: list[bool] = []
    real = fast.write_endpoint

    def recording(paths, config):
        seen.append(srv.ready.is_set())
        real(paths, config)

    monkeypatch.setattr(fast, "write_endpoint", recording)
    th = threading.Thread(target=srv.serve, kwargs={"install_signals": False}, daemon=True)
    th.start()
    try:
        assert client.wait_ready(_sock(), time.monotonic() + 10)["ready"]
        assert os.path.exists(fast.endpoint_path(get_paths()))
        assert seen == [False]
    finally:
        srv.request_stop("test over")
        th.join(10)
    assert not th.is_alive()


@pytest.mark.slow
def test_idle_exit(monkeypatch):
    from compass_hooks.worker import client, lifecycle

    monkeypatch.setenv("COMPASS_IDLE_TIMEOUT", "0.6")
    info = start_worker()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and lifecycle.pid_alive(info["pid"]):
            time.sleep(0.1)
        assert not lifecycle.pid_alive(info["pid"]), "worker did not exit when idle"
        assert client.ping(_sock()) is None and not os.path.exists(_sock())
    finally:
        stop_worker()


def test_stale_socket_file_is_replaced():
    from compass_hooks.worker import client

    paths = get_paths().ensure()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(paths.socket))
    s.close()  # bound, never listening: a dead worker's socket file
    assert client.ping(_sock()) is None
    try:
        info = client.ensure_worker(wait_s=20)
        assert info["ready"]
    finally:
        stop_worker()


def test_a_worker_still_dying_when_we_start_is_outwaited_then_replaced():
    """A SIGKILLed worker holds its lock until its last thread leaves the kernel (an fsync under load can take
    seconds). Start-up skips the spawn while the lock is held; it must spawn once the holder is gone, not wait the
    whole deadline for nobody (a CI run failed so: no second 'listening' line in 30 s)."""
    from compass_hooks.worker import client, lifecycle

    paths = get_paths().ensure()
    # another process takes the worker lock the way a worker does (same HOME, so the same paths), then goes
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from compass_hooks.paths import get_paths; from compass_hooks.worker import lifecycle; "
        "assert lifecycle.acquire_lock(get_paths()) is not None; print('held', flush=True); time.sleep(2.5)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert lifecycle.lock_held(paths) and client.ping(_sock()) is None
        info = client.ensure_worker(wait_s=30)
        assert info["ready"] and holder.poll() is not None  # came up, and only after the old holder went
    finally:
        holder.kill()
        holder.wait()
        stop_worker()


def test_pid_file_pointing_at_an_unrelated_process_is_not_killed():
    from compass_hooks.worker import client, lifecycle

    paths = get_paths().ensure()
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        paths.worker_pid.write_text(f"{victim.pid}\n")
        assert not lifecycle.is_our_worker(victim.pid, paths)
        assert not lifecycle.terminate(victim.pid, paths, timeout=0.2)
        # hold the worker lock as if a hung worker had it: stop must still refuse to signal the stranger
        fd = lifecycle.acquire_lock(paths)
        try:
            result = client.stop_worker(paths, timeout=0.3)
        finally:
            os.close(fd)
        assert result["signalled"] is False
        assert victim.poll() is None, "an unrelated process was killed"
    finally:
        victim.kill()
        victim.wait()


def test_version_mismatch_restarts_the_worker(monkeypatch):
    """An 'old' worker (in-thread, reporting another version) is stopped and replaced by a real one."""
    from compass_hooks.core import Core
    from compass_hooks.worker import client, server

    monkeypatch.setattr(server, "__version__", "0.0.0-old")
    srv = server.WorkerServer(core=Core(), idle_timeout=0)
    th = threading.Thread(target=srv.serve, kwargs={"install_signals": False}, daemon=True)
    th.start()
    try:
        assert client.wait_ready(_sock(), time.monotonic() + 10)["version"] == "0.0.0-old"
        with pytest.raises(client.ProtocolMismatch):
            client.request("score", {"texts": ["x"]}, socket_path=_sock(), timeout=5, check_version=True)
        info = client.ensure_worker(wait_s=20)
        th.join(10)
        assert not th.is_alive(), "old worker was not stopped"
        assert info["version"] == __version__ and info["pid"] != os.getpid()
    finally:
        srv.request_stop("test over")
        th.join(5)
        stop_worker()
