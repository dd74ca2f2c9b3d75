"""The recall ablations (compass_eval.rankings) through the product's extension point
(``recall.search(..., ranking=)``), on the real store with the fake embedder."""

from __future__ import annotations

import pytest

from compass_eval import rankings
from compass_hooks.core import Core
from compass_hooks.memory import recall

from recall_helpers import CHAT, add


@pytest.fixture
def core():
    c = Core()
    yield c
    c.close()


def test_every_mode_runs(core):
    add(core, CHAT)
    assert set(rankings.RANKINGS) == set(rankings.MODES) == {"hybrid", "rrf", "dense", "bm25"}
    for mode, ranking in rankings.RANKINGS.items():
        assert recall.search(core, "billing postgres", "p", k=2, ranking=ranking), mode


def test_a_side_the_ranking_does_not_use_does_not_run(core, monkeypatch):
    add(core, CHAT)
    seen = []
    probe = recall.Ranking(score=lambda e: seen.append(e) or dict(e.bm25), dense=False)
    calls = []
    embed = core.embedder.embed
    monkeypatch.setattr(core.embedder, "embed", lambda texts: calls.append(texts) or embed(texts))
    recall.search(core, "billing postgres", "p", k=2, ranking=probe)
    assert not calls and seen[0].bm25 and not seen[0].cosine  # BM25 alone embeds no query
    seen.clear()
    recall.search(core, "billing postgres", "p", k=2,
                  ranking=recall.Ranking(score=lambda e: seen.append(e) or dict(e.cosine), keyword=False))
    assert calls and seen[0].cosine and not seen[0].bm25 and seen[0].dense_std > 0


def test_the_ranking_replaces_fusion_and_priors_but_filters_still_apply(core):
    ids = add(core, CHAT)
    # A ranking that puts the memory with the lowest id first, whatever the evidence says.
    first_id = recall.Ranking(score=lambda e: {m: -float(m) for m in {**e.bm25, **e.cosine}})
    res = recall.search(core, "billing postgres", "p", k=3, ranking=first_id)
    assert [r["id"] for r in res] == sorted(r["id"] for r in res) and res[0]["score"] == -float(res[0]["id"])
    assert recall.search(core, "billing postgres", "p", k=3, ranking=first_id, kinds=["constraint"])[0]["id"] == ids[2]
    left = recall.search(core, "billing postgres", "p", k=6, ranking=first_id, exclude_ids=[ids[0]])
    assert ids[0] not in [r["id"] for r in left]


def test_bm25_and_dense_alone_score_by_their_own_evidence(core):
    add(core, CHAT)
    for r in recall.search(core, "billing postgres", "p", k=3, ranking=rankings.BM25):
        assert r["score"] == pytest.approx(r["bm25"]) and r["cosine"] is None
    for r in recall.search(core, "billing postgres", "p", k=3, ranking=rankings.DENSE):
        assert r["score"] == pytest.approx(r["cosine"]) and r["bm25"] is None


def test_rrf_is_rank_only():
    r = rankings.rrf([[1, 2], [2, 1]])
    assert r[1] == pytest.approx(r[2]) == pytest.approx(1 / 61 + 1 / 62)
    assert rankings.rrf([[3, 1]], k=0) == {3: 1.0, 1: 0.5}
