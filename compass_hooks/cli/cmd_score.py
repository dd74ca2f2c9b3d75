"""``compass-hook score``: drift scores for prompts, through the warm worker."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterator

import click

from . import echo_json

BATCH = 64
FIELDS = ("text", "drift", "probability", "alert", "rule", "category", "anchors", "lang", "threshold", "scored_by")


def _read_jsonl(source: str) -> Iterator[str]:
    try:
        fh = sys.stdin if source == "-" else open(source, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise click.ClickException(f"{source}:{n}: not JSON") from None
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise click.ClickException(f"{source}:{n}: needs a string field 'text'")
            yield row["text"]
    finally:
        if fh is not sys.stdin:
            fh.close()


def score_all(texts: list[str], project: str | None = None, progress: bool = False) -> list[dict]:
    """Score ``texts`` in batches through the service; ``progress``: a progress bar on stderr."""
    import contextlib
    import sys

    from ..service import get_service

    bar_cm = (click.progressbar(length=len(texts), label=f"scoring {len(texts)} prompts", file=sys.stderr)
              if progress else contextlib.nullcontext(None))
    with bar_cm as bar:
        return _score_batches(texts, project, get_service, bar)


def _score_batches(texts: list[str], project: str | None, get_service, bar) -> list[dict]:

    service = get_service()
    out: list[dict] = []
    try:
        for start in range(0, len(texts), BATCH):
            args: dict[str, Any] = {"texts": texts[start:start + BATCH]}
            if project:
                args["project"] = project
            out.extend(service.call("score", **args)["results"])
            if bar is not None:
                bar.update(len(args["texts"]))
    finally:
        close = getattr(service, "close", None)
        if close:
            close()
    return out


@click.command("score")
@click.argument("text", required=False)
@click.option("--jsonl", "jsonl", default=None, metavar="FILE|-",
              help='Score every {"text": ...} line of FILE (or stdin); one JSON line out per line in, same order.')
@click.option("--json", "as_json", is_flag=True, help="Print the result for TEXT as JSON.")
@click.option("--project", default=None, help="Project whose pack selection applies.")
def score_cmd(text: str | None, jsonl: str | None, as_json: bool, project: str | None) -> None:
    """Score TEXT (or --jsonl FILE|-) for drift: probability, alert, rule, nearest anchors."""
    if (text is None) == (jsonl is None):
        raise click.UsageError("give TEXT or --jsonl FILE|- (exactly one)")
    if jsonl is not None:
        texts = list(_read_jsonl(jsonl))
        for r in score_all(texts, project):
            click.echo(json.dumps({k: r.get(k) for k in FIELDS}, ensure_ascii=False))
        return
    assert text is not None  # exactly one of TEXT and --jsonl, checked above
    r = score_all([text], project)[0]
    if as_json:
        echo_json({k: r.get(k) for k in FIELDS})
        return
    status = "ALERT" if r["alert"] else "ok"
    click.echo(f"{status:<5} probability {r['probability']:.3f}  drift {r['drift']:+.4f}"
               + (f"  category {r['category']}" if r["category"] else "") + (f"  rule {r['rule']}" if r["rule"] else ""))
    by = r.get("scored_by") or {}
    click.echo(f"  language {r.get('lang')}, threshold {r.get('threshold')}; scored by: {', '.join(by.get('parts', []))}")
    if by.get("note"):
        click.echo(f"  note: {by['note']}")
    if by.get("neighbours"):
        click.echo(f"  nearest dev items: {by['neighbours']}")
    for a in r["anchors"]:
        click.echo(f"  {a['similarity']:.3f} {a['polarity'][:3]} {a['id']}: {a['text']}")


def register(cli: click.Group) -> None:
    cli.add_command(score_cmd)
