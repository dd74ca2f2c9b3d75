"""`bench recall` / `bench ingest` through CliRunner (fake model, small sizes), and
the ingest path's rows landing in the store with their contexts."""

from __future__ import annotations

import json

from compass_eval import membench as bench
from compass_hooks.cli import cli
from compass_hooks.core import Core


def _json(output: str) -> dict:
    return json.loads(output[output.index("{"):])


def test_bench_recall_cli_reports_each_size_and_end_to_end(cli_runner):
    res = cli_runner.invoke(cli, ["bench", "recall", "--sizes", "500,2k", "--e2e-size", "300", "--queries", "5",
                                  "--float16", "--json"])
    assert res.exit_code == 0, res.output
    rep = _json(res.output)
    assert [(r["rows"], r["dtype"]) for r in rep["index"]] == [(500, "float32"), (2000, "float32"),
                                                                (500, "float16"), (2000, "float16")]
    assert all(r["p50_ms"] > 0 and r["k"] == 100 for r in rep["index"])
    e2e = rep["end_to_end"]
    assert e2e["memories"] == 300 and e2e["search"]["p50_ms"] > 0 and e2e["model"].startswith("fake")
    assert rep["rss_mb"]["with_index"] > 0
    text = cli_runner.invoke(cli, ["bench", "recall", "--sizes", "300", "--e2e-size", "100", "--queries", "5"])
    assert text.exit_code == 0 and "end to end" in text.output and "p95" in text.output


def test_bench_recall_rejects_bad_sizes(cli_runner):
    res = cli_runner.invoke(cli, ["bench", "recall", "--sizes", "ten"])
    assert res.exit_code != 0 and "comma-separated" in res.output


def test_bench_ingest_cli(cli_runner):
    res = cli_runner.invoke(cli, ["bench", "ingest", "-n", "60", "--batch", "16", "--json"])
    assert res.exit_code == 0, res.output
    rep = _json(res.output)
    assert rep["turns"] == 60 and rep["batch"] == 16 and rep["turns_per_s"] > 0
    assert abs(rep["embed_s"] + rep["store_s"] - rep["seconds"]) < 0.05
    text = cli_runner.invoke(cli, ["bench", "ingest", "-n", "20"])
    assert text.exit_code == 0 and "turns/s" in text.output


def test_bench_ingest_writes_every_turn_with_vectors_and_contexts():
    core = Core()
    try:
        rep = bench.bench_ingest(core, 90, batch=32)
        rows = core.store.list(project="ingest", limit=1000)
        assert rep["turns"] == 90 and len(rows) == 90
        ids, _, vecs = core.store.vectors_since(core.embedder.name, 0)
        assert len(ids) == 90 and vecs.shape == (90, core.embedder.dim)
        # Turns in one session see their neighbours' words in the FTS context column.
        assert all(r["context"] for r in rows)
        assert "embed" not in vars(core.embedder)  # the timing wrapper is gone afterwards
    finally:
        core.close()
