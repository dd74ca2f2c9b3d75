"""``compass-hook drift history``."""

from __future__ import annotations

import datetime as dt

import click

from . import call_service, echo_json


@click.group("drift")
def drift() -> None:
    """Drift alerts raised on your prompts."""


@drift.command("history")
@click.option("--limit", type=int, default=50, show_default=True, help="Most recent N alerts (0 = all).")
@click.option("--project", default=None, help="Only alerts from this project.")
@click.option("--json", "as_json", is_flag=True, help="Print the alerts as JSON.")
def history_cmd(limit: int, project: str | None, as_json: bool) -> None:
    """List stored drift alerts: time, project, session, score, category, feedback."""
    alerts = call_service("drift_history", limit=limit, project=project)["alerts"]
    if as_json:
        echo_json({"alerts": alerts})
        return
    if not alerts:
        click.echo("no drift alerts")
        return
    for a in alerts:
        when = dt.datetime.fromtimestamp(a["ts"]).strftime("%Y-%m-%d %H:%M")
        text = " ".join(a["text"].split())
        click.echo(f"{a['id']}  {when}  p={a['probability']:.2f}  {a['category'] or '-':<22} "
                   f"{(a['rule'] or ''):<14} {a['feedback'] or '':<2}  {a['project'] or '-'}  {text[:70]}")


def register(cli: click.Group) -> None:
    cli.add_command(drift)
