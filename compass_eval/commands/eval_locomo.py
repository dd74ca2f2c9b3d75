"""``compass-hook eval locomo``: turn- and session-level recall on LoCoMo, through
the product's store and search (a throw-away data dir, the configured model)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import click


@click.command("locomo")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N conversations.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["dense", "bm25", "rrf", "hybrid"]),
              help="Fusion mode(s) to evaluate (default: all four).")
@click.option("--conversations", "select", default=None, metavar="SPEC",
              help="Only the conversations at these positions in FILE, e.g. 0-4 (the tuning half), 5-9 (held "
                   "out) or 0,3,7. The tune / held-out split keeps their positions.")
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Eval-only: import into this dir and keep it; the next run reuses the conversations already "
                   "there (no re-embedding; their FTS contexts are rebuilt with the current code).")
@click.option("--vector-cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Eval-only: keep turn vectors in this dir and reuse them on the next run.")
def eval_locomo(file: Path, as_json: bool, limit: int | None, modes: tuple[str, ...], select: str | None,
                store_dir: Path | None, vector_cache: Path | None) -> None:
    """Recall@1/5/10 on LoCoMo FILE (locomo10.json) for dense, BM25, RRF and hybrid search.

    Imports every turn into a temporary store (one project per conversation,
    ref = dia_id), asks every question that has evidence, and reports turn-level
    recall (an evidence turn in the top k) and session-level recall (an evidence
    session among the first k sessions), overall, per category and for the
    tuning (conversations 0-4) / held-out (5-9) split.
    """
    from compass_hooks.cli import echo_json
    from compass_hooks.core import Core
    from compass_hooks.paths import get_paths

    from .. import locomo

    convs = locomo.load(file, limit, None if select is None else locomo.parse_selection(select))
    with contextlib.ExitStack() as stack:
        if store_dir is None:
            t = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="compass-locomo-")))
        else:
            t = store_dir.resolve()
            t.mkdir(parents=True, exist_ok=True)
        base = get_paths()
        paths = dataclasses.replace(base, data=t, db=t / "compass.db", audit_log=t / "audit.log", logs=t / "logs",
                                    run=t / "run", socket=t / "run" / "w.sock", anchors_user=t / "anchors")
        core = Core(paths=paths)
        try:
            total = sum(len(c.turns) for c in convs)
            t0 = time.perf_counter()
            with click.progressbar(length=total, label="importing turns", file=sys.stderr,
                                   show_pos=True) as bar:
                imported = locomo.ingest_all(core, convs, locomo.file_digest(file), cache=vector_cache,
                                             progress=bar.update, reuse=store_dir is not None)
            ingest_s = time.perf_counter() - t0
            report = locomo.evaluate(core, convs, modes or ("dense", "bm25", "rrf", "hybrid"))
        finally:
            core.close()
    report["model"] = core.embedder.name
    report["file"] = str(file)
    report["ingest_s"] = round(ingest_s, 1)
    report["imported_turns"] = imported
    if as_json:
        echo_json(report)
    else:
        click.echo(f"{file} (model {report['model']}, import {report['ingest_s']} s, "
                   f"{imported} turns imported, {report['turns'] - imported} reused)")
        click.echo(locomo.format_table(report))


def register(group: click.Group) -> None:
    group.add_command(eval_locomo)
