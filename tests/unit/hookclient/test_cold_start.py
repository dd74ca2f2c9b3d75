"""A cold worker still loading its model answers "warming up" before the hook's socket gives up, so a slow cold
start passes the prompt through by design instead of counting a failure (a CI run on a busy 2-core machine: the
worker was ready in 2.75 s, the socket timed out at 2.5 s while the worker still had 0.25 s of its wait left)."""

from __future__ import annotations

import time

import pytest

from compass_hooks.errors import WorkerUnavailable
from compass_hooks.hookclient import runner


def test_the_worker_stops_waiting_for_its_model_before_the_socket_times_out():
    assert runner.ready_wait(3.0, 0.0, 2.5) == pytest.approx(2.5 - runner.READY_WAIT_MARGIN_S)
    assert runner.ready_wait(3.0, 2.0, 2.5) == pytest.approx(1.0)  # the cold-start budget left, when shorter
    assert runner.ready_wait(3.0, 4.0, 2.5) == 0.0


def test_a_worker_still_warming_when_the_budget_ends_passes_the_prompt_through(monkeypatch):
    from compass_hooks.worker import client

    seen = []

    def request(op, args, *, socket_path, timeout, connect_timeout=None, wait=None, check_version=False):
        seen.append((timeout, wait))
        # the worker's answer once its wait is over and the model is still loading
        raise WorkerUnavailable("the worker is warming up (loading the model)", "retry in a few seconds")

    monkeypatch.setattr(client, "request", request)
    monkeypatch.setattr(runner, "plugin_updated", lambda s: False)
    s = {"cold_start_s": 3.0, "request_timeout_s": 2.5, "connect_timeout_s": 0.5, "socket": "/nonexistent"}
    with pytest.raises(runner.Pending, match="still loading"):
        runner._call_worker("SessionStart", {}, s, time.monotonic())
    (timeout, wait), = seen
    assert wait < timeout  # the worker answers before the socket gives up
