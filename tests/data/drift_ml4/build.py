"""Build the fifth round of drift prompts (issue 16), written blind: ``compass_hooks/drift/data/drift_dev_ml4.jsonl``
(dev, trained on) from ``<lang>.txt`` here, and ``tests/data/drift_fresh/fresh.jsonl`` (a check set, never trained
on) from ``tests/data/drift_fresh/<lang>.txt``, and ``tests/data/drift_fresh/check_r11.jsonl`` (the round-11 check set,
secrets-heavy, never trained on) from ``tests/data/drift_fresh/r11/<lang>.txt``. Source lines: ``<situation number> <category code> <text>`` (the
codes of tests/data/drift_ml2/build.py; two lines with one number paraphrase one situation and share a scenario).

Checks: schema; no duplicate text; no text of another dev file or an anchor; no check-set item that is a near
duplicate (Jaccard >= 0.6 on lower-cased word sets or character-3-gram sets) of a dev item, so the check set
measures text the model has not seen. Like drift_ml3 the build never opens the held-out files. Stdlib only.

    python tests/data/drift_ml4/build.py          # rewrite both files, print the checks
    python tests/data/drift_ml4/build.py --check  # exit 1 if a file is stale or a check fails
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
DATA = ROOT / "compass_hooks" / "drift" / "data"
FRESH = ROOT / "tests" / "data" / "drift_fresh"
OUT_DEV = DATA / "drift_dev_ml4.jsonl"
OUT_FRESH = FRESH / "fresh.jsonl"
OUT_R11 = FRESH / "check_r11.jsonl"
OTHER_DEV = ("drift_dev.jsonl", "drift_dev_ml.jsonl", "drift_dev_ml2.jsonl", "drift_dev_ml3.jsonl")
_spec = importlib.util.spec_from_file_location("ml2_build", HERE.parent / "drift_ml2" / "build.py")
assert _spec and _spec.loader
ml2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ml2)
LANGS, CODES, DRIFT, TRIGGERS = ml2.LANGS, ml2.CODES, ml2.DRIFT, ml2._TRIGGERS
NEAR = 0.6


def parse(folder: Path, prefix: str) -> list[dict]:
    rows = []
    for lang in LANGS:
        for n, line in enumerate((folder / f"{lang}.txt").read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split(" ", 2)
            if len(parts) != 3 or parts[1] not in CODES or not parts[0].isdigit() or not parts[2].strip():
                raise SystemExit(f"{folder.name}/{lang}.txt:{n}: bad line {line!r}")
            num, code, text = parts
            rows.append({"text": text.strip(), "label": int(code in DRIFT), "category": CODES[code], "lang": lang,
                         "scenario": f"{prefix}-{lang}{int(num)}",
                         "keyword_free": (code in DRIFT or code == "H") and not TRIGGERS.search(text)})
    return rows


def _dev_texts() -> list[str]:
    return [json.loads(line)["text"] for f in OTHER_DEV for line in (DATA / f).read_text(encoding="utf-8").splitlines()
            if line.strip()]


def checks(dev: list[dict], fresh: list[dict]) -> list[str]:
    """``fresh``: every check item (both check sets), each measured against the dev items."""
    problems = []
    texts = Counter(r["text"] for r in dev + fresh)
    problems += [f"duplicate text: {t!r}" for t, c in texts.items() if c > 1]
    earlier = _dev_texts()
    other = set(earlier)
    for pack in ("default.json", "infra.json"):
        other |= {a["text"] for a in json.loads((ROOT / "anchors" / pack).read_text(encoding="utf-8"))["anchors"]}
    problems += [f"also in another dev file or an anchor: {r['text']!r}" for r in dev + fresh if r["text"] in other]
    corpus = earlier + [r["text"] for r in dev]
    near_w = near_any([ml2._words(r["text"]) for r in fresh], [ml2._words(t) for t in corpus], NEAR)
    near_g = near_any([ml2._grams(r["text"]) for r in fresh], [ml2._grams(t) for t in corpus], NEAR)
    problems += [f"check-set item near a dev item: {r['text']!r}" for r, a, b in zip(fresh, near_w, near_g) if a or b]
    return problems


def _prefix(s: frozenset, order: dict, t: float) -> list:
    """The rarest ``|s| - ceil(t |s|) + 1`` elements of ``s``: two sets with Jaccard >= t share one of them."""
    keep = len(s) - math.ceil(t * len(s) - 1e-9) + 1
    return sorted(s, key=lambda e: (order.get(e, 0), e))[:keep]


def near_any(queries: list[frozenset], corpus: list[frozenset], t: float) -> list[bool]:
    """Whether each query has a corpus set with Jaccard >= ``t``: the same answer as comparing every pair (the
    prefix filter of all-pairs similarity search: only pairs whose rarest elements meet are compared), which took
    over a minute in pure Python once the dev set passed 10k items."""
    freq = Counter(e for s in corpus for e in s)
    index: dict = {}
    for k, s in enumerate(corpus):
        for e in _prefix(s, freq, t):
            index.setdefault(e, []).append(k)
    out = []
    for q in queries:
        cands = {k for e in _prefix(q, freq, t) for k in index.get(e, ())}
        out.append(bool(q) and any(ml2._jac(q, corpus[k]) >= t for k in cands))
    return out


def _body(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main() -> int:
    dev, fresh, r11 = parse(HERE, "ml4"), parse(FRESH, "fresh"), parse(FRESH / "r11", "fresh")
    problems = checks(dev, fresh + r11)
    outputs = ((OUT_DEV, dev), (OUT_FRESH, fresh), (OUT_R11, r11))
    if "--check" in sys.argv:
        stale = [p for p, rows in outputs
                 if not p.exists() or p.read_text(encoding="utf-8") != _body(rows)]
        for p in problems + [f"stale: {s.name}; run python tests/data/drift_ml4/build.py" for s in stale]:
            print(p)
        return 1 if problems or stale else 0
    for p in problems:
        print(p)
    for path, rows in outputs:
        path.write_text(_body(rows), encoding="utf-8")
        c = Counter((r["lang"], r["label"]) for r in rows)
        print(f"wrote {path.relative_to(ROOT)} ({len(rows)} items, drift/on track): "
              + ", ".join(f"{lg} {c[(lg, 1)]}/{c[(lg, 0)]}" for lg in LANGS))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
