"""``compass-hook mcp``: run the MCP server; ``compass-hook mcp config CLIENT``: editor configs."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json

CLIENT_NAMES = ("claude-code", "claude-desktop", "cursor", "cline", "windsurf", "zed", "continue", "vscode")


@click.group("mcp", invoke_without_command=True)
@click.option("--http", "use_http", is_flag=True,
              help="Serve streamable HTTP on 127.0.0.1 (bearer token required) instead of stdio.")
@click.option("--host", default=None, help="Bind address for --http; only 127.0.0.1 / localhost is accepted.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port for --http (default: config mcp.http_port, 8765; 0 picks a free one).")
@click.option("--project", default=None, metavar="DIR|global",
              help="The project served when the client offers no workspace roots (default: the working directory's).")
@click.pass_context
def mcp(ctx: click.Context, use_http: bool, host: str | None, port: int | None, project: str | None) -> None:
    """Run the compass MCP server (stdio by default) for Cursor, Cline, Zed, VS Code, ...

    The server exposes drift_check, recall, remember, forget, constraints, status, list, edit,
    drift_history and feedback, backed by the same worker and store as the hooks. With --http it
    listens on 127.0.0.1 only and prints a bearer token once (kept 0600 in the data dir). Use
    `compass-hook mcp config CLIENT` to set up an editor.
    """
    if ctx.invoked_subcommand is not None:
        if use_http or host or port is not None or project is not None:
            raise click.UsageError("--http/--host/--port/--project run the server; they do not apply to subcommands")
        return
    if not use_http and (host or port is not None):
        raise click.UsageError("--host and --port only apply with --http")
    from mcp_server import server

    if use_http:
        server.run_http(host, port, project=project)
    else:
        server.run_stdio(project=project)


@mcp.command("config")
@click.argument("client", type=click.Choice(CLIENT_NAMES))
@click.option("--write", is_flag=True,
              help="Merge the entry into the client's config file (timestamped backup; other servers and comments kept).")
@click.option("--remove", is_flag=True, help="Take the compass entry out of the client's config file (backup first).")
@click.option("--path", "path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Config file to write instead of the client's default location.")
@click.option("--project", default=None, metavar="DIR|global",
              help="Project the server serves when the editor offers no workspace (default: this directory's git root).")
@click.option("--json", "as_json", is_flag=True, help="With --write or --remove: print the result as JSON.")
def config_cmd(client: str, write: bool, remove: bool, path: Path | None, project: str | None, as_json: bool) -> None:
    """Print (or with --write, merge in; with --remove, take out) the MCP config for CLIENT.

    CLIENT is one of claude-code, claude-desktop, cursor, cline, windsurf, zed, continue, vscode. The command is
    the absolute path of this install's compass-mcp with --project (Claude Desktop starts servers in /); an
    editor that offers its workspace as MCP roots still gets that workspace. COMPASS_HOME is added to the entry
    only when you have it set. What --write wrote is recorded so `compass-hook uninstall` can take it out.
    """
    from mcp_server import editors

    c = editors.get_client(client)
    if write and remove:
        raise click.UsageError("give --write or --remove, not both")
    if not write and not remove:
        if path is not None:
            raise click.UsageError("--path only applies with --write or --remove")
        # The header goes to stderr so `... config cursor > file` gives a clean config.
        click.echo(f"# {c.title}: {c.default_path()}" + (f"\n# {c.note}" if c.note else ""), err=True)
        click.echo(editors.snippet(client, project))
        return
    if remove:
        if project is not None:
            raise click.UsageError("--project only applies when printing or writing an entry")
        result = editors.remove_config(client, path)
    else:
        result = editors.write_config(client, path, project)
    if as_json:
        echo_json(result.as_dict())
        return
    msg = {"created": "created", "updated": "updated", "unchanged": "already up to date:",
           "removed": "removed the compass entry from", "absent": "no compass entry in"}[result.action]
    click.echo(f"{c.title}: {msg} {result.path}")
    if result.backup:
        click.echo(f"backup: {result.backup}")
    if result.action in ("created", "updated") and c.note:
        click.echo(c.note)


def register(cli: click.Group) -> None:
    cli.add_command(mcp)
