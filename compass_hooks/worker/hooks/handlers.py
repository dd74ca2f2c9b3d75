"""Worker-side hook event handlers: what each Claude Code event does.

Each feature call is wrapped on its own (:func:`_run`): a failing or missing
feature (drift, memory) is logged and skipped, the others still run, and the hook
still answers. Captures are written to the capture spool here, before the answer
(~0.2 ms, so a worker that stops or dies loses nothing it answered), and stored on
the worker's background thread afterwards (``memory.queue``); in process (no
worker) they are stored at once.

- SessionStart: on ``source`` compact/resume ingest the transcript first; then the
  session brief (standing constraints, recent decisions) as context. After a
  compaction this is what re-injects the constraints.
- UserPromptSubmit: capture the prompt; drift check; recall related memories.
- PreToolUse (Bash): the regex rules -> ``permissionDecision`` per
  ``hooks.pretooluse`` (ask | deny | off). The hook client runs the same check
  without a worker; this handler serves ``compass-hook hook`` and the op.
- PreCompact: ingest the transcript so nothing said before compaction is lost
  (PreCompact output cannot add context; SessionStart(compact) does that).
- Stop: capture the assistant's last message (inline, not deferred). No output.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ...logs import get_logger
from . import events
from .guard import pretooluse_decision

log = get_logger("hook")
MIN_RECALL_BUDGET = 200  # below this a memory block is not worth showing


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


def _budget(core: Any) -> int:
    return int(core.config.get("hooks", "budget_chars"))


def _context(blocks: list[str]) -> dict[str, Any]:
    text = "\n\n".join(b.strip() for b in blocks if isinstance(b, str) and b.strip())
    return {"additionalContext": text} if text else {}


def session_start(core: Any, ev: events.SessionStart) -> dict[str, Any]:
    mem = _memory_api()
    if mem is None:
        return {}
    if ev.source in ("compact", "resume") and ev.transcript_path:
        _run("memory.ingest_transcript", mem.ingest_transcript, core, ev)
    brief = _run("memory.session_brief", mem.session_brief, core, ev, budget=_budget(core), default="")
    return _context([brief])


def user_prompt_submit(core: Any, ev: events.UserPromptSubmit) -> dict[str, Any]:
    budget = _budget(core)
    mem = _memory_api()
    drift_api = _drift_api()
    if mem is not None:  # durable before the answer; stored after it
        _run("memory.capture_prompt", mem.capture_prompt, core, ev)
    blocks: list[str] = []
    result = None
    if drift_api is not None:
        result = _run("drift.check_prompt", drift_api.check_prompt, core, ev.prompt,
                      project=_project(ev), session=ev.session_id)
        if result and result.get("alert"):
            block = _run("drift.format_block", drift_api.format_block, result, [], default="")
            if block:
                blocks.append(block)
    remaining = budget - sum(len(b) + 2 for b in blocks)
    if mem is not None and remaining >= MIN_RECALL_BUDGET:
        # Only an alert asks memory for related constraints (a second search): plain scores do not.
        alert = result if result and result.get("alert") else None
        recall = _run("memory.recall_for_prompt", mem.recall_for_prompt, core, ev, drift=alert,
                      budget=remaining, default="")
        if recall:
            blocks.append(recall)
    return _context(blocks)


def pre_tool_use(core: Any, ev: events.PreToolUse) -> dict[str, Any]:
    if ev.tool_name != "Bash":
        return {}
    mode = str(core.config.get("hooks", "pretooluse"))
    return _run("rules.check_command", pretooluse_decision, ev.command, mode, default={})


def pre_compact(core: Any, ev: events.PreCompact) -> dict[str, Any]:
    mem = _memory_api()
    if mem is not None and ev.transcript_path:
        _run("memory.ingest_transcript", mem.ingest_transcript, core, ev)
    return {}


def stop(core: Any, ev: events.Stop) -> dict[str, Any]:
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


def handle(core: Any, event: str, payload: dict[str, Any]) -> dict[str, Any]:
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
