"""The shipped MiniLM calibration on the two held-out splits, never used for training or tuning:
tests/data/drift_test.jsonl (the first, 296 EN/ZH prompts) and tests/data/drift_heldout.jsonl (the scenario
split of the multilingual set, 610 prompts in EN, ZH, JA, ES, DE, FR, PT). Embeds each split once per module.

Asserted as measured when the calibration was trained (docs/drift.md, `compass-hook eval drift FILE`), with a
small margin, so a regression fails CI. Issue 16's targets on the new split (AUC >= 0.97 overall and >= 0.95
per language, TPR >= 0.90 at FPR <= 0.02) are met for AUC and FPR since round 8 (round 12: AUC 0.985, every
language >= 0.96, FPR 0.013) but not for recall (TPR 0.80); the figures asserted here are what the model reaches. The
first split keeps AUC >= 0.96 (measured 0.983) as the issue asks. Round 3
lowered the dev target FPR from 0.03 to 0.02 (docs/drift.md): the false-alarm bounds were tightened and the
recall bounds lowered with it (first split TPR 0.764 -> 0.674, new split 0.741 -> 0.649). Round 5's blind-written
dev prompts have harder negatives, which raised every threshold: FPR 0.028 -> 0.016 on the new split, recall
0.649 -> 0.628 there and 0.674 -> 0.583 on the first split. Round 8 (wider probe, fifth blind batch): new split
AUC 0.967 -> 0.977, TPR 0.62 -> 0.71, FPR 0.016 -> 0.006; first split AUC 0.964 -> 0.975, TPR 0.57 -> 0.62.
Round 12 (nearest dev items): new split AUC 0.981 -> 0.985, TPR 0.75 -> 0.80, FPR 0.010 -> 0.013; first split AUC
0.978 -> 0.983, TPR 0.65 -> 0.69, FPR 0 -> 0. The scores are the full model's: a fresh data dir indexes the dev items
in process before scoring (asserted below).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compass_hooks.drift.features import FEATURE_NAMES
from compass_hooks.drift.lang import LANGS
from compass_hooks.drift.neighbours import FEATURES as NEIGHBOUR_FEATURES
from compass_hooks.drift.train import DEV_SET_NAMES
import testdirs

ROOT = testdirs.ROOT
# The dev files every calibration is trained on, in order (test_drift_split checks no held-out split ships).
DEV_FILES = list(DEV_SET_NAMES)
pytestmark = [pytest.mark.model, pytest.mark.slow]  # loads MiniLM, embeds the held-out sets: ~16 s


def _summarize(tmp_path_factory, name: str) -> dict:
    from conftest import as_new_user, link_installed_model

    from compass_eval.drift_report import summarize
    from compass_hooks.config import load_config
    from compass_hooks.core import Core
    from compass_hooks.drift.train import load_labelled
    from compass_hooks.embedding import get_embedder
    from compass_hooks.paths import get_paths

    with pytest.MonkeyPatch.context() as mp:  # module scope: the autouse fresh HOME is not active yet
        data = as_new_user(mp, tmp_path_factory.mktemp("drift-model-home"))
        link_installed_model(data / "models")
        cfg = load_config(Path("/nonexistent"), env={})
        core = Core(paths=get_paths(), config=cfg, embedder=get_embedder("minilm", cfg))
        items = load_labelled(ROOT / "tests" / "data" / name)
        results = core.call("score", {"texts": [it["text"] for it in items]})["results"]
    # a fresh data dir: the dev items were indexed in process before scoring, so the figures are the full model's
    assert all("nearest dev items" in r["scored_by"]["parts"] for r in results)
    return summarize(items, results)


@pytest.fixture(scope="module")
def heldout(tmp_path_factory):
    return _summarize(tmp_path_factory, "drift_test.jsonl")


@pytest.fixture(scope="module")
def heldout_ml(tmp_path_factory):
    return _summarize(tmp_path_factory, "drift_heldout.jsonl")


def test_calibration_matches_features():
    data = json.loads((ROOT / "anchors" / "calibration" / "minilm.json").read_text())
    assert [f["name"] for f in data["features"]] == FEATURE_NAMES + ["probe"] + list(NEIGHBOUR_FEATURES)
    # the head used while the dev items' index is being built
    assert [f["name"] for f in data["neighbours"]["without"]["features"]] == FEATURE_NAMES + ["probe"]
    assert data["neighbours"]["files"] == DEV_FILES
    assert data["embedding_languages"] == ["en"]  # MiniLM: the embedding is used for English only
    assert set(LANGS) <= set(data["languages"])  # a calibration and threshold per language
    assert data["trained_on"]["files"] == DEV_FILES  # never a held-out split


def test_first_heldout_auc(heldout, real_model):
    assert heldout["overall"]["auc"] >= 0.978  # measured 0.983 (0.978 round 11); issue 16: the first held-out set stays >= 0.96
    assert heldout["by_language"]["en"]["auc"] >= 0.99  # 0.995 (0.986 round 11)
    assert heldout["by_language"]["zh"]["auc"] >= 0.965  # 0.968 (0.973 round 11)


def test_first_heldout_alert_rates(heldout, real_model):
    assert heldout["overall"]["fpr"] <= 0.02  # 0.0 (0.013 round 8)
    assert heldout["overall"]["tpr"] >= 0.67  # 0.694 (0.646 round 11, 0.618 round 8, 0.674 before round 5's harder negatives, 0.764 at round 2's target FPR 0.03)


def test_first_heldout_rule_statements_rarely_alert(heldout, real_model):
    """Alert fatigue: the user setting a constraint is on track (the memory layer stores it)."""
    rules = heldout["by_category"]["rule_statement"]
    assert rules["label"] == 0 and rules["n"] >= 25
    assert rules["alert_rate"] <= 0.10  # 0.0
    # ... while a forgotten rule thrown back at the assistant still alerts
    assert heldout["by_category"]["forgotten_constraint"]["alert_rate"] >= 0.75  # 0.769 (0.731 round 11, 0.769 round 6, 0.808 before round 5)


def test_multilingual_heldout_auc_per_language(heldout_ml, real_model):
    assert heldout_ml["overall"]["auc"] >= 0.98  # measured 0.985, 0.981 round 11, 0.977 round 8 (target 0.97: met)
    assert set(heldout_ml["by_language"]) == set(LANGS)
    # measured: de 0.987, en 0.991, es 0.992, fr 0.995, ja 0.974, pt 0.987, zh 0.966 (target 0.95: met)
    for lang, block in heldout_ml["by_language"].items():
        assert block["auc"] >= 0.96, (lang, block)


def test_multilingual_heldout_alert_rates(heldout_ml, real_model):
    assert heldout_ml["overall"]["fpr"] <= 0.02  # 0.013, 0.010 round 11, 0.006 round 8 (target 0.02: met here)
    assert heldout_ml["overall"]["tpr"] >= 0.78  # 0.802, 0.754 round 11, 0.710 round 8 (target 0.90: not met)
    for kind in ("terse_approval", "thanks", "good_practice"):  # keyword false alarms on approvals and thanks
        assert heldout_ml["by_category"][kind]["alert_rate"] <= 0.03, kind  # 0 of 37 and 17, 1 of 38 (round 11: 0 of 38; round 7's wide probe alone: thanks 1 of 17)
