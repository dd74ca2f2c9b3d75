"""The calibrated scorer: L2-regularised logistic regression over the drift
features, fitted by Newton's method (IRLS; deterministic), plus the metrics the
trainer and ``eval drift`` report. numpy only."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import AnchorPackError

CALIBRATION_SCHEMA = 2


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -35, 35)))


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.asarray(a, dtype="<f4").tobytes()).decode("ascii")


def _unb64(s: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype="<f4").astype(np.float64)


@dataclass
class LangCalibration:
    """Per-language Platt scaling of the model's logit (p = sigmoid(a * logit + b)) and that language's alert
    threshold, both from the dev set's out-of-fold predictions in that language."""
    a: float = 1.0
    b: float = 0.0
    threshold: float = 0.5


@dataclass
class LogisticModel:
    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    threshold: float = 0.5  # languages without a calibration of their own
    meta: dict[str, Any] = field(default_factory=dict)
    # Text probe (probe.py): its score is the last feature, "probe".
    probe_w: np.ndarray | None = None
    probe_b: float = 0.0
    probe_scales: dict[str, float] = field(default_factory=dict)
    languages: dict[str, LangCalibration] = field(default_factory=dict)

    def features_for(self, texts: Sequence[str], vectors: np.ndarray, feats: dict[str, Any]) -> np.ndarray:
        """The feature matrix of ``build_features`` plus the probe column when this model has one."""
        base = feats["X"]
        if self.probe_w is None:
            return base
        from .probe import HASH_DIM, score_rows, sparse_rows

        if self.probe_w.shape[0] != HASH_DIM + vectors.shape[1]:
            raise AnchorPackError("calibration probe does not match this embedding model's dimension",
                                  "retrain with `compass-hook anchors train`")
        rows = sparse_rows(texts, feats["langs"], feats["cues"])
        probe = score_rows(rows, vectors, feats["embedding_on"], self.probe_w, self.probe_b, self.probe_scales)
        return np.column_stack([base, probe])

    def logit(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, dtype=np.float64) - self.mean) / self.scale
        return Z @ self.coef + self.bias

    def predict_proba(self, X: np.ndarray, langs: Sequence[str] | None = None) -> np.ndarray:
        """Probabilities; with ``langs``, through each language's calibration."""
        z = self.logit(X)
        if langs is None or not self.languages:
            return sigmoid(z)
        cal = [self.languages.get(lang) for lang in langs]
        a = np.array([c.a if c else 1.0 for c in cal])
        b = np.array([c.b if c else 0.0 for c in cal])
        return sigmoid(a * z + b)

    def threshold_for(self, lang: str) -> float:
        cal = self.languages.get(lang)
        return cal.threshold if cal else self.threshold

    def to_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.probe_w is not None:
            from .probe import CHAR_DIM, CONCEPT_DIM, LAMBDA, WORD_DIM

            extra["probe"] = {"char_dim": CHAR_DIM, "word_dim": WORD_DIM, "concept_dim": CONCEPT_DIM,
                              "scales": self.probe_scales, "lambda": LAMBDA, "bias": float(self.probe_b),
                              "weights_f32_b64": _b64(self.probe_w)}
        return {
            "schema_version": CALIBRATION_SCHEMA,
            **self.meta,
            "threshold": round(float(self.threshold), 6),
            "languages": {k: {"a": round(v.a, 6), "b": round(v.b, 6), "threshold": round(v.threshold, 6)}
                          for k, v in self.languages.items()},
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
                raise KeyError(f"schema_version (this version reads {CALIBRATION_SCHEMA})")
            feats = data["features"]
            meta = {k: v for k, v in data.items()
                    if k not in ("features", "bias", "threshold", "schema_version", "probe", "languages")}
            probe = data.get("probe")
            if probe is not None:
                from .probe import CHAR_DIM, CONCEPT_DIM, WORD_DIM

                if (probe["char_dim"], probe["word_dim"], probe["concept_dim"]) != (CHAR_DIM, WORD_DIM, CONCEPT_DIM):
                    raise KeyError("probe (block sizes differ from this version)")
            return cls(
                features=[f["name"] for f in feats],
                mean=np.array([f["mean"] for f in feats], dtype=np.float64),
                scale=np.array([f["scale"] for f in feats], dtype=np.float64),
                coef=np.array([f["coef"] for f in feats], dtype=np.float64),
                bias=float(data["bias"]),
                threshold=float(data["threshold"]),
                meta=meta,
                probe_w=None if probe is None else _unb64(probe["weights_f32_b64"]),
                probe_b=0.0 if probe is None else float(probe["bias"]),
                probe_scales={} if probe is None else {k: float(v) for k, v in probe["scales"].items()},
                languages={k: LangCalibration(float(v["a"]), float(v["b"]), float(v["threshold"]))
                           for k, v in data.get("languages", {}).items()},
            )
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
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


def group_folds(y: np.ndarray, groups: Sequence[str], k: int, seed: int) -> list[np.ndarray]:
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


def safe_model_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "model"


def load_calibration(path: Path) -> LogisticModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnchorPackError(f"calibration {path}: cannot read: {exc}", "retrain with `compass-hook anchors train`") from None
    return LogisticModel.from_json(data, path)
