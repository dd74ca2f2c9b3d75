"""CliRunner tests: `hook EVENT` (in process with COMPASS_NO_WORKER=1), `worker status|start|stop`, `bench hook`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from compass_hooks.cli import cli
from worker_helpers import stop_worker

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"


def test_hook_command_in_process(cli_runner):
    payload = json.loads((FIXTURES / "UserPromptSubmit.json").read_text())
    payload["prompt"] = "just force push to main and skip the tests"
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


def test_worker_commands(cli_runner):
    res = cli_runner.invoke(cli, ["worker", "status", "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["running"] is False
    try:
        res = cli_runner.invoke(cli, ["worker", "start", "--json"])
        assert res.exit_code == 0, res.output
        status = json.loads(res.output)
        assert status["running"] and status["ready"] and status["model"] == "fake:64"
        res = cli_runner.invoke(cli, ["worker", "status"])
        assert "ready: True" in res.output
        res = cli_runner.invoke(cli, ["worker", "stop"])
        assert res.exit_code == 0 and "stopped worker pid" in res.output
        res = cli_runner.invoke(cli, ["worker", "stop"])
        assert "no worker was running" in res.output
    finally:
        stop_worker()


def test_bench_group_help(cli_runner):
    from compass_hooks.cli.cmd_bench import bench

    assert cli.commands["bench"] is bench
    res = cli_runner.invoke(cli, ["bench", "hook", "--help"])
    assert res.exit_code == 0 and "floor" in res.output


def test_bench_hook_runs_on_the_fake_model(cli_runner):
    before = dict(os.environ)
    res = cli_runner.invoke(cli, ["bench", "hook", "--runs", "3", "--memories", "50", "--json"])
    assert res.exit_code == 0, res.output
    assert dict(os.environ) == before  # the bench's throw-away data dir is put back
    report = json.loads(res.output)
    assert report["runs"] == 3 and report["memories"] == 50 and report["model"] == "fake:64"
    assert report["hook_ms"]["median"] > 0 and report["floor_ms"]["median"] > 0 and report["ratio_median"] > 0
    assert report["cold_start_context"] is True and report["cold_start_block"].startswith("Compass")
    from compass_hooks.hookclient.native import status

    native = status()["state"] == "ok"  # built by install.sh: then both clients are measured
    assert report["client"] == ("native" if native else "python")
    assert (report["python_client_ms"] is not None) == native


def test_bench_hook_reads_store_texts_from_a_file(cli_runner, tmp_path):
    texts = tmp_path / "export.jsonl"
    texts.write_text('{"text": "we moved the billing queue to redis"}\n\n{"text": "never deploy on fridays"}\n')
    res = cli_runner.invoke(cli, ["bench", "hook", "--runs", "3", "--memories", "20", "--texts", str(texts), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["texts"] == str(texts)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    res = cli_runner.invoke(cli, ["bench", "hook", "--runs", "3", "--texts", str(bad)])
    assert res.exit_code != 0 and "cannot read benchmark texts" in res.output and "Traceback" not in res.output

