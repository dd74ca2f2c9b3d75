"""Each editor's generated config against that editor's documented format (a small JSON Schema per editor in
tests/fixtures/editor_schemas/, written from its docs: the source is in each schema's description), the
explicit project in every entry, JSONC-safe merging (Zed's default settings are full of comments), `--remove`,
and the record `--write` keeps for `compass-hook uninstall`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml

from compass_hooks.cli import cli
from mcp_server import editors, jsonc
from testdirs import FIXTURES

SCHEMAS = FIXTURES / "editor_schemas"

ZED_DEFAULT = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
//
// To see all of Zed's default settings without changing your
// custom settings, run `zed: open default settings` from the
// command palette (cmd-shift-p / ctrl-shift-p)
{
  "ui_font_size": 16,
  "buffer_font_size": 15,
  "theme": {
    "mode": "system",
    "light": "One Light",
    "dark": "One Dark", // the one I use
  },
  /* servers I trust */
  "context_servers": {
    "other": { "source": "custom", "command": "other-mcp", "args": [] },
  },
}
"""


def _schema(client: str) -> dict:
    return json.loads((SCHEMAS / f"{client}.json").read_text())


@pytest.mark.parametrize("client", list(editors.CLIENTS))
def test_written_config_matches_the_editors_schema(client, tmp_path, compass_home):
    name = "compass.yaml" if client == "continue" else "config.json"
    path = tmp_path / name
    res = editors.write_config(client, path, project=str(tmp_path))
    assert res.action == "created"
    text = path.read_text()
    data = yaml.safe_load(text) if client == "continue" else json.loads(text)
    jsonschema.validate(data, _schema(client))
    entry = data["mcpServers"][0] if client == "continue" else data[editors.CLIENTS[client].container]["compass"]
    assert entry["args"] == ["--project", str(tmp_path)]  # explicit: never the server's cwd (/ in Claude Desktop)
    assert Path(entry["command"]).is_absolute()
    assert {"client": client, "path": str(path)}.items() <= editors.written()[-1].items()


def test_vscode_target(cli_runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli_runner.invoke(cli, ["mcp", "config", "vscode", "--write", "--json"])
    assert r.exit_code == 0, r.output
    path = tmp_path / ".vscode" / "mcp.json"
    assert json.loads(r.stdout)["path"] == str(path)
    data = json.loads(path.read_text())
    assert data["servers"]["compass"]["type"] == "stdio"
    jsonschema.validate(data, _schema("vscode"))


def test_zed_settings_with_comments_are_merged_and_kept(cli_runner, tmp_path, compass_home):
    cfg = tmp_path / "settings.json"
    cfg.write_text(ZED_DEFAULT)
    r = cli_runner.invoke(cli, ["mcp", "config", "zed", "--write", "--path", str(cfg), "--project", "global"])
    assert r.exit_code == 0, r.output
    text = cfg.read_text()
    for line in ZED_DEFAULT.splitlines():  # every comment and setting is still there, as it was
        assert line in text, line
    data = jsonc.loads(text)
    jsonschema.validate(data, _schema("zed"))
    assert data["context_servers"]["compass"]["args"] == ["--project", "global"]
    assert data["context_servers"]["other"]["command"] == "other-mcp" and data["theme"]["dark"] == "One Dark"
    r = cli_runner.invoke(cli, ["mcp", "config", "zed", "--write", "--path", str(cfg), "--project", "global"])
    assert "already up to date" in r.output
    r = cli_runner.invoke(cli, ["mcp", "config", "zed", "--remove", "--path", str(cfg)])
    assert r.exit_code == 0 and "removed the compass entry" in r.output
    assert cfg.read_text() == ZED_DEFAULT  # byte for byte
    assert editors.written() == []
    r = cli_runner.invoke(cli, ["mcp", "config", "zed", "--remove", "--path", str(cfg)])
    assert "no compass entry in" in r.output


def test_remove_keeps_other_servers_and_backs_up(cli_runner, tmp_path, compass_home):
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"fs": {"command": "fs-mcp"}}, "theme": "dark"}, indent=2))
    assert editors.write_config("cursor", cfg).action == "updated"
    r = cli_runner.invoke(cli, ["mcp", "config", "cursor", "--remove", "--path", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["action"] == "removed" and Path(out["backup"]).is_file()
    assert json.loads(cfg.read_text()) == {"mcpServers": {"fs": {"command": "fs-mcp"}}, "theme": "dark"}
    cont = tmp_path / "compass.yaml"
    editors.write_config("continue", cont)
    assert editors.remove_config("continue", cont).action == "removed" and not cont.exists()


def test_remove_refuses_what_it_cannot_merge(tmp_path, compass_home):
    cfg = tmp_path / "mcp.json"
    original = '{"mcpServers": {"compass": {"command": "x"}} "oops": 1}'
    cfg.write_text(original)
    with pytest.raises(Exception, match="not JSON"):
        editors.remove_config("cursor", cfg)
    assert cfg.read_text() == original
    link = tmp_path / "link.json"
    link.symlink_to(cfg)
    with pytest.raises(Exception, match="symlink"):
        editors.remove_config("cursor", link)


def test_server_serves_the_configured_project(tmp_path, compass_home):
    """`compass-mcp --project DIR` started in / (as Claude Desktop does) stores into DIR's project."""
    import anyio

    from mcp_client import COMPASS_MCP, server_env
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)

    async def go():
        params = StdioServerParameters(command=str(COMPASS_MCP), args=["--project", str(proj)], env=server_env(),
                                       cwd="/")
        with open(tmp_path / "err.log", "w") as err:
            async with Client(stdio_client(params, errlog=err), read_timeout_seconds=60) as c:
                return await c.call_tool("remember", {"text": "keep the API stable"})

    out = anyio.run(go)
    assert not out.is_error and out.structured_content["project"] == str(proj)
    assert os.getcwd() != "/"
