"""Hybrid recall through the real store (SQLite + FTS5) with the fake embedder."""

from __future__ import annotations

import time

import pytest

from compass_eval.rankings import BM25
from compass_hooks.core import Core
from compass_hooks.errors import InvalidInput
from compass_hooks.memory import fusion, recall
from recall_helpers import CHAT, add


@pytest.fixture
def core():
    c = Core()
    yield c
    c.close()


def test_hybrid_returns_contract_fields_and_ranks_the_keyword_match_first(core):
    ids = add(core, CHAT)
    res = recall.search(core, "which database does billing use?", "p", k=3)
    assert res[0]["id"] in ids[:2]
    assert set(res[0]) >= {"id", "ref", "text", "score", "kind", "session", "created", "role", "project"}
    assert res[0]["project"] == "p" and res[0]["ref"] in ("r0", "r1")
    assert [r["score"] for r in res] == sorted((r["score"] for r in res), reverse=True)


def test_windowed_context_finds_a_reply_by_the_words_of_its_question(core):
    ids = add(core, CHAT)
    # "hiking"/"mountains" appear only in the question turn; the reply carries them in its context.
    res = recall.search(core, "hiking mountains", "p", k=3, ranking=BM25)
    assert {ids[3], ids[4]} <= {r["id"] for r in res}
    ctx = core.store.get(ids[4])["context"]
    assert "hiking" in ctx and "TypeScript" in ctx and "Yes, we did" not in ctx


def test_contexts_of_earlier_turns_are_refreshed_when_a_turn_is_appended(core):
    ids = add(core, CHAT[:2])
    assert "force-push" not in core.store.get(ids[0])["context"]
    add(core, [CHAT[2]])
    assert "force-push" in core.store.get(ids[0])["context"]
    assert "force-push" in core.store.get(ids[1])["context"]


def test_project_scope_and_global_scope(core):
    add(core, CHAT, project="p")
    other = add(core, [("s9", "user", "PostgreSQL replication lag on the billing replica")], project="q")
    assert other[0] not in {r["id"] for r in recall.search(core, "postgresql billing", "p", k=10)}
    assert other[0] in {r["id"] for r in recall.search(core, "postgresql billing", "p", k=10, scope="global")}


def test_kinds_filter_and_exclusions(core):
    ids = add(core, CHAT)
    res = recall.search(core, "push branch billing", "p", k=5, kinds=["constraint"])
    assert [r["id"] for r in res] == [ids[2]]
    res = recall.search(core, "billing postgres", "p", k=5, exclude_ids=[ids[0]])
    assert ids[0] not in {r["id"] for r in res} and ids[1] in {r["id"] for r in res}
    # The last 3 turns of s2 are still in the model's context: not recalled.
    res = recall.search(core, "hiking yesterday typescript react", "p", k=10, exclude_session="s2", exclude_recent=3)
    assert not {ids[3], ids[4], ids[5]} & {r["id"] for r in res}


def test_near_duplicates_are_collapsed(core):
    ids = add(core, [("s1", "user", "Deploy with the blue/green script"), ("s2", "user", "deploy with the Blue-Green script!"),
                     ("s3", "user", "the deploy script lives in ops/")])
    res = recall.search(core, "deploy script", "p", k=5)
    got = {r["id"] for r in res}
    assert len(got & {ids[0], ids[1]}) == 1 and ids[2] in got


def dense_rows(core) -> int:
    """Rows in the worker's dense index after it caught up with the store."""
    return len(recall._state(core).index)


def test_new_memories_appear_without_reload_and_forgotten_ones_vanish(core):
    add(core, CHAT)
    assert dense_rows(core) == len(CHAT)
    new = add(core, [("s3", "user", "the cache layer uses Redis with a 5 minute TTL")])
    res = recall.search(core, "redis cache ttl", "p", k=1)
    assert res[0]["id"] == new[0]
    assert dense_rows(core) == len(CHAT) + 1
    core.store.forget(new[0])  # forgotten (e.g. by another process): dropped lazily
    assert new[0] not in {r["id"] for r in recall.search(core, "redis cache ttl", "p", k=5)}
    assert dense_rows(core) == len(CHAT)


