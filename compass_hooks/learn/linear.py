"""L2-regularised logistic regression fitted by Newton's method (IRLS; deterministic), folds, thresholds and
metrics. numpy only. Used by drift's calibration and memory's standing-instruction detector."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from numpy.typing import ArrayLike  # labels, scores, flags: lists or arrays


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -35, 35)))


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50,
                 sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, coef, bias) on standardised features; Newton/IRLS, no randomness.
    ``sample_weight``: per-row weights (None: all 1)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    mean = X.mean(0)
    scale = X.std(0)
    scale[scale < 1e-9] = 1.0
    Z = np.column_stack([(X - mean) / scale, np.ones(len(X))])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], l2)
    reg[-1] = 0.0  # no penalty on the bias
    for _ in range(iters):
        p = sigmoid(Z @ w)
        grad = Z.T @ (sw * (p - y)) + reg * w
        H = (Z * (sw * p * (1 - p))[:, None]).T @ Z + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(H, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


def logistic_proba(X: np.ndarray, mean: np.ndarray, scale: np.ndarray, coef: np.ndarray, bias: float) -> np.ndarray:
    Z = (np.asarray(X, dtype=np.float64) - mean) / scale
    return sigmoid(Z @ coef + bias)


def roc_auc(y: ArrayLike, scores: ArrayLike) -> float:
    """Mann-Whitney AUC with ties counted half; nan when one class is missing."""
    y = np.asarray(y)
    s = np.asarray(scores, dtype=np.float64)
    pos, neg = s[y == 1], s[y == 0]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    r_pos = ranks[y == 1].sum()
    return float((r_pos - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def rates(y: ArrayLike, alerts: ArrayLike) -> dict[str, float]:
    y = np.asarray(y)
    a = np.asarray(alerts, dtype=bool)
    npos, nneg = int((y == 1).sum()), int((y == 0).sum())
    return {
        "tpr": float((a & (y == 1)).sum() / npos) if npos else float("nan"),
        "fpr": float((a & (y == 0)).sum() / nneg) if nneg else float("nan"),
        "n_pos": npos,
        "n_neg": nneg,
    }


def precision_recall(y: ArrayLike, predicted: ArrayLike) -> dict[str, Any]:
    y = np.asarray(y)
    a = np.asarray(predicted, dtype=bool)
    tp = int((a & (y == 1)).sum())
    fp = int((a & (y == 0)).sum())
    fn = int((~a & (y == 1)).sum())
    return {"precision": tp / (tp + fp) if tp + fp else float("nan"), "recall": tp / (tp + fn) if tp + fn else float("nan"),
            "tp": tp, "fp": fp, "fn": fn}


def threshold_for_fpr(y: ArrayLike, probs: ArrayLike, max_fpr: float) -> float:
    """The lowest threshold whose false-alarm rate on (y, probs) is <= max_fpr.

    Alerts are ``prob >= threshold``; the threshold sits halfway between the
    highest negative allowed to alert and the next one up, so it is not fitted
    to a single item."""
    y = np.asarray(y)
    neg = np.sort(np.asarray(probs, dtype=np.float64)[y == 0])[::-1]
    allowed = int(np.floor(max_fpr * len(neg) + 1e-9))  # negatives that may alert
    if len(neg) == 0 or allowed >= len(neg):
        return 0.0
    upper = neg[allowed - 1] if allowed > 0 else 1.0
    t = (neg[allowed] + upper) / 2.0
    return float(np.nextafter(neg[allowed], 2.0) if t <= neg[allowed] else t)


def threshold_for_precision(y: ArrayLike, probs: ArrayLike, min_precision: float) -> float:
    """The lowest threshold at which the predictions ``prob >= threshold`` on (y, probs) keep a precision of at
    least ``min_precision``, and at every higher threshold too (so a lucky stretch of positives just above it
    cannot hide a worse one higher up). Placed halfway to the next lower score, so it is not fitted to one item.
    1.0 when no threshold reaches it."""
    y = np.asarray(y)
    p = np.asarray(probs, dtype=np.float64)
    order = np.argsort(-p, kind="mergesort")
    ps, ys = p[order], y[order]
    tp = np.cumsum(ys == 1)
    n = np.arange(1, len(ys) + 1)
    prec = tp / n
    # Only cut between distinct scores: a cut inside a tie would take part of the tie.
    cut_ok = np.append(ps[1:] < ps[:-1], True)
    best = None
    for i in range(len(ps)):
        if prec[i] < min_precision:
            break
        if cut_ok[i]:
            best = i
    if best is None:
        return 1.0
    lower = ps[best + 1] if best + 1 < len(ps) else max(0.0, ps[best] - 1e-6)
    return float((ps[best] + lower) / 2.0)


def stratified_folds(y: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    for cls in (0, 1):
        idx = np.flatnonzero(y == cls)
        rng.shuffle(idx)
        for i, j in enumerate(idx):
            folds[i % k].append(int(j))
    return [np.array(sorted(f)) for f in folds]


def group_folds(groups: Sequence[str], k: int, seed: int) -> list[np.ndarray]:
    """``k`` folds that never split a group (e.g. a scenario), groups dealt largest first to the smallest fold,
    ties broken by a seeded shuffle: out-of-fold scores then measure text from groups the fit never saw."""
    rng = np.random.default_rng(seed)
    names = sorted(set(groups))
    rng.shuffle(names)
    members: dict[str, list[int]] = {g: [] for g in names}
    for i, g in enumerate(groups):
        members[g].append(i)
    folds: list[list[int]] = [[] for _ in range(k)]
    for g in sorted(names, key=lambda g: -len(members[g])):  # stable: the shuffle orders equal sizes
        smallest = min(range(k), key=lambda f: len(folds[f]))
        folds[smallest].extend(members[g])
    return [np.array(sorted(f), dtype=int) for f in folds]


def group_folds_by_label(y: np.ndarray, groups: Sequence[str], k: int, seed: int) -> list[np.ndarray]:
    """k folds that keep every group (scenario: paraphrases, contrast pairs) whole, stratified by the group's
    label (a group with any drift item counts as drift), assigned round-robin in a seeded shuffle."""
    y = np.asarray(y)
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(str(g), []).append(i)
    names = sorted(members)
    label = {g: int(y[members[g]].max()) for g in names}
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    for cls in (0, 1):
        gs = [g for g in names if label[g] == cls]
        rng.shuffle(gs)
        for i, g in enumerate(gs):
            folds[i % k].extend(members[g])
    return [np.array(sorted(f), dtype=int) for f in folds]


def fit_platt(z: np.ndarray, y: np.ndarray, prior: float = 1.0) -> tuple[float, float]:
    """(a, b) of p = sigmoid(a z + b) by Newton's method, pulled towards (1, 0) by an L2 prior of weight
    ``prior`` (a language with few items keeps the shared calibration)."""
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.array([1.0, 0.0])
    Z = np.column_stack([z, np.ones_like(z)])
    for _ in range(50):
        p = sigmoid(Z @ w)
        grad = Z.T @ (p - y) + prior * (w - np.array([1.0, 0.0]))
        H = (Z * (p * (1 - p))[:, None]).T @ Z + prior * np.eye(2)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return float(w[0]), float(w[1])
