"""``compass-hook anchors tune``: re-weight anchors from fp/tp feedback, gated
by dev-set ROC AUCs computed *with the new weights*: through the calibration
(what scoring uses) and of the raw anchor drift; neither may drop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import history
from .features import build_features
from .model import roc_auc
from .scorer import get_state
from .train import load_dev

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike

FP_FACTOR = 0.8  # a false alarm makes its nearest drift anchors count less
TP_FACTOR = 1.1
MIN_W, MAX_W = 0.1, 5.0


def propose_weights(current: dict[str, float], alerts: list[dict[str, Any]]) -> dict[str, float]:
    new = dict(current)
    for alert in alerts:
        factor = FP_FACTOR if alert["feedback"] == "fp" else TP_FACTOR
        for a in alert.get("anchors", []):
            if a.get("polarity") == "negative" and a["id"] in new:
                new[a["id"]] = float(min(MAX_W, max(MIN_W, new[a["id"]] * factor)))
    return new


def dev_auc(core: CoreLike, index, items: list[dict[str, Any]], vectors: np.ndarray) -> tuple[float, float]:
    """(calibrated AUC, raw anchor-drift AUC) on the dev set with these weights.

    The calibrated model was fitted on the dev set, so its AUC there is close to
    1 and barely moves; the raw weighted top-k drift (negative - positive) is not
    fitted and is what anchor weights change directly. The gate needs both."""
    state = get_state(core)
    texts, y = [it["text"] for it in items], [it["label"] for it in items]
    model = state.model().head(False)  # a dev item is its own nearest neighbour: those features mean nothing here
    feats = build_features(texts, vectors, index, int(core.config.get("drift", "top_k")),
                           languages=state.embedding_languages(model))
    X = model.features_for(texts, vectors, feats)
    return roc_auc(y, model.predict_proba(X, feats["langs"])), roc_auc(y, feats["drift"])


def tune(core: CoreLike, apply: bool = True) -> dict[str, Any]:
    alerts = history.list_alerts(core.store, limit=0, with_feedback=True)
    snap = get_state(core).snapshot()
    index = snap.index
    current = {a.id: a.weight for a in index.anchors}
    proposed = propose_weights(current, alerts)
    changed = {k: v for k, v in proposed.items() if abs(v - current[k]) > 1e-12}
    items = load_dev()
    vectors = core.embedder.embed([it["text"] for it in items])
    before = dev_auc(core, index, items, vectors)
    after = dev_auc(core, index.with_weights(proposed), items, vectors) if changed else before
    fps = [a for a in alerts if a["feedback"] == "fp"]
    ok = after[0] >= before[0] - 1e-9 and after[1] >= before[1] - 1e-9
    out = {"feedback": len(alerts), "false_positives": len(fps), "changed": changed,
           "dev_auc_before": round(before[0], 4), "dev_auc_after": round(after[0], 4),
           "dev_raw_auc_before": round(before[1], 4), "dev_raw_auc_after": round(after[1], 4),
           "proposed_anchors": [{"text": a["text"][:200], "polarity": "positive", "category": "ordinary_task"} for a in fps[:5]],
           "applied": False}
    if changed and ok and apply:
        from .changes import apply_weights

        path = apply_weights(core, changed, current, {"dev_auc_before": out["dev_auc_before"],
                                                      "dev_auc_after": out["dev_auc_after"]})
        out.update(applied=True, weights_file=path)
    elif changed and not ok:
        out["reason"] = "dev AUC would drop; weights not applied"
    elif not changed:
        out["reason"] = "no feedback touches the current anchors"
    return out
