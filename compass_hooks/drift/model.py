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
# Fitting, folds, thresholds and metrics are shared with memory's standing-instruction detector
# (compass_hooks/learn); drift's trainer, `eval drift` and the tests import them from here.
from ..learn.linear import (fit_logistic, fit_platt, group_folds_by_label as group_folds, rates,  # noqa: F401
                            roc_auc, sigmoid, stratified_folds, threshold_for_fpr)

CALIBRATION_SCHEMA = 2


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
    # Nearest dev items (neighbours.py): which items (``files``, ``sha256_16``) the index must hold, and the head
    # without those features the scorer uses until the index is ready (same probe, its own logistic, Platt
    # scalings and thresholds, trained on the same folds).
    neighbours: dict[str, Any] | None = None
    without_neighbours: "LogisticModel | None" = None

    def head(self, index_ready: bool) -> "LogisticModel":
        """The model to score with: this one, or its head without neighbour features while their index is not
        ready."""
        if self.neighbours and not index_ready and self.without_neighbours is not None:
            return self.without_neighbours
        return self

    @property
    def uses_neighbours(self) -> bool:
        from .neighbours import FEATURES

        return any(f in self.features for f in FEATURES)

    def features_for(self, texts: Sequence[str], vectors: np.ndarray, feats: dict[str, Any],
                     neighbours: Any = None) -> np.ndarray:
        """The feature matrix of ``build_features`` plus the probe column when this model has one, and the
        neighbour columns (from ``neighbours``, a NeighbourIndex) when it has those."""
        base = feats["X"]
        if self.probe_w is None:
            return base
        from .probe import HASH_DIM, score_rows, sparse_rows

        if self.probe_w.shape[0] != HASH_DIM + vectors.shape[1]:
            raise AnchorPackError("calibration probe does not match this embedding model's dimension",
                                  "retrain with `compass-hook anchors train`")
        rows = sparse_rows(texts, feats["langs"], feats["cues"])
        probe = score_rows(rows, vectors, feats["embedding_on"], self.probe_w, self.probe_b, self.probe_scales)
        if not self.uses_neighbours:
            return np.column_stack([base, probe])
        if neighbours is None:
            raise AnchorPackError("the drift neighbour index is not loaded", "score with the head without it")
        return np.column_stack([base, probe, neighbours.features(rows, feats["langs"])])

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
            from .probe import CHAR_DIM, CONCEPT_DIM, LAMBDA, LOCAL_DIM, WORD_DIM

            extra["probe"] = {"char_dim": CHAR_DIM, "word_dim": WORD_DIM, "concept_dim": CONCEPT_DIM, "local_dim": LOCAL_DIM,
                              "scales": self.probe_scales, "lambda": LAMBDA, "bias": float(self.probe_b),
                              "weights_f32_b64": _b64(self.probe_w)}
        if self.neighbours:
            extra["neighbours"] = {**self.neighbours}
            if self.without_neighbours is not None:
                w = self.without_neighbours.to_json()
                extra["neighbours"]["without"] = {k: w[k] for k in ("threshold", "languages", "bias", "features")}
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
            meta = {k: v for k, v in data.items()
                    if k not in ("features", "bias", "threshold", "schema_version", "probe", "languages", "neighbours")}
            probe = data.get("probe")
            if probe is not None:
                from .probe import CHAR_DIM, CONCEPT_DIM, LOCAL_DIM, WORD_DIM

                if (probe["char_dim"], probe["word_dim"], probe["concept_dim"], probe.get("local_dim", 0)) != (
                        CHAR_DIM, WORD_DIM, CONCEPT_DIM, LOCAL_DIM):
                    raise KeyError("probe (block sizes differ from this version)")
            probe_w = None if probe is None else _unb64(probe["weights_f32_b64"])

            def head(d: dict[str, Any]) -> "LogisticModel":
                feats = d["features"]
                return cls(
                    features=[f["name"] for f in feats],
                    mean=np.array([f["mean"] for f in feats], dtype=np.float64),
                    scale=np.array([f["scale"] for f in feats], dtype=np.float64),
                    coef=np.array([f["coef"] for f in feats], dtype=np.float64),
                    bias=float(d["bias"]),
                    threshold=float(d["threshold"]),
                    meta=meta,
                    probe_w=probe_w,
                    probe_b=0.0 if probe is None else float(probe["bias"]),
                    probe_scales={} if probe is None else {k: float(v) for k, v in probe["scales"].items()},
                    languages={k: LangCalibration(float(v["a"]), float(v["b"]), float(v["threshold"]))
                               for k, v in d.get("languages", {}).items()},
                )

            model = head(data)
            nbr = data.get("neighbours")
            if nbr is not None:
                model.neighbours = {"files": [str(f) for f in nbr["files"]], "sha256_16": str(nbr["sha256_16"])}
                model.without_neighbours = head(nbr["without"]) if "without" in nbr else None
            return model
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise AnchorPackError(f"calibration {path}: bad or missing field {exc}", "retrain with `compass-hook anchors train`") from None


def safe_model_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "model"


def load_calibration(path: Path) -> LogisticModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnchorPackError(f"calibration {path}: cannot read: {exc}", "retrain with `compass-hook anchors train`") from None
    return LogisticModel.from_json(data, path)
