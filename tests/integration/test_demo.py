"""`compass-hook demo`: the scripted session through the real launcher, isolated from the user's data."""

from __future__ import annotations

import json

import pytest

from compass_hooks.cli import cli

pytestmark = pytest.mark.slow  # the scripted session through the real launcher: ~3 s a test here


def test_demo_runs_the_real_hooks_and_leaves_user_data_alone(cli_runner, compass_home):
    res = cli_runner.invoke(cli, ["demo", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    steps = {s["event"] + ":" + s["step"]: s for s in report["steps"]}
    assert [s["exit_code"] for s in report["steps"]] == [0, 0, 0, 0]
    brief = report["steps"][1]["output"]["hookSpecificOutput"]["additionalContext"]
    # The rule the first session set is a standing instruction: the new session's brief opens with it.
    assert brief.startswith("Compass — standing instructions") and "never push directly to main" in brief
    drift = report["steps"][2]["output"]["hookSpecificOutput"]["additionalContext"]
    assert drift.startswith("Compass — drift check")
    # The rule from the earlier session, with every prompt of this one.
    assert "Compass — standing instructions" in drift and "never push directly to main" in drift
    guard = report["steps"][3]["output"]["hookSpecificOutput"]
    assert guard["permissionDecision"] == "ask" and "force push" in guard["permissionDecisionReason"]
    assert len(steps) == 4
    # A throw-away data dir: nothing written where the user's memories live.
    assert not (compass_home / "compass.db").exists()


def test_demo_text_output_shows_what_the_model_sees(cli_runner):
    res = cli_runner.invoke(cli, ["demo"])
    assert res.exit_code == 0, res.output
    assert "additionalContext Claude Code adds for the model:" in res.output
    assert "permissionDecision: ask" in res.output
