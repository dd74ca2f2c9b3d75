"""`compass-hook audit ...` through click: exit codes, JSON, one-line errors."""

from __future__ import annotations

import json

import pytest

from compass_hooks.audit import record_change, write_pack_sums
from compass_hooks.cli import cli
from compass_hooks.paths import get_paths


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    root = tmp_path / "plugin"
    (root / "anchors").mkdir(parents=True)
    (root / "anchors" / "default.json").write_text('{"schema_version": 1, "name": "default", "anchors": []}')
    write_pack_sums(root / "anchors")
    monkeypatch.setattr("compass_hooks.paths.plugin_root", lambda: root)
    return root


def _log(n: int = 3) -> None:
    paths = get_paths().ensure()
    for i in range(n):
        record_change(paths, actor="cli", action="pack-change", object_type="anchor", object_id=f"a{i}", content=str(i))


def test_verify_ok_and_json(cli_runner, plugin):
    _log()
    res = cli_runner.invoke(cli, ["audit", "verify"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("audit OK: 3 entries, root ")
    data = json.loads(cli_runner.invoke(cli, ["audit", "verify", "--json"]).output)
    assert data["ok"] is True and data["entries"] == 3 and data["first_problem"] is None


def test_verify_fails_with_exit_1_naming_the_first_bad_entry(cli_runner, plugin):
    _log()
    log = get_paths().audit_log
    lines = log.read_text().splitlines()
    log.write_text(lines[0] + "\n" + lines[2] + "\n")
    res = cli_runner.invoke(cli, ["audit", "verify"])
    assert res.exit_code == 1
    assert res.output.splitlines()[0] == "audit FAILED: entry seq 2 at line 2, expected seq 1: entries were removed"
    res = cli_runner.invoke(cli, ["audit", "verify", "--json"])
    assert res.exit_code == 1 and json.loads(res.output)["first_problem"]["seq"] == 2


def test_verify_with_noted_root(cli_runner, plugin):
    _log(2)
    shown = json.loads(cli_runner.invoke(cli, ["audit", "show", "--json"]).output)
    _log(1)
    args = ["audit", "verify", "--root", shown["root"], "--size", str(shown["size"])]
    assert cli_runner.invoke(cli, args).exit_code == 0
    args[3] = "0" * 64
    assert cli_runner.invoke(cli, args).exit_code == 1


@pytest.mark.parametrize("args", [["audit", "verify", "--root", "xyz"], ["audit", "verify", "--size", "3"]])
def test_verify_bad_options_are_usage_errors(cli_runner, plugin, args):
    res = cli_runner.invoke(cli, args)
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_show(cli_runner, plugin):
    _log(4)
    res = cli_runner.invoke(cli, ["audit", "show", "-n", "2"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert lines[0].startswith("4 entries, Merkle root ")
    assert "anchor:a2" in lines[1] and "anchor:a3" in lines[2] and "--size 4" in lines[3]
    data = json.loads(cli_runner.invoke(cli, ["audit", "show", "--json", "-n", "0"]).output)
    assert [e["seq"] for e in data["entries"]] == [0, 1, 2, 3]


def test_show_empty(cli_runner, plugin):
    res = cli_runner.invoke(cli, ["audit", "show"])
    assert res.exit_code == 0 and res.output.startswith("0 entries")


def test_proof(cli_runner, plugin):
    _log(5)
    res = cli_runner.invoke(cli, ["audit", "proof", "3"])
    assert res.exit_code == 0 and res.output.rstrip().endswith("proof verified")
    data = json.loads(cli_runner.invoke(cli, ["audit", "proof", "3", "--json"]).output)
    assert data["verified"] and data["tree_size"] == 5 and len(data["proof"]) == 3


@pytest.mark.parametrize("arg, code", [("9", 1), ("-1", 2), ("abc", 2)])
def test_proof_bad_id(cli_runner, plugin, arg, code):
    _log(2)
    res = cli_runner.invoke(cli, ["audit", "proof", arg])
    assert res.exit_code == code and "Traceback" not in res.output
    assert len([line for line in res.output.splitlines() if line.startswith("Error: ")]) == 1


def test_seal_packs_then_verify(cli_runner, plugin):
    (plugin / "anchors" / "infra.json").write_text("{}")
    assert cli_runner.invoke(cli, ["audit", "verify"]).exit_code == 1
    res = cli_runner.invoke(cli, ["audit", "seal-packs", "--json"])
    assert res.exit_code == 0 and set(json.loads(res.output)["packs"]) == {"default.json", "infra.json"}
    assert cli_runner.invoke(cli, ["audit", "verify"]).exit_code == 0


def test_help(cli_runner):
    res = cli_runner.invoke(cli, ["audit", "--help"])
    assert res.exit_code == 0 and "verify" in res.output and "proof" in res.output


def test_shipped_packs_match_their_tracked_sums():
    """The repository's anchors/*.json must match anchors/SHA256SUMS (run `audit seal-packs` after a change)."""
    from compass_hooks.audit.verify import check_shipped_packs
    from compass_hooks.audit.packs import shipped_dir

    n, problems = check_shipped_packs(shipped_dir(get_paths()))
    assert n >= 1 and problems == []


def test_anchor_commands_are_audited_and_a_hand_edit_is_caught(cli_runner):
    add = ["anchors", "add", "You deleted the test instead of fixing the bug", "--polarity", "negative",
           "--category", "test_tampering", "--id", "user-t1"]
    assert cli_runner.invoke(cli, add).exit_code == 0
    res = cli_runner.invoke(cli, ["audit", "verify", "--json"])
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["entries"] == 2, res.output
    actions = [(e["action"], e["object_id"]) for e in json.loads(cli_runner.invoke(cli, ["audit", "show", "--json"]).output)["entries"]]
    assert actions == [("anchor-add", "user-t1"), ("pack-change", "user")]
    user = get_paths().anchors_user / "user.json"
    user.write_text(user.read_text().replace("deleted", "kept"))
    res = cli_runner.invoke(cli, ["audit", "verify"])
    assert res.exit_code == 1 and "pack user differs from its last logged hash (seq 1)" in res.output
    # A later audited change logs the file's new state (a documented limit: verify checks the current state).
    assert cli_runner.invoke(cli, ["anchors", "remove", "user-t1"]).exit_code == 0
    assert cli_runner.invoke(cli, ["audit", "verify"]).exit_code == 0
    assert len(json.loads(cli_runner.invoke(cli, ["audit", "show", "--json"]).output)["entries"]) == 4
