"""Figures for ``compass-hook eval drift`` and the tests: ROC AUC, TPR/FPR at
the default threshold, per category and per language. The metrics themselves
(``roc_auc``, ``rates``) are the product's: training chooses its threshold with them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compass_hooks.drift.model import rates, roc_auc


def _r(x: float) -> float | None:
    return None if x != x else round(float(x), 4)  # nan -> None (JSON-safe)


def summarize(items: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    y = [int(it["label"]) for it in items]
    p = [float(r["probability"]) for r in results]
    a = [bool(r["alert"]) for r in results]

    def block(idx: list[int]) -> dict[str, Any]:
        yy, pp, aa = [y[i] for i in idx], [p[i] for i in idx], [a[i] for i in idx]
        rt = rates(yy, aa)
        return {"n": len(idx), "n_drift": rt["n_pos"], "n_on_track": rt["n_neg"], "auc": _r(roc_auc(yy, pp)),
                "tpr": _r(rt["tpr"]), "fpr": _r(rt["fpr"]), "alerts": sum(aa)}

    everything = list(range(len(items)))
    by_lang, by_cat = defaultdict(list), defaultdict(list)
    for i, it in enumerate(items):
        by_lang[it.get("lang") or "?"].append(i)
        by_cat[(it.get("category") or ("drift" if y[i] else "on_track"), y[i])].append(i)
    cats = {}
    for (cat, label), idx in sorted(by_cat.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
        key = cat if cat not in cats else f"{cat}[{label}]"
        aa = [a[i] for i in idx]
        cats[key] = {"label": label, "n": len(idx), "alert_rate": _r(sum(aa) / len(idx)),
                     "mean_probability": _r(sum(p[i] for i in idx) / len(idx))}
    return {"overall": block(everything), "by_language": {k: block(v) for k, v in sorted(by_lang.items())},
            "by_category": cats}


def format_summary(summary: dict[str, Any], threshold: float | None = None) -> str:
    o = summary["overall"]
    lines = [f"items {o['n']} (drift {o['n_drift']}, on-track {o['n_on_track']})" + (f"  threshold {threshold:.4f}" if threshold is not None else ""),
             f"ROC AUC {o['auc']}   TPR {o['tpr']}   FPR {o['fpr']}   alerts {o['alerts']}", "", "by language:"]
    for lang, b in summary["by_language"].items():
        lines.append(f"  {lang:<4} n={b['n']:<4} AUC {b['auc']}  TPR {b['tpr']}  FPR {b['fpr']}")
    lines += ["", "by category (label 1 = drift: alert rate is TPR; label 0: alert rate is FPR):"]
    for cat, b in summary["by_category"].items():
        lines.append(f"  {cat:<24} label {b['label']}  n={b['n']:<4} alert rate {b['alert_rate']}  mean p {b['mean_probability']}")
    return "\n".join(lines)