def test_search_many_keeps_input_order_and_matches_single_search(core):
    add(core, CHAT)
    qs = [{"query": "billing database"}, {"query": "react frontend", "k": 1}, "hiking"]
    many = recall.search_many(core, qs, project="p", k=3)
    assert len(many) == 3 and len(many[1]) == 1
    for q, res in zip(["billing database", "react frontend", "hiking"], many):
        single = recall.search(core, q, "p", k=len(res))
        assert [r["id"] for r in res] == [r["id"] for r in single]


def test_bad_input_is_rejected(core):
    add(core, CHAT)
    with pytest.raises(InvalidInput):
        recall.search(core, "  ", "p")
    with pytest.raises(InvalidInput):
        recall.search(core, "x", "p", k=0)
    with pytest.raises(InvalidInput):
        recall.search(core, "x", "p", scope="galaxy")
    assert recall.search(core, "billing", "empty-project") == []


def test_kind_and_recency_boosts_are_small_and_ordered():
    w = fusion.DEFAULT_WEIGHTS
    assert fusion.boost(1.0, "constraint", False, None) == pytest.approx(1.0 + w.kind_boost)
    assert fusion.boost(1.0, "note", False, None) == 1.0
    fresh, old = fusion.boost(1.0, "note", False, 0.0), fusion.boost(1.0, "note", False, 365.0)
    assert fresh == pytest.approx(1.0 + w.recency_boost) and 1.0 <= old < 1.0 + 1e-6
    # A boosted but much weaker match never beats a clearly better one.
    assert fusion.boost(0.5, "constraint", True, 0.0) < fusion.boost(1.0, "note", False, 400.0)


def test_fusion_keeps_score_margins_that_rrf_discards():
    bm25 = {1: 10.0, 2: 1.0}
    dense = {1: 0.1, 2: 0.2}
    fused = fusion.fuse_scores(bm25, dense, dense_mean=0.0, dense_std=0.1)
    assert fused[1] > fused[2]  # a far stronger keyword hit survives a slightly better cosine
    from compass_eval.rankings import rrf

    r = rrf([[1, 2], [2, 1]])
    assert r[1] == pytest.approx(r[2])
    prior = fusion.add_session_prior({1: 1.0, 2: 0.2, 3: 0.5}, {1: "a", 2: "a", 3: "b"}, 0.5)
    assert prior[2] > 0.5 and prior[3] == pytest.approx(0.75)


def test_date_words_and_temporal_queries(core):
    assert recall.date_words(time.mktime((2023, 5, 8, 12, 0, 0, 0, 0, 0)) - time.timezone) == "8 May 2023"
    ids = add(core, [("s1", "user", "I adopted a puppy"), ("s1", "assistant", "I went to the pottery class yesterday")])
    res = recall.search(core, "When did I go to the class?", "p", k=1)
    assert res[0]["id"] == ids[1]


def test_speaker_names_are_read_only_from_a_capitalised_line_head():
    from compass_hooks.memory import text as tx

    assert tx.speaker("Melanie: I painted a lake") == "melanie"
    assert tx.speaker("note: lower-case label") is None and tx.speaker("no colon here") is None
    assert tx.speaker("Two words: not a speaker") is None
    assert tx.names("What has Melanie painted since May?") == {"melanie", "may"}
    assert tx.names("what has melanie painted?") == frozenset()


def test_speaker_prior_adds_to_the_named_speakers_turns_only(core):
    rows = [("s1", "user", "Bob: I painted a lake at sunset"), ("s1", "assistant", "Ann: I painted a lake at sunset"),
            ("s2", "user", "Bob: the train was late again"), ("s2", "assistant", "Ann: dinner was lovely")]
    ids = add(core, rows)
    on = {r["id"]: r["score"] for r in recall.search(core, "What has Ann painted?", "p", k=4)}
    off = {r["id"]: r["score"] for r in recall.search(core, "What has Ann painted?", "p", k=4,
                                                      weights=fusion.Weights(speaker_boost=0.0))}
    b = fusion.DEFAULT_WEIGHTS.speaker_boost
    assert b > 0 and max(on, key=on.get) == ids[1]
    assert on[ids[1]] - off[ids[1]] == pytest.approx(b, abs=1e-5)
    assert on[ids[0]] == pytest.approx(off[ids[0]], abs=1e-5)  # Bob's turn: unchanged
    # A lower-case mention is not a name: no prior.
    low = {r["id"]: r["score"] for r in recall.search(core, "what has ann painted?", "p", k=4)}
    assert low[ids[1]] == pytest.approx(off[ids[1]], abs=1e-5)


