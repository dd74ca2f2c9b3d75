"""Hook stdin fixtures (one per event, as Claude Code 2.1.328 sends them) -> frozen dataclasses; output shape."""

from __future__ import annotations

import dataclasses
import json

import pytest

from compass_hooks.errors import InvalidInput
from compass_hooks.worker.hooks import events, output
import testdirs

FIXTURES = testdirs.FIXTURES / "hooks"


@pytest.mark.parametrize("name", sorted(events.CLASSES))
def test_fixture_parses_into_its_frozen_dataclass(name):
    payload = json.loads((FIXTURES / f"{name}.json").read_text())
    ev = events.parse(events.CLI_NAMES[name], payload)
    assert type(ev) is events.CLASSES[name] and ev.hook_event_name == name
    assert ev.session_id == payload["session_id"] and ev.cwd == payload["cwd"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.cwd = "/elsewhere"  # type: ignore[misc]


def test_event_specific_fields():
    load = lambda n: json.loads((FIXTURES / f"{n}.json").read_text())  # noqa: E731
    assert events.parse("SessionStart", load("SessionStart")).source == "startup"
    assert events.parse("UserPromptSubmit", load("UserPromptSubmit")).prompt == "hello world"
    tool = events.parse("PreToolUse", load("PreToolUse"))
    assert tool.tool_name == "Bash" and tool.command == "git push --force origin main"
    assert events.parse("PreCompact", load("PreCompact")).trigger == "manual"
    stop = events.parse("Stop", load("Stop"))
    assert stop.stop_hook_active is False and stop.last_assistant_message == "MOCK-REPLY-OK"


def test_unknown_fields_ignored_wrong_types_rejected():
    ev = events.parse("user-prompt-submit", {"prompt": "x", "future_field": [1, 2]})
    assert ev.prompt == "x"
    with pytest.raises(InvalidInput):
        events.parse("UserPromptSubmit", {"prompt": 42})
    with pytest.raises(InvalidInput):
        events.parse("Stop", {"stop_hook_active": "yes"})
    with pytest.raises(InvalidInput):
        events.parse("PreToolUse", {"tool_input": "rm -rf /"})
    with pytest.raises(InvalidInput):
        events.parse("Notification", {})


def test_output_shapes_and_budget():
    assert output.build("UserPromptSubmit", {}, 100) is None
    assert output.build("Stop", {"additionalContext": "Compass x"}, 100) is None  # Stop cannot add context
    obj = output.build("UserPromptSubmit", {"additionalContext": "Compass — memory\n" + "line\n" * 500}, 300)
    ctx = obj["hookSpecificOutput"]["additionalContext"]
    assert obj["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert len(ctx) <= 300 and ctx.startswith("Compass") and "\nlin\n" not in ctx  # cut at a line boundary
    pre = output.build("PreToolUse", {"permissionDecision": "ask", "permissionDecisionReason": "why"}, 100)
    assert pre == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                          "permissionDecisionReason": "why"}}
    assert output.build("PreToolUse", {"permissionDecision": "maybe"}, 100) is None
    assert output.build("SessionStart", {"systemMessage": "hi"}, 100) == {"systemMessage": "hi"}
