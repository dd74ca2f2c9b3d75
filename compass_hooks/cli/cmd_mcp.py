"""``compass-hook mcp``: run the MCP server; ``compass-hook mcp config CLIENT``: editor configs."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json

CLIENT_NAMES = ("claude-code", "claude-desktop", "cursor", "cline", "windsurf", "zed", "continue")


def register(cli: click.Group) -> None:
    @cli.group("mcp", invoke_without_command=True)
    @click.option("--http", "use_http", is_flag=True,
                  help="Serve streamable HTTP on 127.0.0.1 (bearer token required) instead of stdio.")
    @click.option("--host", default=None, help="Bind address for --http; only 127.0.0.1 / localhost is accepted.")
    @click.option("--port", type=click.IntRange(0, 65535), default=None,
                  help="Port for --http (default: config mcp.http_port, 8765; 0 picks a free one).")
    @click.pass_context
    def mcp(ctx: click.Context, use_http: bool, host: str | None, port: int | None) -> None:
        """Run the compass MCP server (stdio by default) for Cursor, Cline, Zed, ...

        The server exposes drift_check, recall, remember, forget, constraints and
        status, backed by the same worker and store as the hooks. With --http it
        listens on 127.0.0.1 only and prints a bearer token once (kept 0600 in the
        data dir). Use `compass-hook mcp config CLIENT` to set up an editor.
        """
        if ctx.invoked_subcommand is not None:
            if use_http or host or port is not None:
                raise click.UsageError("--http/--host/--port run the server; they do not apply to subcommands")
            return
        if not use_http and (host or port is not None):
            raise click.UsageError("--host and --port only apply with --http")
        from mcp_server import server

        if use_http:
            server.run_http(host, port)
        else:
            server.run_stdio()

    @mcp.command("config")
    @click.argument("client", type=click.Choice(CLIENT_NAMES))
    @click.option("--write", is_flag=True,
                  help="Merge the entry into the client's config file (timestamped backup; other servers kept).")
    @click.option("--path", "path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Config file to write instead of the client's default location.")
    @click.option("--json", "as_json", is_flag=True, help="With --write: print the result as JSON.")
    def config_cmd(client: str, write: bool, path: Path | None, as_json: bool) -> None:
        """Print (or with --write, merge in) the MCP config for CLIENT.

        CLIENT is one of claude-code, claude-desktop, cursor, cline, windsurf, zed,
        continue. The command is the absolute path of this install's compass-mcp;
        COMPASS_HOME is added to the entry only when you have it set.
        """
        from mcp_server import editors

        c = editors.get_client(client)
        if not write:
            if path is not None:
                raise click.UsageError("--path only applies with --write")
            # The header goes to stderr so `... config cursor > file` gives a clean config.
            click.echo(f"# {c.title}: {c.default_path()}" + (f"\n# {c.note}" if c.note else ""), err=True)
            click.echo(editors.snippet(client))
            return
        result = editors.write_config(client, path)
        if as_json:
            echo_json(result.as_dict())
            return
        msg = {"created": "created", "updated": "updated", "unchanged": "already up to date:"}[result.action]
        click.echo(f"{c.title}: {msg} {result.path}")
        if result.backup:
            click.echo(f"backup: {result.backup}")
        if result.action != "unchanged" and c.note:
            click.echo(c.note)
