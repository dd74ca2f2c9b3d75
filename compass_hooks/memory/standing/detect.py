"""The standing-instruction detector: from one user prompt, whether it sets (or lifts) a rule for later turns,
the rule's sentence(s) whole, its scope and its subjects.

Per sentence of the prompt (:func:`.cues.units`): the cue families of :mod:`.cues`, plus a ridge text probe
over hashed word/character n-grams and the sentence embedding (:mod:`compass_hooks.learn.ngrams`), go into an
L2 logistic regression (:mod:`compass_hooks.learn.linear`). The prompt sets a rule when its best sentence
clears the threshold chosen for precision on out-of-fold dev predictions (a false rule would be injected with
every later prompt, so precision comes first). Adjacent sentences that clear the lower ``extend`` threshold
join it (a rule said in two sentences stays whole). A second head tells a revocation ("you can use bold
again") from a rule that sets something; the scope is the one the user named, else the scope head's guess
(reply style -> this session, code and repository work -> this project).

The weights come from :mod:`.train` (``compass-hook instructions train``), one file per embedding model:
the user's own retrain in ``<data>/calibration/instructions/<model>.json`` first, then the one shipped in the
package (``memory/standing/weights/<model>.json``).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ...errors import CompassError
from ...learn import ngrams
from ...learn.linear import logistic_proba
from . import cues

if TYPE_CHECKING:  # pragma: no cover
    from ..corelike import CoreLike

SCHEMA = 1
SHIPPED = Path(__file__).resolve().parent / "weights"
_FEATURE = "memory.standing.detector"


class NoWeights(CompassError):
    """No detector weights for this embedding model."""


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "model"


def weights_candidates(paths: Any, model_name: str) -> list[Path]:
    """Where the weights for ``model_name`` are looked for, in order: a local retrain, then the shipped file."""
    name = f"{safe_name(model_name)}.json"
    return [Path(paths.data) / "calibration" / "instructions" / name, SHIPPED / name]


@dataclass
class Head:
    """Logistic over named features (standardised), optionally with a text probe whose score is its last feature."""

    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    probe_w: np.ndarray | None = None
    probe_b: float = 0.0

    def proba(self, X: np.ndarray, Phi: np.ndarray | None = None) -> np.ndarray:
        if self.probe_w is not None:
            X = np.column_stack([X, Phi @ self.probe_w + self.probe_b])
        return logistic_proba(X, self.mean, self.scale, self.coef, self.bias)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "bias": float(self.bias),
            "features": [{"name": n, "mean": float(m), "scale": float(s), "coef": float(c)}
                         for n, m, s, c in zip(self.features, self.mean, self.scale, self.coef)]}
        if self.probe_w is not None:
            out["probe"] = {"bias": float(self.probe_b), "weights": [float(f"{x:.6g}") for x in self.probe_w]}
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Head":
        f = d["features"]
        probe = d.get("probe")
        return cls([x["name"] for x in f], np.array([x["mean"] for x in f]), np.array([x["scale"] for x in f]),
                   np.array([x["coef"] for x in f]), float(d["bias"]),
                   None if probe is None else np.array(probe["weights"], dtype=np.float64),
                   0.0 if probe is None else float(probe["bias"]))


@dataclass
class Weights:
    model: str
    dim: int
    hash_dim: int
    embed_scale: float
    rule: Head  # sentence sets or lifts a rule
    revoke: Head  # given a rule sentence: it lifts a rule (vs sets one)
    scope: Head  # given a rule sentence naming no scope: this session (vs this project)
    threshold: float
    extend: float
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA, "model": self.model, "dim": self.dim, "hash_dim": self.hash_dim,
                "embed_scale": self.embed_scale, "threshold": round(self.threshold, 6), "extend": round(self.extend, 6),
                **self.meta, "rule": self.rule.to_json(), "revoke": self.revoke.to_json(), "scope": self.scope.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any], source: str = "<weights>") -> "Weights":
        try:
            if d["schema_version"] != SCHEMA:
                raise KeyError("schema_version")
            rule = Head.from_json(d["rule"])
            if rule.features[:-1] != cues.FEATURE_NAMES:
                raise KeyError("features (the cue families changed: retrain)")
            meta = {k: v for k, v in d.items() if k not in ("schema_version", "model", "dim", "hash_dim", "embed_scale",
                                                            "threshold", "extend", "rule", "revoke", "scope")}
            return cls(str(d["model"]), int(d["dim"]), int(d["hash_dim"]), float(d["embed_scale"]), rule,
                       Head.from_json(d["revoke"]), Head.from_json(d["scope"]), float(d["threshold"]),
                       float(d["extend"]), meta)
        except (KeyError, TypeError, ValueError) as exc:
            raise NoWeights(f"standing-instruction weights {source}: bad or missing field {exc}",
                            "retrain with `compass-hook instructions train`") from None


def load_weights(path: Path) -> Weights:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise NoWeights(f"standing-instruction weights {path}: cannot read: {exc}",
                        "retrain with `compass-hook instructions train`") from None
    return Weights.from_json(data, str(path))


def write_weights(weights: Weights, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(weights.to_json(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- detection


@dataclass(frozen=True)
class Rule:
    """A standing instruction found in a prompt. ``text == prompt[start:end]``: whole sentences (a preface that
    only talks about the rule dropped), never cut inside one."""

    action: str  # set | revoke
    text: str
    start: int
    end: int
    scope: str  # session | project | global
    scope_named: bool  # the user said the scope (else the scope head's guess)
    subjects: tuple[str, ...]
    prob: float
    lang: str


def unit_matrix(texts: Sequence[str], units_per: Sequence[Sequence[cues.Unit]]) -> np.ndarray:
    rows = []
    for text, us in zip(texts, units_per):
        for u in us:
            rows.append(cues.features(u, text, len(us)))
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(cues.FEATURE_NAMES))


# No language feature: the dev set's Chinese revocations sit in one scenario, so a fold without them would
# learn "Chinese means not a revocation".
REVOKE_FEATURES = ["revoke", "replace", "prohibition", "temporal", "restated", "always_never", "polite", "imperative",
                   "question"]
SCOPE_FEATURES = ["format", "length", "vocabulary", "language", "tool", "start_end", "style", "process", "is_zh"]


def sub_features(X: np.ndarray, names: Sequence[str]) -> np.ndarray:
    idx = [cues.FEATURE_NAMES.index(n) for n in names]
    return X[:, idx]


def score_units(w: Weights, texts: Sequence[str], X: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rule probability, design matrix) per unit."""
    Phi = ngrams.design(texts, vectors, w.hash_dim, w.embed_scale)
    return w.rule.proba(X, Phi), Phi


