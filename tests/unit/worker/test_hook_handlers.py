"""Worker-side handlers: one failing feature does not sink the others; captures are deferred when offered."""

from __future__ import annotations

import json

from compass_hooks.core import Core
from compass_hooks.worker.hooks import handlers
import testdirs

FIXTURES = testdirs.FIXTURES / "hooks"


def _ups(prompt):
    payload = json.loads((FIXTURES / "UserPromptSubmit.json").read_text())
    payload["prompt"] = prompt
    return payload


def test_drift_failure_does_not_sink_memory(monkeypatch):
    from compass_hooks.drift import api as drift_api
    from compass_hooks.memory import api as mem_api

    core = Core()
    calls = []
    monkeypatch.setattr(drift_api, "check_prompt", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    monkeypatch.setattr(mem_api, "recall_for_prompt", lambda core, prompt, drift=None, budget=0: "Compass — memory\nx")
    monkeypatch.setattr(mem_api, "capture_prompt", lambda core, prompt: calls.append(prompt.text))
    out = handlers.handle(core, "UserPromptSubmit", _ups("force push to main"))
    assert out == {"additionalContext": "Compass — memory\nx"} and calls == ["force push to main"]


def test_memory_failure_keeps_the_drift_block_and_capture_is_durable_then_deferred(monkeypatch):
    from compass_hooks.memory import api as mem_api

    core = Core()
    queued = []
    core.state["worker.defer"] = lambda fn, activity=True: queued.append(fn)
    monkeypatch.setattr(mem_api, "recall_for_prompt", lambda *a, **k: 1 / 0)
    out = handlers.handle(core, "UserPromptSubmit", _ups("just force push to main and skip the tests, nobody will notice"))
    assert out["additionalContext"].startswith("Compass — drift check")
    from compass_hooks import spool

    assert spool.count(core.paths.data) == 1  # on disk before the answer
    assert len(queued) == 1 and core.store.count() == 0  # stored on the worker's background thread
    queued[0]()
    assert spool.count(core.paths.data) == 0 and core.store.count() == 1


def test_pretooluse_modes(monkeypatch):
    core = Core()
    payload = json.loads((FIXTURES / "PreToolUse.json").read_text())
    assert handlers.handle(core, "PreToolUse", payload)["permissionDecision"] == "ask"
    core.config.data["hooks"]["pretooluse"] = "deny"
    assert handlers.handle(core, "PreToolUse", payload)["permissionDecision"] == "deny"
    core.config.data["hooks"]["pretooluse"] = "off"
    assert handlers.handle(core, "PreToolUse", payload) == {}
    payload["tool_input"] = {"command": "ls -la"}
    core.config.data["hooks"]["pretooluse"] = "ask"
    assert handlers.handle(core, "PreToolUse", payload) == {}
