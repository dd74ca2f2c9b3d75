"""Hook stdin payloads as one frozen dataclass per event.

Field names are Claude Code's (observed with 2.1.328; see
``tests/fixtures/hooks/``). Unknown fields are ignored; a known field of the
wrong type raises :class:`~compass_hooks.errors.InvalidInput`. This module runs
in the worker (``dataclasses`` is too slow an import for the hook hot path, which
forwards the raw JSON object and lets the worker normalise it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ...errors import InvalidInput

# CLI spelling -> Claude Code event name.
EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse",
    "pre-compact": "PreCompact",
    "stop": "Stop",
}
CLI_NAMES = {v: k for k, v in EVENTS.items()}


def canonical(name: str) -> str:
    """``user-prompt-submit`` / ``UserPromptSubmit`` -> ``UserPromptSubmit``."""
    if name in CLI_NAMES:
        return name
    if name in EVENTS:
        return EVENTS[name]
    raise InvalidInput(f"unknown hook event {name!r}", f"one of: {', '.join(EVENTS)}")


@dataclass(frozen=True, kw_only=True)
class HookEvent:
    hook_event_name: str
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    permission_mode: str | None = None
    agent_id: str | None = None  # set when the hook fires inside a subagent
    agent_type: str | None = None

    @property
    def project_dir(self) -> str | None:
        return self.cwd


@dataclass(frozen=True, kw_only=True)
class SessionStart(HookEvent):
    source: str = "startup"  # startup | resume | clear | compact


@dataclass(frozen=True, kw_only=True)
class UserPromptSubmit(HookEvent):
    prompt: str = ""
    prompt_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class PreToolUse(HookEvent):
    tool_name: str = ""
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    tool_use_id: str | None = None

    @property
    def command(self) -> str | None:
        cmd = self.tool_input.get("command") if isinstance(self.tool_input, Mapping) else None
        return cmd if isinstance(cmd, str) else None


@dataclass(frozen=True, kw_only=True)
class PreCompact(HookEvent):
    trigger: str | None = None  # manual | auto
    custom_instructions: str | None = None


@dataclass(frozen=True, kw_only=True)
class Stop(HookEvent):
    stop_hook_active: bool = False
    last_assistant_message: str | None = None


CLASSES: dict[str, type[HookEvent]] = {
    "SessionStart": SessionStart, "UserPromptSubmit": UserPromptSubmit, "PreToolUse": PreToolUse,
    "PreCompact": PreCompact, "Stop": Stop,
}
_STR_OR_NONE = (str, type(None))


def _check(name: str, value: Any, typ: Any) -> Any:
    if typ is bool:
        if not isinstance(value, bool):
            raise InvalidInput(f"hook payload field {name!r} must be a boolean")
        return value
    if typ == "mapping":
        if not isinstance(value, dict):
            raise InvalidInput(f"hook payload field {name!r} must be an object")
        return value
    if not isinstance(value, _STR_OR_NONE):
        raise InvalidInput(f"hook payload field {name!r} must be a string")
    return value


def parse(event: str, payload: Mapping[str, Any]) -> HookEvent:
    """Normalise a decoded stdin object into the event's dataclass (``event`` decides the class)."""
    name = canonical(event)
    if not isinstance(payload, Mapping):
        raise InvalidInput("hook stdin is not a JSON object")
    cls = CLASSES[name]
    kwargs: dict[str, Any] = {"hook_event_name": name}
    for f in fields(cls):
        if f.name == "hook_event_name" or f.name not in payload:
            continue
        value = payload[f.name]
        if f.name == "stop_hook_active":
            kwargs[f.name] = _check(f.name, value, bool)
        elif f.name == "tool_input":
            kwargs[f.name] = _check(f.name, value, "mapping")
        elif value is not None:
            kwargs[f.name] = _check(f.name, value, str)
    return cls(**kwargs)
