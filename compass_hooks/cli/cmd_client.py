"""``compass-hook client build|status``: the native hook client (hooks/compass_hook_client.c)."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json


@click.group("client")
def client() -> None:
    """Build or inspect the native hook client.

    hooks/compass-hook.sh runs it when it sits next to the venv's python: it hands
    each hook to the warm worker without starting Python (most of a hook's time;
    docs/hooks.md has the figures) and gives anything else (no worker yet, errors)
    to the Python client.
    install.sh and the plugin bootstrap build it when a C compiler is there.
    """


@client.command("build")
@click.option("--cc", default=None, help="C compiler (default: $CC, cc, gcc or clang).")
@click.option("--source", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The C source (default: hooks/compass_hook_client.c of this plugin).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write it (default: next to this venv's python).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def build_cmd(cc: str | None, source: Path | None, output: Path | None, as_json: bool) -> None:
    """Compile the client with this package's protocol and version."""
    from ..hookclient.native import build

    result = build(source=source, target=output, cc=cc)
    if as_json:
        echo_json(result)
    else:
        click.echo(f"built {result['target']} ({result['version']}) with {result['compiler']} "
                   f"in {result['seconds']} s")


@client.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status_cmd(as_json: bool) -> None:
    """Whether the client is built and matches this package."""
    from ..hookclient.native import status

    st = status()
    if as_json:
        echo_json(st)
        return
    click.echo(f"native client: {st['state']} ({st['path']})")
    if st["version"]:
        click.echo(f"version: {st['version']}")
    if st["disabled_by_env"]:
        click.echo("disabled: COMPASS_FAST_CLIENT=0 is set")
    if st["hint"]:
        click.echo(f"hint: {st['hint']}")


def register(cli: click.Group) -> None:
    cli.add_command(client)
