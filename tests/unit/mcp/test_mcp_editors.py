"""`compass-hook mcp config CLIENT`: the printed snippets and the merging writer."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from compass_hooks.cli import cli
from mcp_server import editors
import testdirs

VENV_MCP = str(Path(sys.prefix) / "bin" / "compass-mcp")


@pytest.fixture
def fake_home(tmp_path, monkeypatch, compass_home):
    """The test's fresh HOME (conftest), with nothing in it."""
    return Path(os.environ["HOME"])


@pytest.mark.parametrize("client", list(editors.CLIENTS))
def test_every_client_prints_an_absolute_command(cli_runner, client, fake_home):
    r = cli_runner.invoke(cli, ["mcp", "config", client])
    assert r.exit_code == 0, r.output
    assert VENV_MCP in r.output
    if client == "continue":
        assert "mcpServers:\n  - name: compass\n" in r.output
    else:
        body = r.output.split("\n\nor, for every project:")[0]
        body = body[body.index("{"):]
        data = json.loads(body)
        key = {"zed": "context_servers", "vscode": "servers"}.get(client, "mcpServers")
        entry = data[key]["compass"]
        # The project is explicit: Claude Desktop starts servers in /, which would be the project.
        assert entry["command"] == VENV_MCP and entry["args"] == ["--project", os.getcwd()]
    if client == "claude-code":
        assert "claude mcp add --scope user" in r.output and f"compass -- {VENV_MCP} --project" in r.output


