"""``compass-hook eval instructions``: the standing-instruction detector on a labelled file (its shipped or
retrained weights for the model, the product's own detection code)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("instructions")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--model", default=None, help="Embedding model (default: the configured one).")
@click.option("--errors", is_flag=True, help="Also list the false positives and the missed rules.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def eval_instructions(file: Path, model: str | None, errors: bool, as_json: bool) -> None:
    """Precision and recall of "this prompt sets or lifts a standing instruction" on FILE (detect_*.jsonl: text,
    label, rule, action, scope), per language, and on the prompts found: whether the rule text is the labelled
    one exactly, whether it covers it whole, the action (set / revoke), and the scope where the file labels one.
    Progress goes to stderr."""
    from compass_hooks.cli import echo_json, embed_with_progress
    from compass_hooks.config import load_config
    from compass_hooks.core import Core
    from compass_hooks.memory.standing import detect, train

    config = load_config()
    if model:
        config.data["model"]["name"] = model
    core = Core(config=config)
    try:
        weights = detect.weights_for(core)
        embedder = core.embedder
        report = train.evaluate(weights, train.load(file), lambda texts: embed_with_progress(embedder, texts))
    finally:
        core.close()
    report.update({"file": str(file), "model": weights.model, "threshold": weights.threshold})
    if not errors:
        report.pop("false_positives", None)
        report.pop("missed", None)
    if as_json:
        echo_json(report)
        return
    click.echo(f"{file} (model {weights.model}, threshold {weights.threshold:.4f}): {report['items']} prompts, "
               f"{report['positives']} set or lift a rule")
    click.echo(f"  precision {report['precision']:.3f}  recall {report['recall']:.3f}  "
               f"(tp {report['tp']}, fp {report['fp']}, fn {report['fn']})")
    for lang, f in report["by_lang"].items():
        click.echo(f"  {lang}: precision {f['precision']:.3f}  recall {f['recall']:.3f}  (fp {f['fp']}, fn {f['fn']})")
    if report.get("true_positives"):
        scope = (f"scope {report['scope_accuracy']:.3f} (on the {report['scope_labelled']} with a labelled scope)"
                 if report["scope_accuracy"] is not None else "no scope labelled")
        click.echo(f"  on the {report['true_positives']} found: rule text exact {report['rule_exact']:.3f}, covers the "
                   f"labelled rule whole {report['rule_whole']:.3f}, action {report['action_accuracy']:.3f}, {scope}")
    for key, title in (("false_positives", "false positives"), ("missed", "missed")):
        for text in report.get(key, []):
            click.echo(f"  {title}: {' '.join(text.split())[:160]}")


def register(group: click.Group) -> None:
    group.add_command(eval_instructions)
