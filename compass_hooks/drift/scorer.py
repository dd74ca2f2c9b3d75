"""Per-core drift state: the selected packs embedded once, re-embedded when a
pack file (or the tuned weights) changes, the calibration for the embedder,
and batch scoring. Lives in ``core.feature("drift", ...)``; thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import AnchorPackError, CompassError
from ..logs import get_logger
from . import pack as packmod
from .cues import COMMON, get_cues
from .features import AnchorIndex, alert_category, build_features, covers, embedding_languages
from .model import LogisticModel, load_calibration, safe_model_name
from .rules import RuleHit

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike

log = get_logger("drift")
N_ANCHORS_SHOWN = 3
MAX_SCORED_CHARS = 20_000


def scored_text(text: str) -> str:
    """What the model reads of a text: a pasted log can be megabytes; the model reads far less, and the
    regexes stay fast."""
    return text[:MAX_SCORED_CHARS]


@dataclass
class Snapshot:
    signature: str
    files: list[Path]
    index: AnchorIndex


def calibration_candidates(paths: Any, model_name: str) -> list[Path]:
    """Local retrain (data dir) first, then the calibration shipped with the packs."""
    name = f"{safe_model_name(model_name)}.json"
    return [paths.data / "calibration" / name, packmod.shipped_dir(paths) / "calibration" / name]


def first_loadable(files: list[Path]) -> LogisticModel:
    """The first calibration of ``files`` that loads. A user's own one that this version cannot read (trained
    before the probe's block sizes changed) gives way to the next, with a warning naming the fix; with nothing
    after it, its error stands. The scorer and install.sh (which retrains when this raises) both ask here."""
    for i, path in enumerate(files):
        try:
            return load_calibration(path)
        except AnchorPackError as exc:
            if i == len(files) - 1:
                raise
            log.warning("%s; using %s until then", exc, files[i + 1])
    raise AnchorPackError("no drift calibration", "run `compass-hook anchors train`")


class DriftState:
    def __init__(self, core: CoreLike):
        self.core = core
        self._lock = threading.RLock()
        self._snapshots: dict[tuple, Snapshot] = {}  # (project pack key) -> last good snapshot
        self._model: LogisticModel | None = None
        self._model_sig: tuple | None = None
        self.last_error: str | None = None

    # -- anchors -----------------------------------------------------------
    def snapshot(self, project: str | None = None) -> Snapshot:
        paths, config = self.core.paths, self.core.config
        try:
            files = packmod.selected_pack_paths(paths, config, project)
        except AnchorPackError as exc:  # a broken projects.json: fall back to drift.packs
            log.warning("per-project pack selection ignored: %s", exc)
            self.last_error = str(exc)
            files = packmod.selected_pack_paths(paths, config, None)
        key = tuple(str(f) for f in files)
        sig = packmod.file_signature(files + [packmod.weights_path(paths)])
        with self._lock:
            cur = self._snapshots.get(key)
            if cur is not None and cur.signature == sig:
                return cur
            try:
                anchors = packmod.load_anchors(files, packmod.load_weights(paths))
            except AnchorPackError as exc:
                self.last_error = str(exc)
                last = cur or next(iter(self._snapshots.values()), None)
                if last is None:
                    raise
                log.warning("anchor packs invalid, keeping the last good ones: %s", exc)
                return last
            vectors = self.core.embedder.embed([a.text for a in anchors])
            snap = Snapshot(sig, files, AnchorIndex(anchors, vectors))
            self._snapshots[key] = snap
            self.last_error = None
            return snap

    # -- calibration ---------------------------------------------------------
    def model(self) -> LogisticModel:
        name = self.core.embedder.name
        cands = calibration_candidates(self.core.paths, name)
        sig = tuple((str(p), p.stat().st_mtime_ns) for p in cands if p.is_file())
        with self._lock:
            if self._model is not None and self._model_sig == sig:
                return self._model
            if not sig:
                raise AnchorPackError(
                    f"no drift calibration for embedding model {name!r} (looked in {', '.join(map(str, cands))})",
                    f"run `compass-hook anchors train --model {name}`",
                )
            self._model = first_loadable([Path(p) for p, _ in sig])
            self._model_sig = sig
            return self._model

    def threshold(self, lang: str | None = None) -> float:
        """The alert threshold for prompts in ``lang`` (None: languages without their own); ``drift.threshold``
        in config.toml overrides every language."""
        configured = self.core.config.get("drift", "threshold")
        if configured is not None:
            return float(configured)
        model = self.model()
        return model.threshold if lang is None else model.threshold_for(lang)

    def embedding_languages(self, model: LogisticModel) -> frozenset[str] | None:
        """What the calibration was trained with (the features mean what they meant then), else what the
        embedder says it covers."""
        recorded = model.meta.get("embedding_languages")
        if isinstance(recorded, list) and recorded:
            return None if "multilingual" in recorded else frozenset(recorded)
        return embedding_languages(self.core.embedder)

    # -- scoring ---------------------------------------------------------------
    def score(self, texts: Sequence[str], project: str | None = None, with_vectors: np.ndarray | None = None,
              with_hits: Sequence[RuleHit | None] | None = None) -> list[dict]:
        """Results in input order. ``with_vectors`` / ``with_hits``: the clipped texts' embeddings and prompt-rule
        verdicts when the caller has them (a hook prompt, prepared once)."""
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return []
        snap = self.snapshot(project)
        model = self.model()
        languages = self.embedding_languages(model)
        top_k = int(self.core.config.get("drift", "top_k"))
        clipped = [scored_text(t) for t in texts]
        vectors = with_vectors if with_vectors is not None else self.core.embedder.embed(clipped)
        feats = build_features(clipped, vectors, snap.index, top_k, with_hits, languages=languages)
        probs = model.predict_proba(model.features_for(clipped, vectors, feats), feats["langs"])
        out = []
        for i in range(len(texts)):
            lang = feats["langs"][i]
            parts = self._parts(model, lang, languages)
            out.append(self._result(i, texts[i], feats, float(probs[i]), self.threshold(lang), snap.index, parts))
        return out

    def _parts(self, model: LogisticModel, lang: str, languages: frozenset[str] | None) -> dict:
        """Which parts scored a prompt in ``lang``: never a silent guess about a language the model cannot read."""
        cue_langs = [c for c in (COMMON, "en", lang) if c in get_cues().by_lang and (c != lang or lang != "en")]
        on = covers(languages, lang)
        name = self.core.embedder.name
        parts = {"language": lang, "embedding": name if on else None,
                 "parts": ["rules", "cues (" + ", ".join(cue_langs) + ")",
                           "text probe (character and word n-grams, cue concepts" + (", embedding)" if on else ")")]
                 + (["anchors"] if on else [])
                 + [f"{lang} calibration" if lang in model.languages else "shared calibration"]}
        if not on:
            covered = ", ".join(sorted(languages or ())) or "no language"
            parts["note"] = f"embedding model {name} covers {covered}, not {lang}: its features are not used for this prompt"
        return parts

    @staticmethod
    def _result(i: int, text: str, feats: dict, prob: float, threshold: float, index: AnchorIndex, parts: dict) -> dict:
        sims = feats["sims"][i]
        rule, rule_cat = feats["rules"][i]
        on = bool(feats["embedding_on"][i])  # else: no anchor drift (0.0) and no nearest anchors, see scored_by
        order: Sequence[int] | np.ndarray = np.argsort(-sims)[:N_ANCHORS_SHOWN] if on else []
        anchors = [{"id": index.anchors[j].id, "text": index.anchors[j].text, "polarity": index.anchors[j].polarity,
                    "similarity": round(float(sims[j]), 4)} for j in order]
        alert = bool(rule is not None or prob >= threshold)
        category = None
        if alert:
            category = rule_cat or alert_category(feats["cues"][i], sims, index, on)
        return {"text": text, "drift": round(float(feats["drift"][i]), 4) if on else 0.0, "probability": round(prob, 4),
                "alert": alert, "rule": rule, "category": category, "anchors": anchors, "lang": feats["langs"][i],
                "threshold": round(threshold, 4), "scored_by": parts}


def get_state(core: CoreLike) -> DriftState:
    return core.feature("drift", DriftState)


__all__ = ["DriftState", "get_state", "CompassError"]
