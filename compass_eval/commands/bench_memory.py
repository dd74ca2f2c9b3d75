"""``compass-hook bench recall`` and ``bench ingest``: memory latency and throughput
figures, measured in a throw-away data dir with the configured model."""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import click

if TYPE_CHECKING:  # pragma: no cover
    from compass_hooks.core import Core


@contextmanager
def _temp_core() -> Iterator[Core]:
    from compass_hooks.core import Core
    from compass_hooks.paths import get_paths

    with tempfile.TemporaryDirectory(prefix="compass-bench-") as tmp:
        t = Path(tmp)
        paths = dataclasses.replace(get_paths(), data=t, db=t / "compass.db", audit_log=t / "audit.log",
                                    logs=t / "logs", run=t / "run", socket=t / "run" / "w.sock",
                                    anchors_user=t / "anchors")
        core = Core(paths=paths)
        try:
            yield core
        finally:
            core.close()


def _phase(text: str) -> None:
    """One line on stderr as a phase of `bench recall` starts (stdout is the figures, or JSON)."""
    click.echo(f"bench recall: {text}", err=True)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s.replace("_", "").replace("k", "000")) for s in text.split(",") if s.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r}: give comma-separated sizes like 10k,100k") from None
    if not sizes or min(sizes) < 1:
        raise click.BadParameter("sizes must be positive")
    return sizes


@click.command("recall")
@click.option("--sizes", default="10k,100k", show_default=True, help="Dense-index sizes (synthetic vectors).")
@click.option("--e2e-size", type=click.IntRange(min=100), default=10_000, show_default=True,
              help="Memories in the end-to-end store (synthetic texts, random vectors, real query model).")
@click.option("--queries", type=click.IntRange(min=5), default=50, show_default=True, help="Queries per measurement.")
@click.option("--float16", is_flag=True, help="Also measure float16 storage (half the RAM).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def bench_recall(sizes: str, e2e_size: int, queries: int, float16: bool, as_json: bool) -> None:
    """Query latency of the dense index at 10k/100k memories, an end-to-end
    `recall` through store + FTS5 + model, and this process's RSS (what a worker holds)."""
    from compass_hooks.cli import echo_json

    from .. import membench as bench

    rows = _sizes(sizes)
    rss0 = bench.rss_mb()
    with _temp_core() as core:
        _phase("loading the configured model")
        dim = core.embedder.dim
        core.embedder.embed(["warm up"])
        rss_model = bench.rss_mb()
        _phase(f"dense index: {queries} queries at {', '.join(str(r) for r in rows)} rows x {dim}"
               + (", float32 and float16" if float16 else ""))
        index = bench.bench_index(rows, dim, queries)
        if float16:
            index += bench.bench_index(rows, dim, queries, dtype="float16")
        with click.progressbar(length=e2e_size, label=f"bench recall: filling a store with {e2e_size} memories",
                               file=sys.stderr) as bar:
            fill_s = bench.fill_store(core, e2e_size, progress=bar.update)
        _phase(f"end to end: {min(queries, 30)} recalls over {e2e_size} memories with {core.embedder.name}")
        e2e = bench.bench_search(core, "bench", queries=min(queries, 30))
        e2e.update({"memories": e2e_size, "fill_s": round(fill_s, 1), "model": core.embedder.name})
        rss_end = bench.rss_mb()
    report: dict[str, Any] = {"index": index, "end_to_end": e2e,
              "rss_mb": {"start": round(rss0, 1), "model_loaded": round(rss_model, 1),
                         "with_index": round(rss_end, 1)}}
    if as_json:
        echo_json(report)
        return
    click.echo("dense index (exact top-k, one project, synthetic unit vectors):")
    for r in index:
        click.echo(f"  {r['rows']:>8} x {r['dim']} {r['dtype']:7}  p50 {r['p50_ms']:7.2f} ms  p95 {r['p95_ms']:7.2f} ms"
                   f"  batched {r['batched_ms_per_query']:6.2f} ms/query  +{r['index_mb']:.0f} MB")
    click.echo(f"end to end: recall.search over {e2e_size} memories ({e2e['model']}): search p50 "
               f"{e2e['search']['p50_ms']} ms, p95 {e2e['search']['p95_ms']} ms; query embedding p50 "
               f"{e2e['embed_query']['p50_ms']} ms; index load {e2e['index_load_s']} s")
    rm = report["rss_mb"]
    click.echo(f"RSS: start {rm['start']} MB, model loaded {rm['model_loaded']} MB, with index {rm['with_index']} MB")


@click.command("ingest")
@click.option("-n", "--turns", type=click.IntRange(min=10), default=2000, show_default=True, help="Short turns to import.")
@click.option("--batch", type=click.IntRange(min=1), default=256, show_default=True, help="Turns per embedding batch and transaction.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def bench_ingest(turns: int, batch: int, as_json: bool) -> None:
    """Import throughput of short turns: batched embedding, one transaction per batch,
    contexts for windowed BM25 (target: >= 200 turns/s on 2 cores with MiniLM)."""
    from compass_hooks.cli import echo_json

    from .. import membench as bench

    with _temp_core() as core:
        core.embedder.embed(["warm up"])
        t0 = time.perf_counter()
        with click.progressbar(length=turns, label="importing", file=sys.stderr) as bar:
            report = bench.bench_ingest(core, turns, batch, progress=bar.update)
        report["wall_s"] = round(time.perf_counter() - t0, 2)
    if as_json:
        echo_json(report)
        return
    click.echo(f"ingest: {report['turns']} short turns in {report['seconds']} s = {report['turns_per_s']} turns/s "
               f"({report['model']}, {report['threads']} thread(s), batch {report['batch']}; embedding "
               f"{report['embed_s']} s, store + contexts {report['store_s']} s)")


def register(group: click.Group) -> None:
    group.add_command(bench_recall)
    group.add_command(bench_ingest)
