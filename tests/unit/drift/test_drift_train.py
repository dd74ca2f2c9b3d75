"""Pieces of the drift trainer that decide the thresholds: near-duplicate fold groups, pooled fold assignments,
thresholds pulled up towards the shared one (docs/drift.md, "Calibration and threshold")."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from compass_hooks.drift.model import rates
from compass_hooks.drift.probe import CHAR_DIM, CONCEPT_DIM, HASHED, LOCAL_DIM, WORD_DIM, block_kernel, sparse_rows
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


def test_block_kernels_built_in_column_slices_equal_the_dense_product():
    """Training builds each hashed block's kernel a slice of columns at a time (memory); it must be M @ M.T of the
    dense row-normalised block, whatever the slice width."""
    texts = ["drop the prod table now", "explain what DROP TABLE does", "删掉生产库", "本番のDBを消して", "ok",
             "", "git push --force origin main, no review"]
    langs = ["en", "en", "zh", "ja", "en", "en", "en"]
    rows = sparse_rows(texts, langs, np.zeros((len(texts), 27), bool))
    for k, name in enumerate(HASHED):
        dim = {"char": CHAR_DIM, "word": WORD_DIM, "concept": CONCEPT_DIM, "local": LOCAL_DIM}[name]
        dense = np.zeros((len(rows), dim), np.float32)
        for i, parts in enumerate(rows):
            if parts[k]:
                dense[i, list(parts[k])] = np.float32(1.0 / np.sqrt(len(parts[k])))
        want = dense @ dense.T
        for chunk in (dim, 4096, 1000):
            got = block_kernel(rows, name, chunk=chunk)
            assert got.dtype == np.float32 and got.shape == (len(rows), len(rows))
            assert np.allclose(got, want, atol=1e-6), (name, chunk)
    assert np.allclose(np.diag(block_kernel(rows, "char")), 1.0)  # row-normalised


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


def test_leave_one_file_out_figures_only_when_asked():
    """`anchors train` gives the leave-one-file-out figures with --lofo (default with --shipped): two small dev
    parts through the real trainer with the fake embedder; the calibration fitted is the same either way."""
    from compass_hooks.config import load_config
    from compass_hooks.drift import pack as pm
    from compass_hooks.drift.features import AnchorIndex
    from compass_hooks.drift.train import DEV_SETS, load_labelled, train_calibration
    from compass_hooks.embedding import get_embedder
    from compass_hooks.paths import get_paths

    paths, config = get_paths(), load_config()
    embedder = get_embedder("fake", config)
    anchors = pm.load_anchors([pm.resolve_pack(n, paths) for n in config.get("drift", "packs") if n != pm.USER_PACK])
    index = AnchorIndex(anchors, embedder.embed([a.text for a in anchors]))
    parts = [(rows := load_labelled(p))[:: max(1, len(rows) // 160)] for p in DEV_SETS[:2]]
    items = [it for part in parts for it in part]
    with_lofo = train_calibration(embedder, index, items, file_sizes=[len(p) for p in parts])
    without = train_calibration(embedder, index, items)
    lofo = with_lofo.meta["dev"]["leave_one_file_out"]
    assert len(lofo["by_file"]) == 2 and 0.5 < lofo["auc"] <= 1.0 and 0.0 <= lofo["fpr"] <= 1.0
    assert "leave_one_file_out" not in without.meta["dev"]
    assert np.allclose(with_lofo.coef, without.coef) and with_lofo.threshold == without.threshold


def test_a_calibration_from_before_a_block_size_change_gives_way_to_the_shipped_one(tmp_path, caplog):
    """A user's own calibration trained when the probe had other block sizes cannot be read; the scorer then uses
    the next one (the shipped calibration) and says how to fix it, and with none after it the error stands."""
    from compass_hooks.drift.scorer import first_loadable
    from compass_hooks.errors import AnchorPackError

    FAKE_CALIBRATION = Path(__file__).resolve().parents[2] / "fixtures" / "calibration" / "fake-64.json"

    data = json.loads(FAKE_CALIBRATION.read_text(encoding="utf-8"))
    data["probe"]["char_dim"] = 8192 if data["probe"]["char_dim"] != 8192 else 4096
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(data), encoding="utf-8")
    logger = logging.getLogger("compass.drift")  # it does not propagate (it writes its own log file)
    logger.addHandler(caplog.handler)
    try:
        model = first_loadable([stale, FAKE_CALIBRATION])
    finally:
        logger.removeHandler(caplog.handler)
    assert model.threshold == json.loads(FAKE_CALIBRATION.read_text(encoding="utf-8"))["threshold"]
    assert "block sizes" in caplog.text and "anchors train" in caplog.text and str(FAKE_CALIBRATION) in caplog.text
    with pytest.raises(AnchorPackError, match="block sizes"):
        first_loadable([stale])
    with pytest.raises(AnchorPackError, match="anchors train"):  # none at all (install.sh then retrains)
        first_loadable([])
