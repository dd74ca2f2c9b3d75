"""The PreToolUse(Bash) guard: destructive-command rules -> a permission decision.

Stdlib only (the hook client answers PreToolUse without a worker). Never blocks
on our own errors: the callers wrap it and fail open (no decision = Claude
Code's normal permission flow).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import on the hook hot path
    from typing import Any


def pretooluse_decision(command: str | None, mode: str) -> dict[str, Any]:
    """``{"permissionDecision": "ask"|"deny", "permissionDecisionReason": ...}`` for a risky command, else {}."""
    if mode not in ("ask", "deny") or not command:
        return {}
    from ...textrules.commands import DESTRUCTIVE, MAX_COMMAND, RuleHit, check_command

    if len(command) > MAX_COMMAND:  # read in part, the rest could hide anything: ask, in constant time
        hit: RuleHit | None = RuleHit("unreadable_command", DESTRUCTIVE,
                                      f"the command is longer than {MAX_COMMAND:,} characters, too long to check")
    else:
        hit = check_command(command)
    if hit is None:
        return {}
    reason = (f"Compass — destructive command check: {hit.reason} (rule {hit.rule}). "
              + ("Blocked by the hooks.pretooluse=deny setting." if mode == "deny"
                 else "Confirm only if this is intended."))
    return {"permissionDecision": mode, "permissionDecisionReason": reason}


def pre_tool_use(payload: dict[str, Any], mode: str) -> dict[str, Any]:
    """The decision for a PreToolUse payload: only Bash commands are checked; ``mode`` is ``hooks.pretooluse``."""
    if payload.get("tool_name") != "Bash" or mode == "off":
        return {}
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return {}
    return pretooluse_decision(command, mode)
