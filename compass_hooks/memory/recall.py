"""Hybrid recall: FTS5 BM25 over each memory's text and its neighbours' context,
plus exact dense cosine from the worker's in-memory index, fused by score
(:mod:`.fusion`), adjusted by session, kind and recency, de-duplicated.

``search(core, query, project, ...)`` is the one entry point the CLI, the MCP
server and the hook injection use; ``search_many`` batches the embedding and the
dense search for many queries (``recall --jsonl``, the LoCoMo eval).

There is one ranking, the hybrid below. ``ranking=`` (a :class:`Ranking`) is the
extension point for measuring others on the same candidates: it gets each query's
raw keyword and dense evidence (:class:`Evidence`) and orders it instead of the
fusion and the priors. compass_eval's dense-only, BM25-only and plain-RRF
ablations are built on it; the product never passes one.

Why the pieces (measured on LoCoMo, docs/memory.md):
- keyword search over the memory *plus its +/-2 neighbouring turns* (FTS5 column
  ``context``, weight 0.5 vs 1.0) finds the turn whose neighbours carry the
  words of the question: a reply ("yes, yesterday!") is found by its question;
- stop and question words are stripped before the FTS5 query (they only add
  noise to BM25); "when ..." queries add temporal cue words with a small weight;
- the dense side is MiniLM cosine, used as a z-score so it can nudge but not
  swamp a strong keyword match;
- a query naming an explicit date ("on 7 July, 2023", "in December 2023") gives
  memories written that day / month (+/- a day) a date prior: the date is in every
  context of that session, so BM25 alone cannot tell which session it means;
- a memory whose text has the query's adjacent word pairs near each other
  ("chocolate tart", "pottery class") gets a small proximity prior: BM25 scores
  the words independently, so a turn saying "tart" and another saying "chocolate"
  tie with the one that says both together;
- a memory whose text opens with a name the query uses ("Melanie: ..." for
  "What has Melanie painted?") gets a small speaker prior: in an imported chat
  log the name heads half the turns, so BM25 gives it ~0 weight (IDF of a word
  in half the rows) although the question is about what that person said.

The dense index catches up with the store on every search (rows whose id is
greater than the last one it saw), so memories written by any process appear
without a reload; ids forgotten elsewhere are dropped when their rows are not
found, and :func:`invalidate` removes them eagerly when the forget runs here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence


from ..errors import InvalidInput
from . import fusion, text as tx
from .index import DenseIndex

if TYPE_CHECKING:  # pragma: no cover
    from .corelike import CoreLike

CANDIDATES = 100  # per side (keyword, dense) before fusion
_FEATURE = "memory.recall"


# --------------------------------------------------------------------------- index state


@dataclass
class _IndexState:
    index: DenseIndex
    model: str
    last_id: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _state(core: CoreLike) -> _IndexState:
    emb = core.embedder
    st: _IndexState = core.feature(_FEATURE, lambda c: _IndexState(DenseIndex(emb.dim), emb.name))
    _catch_up(core, st)
    return st


def _state_index(core: CoreLike) -> DenseIndex:
    return core.state[_FEATURE].index


def _catch_up(core: CoreLike, st: _IndexState) -> None:
    """Append vectors the store has and the index lacks (id > last seen)."""
    with st.lock:
        ids, projects, vecs = core.store.vectors_since(st.model, st.last_id)
        if len(ids):
            st.index.add(ids, projects, vecs)
            st.last_id = max(st.last_id, int(max(ids)))


def invalidate(core: CoreLike, ids: Iterable[int] | None = None) -> None:
    """Drop forgotten memories from the dense index (``None``: rebuild on next search)."""
    st = core.state.get(_FEATURE)
    if st is None:
        return
    if ids is None:
        with st.lock:
            st.index.clear()
            st.last_id = 0
    else:
        st.index.remove(ids)


def replace_vector(core: Any, memory_id: int, project: str, vector: Any = None) -> None:
    """An edited memory's new vector (None: it has none now). The index catches up by id only, so an id it
    already holds must be swapped here."""
    st = core.state.get(_FEATURE)
    if st is None:
        return
    with st.lock:
        st.index.remove([int(memory_id)])
        if vector is not None and st.model == core.embedder.name:
            import numpy as np

            st.index.add([int(memory_id)], [project], np.asarray(vector, dtype=np.float32).reshape(1, -1))


# --------------------------------------------------------------------------- context column

CONTEXT_WINDOW = 2  # neighbouring memories on each side of the same session
CONTEXT_CHARS = 300  # per neighbour: enough for the words that matter, bounded for long replies


def date_words(created: float | None) -> str:
    """The memory's date as words FTS5 can match ("8 May 2023"), UTC."""
    if created is None:
        return ""
    t = time.gmtime(float(created))
    return f"{t.tm_mday} {time.strftime('%B', t)} {t.tm_year}"


