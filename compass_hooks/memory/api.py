"""What the hook handlers call (inside the worker). Contract in docs/architecture.md.

- ``prepare_prompt``: memory's part of the prompt context (:mod:`.prompt`) the UserPromptSubmit handler
  builds once; ``recall_for_prompt`` and ``capture_prompt`` read that context instead of the raw event.
- ``capture_prompt`` / ``capture_stop`` / ``ingest_transcript``: see :mod:`.capture`; a stored user prompt
  then goes through the standing-instruction detector (:mod:`.standing`), which updates the active rules.
- ``instructions_for_prompt``: the ``Compass — standing instructions`` block, on every prompt whatever its
  topic while rules are active (a rule set in a prompt applies from the next one: the capture that records it
  runs after this prompt's answer).
- ``recall_for_prompt``: the few earlier memories most relevant to this prompt,
  above a relevance floor, excluding the prompt itself and the session's last
  few turns (still in the model's context); on a drift alert the related
  constraints and corrections come first.
- ``session_brief``: the standing instructions in force, then pinned memories, the project's rules
  (constraints and corrections, including global ones) and its most recent decisions; after a compaction
  the same, headed as re-injected constraints. A session that continues another under a new id (compaction,
  resume) inherits that session's rules first (``pre_compact`` records the id being compacted).

Relevance floor: raw cosine of the query and the memory (the fused score is
relative to the best hit, so it cannot say "nothing is relevant"). Default
:data:`DEFAULT_MIN_COSINE` for MiniLM-class models; ``memory.min_score`` in the
config overrides it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..logs import get_logger
from . import capture, inject
from .capture import capture_stop, event_project, field, memory_project, prepare_prompt
from .queue import settle
from .prompt import PromptContext
from .standing import active
from .standing import api as standing
from .store import GLOBAL, content_hash

if TYPE_CHECKING:  # pragma: no cover
    from .corelike import CoreLike

__all__ = ["PromptContext", "capture_prompt", "capture_stop", "ingest_transcript", "instructions_for_prompt", "settle",
           "pre_compact", "prepare_prompt", "recall_for_prompt", "session_brief", "warm"]

DEFAULT_MIN_COSINE = 0.35
DRIFT_MIN_COSINE = 0.25  # constraints related to a drift alert are worth showing on weaker evidence
RULE_KINDS = ("constraint", "correction")
BRIEF_DECISIONS = 3
BRIEF_RULES = 12

log = get_logger("memory")


def warm(core: CoreLike) -> None:
    """Worker start-up: load the standing-instruction detector's weights now, so a missing file is logged once
    at start (with the command that makes it) rather than at the first capture."""
    if standing.enabled(core):
        from .standing import detect

        try:
            detect.weights_for(core)
        except detect.NoWeights as exc:
            log.warning("standing instructions will not be detected: %s", exc)


def _cfg(core: CoreLike, key: str, default: Any) -> Any:
    try:
        value = core.config.get("memory", key)
    except KeyError:
        return default
    return default if value is None else value


def _search(core: CoreLike, query: str, project: str, k: int, kinds=None, session=None, exclude_recent=0,
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
            continue  # the same text said earlier in the session: the model has it
        out.append(h)
    return out


def capture_prompt(core: CoreLike, prompt: PromptContext) -> list[int]:
    """Make the user's prompt durable (:func:`.capture.capture_prompt`: journaled, stored after the answer with
    a worker), then record the standing instructions it sets or lifts, now: the session's next prompt sees them
    whatever the capture queue's progress. A rule recorded before its prompt is stored carries the prompt's
    dedupe key and gets its memory id when the prompt is stored. Returns the new memory ids (none with a worker)."""
    ids = capture.capture_prompt(core, prompt)
    p = prompt.prepared
    if p is not None:
        try:
            standing.observe(core, p.text, prompt.project or GLOBAL, prompt.session, ids[0] if ids else None,
                             p.flags, prompt.vectors, capture_key=capture.prompt_key(prompt))
        except Exception:  # noqa: BLE001 - the prompt is kept; a detector failure must not lose it
            log.exception("standing-instruction detection failed for prompt %s", prompt.prompt_id)
    return ids


def ingest_transcript(core: CoreLike, event: Any) -> int:
    """Ingest the transcript's turns not stored yet (:func:`.capture.ingest_transcript`), then run the
    standing-instruction detector over the new user turns in order (what the hook missed, e.g. while no worker
    ran)."""
    project = event_project(core, event)
    last = _last_id(core) if project is not None else 0
    added = capture.ingest_transcript(core, event)
    if added and project is not None:
        rows = core.store.read("SELECT id, session, text, flags, created, meta FROM memories WHERE id > ? AND project = ?"
                               " AND role = 'user' ORDER BY id", (last, project))
        for mid, session, text, flags, created, meta in rows:
            if meta and '"derived_from"' in meta:
                continue  # a rule sentence split from a prompt: the prompt itself is detected
            try:
                standing.observe(core, text, project, session, int(mid), (flags or "").split(","), created=created)
            except Exception:  # noqa: BLE001
                log.exception("standing-instruction detection failed for memory %s", mid)
    return added


def _last_id(core: CoreLike) -> int:
    rows = core.store.read("SELECT MAX(id) FROM memories")
    return int(rows[0][0] or 0)


def instructions_for_prompt(core: CoreLike, prompt: PromptContext, budget: int | None = None) -> str:
    """The ``Compass — standing instructions`` block for this prompt ("" when no rule is in force), whatever
    its topic. Whole rules within ``memory.instructions_budget_chars`` (and ``budget`` when smaller)."""
    project = memory_project(core, prompt.project)
    if project is None or prompt.harness:
        return ""
    limit = standing.budget(core)
    if budget is not None:
        limit = min(limit, budget)
    return standing.block(core, project, prompt.session, limit)


def _with_rule_spans(core: CoreLike, memories: list[dict], session: str | None) -> list[dict]:
    """Memories ready to quote: those a standing instruction came from carry its sentence(s) as ``keep`` (a
    quote cut for space cuts around the rule, never inside it); those whose rules are not in force here
    (revoked, replaced, or for another session) are left out: quoting them would present a lifted rule, or
    another session's, as the user's word for this one. A constraint split out of a prompt is kept whole."""
    if not memories:
        return memories
    by_memory = active.sources(core.store, [m["id"] for m in memories if m.get("id") is not None])
    out = []
    for m in memories:
        rules = by_memory.get(m["id"], []) if m.get("id") is not None else []
        if rules and not any(r["state"] == "active" and (r["scope"] != "session" or r["session"] == session)
                             for r in rules):
            continue
        keep = [r["text"] for r in rules]
        if m.get("kind") in RULE_KINDS and not keep:
            keep = [m.get("text", "")]
        out.append({**m, "keep": keep} if keep else m)
    return out


def recall_for_prompt(core: CoreLike, prompt: PromptContext, drift: dict | None = None, budget: int = 1500) -> str:
    """A ``Compass — memory`` block for this prompt, or "" when nothing clears the floor. A memory that only
    repeats a standing instruction in force is left out (the instructions block shows it)."""
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
    chosen = _with_rule_spans(core, inject.unique(chosen), session)
    if chosen and standing.enabled(core):
        shown = {active.fold(r["text"]) for r in standing.rules_in_force(core, project, session)}
        chosen = [m for m in chosen if active.fold(m.get("text", "")) not in shown]
    chosen = chosen[: k + (k if drift else 0)]
    if not chosen:
        return ""
    return inject.block(inject.MEMORY_HEADER, chosen, budget)


def _is_compact(event: Any) -> bool:
    return field(event, "source") == "compact" or field(event, "hook_event_name") == "PreCompact"


def pre_compact(core: CoreLike, event: Any) -> None:
    """PreCompact: note which session is being compacted, so a SessionStart(compact) under a new id carries
    its standing instructions on."""
    project = event_project(core, event)
    if project is not None:
        active.note_handoff(core.store, project, field(event, "session_id"))


def continue_session(core: CoreLike, event: Any) -> list[int]:
    """SessionStart(compact | resume): carry the session rules of the session(s) this one continues under a new
    id into it: the session ids its transcript names, and for a compaction the one PreCompact noted."""
    project = event_project(core, event)
    source = field(event, "source")
    if project is None or source not in ("compact", "resume"):
        return []
    earlier: list[str] = []
    path = field(event, "transcript_path")
    if path:
        from . import transcript

        earlier = list(dict.fromkeys(t.session for t in transcript.parse(path) if t.session))
    return standing.continue_session(core, project, field(event, "session_id"), source, earlier)


def brief_memories(core: CoreLike, project: str) -> list[dict]:
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


def session_brief(core: CoreLike, event: Any, budget: int = 2000) -> str:
    """The SessionStart / PreCompact brief, or "" when the project has no rules or decisions yet: the standing
    instructions in force for this session first (their own budget), then the memory brief in what is left."""
    project = event_project(core, event)
    if project is None:
        return ""
    session = field(event, "session_id")
    rules = standing.rules_in_force(core, project, session) if standing.enabled(core) else []
    rules_block = standing.block(core, project, session, min(standing.budget(core), budget), rules=rules)
    memories = _with_rule_spans(core, brief_memories(core, project), session)
    shown = {active.fold(r["text"]) for r in rules}
    memories = [m for m in memories if active.fold(m.get("text", "")) not in shown]
    if _is_compact(event):
        # After compaction only the rules matter (decisions are history the summary keeps).
        memories = [m for m in memories if m.get("pinned") or m.get("kind") in RULE_KINDS]
        header = inject.COMPACT_HEADER
    else:
        header = inject.BRIEF_HEADER
    left = budget - (len(rules_block) + 2 if rules_block else 0)
    brief = inject.block(header, memories, left) if memories and left > 0 else ""
    return "\n\n".join(b for b in (rules_block, brief) if b)
