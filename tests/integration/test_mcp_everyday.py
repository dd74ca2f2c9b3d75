"""The everyday MCP tools through the official SDK client over stdio (``compass-mcp`` as a subprocess): list,
edit, drift_history, feedback, tags and time windows, the relevance floor, unknown projects, one list of kinds."""

from __future__ import annotations

import anyio
import pytest

from compass_hooks.memory.kinds import KINDS
from mcp_client import stdio_session, text_of


@pytest.fixture
def workdir(tmp_path):
    d = tmp_path / "proj"
    (d / ".git").mkdir(parents=True)
    return d


def test_schemas_and_annotations(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            return {t.name: t for t in (await c.list_tools()).tools}

    tools = anyio.run(go)
    assert {"list", "edit", "drift_history", "feedback"} <= set(tools)
    for name in ("list", "drift_history", "recall", "constraints"):
        assert tools[name].annotations.read_only_hint is True, name
    assert tools["edit"].annotations.destructive_hint is True and tools["edit"].annotations.read_only_hint is False
    assert tools["feedback"].annotations.read_only_hint is False
    assert tools["feedback"].annotations.destructive_hint is False
    for t in tools.values():
        assert t.output_schema and t.output_schema.get("type") == "object", t.name
        for prop, spec in t.input_schema.get("properties", {}).items():
            assert spec.get("description"), f"{t.name}.{prop}"

    def enum_of(schema, prop):
        spec = schema["properties"][prop]
        for alt in spec.get("anyOf", [spec]):
            if alt.get("type") == "array":
                alt = alt["items"]
            if "enum" in alt:
                return alt["enum"]
            if "$ref" in alt:
                return schema["$defs"][alt["$ref"].split("/")[-1]]["enum"]
        raise AssertionError(spec)

    # One list of kinds: the store's, nothing MCP would quietly store as something else.
    assert enum_of(tools["remember"].input_schema, "kind") == list(KINDS)
    assert enum_of(tools["recall"].input_schema, "kinds") == list(KINDS)
    assert enum_of(tools["edit"].input_schema, "kind") == list(KINDS)
    assert enum_of(tools["feedback"].input_schema, "label") == ["fp", "tp"]


def test_list_edit_tags_and_windows(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            out = {}
            out["rem"] = await c.call_tool("remember", {"text": "never push to main", "kind": "constraint",
                                                        "tags": ["git"]})
            out["pref"] = await c.call_tool("remember", {"text": "x", "kind": "preference"})
            mid = out["rem"].structured_content["id"]
            out["list"] = await c.call_tool("list", {"since": "yesterday", "tags": ["git"]})
            out["old"] = await c.call_tool("list", {"until": "last week"})
            out["edit"] = await c.call_tool("edit", {"id": mid, "text": "never push to main; open a pull request",
                                                     "pin": True, "tags": ["git", "review"]})
            out["recall"] = await c.call_tool("recall", {"query": "pull request", "tags": ["review"]})
            out["junk"] = await c.call_tool("recall", {"query": "what is the office wifi password policy?"})
            out["unknown"] = await c.call_tool("recall", {"query": "push", "project": "no-such-project"})
            out["bad_when"] = await c.call_tool("list", {"since": "when pigs fly"})
            return out

    out = anyio.run(go)
    assert not out["rem"].is_error, text_of(out["rem"])
    assert out["rem"].structured_content["tags"] == ["git"]
    assert out["pref"].is_error and "argument 'kind'" in text_of(out["pref"])  # not silently a constraint
    listed = out["list"].structured_content
    assert listed["total"] == 1 and listed["memories"][0]["tags"] == ["git"]
    assert out["old"].structured_content["memories"] == []
    ed = out["edit"].structured_content
    assert ed["changed"] == ["text", "pinned", "tags"] and ed["pinned"] is True and ed["tags"] == ["git", "review"]
    hits = out["recall"].structured_content["memories"]
    assert [h["id"] for h in hits] == [ed["id"]] and "pull request" in hits[0]["text"]
    junk = out["junk"].structured_content
    assert junk["memories"] == [] and junk["below_floor"] >= 1
    assert "nothing relevant" in text_of(out["junk"])
    assert out["unknown"].is_error and "no memories in project" in text_of(out["unknown"])
    assert "Next:" in text_of(out["unknown"])
    assert out["bad_when"].is_error and "cannot read 'when pigs fly'" in text_of(out["bad_when"])


def test_drift_history_and_feedback(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            # An alert is stored when a prompt drifts through the hooks; drift_check only scores. Raise one the
            # way the hooks do, in this store, then read and label it through MCP.
            from compass_hooks.service import get_service

            svc = get_service(local=True)
            try:
                svc.call("hook", event="user-prompt-submit",
                         payload={"prompt": "force push to main and delete the failing tests, nobody will notice", "cwd": str(workdir),
                                  "session_id": "s1", "hook_event_name": "UserPromptSubmit"})
            finally:
                svc.close()
            hist = await c.call_tool("drift_history", {})
            alert_id = hist.structured_content["alerts"][0]["id"]
            fb = await c.call_tool("feedback", {"alert_id": alert_id, "label": "fp"})
            after = await c.call_tool("drift_history", {"limit": 5})
            bad = await c.call_tool("feedback", {"alert_id": "d-nosuch", "label": "fp"})
            return hist, fb, after, bad

    hist, fb, after, bad = anyio.run(go)
    assert not hist.is_error, text_of(hist)
    a = hist.structured_content["alerts"][0]
    assert a["probability"] > 0.5 and "force push" in a["text"] and a["feedback"] is None
    assert not fb.is_error and fb.structured_content["feedback"] == "fp"
    assert after.structured_content["alerts"][0]["feedback"] == "fp"
    assert bad.is_error and "Next:" in text_of(bad)
