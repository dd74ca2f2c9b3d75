"""Feature vectors for the calibrated drift model.

Per prompt: its language (``lang.detect``); the embedding part, used only when the embedding model covers that
language (an English-only model's cosines on Spanish or Japanese are noise, so there they are neutralised:
zeros, with ``emb_on`` = 0 telling the model so): per polarity the weighted top-k mean of anchor cosines, their
difference (raw drift) and the best similarity per anchor category; the prompt-rule hits; one flag per cue
family (``cues.py``, patterns per language in ``anchors/cues/<lang>.json``); and the text probe's score, added
by the model (``probe.py``).
The feature *names* are part of the calibration file; change them and retrain.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Sequence

import numpy as np

from .cues import FAMILIES, FAMILY_CATEGORY, RULE_FAMILIES, get_cues
from .lang import LANGS, detect
from .pack import CATEGORIES, Anchor
from .rules import RuleHit, check_prompt_rules

EMBEDDING_FEATURES = ["pos", "neg", "drift"] + [f"cat_{c}" for c in CATEGORIES]
BASE_FEATURES = ["emb_on", "question", "log_len", "rule_destructive", "rule_secret"] + [f"lang_{lang}" for lang in LANGS]
FEATURE_NAMES = BASE_FEATURES + EMBEDDING_FEATURES + [f"cue_{f}" for f in FAMILIES]
# "Run the prompt rules here": a hook prompt arrives with its rules already checked (None = checked, no hit).
CHECK_RULES = object()
_QUESTION = re.compile(r"[?？]\s")
_CORRECTION = FAMILIES.index("correction")
_RULE_IDX = [FAMILIES.index(f) for f in RULE_FAMILIES]
MULTILINGUAL = "multilingual"


def embedding_languages(embedder: Any) -> frozenset[str] | None:
    """Languages whose text the embedder's vectors mean something for; None = every language.

    Embedders say so with a ``languages`` attribute (exported models: their manifest, see
    ``embedding/manifest.py``). One that does not is taken as English-only: better to score other languages
    by the language-aware parts alone than with noise."""
    langs = getattr(embedder, "languages", None)
    if langs is None:
        return frozenset({"en"})
    langs = frozenset(langs)
    return None if MULTILINGUAL in langs or "*" in langs else langs


def covers(langs: frozenset[str] | None, lang: str) -> bool:
    return langs is None or lang in langs


def weighted_topk(sims: np.ndarray, weights: np.ndarray, k: int) -> np.ndarray:
    """Per row: the top-k anchors by weight x cosine, their weighted mean cosine."""
    if sims.shape[1] == 0:
        return np.zeros(sims.shape[0], dtype=np.float64)
    k = max(1, min(k, sims.shape[1]))
    scored = sims * weights[None, :]
    idx = np.argpartition(-scored, k - 1, axis=1)[:, :k]
    s = np.take_along_axis(sims, idx, axis=1)
    w = weights[idx]
    return (s * w).sum(1) / np.clip(w.sum(1), 1e-9, None)


class AnchorIndex:
    """Anchor matrix and metadata arrays for one pack selection."""

    def __init__(self, anchors: Sequence[Anchor], vectors: np.ndarray):
        self.anchors = list(anchors)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.weights = np.array([a.weight for a in anchors], dtype=np.float64)
        self.positive = np.array([a.polarity == "positive" for a in anchors])
        self.category = np.array([CATEGORIES.index(a.category) for a in anchors])

    def with_weights(self, weights: dict[str, float]) -> "AnchorIndex":
        from dataclasses import replace

        anchors = [replace(a, weight=weights.get(a.id, a.weight)) for a in self.anchors]
        return AnchorIndex(anchors, self.vectors)


def cue_flags(text: str, lang: str) -> list[bool]:
    """One flag per cue family. A rule quoted inside a correction ("I said never force-push, you did it
    again") is a broken rule, which is drift: the rule families then do not count."""
    flags = get_cues().match(text, lang)
    if flags[_CORRECTION]:
        for i in _RULE_IDX:
            flags[i] = False
    return flags


def lexical_row(text: str, hit: RuleHit | None | object = CHECK_RULES, lang: str | None = None
                ) -> tuple[list[float], list[bool], str | None, str | None]:
    """(base features but emb_on, cue flags, rule id, rule category). ``hit``: the prompt rules' verdict if known."""
    if not isinstance(hit, RuleHit):  # None, or CHECK_RULES: check them here
        hit = check_prompt_rules(text) if hit is CHECK_RULES else None
    lang = lang or detect(text)
    stripped = text.strip()
    row = [
        1.0 if stripped.endswith(("?", "？")) or _QUESTION.search(stripped) else 0.0,
        math.log1p(len(stripped)) / 6.0,
        1.0 if hit and hit.category == "destructive_operation" else 0.0,
        1.0 if hit and hit.category == "secrets" else 0.0,
    ] + [1.0 if lang == code else 0.0 for code in LANGS]
    return row, cue_flags(text, lang), (hit.rule if hit else None), (hit.category if hit else None)


def alert_category(cue_row: Iterable[bool], sims_row: np.ndarray, index: "AnchorIndex", embedding_on: bool) -> str | None:
    """The drift category to name for an alert: the best anchor category (when the embedding reads the
    prompt's language), nudged by the cue families that fired (elsewhere the cues decide)."""
    from .pack import NEGATIVE_CATEGORIES

    scores: dict[str, float] = {}
    for c in NEGATIVE_CATEGORIES:
        cols = (index.category == CATEGORIES.index(c)) & ~index.positive
        scores[c] = float(sims_row[cols].max()) if embedding_on and cols.any() else 0.0
    for name, fired in zip(FAMILIES, cue_row):
        cat = FAMILY_CATEGORY.get(name)
        if cat and fired:
            scores[cat] = scores.get(cat, 0.0) + 0.25
    best = max(scores.items(), key=lambda kv: kv[1], default=(None, 0.0))
    return best[0] if best[1] > 0 else None


def build_features(texts: Sequence[str], vectors: np.ndarray, index: AnchorIndex, top_k: int = 3,
                   hits: Sequence[RuleHit | None] | None = None, languages: frozenset[str] | None = None,
                   langs: Sequence[str] | None = None) -> dict:
    """Feature matrix plus what the result and the probe need.

    ``hits``: the prompt rules' verdict per text when the caller ran them already; ``languages``: what the
    embedder covers (``embedding_languages``; None = all); ``langs``: each text's language if known."""
    n = len(texts)
    langs = list(langs) if langs is not None else [detect(t) for t in texts]
    sims = np.asarray(vectors, dtype=np.float64) @ index.vectors.T.astype(np.float64)
    pos = weighted_topk(sims[:, index.positive], index.weights[index.positive], top_k)
    neg = weighted_topk(sims[:, ~index.positive], index.weights[~index.positive], top_k)
    drift = neg - pos
    cat = np.zeros((n, len(CATEGORIES)))
    fallback = sims.mean(1) if sims.shape[1] else np.zeros(n)
    for ci in range(len(CATEGORIES)):
        cols = index.category == ci
        cat[:, ci] = sims[:, cols].max(1) if cols.any() else fallback
    on = np.array([covers(languages, lang) for lang in langs], dtype=np.float64)
    lex, cue_rows, rules = [], [], []
    for i, t in enumerate(texts):
        row, flags, rule, rcat = lexical_row(t, CHECK_RULES if hits is None else hits[i], langs[i])
        lex.append(row)
        cue_rows.append(flags)
        rules.append((rule, rcat))
    lex_arr = np.array(lex, dtype=np.float64).reshape(n, len(BASE_FEATURES) - 1)
    cues = np.array(cue_rows, dtype=bool).reshape(n, len(FAMILIES))
    emb = np.column_stack([pos, neg, drift, cat]) * on[:, None]  # neutralised where the model cannot read
    X = np.column_stack([on, lex_arr, emb, cues.astype(np.float64)])
    assert X.shape[1] == len(FEATURE_NAMES)
    return {"X": X, "sims": sims, "pos": pos, "neg": neg, "drift": drift, "rules": rules, "langs": langs,
            "embedding_on": on.astype(bool), "cues": cues}