def test_date_range_reads_explicit_days_and_months_only():
    import calendar

    from compass_hooks.memory import text as tx

    day = calendar.timegm((2023, 7, 7, 0, 0, 0))
    assert tx.date_range("What happened on 7 July, 2023?") == (day, day + 86400)
    assert tx.date_range("what did we do on July 7th 2023") == (day, day + 86400)
    dec = calendar.timegm((2023, 12, 1, 0, 0, 0))
    assert tx.date_range("What class did Maria start in December 2023?") == (dec, dec + 31 * 86400)
    assert tx.date_range("what did we decide in July?") is None and tx.date_range("in 2023") is None
    assert tx.date_range("on 31 February, 2023") is None


def test_date_prior_lifts_the_memories_of_the_named_day_only(core):
    may8, jul7 = calendar_ts(2023, 5, 8, 14), calendar_ts(2023, 7, 7, 9)
    texts = ["we went to the lake with the kids", "we went to the lake with the dog"]
    vecs = core.embedder.embed(texts)
    items = [{"text": t, "session": s, "role": "user", "kind": "prompt", "project": "p", "created": c,
              "embedding": v, "model": core.embedder.name} for t, s, c, v in zip(texts, ("s1", "s2"), (may8, jul7), vecs)]
    ids = [a.id for a in core.store.add_many(items)]
    recall.update_contexts(core.store, ids)
    q = "Where did we go on 7 July, 2023?"
    on = {r["id"]: r["score"] for r in recall.search(core, q, "p", k=2)}
    off = {r["id"]: r["score"] for r in recall.search(core, q, "p", k=2, weights=fusion.Weights(date_boost=0.0))}
    b = fusion.DEFAULT_WEIGHTS.date_boost
    assert b > 0 and max(on, key=on.get) == ids[1]
    assert on[ids[1]] - off[ids[1]] == pytest.approx(b, abs=1e-5)
    assert on[ids[0]] == pytest.approx(off[ids[0]], abs=1e-5)  # 8 May: unchanged


def calendar_ts(*ymdh):
    import calendar

    return float(calendar.timegm((*ymdh, 0, 0)))


def test_pair_proximity_counts_query_word_pairs_said_close_together():
    from compass_hooks.memory import text as tx

    q = tx.content_terms("When did Joanna make a chocolate tart?")  # joanna, make, chocolate, tart
    assert tx.pair_proximity(q, "I baked a chocolate tart") == pytest.approx(1 / 3)
    assert tx.pair_proximity(q, "a tart, dark chocolate") == pytest.approx(1 / 3)  # either order
    assert tx.pair_proximity(q, "chocolate is great, and so is the one tart I had") == 0.0  # too far apart
    assert tx.pair_proximity(q, "chocolatetart") == 0.0 and tx.pair_proximity(["tart"], "tart tart") == 0.0
    assert tx.pair_proximity(["pottery", "class"], "I signed up for a Class on pottery") == 1.0


def test_proximity_prior_lifts_the_memory_that_says_the_pair_together(core):
    rows = [("s1", "user", "the pottery was lovely and later we went to a class"),
            ("s2", "user", "I joined a pottery class on Monday")]
    ids = add(core, rows)
    q = "what pottery class did I join?"
    on = {r["id"]: r["score"] for r in recall.search(core, q, "p", k=2)}
    off = {r["id"]: r["score"] for r in recall.search(core, q, "p", k=2, weights=fusion.Weights(proximity_weight=0.0))}
    b = fusion.DEFAULT_WEIGHTS.proximity_weight
    assert b > 0
    assert on[ids[1]] - off[ids[1]] == pytest.approx(b * 0.5, abs=1e-5)  # pottery+class near; class+join not
    assert on[ids[0]] == pytest.approx(off[ids[0]], abs=1e-5)
