"""``compass-hook worker start|stop|status``: the warm worker that holds the model."""

from __future__ import annotations

from typing import Any

import click

from . import echo_json, set_exit_status

# `worker status` exit codes, as LSB init scripts' `status`: 0 running, 3 not running (scripts can test it).
NOT_RUNNING = 3


def _show(data: dict[str, Any], as_json: bool) -> None:
    if as_json:
        echo_json(data)
        return
    for key, value in data.items():
        if value is not None:
            click.echo(f"{key}: {value}")


@click.group("worker")
def worker() -> None:
    """Start, stop or inspect the warm worker (one per data dir).

    The worker loads the embedding model and anchors once and answers hooks,
    the CLI and the MCP server over a private Unix socket. Hooks start it on
    demand; it exits by itself after worker.idle_timeout_s without requests.
    """


@worker.command("start")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("--timeout", type=float, default=None, help="Seconds to wait for readiness (default worker.start_timeout_s).")
def start(as_json: bool, timeout: float | None) -> None:
    """Start the worker if needed and return once it is ready (model loaded)."""
    from ..worker.client import ensure_worker, worker_status

    ensure_worker(wait_s=timeout)
    _show(worker_status(), as_json)


@worker.command("stop")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def stop(as_json: bool) -> None:
    """Stop the worker (only a process proven to be this data dir's worker is signalled).

    It stores waiting captures for up to 3 s; any left stay on disk and the next worker stores them.
    """
    from .. import spool
    from ..paths import get_paths
    from ..worker.client import stop_worker

    result = stop_worker()
    result["captures_waiting"] = spool.count(get_paths().data)
    if as_json:
        echo_json(result)
    elif result["running"]:
        raise click.ClickException(f"the worker (pid {result['pid']}) is still running")
    else:
        click.echo(f"stopped worker pid {result['pid']}" if result["was_running"] else "no worker was running")
        if result["captures_waiting"]:
            click.echo(f"{result['captures_waiting']} captures wait on disk; the next worker stores them")


@worker.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(as_json: bool) -> None:
    """Show whether the worker runs, is ready, its pid, model and versions (never starts it).

    Exits 0 when a worker runs, 3 when none does (as `service status` does), so a script can test it.
    """
    from ..worker.client import worker_status

    data = worker_status()
    code = 0 if data.get("running") else NOT_RUNNING
    set_exit_status(code)
    _show(data, as_json)
    if code:
        raise SystemExit(code)


def register(cli: click.Group) -> None:
    cli.add_command(worker)
