"""The ``compass-hook`` command line.

Commands live in ``compass_hooks/cli/cmd_*.py``; each module defines
``register(cli)`` and is discovered here, so feature work never edits this file.
Other distributions (and the benchmarks and evaluations in ``compass_eval``, which
the product never imports) add commands through the ``compass_hooks.cli`` entry
point group, as llm plugins do: each entry point names a ``register(cli)`` that is
called with this group at start-up (:func:`_load_plugins`).
Core errors (:class:`~compass_hooks.errors.CompassError`) become one-line click
errors here and nowhere else. A reader that closes our stdout early
(``compass-hook audit verify | head -1``) ends the command quietly with the exit
status it had decided on (:func:`set_exit_status`), so a pipeline never turns a
failure into success.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import pkgutil
import sys
from importlib.metadata import entry_points
from typing import Any

import click

from .. import __version__
from ..errors import CompassError


EXIT_STATUS = "compass.exit_status"


def set_exit_status(code: int) -> None:
    """The status this command ends with, decided before it prints: what a closed pipe exits with."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[EXIT_STATUS] = int(code)


def _stdout_gone() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail again (and exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # not a real file (a test runner's capture): nothing will flush to a closed pipe


class OneLineUsageError(click.ClickException):
    """A usage error on one line, naming the command and its --help: click's own form is three or four lines
    (usage, "Try ... for help", a blank line, the error), and the README promises one."""

    exit_code = 2

    def __init__(self, exc: click.UsageError):
        super().__init__(exc.format_message())
        self.command_path = exc.ctx.command_path if exc.ctx is not None else "compass-hook"

    def show(self, file: Any = None) -> None:
        message = " ".join(self.format_message().split())
        click.echo(f"Error: {message} (see `{self.command_path} --help`)", err=True)


class CompassGroup(click.Group):
    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:  # an unknown top-level option
            raise OneLineUsageError(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CompassError as exc:
            raise click.ClickException(str(exc)) from None
        except click.UsageError as exc:  # every subcommand's (and nested group's) parse and argument errors
            raise OneLineUsageError(exc) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            _stdout_gone()
            sys.exit(ctx.meta.get(EXIT_STATUS, 0))
        except Exception as exc:  # never a traceback at the edge; the log has it
            from ..logs import get_logger

            get_logger("cli").exception("unexpected error")
            raise click.ClickException(f"internal error: {type(exc).__name__}: {exc} (details in the cli log)") from None


@click.group(cls=CompassGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="compass-hook")
def cli() -> None:
    """compass-hooks: local memory and drift guard for coding agents.

    Runs hooks for Claude Code, an MCP server for other editors, and these
    commands. Nothing leaves this machine; no LLM is called.
    """


def echo_json(data: Any) -> None:
    """The one way commands print JSON."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def call_service(op: str, **args: Any) -> dict:
    """One op through the service (the warm worker, or in process with ``COMPASS_NO_WORKER=1``), closed after:
    what a command that makes a single call uses."""
    from ..service import get_service

    service = get_service()
    try:
        return service.call(op, **args)
    finally:
        service.close()


def embed_with_progress(embedder: Any, texts: list[str], batch: int = 32) -> Any:
    """``embedder.embed(texts)`` in batches with a progress bar on stderr (stdout may be JSON): what the long
    training and evaluation commands show while they embed their data sets."""
    import numpy as np

    if not texts:
        return embedder.embed(texts)
    parts = []
    with click.progressbar(length=len(texts), label=f"embedding {len(texts)} texts with {embedder.name}",
                           file=sys.stderr) as bar:
        for i in range(0, len(texts), batch):
            parts.append(embedder.embed(texts[i:i + batch]))
            bar.update(len(texts[i:i + batch]))
    return np.vstack(parts)


def _discover() -> None:
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{mod.name}").register(cli)


PLUGIN_GROUP = "compass_hooks.cli"


def _load_plugins() -> None:
    """Call every ``compass_hooks.cli`` entry point's ``register(cli)``. A plugin that fails to import or to
    register costs its own commands and one line on stderr, never the CLI: the product's commands must keep
    working whatever else is installed in the environment."""
    try:
        found = sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name)
    except Exception as exc:  # an unreadable dist-info elsewhere in the environment
        _warn(f"plugins not loaded: {type(exc).__name__}: {exc}")
        return
    for ep in found:
        before = dict(cli.commands)
        try:
            ep.load()(cli)
        except Exception as exc:
            cli.commands.clear()  # nothing half-registered: a command whose siblings failed may be broken too
            cli.commands.update(before)
            _warn(f"plugin {ep.name!r} ({ep.value}) not loaded: {type(exc).__name__}: {exc}")


def _warn(message: str) -> None:
    click.echo("compass-hook: warning: " + " ".join(message.split()), err=True)


_discover()
_load_plugins()


def main() -> None:
    cli(prog_name="compass-hook")
