"""A linear text probe learned from the dev set: hashed word/character n-grams
plus the sentence embedding, fitted by ridge regression in dual form (closed
form, deterministic). Its score is one input of the calibrated model; it lets
the dev set teach phrasing the hand-written cues and anchors do not cover
(MiniLM cannot read Chinese; character bigrams can)."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

HASH_DIM = 4096
LAMBDA = 0.3  # ridge penalty (chosen by dev CV)
EMBED_SCALE = 0.5  # relative weight of the embedding block against the n-gram block (chosen by dev CV)
_WORD = re.compile(r"[a-z0-9_]+(?:[-'][a-z0-9_]+)*|--?[a-z][a-z-]+", re.I)
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def _grams(text: str) -> list[str]:
    low = text.lower()
    words = _WORD.findall(_CJK_RUN.sub(" ", low))
    out = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in zip(words, words[1:])]
    for run in _CJK_RUN.findall(text):
        out.extend(f"c:{ch}" for ch in run)
        out.extend(f"d:{run[i:i + 2]}" for i in range(len(run) - 1))
    return out


def _bucket(gram: str) -> int:
    # blake2b, not hash(): Python's str hash is salted per process.
    return int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=4).digest(), "little") % HASH_DIM


def ngram_matrix(texts: Sequence[str]) -> np.ndarray:
    out = np.zeros((len(texts), HASH_DIM), dtype=np.float64)
    for i, t in enumerate(texts):
        for g in _grams(t):
            out[i, _bucket(g)] = 1.0  # presence, not counts
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def design(texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    return np.hstack([ngram_matrix(texts), EMBED_SCALE * np.asarray(vectors, dtype=np.float64)])


def fit_probe(Phi: np.ndarray, y: np.ndarray, lam: float = LAMBDA) -> tuple[np.ndarray, float]:
    """Ridge regression of y in {-1, +1} on Phi, solved in the n x n dual."""
    t = np.where(np.asarray(y) > 0, 1.0, -1.0)
    b = float(t.mean())
    K = Phi @ Phi.T
    alpha = np.linalg.solve(K + lam * np.eye(len(t)), t - b)
    return Phi.T @ alpha, b


def probe_scores(Phi: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return Phi @ w + b
