"""Form-robustness harness for the standing-instruction detector (dev data only).

The dev rule prompts (and the dev negatives) are rewritten into other *forms* of the same words: all lower case,
no sentence punctuation, a few typos, the rule as a markdown bullet or a numbered item among other items, in the
middle of a long paragraph of task text, two or three rules in one prompt, after a code block or a pasted error,
after a greeting or "btw" / "oh and" / "also" / "one more thing", with a reason clause, Chinese without
punctuation. Each transformed prompt is scored by the fold model that did not see its scenario (the same five
folds grouped by scenario as ``compass-hook instructions train``, the same stacking), at the trained threshold,
so the figures are out-of-fold like the detector's dev figures.

Reported per form: rule recall (a detected rule overlaps the rule's sentence in the transformed prompt; with
several rules in one prompt, each counts), prompt recall, and on the transformed negatives the false-alarm rate
and the precision of "this prompt sets a rule". Forms a transformation cannot produce (impersonal or passive
rules, very short rules) are measured on the hand-written probes in ``standing_forms_probes.jsonl`` beside this
file, which are not in any training file.

Run: ``python -m compass_eval.standing_forms [--json] [--model NAME] [--misses FORM]``. The held-out files are
never read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from compass_hooks.learn import ngrams
from compass_hooks.learn.linear import fit_logistic, precision_recall, threshold_for_precision
from compass_hooks.memory.standing import cues, train
from compass_hooks.memory.standing.detect import Head, Weights, score_units, unit_matrix

PROBES = Path(__file__).resolve().parent / "standing_forms_probes.jsonl"

# Neutral task text (no rule in it) around the rule, EN and ZH.
_TASK_EN = [
    "I'm working on the billing service and the invoice totals are off by a cent now and then.",
    "The numbers come from the orders table, which gets a nightly import from the warehouse system.",
    "Yesterday I noticed it mostly happens with discounts that have three decimal places.",
    "Can you look at the rounding in calculate_total and tell me what you think is wrong?",
    "The test suite passes locally but the staging run shows the mismatch on about forty invoices.",
]
_TASK_ZH = [
    "我在做账单服务，发票总额偶尔会差一分钱。",
    "数据来自订单表，每天晚上从仓库系统导入一次。",
    "昨天我发现主要是带三位小数的折扣会出问题。",
    "你帮我看看 calculate_total 里的取整，说说哪里不对？",
    "本地测试都能过，但预发环境里大概有四十张发票对不上。",
]
_CODE = "```python\ndef total(items):\n    return round(sum(i.price * i.qty for i in items), 2)\n```\n"
_ERROR = ("Traceback (most recent call last):\n  File \"app/billing.py\", line 42, in total\n"
          "    return round(sum(i.price * i.qty for i in items), 2)\nTypeError: unsupported operand type(s) for *: "
          "'NoneType' and 'int'\n")
_OPENERS_EN = ["hi! ", "Hey there. ", "btw ", "oh and ", "also, ", "one more thing: ", "Oh, and one more thing, ",
               "Also - "]
_OPENERS_ZH = ["你好！", "对了，", "另外，", "还有一件事：", "哦对了，", "顺便说一下，"]
_REASONS_EN = [", because my screen reader reads them out", ", since I read these on my phone",
               ", because it's easier for me to follow", ", my team lead asked for it"]
_REASONS_ZH = ["，因为我用读屏软件", "，因为我都是在手机上看", "，这样我看得更清楚", "，组长要求的"]
_FILLER_BULLETS_EN = ["Context: the repo is a Django app with a Postgres database.",
                      "I'll paste the failing test output in a minute.",
                      "Deadline for the fix is Friday."]
_FILLER_BULLETS_ZH = ["背景：这是一个 Django 项目，数据库是 Postgres。", "失败的测试输出我待会儿贴上来。",
                      "这个修复周五之前要完成。"]

_END = re.compile(r"[.!?。！？]+[\"'”’)\]]*\s*$")


def _h(*parts: Any) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _zh(it: dict[str, Any]) -> bool:
    return (it.get("lang") or ("zh" if cues.is_zh(it["text"]) else "en")) == "zh"


def _with_rule(text: str, rule: str | None, new_rule: str) -> str:
    return text if rule is None else text.replace(rule, new_rule, 1)


def _first_sentence(it: dict[str, Any]) -> str:
    """The span a transformation of a negative acts on: its first sentence (a positive's rule)."""
    if it["label"]:
        return str(it["rule"])
    us = cues.units(it["text"])
    return us[0].text if us else it["text"]


def _typos(s: str, seed: int) -> str:
    words = [m for m in re.finditer(r"[A-Za-z]{5,}", s)]
    if not words:
        return s
    picks = sorted({words[(seed + k * 7) % len(words)].start() for k in range(min(2, len(words)))})
    out = s
    for k, pos in enumerate(picks):
        m = re.match(r"[A-Za-z]+", out[pos:])
        assert m
        w = m.group(0)
        i = 1 + (seed >> (3 * k)) % (len(w) - 2)
        if (seed >> k) % 2:  # swap two letters
            w2 = w[:i] + w[i + 1] + w[i] + w[i + 2:]
        else:  # drop one
            w2 = w[:i] + w[i + 1:]
        out = out[:pos] + w2 + out[pos + len(w):]
    return out


def _strip_end(s: str) -> str:
    return _END.sub("", s).rstrip()


Transform = Callable[[dict[str, Any], list[dict[str, Any]]], "tuple[str, list[str]] | None"]


def t_lower(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    if _zh(it) and not re.search(r"[A-Z]", it["text"]):
        return None
    return it["text"].lower(), [it["rule"].lower()] if it["label"] else []


def t_no_punct(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    """Every sentence end (. ! ? 。！？) dropped: the sentences run together, as lazy typing does."""
    rx = re.compile(r"(?<=\S)[.!?。！？]+(?=\s|$|[\u3400-\u9fff])")
    text = rx.sub("", it["text"])
    if text == it["text"]:
        return None
    return text, [rx.sub("", it["rule"])] if it["label"] else []


def t_typos(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    if _zh(it):
        return None
    span = _first_sentence(it)
    new = _typos(span, _h(it["id"], "typo"))
    if new == span:
        return None
    return it["text"].replace(span, new, 1), [new] if it["label"] else []


def _rest(it: dict[str, Any], span: str) -> str:
    return " ".join(it["text"].replace(span, " ", 1).split())


def t_bullet(it: dict[str, Any], _: list[dict[str, Any]], numbered: bool = False) -> tuple[str, list[str]] | None:
    zh = _zh(it)
    span = _first_sentence(it)
    fill = _FILLER_BULLETS_ZH if zh else _FILLER_BULLETS_EN
    k = _h(it["id"], "bullet") % 3
    items = fill[:k] + [span] + fill[k:]
    lines = [f"{n + 1}. {x}" if numbered else f"- {x}" for n, x in enumerate(items)]
    head = ("几点说明：" if zh else "A few notes before we start:") + "\n"
    rest = _rest(it, span)
    text = head + "\n".join(lines) + ("\n\n" + rest if rest else "")
    return text, [span] if it["label"] else []


def t_numbered(it: dict[str, Any], items: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    return t_bullet(it, items, numbered=True)


def t_paragraph(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    zh = _zh(it)
    span = _first_sentence(it)
    task = _TASK_ZH if zh else _TASK_EN
    k = 2 + _h(it["id"], "para") % 2
    sep = "" if zh else " "
    body = sep.join(task[:k] + [span] + task[k:])
    rest = _rest(it, span)
    text = body + (sep + rest if rest else "")
    return text, [span] if it["label"] else []


def t_multi(it: dict[str, Any], pool: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    """Two or three rules (or, for a negative, two or three negatives) from other scenarios of the same fold
    and language, in one prompt."""
    zh = _zh(it)
    same = [o for o in pool if o["label"] == it["label"] and _zh(o) == zh and o["scenario"] != it["scenario"]]
    if not same:
        return None
    n = 1 + _h(it["id"], "multi") % 2
    others = [same[(_h(it["id"], "m", j)) % len(same)] for j in range(n)]
    spans = [_first_sentence(it)] + [_first_sentence(o) for o in others]
    spans = [s if _END.search(s) else s + ("。" if zh else ".") for s in spans]
    sep = "" if zh else " "
    rest = _rest(it, _first_sentence(it))
    text = sep.join(spans) + (sep + rest if rest else "")
    return text, spans if it["label"] else []


def t_after_code(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    return _CODE + it["text"], [it["rule"]] if it["label"] else []


def t_after_error(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    return _ERROR + it["text"], [it["rule"]] if it["label"] else []


def t_opener(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    zh = _zh(it)
    span = _first_sentence(it)
    opens = _OPENERS_ZH if zh else _OPENERS_EN
    o = opens[_h(it["id"], "open") % len(opens)]
    body = span if zh or re.match(r"I\b", span) else span[:1].lower() + span[1:]
    new = o + body
    return it["text"].replace(span, new, 1), [new] if it["label"] else []


def t_reason(it: dict[str, Any], _: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    zh = _zh(it)
    span = _first_sentence(it)
    reasons = _REASONS_ZH if zh else _REASONS_EN
    r = reasons[_h(it["id"], "reason") % len(reasons)]
    m = _END.search(span)
    if m and span[m.start():].strip().startswith(("?", "？")):
        return None
    new = (span[:m.start()] if m else span) + r + (("。" if zh else ".") if m else "")
    return it["text"].replace(span, new, 1), [new] if it["label"] else []


FORMS: dict[str, Transform] = {
    "lower": t_lower, "no_punct": t_no_punct, "typos": t_typos, "bullet": t_bullet, "numbered": t_numbered,
    "paragraph": t_paragraph, "multi": t_multi, "after_code": t_after_code, "after_error": t_after_error,
    "opener": t_opener, "reason": t_reason,
}


# --------------------------------------------------------------------------- fold models


def fold_models(items: list[dict[str, Any]], embed: Callable[[list[str]], np.ndarray], model: str,
                dim: int) -> tuple[list[Weights], np.ndarray, float, dict[str, Any]]:
    """One rule head per fold (fitted as ``train`` fits its out-of-fold heads), the fold of each item, the
    threshold from the out-of-fold scores, and the original-form OOF figures."""
    d = train._Data(items, embed)
    fold_of, folds = train.unit_folds(items, d)
    every = np.arange(len(d.y))
    names = list(cues.FEATURE_NAMES) + ["probe"]
    heads = []
    oof = np.full(len(d.y), np.nan)
    for fold in folds:
        trn = np.setdiff1d(every, fold)
        inner = train._ridge_oof(d.K, d.y, trn, [f for f in folds if f is not fold])
        mean, scale, coef, bias = fit_logistic(np.column_stack([d.X[trn], inner[trn]]), d.y[trn], train.L2)
        alpha, b = ngrams.fit_ridge_dual(d.K[np.ix_(trn, trn)], d.y[trn], train.LAMBDA)
        head = Head(names, mean, scale, coef, bias, d.Phi[trn].T @ alpha, b)
        heads.append(head)
        oof[fold] = head.proba(d.X[fold], d.Phi[fold])
    prompt_oof = train._prompt_max(oof, d.owner, len(items))
    threshold = float(threshold_for_precision(d.prompt_y, prompt_oof, train.MIN_PRECISION))
    pr = precision_recall(d.prompt_y, prompt_oof >= threshold)
    zero = Head([], np.zeros(0), np.ones(0), np.zeros(0), 0.0)
    ws = [Weights(model, dim, train.HASH_DIM, train.EMBED_SCALE, h, zero, zero, threshold, threshold) for h in heads]
    return ws, fold_of, threshold, {"precision": pr["precision"], "recall": pr["recall"], "tp": pr["tp"],
                                    "fp": pr["fp"], "fn": pr["fn"]}


def _detect_spans(w: Weights, text: str, embed: Callable[[list[str]], np.ndarray]) -> list[tuple[int, int]]:
    # Only where the rules are counts (the revoke and scope heads are placeholders here).
    us = cues.units(text)
    if not us:
        return []
    X = unit_matrix([text], [us])
    p, _ = score_units(w, [u.text for u in us], X, np.asarray(embed([u.text for u in us]), dtype=np.float64))
    return [(u.start, u.end) for u, q in zip(us, p) if q >= w.threshold]


def _score(w: Weights, text: str, spans: list[str], embed: Callable[[list[str]], np.ndarray]) -> tuple[bool, int]:
    hits = _detect_spans(w, text, embed)
    found = 0
    for s in spans:
        a = text.find(s)
        b = a + len(s)
        found += any(x < b and y > a for x, y in hits)
    return bool(hits), found


def run(items: list[dict[str, Any]], embed: Callable[[list[str]], np.ndarray], model: str, dim: int,
        forms: list[str] | None = None, misses: str | None = None) -> dict[str, Any]:
    cache: dict[str, np.ndarray] = {}

    def cached(texts: list[str]) -> np.ndarray:
        need = [t for t in dict.fromkeys(texts) if t not in cache]
        if need:
            for t, v in zip(need, embed(need)):
                cache[t] = np.asarray(v, dtype=np.float64)
        return np.stack([cache[t] for t in texts])

    ws, fold_of, threshold, base = fold_models(items, cached, model, dim)
    by_fold: dict[int, list[dict[str, Any]]] = {}
    for it, f in zip(items, fold_of):
        by_fold.setdefault(int(f), []).append(it)
    out: dict[str, Any] = {"threshold": threshold, "original": base, "forms": {}, "misses": []}
    todo = forms or list(FORMS)
    # Pre-embed every transformed sentence in one call.
    jobs: list[tuple[str, dict[str, Any], int, str, list[str]]] = []
    for name in todo:
        for it, f in zip(items, fold_of):
            r = FORMS[name](it, by_fold[int(f)])
            if r is None:
                continue
            text, spans = r
            if it["label"] and not all(s in text for s in spans):
                continue
            jobs.append((name, it, int(f), text, spans))
    cached([u.text for _, _, _, text, _ in jobs for u in cues.units(text)])
    for name in todo:
        rows = [j for j in jobs if j[0] == name]
        fig: dict[str, Any] = {}
        for lang in ("all", "en", "zh"):
            sel = [j for j in rows if lang == "all" or (("zh" if _zh(j[1]) else "en") == lang)]
            pos = [j for j in sel if j[1]["label"]]
            neg = [j for j in sel if not j[1]["label"]]
            rules = found = prompts_hit = fp = 0
            for _, it, f, text, spans in pos:
                hit, k = _score(ws[f], text, spans, cached)
                rules += len(spans)
                found += k
                prompts_hit += hit
                if misses == name and lang == "all" and k < len(spans):
                    out["misses"].append(text)
            for _, it, f, text, _spans in neg:
                hit, _k = _score(ws[f], text, [], cached)
                fp += hit
                if misses == name and lang == "all" and hit:
                    out["misses"].append("FP: " + text)
            fig[lang] = {"positives": len(pos), "negatives": len(neg),
                         "rule_recall": round(found / rules, 4) if rules else None,
                         "prompt_recall": round(prompts_hit / len(pos), 4) if pos else None,
                         "false_alarm": round(fp / len(neg), 4) if neg else None,
                         "precision": round(prompts_hit / (prompts_hit + fp), 4) if prompts_hit + fp else None}
        out["forms"][name] = fig
    # Hand-written probes (impersonal/passive, very short): scored by the model fitted on the whole dev set.
    if PROBES.exists() and (forms is None or "probes" in todo):
        probes = [json.loads(line) for line in PROBES.read_text(encoding="utf-8").splitlines() if line.strip()]
        full = _full_weights(items, ws[0], cached, model, dim)
        groups: dict[str, list[tuple[int, bool]]] = {}
        for p in probes:
            hit, _ = _score(full, p["text"], [], cached)
            groups.setdefault(p["form"], []).append((p["label"], hit))
            if misses == "probes" and hit != bool(p["label"]):
                out["misses"].append(("FP: " if hit else "") + p["text"])
        for form, pairs in sorted(groups.items()):
            npos = sum(1 for y, _ in pairs if y)
            tp = sum(1 for y, h in pairs if y and h)
            fp = sum(1 for y, h in pairs if not y and h)
            out["forms"]["probe:" + form] = {"all": {
                "positives": npos, "negatives": len(pairs) - npos, "rule_recall": round(tp / npos, 4) if npos else None,
                "prompt_recall": round(tp / npos, 4) if npos else None,
                "false_alarm": round(fp / (len(pairs) - npos), 4) if len(pairs) > npos else None,
                "precision": round(tp / (tp + fp), 4) if tp + fp else None}}
    return out


def _full_weights(items: list[dict[str, Any]], like: Weights, embed: Callable[[list[str]], np.ndarray], model: str,
                  dim: int) -> Weights:
    d = train._Data(items, embed)
    _, folds = train.unit_folds(items, d)
    every = np.arange(len(d.y))
    stack = train._ridge_oof(d.K, d.y, every, folds)
    mean, scale, coef, bias = fit_logistic(np.column_stack([d.X, stack]), d.y, train.L2)
    alpha, b = ngrams.fit_ridge_dual(d.K, d.y, train.LAMBDA)
    head = Head(list(cues.FEATURE_NAMES) + ["probe"], mean, scale, coef, bias, d.Phi.T @ alpha, b)
    return replace(like, rule=head)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compass_eval.standing_forms", description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--form", action="append", default=None, help="only these forms (repeatable; 'probes' too)")
    ap.add_argument("--misses", default=None, help="list the transformed prompts of this form that were missed")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from compass_hooks.config import load_config
    from compass_hooks.embedding import get_embedder

    embedder = get_embedder(args.model, load_config())
    items = train.load_dev()
    rep = run(items, lambda ts: np.asarray(embedder.embed(ts)), embedder.name, int(embedder.dim), args.form,
              args.misses)
    if args.json:
        print(json.dumps(rep, ensure_ascii=False, indent=1))
        return 0
    o = rep["original"]
    print(f"threshold {rep['threshold']:.4f}; original form: OOF precision {o['precision']:.3f} recall {o['recall']:.3f}")
    print(f"{'form':<22}{'n+':>6}{'rule R':>8}{'en R':>7}{'zh R':>7}{'n-':>6}{'FA':>7}{'P':>7}")
    for name, fig in rep["forms"].items():
        a = fig["all"]
        en = fig.get("en", {}).get("rule_recall")
        zh = fig.get("zh", {}).get("rule_recall")

        def f(x: float | None) -> str:
            return "   -" if x is None else f"{x:.3f}"
        print(f"{name:<22}{a['positives']:>6}{f(a['rule_recall']):>8}{f(en):>7}{f(zh):>7}{a['negatives']:>6}"
              f"{f(a['false_alarm']):>7}{f(a['precision']):>7}")
    for m in rep["misses"]:
        print("  miss: " + " ".join(m.split())[:200])
    return 0


if __name__ == "__main__":
    sys.exit(main())
