"""What memory's hook entry points call for standing instructions (docs/memory.md, "Standing instructions").

- :func:`observe`: after a user prompt is stored (the deferred capture, or a transcript ingest), detect what it
  sets or lifts and update the store of active instructions. Not on the answer path.
- :func:`block`: the ``Compass — standing instructions`` block of the rules in force for a prompt's project and
  session: one indexed query, whole rule texts within ``memory.instructions_budget_chars``.
- :func:`continue_session`: a SessionStart that continues another session under a new id (compaction noted by
  PreCompact, ``--resume``) carries that session's rules over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from ...logs import get_logger
from ...textrules.instructions import looks_like_instruction
from .. import inject
from ..store import FLAG_SUSPICIOUS, GLOBAL
from . import active, detect

if TYPE_CHECKING:  # pragma: no cover
    from ..corelike import CoreLike

HEADER = "Compass — standing instructions (set by the user earlier, in their words; still in force)"
DEFAULT_BUDGET = 800
_SCOPE_LABEL = {"session": "this session", "project": "this project", "global": "every project"}

log = get_logger("memory")


def _cfg(core: CoreLike, key: str, default: Any) -> Any:
    try:
        value = core.config.get("memory", key)
    except KeyError:
        return default
    return default if value is None else value


def enabled(core: CoreLike) -> bool:
    return bool(_cfg(core, "instructions", True))


def budget(core: CoreLike) -> int:
    return int(_cfg(core, "instructions_budget_chars", DEFAULT_BUDGET))


def _embedder(core: CoreLike, known: Mapping[str, Any] | None):
    def embed(texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if not known or known.get(t) is None]
        fresh = dict(zip(missing, core.embedder.embed(missing))) if missing else {}
        return np.stack([np.asarray(known[t] if known and known.get(t) is not None else fresh[t]) for t in texts])

    return embed


def _similarity(core: CoreLike):
    def cosines(text: str, texts: list[str]) -> list[float]:
        vecs = np.asarray(core.embedder.embed([text, *texts]), dtype=np.float64)
        return [float(v) for v in vecs[1:] @ vecs[0]]

    return cosines


def observe(core: CoreLike, text: str, project: str | None, session: str | None, memory_id: int | None,
            flags: Iterable[str] = (), vectors: Mapping[str, Any] | None = None,
            created: float | None = None, capture_key: str | None = None) -> dict[str, list[int]]:
    """Detect the rules a stored user prompt sets or lifts and record them. ``vectors``: embeddings by exact
    text already made (the prompt's). Text that reads like instructions *to the model* (an injection) is never
    taken as the user's rule."""
    if not enabled(core) or FLAG_SUSPICIOUS in set(flags) or not text:
        return {"added": [], "retired": []}
    weights = detect.weights_for(core)
    found = [r for r in detect.detect(weights, text, _embedder(core, vectors), bar=active.AMEND_MIN_PROB)
             if not looks_like_instruction(r.text)]
    rules = [r for r in found if r.prob >= weights.threshold]
    replaces: list[int] = []
    revokes: list[int] = []
    if not rules:  # nothing reads as a rule on its own: maybe it changes or lifts one in force
        below = [r for r in found if r.prob < weights.threshold]
        amended = active.amendment(core.store, below, project, session, _similarity(core))
        if amended is not None:
            rules, replaces = [amended[0]], [amended[1]]
        else:
            revokes = active.lift(core.store, below, project, session)
            if not revokes:
                return {"added": [], "retired": []}
    return active.apply(core.store, rules, project, session, memory_id, created, _similarity(core), capture_key,
                        replaces, revokes)


def _item(r: dict[str, Any], now: float | None) -> str:
    where = _SCOPE_LABEL.get(r["scope"], r["scope"])
    # Whole: a rule is never cut (the budget drops a rule rather than cut one).
    return f"- {inject.quote(r['text'], limit=len(r['text']) + 1)} ({where}, {inject.age(r['created'], now)})"


def rules_in_force(core: CoreLike, project: str | None, session: str | None) -> list[dict[str, Any]]:
    """Active rules for (project, session), a newer one overriding an older one on the same subject, with any
    that reads like instructions to the model left out (the patterns grow; re-checked when shown)."""
    rules = active.in_force(active.visible(core.store, project or GLOBAL, session))
    return [r for r in rules if not looks_like_instruction(r["text"])]


def block(core: CoreLike, project: str | None, session: str | None, limit: int | None = None,
          now: float | None = None, rules: list[dict[str, Any]] | None = None) -> str:
    """The rules in force as a ``Compass — standing instructions`` block (newest first; whole rules that fit
    ``limit`` characters), or "" when there are none."""
    if not enabled(core):
        return ""
    limit = budget(core) if limit is None else limit
    rules = rules_in_force(core, project, session) if rules is None else rules
    lines = [HEADER]
    used = len(HEADER)
    for r in rules:
        line = _item(r, now)
        if used + 1 + len(line) > limit:
            continue
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines) if len(lines) > 1 else ""


def continue_session(core: CoreLike, project: str | None, session: str | None, source: str | None,
                     earlier_sessions: Iterable[str] = ()) -> list[int]:
    """SessionStart: when this session continues others under a new id, copy their session rules here.
    ``earlier_sessions``: ids a resumed transcript names; a compaction also asks the PreCompact record."""
    olds = [s for s in earlier_sessions if s and s != session]
    if source == "compact":
        prior = active.handoff_source(core.store, project, session)
        if prior:
            olds.append(prior)
    if not olds:
        return []
    return active.inherit(core.store, project, olds, session)
