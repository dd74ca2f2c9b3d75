"""A small LRU in front of an embedder, shared by every op of one core.

A hook prompt is embedded once by construction (the UserPromptSubmit handler's
prompt context), so this is not what keeps that to one model call. It saves
repeats across ops: anchor texts shared by several pack selections and
re-embedded after a pack edit, a text the MCP client checks for drift and then
recalls with. Keyed by the exact text, so a hit returns exactly what the model
would have returned.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np


class CachedEmbedder:
    """Wraps any :class:`~compass_hooks.embedding.base.Embedder`; other attributes pass through."""

    def __init__(self, inner: Any, max_items: int = 512, max_chars: int = 4000):
        self.inner = inner
        self.max_items = max_items
        self.max_chars = max_chars  # long texts (transcript imports) are rarely repeated: not worth the RAM
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # The Embedder Protocol's attributes, spelled out so the wrapper is an Embedder to the type checker too.
    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        found: dict[int, np.ndarray] = {}
        with self._lock:
            for i, t in enumerate(texts):
                vec = self._lru.get(t)
                if vec is not None:
                    self._lru.move_to_end(t)
                    found[i] = vec
            self.hits += len(found)
            self.misses += len(texts) - len(found)
        if len(found) == len(texts) and texts:
            return np.stack([found[i] for i in range(len(texts))])
        todo = [i for i in range(len(texts)) if i not in found]
        fresh = self.inner.embed([texts[i] for i in todo])
        if len(found) == 0:
            out = np.asarray(fresh)
        else:
            out = np.empty((len(texts), fresh.shape[1]), dtype=fresh.dtype)
            for i, vec in found.items():
                out[i] = vec
            out[todo] = fresh
        with self._lock:
            for i, vec in zip(todo, fresh):
                if len(texts[i]) <= self.max_chars:
                    kept = np.array(vec, copy=True)
                    kept.flags.writeable = False
                    self._lru[texts[i]] = kept
                    self._lru.move_to_end(texts[i])
            while len(self._lru) > self.max_items:
                self._lru.popitem(last=False)
        return out
