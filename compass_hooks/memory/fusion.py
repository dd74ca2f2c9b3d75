"""How keyword and vector evidence become one ranking.

``fuse_scores``: BM25 divided by the best BM25 of this query, plus
``dense_weight`` times the cosine's z-score within the searched rows (divided
by 3, so a 3-sigma match adds ``dense_weight``). Unlike rank-only reciprocal
rank fusion (the baseline it is measured against, in compass_eval.rankings) it
keeps *how much* better the top keyword hit is, which is why it ranks the
evidence turn higher on LoCoMo (the figures, and the ``eval locomo`` command
that reproduces them: docs/memory.md, "LoCoMo retrieval").

Then small, documented adjustments:
- session prior: each memory gets ``session_weight`` x the best fused score in
  its session, so a turn in a conversation that is clearly about the query beats
  an isolated lucky word match elsewhere;
- speaker prior: ``speaker_boost`` for a memory whose text opens "Name:" when
  the query names that person (an imported chat log's speaker);
- date prior: ``date_boost`` for a memory created on the day / in the month an
  explicit date in the query names (+/- ``date_slack_days``);
- proximity prior: ``proximity_weight`` x the share of the query's adjacent
  content-word pairs the memory says with at most 3 words between them;
- kind boost: constraints, corrections and decisions (and pinned memories) get
  ``kind_boost`` (on a scale where the best keyword hit alone scores 1.0);
- recency: ``recency_boost`` x 2^(-age / half-life), so last week's memory
  edges out an equally relevant one from last year, never a far better one.

Weights were tuned on LoCoMo conversations 0-4 and checked on 5-9 (held out);
the values tried for each, and what they scored, are in docs/memory.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

BOOSTED_KINDS = frozenset({"constraint", "correction", "decision"})


@dataclass(frozen=True)
class Weights:
    dense_weight: float = 0.35
    session_weight: float = 0.2
    context_weight: float = 0.5  # FTS5 column weight of the neighbour-turn context vs 1.0 for the text
    temporal_weight: float = 0.3  # "when" questions: turns that say yesterday/last week/...
    kind_boost: float = 0.05
    recency_boost: float = 0.05
    recency_half_life_days: float = 14.0
    # A memory opening "Name:" when the query names that person (imported chat logs). Small: a question that
    # asks one speaker about what the other said must still find the other's turn.
    speaker_boost: float = 0.05
    # A query naming an explicit date ("on 7 July, 2023", "in December 2023"): memories created in that
    # day / month, widened by date_slack_days each side (time zones). The date is in the context of every
    # turn of that session, so BM25 cannot pick the session; this does, and the words pick the turn.
    date_boost: float = 0.3
    date_slack_days: float = 1.0
    # Share of the query's adjacent content-word pairs said with at most 3 words between them in the memory's
    # text (text.pair_proximity): BM25 scores the words independently, so "tart" in one turn and
    # "chocolate" in another would tie with "a chocolate tart".
    proximity_weight: float = 0.2


DEFAULT_WEIGHTS = Weights()


def fuse_scores(bm25: Mapping[int, float], dense: Mapping[int, float], dense_mean: float, dense_std: float,
                w: Weights = DEFAULT_WEIGHTS) -> dict[int, float]:
    """Max-normalised BM25 + weighted cosine z-score, over the union of candidates.

    ``bm25`` scores are positive (higher = better); ids missing from one side
    score 0 keyword / the mean cosine (z = 0) there.
    """
    top = max(bm25.values(), default=0.0)
    scale = 1.0 / top if top > 0 else 0.0
    std = dense_std if dense_std > 1e-9 else 1.0
    out: dict[int, float] = {}
    for mid in set(bm25) | set(dense):
        z = (dense[mid] - dense_mean) / std if mid in dense else 0.0
        out[mid] = bm25.get(mid, 0.0) * scale + w.dense_weight * z / 3.0
    return out


def add_session_prior(scores: dict[int, float], session_of: Mapping[int, str | None], weight: float) -> dict[int, float]:
    """Add ``weight`` x the best score of the memory's session (memories without a session: their own)."""
    if not weight:
        return scores
    best: dict[str, float] = {}
    for mid, s in scores.items():
        sess = session_of.get(mid)
        if sess:
            best[sess] = max(best.get(sess, -math.inf), s)
    return {mid: s + weight * (best[sess] if (sess := session_of.get(mid)) else s) for mid, s in scores.items()}


def boost(score: float, kind: str | None, pinned: bool, age_days: float | None, w: Weights = DEFAULT_WEIGHTS) -> float:
    if kind in BOOSTED_KINDS or pinned:
        score += w.kind_boost
    if age_days is not None and age_days >= 0 and w.recency_boost:
        score += w.recency_boost * 2.0 ** (-age_days / w.recency_half_life_days)
    return score


_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalise_text(text: str) -> str:
    """What two near-duplicate memories have in common: lower-cased words only."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def collapse_duplicates(ranked: Sequence[dict], vectors: Mapping[int, "object"] | None = None,
                        threshold: float = 0.97, limit: int | None = None) -> list[dict]:
    """Drop results whose normalised text equals, or whose vector is within ``threshold``
    cosine of, a better-ranked result (the same prompt sent twice, a re-captured turn)."""
    import numpy as np

    kept: list[dict] = []
    seen_text: set[str] = set()
    kept_vecs: list = []
    for item in ranked:
        key = normalise_text(item.get("text", ""))
        if key in seen_text:
            continue
        vec = vectors.get(item["id"]) if vectors else None
        if vec is not None and kept_vecs:
            if float(np.max(np.stack(kept_vecs) @ vec)) >= threshold:
                continue
        seen_text.add(key)
        if vec is not None:
            kept_vecs.append(vec)
        kept.append(item)
        if limit is not None and len(kept) >= limit:
            break
    return kept
