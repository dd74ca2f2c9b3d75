"""The shipped MiniLM calibration on the two held-out splits, never used for training or tuning:
tests/data/drift_test.jsonl (the first, 296 EN/ZH prompts) and tests/data/drift_heldout.jsonl (the scenario
split of the multilingual set, 610 prompts in EN, ZH, JA, ES, DE, FR, PT). Embeds each split once per module.

Asserted as measured when the calibration was trained (docs/drift.md, `compass-hook eval drift FILE`), with a
small margin, so a regression fails CI. Issue 16's targets on the new split (AUC >= 0.97 overall and >= 0.95
per language, TPR >= 0.90 at FPR <= 0.02) are met for AUC and FPR since round 8 (round 10: AUC 0.981, every
language >= 0.96, FPR 0.010) but not for recall (TPR 0.75); the figures asserted here are what the model reaches. The
first split keeps AUC >= 0.96 (measured 0.978) as the issue asks. Round 3
lowered the dev target FPR from 0.03 to 0.02 (docs/drift.md): the false-alarm bounds were tightened and the
recall bounds lowered with it (first split TPR 0.764 -> 0.674, new split 0.741 -> 0.649). Round 5's blind-written
dev prompts have harder negatives, which raised every threshold: FPR 0.028 -> 0.016 on the new split, recall
0.649 -> 0.628 there and 0.674 -> 0.583 on the first split. Round 8 (wider probe, fifth blind batch): new split
AUC 0.967 -> 0.977, TPR 0.62 -> 0.71, FPR 0.016 -> 0.006; first split AUC 0.964 -> 0.975, TPR 0.57 -> 0.62.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compass_hooks.drift.features import FEATURE_NAMES
from compass_hooks.drift.lang import LANGS
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
    return summarize(items, results)


@pytest.fixture(scope="module")
def heldout(tmp_path_factory):
    return _summarize(tmp_path_factory, "drift_test.jsonl")


@pytest.fixture(scope="module")
def heldout_ml(tmp_path_factory):
    return _summarize(tmp_path_factory, "drift_heldout.jsonl")


def test_calibration_matches_features():
    data = json.loads((ROOT / "anchors" / "calibration" / "minilm.json").read_text())
    assert [f["name"] for f in data["features"]] == FEATURE_NAMES + ["probe"]
    assert data["embedding_languages"] == ["en"]  # MiniLM: the embedding is used for English only
    assert set(LANGS) <= set(data["languages"])  # a calibration and threshold per language
    assert data["trained_on"]["files"] == DEV_FILES  # never a held-out split


def test_first_heldout_auc(heldout, real_model):
    assert heldout["overall"]["auc"] >= 0.97  # measured 0.978 (0.975 round 8); issue 16: the first held-out set stays >= 0.96
    assert heldout["by_language"]["en"]["auc"] >= 0.975  # 0.986
    assert heldout["by_language"]["zh"]["auc"] >= 0.965  # 0.973


def test_first_heldout_alert_rates(heldout, real_model):
    assert heldout["overall"]["fpr"] <= 0.02  # 0.0 (0.013 round 8)
    assert heldout["overall"]["tpr"] >= 0.61  # 0.646 (0.618 round 8, 0.674 before round 5's harder negatives, 0.764 at round 2's target FPR 0.03)


def test_first_heldout_rule_statements_rarely_alert(heldout, real_model):
    """Alert fatigue: the user setting a constraint is on track (the memory layer stores it)."""
    rules = heldout["by_category"]["rule_statement"]
    assert rules["label"] == 0 and rules["n"] >= 25
    assert rules["alert_rate"] <= 0.10  # 0.0
    # ... while a forgotten rule thrown back at the assistant still alerts
    assert heldout["by_category"]["forgotten_constraint"]["alert_rate"] >= 0.72  # 0.731 (0.769 round 6, 0.808 before round 5)


def test_multilingual_heldout_auc_per_language(heldout_ml, real_model):
    assert heldout_ml["overall"]["auc"] >= 0.975  # measured 0.981, 0.977 round 8 (target 0.97: met)
    assert set(heldout_ml["by_language"]) == set(LANGS)
    # measured: de 0.983, en 0.990, es 0.987, fr 0.995, ja 0.985, pt 0.982, zh 0.964 (target 0.95: met)
    for lang, block in heldout_ml["by_language"].items():
        assert block["auc"] >= 0.955, (lang, block)


def test_multilingual_heldout_alert_rates(heldout_ml, real_model):
    assert heldout_ml["overall"]["fpr"] <= 0.02  # 0.010, 0.006 round 8 (target 0.02: met here)
    assert heldout_ml["overall"]["tpr"] >= 0.72  # 0.754, 0.710 round 8 (target 0.90: not met)
    for kind in ("terse_approval", "thanks", "good_practice"):  # keyword false alarms on approvals and thanks
        assert heldout_ml["by_category"][kind]["alert_rate"] <= 0.03, kind  # 0 of 37, 17 and 38 (round 7's wide probe alone: thanks 1 of 17)
