"""Per-core drift state: the selected packs embedded once, re-embedded when a
pack file (or the tuned weights) changes, the calibration for the embedder,
and batch scoring. Lives in ``core.feature("drift", ...)``; thread-safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..errors import AnchorPackError, CompassError
from ..logs import get_logger
from . import neighbours as nbrmod
from . import pack as packmod
from .cues import COMMON, get_cues
from .features import AnchorIndex, alert_category, build_features, covers, embedding_languages
from .model import LogisticModel, load_calibration, safe_model_name
from .rules import RuleHit

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike

log = get_logger("drift")
# core.state key: build the neighbour index in a process of its own and score without it meanwhile (the worker,
# which must answer hooks at once) rather than build it here before scoring (a command run in process).
BACKGROUND_BUILDS = "drift.background_builds"
NEIGHBOUR_POLL_S = 1.0  # how often a worker waiting for its background build looks for the file
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
        self._nbr: tuple[Path, nbrmod.NeighbourIndex] | None = None
        self._nbr_failed: dict[Path, str] = {}
        self._nbr_build: tuple[Path, subprocess.Popen] | None = None
        self._nbr_polled = 0.0

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

    def threshold(self, lang: str | None = None, head: LogisticModel | None = None) -> float:
        """The alert threshold for prompts in ``lang`` (None: languages without their own) under ``head`` (default:
        the head scoring now); ``drift.threshold`` in config.toml overrides every language."""
        configured = self.core.config.get("drift", "threshold")
        if configured is not None:
            return float(configured)
        if head is None:
            model = self.model()
            head = model.head(self.neighbour_index(model, build=False) is not None)
        return head.threshold if lang is None else head.threshold_for(lang)

    # -- nearest dev items -------------------------------------------------------------
    def neighbour_index(self, model: LogisticModel, build: bool = True) -> nbrmod.NeighbourIndex | None:
        """The index of the dev items ``model`` was trained on, or None while it is not there (the model's head
        without neighbour features scores meanwhile). Cached in <data>/cache; when missing it is built here, or,
        in the worker, by a low-priority process of its own (``build``: False only looks)."""
        spec = model.neighbours
        if not spec or not model.uses_neighbours:
            return None
        path = nbrmod.cache_path(self.core.paths.data, spec)
        with self._lock:
            if self._nbr is not None and self._nbr[0] == path:
                return self._nbr[1]
            if path in self._nbr_failed:
                return None
            background = bool(self.core.state.get(BACKGROUND_BUILDS))
            if background and self._nbr_build is not None and self._nbr_build[0] == path:
                if self._nbr_build[1].poll() is None and time.monotonic() - self._nbr_polled < NEIGHBOUR_POLL_S:
                    return None
                self._nbr_polled = time.monotonic()
            index = self._load_neighbours(path, spec)
            if index is None and build:
                if background:
                    self._build_in_background(path, spec)
                else:
                    index = self._build_neighbours(path, spec)
            if index is not None:
                self._nbr = (path, index)
            return index

    def _load_neighbours(self, path: Path, spec: dict) -> nbrmod.NeighbourIndex | None:
        if not path.is_file():
            return None
        try:
            index = nbrmod.NeighbourIndex.load(path)
            if index.digest != spec["sha256_16"]:
                raise ValueError("built for other dev items")
            return index
        except (OSError, ValueError, KeyError) as exc:  # torn or foreign: built again
            log.warning("drift neighbour index %s unreadable (%s); building it again", path, exc)
            path.unlink(missing_ok=True)
            return None

    def _build_neighbours(self, path: Path, spec: dict) -> nbrmod.NeighbourIndex | None:
        t0 = time.perf_counter()
        print("compass-hooks: indexing the drift dev items (once; a few seconds)...", file=sys.stderr)
        try:
            index = nbrmod.build(spec)
            index.save(path)
            nbrmod.remove_stale(path)
        except (AnchorPackError, OSError) as exc:
            self._neighbours_failed(path, str(exc))
            return None
        log.info("drift neighbour index built in %.1f s: %s", time.perf_counter() - t0, path)
        return index

    def _build_in_background(self, path: Path, spec: dict) -> None:
        if self._nbr_build is not None:
            old_path, proc = self._nbr_build
            if proc.poll() is None and old_path == path:
                return
            if proc.poll() is not None and old_path == path:  # it ended and left no file
                self._neighbours_failed(path, f"the background build exited with {proc.returncode} (see {self._build_log()})")
                return
        root = str(Path(nbrmod.__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}
        logfile = self._build_log()
        try:
            with open(logfile, "ab") as err:
                proc = subprocess.Popen([sys.executable, "-m", nbrmod.__name__, json.dumps(spec), str(path)],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
        except OSError as exc:
            self._neighbours_failed(path, f"cannot start the background build: {exc}")
            return
        log.info("building the drift neighbour index in the background (pid %d): %s", proc.pid, path)
        self._nbr_build = (path, proc)
        self._nbr_polled = time.monotonic()

    def _build_log(self) -> Path:
        return self.core.paths.logs / "drift-neighbours.log"

    def _neighbours_failed(self, path: Path, why: str) -> None:
        """Scored without the neighbour features from now on in this process (the next one tries again)."""
        self._nbr_failed[path] = why
        log.warning("drift scores without the nearest-dev-item features: %s", why)

    def _neighbours_note(self, model: LogisticModel) -> str:
        assert model.neighbours is not None
        why = self._nbr_failed.get(nbrmod.cache_path(self.core.paths.data, model.neighbours))
        if why:
            return f"not used: {why}"
        return "not used yet: their index is being built (once after an install or update, a few seconds)"

    def close_feature(self) -> None:
        """A background build still running stops with the worker (the next worker starts it again)."""
        build, self._nbr_build = self._nbr_build, None
        if build is not None and build[1].poll() is None:
            build[1].terminate()
            try:
                build[1].wait(timeout=5)
            except subprocess.TimeoutExpired:
                build[1].kill()

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
        index = self.neighbour_index(model)
        head = model.head(index is not None)
        top_k = int(self.core.config.get("drift", "top_k"))
        clipped = [scored_text(t) for t in texts]
        vectors = with_vectors if with_vectors is not None else self.core.embedder.embed(clipped)
        feats = build_features(clipped, vectors, snap.index, top_k, with_hits, languages=languages)
        probs = head.predict_proba(head.features_for(clipped, vectors, feats, index), feats["langs"])
        # once per batch, not per prompt: whether the neighbour features scored, and why not
        nbr_note = None if head is model or not model.uses_neighbours else self._neighbours_note(model)
        nbr_used = head is model and model.uses_neighbours
        out = []
        for i in range(len(texts)):
            lang = feats["langs"][i]
            parts = self._parts(head, lang, languages)
            if nbr_used:
                parts["parts"].insert(-1, "nearest dev items")
            elif nbr_note:
                parts["neighbours"] = nbr_note
            out.append(self._result(i, texts[i], feats, float(probs[i]), self.threshold(lang, head), snap.index, parts))
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
