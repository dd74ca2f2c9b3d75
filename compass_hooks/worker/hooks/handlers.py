"""Worker-side hook event handlers: what each Claude Code event does.

Each feature call is wrapped on its own (:func:`_run`): a failing or missing
feature (drift, memory) is logged and skipped, the others still run, and the hook
still answers. Captures are written to the capture spool here, before the answer
(~0.2 ms, so a worker that stops or dies loses nothing it answered), and stored on
the worker's background thread afterwards (``memory.queue``); in process (no
worker) they are stored at once.

- SessionStart: on ``source`` compact/resume ingest the transcript first and carry over the standing
  instructions of the session it continues under a new id; then the session brief (standing instructions,
  constraints, recent decisions) as context. After a compaction this is what re-injects the constraints.
- UserPromptSubmit: prepare the prompt once (:func:`prepare_prompt`: project id, harness verdict, drift's
  rules, memory's cleaned text, one embedder call), then drift check, the standing instructions in force,
  recall related memories, and last the capture of the prompt (deferred), all reading that one context.
  Deterministic: this prompt's capture is queued only after every read for its answer, and a prompt first
  waits (bounded) for the captures the same session queued before it, so the same conversation replayed
  gives the same context.
- PreToolUse (Bash): the regex rules -> ``permissionDecision`` per
  ``hooks.pretooluse`` (ask | deny | off). The hook client runs the same check
  without a worker; this handler serves ``compass-hook hook`` and the op.
- PreCompact: ingest the transcript so nothing said before compaction is lost, and note the session id
  being compacted (PreCompact output cannot add context; SessionStart(compact) does that).
- Stop: capture the assistant's last message (inline, not deferred). No output.
"""

from __future__ import annotations

import time
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable

from ...logs import get_logger
from . import events
from .guard import pretooluse_decision

if TYPE_CHECKING:  # pragma: no cover
    from ...memory.corelike import CoreLike

log = get_logger("hook")
MIN_RECALL_BUDGET = 200  # below this a memory block is not worth showing
# How long a prompt waits for its session's earlier captures (a person types for seconds between prompts, so
# in use nothing waits; a replay or a fast script would otherwise read a store the last capture has not reached).
PENDING_WAIT_S = 1.5


def _settle(core: CoreLike, session: str | None) -> None:
    """Wait (bounded) until the captures this session journaled earlier are stored: what a prompt reads must
    not depend on how far the worker's background round got (same input, same output)."""
    mem = _memory_api()
    if mem is None or core.state.get("worker.defer") is None:
        return  # in process, a capture is stored when it is journaled
    if not _run("memory.settle", mem.settle, core, session, PENDING_WAIT_S, default=True):
        log.warning("earlier captures of session %s still being stored after %.1f s; answering without them",
                    session, PENDING_WAIT_S)


def _run(name: str, fn: Callable[..., Any], *args: Any, default: Any = None, **kwargs: Any) -> Any:
    t0 = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    except Exception:
        log.exception("%s failed (the other hook features still run)", name)
        return default
    finally:
        ms = (time.perf_counter() - t0) * 1000
        if ms > 200:
            log.warning("%s took %.0f ms", name, ms)


def _memory_api() -> Any:
    try:
        from ...memory import api
    except ImportError as exc:
        log.debug("memory api unavailable: %s", exc)
        return None
    return api


def _drift_api() -> Any:
    try:
        from ...drift import api
    except ImportError as exc:
        log.debug("drift api unavailable: %s", exc)
        return None
    return api


def _project(ev: events.HookEvent) -> str | None:
    if not ev.cwd:
        return None
    try:
        from ...memory.project import project_id

        return project_id(ev.cwd)
    except Exception:
        return ev.cwd


def prepare_prompt(core: CoreLike, ev: events.UserPromptSubmit, mem: Any = None, drift: Any = None) -> Any:
    """The prompt context (``memory.prompt.PromptContext``) drift, recall and capture read: the project id,
    the harness verdict, drift's rules (``drift`` = its api), memory's cleaned text (``mem`` = its api), and
    the embeddings of the texts they search with, in one embedder call. A feature's part that fails is left
    out (logged) and that feature does the work itself later, failing the way it always did; the others
    keep theirs."""
    from ...memory.prompt import PromptContext
    from ...textrules.harness import is_harness

    text = ev.prompt or ""
    project = _project(ev)
    harness = is_harness(text)
    rules = None
    prepared = None
    wanted: list[str] = []
    if drift is not None and not harness:
        rules = _run("drift.prompt_rules", drift.prompt_rules, text)
        wanted.append(drift.scored_text(text))
    if mem is not None:
        prepared = _run("memory.prepare_prompt", mem.prepare_prompt, core, text, project)
        if prepared is not None:
            wanted.append(prepared.text)
    vectors: dict[str, Any] = {}
    wanted = list(dict.fromkeys(wanted))  # the cleaned prompt is usually the prompt itself: embedded once
    if wanted:
        rows = _run("embed prompt", core.embedder.embed, wanted)
        if rows is not None:
            for t, row in zip(wanted, rows):
                row.flags.writeable = False  # shared with the deferred capture's thread
                vectors[t] = row
    return PromptContext(text=text, project=project, session=ev.session_id, prompt_id=ev.prompt_id,
                         harness=harness, rules=rules, prepared=prepared, vectors=MappingProxyType(vectors),
                         model=core.embedder.name if vectors else None)


