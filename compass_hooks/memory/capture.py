"""Capture without an LLM: user prompts, the assistant's final reply, and
transcript turns not yet stored.

Prompts and Stop replies are made durable before the hook answers: their items
(cleaned as below, ``created`` = when the hook ran) are written to the capture
spool and become memories afterwards, embedded in batches (:mod:`.queue`);
without a worker that happens at once. So a worker that stops, restarts or is
killed loses nothing it answered.

Everything passes through the same preparation: our own Compass blocks and
harness text out, ``<private>`` spans out, secrets redacted, instruction-like
text flagged, then constraint/decision/correction detection on user text.
Idempotency keys (per project): ``prompt:<session>:<prompt_id>`` for hook
prompts, ``stop:<session>:<sha>`` for Stop replies, ``t:<uuid:…|msg:…>`` for
transcript turns; a transcript turn whose text is already stored in the same
session (captured by the hook) is skipped by content hash.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..logs import get_logger
from ..textrules.instructions import looks_like_instruction
from . import constraints, inject, privacy, transcript
from .project import is_opted_out, project_id
from .store import GLOBAL

if TYPE_CHECKING:  # pragma: no cover
    from .prompt import PromptContext
    from .corelike import CoreLike

ASSISTANT_MAX_CHARS = 2000
# A prompt longer than this that contains a rule keeps the whole prompt as kind
# "prompt" and stores the rule sentences as their own memory; shorter prompts are
# stored once with the detected kind.
SPLIT_OVER_CHARS = 280
_SLASH_ONLY = re.compile(r"^/[\w:\-]+\s*$")
_EMBED_BATCH = 64

log = get_logger("memory")


def field(event: Any, name: str, default: Any = None) -> Any:
    """A hook field from a dict payload, a dataclass, or an object with ``.payload``."""
    if isinstance(event, dict):
        return event.get(name, default)
    value = getattr(event, name, None)
    if value is not None:
        return value
    payload = getattr(event, "payload", None) or getattr(event, "raw", None)
    if isinstance(payload, dict):
        return payload.get(name, default)
    return default


def enabled(core: CoreLike) -> bool:
    try:
        return bool(core.config.get("memory", "enabled"))
    except KeyError:
        return True


def memory_project(core: CoreLike, project: str | None) -> str | None:
    """``project`` (None: the global scope) when memory is on for it; None when memory is off or it opted out."""
    if not enabled(core):
        return None
    project = project or GLOBAL
    if is_opted_out(project, core.config):
        return None
    return project


def event_project(core: CoreLike, event: Any) -> str | None:
    """The event's project id, or None when memory is off or the project opted out."""
    if not enabled(core):
        return None
    return memory_project(core, project_id(field(event, "cwd")))


