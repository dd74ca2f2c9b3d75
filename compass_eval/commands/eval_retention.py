"""``compass-hook eval retention``: do standing instructions come back when they matter? Multi-turn
conversations replayed through the real hook handlers (:mod:`compass_eval.retention`)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click


@click.command("retention")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--model", default="minilm", show_default=True, help="Embedding model the product runs with.")
@click.option("--variant", "variants", multiple=True, type=click.Choice(["plain", "compact-same", "compact-new"]),
              help="Replays to run (default: all three: plain, a compaction under the same session id, under a new one).")
@click.option("--last-n", type=click.IntRange(min=1), default=4, show_default=True,
              help="User turns the baseline re-injects verbatim (cut to the size Compass injected).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N conversations.")
@click.option("--show-rows", is_flag=True, help="With --json: keep each conversation's figures and injected context.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def eval_retention(file: Path, model: str, variants: tuple[str, ...], last_n: int, limit: int | None,
                   show_rows: bool, as_json: bool) -> None:
    """Replay the conversations in FILE (retention JSONL: turns, instruction_turn, checks, absent, kind) through
    the UserPromptSubmit, Stop, PreCompact and SessionStart handlers, each in a fresh project of a throw-away
    data dir, and report how often the final prompt's injected context carries the standing instruction, the
    same after a compaction (same and new session id), the characters injected, false rules in control
    conversations, revoked and replaced rules, and the size-matched last-N-turns baseline."""
    from compass_hooks.cli import echo_json

    from .. import retention

    convs = retention.load(file, limit)
    if not convs:
        raise click.ClickException(f"{file} has no conversations")
    chosen = variants or retention.VARIANTS
    with tempfile.TemporaryDirectory(prefix="compass-retention-") as tmp:
        with click.progressbar(length=len(convs) * len(chosen), label="replaying conversations", file=sys.stderr,
                               show_pos=True) as bar:
            report = retention.evaluate(convs, Path(tmp), model, chosen, last_n, progress=bar.update)
    report["file"] = str(file)
    if not show_rows:
        report.pop("rows", None)
    if as_json:
        echo_json(report)
    else:
        click.echo(f"{file}")
        click.echo(retention.format_report(report))


def register(group: click.Group) -> None:
    group.add_command(eval_retention)
