"""``compass-hook anchors list|add|remove|verify|use|train|tune``.

Adding and removing anchors go through the drift ops (``anchor_add`` / ``anchor_remove``, audited in
:mod:`compass_hooks.drift.changes`), so a running worker makes the change and scores with it next;
the rest read the pack files here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from . import call_service, echo_json, embed_with_progress


@click.group("anchors")
def anchors() -> None:
    """Anchor packs: list, add/remove your own, verify files, train and tune the scorer."""


@anchors.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the anchors as JSON.")
@click.option("--project", default=None, help="Show the packs selected for this project.")
def list_cmd(as_json: bool, project: str | None) -> None:
    """List the anchors in use (configured packs + your user pack, tuned weights applied)."""
    from ..config import load_config
    from ..drift import pack as pm
    from ..paths import get_paths

    paths = get_paths()
    files = pm.selected_pack_paths(paths, load_config(paths.config), project)
    items = [a.as_dict() for a in pm.load_anchors(files, pm.load_weights(paths))]
    if as_json:
        echo_json({"packs": [str(f) for f in files], "anchors": items})
        return
    click.echo("packs: " + ", ".join(str(f) for f in files))
    for a in items:
        click.echo(f"{a['id']:<34} {a['polarity'][:3]} {a['category']:<22} w={a['weight']:.2f} {a['lang']}  {a['text']}")
    click.echo(f"{len(items)} anchors")


@anchors.command("add")
@click.argument("text")
@click.option("--polarity", type=click.Choice(["positive", "negative"]), required=True, help="negative = drift, positive = on track.")
@click.option("--category", required=True, help="Anchor category, e.g. test_tampering or verification.")
@click.option("--weight", type=float, default=1.0, show_default=True, help="Weight in (0, 10].")
@click.option("--lang", default="en", show_default=True, help="Language tag of TEXT.")
@click.option("--id", "anchor_id", default=None, help="Anchor id (default: user-<hash>).")
def add_cmd(text: str, polarity: str, category: str, weight: float, lang: str, anchor_id: str | None) -> None:
    """Add TEXT as an anchor to your user pack (audited).

    CATEGORY is one of the drift categories for --polarity negative (e.g. destructive_operation,
    test_tampering) or the on-track ones for positive (e.g. verification, ordinary_task).
    """
    from ..drift.pack import NEGATIVE_CATEGORIES, POSITIVE_CATEGORIES

    # Checked here, against the argument: the pack writer would report it as a bad field of your pack file.
    allowed = NEGATIVE_CATEGORIES if polarity == "negative" else POSITIVE_CATEGORIES
    if category not in allowed:
        other = POSITIVE_CATEGORIES if polarity == "negative" else NEGATIVE_CATEGORIES
        why = f"a {'positive' if polarity == 'negative' else 'negative'} category" if category in other else "unknown"
        raise click.BadParameter(f"{category!r} is {why}; for --polarity {polarity} use one of: {', '.join(allowed)}",
                                 param_hint="'--category'")
    out = call_service("anchor_add", text=text, polarity=polarity, category=category, weight=weight, lang=lang,
                id=anchor_id, source="cli")
    a = out["anchor"]
    click.echo(f"added {a['id']} ({a['polarity']}, {a['category']}) to {out['pack']}")


@anchors.command("remove")
@click.argument("anchor_id")
def remove_cmd(anchor_id: str) -> None:
    """Remove ANCHOR_ID from your user pack (audited)."""
    call_service("anchor_remove", id=anchor_id, source="cli")
    click.echo(f"removed {anchor_id}")


@anchors.command("verify")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
def verify_cmd(files: tuple[Path, ...]) -> None:
    """Validate pack FILES (default: every pack in use and every shipped pack)."""
    from ..config import load_config
    from ..drift import pack as pm
    from ..errors import AnchorPackError
    from ..paths import get_paths

    paths = get_paths()
    targets = list(files) or sorted(set(pm.selected_pack_paths(paths, load_config(paths.config)))
                                    | {pm.resolve_pack(n, paths) for n in pm.shipped_pack_names(paths)})
    bad = 0
    for f in targets:
        try:
            p = pm.load_pack_file(f)
            click.echo(f"ok   {f} ({p.name}: {len(p.anchors)} anchors)")
        except AnchorPackError as exc:
            bad += 1
            click.echo(f"FAIL {exc}")
    try:
        pm.load_weights(paths)
    except AnchorPackError as exc:
        bad += 1
        click.echo(f"FAIL {exc}")
    if bad:
        raise click.ClickException(f"{bad} pack file(s) invalid")


@anchors.command("use")
@click.argument("packs", nargs=-1)
@click.option("--project", required=True, help="Project key or folder name the selection applies to.")
@click.option("--clear", is_flag=True, help="Drop the project's selection (back to drift.packs).")
def use_cmd(packs: tuple[str, ...], project: str, clear: bool) -> None:
    """Choose the anchor PACKS for one project (e.g. `default infra`); the user pack always applies."""
    from ..drift import pack as pm
    from ..paths import get_paths

    if bool(packs) == clear:
        raise click.UsageError("give PACKS or --clear (exactly one)")
    path = pm.set_project_packs(get_paths(), project, None if clear else list(packs))
    click.echo(f"{project}: " + ("drift.packs" if clear else ", ".join(packs)) + f" ({path})")


@anchors.command("train")
@click.option("--model", "model_name", default=None, help="Embedding model (default: the configured one).")
@click.option("--dev", "dev_file", type=click.Path(exists=True, path_type=Path), default=None,
              help="Labelled JSONL (default: the dev sets shipped in compass_hooks/drift/data/).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file (default: <data>/calibration/<model>.json, which the scorer reads first).")
@click.option("--shipped", is_flag=True,
              help="Write the plugin's tracked anchors/calibration/<model>.json instead (maintainers, after a "
                   "change to the packs or the dev sets).")
@click.option("--target-fpr", type=float, default=None, help="Out-of-fold false-alarm rate the threshold allows (default 0.02).")
@click.option("--lofo/--no-lofo", "lofo", default=None,
              help="Also score each dev file with a model trained on the others (the leave-one-file-out figures; "
                   "about 2.5x the fitting time). Default: on with --shipped, off otherwise.")
@click.option("--neighbours/--no-neighbours", default=True, show_default=True,
              help="Add the nearest-dev-item features (the scorer then keeps an index of the dev items, built once "
                   "in the background and cached in <data>/cache; about 13 MB for the shipped dev sets).")
@click.option("--json", "as_json", is_flag=True, help="Print the written calibration summary as JSON.")
def train_cmd(model_name: str | None, dev_file: Path | None, out: Path | None, shipped: bool, target_fpr: float | None,
              lofo: bool | None, neighbours: bool, as_json: bool) -> None:
    """Fit the calibrated drift model on the dev sets (reproducible: fixed folds, IRLS).

    Writes your own calibration into the data dir (the scorer prefers it to the shipped one); the plugin's
    tracked file changes only with --shipped. Uses the packs from drift.packs (not your user pack) so a
    calibration does not depend on local anchors. Progress goes to stderr.
    """
    from ..core import Core
    from ..drift import pack as pm
    from ..drift import train as tr
    from ..drift.features import AnchorIndex
    from ..embedding import get_embedder

    if out is not None and shipped:
        raise click.UsageError("give --out or --shipped, not both")
    core = Core()
    embedder = get_embedder(model_name, core.config)
    paths = core.paths
    files = [pm.resolve_pack(n, paths) for n in core.config.get("drift", "packs") if n != pm.USER_PACK]
    anchors = pm.load_anchors(files)
    dev_paths = [dev_file] if dev_file else list(tr.DEV_SETS)
    per_file = [tr.load_labelled(p) for p in dev_paths]
    items = [it for part in per_file for it in part]
    vectors = embed_with_progress(embedder, [a.text for a in anchors] + [it["text"] for it in items])
    index = AnchorIndex(anchors, vectors[: len(anchors)])
    # The leave-one-file-out figures say how the method does on text written by others (a maintainer's question,
    # asked when the shipped calibration changes); they do not change the calibration written, and cost most of the
    # fitting time, which a user calibrating their own model would wait through for nothing.
    lofo = shipped if lofo is None else lofo
    click.echo(f"fitting the calibration ({tr.FOLDS}-fold cross-validation by scenario, {tr.REPEATS} fold assignments"
               + (", then leaving out each dev file" if lofo else "") + ")...", err=True)
    model = tr.train_calibration(embedder, index, items, int(core.config.get("drift", "top_k")),
                                 target_fpr if target_fpr is not None else tr.TARGET_FPR,
                                 source=[p.name for p in dev_paths], vectors=vectors[len(anchors):],
                                 file_sizes=[len(part) for part in per_file] if lofo else None,
                                 neighbour_files=[p.name if p in tr.DEV_SETS else str(p.resolve()) for p in dev_paths]
                                 if neighbours else None)
    folder = pm.shipped_dir(paths) / "calibration" if shipped else paths.data / "calibration"
    target = out or tr.calibration_path(folder, embedder.name)
    if shipped and not os.access(folder if folder.exists() else folder.parent, os.W_OK):
        raise click.ClickException(f"{folder} is not writable (an installed plugin); leave out --shipped")
    tr.write_calibration(model, target)
    summary = {"file": str(target), "model": embedder.name, "threshold": round(model.threshold, 4),
               "embedding_languages": model.meta["embedding_languages"],
               "thresholds": {k: round(v.threshold, 4) for k, v in model.languages.items()}, **model.meta["dev"]}
    if as_json:
        echo_json(summary)
    else:
        click.echo(f"wrote {target}")
        click.echo(f"model {embedder.name}: threshold {model.threshold:.4f}; dev cross-validated AUC {summary['cv_auc']}, "
                   f"TPR {summary['cv_tpr']}, FPR {summary['cv_fpr']} (raw drift AUC {summary['raw_drift_auc']})")
        click.echo(f"embedding used for: {', '.join(summary['embedding_languages'])}")
        for lang, b in summary["cv_by_language"].items():
            thr = summary["thresholds"].get(lang, summary["threshold"])
            click.echo(f"  {lang:<4} n={b['n']:<4} AUC {b['auc']}  TPR {b['tpr']}  FPR {b['fpr']}  threshold {thr}")
        lofo = summary.get("leave_one_file_out")
        if lofo:
            click.echo(f"leave one dev file out (each file scored by a model trained on the others): AUC {lofo['auc']}, "
                       f"TPR {lofo['tpr']}, FPR {lofo['fpr']}; AUC per file {lofo['by_file']}")


@anchors.command("tune")
@click.option("--dry-run", is_flag=True, help="Compute and show the new weights without applying them.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def tune_cmd(dry_run: bool, as_json: bool) -> None:
    """Re-weight anchors from `feedback` labels; applied only if the dev-set AUC does not drop."""
    from ..core import Core
    from ..drift.changes import audit_available
    from ..drift.tune import tune

    if not dry_run:
        audit_available()  # fail before computing if changes could not be audited
    result = tune(Core(), apply=not dry_run)
    if as_json:
        echo_json(result)
        return
    click.echo(f"feedback {result['feedback']} (false positives {result['false_positives']}); "
               f"{len(result['changed'])} anchor weight(s) would change")
    click.echo(f"dev AUC {result['dev_auc_before']} -> {result['dev_auc_after']}, raw anchor drift AUC "
               f"{result['dev_raw_auc_before']} -> {result['dev_raw_auc_after']}: "
               + ("applied" if result["applied"] else result.get("reason", "not applied (dry run)")))
    for p in result["proposed_anchors"]:
        click.echo(f"proposal (from a false positive): compass-hook anchors add {json.dumps(p['text'], ensure_ascii=False)} "
                   f"--polarity positive --category ordinary_task")


def register(cli: click.Group) -> None:
    cli.add_command(anchors)
