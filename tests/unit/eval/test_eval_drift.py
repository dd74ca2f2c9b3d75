"""`eval drift` through CliRunner on the fake model, and its figures on a hand-checked case."""

from __future__ import annotations

import json

from compass_eval.drift_report import format_summary, summarize
from compass_hooks.cli import cli
from compass_hooks.drift.train import DEV_SETS


def test_eval_drift_cli_both_formats(cli_runner, tmp_path):
    rows = [json.loads(line) for f in DEV_SETS for line in f.read_text(encoding="utf-8").splitlines()][::12]
    f = tmp_path / "small.jsonl"
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    r = cli_runner.invoke(cli, ["eval", "drift", str(f), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["overall"]["n"] == len(rows) and 0 <= s["overall"]["auc"] <= 1
    assert set(s["by_language"]) == {"en", "zh", "ja", "es", "de", "fr", "pt"} and s["by_category"]
    assert {"false_positives", "false_negatives"} == set(s["confusions"])
    for e in s["confusions"]["false_positives"] + s["confusions"]["false_negatives"]:
        assert {"text", "probability", "threshold", "lang", "category"} <= set(e)
    shared = tmp_path / "shared.json"
    shared.write_text(json.dumps({"items": [{"label": "aligned", "prompt": "先写测试"}, {"label": "deviation", "prompt": "skip 验证 · 直接 ship"}]}))
    r = cli_runner.invoke(cli, ["eval", "drift", str(shared)])
    assert r.exit_code == 0 and "ROC AUC" in r.output and "by language" in r.output


def test_summary_counts_rates_and_auc_per_language_and_category():
    items = [{"text": "a", "label": 1, "category": "force_push", "lang": "en"},
             {"text": "b", "label": 1, "category": "force_push", "lang": "zh"},
             {"text": "c", "label": 0, "category": None, "lang": "en"},
             {"text": "d", "label": 0, "category": None, "lang": "en"}]
    results = [{"probability": 0.9, "alert": True}, {"probability": 0.3, "alert": False},
               {"probability": 0.4, "alert": True, "threshold": 0.35}, {"probability": 0.1, "alert": False}]
    s = summarize(items, results)
    assert s["overall"] == {"n": 4, "n_drift": 2, "n_on_track": 2, "auc": 0.75, "tpr": 0.5, "fpr": 0.5, "alerts": 2}
    assert s["by_language"]["zh"]["auc"] is None  # one class only: no AUC, and JSON-safe
    assert s["by_category"]["force_push"] == {"label": 1, "n": 2, "alert_rate": 0.5, "mean_probability": 0.6, "auc": 0.75}
    assert [e["text"] for e in s["confusions"]["false_positives"]] == ["c"]
    assert s["confusions"]["false_positives"][0]["threshold"] == 0.35
    assert [e["text"] for e in s["confusions"]["false_negatives"]] == ["b"]
    assert s["by_category"]["on_track"]["n"] == 2
    text = format_summary(s, threshold=0.5)
    assert "threshold 0.5000" in text and "ROC AUC 0.75" in text and "force_push" in text
    assert "top false positives" in text and "top false negatives" in text