def _own_rule(w: Weights, p: np.ndarray, subj: Sequence[set[str]], seed: int, j: int) -> bool:
    """Whether neighbour ``j`` is a rule of its own rather than part of the seed's: a rule by itself, about other
    things ("Always give me prices in euros. And no emojis please."). Kept whole, lifting one later ("the emoji ban
    is over") would lift the other. Sentences about the same thing ("Keep answers short. Three sentences max."),
    or both naming nothing known, stay one rule."""
    return bool(p[j] >= w.threshold and (subj[seed] or subj[j]) and not subj[seed] & subj[j])


def detect(w: Weights, text: str, embed: Callable[[list[str]], np.ndarray], bar: float | None = None) -> list[Rule]:
    """The rules ``text`` sets or lifts, best first ([] for none). ``embed(texts)`` gives the sentences' vectors
    (one call; the caller may answer from vectors it has). ``bar``: a lower bar than the trained threshold also
    gives the sentences between the two as candidates (``prob`` says which are rules on their own); the rules at
    the threshold are the same either way (neighbours join a rule at ``w.extend`` only)."""
    us = cues.units(text)
    if not us:
        return []
    X = unit_matrix([text], [us])
    texts = [u.text for u in us]
    vecs = np.asarray(embed(texts), dtype=np.float64)
    if vecs.shape != (len(us), w.dim):
        raise NoWeights(f"the detector's weights are for a {w.dim}-d model, the embedder gives {vecs.shape[-1]}",
                        "retrain with `compass-hook instructions train`")
    p, Phi = score_units(w, texts, X, vecs)
    # Subjects only where _own_rule can look: a neighbour at the threshold, and a seed that meets one (a seed below
    # the threshold never does: a neighbour above it was picked first). Not every sentence of every prompt.
    subj = [set(cues.subjects(t)) if p[k] >= w.threshold else set() for k, t in enumerate(texts)]
    picked: list[tuple[int, list[int]]] = []
    used: set[int] = set()
    for i in np.argsort(-p, kind="mergesort"):
        i = int(i)
        if p[i] < (w.threshold if bar is None else min(bar, w.threshold)) or i in used:
            continue
        span = [i]
        for step in (-1, 1):  # grow over neighbours that also read as part of the rule
            j = i + step
            while 0 <= j < len(us) and j not in used and p[j] >= w.extend and not _own_rule(w, p, subj, i, j):
                span.append(j)
                j += step
        span.sort()
        used.update(span)
        picked.append((i, span))
    rules = []
    for seed, span in picked:
        s, e = us[span[0]].start, us[span[-1]].end
        s += cues.trim_preface(text[s:e])
        rule_text = text[s:e]
        rows = np.array(span)
        # Set or lift: the sentence that reads most as the rule decides, not a neighbour joined to it ("每次你改完
        # 代码，先跑一遍 pytest…… 已取消的订单还能发货。" is not a revocation because the task mentions 取消).
        one = np.array([seed])
        revoke_p = float(w.revoke.proba(sub_features(X[one], REVOKE_FEATURES), Phi[one])[0])
        scope = cues.explicit_scope(rule_text)
        named = scope is not None
        if scope is None:
            sess = float(w.scope.proba(sub_features(X[rows], SCOPE_FEATURES), Phi[rows]).mean())
            scope = "session" if sess >= 0.5 else "project"
        rules.append(Rule("revoke" if revoke_p >= 0.5 else "set", rule_text, s, e, scope, named,
                          tuple(cues.subjects(rule_text)), float(p[span].max()),
                          "zh" if cues.is_zh(rule_text) else "en"))
    return rules


# --------------------------------------------------------------------------- per core


class _Loaded:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.weights: Weights | None = None
        self.signature: tuple | None = None


def weights_for(core: CoreLike) -> Weights:
    """The detector weights for the core's embedding model (reloaded when the file changes)."""
    st: _Loaded = core.feature(_FEATURE, lambda c: _Loaded())
    name = core.embedder.name
    for path in weights_candidates(core.paths, name):
        try:
            stat = path.stat()
        except OSError:
            continue
        sig = (str(path), stat.st_mtime_ns, stat.st_size)
        with st.lock:
            if st.signature != sig or st.weights is None:
                st.weights = load_weights(path)
                st.signature = sig
            return st.weights
    cands = ", ".join(str(p) for p in weights_candidates(core.paths, name))
    raise NoWeights(f"no standing-instruction weights for embedding model {name!r} (looked in {cands})",
                    f"run `compass-hook instructions train --model {name}`")
