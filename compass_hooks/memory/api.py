"""What the hook handlers call (inside the worker). Contract in docs/architecture.md.

- ``prepare_prompt``: memory's part of the prompt context (:mod:`.prompt`) the UserPromptSubmit handler
  builds once; ``recall_for_prompt`` and ``capture_prompt`` read that context instead of the raw event.
- ``capture_prompt`` / ``capture_stop`` / ``ingest_transcript``: see :mod:`.capture`.
- ``recall_for_prompt``: the few earlier memories most relevant to this prompt,
  above a relevance floor, excluding the prompt itself and the session's last
  few turns (still in the model's context); on a drift alert the related
  constraints and corrections come first.
- ``session_brief``: pinned memories, the project's rules (constraints and
  corrections, including global ones) and its most recent decisions; after a
  compaction the same, headed as re-injected constraints.

Relevance floor: raw cosine of the query and the memory (the fused score is
relative to the best hit, so it cannot say "nothing is relevant"). Default
:data:`DEFAULT_MIN_COSINE` for MiniLM-class models; ``memory.min_score`` in the
config overrides it.
"""

from __future__ import annotations

from typing import Any

from ..logs import get_logger
from . import inject
from .capture import capture_prompt, capture_stop, event_project, field, ingest_transcript, prepare_prompt
from .prompt import PromptContext
from .store import GLOBAL, content_hash

__all__ = ["PromptContext", "capture_prompt", "capture_stop", "ingest_transcript", "prepare_prompt",
           "recall_for_prompt", "session_brief"]

DEFAULT_MIN_COSINE = 0.35
DRIFT_MIN_COSINE = 0.25  # constraints related to a drift alert are worth showing on weaker evidence
RULE_KINDS = ("constraint", "correction")
BRIEF_DECISIONS = 3
BRIEF_RULES = 12

log = get_logger("memory")


def _cfg(core: Any, key: str, default: Any) -> Any:
    try:
        value = core.config.get("memory", key)
    except KeyError:
        return default
    return default if value is None else value


def _search(core: Any, query: str, project: str, k: int, kinds=None, session=None, exclude_recent=0,
            vector: Any = None) -> list[dict]:
    from . import recall

    return recall.search(core, query, project, k=k, kinds=kinds, exclude_session=session,
                         exclude_recent=exclude_recent, query_vector=vector)


def _relevant(hits: list[dict], floor: float, skip_hash: str | None) -> list[dict]:
    out = []
    for h in hits:
        evidence = h.get("cosine")
        if evidence is None or evidence < floor:
            continue
        if skip_hash and content_hash(h.get("text", "")) == skip_hash:
            continue  # the current prompt, captured a moment ago
        out.append(h)
    return out


def recall_for_prompt(core: Any, prompt: PromptContext, drift: dict | None = None, budget: int = 1500) -> str:
    """A ``Compass — memory`` block for this prompt, or "" when nothing clears the floor."""
    p = prompt.prepared
    if p is None or len(p.text) < 3:
        return ""
    project = prompt.project or GLOBAL
    session = prompt.session
    k = int(_cfg(core, "recall_k", 3))
    floor = float(_cfg(core, "min_score", DEFAULT_MIN_COSINE))
    recent = int(_cfg(core, "exclude_recent_turns", 3))
    own = content_hash(p.text)
    chosen: list[dict] = []
    if drift:
        query = p.text
        if drift.get("category"):
            # Its own text, so its own embedding: only an alert pays for this second search.
            query = f"{query}\n{str(drift['category']).replace('_', ' ')}"
        related = _search(core, query, project, 2 * k, kinds=RULE_KINDS, session=session, exclude_recent=recent,
                          vector=prompt.vector(query))
        chosen.extend(_relevant(related, min(floor, DRIFT_MIN_COSINE), own)[:k])
    hits = _search(core, p.text, project, 3 * k, session=session, exclude_recent=recent, vector=prompt.vector(p.text))
    chosen.extend(_relevant(hits, floor, own))
    chosen = inject.unique(chosen)[: k + (k if drift else 0)]
    if not chosen:
        return ""
    return inject.block(inject.MEMORY_HEADER, chosen, budget)


def _is_compact(event: Any) -> bool:
    return field(event, "source") == "compact" or field(event, "hook_event_name") == "PreCompact"


def brief_memories(core: Any, project: str) -> list[dict]:
    """Pinned, then rules (project + global, newest first), then the latest decisions."""
    store = core.store
    scopes = [project] if project == GLOBAL else [project, GLOBAL]
    pinned, rules, decisions = [], [], []
    for scope in scopes:
        pinned += store.list(project=scope, pinned=True, limit=BRIEF_RULES)
        rules += store.list(project=scope, kinds=RULE_KINDS, pinned=False, limit=BRIEF_RULES)
        decisions += store.list(project=scope, kinds=("decision",), pinned=False, limit=BRIEF_DECISIONS)
    rules.sort(key=lambda m: m["created"], reverse=True)
    decisions.sort(key=lambda m: m["created"], reverse=True)
    return inject.unique(pinned + rules[:BRIEF_RULES] + decisions[:BRIEF_DECISIONS])


def session_brief(core: Any, event: Any, budget: int = 2000) -> str:
    """The SessionStart / PreCompact brief, or "" when the project has no rules or decisions yet."""
    project = event_project(core, event)
    if project is None:
        return ""
    memories = brief_memories(core, project)
    if _is_compact(event):
        # After compaction only the rules matter (decisions are history the summary keeps).
        memories = [m for m in memories if m.get("pinned") or m.get("kind") in RULE_KINDS]
        header = inject.COMPACT_HEADER
    else:
        header = inject.BRIEF_HEADER
    return inject.block(header, memories, budget) if memories else ""