def truncate_reply(text: str, limit: int = ASSISTANT_MAX_CHARS) -> str:
    """Cut a long reply at the last sentence end before ``limit`` (else at a word)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?。！？](?=\s|$)|\n\n", cut)]
    if ends and ends[-1] > limit * 0.5:
        return cut[: ends[-1]].rstrip() + " …"
    sp = cut.rfind(" ")
    return (cut[:sp] if sp > limit * 0.5 else cut).rstrip() + " …"


@dataclass
class Prepared:
    text: str
    flags: list[str]
    detection: constraints.Detection | None


def prepare(text: str, role: str = "user") -> Prepared | None:
    """Clean one turn for storage; None when nothing storable is left."""
    if not isinstance(text, str):
        return None
    text = transcript.strip_harness(inject.strip_blocks(text))
    if not text or transcript.is_harness(text) or (role == "user" and _SLASH_ONLY.match(text)):
        return None
    if role == "assistant":
        text = truncate_reply(text)
    cleaned = privacy.clean(text)
    if not cleaned.text:
        return None
    detection = constraints.detect(cleaned.text) if role == "user" else None
    return Prepared(cleaned.text, cleaned.flags, detection)


def items_for_prompt(p: Prepared, base: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """One store item, or two (prompt + extracted rule) for a long prompt with a rule in it."""
    d = p.detection
    if d is None:
        return [{**base, "text": p.text, "kind": "prompt", "flags": p.flags, "dedupe_key": key}]
    if len(p.text) <= SPLIT_OVER_CHARS or len(d.text) >= 0.8 * len(p.text):
        return [{**base, "text": p.text, "kind": d.kind, "flags": p.flags, "dedupe_key": key}]
    rule_flags = list(p.flags)
    if looks_like_instruction(d.text) and "suspicious-instruction" not in rule_flags:
        rule_flags.append("suspicious-instruction")
    return [
        {**base, "text": p.text, "kind": "prompt", "flags": p.flags, "dedupe_key": key},
        {**base, "text": d.text, "kind": d.kind, "flags": rule_flags, "dedupe_key": f"{key}:{d.kind}",
         "meta": {"derived_from": key}},
    ]


def vector_field(vec: Any, model: str | None) -> dict[str, str]:
    """A vector as JSON for the capture spool: float32 little-endian, base64, with the model that made it."""
    import base64

    import numpy as np

    return {"model": str(model or ""), "f32": base64.b64encode(np.asarray(vec, "<f4").tobytes()).decode("ascii")}


def known_vectors(core: CoreLike, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The vectors spooled items carry (``vector_field``), by text, when ``core.embedder`` made them; the
    ``vector`` fields are removed from the items."""
    import base64

    import numpy as np

    known: dict[str, Any] = {}
    for it in items:
        field_ = it.pop("vector", None)
        if not isinstance(field_, dict) or field_.get("model") != core.embedder.name:
            continue
        try:
            vec = np.frombuffer(base64.b64decode(field_["f32"]), dtype="<f4")
        except (KeyError, TypeError, ValueError):
            continue
        if vec.shape == (core.embedder.dim,):
            known[it["text"]] = vec
    return known


def embed_items(core: CoreLike, items: list[dict[str, Any]], known: Mapping[str, Any] | None = None) -> None:
    """Attach vectors in batches; on failure store without: the memory is kept and keyword recall finds it,
    dense recall does not (nothing backfills missing vectors yet).
    ``known``: vectors by exact text already made with ``core.embedder`` (the prompt's, embedded once
    while the hook prepared it); only the other texts are embedded here."""
    if not items:
        return
    try:
        emb = core.embedder
        todo = []
        for it in items:
            vec = known.get(it["text"]) if known else None
            if vec is None:
                todo.append(it)
            else:
                it["embedding"] = vec
                it["model"] = emb.name
        for i in range(0, len(todo), _EMBED_BATCH):
            part = todo[i : i + _EMBED_BATCH]
            vecs = emb.embed([it["text"] for it in part])
            for it, v in zip(part, vecs):
                it["embedding"] = v
                it["model"] = emb.name
    except Exception:  # noqa: BLE001 - a missing model must not lose the memory
        log.exception("embedding failed; storing without vectors")
        for it in items:
            it.pop("embedding", None)
            it.pop("model", None)


def store_items(core: CoreLike, items: list[dict[str, Any]], actor: str | None = None) -> list[Any]:
    """``store.add_many`` plus the FTS ``context`` (neighbour turns, date) of the new rows:
    windowed keyword recall depends on it, so every write path goes through here.
    The context is derived data: if it fails the memories stay and only lack it."""
    added = core.store.add_many(items, actor=actor) if items else []
    # An imported row that brings its own context (an export read back) keeps it.
    fresh = [a.id for a, it in zip(added, items) if a.new and a.id is not None and not it.get("context")]
    if fresh:
        from . import recall

        try:
            recall.update_contexts(core.store, fresh)
        except Exception:  # noqa: BLE001 - never lose a stored memory over derived data
            log.exception("context update failed for %d memories", len(fresh))
    return added


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def prepare_prompt(core: CoreLike, text: str, project: str | None) -> Prepared | None:
    """Memory's part of a prompt context: the prompt cleaned for storage and search, or None when there is
    nothing to store or memory is off for ``project`` (checked here once, for recall and capture alike)."""
    if memory_project(core, project) is None:
        return None
    return prepare(text, "user")


def prompt_key(prompt: PromptContext) -> str | None:
    """The dedupe key of a hook prompt's memory (None when there is nothing to store)."""
    p = prompt.prepared
    return None if p is None else f"prompt:{prompt.session}:{prompt.prompt_id or _sha(p.text)}"


