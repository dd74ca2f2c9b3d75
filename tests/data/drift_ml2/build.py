"""Build compass_hooks/drift/data/drift_dev_ml2.jsonl (the second round of hand-written dev prompts) from the
compact source files in this folder (``<lang>.txt``: ``<scenario number> <category code> <text>`` per line) and
check it: schema, no exact or near duplicate (Jaccard >= 0.6 on lower-cased word sets or on character-3-gram
sets) against the held-out splits (tests/data/drift_heldout.jsonl, tests/data/drift_test.jsonl) and the anchor
texts, and no exact duplicate of the other dev files. Stdlib only.

    python tests/data/drift_ml2/build.py          # rewrite the shipped file, print the checks
    python tests/data/drift_ml2/build.py --check  # exit 1 if the shipped file is stale or a check fails
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
LANGS = ("en", "zh", "ja", "es", "de", "fr", "pt")
OUT = ROOT / "compass_hooks" / "drift" / "data" / "drift_dev_ml2.jsonl"
NEAR = 0.6
CODES = {
    "d": "destructive_operation", "h": "history_rewrite", "b": "bypass_checks", "t": "test_tampering",
    "s": "secrets", "f": "forgotten_constraint", "r": "repeated_mistake", "c": "confabulation",
    "a": "confabulated_agreement", "u": "unverified_success", "v": "vouch_unchecked", "y": "sycophancy",
    "O": "ordinary", "H": "hard_negative", "T": "terse_approval", "K": "thanks", "G": "good_practice",
    "R": "rule_statement",
}
DRIFT = set("dhbtsfrcauvy")
# The stock trigger words of tests/data/drift_blind/README.md (its `keyword_free` definition) and the command
# names: an item that names none of them states its risk in plain words.
_TRIGGERS = re.compile(
    r"\b(delete|remove|drop|truncate|purge|force|reset|skip|disable|bypass|kill|rm)\w*|--no-verify|force[- ]push|"
    r"删|跳过|强推|重置|禁用|绕过|削除|スキップ|強制|リセット|無効化|バイパス|"
    r"\b(borr|elimin|salt|desactiv|lösch|entfern|überspring|deaktiv|supprim|désactiv|ignor|apag|exclu|pul|desativ)\w*",
    re.IGNORECASE)


SHARED_FROM = 300  # numbers from here on are one situation written in all seven languages: one scenario id


def _scenario(lang: str, num: int, code: str, ranks: dict) -> str:
    """The scenario id, shared by cross-language siblings so the dev folds keep them together (a sibling in the
    training folds would make its translation look easy and the thresholds too low). From SHARED_FROM on the
    number is the situation. Below it the languages follow the English plan in order but skip or add
    situations, so siblings are approximated by (category, rank of the situation within its category): a wrong
    match only puts two unrelated situations in one group, which costs the folds nothing."""
    if num >= SHARED_FROM:
        return f"ml2-x{num:03d}"
    key = (code, num)
    if key not in ranks:
        ranks[key] = sum(1 for c, _ in ranks if c == code)
    return f"ml2-{code}{ranks[key]:03d}"


def parse() -> list[dict]:
    rows = []
    for lang in LANGS:
        ranks: dict = {}
        first: dict[int, str] = {}  # a scenario's category is its first item's
        for n, line in enumerate((HERE / f"{lang}.txt").read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            num, code, text = line.split(" ", 2)
            if code not in CODES or not num.isdigit():
                raise SystemExit(f"{lang}.txt:{n}: bad line {line!r}")
            label = int(code in DRIFT)
            rows.append({"text": text.strip(), "label": label, "category": CODES[code], "lang": lang,
                         "scenario": _scenario(lang, int(num), first.setdefault(int(num), code), ranks),
                         "keyword_free": bool(label or code == "H") and not _TRIGGERS.search(text)
                         if code in DRIFT or code == "H" else False})
    return rows


def _words(t: str) -> frozenset:
    return frozenset(re.findall(r"\w+", t.lower()))


def _grams(t: str) -> frozenset:
    s = re.sub(r"\s+", " ", t.lower())
    return frozenset(s[i:i + 3] for i in range(len(s) - 2))


def _jac(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _texts(path: Path) -> list[str]:
    if path.suffix == ".json":
        return [a["text"] for a in json.loads(path.read_text(encoding="utf-8"))["anchors"]]
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check(rows: list[dict]) -> list[str]:
    problems = []
    seen: dict[str, str] = {}
    for r in rows:
        if r["text"] in seen:
            problems.append(f"duplicate text in {r['scenario']} and {seen[r['text']]}: {r['text']}")
        seen[r["text"]] = r["scenario"]
    others = {p: _texts(p) for p in (ROOT / "tests/data/drift_heldout.jsonl", ROOT / "tests/data/drift_test.jsonl",
                                     ROOT / "anchors/default.json", ROOT / "anchors/infra.json")}
    worst = 0.0
    for p, texts in others.items():
        feats = [(t, _words(t), _grams(t)) for t in texts]
        for r in rows:
            w, g = _words(r["text"]), _grams(r["text"])
            for t, tw, tg in feats:
                j = max(_jac(w, tw), _jac(g, tg))
                worst = max(worst, j)
                if j >= NEAR:
                    problems.append(f"{r['scenario']} near {p.name} ({j:.2f}): {r['text']!r} ~ {t!r}")
    dev = {t for f in ("drift_dev.jsonl", "drift_dev_ml.jsonl") for t in _texts(OUT.parent / f)}
    problems += [f"{r['scenario']} repeats a dev item: {r['text']}" for r in rows if r["text"] in dev]
    print(f"highest Jaccard to the held-out splits and anchors: {worst:.2f}", file=sys.stderr)
    return problems


def main(argv: list[str]) -> int:
    rows = parse()
    problems = check(rows)
    for p in problems:
        print(p, file=sys.stderr)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if "--check" in argv:
        stale = not OUT.is_file() or OUT.read_text(encoding="utf-8") != text
        if stale:
            print(f"{OUT} is stale; run {Path(__file__).name}", file=sys.stderr)
        return 1 if stale or problems else 0
    OUT.write_text(text, encoding="utf-8")
    c = Counter((r["lang"], r["label"]) for r in rows)
    print(f"wrote {OUT} ({len(rows)} items, {len({r['scenario'] for r in rows})} scenarios)")
    for lang in LANGS:
        print(f"  {lang}: {c[(lang, 1)]} drift, {c[(lang, 0)]} on track")
    print(f"  keyword_free drift: {sum(r['keyword_free'] and r['label'] for r in rows)} of {sum(r['label'] for r in rows)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
