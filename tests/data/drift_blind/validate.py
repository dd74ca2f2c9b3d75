#!/usr/bin/env python3
"""Validate blind.jsonl: parse, fields, counts, overlap with every other drift data file.

Usage: python3 tests/data/drift_blind/validate.py
Exit code 1 on any problem.  Overlap measure: word-set Jaccard (lower-cased \\w+ tokens);
character-bigram Jaccard (whitespace removed) when the blind item is zh or ja.
"""
import collections
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BLIND = os.path.join(HERE, "blind.jsonl")
THRESH = 0.46

DRIFT = {"destructive_operation", "history_rewrite", "bypass_checks", "test_tampering",
         "secrets", "forgotten_constraint", "repeated_mistake", "confabulation",
         "confabulated_agreement", "unverified_success", "vouch_unchecked", "sycophancy"}
ONTRACK = {"ordinary", "hard_negative", "terse_approval", "thanks", "good_practice",
           "rule_statement"}
LANGS = {"en": 140, "zh": 70, "es": 50, "ja": 50, "de": 50, "fr": 30, "pt": 30}
FIELDS = {"text", "label", "category", "lang", "keyword_free"}


def words(t):
    return set(re.findall(r"\w+", t.lower()))


def bigrams(t):
    t = re.sub(r"\s+", "", t.lower())
    return {t[i:i + 2] for i in range(len(t) - 1)}


def jac(a, b):
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def reference_texts():
    files = (glob.glob(os.path.join(ROOT, "tests/data/drift_ml/*.jsonl"))
             + glob.glob(os.path.join(ROOT, "tests/data/drift_ml2/*.jsonl"))
             + glob.glob(os.path.join(ROOT, "compass_hooks/drift/data/*.jsonl"))
             + [os.path.join(ROOT, "tests/data/drift_test.jsonl"),
                os.path.join(ROOT, "tests/data/drift_heldout.jsonl")])
    out = []
    for f in files:
        if not os.path.exists(f):
            continue
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    out.append((os.path.relpath(f, ROOT), json.loads(line)["text"]))
    anchors = os.path.join(ROOT, "anchors/default.json")
    if os.path.exists(anchors):
        with open(anchors, encoding="utf-8") as fh:
            for a in json.load(fh)["anchors"]:
                out.append(("anchors/default.json", a["text"]))
    return out


def main():
    problems = []
    items = []
    with open(BLIND, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                d = json.loads(line)
            except Exception as e:  # noqa: BLE001
                problems.append(f"line {n}: bad json {e}")
                continue
            if set(d) != FIELDS:
                problems.append(f"line {n}: fields {sorted(d)}")
            if d.get("lang") not in LANGS:
                problems.append(f"line {n}: lang {d.get('lang')}")
            cat, lab = d.get("category"), d.get("label")
            if cat in DRIFT:
                if lab != 1:
                    problems.append(f"line {n}: {cat} needs label 1")
            elif cat in ONTRACK:
                if lab != 0:
                    problems.append(f"line {n}: {cat} needs label 0")
            else:
                problems.append(f"line {n}: unknown category {cat}")
            if not isinstance(d.get("keyword_free"), bool):
                problems.append(f"line {n}: keyword_free not bool")
            if cat in {"ordinary", "terse_approval", "thanks"} and d.get("keyword_free"):
                problems.append(f"line {n}: keyword_free must be false for {cat}")
            if not isinstance(d.get("text"), str) or not d["text"].strip():
                problems.append(f"line {n}: empty text")
            items.append(d)

    # counts
    by_lang = collections.Counter(d["lang"] for d in items)
    for lang, need in LANGS.items():
        if by_lang[lang] < need:
            problems.append(f"{lang}: {by_lang[lang]} < {need}")
    texts = [d["text"] for d in items]
    dup = [t for t, c in collections.Counter(texts).items() if c > 1]
    if dup:
        problems.append(f"duplicate texts: {dup}")

    # overlap with references
    refs = reference_texts()
    ref_w = [(src, t, words(t), bigrams(t)) for src, t in refs]
    maxima = collections.defaultdict(float)
    for i, d in enumerate(items):
        cjk = d["lang"] in ("zh", "ja")
        mine = bigrams(d["text"]) if cjk else words(d["text"])
        best, bsrc, btxt = 0.0, None, None
        for src, t, w, b in ref_w:
            j = jac(mine, b if cjk else w)
            if j > best:
                best, bsrc, btxt = j, src, t
        maxima[d["lang"]] = max(maxima[d["lang"]], best)
        if best >= THRESH:
            problems.append(f"OVERLAP {best:.2f} item {i + 1} {d['text']!r} ~ {bsrc}: {btxt!r}")
        # within the blind set
        for k in range(i + 1, len(items)):
            e = items[k]
            if (e["lang"] in ("zh", "ja")) != cjk:
                continue
            other = bigrams(e["text"]) if cjk else words(e["text"])
            j = jac(mine, other)
            if j >= THRESH:
                problems.append(f"INTERNAL {j:.2f} items {i + 1},{k + 1}: {d['text']!r} ~ {e['text']!r}")

    # table
    cats = sorted(DRIFT) + sorted(ONTRACK)
    order = list(LANGS)
    print("| category | label | " + " | ".join(order) + " | total |")
    print("|---|---:|" + "---:|" * (len(order) + 1))
    cnt = collections.Counter((d["category"], d["lang"]) for d in items)
    for c in cats:
        row = [cnt[(c, l)] for l in order]
        print(f"| {c} | {1 if c in DRIFT else 0} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    for lab in (1, 0):
        row = [sum(1 for d in items if d["lang"] == l and d["label"] == lab) for l in order]
        print(f"| **label {lab}** | {lab} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    row = [by_lang[l] for l in order]
    print("| **total** | | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    row = [sum(1 for d in items if d["lang"] == l and d["keyword_free"]) for l in order]
    print("| keyword_free true | | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
    print("max overlap per lang: " + ", ".join(f"{l} {maxima[l]:.2f}" for l in order))
    print(f"references compared: {len(refs)}")
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
