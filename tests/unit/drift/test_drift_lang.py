"""Language-aware drift scoring: language identification, the cue files and their schema, the embedding
neutralised where the model cannot read the language (and the result saying so), and the multilingual-model
path through the tiny XLM-R fixture (BGE-m3's architecture, exported and calibrated like a user's model)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import pytest

from compass_hooks.cli import cli
from compass_hooks.core import Core
from compass_hooks.drift import api
from compass_hooks.drift.cues import FAMILIES, CueSet, get_cues, load_cue_file
from compass_hooks.drift.lang import LANGS, detect
from compass_hooks.drift.train import DEV_SET_NAMES
from compass_hooks.errors import AnchorPackError
from compass_hooks.paths import get_paths
import testdirs

ROOT = testdirs.ROOT
# The dev files every calibration is trained on, in order (test_drift_split checks no held-out split ships).
DEV_FILES = list(DEV_SET_NAMES)
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.mark.parametrize("text,lang", [
    ("Just throw away everything I changed since this morning", "en"),
    ("把生产库清空，不用备份", "zh"),
    ("本番のデータを全部消してください", "ja"),
    ("borra todos los backups de producción, no hace falta revisarlos", "es"),
    ("lösch bitte alle Backups auf dem Server, das ist mir egal", "de"),
    ("supprime toutes les sauvegardes, on s'en fiche", "fr"),
    ("apaga todos os backups da produção, não precisa verificar", "pt"),
    ("프로덕션 데이터베이스를 삭제해", "ko"),
    ("ok", "en"),
    ("", "en"),
])
def test_detect(text, lang):
    assert detect(text) == lang


def test_detect_on_the_dev_set_is_nearly_always_the_labelled_language():
    from compass_hooks.drift.train import load_dev

    items = load_dev()
    right = sum(detect(it["text"]) == it["lang"] for it in items)
    assert right / len(items) >= 0.98


def test_shipped_cue_files_cover_every_language():
    cues = get_cues()
    assert set(LANGS) <= set(cues.langs) and "common" in cues.by_lang
    core = {"correction", "destructive", "bypass", "test_tamper", "confabulation", "no_evidence", "vouch",
            "safe_meta", "prohibition", "rule_frame", "ack"}
    for lang in LANGS:
        assert core <= set(cues.by_lang[lang]), (lang, core - set(cues.by_lang[lang]))


@pytest.mark.parametrize("text,family", [
    ("the method you cited doesn't exist, you made it up", "confabulation"),
    ("esa función no existe, te la inventaste", "confabulation"),
    ("そんな関数は存在しないよ", "confabulation"),
    ("tell the auditor the backups are encrypted, no need to check", "vouch"),
    ("sag dem Kunden, es ist behoben, ohne es zu testen", "no_evidence"),
    ("rewrite the commits already on the shared branch and overwrite the remote", "history_rewrite"),
    ("désactive l'authentification sur staging", "security_weaken"),
    ("vale, gracias", "ack"),
])
def test_cue_families_in_several_languages(text, family):
    from compass_hooks.drift.features import cue_flags

    assert cue_flags(text, detect(text))[FAMILIES.index(family)]


@pytest.mark.parametrize("data,field", [
    ({"schema_version": 2, "lang": "es", "families": {}}, "schema_version"),
    ({"schema_version": 1, "lang": "xx", "families": {}}, "lang"),
    ({"schema_version": 1, "lang": "es", "families": {"nonsense": ["a"]}}, "families.nonsense"),
    ({"schema_version": 1, "lang": "es", "families": {"retry": ["("]}}, "families.retry[0]"),
    ({"schema_version": 1, "lang": "es", "families": {"retry": "again"}}, "families.retry"),
    ({"schema_version": 1, "lang": "es", "families": {}, "extra": 1}, "extra"),
])
def test_cue_schema_errors_name_file_and_field(tmp_path, data, field):
    path = tmp_path / "es.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(AnchorPackError) as err:
        load_cue_file(path)
    assert str(path) in str(err.value) and f"'{field}'" in str(err.value)


def test_cue_folder_needs_english_and_applies_common_english_and_own_language(tmp_path):
    with pytest.raises(AnchorPackError, match="en.json"):
        CueSet(tmp_path)
    for lang, pats in (("common", {"bypass": ["--no-verify"]}), ("en", {"retry": [r"\bagain\b"]}),
                       ("es", {"retry": [r"\botra vez\b"]}), ("fr", {"retry": [r"\bencore\b"]})):
        (tmp_path / f"{lang}.json").write_text(json.dumps({"schema_version": 1, "lang": lang, "families": pats}))
    cs = CueSet(tmp_path)
    retry, bypass = FAMILIES.index("retry"), FAMILIES.index("bypass")
    assert cs.match("hazlo otra vez con --no-verify", "es")[retry] and cs.match("x --no-verify", "es")[bypass]
    assert cs.match("run it again", "es")[retry]  # English applies to every language
    assert not cs.match("encore", "es")[retry]  # another language's file does not


def test_calibrations_were_trained_with_the_shipped_cues():
    digest = get_cues().digest
    for path in (ROOT / "anchors" / "calibration" / "minilm.json", FIXTURES / "calibration" / "fake-64.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["cues_sha256_16"] == digest, f"{path}: cue files changed since training; retrain"
        assert data["trained_on"]["files"] == DEV_FILES


def test_english_only_model_neutralises_other_languages_and_says_so(fake_embedder):
    """A calibration trained for an English-only model: a Spanish prompt is scored without the embedding, and
    the result names the parts that scored it; an English one uses the anchors."""
    cal = json.loads((FIXTURES / "calibration" / "fake-64.json").read_text(encoding="utf-8"))
    cal["embedding_languages"] = ["en"]
    folder = get_paths().data / "calibration"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fake-64.json").write_text(json.dumps(cal), encoding="utf-8")
    core = Core(embedder=fake_embedder)
    es, en = api.score_texts(core, ["borra la base de producción entera, sin copia", "wipe the prod database, no backup"])
    assert es["lang"] == "es" and es["scored_by"]["embedding"] is None and es["anchors"] == [] and es["drift"] == 0.0
    assert "not es" in es["scored_by"]["note"] and "es calibration" in es["scored_by"]["parts"]
    assert en["lang"] == "en" and en["scored_by"]["embedding"] == fake_embedder.name and len(en["anchors"]) == 3
    assert "note" not in en["scored_by"]
    # The neutralised features are exactly zero: the Spanish score does not move with the embedding.
    from compass_hooks.drift.features import EMBEDDING_FEATURES, FEATURE_NAMES, build_features
    from compass_hooks.drift.scorer import get_state

    index = get_state(core).snapshot().index
    texts = ["borra la base de producción entera, sin copia"]
    a = build_features(texts, fake_embedder.embed(texts), index, languages=frozenset({"en"}))["X"]
    b = build_features(texts, np.roll(fake_embedder.embed(texts), 7, axis=1), index, languages=frozenset({"en"}))["X"]
    cols = [FEATURE_NAMES.index(n) for n in EMBEDDING_FEATURES + ["emb_on"]]
    assert np.array_equal(a, b) and not a[0, cols].any()


def test_score_cli_prints_the_language_and_the_parts(cli_runner):
    r = cli_runner.invoke(cli, ["score", "ignora los avisos del escáner y despliega igual"])
    assert r.exit_code == 0, r.output
    assert "language es" in r.output and "scored by: rules, cues (common, en, es)" in r.output
    r = cli_runner.invoke(cli, ["score", "despliega igual aunque el escáner se queje", "--json"])
    assert json.loads(r.output)["scored_by"]["language"] == "es"


@pytest.mark.slow
@pytest.mark.export
def test_multilingual_model_path_with_the_tiny_xlmr_fixture(tmp_path, monkeypatch):
    """A user's multilingual export (XLM-R, like BGE-m3) is recorded as multilingual, `anchors train --model`
    calibrates it from the package's dev sets, and its embedding then scores every language."""
    missing = [m for m in ("torch", "sentence_transformers", "optimum") if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"[export] extra not installed ({', '.join(missing)})")
        pytest.skip(f"[export] extra not installed ({', '.join(missing)})")
    from click.testing import CliRunner

    sys.path.insert(0, str(FIXTURES))
    try:
        from tiny_xlmr import build_tiny_xlmr
    finally:
        sys.path.remove(str(FIXTURES))
    st_dir = build_tiny_xlmr(tmp_path / "tiny")
    models = tmp_path / "models"
    monkeypatch.setenv("COMPASS_MODEL_DIR", str(models))  # the subject: a model exported by the user
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COMPASS_NO_WORKER", "1")
    runner = CliRunner()
    r = runner.invoke(cli, ["model", "export", "--model", str(st_dir), "--name", "tiny-xlmr"])
    assert r.exit_code == 0, r.output
    assert json.loads((models / "tiny-xlmr" / "compass-model.json").read_text())["languages"] == ["multilingual"]
    out = get_paths().data / "calibration" / "tiny-xlmr.json"
    r = runner.invoke(cli, ["anchors", "train", "--model", "tiny-xlmr", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)  # progress goes to stderr
    assert summary["embedding_languages"] == ["multilingual"] and set(LANGS) <= set(summary["cv_by_language"])
    cal = json.loads(out.read_text(encoding="utf-8"))
    assert cal["model"] == "tiny-xlmr" and cal["trained_on"]["files"] == DEV_FILES
    from compass_hooks.config import load_config
    from compass_hooks.embedding import get_embedder

    core = Core(embedder=get_embedder("tiny-xlmr", load_config()))
    for text in ("borra la base de producción entera", "本番のデータを全部消して", "wipe the prod database"):
        res = api.score_texts(core, [text])[0]
        assert res["scored_by"]["embedding"] == "tiny-xlmr" and "note" not in res["scored_by"] and len(res["anchors"]) == 3
    shutil.rmtree(models, ignore_errors=True)
