"""`compass-hook config`: show, path, set, unset; the file keeps its comments, a bad value writes nothing."""

from __future__ import annotations

import json
import stat

from compass_hooks.cli import cli
from compass_hooks.config import load_config
from compass_hooks.paths import get_paths

COMMENTED = """# my settings
[model]
# the big one is too slow here
name = "minilm"  # keep
threads = 2

[hooks]
pretooluse = "ask"
"""


def _config(compass_home):
    path = get_paths().config
    assert path.parent == compass_home  # the user's store, as every surface reads it
    return path


def test_set_keeps_comments_and_types_values(cli_runner, compass_home):
    path = _config(compass_home)
    path.write_text(COMMENTED)
    for args in (["model.threads", "3"], ["hooks.pretooluse", "deny"], ["drift.packs", '["default", "infra"]'],
                 ["drift.threshold", "0.7"], ["memory.instructions", "false"]):
        res = cli_runner.invoke(cli, ["config", "set", *args])
        assert res.exit_code == 0, res.output
    text = path.read_text()
    assert "# my settings" in text and "# the big one is too slow here" in text and "# keep" in text
    cfg = load_config(path, env={})
    assert cfg.get("model", "threads") == 3 and cfg.get("hooks", "pretooluse") == "deny"
    assert cfg.get("drift", "packs") == ["default", "infra"] and cfg.get("drift", "threshold") == 0.7
    assert cfg.get("memory", "instructions") is False and cfg.get("model", "name") == "minilm"
    res = cli_runner.invoke(cli, ["config", "set", "model.name", "bge-m3", "--json"])
    assert json.loads(res.stdout) == {"key": "model.name", "value": "bge-m3", "path": str(path)}
    assert load_config(path, env={}).get("model", "name") == "bge-m3"


def test_unset_goes_back_to_the_default(cli_runner, compass_home):
    path = _config(compass_home)
    path.write_text(COMMENTED)
    res = cli_runner.invoke(cli, ["config", "unset", "hooks.pretooluse"])
    assert res.exit_code == 0 and "'ask'" in res.output
    assert "[hooks]" not in path.read_text()  # an emptied section goes too
    assert "# the big one is too slow here" in path.read_text()
    res = cli_runner.invoke(cli, ["config", "unset", "memory.recall_k"])  # not in the file: nothing to do
    assert res.exit_code == 0


def test_a_bad_value_or_key_is_one_line_and_writes_nothing(cli_runner, compass_home):
    path = _config(compass_home)
    path.write_text(COMMENTED)
    before = path.read_bytes()
    for args, needle in ((["model.threads", "two"], "model.threads"), (["model.threads", "0"], "at least 1"),
                         (["hooks.pretooluse", "maybe"], "ask, deny, off"), (["model.nmae", "x"], "name"),
                         (["modle.name", "x"], "sections")):
        res = cli_runner.invoke(cli, ["config", "set", *args])
        assert res.exit_code != 0, args
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert len(lines) <= 2 and needle in res.output, (args, res.output)
        assert path.read_bytes() == before, args


def test_a_new_file_is_private_and_show_lists_every_key(cli_runner, compass_home):
    path = _config(compass_home)
    assert not path.exists()
    res = cli_runner.invoke(cli, ["config", "show"])
    assert res.exit_code == 0 and "not written yet" in res.output
    assert cli_runner.invoke(cli, ["config", "path"]).output.strip() == str(path)
    assert cli_runner.invoke(cli, ["config", "set", "memory.recall_k", "5"]).exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    shown = json.loads(cli_runner.invoke(cli, ["config", "show", "--json"]).stdout)
    assert shown["exists"] and shown["settings"]["memory"]["recall_k"] == 5
    assert set(shown["settings"]) == {"model", "worker", "hooks", "drift", "memory", "mcp"}


def test_set_refuses_to_build_on_a_file_that_does_not_load(cli_runner, compass_home):
    """The file as a whole must load after a set, as every hook will read it: a typo elsewhere is named."""
    path = _config(compass_home)
    for text, needle in (('[model]\nthreads = "two"\n', "model.threads"), ("[model]\nnmae = 1\n", "model.nmae"),
                         ("[modle]\nname = 1\n", "[modle]")):
        path.write_text(text)
        res = cli_runner.invoke(cli, ["config", "set", "memory.recall_k", "5"])
        assert res.exit_code != 0 and needle in res.output, (text, res.output)
        assert path.read_text() == text
