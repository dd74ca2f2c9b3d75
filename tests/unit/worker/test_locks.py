"""The advisory locks: asking whether a lock is held must never make its owner-to-be give up.

A worker and a bootstrap build take their lock once at start with LOCK_NB; hooks, spawners and `worker stop` ask
`held()` often. A probe that took the exclusive lock for a moment made a worker starting in that moment exit as if
another worker ran (seen in CI: no worker for 30 s after a kill -9, a capture left in the spool)."""

from __future__ import annotations

import os
import threading

from compass_hooks import locks


def _prober(path: str, stop: threading.Event, counts: list[int]) -> None:
    while not stop.is_set():
        locks.held(path)
        counts[0] += 1


def test_acquire_wins_against_a_stream_of_probes(tmp_path):
    path = str(tmp_path / "worker.lock")
    stop = threading.Event()
    counts = [0]
    probers = [threading.Thread(target=_prober, args=(path, stop, counts), daemon=True) for _ in range(2)]
    open(path, "w").close()
    for t in probers:
        t.start()
    try:
        for _ in range(200):
            fd = locks.acquire(path)
            assert fd is not None, f"a probe made acquire() give up after {counts[0]} probes"
            assert locks.held(path)
            os.close(fd)
    finally:
        stop.set()
        for t in probers:
            t.join()
    assert counts[0] > 200  # the probes really ran beside the acquisitions


def test_probes_do_not_see_each_other_as_a_holder(tmp_path):
    path = str(tmp_path / "worker.lock")
    open(path, "w").close()
    stop = threading.Event()
    counts = [0]
    t = threading.Thread(target=_prober, args=(path, stop, counts), daemon=True)
    t.start()
    try:
        assert not any(locks.held(path) for _ in range(2000))
    finally:
        stop.set()
        t.join()


def test_a_real_holder_is_seen_and_refuses_a_second_owner(tmp_path):
    path = str(tmp_path / "worker.lock")
    assert not locks.held(path)  # absent: free
    fd = locks.acquire(path)
    assert fd is not None
    try:
        assert locks.held(path)
        assert locks.acquire(path, patience_s=0.05) is None
    finally:
        os.close(fd)
    assert not locks.held(path)
    fd = locks.acquire(path)
    assert fd is not None
    os.close(fd)