def build_contexts(rows: Sequence[dict], window: int = CONTEXT_WINDOW) -> dict[int, str]:
    """``context`` for each row of one session (rows in turn order): the text of up to
    ``window`` neighbours on each side plus the date. This is what lets BM25 find a
    short reply ("yes, we did it yesterday!") by the words of the turn it answers."""
    out = {}
    for i, r in enumerate(rows):
        parts = [rows[j]["text"][:CONTEXT_CHARS] for j in range(max(0, i - window), min(len(rows), i + window + 1)) if j != i]
        parts.append(date_words(r.get("created")))
        out[int(r["id"])] = " ".join(p for p in parts if p)
    return out


def update_contexts(store: Any, ids: Iterable[int]) -> int:
    """Fill the FTS ``context`` column for newly added memories and refresh their
    neighbours' (a new turn becomes the "next" neighbour of the previous ones).
    Call it after ``store.add_many`` with the new ids. Returns rows updated."""
    new = store.get_many(sorted({int(i) for i in ids if i is not None}))
    by_session: dict[tuple[str, str | None], list[dict]] = {}
    for r in new:
        by_session.setdefault((r["project"], r["session"]), []).append(r)
    pairs: list[tuple[int, str]] = []
    for (project, session), mine in by_session.items():
        if session is None:  # no conversation around it: the date only
            ctx = {int(r["id"]): date_words(r["created"]) for r in mine}
            pairs.extend((m, c) for m, c in ctx.items())
            continue
        mine_ids = {int(r["id"]) for r in mine}
        # Usually the new rows are the newest of their session: read only the tail.
        limit = len(mine) + 2 * CONTEXT_WINDOW
        tail = store.list(project=project, session=session, limit=limit, newest_first=True)
        tail = sorted(tail, key=lambda r: (r["created"], r["id"]))
        # A refreshed neighbour needs its own neighbours too: the new rows must sit past
        # the first 2 x window of the tail, unless the tail is the whole session.
        if len(tail) == limit and not mine_ids <= {int(r["id"]) for r in tail[2 * CONTEXT_WINDOW:]}:
            tail = sorted(store.list(project=project, session=session, newest_first=False),
                          key=lambda r: (r["created"], r["id"]))
        pos = {int(r["id"]): i for i, r in enumerate(tail)}
        touched: set[int] = set()
        for m in mine_ids:
            i = pos[m]
            touched.update(range(max(0, i - CONTEXT_WINDOW), min(len(tail), i + CONTEXT_WINDOW + 1)))
        ctx = build_contexts(tail)
        for i in sorted(touched):
            r = tail[i]
            if ctx[int(r["id"])] != r.get("context"):
                pairs.append((int(r["id"]), ctx[int(r["id"])]))
    if pairs:
        store.set_contexts(pairs)
    return len(pairs)


# --------------------------------------------------------------------------- query side


@dataclass(frozen=True)
class _Query:
    text: str
    terms: list[str]
    fts: str
    temporal: bool
    names: frozenset = frozenset()  # capitalised query words: a memory whose text opens "Name:" is by them
    span: tuple | None = None  # [start, end) epoch seconds of an explicit date the query names


def _prepare(query: str) -> _Query:
    terms = tx.content_terms(query)
    if not terms:  # "what did I say?": fall back to every word rather than nothing
        terms = [t for t in tx.tokens(query) if len(t) > 1]
    return _Query(query, terms, tx.fts_or_query(terms), tx.is_temporal(query), tx.names(query), tx.date_range(query))


def _check(query: str, k: int, scope: str) -> None:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("empty query", "give some words to search for")
    if k < 1:
        raise InvalidInput(f"k must be >= 1, got {k}")
    if scope not in ("project", "global"):
        raise InvalidInput(f"unknown scope {scope!r}", "use 'project' or 'global'")


# --------------------------------------------------------------------------- search


@dataclass(frozen=True)
class Evidence:
    """One query's candidates before any fusion, as a :class:`Ranking` sees them (read-only).

    ``bm25``: id -> BM25 score (positive, higher is better) of the keyword side's top ``CANDIDATES`` over text
    and context (empty when the ranking has ``keyword=False`` or the query has no searchable word);
    ``cosine``: id -> cosine of the dense side's top ``CANDIDATES`` (empty when ``dense=False``);
    ``dense_mean`` / ``dense_std``: the cosine's mean and standard deviation over the searched rows (0 / 1
    without a dense side). Excluded memories are already left out of both."""
    bm25: Mapping[int, float]
    cosine: Mapping[int, float]
    dense_mean: float
    dense_std: float


