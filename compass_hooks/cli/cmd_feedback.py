"""``compass-hook feedback ALERT_ID fp|tp``."""

from __future__ import annotations

import click

from . import call_service, echo_json


@click.command("feedback")
@click.argument("alert_id")
@click.argument("label", type=click.Choice(["fp", "tp"]))
@click.option("--json", "as_json", is_flag=True, help="Print the updated alert as JSON.")
def feedback_cmd(alert_id: str, label: str, as_json: bool) -> None:
    """Label drift alert ALERT_ID a false (fp) or true (tp) positive; `anchors tune` learns from it."""
    alert = call_service("drift_feedback", alert_id=alert_id, label=label)["alert"]
    if as_json:
        echo_json(alert)
    else:
        click.echo(f"{alert_id}: {label} recorded; run `compass-hook anchors tune` to re-weight anchors")


def register(cli: click.Group) -> None:
    cli.add_command(feedback_cmd)