def _budget(core: CoreLike) -> int:
    return int(core.config.get("hooks", "budget_chars"))


def _context(blocks: list[str]) -> dict[str, Any]:
    text = "\n\n".join(b.strip() for b in blocks if isinstance(b, str) and b.strip())
    return {"additionalContext": text} if text else {}


def session_start(core: CoreLike, ev: events.SessionStart) -> dict[str, Any]:
    mem = _memory_api()
    if mem is None:
        return {}
    _settle(core, ev.session_id)
    if ev.source in ("compact", "resume") and ev.transcript_path:
        _run("memory.ingest_transcript", mem.ingest_transcript, core, ev)
    if ev.source in ("compact", "resume"):
        _run("memory.continue_session", mem.continue_session, core, ev)
    brief = _run("memory.session_brief", mem.session_brief, core, ev, budget=_budget(core), default="")
    return _context([brief])


def user_prompt_submit(core: CoreLike, ev: events.UserPromptSubmit) -> dict[str, Any]:
    budget = _budget(core)
    mem = _memory_api()
    drift_api = _drift_api()
    _settle(core, ev.session_id)
    prompt = _run("prepare_prompt", prepare_prompt, core, ev, mem, drift_api)
    if prompt is None:
        return {}
    blocks: list[str] = []
    result = None
    if drift_api is not None:
        result = _run("drift.check_prompt", drift_api.check_prompt, core, prompt)
        if result and result.get("alert"):
            block = _run("drift.format_block", drift_api.format_block, result, [], default="")
            if block:
                blocks.append(block)
    if mem is not None:
        # The standing instructions first, whatever the prompt is about; topical memories after them.
        remaining = budget - sum(len(b) + 2 for b in blocks)
        rules = _run("memory.instructions_for_prompt", mem.instructions_for_prompt, core, prompt, budget=remaining,
                     default="")
        if rules:
            blocks.append(rules)
        remaining = budget - sum(len(b) + 2 for b in blocks)
        if remaining >= MIN_RECALL_BUDGET:
            # Only an alert asks memory for related constraints (a second search): plain scores do not.
            alert = result if result and result.get("alert") else None
            recall = _run("memory.recall_for_prompt", mem.recall_for_prompt, core, prompt, drift=alert,
                          budget=remaining, default="")
            if recall:
                blocks.append(recall)
        # Last, after every read of this prompt: the capture is journaled (durable before the answer) and the
        # rules it sets are recorded now, so this prompt never sees them and the next prompt always does.
        _run("memory.capture_prompt", mem.capture_prompt, core, prompt)
    return _context(blocks)


def pre_tool_use(core: CoreLike, ev: events.PreToolUse) -> dict[str, Any]:
    if ev.tool_name != "Bash":
        return {}
    mode = str(core.config.get("hooks", "pretooluse"))
    return _run("rules.check_command", pretooluse_decision, ev.command, mode, default={})


def pre_compact(core: CoreLike, ev: events.PreCompact) -> dict[str, Any]:
    mem = _memory_api()
    if mem is None:
        return {}
    _settle(core, ev.session_id)
    if ev.transcript_path:
        _run("memory.ingest_transcript", mem.ingest_transcript, core, ev)
    _run("memory.pre_compact", mem.pre_compact, core, ev)
    return {}


def stop(core: CoreLike, ev: events.Stop) -> dict[str, Any]:
    mem = _memory_api()
    if mem is not None:  # durable before the answer; stored after it
        _run("memory.capture_stop", mem.capture_stop, core, ev)
    return {}


HANDLERS: dict[str, Callable[[Any, Any], dict[str, Any]]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "PreToolUse": pre_tool_use,
    "PreCompact": pre_compact,
    "Stop": stop,
}


def handle(core: CoreLike, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Normalise ``payload`` into the event's dataclass and run its handler."""
    ev = events.parse(event, payload)
    if not core.config.get("hooks", "enabled"):
        return {}
    result = HANDLERS[ev.hook_event_name](core, ev)
    take = core.state.get("notices.take")  # the worker's queue of things the user should hear about once
    if take and ev.hook_event_name != "PreToolUse" and not result.get("systemMessage"):
        told = take()
        if told:
            result = {**result, "systemMessage": told}
    return result
