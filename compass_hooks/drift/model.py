"""The calibrated scorer: L2-regularised logistic regression over the drift
features, fitted by Newton's method (IRLS; deterministic), plus the metrics the
trainer and ``eval drift`` report. numpy only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import AnchorPackError

CALIBRATION_SCHEMA = 1


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -35, 35)))


@dataclass
class LogisticModel:
    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    threshold: float = 0.5
    meta: dict[str, Any] = field(default_factory=dict)
    # Text probe (probe.py): its score is the last feature, "probe".
    probe_w: np.ndarray | None = None
    probe_b: float = 0.0

    def features_for(self, texts: Sequence[str], vectors: np.ndarray, base: np.ndarray) -> np.ndarray:
        """The base feature matrix plus the probe column when this model has one."""
        if self.probe_w is None:
            return base
        from .probe import HASH_DIM, design, probe_scores

        if self.probe_w.shape[0] != HASH_DIM + vectors.shape[1]:
            raise AnchorPackError("calibration probe does not match this embedding model's dimension",
                                  "retrain with `compass-hook anchors train`")
        return np.column_stack([base, probe_scores(design(texts, vectors), self.probe_w, self.probe_b)])

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, dtype=np.float64) - self.mean) / self.scale
        return sigmoid(Z @ self.coef + self.bias)

    def to_json(self) -> dict[str, Any]:
        extra = {}
        if self.probe_w is not None:
            from .probe import EMBED_SCALE, HASH_DIM, LAMBDA

            extra["probe"] = {"hash_dim": HASH_DIM, "embed_scale": EMBED_SCALE, "lambda": LAMBDA,
                              "bias": float(self.probe_b), "weights": [round(float(x), 7) for x in self.probe_w]}
        return {
            "schema_version": CALIBRATION_SCHEMA,
            **self.meta,
            "threshold": round(float(self.threshold), 6),
            "bias": float(self.bias),
            "features": [
                {"name": n, "mean": float(m), "scale": float(s), "coef": float(c)}
                for n, m, s, c in zip(self.features, self.mean, self.scale, self.coef)
            ],
            **extra,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | str = "<calibration>") -> "LogisticModel":
        try:
            if data["schema_version"] != CALIBRATION_SCHEMA:
                raise KeyError("schema_version")
            feats = data["features"]
            meta = {k: v for k, v in data.items() if k not in ("features", "bias", "threshold", "schema_version", "probe")}
            probe = data.get("probe")
            if probe is not None:
                from .probe import EMBED_SCALE, HASH_DIM

                if probe["hash_dim"] != HASH_DIM or probe["embed_scale"] != EMBED_SCALE:
                    raise KeyError("probe (hash_dim/embed_scale differ from this version)")
            return cls(
                features=[f["name"] for f in feats],
                mean=np.array([f["mean"] for f in feats], dtype=np.float64),
                scale=np.array([f["scale"] for f in feats], dtype=np.float64),
                coef=np.array([f["coef"] for f in feats], dtype=np.float64),
                bias=float(data["bias"]),
                threshold=float(data["threshold"]),
                meta=meta,
                probe_w=None if probe is None else np.array(probe["weights"], dtype=np.float64),
                probe_b=0.0 if probe is None else float(probe["bias"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AnchorPackError(f"calibration {path}: bad or missing field {exc}", "retrain with `compass-hook anchors train`") from None


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 50) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, coef, bias) on standardised features; Newton/IRLS, no randomness."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mean = X.mean(0)
    scale = X.std(0)
    scale[scale < 1e-9] = 1.0
    Z = np.column_stack([(X - mean) / scale, np.ones(len(X))])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], l2)
    reg[-1] = 0.0  # no penalty on the bias
    for _ in range(iters):
        p = sigmoid(Z @ w)
        grad = Z.T @ (p - y) + reg * w
        H = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(H, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


def roc_auc(y: Sequence[int], scores: Sequence[float]) -> float:
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


def rates(y: Sequence[int], alerts: Sequence[bool]) -> dict[str, float]:
    y = np.asarray(y)
    a = np.asarray(alerts, dtype=bool)
    npos, nneg = int((y == 1).sum()), int((y == 0).sum())
    return {
        "tpr": float((a & (y == 1)).sum() / npos) if npos else float("nan"),
        "fpr": float((a & (y == 0)).sum() / nneg) if nneg else float("nan"),
        "n_pos": npos,
        "n_neg": nneg,
    }


def threshold_for_fpr(y: Sequence[int], probs: Sequence[float], max_fpr: float) -> float:
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


def stratified_folds(y: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    folds: list[list[int]] = [[] for _ in range(k)]
    for cls in (0, 1):
        idx = np.flatnonzero(y == cls)
        rng.shuffle(idx)
        for i, j in enumerate(idx):
            folds[i % k].append(int(j))
    return [np.array(sorted(f)) for f in folds]


def safe_model_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "model"


def load_calibration(path: Path) -> LogisticModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnchorPackError(f"calibration {path}: cannot read: {exc}", "retrain with `compass-hook anchors train`") from None
    return LogisticModel.from_json(data, path)
