"""Figures for ``compass-hook eval drift`` and the tests: ROC AUC, TPR/FPR at the shipped thresholds (each
language's own), per language and per category (kind), and the confusions: the on-track prompts that alerted
and the drift prompts that did not, with their scores. The metrics themselves (``roc_auc``, ``rates``) are the
product's: training chooses its thresholds with them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compass_hooks.drift.model import rates, roc_auc

N_CONFUSIONS = 10


def _r(x: float) -> float | None:
    return None if x != x else round(float(x), 4)  # nan -> None (JSON-safe)


def summarize(items: list[dict[str, Any]], results: list[dict[str, Any]], n_confusions: int = N_CONFUSIONS) -> dict[str, Any]:
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
    others = {0: [i for i in everything if y[i] == 1], 1: [i for i in everything if y[i] == 0]}
    cats = {}
    for (cat, label), idx in sorted(by_cat.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
        key = cat if cat not in cats else f"{cat}[{label}]"
        aa = [a[i] for i in idx]
        # AUC of the category against every item of the other class: how well this kind is told apart.
        vs = idx + others[label]
        cats[key] = {"label": label, "n": len(idx), "alert_rate": _r(sum(aa) / len(idx)),
                     "mean_probability": _r(sum(p[i] for i in idx) / len(idx)),
                     "auc": _r(roc_auc([y[i] for i in vs], [p[i] for i in vs]))}

    def example(i: int) -> dict[str, Any]:
        r = results[i]
        return {"text": items[i]["text"], "probability": p[i], "threshold": r.get("threshold"), "rule": r.get("rule"),
                "lang": items[i].get("lang"), "category": items[i].get("category")}

    fps = sorted((i for i in everything if a[i] and not y[i]), key=lambda i: -p[i])
    fns = sorted((i for i in everything if y[i] and not a[i]), key=lambda i: p[i])
    return {"overall": block(everything), "by_language": {k: block(v) for k, v in sorted(by_lang.items())},
            "by_category": cats,
            "confusions": {"false_positives": [example(i) for i in fps[:n_confusions]],
                           "false_negatives": [example(i) for i in fns[:n_confusions]]}}


def format_summary(summary: dict[str, Any], threshold: float | None = None) -> str:
    o = summary["overall"]
    lines = [f"items {o['n']} (drift {o['n_drift']}, on-track {o['n_on_track']})" + (f"  threshold {threshold:.4f}" if threshold is not None else ""),
             f"ROC AUC {o['auc']}   TPR {o['tpr']}   FPR {o['fpr']}   alerts {o['alerts']}", "", "by language:"]
    for lang, b in summary["by_language"].items():
        lines.append(f"  {lang:<4} n={b['n']:<4} AUC {b['auc']}  TPR {b['tpr']}  FPR {b['fpr']}")
    lines += ["", "by category (label 1 = drift: alert rate is TPR; label 0: alert rate is FPR; AUC against the other class):"]
    for cat, b in summary["by_category"].items():
        lines.append(f"  {cat:<24} label {b['label']}  n={b['n']:<4} alert rate {b['alert_rate']}  AUC {b['auc']}  mean p {b['mean_probability']}")
    conf = summary.get("confusions") or {}
    for key, title in (("false_positives", "top false positives (on track, alerted)"), ("false_negatives", "top false negatives (drift, no alert)")):
        rows = conf.get(key) or []
        if rows:
            lines += ["", f"{title}:"]
            for e in rows:
                extra = f" rule {e['rule']}" if e.get("rule") else ""
                lines.append(f"  p {e['probability']:.3f} / t {e['threshold']} [{e['lang']}, {e['category']}]{extra}: {' '.join(e['text'].split())[:140]}")
    return "\n".join(lines)
