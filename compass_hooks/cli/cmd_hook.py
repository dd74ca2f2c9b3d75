"""``compass-hook hook EVENT``: run a Claude Code hook by hand (reads the event JSON on stdin)."""

from __future__ import annotations

import os
import sys

import click

CHOICES = ["session-start", "user-prompt-submit", "pre-tool-use", "pre-compact", "stop"]


def register(cli: click.Group) -> None:
    @cli.command("hook")
    @click.argument("event", type=click.Choice(CHOICES))
    @click.option("--local", is_flag=True, help="Run in this process instead of the worker (also with COMPASS_NO_WORKER=1).")
    def hook(event: str, local: bool) -> None:
        """Run the EVENT hook exactly as Claude Code would: event JSON on stdin, hook JSON (or nothing) on stdout.

        Same logic as hooks/hooks.json (fails open: exit 0 and no output on any
        error; details in the hook log). Example:

          echo '{"prompt": "force push to main", "cwd": "."}' | compass-hook hook user-prompt-submit
        """
        from ..hookio.runner import run

        local = local or os.environ.get("COMPASS_NO_WORKER", "") not in ("", "0")
        run(event, getattr(sys.stdin, "buffer", sys.stdin), sys.stdout, local=local)
