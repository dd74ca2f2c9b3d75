"""``compass-hook eval drift``: the drift guard's figures on a labelled file, scored through the product's
``score`` op (the warm worker, or in process with COMPASS_NO_WORKER=1)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("drift")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def eval_drift(file: Path, as_json: bool) -> None:
    """ROC AUC and TPR/FPR at the default threshold on FILE, per category and language.

    FILE: JSONL {"text", "label": 0|1, "category"?, "lang"?} or the shared
    set's {"items": [{"label": "aligned"|"deviation", "prompt"}]}.
    """
    from compass_hooks.cli import echo_json
    from compass_hooks.cli.cmd_score import score_all
    from compass_hooks.drift.train import load_labelled

    from ..drift_report import format_summary, summarize

    items = load_labelled(file)
    if not items:
        raise click.ClickException(f"{file} has no items")
    results = score_all([it["text"] for it in items], progress=not as_json)  # a bar on stderr, not amid JSON
    summary = summarize(items, results)
    summary["file"] = str(file)
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"{file}")
        click.echo(format_summary(summary))


def register(group: click.Group) -> None:
    group.add_command(eval_drift)
