"""Experiment (docs/drift.md, round 12's first table): the shipped method with and without six features from each
prompt's nearest dev items under the probe's own kernel (top-1 and mean top-5 cosine to drift and to on-track
items, and their differences; out of fold on dev), thresholds set by the shipped rule, judged on the two check sets.

    .venv/bin/python tests/data/drift_ml4/experiments/neighbours.py [--ngrams-only] [--also FILE ...]

About 9 minutes and 12 GB here. Not part of the product or the test suite. ``--also`` scores more labelled files the
same way (the held-out sets, once, when the check sets say a variant is worth it): aggregates only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from _setup import CHECKS, evaluate, prepare

from compass_hooks.drift.neighbours import summarise
from compass_hooks.drift.probe import SCALES
from compass_hooks.learn.linear import rates, roc_auc, threshold_for_fpr


def check_figures(y: np.ndarray, p: np.ndarray, alert: np.ndarray, rule_hit: np.ndarray, langs: np.ndarray) -> dict:
    r = rates(y, alert)
    s = np.where(rule_hit, 1.0, p)
    return {"auc": round(roc_auc(y, p), 4), "tpr": round(r["tpr"], 3), "fpr": round(r["fpr"], 3),
            "tpr_at_own_fpr_0.02": round(float((s[y == 1] >= threshold_for_fpr(y, s, 0.02)).mean()), 3),
            "by_language": {str(lg): round(roc_auc(y[langs == lg], p[langs == lg]), 3) for lg in sorted(set(langs))}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--also", type=Path, nargs="*", default=[])
    ap.add_argument("--ngrams-only", action="store_true",
                    help="neighbours under the n-gram blocks of the kernel alone (no embedding block): no dev "
                         "embeddings needed at scoring time")
    args = ap.parse_args()
    s = prepare({**CHECKS, **{p.stem: p for p in args.also}})
    n = len(s.y)
    K = s.prep.kernel({**SCALES, "embed": 0.0}) if args.ngrams_only else s.prep.solver().K
    norm = np.sqrt(np.diag(K)[:n])

    def neighbours(rows: np.ndarray, among: np.ndarray) -> np.ndarray:
        return summarise(K[np.ix_(rows, among)] / norm[rows][:, None] / norm[among][None, :], s.y[among])

    for variant, extra in (("shipped method", None), ("+ neighbours", neighbours)):
        dev, checks = evaluate(s, extra)
        out = {"dev": {k: dev[k] for k in ("auc", "tpr", "fpr")}}
        out.update({name: check_figures(c["y"], c["p"], c["alert"], c["rule_hit"], c["langs"])
                    for name, c in checks.items()})
        print(variant, json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
