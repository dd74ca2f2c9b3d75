"""Everything a user can call is documented in README.md and has help:
every MCP tool, every CLI command (the click group walked recursively) and every
skill in skills/ (each one a slash command, /compass-hooks:NAME; commands/ is the legacy form, not used)."""

from __future__ import annotations

import re

import anyio
import click
import pytest
import testdirs

ROOT = testdirs.ROOT


def _readme() -> str:
    path = ROOT / "README.md"
    assert path.exists(), "README.md is missing (the tools, commands and slash commands must be documented there)"
    return path.read_text(encoding="utf-8")


def _walk(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, cmd in sorted(group.commands.items()):
        if cmd.hidden:
            continue
        path = prefix + (name,)
        yield path, cmd
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, path)


def _cli_commands():
    from compass_hooks.cli import cli

    return list(_walk(cli))


def _tools():
    from mcp_server.server import build_server
    from mcp_server.tools import Backend

    def never():  # listing tools must not start the worker or load a model
        raise AssertionError("the service was used")

    return anyio.run(build_server(Backend(factory=never)).list_tools)


def _slash_commands():
    return sorted((ROOT / "skills").glob("*/SKILL.md"))


def test_there_is_something_to_check():
    assert len(_cli_commands()) >= 10
    assert {t.name for t in _tools()} == {"drift_check", "recall", "remember", "forget", "constraints", "status",
                                          "list", "edit", "drift_history", "feedback"}
    assert {p.parent.name for p in _slash_commands()} >= {"remember", "recall", "drift-history", "status", "memories",
                                                          "edit", "compass"}
    assert not (ROOT / "commands").exists(), "slash commands are skills now (skills/NAME/SKILL.md)"


@pytest.mark.parametrize("path,cmd", _cli_commands(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_cli_command_has_help_and_is_in_readme(path, cmd):
    assert (cmd.help or cmd.short_help or "").strip(), f"`compass-hook {' '.join(path)}` has no help text"
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert (param.help or "").strip(), f"`compass-hook {' '.join(path)}` option {param.opts} has no help"
    name = "compass-hook " + " ".join(path)
    assert re.search(re.escape(name) + r"\b", _readme()), f"README.md does not mention `{name}`"


@pytest.mark.parametrize("tool", _tools(), ids=lambda t: t.name)
def test_mcp_tool_has_a_description_and_is_in_readme(tool):
    assert tool.description and len(tool.description.strip()) > 40
    for name, prop in (tool.input_schema.get("properties") or {}).items():
        assert prop.get("description"), f"{tool.name}({name}) has no description"
    assert re.search(r"\b" + re.escape(tool.name) + r"\b", _readme()), f"README.md does not mention tool {tool.name}"


@pytest.mark.parametrize("path", _slash_commands(), ids=lambda p: p.parent.name)
def test_slash_command_has_a_description_and_is_in_readme(path):
    text = path.read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert m, f"{path.name}: no frontmatter"
    desc = re.search(r"^description:\s*(.+)$", m.group(1), re.M)
    assert desc and desc.group(1).strip(), f"{path.name}: no description in the frontmatter"
    assert m.group(2).strip(), f"{path.name}: empty body"
    name = re.search(r"^name:\s*(.+)$", m.group(1), re.M)
    assert name and name.group(1).strip() == path.parent.name, f"{path}: name must be the folder's"
    assert re.search(r"/(compass-hooks:)?" + re.escape(path.parent.name) + r"\b", _readme()), \
        f"README.md does not mention the slash command /{path.parent.name}"
    # The agent calls plain `compass-hook` (bin/ is on its Bash tool's PATH), never a venv path.
    assert ".venv/bin/compass-hook" not in m.group(2) and "CLAUDE_PLUGIN_ROOT" not in m.group(2)
