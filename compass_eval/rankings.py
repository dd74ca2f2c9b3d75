"""Recall ablations: what the product's hybrid ranking is measured against on LoCoMo.

Each is a :class:`compass_hooks.memory.recall.Ranking` over the same candidates the product
searches (FTS5 BM25 over text and neighbour context, exact dense cosine), so the figures
differ only by how the candidates are ordered:

- ``dense``: the dense side alone (cosine); no keyword search;
- ``bm25``: the keyword side alone (already windowed and stemmed); no query embedding;
- ``rrf``: plain reciprocal rank fusion of the two (Cormack et al., k=60), rank-only and
  parameter-free, the documented baseline;
- ``hybrid``: ``None``, i.e. the product's own ranking (score fusion, "when" cues, priors).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from compass_hooks.memory.recall import Evidence, Ranking

RRF_K = 60
MODES = ("hybrid", "rrf", "dense", "bm25")


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion of id lists (best first)."""
    out: dict[int, float] = {}
    for ranking in rankings:
        for rank, mid in enumerate(ranking):
            out[mid] = out.get(mid, 0.0) + 1.0 / (k + rank + 1)
    return out


def _best_first(scores: Mapping[int, float]) -> list[int]:
    return sorted(scores, key=lambda m: scores[m], reverse=True)


def _rrf_of_both(e: Evidence) -> dict[int, float]:
    return rrf([_best_first(e.bm25), _best_first(e.cosine)])


DENSE = Ranking(score=lambda e: dict(e.cosine), keyword=False)
BM25 = Ranking(score=lambda e: dict(e.bm25), dense=False)
RRF = Ranking(score=_rrf_of_both)
RANKINGS: dict[str, Ranking | None] = {"hybrid": None, "rrf": RRF, "dense": DENSE, "bm25": BM25}
