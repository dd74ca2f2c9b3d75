"""The calibrated scorer: L2-regularised logistic regression over the drift
features, fitted by Newton's method (IRLS; deterministic, in :mod:`compass_hooks.learn.linear`), plus the
metrics the trainer and ``eval drift`` report. numpy only."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import AnchorPackError
# The fitting, folds, thresholds and metrics are shared with memory's standing-instruction detector; they are
# re-exported here because the trainer, ``eval drift`` and the tests import them from this module.
from ..learn.linear import (fit_logistic, rates, roc_auc, sigmoid, stratified_folds,  # noqa: F401
                            threshold_for_fpr)

CALIBRATION_SCHEMA = 1


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


def safe_model_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "model"


def load_calibration(path: Path) -> LogisticModel:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnchorPackError(f"calibration {path}: cannot read: {exc}", "retrain with `compass-hook anchors train`") from None
    return LogisticModel.from_json(data, path)
