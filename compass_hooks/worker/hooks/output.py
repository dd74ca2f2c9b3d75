"""The one place that writes a hook's stdout (stdlib only: json).

Claude Code reads exactly one JSON object, or nothing:
``{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": ...}}``
for SessionStart / UserPromptSubmit, ``hookSpecificOutput.permissionDecision``
(+ ``permissionDecisionReason``) for PreToolUse, and a top-level
``systemMessage`` shown to the user when something needs their attention.
``hookEventName`` must equal the running event or Claude Code drops the output.
The injected text is cut to the budget at a line boundary.
"""

from __future__ import annotations

import json
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import on the hook hot path
    from typing import Any, TextIO

CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse"})
DECISIONS = frozenset({"allow", "deny", "ask"})
SYSTEM_MESSAGE_MAX = 600
ELLIPSIS = "\n[Compass: cut to the context budget]"


def truncate(text: str, budget: int) -> str:
    """``text`` cut to at most ``budget`` characters, at a line boundary when one is near."""
    if budget <= 0:
        return ""
    if len(text) <= budget:
        return text
    room = budget - len(ELLIPSIS)
    if room <= 0:
        return text[:budget]
    cut = text[:room]
    nl = cut.rfind("\n")
    if nl >= room // 2:
        cut = cut[:nl]
    return cut.rstrip() + ELLIPSIS


def build(event: str, result: dict[str, Any] | None, budget: int) -> dict[str, Any] | None:
    """The stdout object for ``result`` (the worker's hook answer), or None for no output."""
    if not result:
        return None
    out: dict[str, Any] = {}
    spec: dict[str, Any] = {}
    decision = result.get("permissionDecision")
    if event == "PreToolUse" and decision in DECISIONS:
        spec["permissionDecision"] = decision
        reason = result.get("permissionDecisionReason")
        if isinstance(reason, str) and reason:
            spec["permissionDecisionReason"] = truncate(reason, budget)
    context = result.get("additionalContext")
    if event in CONTEXT_EVENTS and isinstance(context, str) and context.strip():
        spec["additionalContext"] = truncate(context, budget)
    if spec:
        out["hookSpecificOutput"] = {"hookEventName": event, **spec}
    message = result.get("systemMessage")
    if isinstance(message, str) and message.strip():
        out["systemMessage"] = truncate(message, SYSTEM_MESSAGE_MAX)
    return out or None


def render(event: str, result: dict[str, Any] | None, budget: int) -> str:
    """The hook's whole stdout: one JSON object and a newline, or "" for no output."""
    obj = build(event, result, budget)
    return "" if obj is None else json.dumps(obj, ensure_ascii=False) + "\n"


def emit(event: str, result: dict[str, Any] | None, budget: int, stream: TextIO | None = None) -> bool:
    """Write the hook's stdout (see :func:`render`; the native client writes what the worker
    renders with it). True if something was written."""
    text = render(event, result, budget)
    if not text:
        return False
    stream = stream or sys.stdout
    stream.write(text)
    stream.flush()
    return True
