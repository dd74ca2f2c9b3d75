"""The multilingual drift prompts are split dev / held-out by scenario, reproducibly
(tests/data/drift_ml/split.py), and the held-out split never ships in the package."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
import testdirs

ROOT = testdirs.ROOT
SOURCES = ROOT / "tests" / "data" / "drift_ml"
DEV = ROOT / "compass_hooks" / "drift" / "data" / "drift_dev_ml.jsonl"
HELDOUT = ROOT / "tests" / "data" / "drift_heldout.jsonl"
LANGS = ("en", "zh", "ja", "es", "de", "fr", "pt")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_files_are_the_scenario_split_of_the_sources():
    result = subprocess.run([sys.executable, str(SOURCES / "split.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_no_scenario_on_both_sides_and_nothing_lost():
    dev, held = _rows(DEV), _rows(HELDOUT)
    assert not {r["scenario"] for r in dev} & {r["scenario"] for r in held}
    sources = [r for lang in LANGS for r in _rows(SOURCES / f"{lang}.jsonl")]
    assert len(sources) >= 2000
    assert Counter(r["text"] for r in dev + held) == Counter(r["text"] for r in sources)


def test_about_seventy_thirty_per_language():
    dev, held = Counter(r["lang"] for r in _rows(DEV)), Counter(r["lang"] for r in _rows(HELDOUT))
    for lang in LANGS:
        share = held[lang] / (held[lang] + dev[lang])
        assert 0.25 <= share <= 0.35, (lang, share)


def test_heldout_is_not_package_data():
    shipped = {p.name for p in (ROOT / "compass_hooks" / "drift" / "data").iterdir()}
    assert HELDOUT.name not in shipped and "drift_test.jsonl" not in shipped
    held_texts = {r["text"] for r in _rows(HELDOUT)} | {r["text"] for r in _rows(ROOT / "tests" / "data" / "drift_test.jsonl")}
    for f in (ROOT / "compass_hooks" / "drift" / "data").glob("*.jsonl"):
        shared = held_texts & {r["text"] for r in _rows(f)}
        # Terse approvals ("ok", "lgtm") are written in several scenarios; nothing longer may be shared.
        assert all(len(t.split()) == 1 and len(t) <= 6 for t in shared), (f, shared)


def test_second_round_is_built_and_checked():
    """The second round (tests/data/drift_ml2/, dev only) is the shipped file, with no duplicate and nothing within
    Jaccard 0.6 of a held-out item or an anchor."""
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "data" / "drift_ml2" / "build.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    rows = _rows(ROOT / "compass_hooks" / "drift" / "data" / "drift_dev_ml2.jsonl")
    assert len(rows) >= 1200 and {r["lang"] for r in rows} == set(LANGS)
    assert all(r["scenario"].startswith("ml2-") for r in rows)
    assert len({r["scenario"] for r in rows}) < len(rows) / 4  # cross-language siblings share a scenario


def test_third_round_is_built_from_its_sources():
    """The third round (tests/data/drift_ml3/, dev only) is the shipped file: no duplicate, no text of another dev
    file or an anchor; its build never opens the held-out files."""
    build = ROOT / "tests" / "data" / "drift_ml3" / "build.py"
    result = subprocess.run([sys.executable, str(build), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    code = build.read_text(encoding="utf-8").split('"""', 2)[2]  # after the module docstring
    assert "heldout" not in code and "drift_test" not in code and "blind" not in code
    rows = _rows(ROOT / "compass_hooks" / "drift" / "data" / "drift_dev_ml3.jsonl")
    assert len(rows) >= 500 and {r["lang"] for r in rows} == set(LANGS)
    assert all(r["scenario"].startswith("ml3-") for r in rows)
    assert len({r["scenario"] for r in rows}) < len(rows) / 3  # cross-language siblings share a scenario


def test_fifth_round_and_its_check_set_are_built_from_their_sources():
    """The fifth round (tests/data/drift_ml4/, written blind) ships as dev data; its check sets
    (tests/data/drift_fresh/: fresh.jsonl and round 11's check_r11.jsonl) do not ship, are not trained on, and have
    no near duplicate of a dev item; round 11's dev batch (drift_ml4/batch7/, not shipped) stays out of the dev set."""
    build = ROOT / "tests" / "data" / "drift_ml4" / "build.py"
    result = subprocess.run([sys.executable, str(build), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    code = build.read_text(encoding="utf-8").split('"""', 2)[2]
    assert "heldout" not in code and "drift_test" not in code and "blind" not in code
    dev = _rows(ROOT / "compass_hooks" / "drift" / "data" / "drift_dev_ml4.jsonl")
    fresh = _rows(ROOT / "tests" / "data" / "drift_fresh" / "fresh.jsonl")
    r11 = _rows(ROOT / "tests" / "data" / "drift_fresh" / "check_r11.jsonl")
    for rows, prefix, least in ((dev, "ml4-", 1400), (fresh, "fresh-", 400), (r11, "fresh-", 400)):
        assert len(rows) >= least and {r["lang"] for r in rows} == set(LANGS)
        assert all(r["scenario"].startswith(prefix) for r in rows)
        assert {r["label"] for r in rows} == {0, 1}
    from compass_hooks.drift.train import DEV_SETS
    assert "drift_dev_ml4.jsonl" in {f.name for f in DEV_SETS}
    shipped = {p.name for p in (ROOT / "compass_hooks" / "drift" / "data").iterdir()}
    dev_texts = {r["text"] for r in dev}
    assert "fresh.jsonl" not in shipped and "check_r11.jsonl" not in shipped
    assert not {r["text"] for r in fresh + r11} & dev_texts
    aside = [line.split(" ", 2)[2] for f in sorted((ROOT / "tests" / "data" / "drift_ml4" / "batch7").glob("*.txt"))
             for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(aside) > 1000 and not set(aside) & dev_texts


def test_drift_dev_siblings_share_a_scenario():
    """drift_dev.jsonl's Chinese half follows the English plan category by category: likely siblings share an id."""
    rows = _rows(ROOT / "compass_hooks" / "drift" / "data" / "drift_dev.jsonl")
    assert all(r["scenario"].startswith("dev1-") for r in rows)
    by = Counter(r["scenario"] for r in rows)
    assert sum(1 for c in by.values() if c == 2) > 300
