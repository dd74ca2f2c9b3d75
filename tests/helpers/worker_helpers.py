"""Helpers for tests that run a real worker process (fake embedder, tmp data dir)."""

from __future__ import annotations

import os
import signal
import time

from compass_hooks.paths import get_paths


def start_worker(wait_s: float = 30.0) -> dict:
    from compass_hooks.errors import WorkerUnavailable
    from compass_hooks.worker import client

    try:
        return client.ensure_worker(get_paths(), wait_s=wait_s)
    except WorkerUnavailable as exc:  # a CI failure names its cause: the worker's own last words
        logs = get_paths().logs
        tails = []
        for name in ("worker.log", "worker.stderr.log"):
            try:
                tails.append(f"--- {name}\n" + "".join((logs / name).read_text(errors="replace").splitlines(True)[-15:]))
            except OSError:
                tails.append(f"--- {name}: absent")
        raise AssertionError(f"{exc}\n" + "\n".join(tails)) from exc


def stop_worker() -> None:
    """Stop this test's worker; SIGKILL it if it does not go (a test must not leak processes)."""
    from compass_hooks.worker import client, lifecycle

    paths = get_paths()
    pid = lifecycle.read_pid(paths)
    try:
        client.stop_worker(paths, timeout=5.0)
    finally:
        if pid and lifecycle.is_our_worker(pid, paths) and lifecycle.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            reap(pid)


def reap(pid: int, timeout: float = 30.0) -> None:
    from compass_hooks.worker import lifecycle

    deadline = time.monotonic() + timeout
    while lifecycle.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
