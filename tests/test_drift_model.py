"""The shipped MiniLM calibration on the held-out split (tests/data/drift_test.jsonl,
never used for training or tuning). Embeds the split once per module.

Issue targets, asserted as they are (a regression fails CI): ROC AUC >= 0.95
English and >= 0.85 overall, alert TPR >= 0.80 at FPR <= 0.05; a user stating a
rule ("never force-push", "以后不要提交密钥") alerts at most 10 %. Measured when the
calibration was trained (docs/drift.md): AUC 0.979 (EN 0.987, ZH 0.967),
TPR 0.861 at FPR 0.033; rule statements 0.071 (2/28).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compass_hooks.drift.features import FEATURE_NAMES

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def heldout(tmp_path_factory):
    from conftest import as_new_user, link_installed_model

    from compass_hooks.config import load_config
    from compass_hooks.core import Core
    from compass_eval.drift_report import summarize
    from compass_hooks.drift.train import load_labelled
    from compass_hooks.embedding import get_embedder
    from compass_hooks.paths import get_paths

    with pytest.MonkeyPatch.context() as mp:  # module scope: the autouse fresh HOME is not active yet
        data = as_new_user(mp, tmp_path_factory.mktemp("drift-model-home"))
        link_installed_model(data / "models")
        cfg = load_config(Path("/nonexistent"), env={})
        core = Core(paths=get_paths(), config=cfg, embedder=get_embedder("minilm", cfg))
        items = load_labelled(ROOT / "tests" / "data" / "drift_test.jsonl")
        results = core.call("score", {"texts": [it["text"] for it in items]})["results"]
    return summarize(items, results)


def test_calibration_matches_features():
    data = json.loads((ROOT / "anchors" / "calibration" / "minilm.json").read_text())
    assert [f["name"] for f in data["features"]] == FEATURE_NAMES + ["probe"]
    assert len(data["probe"]["weights"]) == data["probe"]["hash_dim"] + 384
    assert data["trained_on"]["file"] == "drift_dev.jsonl"  # never the held-out split


def test_heldout_auc(heldout, real_model):
    assert heldout["overall"]["auc"] >= 0.85
    assert heldout["by_language"]["en"]["auc"] >= 0.95
    assert heldout["by_language"]["zh"]["auc"] >= 0.85  # MiniLM cannot read Chinese; cues and the probe carry it


def test_heldout_alert_rates(heldout, real_model):
    assert heldout["overall"]["fpr"] <= 0.05
    assert heldout["overall"]["tpr"] >= 0.80


def test_heldout_rule_statements_rarely_alert(heldout, real_model):
    """Alert fatigue: the user setting a constraint is on track (the memory layer stores it)."""
    rules = heldout["by_category"]["rule_statement"]
    assert rules["label"] == 0 and rules["n"] >= 25
    assert rules["alert_rate"] <= 0.10
    # ... while a forgotten rule thrown back at the assistant still alerts
    assert heldout["by_category"]["forgotten_constraint"]["alert_rate"] >= 0.75
