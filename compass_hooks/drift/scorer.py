"""Per-core drift state: the selected packs embedded once, re-embedded when a
pack file (or the tuned weights) changes, the calibration for the embedder,
and batch scoring. Lives in ``core.feature("drift", ...)``; thread-safe."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import AnchorPackError, CompassError
from ..logs import get_logger
from . import pack as packmod
from .features import BASE_FEATURES, AnchorIndex, alert_category, build_features
from .model import LogisticModel, load_calibration, safe_model_name
from .rules import RuleHit

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


class DriftState:
    def __init__(self, core: Any):
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
            self._model = load_calibration(Path(sig[0][0]))
            self._model_sig = sig
            return self._model

    def threshold(self) -> float:
        configured = self.core.config.get("drift", "threshold")
        return float(configured) if configured is not None else self.model().threshold

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
        threshold = self.threshold()
        top_k = int(self.core.config.get("drift", "top_k"))
        clipped = [scored_text(t) for t in texts]
        vectors = with_vectors if with_vectors is not None else self.core.embedder.embed(clipped)
        feats = build_features(clipped, vectors, snap.index, top_k, with_hits)
        probs = model.predict_proba(model.features_for(clipped, vectors, feats["X"]))
        return [self._result(i, texts[i], feats, float(probs[i]), threshold, snap.index) for i in range(len(texts))]

    @staticmethod
    def _result(i: int, text: str, feats: dict, prob: float, threshold: float, index: AnchorIndex) -> dict:
        sims = feats["sims"][i]
        rule, rule_cat = feats["rules"][i]
        order = np.argsort(-sims)[:N_ANCHORS_SHOWN]
        anchors = [{"id": index.anchors[j].id, "text": index.anchors[j].text, "polarity": index.anchors[j].polarity,
                    "similarity": round(float(sims[j]), 4)} for j in order]
        alert = bool(rule is not None or prob >= threshold)
        category = None
        if alert:
            if rule_cat:
                category = rule_cat
            else:
                category = alert_category(feats["X"][i], sims, index, bool(feats["X"][i][BASE_FEATURES.index("is_zh")]))
        return {"text": text, "drift": round(float(feats["drift"][i]), 4), "probability": round(prob, 4),
                "alert": alert, "rule": rule, "category": category, "anchors": anchors}


def get_state(core: Any) -> DriftState:
    return core.feature("drift", DriftState)


__all__ = ["DriftState", "get_state", "CompassError"]
