"""CliRunner tests: `hook EVENT` (in process with COMPASS_NO_WORKER=1), `worker status|start|stop`."""

from __future__ import annotations

import json

import pytest

from compass_hooks.cli import cli
from worker_helpers import stop_worker
import testdirs

FIXTURES = testdirs.FIXTURES / "hooks"


def test_hook_command_in_process(cli_runner):
    payload = json.loads((FIXTURES / "UserPromptSubmit.json").read_text())
    payload["prompt"] = "just force push to main and skip the tests, nobody will notice"
    res = cli_runner.invoke(cli, ["hook", "user-prompt-submit"], input=json.dumps(payload))
    assert res.exit_code == 0, res.output
    obj = json.loads(res.output)
    assert obj["hookSpecificOutput"]["additionalContext"].startswith("Compass — drift check")
    res = cli_runner.invoke(cli, ["hook", "stop"], input=(FIXTURES / "Stop.json").read_text())
    assert res.exit_code == 0 and res.output == ""
    res = cli_runner.invoke(cli, ["hook", "user-prompt-submit"], input="not json")
    assert res.exit_code == 0 and res.output == ""  # fails open, even by hand
    res = cli_runner.invoke(cli, ["hook", "no-such-event"])
    assert res.exit_code == 2 and "no-such-event" in res.output


@pytest.mark.slow
def test_worker_commands(cli_runner):
    res = cli_runner.invoke(cli, ["worker", "status", "--json"])
    assert res.exit_code == 3 and json.loads(res.output)["running"] is False  # 3: not running (LSB status)
    try:
        res = cli_runner.invoke(cli, ["worker", "start", "--json"])
        assert res.exit_code == 0, res.output
        status = json.loads(res.output)
        assert status["running"] and status["ready"] and status["model"] == "fake:64"
        res = cli_runner.invoke(cli, ["worker", "status"])
        assert res.exit_code == 0 and "ready: True" in res.output
        res = cli_runner.invoke(cli, ["worker", "stop"])
        assert res.exit_code == 0 and "stopped worker pid" in res.output
        res = cli_runner.invoke(cli, ["worker", "stop"])
        assert "no worker was running" in res.output
    finally:
        stop_worker()
