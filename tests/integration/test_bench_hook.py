"""`bench hook` through CliRunner on the fake model: the UserPromptSubmit hook as hooks.json runs it,
next to the floor, in a throw-away data dir."""

from __future__ import annotations

import json
import os

import pytest

from compass_eval.cli import bench_group
from compass_hooks.cli import cli

pytestmark = pytest.mark.slow  # runs the hook launcher and a worker: ~2.5 s a test here


def test_bench_group_comes_from_compass_eval_through_the_entry_point(cli_runner):
    assert cli.commands["bench"] is bench_group
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
    # The standing instructions in force are looked up and shown with every warm prompt.
    assert report["instructions"] == 3 and report["context_injected"] == "3/3"
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

