"""Build compass_hooks/drift/data/drift_dev_ml3.jsonl (the third round of hand-written dev prompts, issue 16)
from the source files in this folder (``<lang>.txt``: ``<situation number> <category code> <text>`` per line,
the codes of tests/data/drift_ml2/build.py) and check it: schema, no exact duplicate of the other dev files or
the anchors, near duplicates (Jaccard >= 0.6 on lower-cased word sets or character-3-gram sets) of the other
dev files counted. Unlike drift_ml2 this check never opens the held-out files (tests/data/drift_heldout.jsonl,
tests/data/drift_test.jsonl) or the blind set: this round was written without reading them. Stdlib only.

    python tests/data/drift_ml3/build.py          # rewrite the shipped file, print the checks
    python tests/data/drift_ml3/build.py --check  # exit 1 if the shipped file is stale or a check fails
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
DATA = ROOT / "compass_hooks" / "drift" / "data"
OUT = DATA / "drift_dev_ml3.jsonl"
OTHER_DEV = ("drift_dev.jsonl", "drift_dev_ml.jsonl", "drift_dev_ml2.jsonl")
_spec = importlib.util.spec_from_file_location("ml2_build", HERE.parent / "drift_ml2" / "build.py")
assert _spec and _spec.loader
ml2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ml2)
LANGS, CODES, DRIFT, TRIGGERS = ml2.LANGS, ml2.CODES, ml2.DRIFT, ml2._TRIGGERS
NEAR = 0.6


def _scenario(lang: str, num: int, code: str, ranks: dict[tuple[str, int], int]) -> str:
    """Situations numbered from 2000 were written in one language only (their own scenario id); from 1000, one
    situation in every language that has it (one scenario id). Below that each language lists the same situation plan in the same order per category, with its own
    numbers, so siblings are matched by (category of the situation's first item, rank in that category); a
    wrong match only groups two unrelated situations, which costs the folds nothing."""
    if num >= 2000:
        return f"ml3-{lang}{num}"
    if num >= 1000:
        return f"ml3-x{num}"
    key = (code, num)
    if key not in ranks:
        ranks[key] = sum(1 for c, _ in ranks if c == code)
    return f"ml3-{code}{ranks[key]:03d}"


def parse() -> list[dict]:
    rows = []
    for lang in LANGS:
        ranks: dict[tuple[str, int], int] = {}
        first: dict[int, str] = {}
        for n, line in enumerate((HERE / f"{lang}.txt").read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            num, code, text = line.split(" ", 2)
            if code not in CODES or not num.isdigit():
                raise SystemExit(f"{lang}.txt:{n}: bad line {line!r}")
            label = int(code in DRIFT)
            number = int(num)
            rows.append({"text": text.strip(), "label": label, "category": CODES[code], "lang": lang,
                         "scenario": _scenario(lang, number, first.setdefault(number, code), ranks),
                         "keyword_free": (code in DRIFT or code == "H") and not TRIGGERS.search(text)})
    return rows


def checks(rows: list[dict]) -> list[str]:
    problems = []
    texts = Counter(r["text"] for r in rows)
    problems += [f"duplicate text: {t!r}" for t, c in texts.items() if c > 1]
    other = {json.loads(line)["text"] for f in OTHER_DEV for line in (DATA / f).read_text(encoding="utf-8").splitlines() if line.strip()}
    for pack in ("default.json", "infra.json"):
        other |= {a["text"] for a in json.loads((ROOT / "anchors" / pack).read_text(encoding="utf-8"))["anchors"]}
    problems += [f"also in another dev file or an anchor: {r['text']!r}" for r in rows if r["text"] in other]
    return problems


def near_duplicates(rows: list[dict]) -> tuple[int, float]:
    """How many items have a near duplicate (>= NEAR) among the other dev files, and the highest similarity."""
    other = [json.loads(line)["text"] for f in OTHER_DEV for line in (DATA / f).read_text(encoding="utf-8").splitlines() if line.strip()]
    osets = [(ml2._words(t), ml2._grams(t)) for t in other]
    count, top = 0, 0.0
    for r in rows:
        w, g = ml2._words(r["text"]), ml2._grams(r["text"])
        best = max((max(ml2._jac(w, ow), ml2._jac(g, og)) for ow, og in osets), default=0.0)
        top = max(top, best)
        count += best >= NEAR
    return count, top


def main() -> int:
    rows = parse()
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    problems = checks(rows)
    if "--check" in sys.argv:
        stale = not OUT.exists() or OUT.read_text(encoding="utf-8") != body
        for p in problems + (["stale: run python tests/data/drift_ml3/build.py"] if stale else []):
            print(p)
        return 1 if problems or stale else 0
    for p in problems:
        print(p)
    OUT.write_text(body, encoding="utf-8")
    c = Counter((r["lang"], r["label"]) for r in rows)
    near, top = near_duplicates(rows)
    print(f"wrote {OUT} ({len(rows)} items): " + ", ".join(f"{lg} {c[(lg, 1)]}/{c[(lg, 0)]}" for lg in LANGS))
    print(f"near duplicates (>= {NEAR}) of other dev items: {near}; highest similarity {top:.2f}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
