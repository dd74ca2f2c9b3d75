"""Pieces of the drift trainer that decide the thresholds: near-duplicate fold groups, pooled fold assignments,
thresholds pulled up towards the shared one (docs/drift.md, "Calibration and threshold")."""

from __future__ import annotations

import numpy as np

from compass_hooks.drift.model import rates
from compass_hooks.drift.train import calibrate_languages, figures, near_duplicate_groups


def test_near_duplicates_share_a_group_within_a_language_only():
    groups = ["a", "b", "c", "c", "d"]
    k = np.eye(5)
    k[0, 1] = k[1, 0] = 0.7  # a near duplicate of b, same language: merged
    k[0, 4] = k[4, 0] = 0.9  # the same text in another language: not merged
    out = near_duplicate_groups(groups, k, ["en", "en", "zh", "zh", "zh"], near=0.6)
    assert out[0] == out[1] and out[2] == out[3]
    assert len({out[0], out[2], out[4]}) == 3
    assert near_duplicate_groups(groups, k, ["en"] * 5, near=0.95) == groups  # below the bar: scenario groups only


def _data(seed: int = 0, n: int = 400):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    langs = np.array(["en"] * (n // 2) + ["zh"] * (n // 2))
    # zh's negatives are easy (low logits): its own threshold would come out below the shared one
    logit = rng.normal(0, 1, n) + np.where(y == 1, 2.5, np.where(langs == "zh", -1.5, 0.0))
    return y, langs, logit


def test_thresholds_pooled_over_assignments_and_pulled_up_only():
    y, langs, logit = _data()
    rule = np.zeros(len(y), dtype=bool)
    repeats = np.vstack([logit, logit + np.random.default_rng(1).normal(0, 0.1, len(y))])
    shared, cal, q, alerts = calibrate_languages(langs, y, repeats, rule, 0.02, shrink=0.0)
    _, cal_pulled, q2, alerts2 = calibrate_languages(langs, y, repeats, rule, 0.02, shrink=1e9)
    assert q.shape == alerts.shape == (2 * len(y),)  # pooled
    for lang in ("en", "zh"):
        # pulled towards the shared one only when below it, never below the language's own
        assert cal_pulled[lang].threshold >= cal[lang].threshold - 1e-12
        m = np.tile(langs == lang, 2)
        assert rates(np.tile(y, 2)[m], alerts2[m])["fpr"] <= 0.02 + 1e-9
    assert cal["zh"].threshold < shared - 0.01 and abs(cal_pulled["zh"].threshold - shared) < 1e-6


def test_figures_count_items_once_when_pooled():
    items = [{"label": i % 2, "lang": "en"} for i in range(10)]
    probs = np.tile(np.linspace(0, 1, 10), 3)
    out = figures(items, probs, probs >= 0.5)
    assert out["n"] == 10 and out["by_language"]["en"]["n"] == 10
