"""The load bench, short: 8 concurrent sessions through the real hook launcher, nothing lost, audit verifies."""

from __future__ import annotations

import json

import pytest

from compass_hooks.cli import cli
from compass_eval.commands.bench_load import _check_output, _percentile, run_load


@pytest.mark.slow
def test_eight_sessions_lose_nothing():
    out = run_load(sessions=8, seconds=2.0, model="fake")
    assert out["errors"] == 0, out["error_samples"]
    assert out["prompts"] >= 8 and out["stored"] == out["prompts"] and out["lost"] == 0
    assert out["audit_ok"], out["audit_problem"]
    assert out["audit_entries"] >= out["prompts"]
    assert out["latency_ms"]["p50"] > 0 and out["ok"]


def test_bench_load_command_is_registered(cli_runner):
    res = cli_runner.invoke(cli, ["bench", "load", "--help"])
    assert res.exit_code == 0 and "--sessions" in res.output and "--seconds" in res.output
    res = cli_runner.invoke(cli, ["bench", "load", "--sessions", "0"])
    assert res.exit_code == 2


@pytest.mark.parametrize("code, stdout, problem", [
    (0, b"", None),
    (0, json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "x"}}).encode(),
     None),
    (1, b"", "exit 1"),
    (0, b"Traceback (most recent call last)", "stdout is not JSON"),
    (0, json.dumps({"hookSpecificOutput": {"hookEventName": "Stop"}}).encode(), "hookEventName is 'Stop'"),
])
def test_output_check_catches_what_claude_code_would_mishandle(code, stdout, problem):
    got = _check_output(code, stdout)
    assert (got is None) if problem is None else (problem in got)


def test_percentile():
    assert _percentile([], 0.5) == 0.0
    assert _percentile([3.0, 1.0, 2.0], 0.5) == 2.0 and _percentile(list(range(101)), 0.95) == 95
