"""``compass-hook eval``: evaluation commands. This module owns the group
(``eval_group``, registered as "eval") and its ``drift`` subcommand; other
features attach theirs via ``cli.commands["eval"]``."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json


@click.group("eval")
def eval_group() -> None:
    """Evaluate compass-hooks on labelled data (drift, memory recall)."""


@eval_group.command("drift")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def eval_drift(file: Path, as_json: bool) -> None:
    """ROC AUC and TPR/FPR at the default threshold on FILE, per category and language.

    FILE: JSONL {"text", "label": 0|1, "category"?, "lang"?} or the shared
    set's {"items": [{"label": "aligned"|"deviation", "prompt"}]}.
    """
    from ..drift.evaluate import format_summary, summarize
    from ..drift.train import load_labelled
    from .cmd_score import score_all

    items = load_labelled(file)
    if not items:
        raise click.ClickException(f"{file} has no items")
    results = score_all([it["text"] for it in items])
    summary = summarize(items, results)
    summary["file"] = str(file)
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"{file}")
        click.echo(format_summary(summary))


def register(cli: click.Group) -> None:
    if "eval" not in cli.commands:
        cli.add_command(eval_group)
