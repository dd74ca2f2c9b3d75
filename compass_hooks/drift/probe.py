"""A linear text probe learned from the dev set: hashed word/character n-grams
plus the sentence embedding, fitted by ridge regression in dual form (closed
form, deterministic). Its score is one input of the calibrated model; it lets
the dev set teach phrasing the hand-written cues and anchors do not cover
(MiniLM cannot read Chinese; character bigrams can). The n-gram hashing and the ridge fit are
:mod:`compass_hooks.learn.ngrams`, shared with memory's standing-instruction detector; the sizes here are
drift's (chosen by its dev CV, written into its calibration files)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..learn import ngrams

HASH_DIM = 4096
LAMBDA = 0.3  # ridge penalty (chosen by dev CV)
EMBED_SCALE = 0.5  # relative weight of the embedding block against the n-gram block (chosen by dev CV)


def ngram_matrix(texts: Sequence[str]) -> np.ndarray:
    return ngrams.ngram_matrix(texts, HASH_DIM)


def design(texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    return ngrams.design(texts, vectors, HASH_DIM, EMBED_SCALE)


def fit_probe(Phi: np.ndarray, y: np.ndarray, lam: float = LAMBDA) -> tuple[np.ndarray, float]:
    """Ridge regression of y in {-1, +1} on Phi, solved in the n x n dual."""
    return ngrams.fit_ridge(Phi, y, lam)


def probe_scores(Phi: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return ngrams.scores(Phi, w, b)
