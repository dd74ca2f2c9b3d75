"""The dense index: exact top-k, project partitions, appends, removal, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from compass_hooks.memory.index import DenseIndex


def _unit(rng, n, dim):
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_top_k_matches_brute_force_per_project_and_global():
    rng = np.random.default_rng(0)
    vecs = _unit(rng, 1000, 32)
    projects = ["a" if i % 3 else "b" for i in range(1000)]
    idx = DenseIndex(32)
    idx.add(list(range(1000)), projects, vecs)
    q = _unit(rng, 1, 32)[0]
    sims = vecs @ q
    hits = idx.search(q, k=7, project="a")
    a_rows = [i for i in range(1000) if projects[i] == "a"]
    expect = sorted(a_rows, key=lambda i: -sims[i])[:7]
    assert hits.ids.tolist() == expect
    assert np.allclose(hits.scores, sims[expect], atol=1e-5)
    assert hits.searched == len(a_rows)
    assert hits.mean == pytest.approx(float(sims[a_rows].mean()), abs=1e-5)
    assert hits.std == pytest.approx(float(sims[a_rows].std()), abs=1e-4)
    glob = idx.search(q, k=7)
    assert glob.ids.tolist() == sorted(range(1000), key=lambda i: -sims[i])[:7]


def test_incremental_append_grows_past_capacity_and_replaces_duplicates():
    rng = np.random.default_rng(1)
    idx = DenseIndex(16)
    vecs = _unit(rng, 600, 16)
    for start in range(0, 600, 50):  # crosses the 256 and 512 capacity doublings
        idx.add(list(range(start, start + 50)), ["p"] * 50, vecs[start : start + 50])
    assert len(idx) == 600
    assert idx.search(vecs[599], k=1, project="p").ids.tolist() == [599]
    new = _unit(rng, 1, 16)
    idx.add([5], ["p"], new)  # same id again: replaced, not duplicated
    assert len(idx) == 600
    assert idx.search(new[0], k=1, project="p").ids.tolist() == [5]


def test_remove_and_exclude():
    rng = np.random.default_rng(2)
    vecs = _unit(rng, 50, 8)
    idx = DenseIndex(8)
    idx.add(list(range(50)), ["p"] * 50, vecs)
    assert idx.search(vecs[10], k=1, project="p").ids.tolist() == [10]
    assert 10 not in idx.search(vecs[10], k=5, project="p", exclude={10}).ids.tolist()
    assert idx.remove([10, 11, 999]) == 2
    assert 10 not in idx and len(idx) == 48
    assert 10 not in idx.search(vecs[10], k=48, project="p").ids.tolist()
    assert idx.search(vecs[0], k=3, project="missing").ids.size == 0


def test_search_many_equals_single_searches():
    rng = np.random.default_rng(3)
    vecs = _unit(rng, 300, 24)
    idx = DenseIndex(24)
    idx.add(list(range(300)), ["x"] * 300, vecs)
    qs = _unit(rng, 70, 24)  # > one query chunk
    many = idx.search_many(qs, k=5, project="x")
    for q, hits in zip(qs, many):
        assert hits.ids.tolist() == idx.search(q, k=5, project="x").ids.tolist()


def test_concurrent_adds_and_searches_lose_nothing():
    rng = np.random.default_rng(4)
    vecs = _unit(rng, 2000, 16)
    idx = DenseIndex(16)
    errors = []

    def writer(part):
        for start in range(part * 500, part * 500 + 500, 25):
            idx.add(list(range(start, start + 25)), ["p"] * 25, vecs[start : start + 25])

    def reader():
        try:
            for i in range(200):
                hits = idx.search(vecs[i], k=3, project="p")
                assert len(hits.ids) <= 3
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in range(4)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(idx) == 2000
    assert idx.search(vecs[1234], k=1, project="p").ids.tolist() == [1234]


def test_float16_storage_keeps_ranking():
    rng = np.random.default_rng(5)
    vecs = _unit(rng, 500, 32)
    idx = DenseIndex(32, dtype="float16")
    idx.add(list(range(500)), ["p"] * 500, vecs)
    assert idx.search(vecs[42], k=1, project="p").ids.tolist() == [42]


def test_score_ids_gives_exact_cosines_and_survives_removal():
    rng = np.random.default_rng(6)
    vecs = _unit(rng, 100, 8)
    idx = DenseIndex(8)
    idx.add(list(range(100)), ["a" if i < 50 else "b" for i in range(100)], vecs)
    q = _unit(rng, 1, 8)[0]
    got = idx.score_ids(q, [3, 77, 12345])
    assert set(got) == {3, 77}
    assert got[77] == pytest.approx(float(vecs[77] @ q), abs=1e-5)
    idx.remove([0, 1, 2])  # compaction moves rows: positions must follow
    assert idx.score_ids(q, [3])[3] == pytest.approx(float(vecs[3] @ q), abs=1e-5)


def test_nbytes_counts_capacity_and_halves_with_float16():
    rng = np.random.default_rng(7)
    vecs = _unit(rng, 300, 16)
    f32, f16 = DenseIndex(16), DenseIndex(16, dtype="float16")
    for idx in (f32, f16):
        idx.add(list(range(300)), ["p"] * 300, vecs)
    assert f32.nbytes() >= 300 * 16 * 4 + 300 * 8
    assert f16.nbytes() - f16._blocks["p"].ids.nbytes == (f32.nbytes() - f32._blocks["p"].ids.nbytes) // 2


def test_large_blocks_grow_by_a_quarter_not_double():
    rng = np.random.default_rng(8)
    idx = DenseIndex(4)
    idx.add(list(range(20_000)), ["p"] * 20_000, _unit(rng, 20_000, 4))
    idx.add([20_000], ["p"], _unit(rng, 1, 4))  # the first append past the initial load
    assert len(idx._blocks["p"].ids) == 25_000
    assert idx.search(_unit(rng, 1, 4)[0], k=3, project="p").ids.size == 3
