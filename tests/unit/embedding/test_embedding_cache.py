"""The core's embedding LRU: exact results, mixed hit/miss batches, long texts not kept. (One embedding per hook
prompt does not rely on it: tests/unit/worker/test_prompt_once.py.)"""

from __future__ import annotations

import numpy as np

from compass_hooks.embedding.cache import CachedEmbedder
from compass_hooks.embedding.fake import FakeEmbedder


class Counting(FakeEmbedder):
    def __init__(self):
        super().__init__(dim=64)
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return super().embed(texts)


def test_hits_return_what_the_model_returns_and_misses_are_batched():
    inner = Counting()
    emb = CachedEmbedder(inner, max_items=3)
    a = emb.embed(["alpha", "beta"])
    b = emb.embed(["beta", "gamma", "alpha"])
    assert inner.calls == [["alpha", "beta"], ["gamma"]]
    assert np.allclose(b, FakeEmbedder(dim=64).embed(["beta", "gamma", "alpha"]))
    assert np.allclose(a[0], b[2])
    b[0] += 1  # callers get their own array: the cache cannot be corrupted through it
    assert np.allclose(emb.embed(["beta"])[0], a[1])
    emb.embed(["delta"])  # capacity 3: the least recently used ("alpha") goes
    emb.embed(["gamma"])
    assert inner.calls[-1] == ["delta"]
    emb.embed(["alpha"])
    assert inner.calls[-1] == ["alpha"]
    assert emb.name == inner.name and emb.dim == 64


def test_long_texts_are_not_kept():
    inner = Counting()
    emb = CachedEmbedder(inner, max_chars=10)
    emb.embed(["x" * 11])
    emb.embed(["x" * 11])
    assert len(inner.calls) == 2

