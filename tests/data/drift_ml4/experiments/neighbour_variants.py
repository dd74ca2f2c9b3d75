"""Experiment (docs/drift.md, round 12): how the nearest-dev-item summary enters the final logistic, judged on dev
cross-validation per language and on the two check sets, before the held-out sets are run.

    .venv/bin/python tests/data/drift_ml4/experiments/neighbour_variants.py

Variants: none (round 11's method); the six summary features shared by all languages; the same computed among the
prompt's language's dev items only; the six shared plus a copy per language (``neighbours.columns``: shipped).
About 10 minutes and 13 GB here. Not part of the product or the test suite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
from compass_hooks.core import Core  # noqa: E402
from compass_hooks.drift import neighbours as nb  # noqa: E402
from compass_hooks.drift import pack as pm  # noqa: E402
from compass_hooks.drift import train as tr  # noqa: E402
from compass_hooks.drift.features import AnchorIndex  # noqa: E402
from compass_hooks.embedding import get_embedder  # noqa: E402
from compass_hooks.learn.linear import fit_logistic, rates, roc_auc, sigmoid  # noqa: E402

CHECKS = {"check": ROOT / "tests/data/drift_fresh/fresh.jsonl", "check_r11": ROOT / "tests/data/drift_fresh/check_r11.jsonl"}
VARIANTS = ("none", "shared", "same_language", "per_language")


def main() -> None:
    core = Core()
    embedder = get_embedder("minilm", core.config)
    anchors = pm.load_anchors([pm.resolve_pack(n, core.paths) for n in core.config.get("drift", "packs")
                               if n != pm.USER_PACK])
    dev = [it for p in tr.DEV_SETS for it in tr.load_labelled(p)]
    checks = {n: tr.load_labelled(p) for n, p in CHECKS.items()}
    items = dev + [it for rows in checks.values() for it in rows]
    vectors = embedder.embed([a.text for a in anchors] + [it["text"] for it in items])
    index = AnchorIndex(anchors, vectors[:len(anchors)])
    # One kernel over dev and check items; the check items never join a fit.
    prep = tr.Prepared(embedder, index, items, int(core.config.get("drift", "top_k")), vectors=vectors[len(anchors):])
    n, nd = len(items), len(dev)
    dev_idx, check_idx = np.arange(nd), np.arange(nd, n)
    y, langs = prep.y, np.asarray(prep.langs)
    fold_sets = [[dev_idx[f] for f in tr.group_folds(y[:nd], prep.groups[:nd], tr.FOLDS, tr.SEED + r)]
                 for r in range(tr.REPEATS)]
    K = prep.solver().K
    y_all = np.concatenate([y, prep.y_a])
    fit_rows = np.concatenate([dev_idx, np.arange(n, len(y_all))])
    alpha, probe_b = prep.solver().fit(fit_rows, y_all[fit_rows])
    probe_check = K[np.ix_(check_idx, fit_rows)] @ alpha + probe_b
    prep.neighbour_features(dev_idx[:1], dev_idx[1:2])  # builds the dense n-gram cosines once
    sim = prep._nbr_sim

    def summary(rows: np.ndarray, among: np.ndarray, same_language: bool) -> np.ndarray:
        if not same_language:
            return nb.summarise(sim[np.ix_(rows, among)], y[among])
        out = np.zeros((len(rows), len(nb.SUMMARY)))
        for lang in set(langs[rows]):
            r, a = rows[langs[rows] == lang], among[langs[among] == lang]
            out[langs[rows] == lang] = nb.summarise(sim[np.ix_(r, a if len(a) else among)], y[a if len(a) else among])
        return out

    def extra(variant: str, rows: np.ndarray, among: np.ndarray) -> np.ndarray:
        s = summary(rows, among, variant == "same_language")
        return nb.columns(s, langs[rows]) if variant == "per_language" else s

    base = [prep.cross_validate(folds=f, within=dev_idx, neighbours=False)["X"][:nd] for f in fold_sets]
    for variant in VARIANTS:
        logits, first_X = [], None
        for folds, Xb in zip(fold_sets, base):
            X = Xb
            if variant != "none":
                cols = np.zeros((nd, len(nb.FEATURES) if variant == "per_language" else len(nb.SUMMARY)))
                for f in folds:
                    cols[f] = extra(variant, f, np.setdiff1d(dev_idx, f))
                X = np.column_stack([Xb, cols])
            first_X = X if first_X is None else first_X
            logit = np.zeros(nd)
            for f in folds:
                rest = np.setdiff1d(dev_idx, f)
                mean, scale, coef, bias = fit_logistic(X[rest], y[rest], tr.L2)
                logit[f] = ((X[f] - mean) / scale) @ coef + bias
            logits.append(logit)
        shared, cal, q, alerts = tr.calibrate_languages(langs[:nd], y[:nd], np.array(logits), prep.rule_hit[:nd],
                                                        tr.TARGET_FPR)
        fig = tr.figures(dev, q, alerts)
        out: dict = {"dev": [fig["auc"], fig["tpr"], fig["fpr"]],
                     "dev_auc_by_language": {k: b["auc"] for k, b in fig["by_language"].items()}}
        XC = np.column_stack([prep.feats["X"][check_idx], probe_check])
        if variant != "none":
            XC = np.column_stack([XC, extra(variant, check_idx, dev_idx)])
        mean, scale, coef, bias = fit_logistic(first_X, y[:nd], tr.L2)
        z = ((XC - mean) / scale) @ coef + bias
        p, alert = np.zeros(len(check_idx)), np.zeros(len(check_idx), bool)
        for j, i in enumerate(check_idx):
            c = cal.get(str(langs[i]))
            p[j] = float(sigmoid(np.array(c.a * z[j] + c.b if c else z[j])))
            alert[j] = bool(prep.rule_hit[i]) or p[j] >= (c.threshold if c else shared)
        start = 0
        for name in checks:
            m = np.arange(start, start + len(checks[name]))
            start += len(m)
            yy, lg, r = y[check_idx][m], langs[check_idx][m], rates(y[check_idx][m], alert[m])
            out[name] = [round(roc_auc(yy, p[m]), 4), round(r["tpr"], 3), round(r["fpr"], 3),
                         {k: round(roc_auc(yy[lg == k], p[m][lg == k]), 3) for k in ("zh", "ja", "en")}]
        print(variant, json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
