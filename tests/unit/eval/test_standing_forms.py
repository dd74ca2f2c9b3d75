"""`compass_eval.standing_forms`: the form rewrites keep the rule's words findable, and the out-of-fold run
(fake embedder, a small dev subset) reports every form."""

from __future__ import annotations

import numpy as np

from compass_eval import standing_forms as sf
from compass_hooks.embedding.fake import FakeEmbedder
from compass_hooks.memory.standing import train


def _items() -> list[dict]:
    rows = train.load_dev()
    picked: list[dict] = []
    for lang in ("en", "zh"):
        for label in (1, 0):
            same = [r for r in rows if r.get("lang") == lang and r["label"] == label]
            picked += same[:: max(1, len(same) // 30)][:30]
    return picked


def test_every_form_keeps_the_rule_text_in_the_rewritten_prompt():
    items = _items()
    for name, form in sf.FORMS.items():
        made = 0
        for it in items:
            out = form(it, items)
            if out is None:
                continue
            text, spans = out
            made += 1
            assert text != it["text"] or name in ("lower",)
            if it["label"]:
                assert spans and all(s in text for s in spans), (name, it["id"])
            else:
                assert spans == []
        assert made, name


def test_typos_touch_two_words_and_never_the_first_letter():
    s = "Please keep every answer under fifty words."
    out = sf._typos(s, 12345)
    assert out != s and len(out.split()) == len(s.split())
    assert [w[0] for w in out.split()] == [w[0] for w in s.split()]


def test_run_reports_every_form_out_of_fold():
    emb = FakeEmbedder(64)
    items = _items()
    rep = sf.run(items, lambda ts: np.asarray(emb.embed(ts)), "fake", 64, forms=["lower", "bullet", "multi"])
    assert set(rep["forms"]) == {"lower", "bullet", "multi"}
    assert 0.0 <= rep["original"]["recall"] <= 1.0
    for fig in rep["forms"].values():
        assert fig["all"]["positives"] > 0 and fig["all"]["rule_recall"] is not None
