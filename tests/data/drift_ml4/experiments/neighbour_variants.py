"""Experiment (docs/drift.md, round 12's second table): how the nearest-dev-item summary enters the final logistic,
judged on dev cross-validation per language and on the two check sets, before the held-out sets are run.

    .venv/bin/python tests/data/drift_ml4/experiments/neighbour_variants.py

Variants: none (round 11's method); the six summary features shared by all languages; the same computed among the
prompt's language's dev items only; the six shared plus a copy per language (``neighbours.columns``: shipped).
About 12 minutes and 13 GB here. Not part of the product or the test suite.
"""

from __future__ import annotations

import json

import numpy as np
from _setup import CHECKS, evaluate, prepare, report

from compass_hooks.drift import neighbours as nb

VARIANTS = ("none", "shared", "same_language", "per_language")


def main() -> None:
    s = prepare(CHECKS)
    y, langs = s.y, s.langs
    s.prep.neighbour_features(s.dev_idx[:1], s.dev_idx[1:2])  # builds the dense n-gram cosines once
    sim = s.prep._nbr_sim

    def summary(rows: np.ndarray, among: np.ndarray, same_language: bool) -> np.ndarray:
        if not same_language:
            return nb.summarise(sim[np.ix_(rows, among)], y[among])
        out = np.zeros((len(rows), len(nb.SUMMARY)))
        for lang in set(langs[rows]):
            r, a = rows[langs[rows] == lang], among[langs[among] == lang]
            a = a if len(a) else among
            out[langs[rows] == lang] = nb.summarise(sim[np.ix_(r, a)], y[a])
        return out

    def columns(variant: str):
        if variant == "none":
            return None
        if variant == "per_language":
            return lambda rows, among: nb.columns(summary(rows, among, False), langs[rows])
        return lambda rows, among: summary(rows, among, variant == "same_language")

    for variant in VARIANTS:
        print(variant, json.dumps(report(*evaluate(s, columns(variant)))), flush=True)


if __name__ == "__main__":
    main()
