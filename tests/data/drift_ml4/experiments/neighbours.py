"""Experiment (docs/drift.md, "Neighbour features again"): the shipped method with and without six features from
each prompt's nearest dev items under the probe's own kernel (top-1 and mean top-5 cosine to drift and to on-track
items, and their differences; out of fold on dev), thresholds set by the shipped rule, judged on the two check sets.

    .venv/bin/python tests/data/drift_ml4/experiments/neighbours.py [--also FILE ...]

About 9 minutes and 12 GB here. Not part of the product or the test suite. ``--also`` scores more labelled files the
same way (the held-out sets, once, when the check sets say a variant is worth it): aggregates only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
from compass_hooks.core import Core  # noqa: E402
from compass_hooks.drift import pack as pm  # noqa: E402
from compass_hooks.drift import train as tr  # noqa: E402
from compass_hooks.drift.features import AnchorIndex  # noqa: E402
from compass_hooks.embedding import get_embedder  # noqa: E402
from compass_hooks.drift.probe import SCALES  # noqa: E402
from compass_hooks.learn.linear import fit_logistic, rates, roc_auc, sigmoid  # noqa: E402

CHECKS = {"fresh": ROOT / "tests/data/drift_fresh/fresh.jsonl", "check_r11": ROOT / "tests/data/drift_fresh/check_r11.jsonl"}


def neighbours(K: np.ndarray, norm: np.ndarray, y: np.ndarray, rows: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Per row: top-1 and mean top-5 cosine to the drift and to the on-track items of ``train``, and the two
    differences."""
    sim = K[np.ix_(rows, train)] / norm[rows][:, None] / norm[train][None, :]
    cols = []
    for label in (1, 0):
        s = -np.sort(-sim[:, y[train] == label], axis=1)
        cols += [s[:, 0], s[:, :5].mean(1)]
    f = np.column_stack(cols)
    return np.column_stack([f, f[:, 0] - f[:, 2], f[:, 1] - f[:, 3]])


def check_figures(y: np.ndarray, p: np.ndarray, alerts: np.ndarray, rule_hit: np.ndarray, langs: np.ndarray) -> dict:
    r = rates(y, alerts)
    s = np.where(rule_hit, 1.0, p)
    bar = np.sort(s[y == 0])[::-1][int(0.02 * (y == 0).sum())]
    return {"auc": round(roc_auc(y, p), 4), "tpr": round(r["tpr"], 3), "fpr": round(r["fpr"], 3),
            "tpr_at_own_fpr_0.02": round(float((s[y == 1] > bar).mean()), 3),
            "by_language": {str(lg): round(roc_auc(y[langs == lg], p[langs == lg]), 3) for lg in sorted(set(langs))}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--also", type=Path, nargs="*", default=[])
    ap.add_argument("--ngrams-only", action="store_true",
                    help="neighbours under the n-gram blocks of the kernel alone (no embedding block): no dev "
                         "embeddings needed at scoring time")
    args = ap.parse_args()
    files = {**CHECKS, **{p.stem: p for p in args.also}}
    core = Core()
    embedder = get_embedder("minilm", core.config)
    anchors = pm.load_anchors([pm.resolve_pack(n, core.paths) for n in core.config.get("drift", "packs")
                               if n != pm.USER_PACK])
    dev = [it for p in tr.DEV_SETS for it in tr.load_labelled(p)]
    checks = {n: tr.load_labelled(p) for n, p in files.items()}
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
    NK = prep.kernel({**SCALES, "embed": 0.0}) if args.ngrams_only else K
    norm = np.sqrt(np.diag(NK)[:n])
    y_all = np.concatenate([y, prep.y_a])
    fit_rows = np.concatenate([dev_idx, np.arange(n, len(y_all))])
    alpha, probe_b = prep.solver().fit(fit_rows, y_all[fit_rows])
    probe_check = K[np.ix_(check_idx, fit_rows)] @ alpha + probe_b
    for variant in ("shipped method", "+ neighbours"):
        logits, first_X = [], None
        for folds in fold_sets:
            X = prep.cross_validate(folds=folds, within=dev_idx)["X"][:nd]
            if variant != "shipped method":
                nb = np.zeros((nd, 6))
                for f in folds:
                    nb[f] = neighbours(NK, norm, y, f, np.setdiff1d(dev_idx, f))
                X = np.column_stack([X, nb])
            first_X = X if first_X is None else first_X
            logit = np.zeros(nd)
            for f in folds:
                rest = np.setdiff1d(dev_idx, f)
                mean, scale, coef, bias = fit_logistic(X[rest], y[rest], tr.L2)
                logit[f] = ((X[f] - mean) / scale) @ coef + bias
            logits.append(logit)
        shared, cal, q, alerts = tr.calibrate_languages(langs[:nd], y[:nd], np.array(logits), prep.rule_hit[:nd],
                                                        tr.TARGET_FPR)
        dev_fig = tr.figures(dev, q, alerts)
        out = {"dev": {k: dev_fig[k] for k in ("auc", "tpr", "fpr")}}
        XC = np.column_stack([prep.feats["X"][check_idx], probe_check])
        if variant != "shipped method":
            XC = np.column_stack([XC, neighbours(NK, norm, y, check_idx, dev_idx)])
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
            out[name] = check_figures(y[check_idx][m], p[m], alert[m], prep.rule_hit[check_idx][m],
                                      langs[check_idx][m])
        print(variant, json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
