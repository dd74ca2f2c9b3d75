"""A linear text probe: hashed word/character n-grams plus a sentence embedding, fitted by ridge regression in
dual form (closed form, deterministic). It lets a labelled dev set teach phrasing that hand-written cues do not
cover; character bigrams carry Chinese, which an English-only embedding model cannot read. numpy only."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9_]+(?:[-'][a-z0-9_]+)*|--?[a-z][a-z-]+", re.I)
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def grams(text: str) -> list[str]:
    """Words and word bigrams (lower case), CJK characters and character bigrams."""
    low = text.lower()
    words = _WORD.findall(_CJK_RUN.sub(" ", low))
    out = [f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in zip(words, words[1:])]
    for run in _CJK_RUN.findall(text):
        out.extend(f"c:{ch}" for ch in run)
        out.extend(f"d:{run[i:i + 2]}" for i in range(len(run) - 1))
    return out


def bucket(gram: str, dim: int) -> int:
    # blake2b, not hash(): Python's str hash is salted per process.
    return int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=4).digest(), "little") % dim


def ngram_matrix(texts: Sequence[str], dim: int) -> np.ndarray:
    """One L2-normalised presence row (not counts) per text."""
    out = np.zeros((len(texts), dim), dtype=np.float64)
    for i, t in enumerate(texts):
        for g in grams(t):
            out[i, bucket(g, dim)] = 1.0
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


def design(texts: Sequence[str], vectors: np.ndarray, dim: int, embed_scale: float) -> np.ndarray:
    """The probe's input: n-gram rows next to the embeddings, weighted by ``embed_scale``."""
    return np.hstack([ngram_matrix(texts, dim), embed_scale * np.asarray(vectors, dtype=np.float64)])


def fit_ridge(Phi: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """Ridge regression of y in {-1, +1} (labels > 0 are +1) on Phi, solved in the n x n dual."""
    t = np.where(np.asarray(y) > 0, 1.0, -1.0)
    b = float(t.mean())
    K = Phi @ Phi.T
    alpha = np.linalg.solve(K + lam * np.eye(len(t)), t - b)
    return Phi.T @ alpha, b


def fit_ridge_dual(K: np.ndarray, y: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
    """:func:`fit_ridge` from the Gram matrix ``K = Phi @ Phi.T`` of the training rows: (dual weights, bias).
    Scores of other rows are ``K_other_train @ alpha + b``; the primal weights are ``Phi.T @ alpha``. Cross-
    validation slices one Gram matrix instead of recomputing it per fold."""
    t = np.where(np.asarray(y) > 0, 1.0, -1.0)
    b = float(t.mean())
    return np.linalg.solve(K + lam * np.eye(len(t)), t - b), b


class SubsetRidge:
    """:func:`fit_ridge_dual` on many row subsets of one Gram matrix from one inverse.

    Cross-validation fits the dual ridge on every fold's training rows: a solve of ``(K_tt + lam I)`` each, ~0.7 of
    the whole matrix per fold, 20-50 of them in a calibration. With ``H = (K + lam I)^-1`` once, the inverse of a
    principal block is ``H_tt - H_tr H_rr^-1 H_rt`` (``r``: the rows left out, Schur complement), so a fit costs
    matrix-vector products and a solve the size of the rows left out; when more rows are left out than kept, the
    kept block is solved directly (the smaller solve). Same solution up to rounding either way."""

    def __init__(self, K: np.ndarray, lam: float):
        self.K, self.lam = K, lam
        A = np.array(K, dtype=np.float64)  # a copy: K stays as it was
        A[np.diag_indices_from(A)] += lam
        self.H = np.linalg.inv(A)
        del A

    def fit(self, train: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
        """(dual weights over ``train``, in its order; bias): what ``fit_ridge_dual(K[train][:, train], y, lam)``
        gives. ``y``: the labels of the ``train`` rows."""
        n = len(self.H)
        train = np.asarray(train)
        if 2 * len(train) < n:
            return fit_ridge_dual(self.K[np.ix_(train, train)], y, self.lam)
        t = np.where(np.asarray(y) > 0, 1.0, -1.0)
        b = float(t.mean())
        full = np.zeros(n)
        full[train] = t - b
        u = self.H @ full
        out = np.ones(n, dtype=bool)
        out[train] = False
        rest = np.flatnonzero(out)
        if len(rest):
            Hr = self.H[rest]  # rows of the left-out; H is symmetric, so Hr.T is its columns
            u -= Hr.T @ np.linalg.solve(Hr[:, rest], u[rest])
        return u[train], b


def scores(Phi: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return Phi @ w + b