@dataclass(frozen=True)
class Ranking:
    """A ranking to measure against the product's hybrid on the same candidates (``search(..., ranking=)``).

    ``score(evidence)`` returns {id: score} for the candidates it ranks, higher first. It replaces the hybrid's
    fusion, "when" cues and priors (session, speaker, date, proximity, kind, recency); the kind filter, the
    near-duplicate collapse and ``k`` still apply, and each result's ``score`` is the ranking's. ``keyword`` /
    ``dense`` say whether that side runs at all: a ranking without the dense side embeds no query."""
    score: Callable[[Evidence], Mapping[int, float]]
    keyword: bool = True
    dense: bool = True


def search(core: CoreLike, query: str, project: str | None, k: int = 5, kinds: Sequence[str] | None = None,
           exclude_ids: Iterable[int] | None = None, exclude_session: str | None = None, exclude_recent: int = 0,
           scope: str = "project", weights: fusion.Weights | None = None,
           query_vector: Any = None, ranking: Ranking | None = None,
           only: Callable[[Iterable[int]], set[int]] | None = None) -> list[dict]:
    """The ``k`` most relevant memories for ``query``.

    ``scope="project"`` searches ``project`` only; ``"global"`` searches every project.
    ``exclude_session`` + ``exclude_recent=N`` leave out the last N memories of that
    session (the turns the model still has in its context). ``ranking``: another
    ordering to evaluate (:class:`Ranking`); None, the product's hybrid.
    ``query_vector``: the query's embedding by ``core.embedder`` when the caller has it already (the hook's
    prompt, embedded once for drift, recall and capture). ``only``: keeps the candidate ids it returns (a time
    window or tags: :func:`candidate_filter`), before the ranking picks the top ``k``.
    Result dicts: id, ref, text, score, kind, session, created, role, project,
    plus ``cosine`` and ``bm25`` (raw evidence, for relevance floors).
    """
    vectors = None if query_vector is None else query_vector.reshape(1, -1)
    return search_many(core, [{"query": query, "project": project, "k": k}], kinds=kinds, exclude_ids=exclude_ids,
                       exclude_session=exclude_session, exclude_recent=exclude_recent, scope=scope,
                       weights=weights, vectors=vectors, ranking=ranking, only=only)[0]


def candidate_filter(store: Any, since: float | None = None, until: float | None = None,
                     tags: Sequence[str] = ()) -> Callable[[Iterable[int]], set[int]] | None:
    """``only=`` for :func:`search`: candidates created in [since, until) carrying every tag (None: no bounds)."""
    if since is None and until is None and not tags:
        return None

    def keep(ids: Iterable[int]) -> set[int]:
        ids = list(ids)
        if since is not None or until is not None:
            created = store.created_of(ids)
            ids = [m for m, c in created.items() if (since is None or c >= since) and (until is None or c < until)]
        return store.tagged(ids, tags) if tags else set(ids)

    return keep


def search_many(core: CoreLike, queries: Sequence[dict | str], kinds: Sequence[str] | None = None,
                exclude_ids: Iterable[int] | None = None, exclude_session: str | None = None,
                exclude_recent: int = 0, scope: str = "project", weights: fusion.Weights | None = None,
                project: str | None = None, k: int = 5, vectors: Any = None,
                ranking: Ranking | None = None, only: Callable[[Iterable[int]], set[int]] | None = None,
                ) -> list[list[dict]]:
    """Batch search. Each query is a string or ``{"query", "project"?, "k"?}``
    (missing fields take the ``project`` / ``k`` arguments). Results in input order.
    ``vectors``: the queries' embeddings, one row per query, when the caller has them."""
    w = weights or fusion.DEFAULT_WEIGHTS
    items = [q if isinstance(q, dict) else {"query": q} for q in queries]
    for it in items:
        _check(it.get("query", ""), int(it.get("k", k)), scope)
    if not items:
        return []
    store = core.store
    excluded: set[int] = {int(i) for i in exclude_ids or ()}
    if exclude_session and exclude_recent > 0:
        excluded.update(store.recent_ids(exclude_session, exclude_recent))
    kind_set = set(kinds) if kinds else None

    dense_hits: list[Any] = [None] * len(items)
    qvecs = None
    if ranking is None or ranking.dense:
        st = _state(core)
        qvecs = vectors if vectors is not None else core.embedder.embed([it["query"] for it in items])
        # Group by project so each block does one matrix product for all its queries.
        groups: dict[str | None, list[int]] = {}
        for i, it in enumerate(items):
            groups.setdefault(None if scope == "global" else it.get("project", project) or "", []).append(i)
        for proj, rows in groups.items():
            hits = st.index.search_many(qvecs[rows], CANDIDATES + len(excluded), proj, excluded or None)
            for r, h in zip(rows, hits):
                dense_hits[r] = h

    out = []
    for i, it in enumerate(items):
        proj = None if scope == "global" else (it.get("project", project) or "")
        out.append(_rank_one(core, _prepare(it["query"]), proj, int(it.get("k", k)), dense_hits[i], excluded,
                             kind_set, w, None if qvecs is None else qvecs[i], ranking, only))
    return out


