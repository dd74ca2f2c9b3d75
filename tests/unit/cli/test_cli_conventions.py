"""CLI conventions from issue 15: the calibration goes to the user data dir unless asked, with progress on
stderr; `anchors add` blames a bad --category, not the user's pack file; non-zero exits where nothing was
done."""

from __future__ import annotations

import json

import pytest

from compass_hooks.cli import cli
from compass_hooks.paths import get_paths


@pytest.mark.slow  # a whole calibration fit on the fake embedder
def test_train_writes_the_users_calibration_not_the_tracked_one(cli_runner, compass_home):
    shipped = get_paths().plugin_root / "anchors" / "calibration"
    before = {p.name: p.read_bytes() for p in shipped.glob("*.json")}
    res = cli_runner.invoke(cli, ["anchors", "train", "--model", "fake", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["file"] == str(compass_home / "calibration" / "fake-64.json") and out["cv_auc"] > 0.5
    assert "embedding" in res.stderr and "fitting" in res.stderr  # progress, on stderr
    # A user's own calibration skips the leave-one-file-out figures unless asked (--lofo): most of the fit time.
    assert "leave_one_file_out" not in out and "leaving out" not in res.stderr
    assert {p.name: p.read_bytes() for p in shipped.glob("*.json")} == before
    res = cli_runner.invoke(cli, ["anchors", "train", "--out", "x.json", "--shipped"])
    assert res.exit_code == 2 and "not both" in res.output


def test_anchors_add_checks_the_category_argument(cli_runner, compass_home):
    res = cli_runner.invoke(cli, ["anchors", "add", "x", "--polarity", "negative", "--category", "bogus"])
    assert res.exit_code == 2 and "'--category'" in res.output and "user.json" not in res.output
    assert "destructive_operation" in res.output
    res = cli_runner.invoke(cli, ["anchors", "add", "x", "--polarity", "positive", "--category", "secrets"])
    assert res.exit_code == 2 and "is a negative category" in res.output
    assert not (compass_home / "anchors" / "user.json").exists()  # nothing written


def test_worker_status_exit_code(cli_runner):
    res = cli_runner.invoke(cli, ["worker", "status"])
    assert res.exit_code == 3 and "running: False" in res.output
