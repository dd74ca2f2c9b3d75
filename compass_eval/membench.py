"""Memory benchmarks: dense-index and end-to-end recall latency, import throughput,
resident memory. Figures only; no pass/fail here (targets are in the docs)."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from compass_hooks.memory import capture, ops, recall
from compass_hooks.memory.index import DenseIndex

if TYPE_CHECKING:  # pragma: no cover
    from compass_hooks.memory.corelike import CoreLike

_WORDS = ("cache redis postgres billing deploy script branch merge review test flaky timeout retry queue worker "
          "socket schema migration index query latency budget hook prompt session token secret config docker "
          "kubernetes cluster node build release tag version python rust typescript react api endpoint auth "
          "login user admin role permission log metric trace alert incident rollback feature flag").split()
_TEMPLATES = ("please {v} the {a} {b} before the {c}", "we decided to use {a} for the {b}",
              "never {v} the {a} without a {b}", "the {a} {b} is slow again after the {c} change",
              "can you check why {a} fails on {b}", "ok, I moved the {a} into the {b} module")
_VERBS = ("touch", "rename", "delete", "rewrite", "profile", "document", "split", "merge")


def rss_mb() -> float:
    """Resident set size of this process (Linux /proc; ru_maxrss elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def short_turns(n: int, seed: int = 0) -> list[str]:
    """Synthetic short coding-session turns (8-12 words)."""
    rng = random.Random(seed)
    return [rng.choice(_TEMPLATES).format(v=rng.choice(_VERBS), a=rng.choice(_WORDS), b=rng.choice(_WORDS),
                                          c=rng.choice(_WORDS)) + f" #{i}" for i in range(n)]


def _percentiles(times: Sequence[float]) -> dict[str, float]:
    a = np.asarray(times) * 1000.0
    return {"p50_ms": round(float(np.median(a)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
            "mean_ms": round(float(a.mean()), 2)}


def bench_index(sizes: Sequence[int], dim: int, queries: int = 50, k: int = recall.CANDIDATES,
                dtype: str = "float32") -> list[dict[str, Any]]:
    """Exact top-k latency of the dense index on random unit vectors (one project)."""
    rng = np.random.default_rng(0)
    out = []
    for n in sizes:
        vecs = rng.standard_normal((n, dim), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        before = rss_mb()
        idx = DenseIndex(dim, dtype)
        t0 = time.perf_counter()
        for start in range(0, n, 10_000):  # appended in batches, as the worker does
            idx.add(np.arange(start, min(n, start + 10_000)), ["p"] * (min(n, start + 10_000) - start),
                    vecs[start : start + 10_000])
        load_s = time.perf_counter() - t0
        del vecs
        qs = rng.standard_normal((queries, dim), dtype=np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        idx.search(qs[0], k, "p")  # warm
        times = []
        for q in qs:
            t0 = time.perf_counter()
            idx.search(q, k, "p")
            times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        idx.search_many(qs, k, "p")
        batch_ms = 1000.0 * (time.perf_counter() - t0) / len(qs)
        out.append({"rows": n, "dim": dim, "dtype": dtype, "k": k, "load_s": round(load_s, 3),
                    **_percentiles(times), "batched_ms_per_query": round(batch_ms, 2),
                    "index_mb": round(idx.nbytes() / 2**20, 1), "rss_delta_mb": round(rss_mb() - before, 1)})
        del idx
    return out


def corpus_texts(path: str | Path) -> list[str]:
    """Store texts for a realistic benchmark: a LoCoMo ``.json`` ("Speaker: text" per turn) or a JSONL of
    ``{"text": ...}`` lines (what ``compass-hook export`` prints)."""
    import json

    from compass_hooks.errors import InvalidInput

    path = Path(path)
    try:
        if path.suffix == ".json":
            from . import locomo

            out = [t.text for c in locomo.load(path) for t in c.turns]  # already "Speaker: text"
        else:
            out = []
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    obj = json.loads(line)
                    if isinstance(obj, dict) and isinstance(obj.get("text"), str) and obj["text"].strip():
                        out.append(obj["text"])
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read benchmark texts from {path}: {exc}") from None
    if not out:
        raise InvalidInput(f"{path}: no texts found", 'give a LoCoMo .json or JSONL lines {"text": ...}')
    return out


def fill_store(core: CoreLike, n: int, project: str = "bench", batch: int = 5000,
               corpus: Sequence[str] | None = None, progress: Callable[[int], None] | None = None) -> float:
    """Write ``n`` memories with random unit vectors straight into the store (bypassing the model, which
    is not what is measured here): synthetic short turns from a 60-word vocabulary (a worst case for
    FTS5: nearly every row matches every query word), or ``corpus`` texts cycled. ``progress`` is called with
    the number of memories each batch wrote (a progress bar's ``update``). Returns seconds."""
    rng = np.random.default_rng(1)
    texts = short_turns(n, seed=1) if not corpus else [f"{corpus[i % len(corpus)]} #{i}" for i in range(n)]
    dim = core.embedder.dim
    t0 = time.perf_counter()
    for start in range(0, n, batch):
        vecs = rng.standard_normal((min(batch, n - start), dim), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        items = [{"text": t, "project": project, "session": f"s{(start + i) // 50}", "role": "user", "kind": "prompt",
                  "source": "import", "embedding": v, "model": core.embedder.name}
                 for i, (t, v) in enumerate(zip(texts[start : start + batch], vecs))]
        capture.store_items(core, items)
        if progress is not None:
            progress(len(items))
    return time.perf_counter() - t0


def bench_search(core: CoreLike, project: str, queries: int = 30) -> dict[str, Any]:
    """End-to-end ``recall.search`` latency (query embedding + FTS5 + dense + fusion)."""
    qs = [q.rsplit(" #", 1)[0] for q in short_turns(queries, seed=7)]
    t0 = time.perf_counter()
    recall.search(core, qs[0], project, k=5)  # first call loads the index
    first_s = time.perf_counter() - t0
    total, embed = [], []
    for q in qs:
        t0 = time.perf_counter()
        core.embedder.embed([q])
        t1 = time.perf_counter()
        recall.search(core, q, project, k=5)
        t2 = time.perf_counter()
        embed.append(t1 - t0)
        total.append(t2 - t1)
    return {"index_load_s": round(first_s, 2), "search": _percentiles(total), "embed_query": _percentiles(embed)}


def bench_ingest(core: CoreLike, n: int, batch: int = 256, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Import ``n`` short turns through the ``import_batch`` op in ``batch``-sized calls,
    as ``compass-hook import`` does (privacy, batched embedding, one transaction, contexts)."""
    texts = short_turns(n, seed=3)
    items = [{"text": t, "project": "ingest", "session": f"s{i // 40}", "role": "user" if i % 2 == 0 else "assistant",
              "kind": "prompt"} for i, t in enumerate(texts)]
    t_embed = 0.0
    emb = core.embedder
    orig = emb.embed

    def timed(texts_: Sequence[str]):
        nonlocal t_embed
        t0 = time.perf_counter()
        try:
            return orig(texts_)
        finally:
            t_embed += time.perf_counter() - t0

    # Measure the model's share without changing the path: an instance attribute over the method, deleted after.
    setattr(emb, "embed", timed)
    try:
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            res = ops.import_batch(core, items[start : start + batch])
            if res["errors"]:
                raise RuntimeError(f"bench import rejected lines: {res['errors'][:3]}")
            if progress is not None:
                progress(len(items[start : start + batch]))
        wall = time.perf_counter() - t0
    finally:
        del emb.embed
    return {"turns": n, "batch": batch, "model": emb.name, "threads": core.config.get("model", "threads"),
            "seconds": round(wall, 2), "turns_per_s": round(n / wall, 1),
            "embed_s": round(t_embed, 2), "store_s": round(wall - t_embed, 2), "cpus": os.cpu_count()}
