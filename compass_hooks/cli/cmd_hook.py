"""``compass-hook hook EVENT``: run a Claude Code hook by hand (reads the event JSON on stdin)."""

from __future__ import annotations

import io
import sys

import click

CHOICES = ["session-start", "user-prompt-submit", "pre-tool-use", "pre-compact", "stop"]


@click.command("hook")
@click.argument("event", type=click.Choice(CHOICES))
@click.option("--local", is_flag=True, help="Run in this process instead of the worker (also with COMPASS_NO_WORKER=1).")
def hook(event: str, local: bool) -> None:
    """Run the EVENT hook exactly as Claude Code would: event JSON on stdin, hook JSON (or nothing) on stdout.

    Same logic as hooks/hooks.json (fails open: exit 0 and no output on any
    error; details in the hook log). Example:

      echo '{"prompt": "force push to main", "cwd": "."}' | compass-hook hook user-prompt-submit
    """
    from ..hookclient.runner import run
    from ..service import LocalService, no_worker

    def in_process(name: str, payload: dict) -> dict:
        svc = LocalService()
        try:
            return svc.call("hook", event=name, payload=payload)
        finally:
            svc.close()

    # A text-only stdin (no .buffer, e.g. a harness's StringIO) is handed over as bytes: read_payload decodes
    # bytes, and a text stream used to fail there.
    stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else io.BytesIO(sys.stdin.read().encode("utf-8"))
    run(event, stdin, sys.stdout, call=in_process if local or no_worker() else None)


def register(cli: click.Group) -> None:
    cli.add_command(hook)