def context_items(prompt: PromptContext, created: float | None = None) -> list[dict[str, Any]]:
    """The store items for a prepared hook prompt (and a detected rule); [] when nothing is to be stored.
    The prompt's own vector (embedded once while the hook prepared it) travels with its item, so storing it
    later does not embed it again."""
    p = prompt.prepared
    if p is None:
        return []
    session = prompt.session
    key = prompt_key(prompt)
    assert key is not None  # the prompt has a prepared part (checked above), so it has a key
    base = {"project": prompt.project or GLOBAL, "session": session, "role": "user", "source": "hook",
            "created": time.time() if created is None else created}
    items = items_for_prompt(p, base, key)
    vectors = prompt.vectors or {}
    for it in items:
        vec = vectors.get(it["text"])
        if vec is not None:
            it["vector"] = vector_field(vec, prompt.model)
    return items


def prompt_items(core: CoreLike, event: Any, created: float | None = None) -> list[dict[str, Any]]:
    """The store items for a hook prompt from its payload (a worker that answered without running the
    handlers, a hook process that failed open); [] when nothing is to be stored."""
    project = event_project(core, event)
    if project is None:
        return []
    p = prepare(field(event, "prompt") or "", "user")
    if p is None:
        return []
    session = field(event, "session_id")
    key = f"prompt:{session}:{field(event, 'prompt_id') or _sha(p.text)}"
    base = {"project": project, "session": session, "role": "user", "source": "hook",
            "created": time.time() if created is None else created}
    return items_for_prompt(p, base, key)


def stop_item(core: CoreLike, event: Any, created: float | None = None) -> dict[str, Any] | None:
    """The store item for ``last_assistant_message`` (cut at a sentence end), or None."""
    project = event_project(core, event)
    if project is None:
        return None
    p = prepare(field(event, "last_assistant_message") or "", "assistant")
    if p is None:
        return None
    session = field(event, "session_id")
    return {"project": project, "session": session, "role": "assistant", "kind": "note", "source": "hook",
            "text": p.text, "flags": p.flags, "dedupe_key": f"stop:{session}:{_sha(p.text)}",
            "created": time.time() if created is None else created}


def capture_prompt(core: CoreLike, prompt: PromptContext) -> list[int]:
    """Make the user's prompt (and a detected rule) durable and store it: at once without a worker (returns
    the new ids), after the hook's answer with one (returns [])."""
    from . import queue

    return queue.journal(core, "prompt", context_items(prompt))


def capture_stop(core: CoreLike, event: Any) -> int | None:
    """Make ``last_assistant_message`` durable and store it as an assistant memory (as :func:`capture_prompt`)."""
    from . import queue

    item = stop_item(core, event)
    ids = queue.journal(core, "stop", [item] if item else [])
    return ids[0] if ids else None


def ingest_transcript(core: CoreLike, event: Any) -> int:
    """Ingest the transcript's turns that are not stored yet; returns how many were added."""
    project = event_project(core, event)
    path = field(event, "transcript_path")
    if project is None or not path:
        return 0
    turns = transcript.parse(path)
    if not turns:
        return 0
    default_session = field(event, "session_id")
    store = core.store
    keys = [f"t:{t.key}" for t in turns]
    known = store.existing_keys(project, keys)
    items: list[dict[str, Any]] = []
    seen: set[tuple[str | None, str]] = set()
    for t, key in zip(turns, keys):
        if key in known:
            continue
        p = prepare(t.text, t.role)
        if p is None:
            continue
        session = t.session or default_session
        if (session, p.text) in seen or store.has_hash(project, p.text, session):
            continue  # captured by the hook already (or repeated in this file)
        seen.add((session, p.text))
        base = {"project": project, "session": session, "role": t.role, "source": "hook", "created": t.created,
                "meta": {"uuid": t.uuid} if t.uuid else None}
        if t.role == "user":
            items.extend(items_for_prompt(p, base, key))
        else:
            items.append({**base, "text": p.text, "kind": "note", "flags": p.flags, "dedupe_key": key})
    embed_items(core, items)
    added = store_items(core, items)
    return sum(1 for a in added if a.new)

