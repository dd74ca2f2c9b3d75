"""Reproducible training of the calibration: ``compass-hook anchors train``.

Steps (all deterministic): embed the dev set and the anchors; build features;
5-fold stratified cross-validation (seed 0) gives out-of-fold probabilities for
every dev item; the alert threshold is the lowest one whose out-of-fold
false-alarm rate is <= ``target_fpr`` (default 0.03, below the 0.05 budget to
leave a margin for new text); then the final model is fitted on the whole dev
set. The held-out test split (tests/data/drift_test.jsonl, not shipped) is
never read here.

The dev set ships inside the package (``drift/data/drift_dev.jsonl``, package
data): ``anchors train`` and ``anchors tune`` read it at run time, and an
installed wheel holds the package, not the repository's tests/.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInput
from .features import FEATURE_NAMES, AnchorIndex, build_features
from .probe import design, fit_probe, probe_scores
from .model import LogisticModel, fit_logistic, rates, roc_auc, safe_model_name, stratified_folds, threshold_for_fpr

DEV_SET = Path(__file__).resolve().parent / "data" / "drift_dev.jsonl"
SEED = 0
FOLDS = 5
L2 = 10.0  # chosen by dev cross-validation (1-20 tried; AUC flat from 5 up, fewer rule-statement alerts than 20)
TARGET_FPR = 0.03


def load_labelled(path: Path) -> list[dict[str, Any]]:
    """JSONL ``{"text","label"[,"category","lang"]}`` or the shared set's
    ``{"items": [{"label": "aligned"|"deviation", "prompt"}]}``."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    items: list[dict[str, Any]] = []
    stripped = raw.lstrip()
    if stripped.startswith("{") and '"items"' in stripped[:2000]:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("items"), list):
            for i, it in enumerate(data["items"]):
                label = it.get("label")
                if label not in ("aligned", "deviation") or not isinstance(it.get("prompt"), str):
                    raise InvalidInput(f"{path}: items[{i}] needs label aligned|deviation and a prompt")
                items.append({"text": it["prompt"], "label": int(label == "deviation"),
                              "category": it.get("category") or label, "lang": it.get("lang")})
            return _fill_lang(items)
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise InvalidInput(f"{path}:{n}: not JSON") from None
        label = row.get("label")
        if label in ("aligned", "deviation"):
            label = int(label == "deviation")
        if not isinstance(row.get("text"), str) or label not in (0, 1, True, False):
            raise InvalidInput(f"{path}:{n}: needs a string 'text' and 'label' 0|1")
        items.append({"text": row["text"], "label": int(label), "category": row.get("category"), "lang": row.get("lang")})
    return _fill_lang(items)


def _fill_lang(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from .features import is_zh

    for it in items:
        if not it.get("lang"):
            it["lang"] = "zh" if is_zh(it["text"]) else "en"
    return items


def train_calibration(embedder: Any, index: AnchorIndex, items: list[dict[str, Any]], top_k: int = 3,
                      target_fpr: float = TARGET_FPR, source: str = DEV_SET.name, vectors: np.ndarray | None = None) -> LogisticModel:
    texts = [it["text"] for it in items]
    y = np.array([it["label"] for it in items])
    if vectors is None:
        vectors = embedder.embed(texts)
    base = build_features(texts, vectors, index, top_k)["X"]
    folds = stratified_folds(y, FOLDS, SEED)
    # Stacking: the probe column of the dev matrix is out-of-fold (same folds as
    # the threshold's cross-validation), so the logistic learns how far to trust
    # the probe on text it has not seen.
    # The anchors are labelled examples too (negative polarity = drift): they join
    # every probe fit, which helps most where the dev set is thin.
    Phi = design(texts, vectors)
    Phi_a = design([a.text for a in index.anchors], index.vectors)
    y_a = np.array([a.polarity == "negative" for a in index.anchors], dtype=int)
    probe_oof = np.zeros(len(y))
    for fold in folds:
        train = np.setdiff1d(np.arange(len(y)), fold)
        w, b = fit_probe(np.vstack([Phi[train], Phi_a]), np.concatenate([y[train], y_a]))
        probe_oof[fold] = probe_scores(Phi[fold], w, b)
    X = np.column_stack([base, probe_oof])
    names = list(FEATURE_NAMES) + ["probe"]
    oof = np.zeros(len(y))
    for fold in folds:
        train = np.setdiff1d(np.arange(len(y)), fold)
        mean, scale, coef, bias = fit_logistic(X[train], y[train], L2)
        oof[fold] = LogisticModel(names, mean, scale, coef, bias).predict_proba(X[fold])
    threshold = threshold_for_fpr(y, oof, target_fpr)
    mean, scale, coef, bias = fit_logistic(X, y, L2)
    probe_w, probe_b = fit_probe(np.vstack([Phi, Phi_a]), np.concatenate([y, y_a]))
    model = LogisticModel(names, mean, scale, coef, bias, threshold, probe_w=probe_w, probe_b=probe_b)
    fitted = model.predict_proba(model.features_for(texts, vectors, base))
    cv_rates = rates(y, oof >= threshold)
    digest = hashlib.sha256("\n".join(f"{t}\t{l}" for t, l in zip(texts, y)).encode()).hexdigest()[:16]
    model.meta = {
        "model": embedder.name,
        "top_k": top_k,
        "anchors": len(index.anchors),
        "anchor_ids_sha": hashlib.sha256("\n".join(sorted(a.id for a in index.anchors)).encode()).hexdigest()[:16],
        "trained_on": {"file": source, "items": len(items), "sha256_16": digest},
        "method": f"L2 logistic regression (IRLS, l2={L2}) over anchor/lexical features + an out-of-fold ridge text probe (dev + anchor texts); threshold = lowest with {FOLDS}-fold out-of-fold "
                  f"FPR <= {target_fpr} (seed {SEED})",
        "dev": {
            "cv_auc": round(roc_auc(y, oof), 4),
            "cv_tpr": round(cv_rates["tpr"], 4),
            "cv_fpr": round(cv_rates["fpr"], 4),
            "fit_auc": round(roc_auc(y, fitted), 4),
            "raw_drift_auc": round(roc_auc(y, build_features(texts, vectors, index, top_k)["drift"]), 4),
            "probe_cv_auc": round(roc_auc(y, probe_oof), 4),
        },
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
    }
    return model


def calibration_path(folder: Path, model_name: str) -> Path:
    return folder / f"{safe_model_name(model_name)}.json"


def write_calibration(model: LogisticModel, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(model.to_json(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
