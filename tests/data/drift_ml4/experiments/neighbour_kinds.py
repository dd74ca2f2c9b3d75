"""Experiment: more from the nearest dev items than round 12's summary, judged on dev cross-validation and the two
check sets before the held-out sets are run.

    .venv/bin/python tests/data/drift_ml4/experiments/neighbour_kinds.py

Variants on top of the shipped columns (``neighbours.columns``): ``kinds``, the top-1 cosine to the items of each
category (what a prompt is nearest to: a hard negative or an ordinary task, sycophancy or a secret); ``vote``, a
softmax-weighted share of drift among the 20 nearest items at two temperatures and the drift share of the 10 nearest.
"""

from __future__ import annotations

import json

import numpy as np
from _setup import CHECKS, evaluate, prepare, report, shipped_columns


def main() -> None:
    s = prepare(CHECKS)
    y, shipped = s.y, shipped_columns(s)
    sim = s.prep._nbr_sim
    cats = np.array([str(it.get("category")) for it in s.prep.items])
    kinds = sorted(set(cats[s.dev_idx]))

    def kind_cols(rows, among):
        block = sim[np.ix_(rows, among)]
        return np.column_stack([block[:, cats[among] == k].max(1) for k in kinds])

    def vote_cols(rows, among):
        block = sim[np.ix_(rows, among)]
        top = np.argpartition(-block, 20, axis=1)[:, :20]
        s20 = np.take_along_axis(block, top, 1)
        order = np.argsort(-s20, 1)
        top, s20 = np.take_along_axis(top, order, 1), np.take_along_axis(s20, order, 1)
        lab = y[among][top].astype(float)
        out = [lab[:, :10].mean(1)]
        for beta in (10.0, 40.0):
            w = np.exp(beta * (s20 - s20[:, :1]))
            out.append((w * lab).sum(1) / w.sum(1))
        return np.column_stack(out)

    variants = {
        "shipped": shipped,
        "kinds": lambda r, a: np.column_stack([shipped(r, a), kind_cols(r, a)]),
        "vote": lambda r, a: np.column_stack([shipped(r, a), vote_cols(r, a)]),
        "both": lambda r, a: np.column_stack([shipped(r, a), kind_cols(r, a), vote_cols(r, a)]),
    }
    for name, extra in variants.items():
        print(name, json.dumps(report(*evaluate(s, extra))), flush=True)


if __name__ == "__main__":
    main()
