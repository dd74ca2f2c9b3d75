"""Hook event names: the launcher's argument (``user-prompt-submit``) or Claude Code's (``UserPromptSubmit``).

Shared by the hook process and the worker's fast path so both accept exactly the same names. Stdlib only.
"""

from __future__ import annotations

EVENTS = {
    "session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit", "pre-tool-use": "PreToolUse",
    "pre-compact": "PreCompact", "stop": "Stop",
}
KNOWN = frozenset(EVENTS.values())


def canonical(name: str) -> str | None:
    """Claude Code's name for a hook event, or None when it is not one we handle."""
    if name in KNOWN:
        return name
    return EVENTS.get(name)
