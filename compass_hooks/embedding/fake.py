"""A deterministic embedder for unit tests: hashed word and character-trigram
features, L2-normalised. Texts sharing words get similar vectors, so ranking
logic can be tested without a model; it is never a default for users."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    def __init__(self, dim: int = 64):
        self.dim = dim
        self.name = f"fake:{dim}"
        # Hashed words and character trigrams mean the same in any language.
        self.languages = ("multilingual",)

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        feats = [f"w:{w}" for w in words]
        for w in words:
            padded = f"#{w}#"
            feats.extend(f"c:{padded[i:i + 3]}" for i in range(max(1, len(padded) - 2)))
        return feats or ["<empty>"]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
                idx = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, idx] += sign * (2.0 if feat.startswith("w:") else 1.0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
