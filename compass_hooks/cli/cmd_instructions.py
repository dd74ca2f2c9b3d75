"""``compass-hook instructions list|train``: the standing instructions Compass re-injects, and the detector's
training (docs/memory.md, "Standing instructions")."""

from __future__ import annotations

from pathlib import Path

import click

from . import call_service, echo_json, embed_with_progress


@click.group("instructions")
def instructions() -> None:
    """Standing instructions: the rules you set in a prompt that Compass shows with every later prompt."""


@instructions.command("list")
@click.option("--project", default=None, help="Project path or name (default: the git top-level of the cwd).")
@click.option("--session", default=None, help="Only what a prompt of this session is under (the rules in force).")
@click.option("--all", "include_retired", is_flag=True, help="Also the revoked and replaced ones.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
def list_cmd(project: str | None, session: str | None, include_retired: bool, as_json: bool) -> None:
    """The project's standing instructions (and the global ones), newest first."""
    from ..memory.inject import age
    from .cmd_memory import _project_arg

    result = call_service("instructions", project=_project_arg(project), session=session,
                          include_retired=include_retired)
    if as_json:
        echo_json(result)
        return
    rows = result["instructions"]
    if not rows:
        click.echo(f"no standing instructions for {result['project']}")
        return
    for r in rows:
        where = {"session": f"session {str(r.get('session') or '')[:8]}", "project": "project",
                 "global": "every project"}.get(r["scope"], r["scope"])
        state = "" if r["state"] == "active" else f" [{r['state']}]"
        click.echo(f"[{r['id']}] {where}, {age(r['created'])}{state}: {' '.join(r['text'].split())}")


@instructions.command("train")
@click.option("--model", "model_name", default=None, help="Embedding model (default: the configured one).")
@click.option("--dev", "dev_files", type=click.Path(exists=True, dir_okay=False, path_type=Path), multiple=True,
              help="Labelled JSONL, repeatable (default: the dev files shipped in compass_hooks/memory/standing/data/).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file (default: <data>/calibration/instructions/<model>.json, read before the shipped one).")
@click.option("--json", "as_json", is_flag=True, help="Print the written weights' summary as JSON.")
def train_cmd(model_name: str | None, dev_files: tuple[Path, ...], out: Path | None, as_json: bool) -> None:
    """Fit the standing-instruction detector for an embedding model on the dev set (reproducible: fixed folds,
    closed-form fits); the threshold keeps out-of-fold precision >= 0.96 on the reference dev files (on your own
    --dev files when none of them is one). Progress goes to stderr."""
    from ..core import Core
    from ..embedding import get_embedder
    from ..memory.standing import detect, train

    core = Core()
    embedder = get_embedder(model_name, core.config)
    devs = tuple(dev_files) or train.DEV_SETS
    per_file = [train.load(d) for d in devs]
    items = [it for part in per_file for it in part]

    def embed(texts: list[str]):
        vectors = embed_with_progress(embedder, texts)
        click.echo("fitting the detector (cross-validated)...", err=True)
        return vectors

    names = tuple(d.name for d in devs)
    weights = train.train(items, embed, embedder.name, int(embedder.dim), source=names,
                          reference=train.reference_rows(names, [len(part) for part in per_file]))
    target = out or detect.weights_candidates(core.paths, embedder.name)[0]
    detect.write_weights(weights, target)
    summary = {"file": str(target), "model": embedder.name, "threshold": round(weights.threshold, 4),
               **weights.meta["dev"]}
    if as_json:
        echo_json(summary)
        return
    dev_fig = weights.meta["dev"]
    click.echo(f"wrote {target}")
    click.echo(f"model {embedder.name}: threshold {weights.threshold:.4f}; dev out-of-fold precision "
               f"{dev_fig['oof_precision']}, recall {dev_fig['oof_recall']}, AUC {dev_fig['oof_auc']}; revocation "
               f"accuracy {dev_fig['revoke_oof_accuracy']}, scope accuracy (unnamed) {dev_fig['scope_oof_accuracy_unnamed']}")


def register(cli: click.Group) -> None:
    cli.add_command(instructions)