def _rank_one(core: CoreLike, q: _Query, project: str | None, k: int, dense: Any, excluded: set[int],
              kinds: set[str] | None, w: fusion.Weights, qvec: Any = None, ranking: Ranking | None = None,
              only: Callable[[Iterable[int]], set[int]] | None = None) -> list[dict]:
    store = core.store
    bm25: dict[int, float] = {}
    if (ranking is None or ranking.keyword) and q.fts:
        common = store.common_terms(q.terms)
        match = tx.fts_or_query(t for t in q.terms if t not in common) if common else q.fts
        bm25 = {mid: s for mid, s in store.fts_search(match, project, CANDIDATES + len(excluded),
                                                      weights=(1.0, w.context_weight)) if mid not in excluded}
    cos: dict[int, float] = {}
    if dense is not None:
        cos = {int(m): float(s) for m, s in zip(dense.ids, dense.scores) if int(m) not in excluded}

    if ranking is not None:
        scores = dict(ranking.score(Evidence(bm25, cos, dense.mean if dense else 0.0, dense.std if dense else 1.0)))
    else:
        if qvec is not None:  # exact cosine for keyword hits outside the dense top k
            cos.update(_state_index(core).score_ids(qvec, [m for m in bm25 if m not in cos]))
        scores = fusion.fuse_scores(bm25, cos, dense.mean if dense else 0.0, dense.std if dense else 1.0, w)
        if q.temporal and w.temporal_weight:
            cues = dict(store.fts_search(tx.fts_or_query(tx.TEMPORAL_CUES), project, 4 * CANDIDATES, weights=(1.0, 0.0)))
            top = max(cues.values(), default=0.0)
            for mid in scores:
                if mid in cues and top > 0:
                    scores[mid] += w.temporal_weight * cues[mid] / top
    if only is not None and scores:
        kept = only(scores)
        scores = {m: v for m, v in scores.items() if m in kept}
    if not scores:
        return []

    # Fetch only what can still make the top k after the adjustments (they are small).
    pool = sorted(scores, key=scores.__getitem__, reverse=True)[: max(4 * k, 40)]
    rows = {r["id"]: r for r in store.get_many(pool)}
    missing = [m for m in pool if m not in rows]
    if missing:  # forgotten by another process: drop from the dense index too
        invalidate(core, missing)
    rows = {m: r for m, r in rows.items() if not kinds or r.get("kind") in kinds}
    if ranking is None:
        session_of = {m: r.get("session") for m, r in rows.items()}
        adj = fusion.add_session_prior({m: scores[m] for m in rows}, session_of, w.session_weight)
        now = time.time()
        for m, r in rows.items():
            age = (now - r["created"]) / 86400.0 if r.get("created") is not None else None
            adj[m] = fusion.boost(adj[m], r.get("kind"), bool(r.get("pinned")), age, w)
        if w.speaker_boost and q.names:
            for m, r in rows.items():
                if tx.speaker(r.get("text") or "") in q.names:
                    adj[m] += w.speaker_boost
        if w.date_boost and q.span:
            lo, hi = q.span[0] - w.date_slack_days * 86400, q.span[1] + w.date_slack_days * 86400
            for m, r in rows.items():
                if r.get("created") is not None and lo <= r["created"] < hi:
                    adj[m] += w.date_boost
        if w.proximity_weight and len(set(q.terms)) > 1:
            for m, r in rows.items():
                adj[m] += w.proximity_weight * tx.pair_proximity(q.terms, r.get("text") or "")
    else:
        adj = {m: scores[m] for m in rows}
    ranked = []
    for m in sorted(adj, key=adj.__getitem__, reverse=True):
        r = rows[m]
        ranked.append({
            "id": m, "ref": r.get("ref"), "text": r.get("text", ""), "score": round(float(adj[m]), 6),
            "kind": r.get("kind"), "session": r.get("session"), "created": r.get("created"),
            "role": r.get("role"), "project": r.get("project"), "tags": r.get("tags") or [],
            "cosine": round(cos[m], 6) if m in cos else None, "bm25": round(bm25[m], 6) if m in bm25 else None,
        })
    return fusion.collapse_duplicates(ranked, limit=k)