def test_env_has_compass_home_only_when_the_user_set_it(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPASS_HOME", str(tmp_path / "data"))
    assert editors.entry_for("cursor")["env"] == {"COMPASS_HOME": str(tmp_path / "data")}
    monkeypatch.delenv("COMPASS_HOME")
    assert editors.entry_for("cursor")["env"] == {}


def test_cline_and_zed_shapes():
    cline = editors.entry_for("cline")
    assert cline["disabled"] is False and "drift_check" in cline["autoApprove"]
    assert "remember" not in cline["autoApprove"] and "forget" not in cline["autoApprove"]
    assert editors.entry_for("zed")["source"] == "custom"


def test_write_merges_backs_up_and_is_idempotent(cli_runner, tmp_path):
    cfg = tmp_path / "mcp.json"
    other = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    cfg.write_text(json.dumps({"mcpServers": {"fs": other}, "theme": "dark"}))

    r = cli_runner.invoke(cli, ["mcp", "config", "cursor", "--write", "--path", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    assert res["action"] == "updated" and Path(res["backup"]).exists()
    assert json.loads(Path(res["backup"]).read_text())["mcpServers"] == {"fs": other}  # the original
    data = json.loads(cfg.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["fs"] == other  # nothing else touched
    assert data["mcpServers"]["compass"]["command"] == VENV_MCP

    before = sorted(tmp_path.iterdir())
    r = cli_runner.invoke(cli, ["mcp", "config", "cursor", "--write", "--path", str(cfg)])
    assert r.exit_code == 0 and "already up to date" in r.output
    assert sorted(tmp_path.iterdir()) == before  # no second backup, no rewrite

    # A stale compass entry (old venv path) is replaced, the other server kept.
    data["mcpServers"]["compass"]["command"] = "/old/venv/bin/compass-mcp"
    cfg.write_text(json.dumps(data))
    res = editors.write_config("cursor", cfg)
    assert res.action == "updated" and res.backup is not None
    assert json.loads(cfg.read_text())["mcpServers"]["compass"]["command"] == VENV_MCP
    assert json.loads(cfg.read_text())["mcpServers"]["fs"] == other


def test_write_creates_missing_file_at_the_default_path(cli_runner, fake_home):
    r = cli_runner.invoke(cli, ["mcp", "config", "windsurf", "--write"])
    assert r.exit_code == 0, r.output
    path = fake_home / ".codeium" / "windsurf" / "mcp_config.json"
    assert json.loads(path.read_text())["mcpServers"]["compass"]["command"] == VENV_MCP
    assert "created" in r.output


def test_zed_uses_context_servers_and_keeps_settings(tmp_path):
    cfg = tmp_path / "settings.json"
    cfg.write_text(json.dumps({"theme": "One Dark", "context_servers": {"other": {"command": "x"}}}))
    editors.write_config("zed", cfg)
    data = json.loads(cfg.read_text())
    assert data["theme"] == "One Dark" and data["context_servers"]["other"] == {"command": "x"}
    assert data["context_servers"]["compass"]["source"] == "custom"
    assert "mcpServers" not in data


def test_unparseable_files_are_refused_untouched(cli_runner, tmp_path):
    tmp_path = tmp_path / "zed"
    tmp_path.mkdir()
    cfg = tmp_path / "settings.json"
    original = '// Zed settings\n{\n  "theme": "One Dark"\n  "vim_mode": true\n}\n'  # a missing comma
    cfg.write_text(original)
    r = cli_runner.invoke(cli, ["mcp", "config", "zed", "--write", "--path", str(cfg)])
    assert r.exit_code == 1 and "not JSON, even allowing comments" in r.output and "by hand" in r.output
    assert cfg.read_text() == original and list(tmp_path.iterdir()) == [cfg]

    cfg.write_text(json.dumps({"mcpServers": ["not", "an", "object"]}))
    with pytest.raises(Exception, match="not an object"):
        editors.write_config("cursor", cfg)


def test_continue_block_file(tmp_path):
    path = tmp_path / ".continue" / "mcpServers" / "compass.yaml"
    assert editors.write_config("continue", path).action == "created"
    text = path.read_text()
    assert "schema: v1" in text and f'command: "{VENV_MCP}"' in text
    assert editors.write_config("continue", path).action == "unchanged"
    foreign = tmp_path / "config.yaml"
    foreign.write_text("models: []\n")
    with pytest.raises(Exception, match="not written by compass-hooks"):
        editors.write_config("continue", foreign)
    assert foreign.read_text() == "models: []\n"


def test_path_without_write_and_unknown_client(cli_runner, tmp_path):
    r = cli_runner.invoke(cli, ["mcp", "config", "cursor", "--path", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "--path only applies with --write" in r.output
    r = cli_runner.invoke(cli, ["mcp", "config", "vim"])
    assert r.exit_code == 2 and "claude-desktop" in r.output


def _fake_python(venv: Path, label: str, finished: bool = True) -> None:
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    py = venv / "bin" / "python"
    py.write_text(f"#!/bin/sh\necho {label}\n")
    py.chmod(0o755)
    if finished:  # install.sh and the bootstrap write their record last
        (venv / "compass-install.json").write_text("{}")


def test_plugin_mcp_json_starts_the_bundled_launcher(tmp_path, compass_home):
    """.mcp.json runs launch.sh, which picks the venv in the hook launcher's order: the user's runtime venv,
    the plugin's dev .venv, then this plugin install's bootstrapped venv."""
    import subprocess

    root = testdirs.ROOT
    spec = json.loads((root / ".mcp.json").read_text())["mcpServers"]["compass"]
    assert spec["command"] == "${CLAUDE_PLUGIN_ROOT}/mcp_server/launch.sh"
    launcher = root / "mcp_server" / "launch.sh"
    assert launcher.stat().st_mode & 0o111
    plugin, plugin_data = tmp_path / "plugin", tmp_path / "plugin-data"
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "CLAUDE_PLUGIN_ROOT": str(plugin),
           "CLAUDE_PLUGIN_DATA": str(plugin_data)}

    def picked() -> str:
        return subprocess.run([str(launcher)], env=env, capture_output=True, text=True).stdout.strip()

    assert picked() == ""
    _fake_python(plugin_data / "venv", "bootstrap", finished=False)  # still being built
    assert picked() == ""
    _fake_python(plugin_data / "venv", "bootstrap")
    assert picked() == "bootstrap"
    _fake_python(plugin / ".venv", "dev", finished=False)
    assert picked() == "dev"
    _fake_python(compass_home / "venv", "runtime")
    assert picked() == "runtime"


def test_entry_uses_the_one_user_store_by_default(cli_runner, fake_home):
    """No COMPASS_HOME in the entry: the editor's server reads the same user data dir as the hooks and the CLI."""
    r = cli_runner.invoke(cli, ["mcp", "config", "cursor"])
    assert r.exit_code == 0
    assert json.loads(r.stdout)["mcpServers"]["compass"].get("env", {}) == {}
