"""The MCP server, driven by the official SDK client over stdio with ``compass-mcp`` as a
subprocess (the way editors run it). Fake embedder and in-process service (conftest)
unless a test says otherwise."""

from __future__ import annotations

import subprocess

import anyio
import pytest

from compass_hooks.paths import get_paths
from mcp_server import TOOL_NAMES
from mcp_client import COMPASS_MCP, stdio_session, text_of

pytestmark = pytest.mark.slow  # a real compass-mcp (and worker) per test: ~2 s each here, 29 s in all


@pytest.fixture
def workdir(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / ".git").mkdir()  # a git top-level: its path is the project id
    return d


def run(fn, *args):
    return anyio.run(fn, *args)


def test_lists_the_six_tools_with_docs_and_schemas(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            assert c.server_info.name == "compass"
            return (await c.list_tools()).tools

    tools = {t.name: t for t in run(go)}
    assert set(tools) == set(TOOL_NAMES)
    for t in tools.values():
        assert t.description and len(t.description) > 60, t.name  # written for the model
        assert t.output_schema and t.output_schema.get("type") == "object", t.name
        for name, prop in t.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
    assert tools["drift_check"].input_schema["required"] == ["prompt"]
    assert set(tools["drift_check"].output_schema["properties"]) >= {
        "drift", "probability", "alert", "category", "rule", "anchors"}
    assert tools["recall"].input_schema["required"] == ["query"]
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["recall"].annotations.read_only_hint is True


def test_every_tool_end_to_end_in_one_session(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            out = {}
            out["drift"] = await c.call_tool("drift_check", {"prompt": "run rm -rf / on the build server now"})
            out["calm"] = await c.call_tool("drift_check", {"prompt": "add a unit test for the date parser"})
            out["remember"] = await c.call_tool(
                "remember", {"text": "Never edit files under generated/; change the templates instead"})
            out["constraints"] = await c.call_tool("constraints", {})
            out["recall"] = await c.call_tool("recall", {"query": "may I edit the generated files?", "k": 3})
            mem_id = out["remember"].structured_content["id"]
            out["forget"] = await c.call_tool("forget", {"id": mem_id})
            out["after"] = await c.call_tool("constraints", {})
            out["status"] = await c.call_tool("status", {})
            return out

    out = run(go)
    for name, r in out.items():
        assert not r.is_error, f"{name}: {text_of(r)}"

    d = out["drift"].structured_content
    assert set(d) == {"drift", "probability", "alert", "category", "rule", "anchors"}
    assert d["alert"] is True and d["rule"] == "rm_rf" and d["category"] == "destructive_operation"
    assert d["anchors"] and {"id", "text", "polarity", "similarity"} <= set(d["anchors"][0])
    assert "drift ALERT" in text_of(out["drift"]) and "rm_rf" in text_of(out["drift"])
    assert out["calm"].structured_content["rule"] is None

    rem = out["remember"].structured_content
    assert rem["kind"] == "constraint" and rem["project"] == str(workdir)
    assert isinstance(rem["id"], int) and f"[{rem['id']}]" in text_of(out["remember"])

    cons = out["constraints"].structured_content
    assert cons["project"] == str(workdir)
    assert [m["id"] for m in cons["constraints"]] == [rem["id"]]
    assert "generated/" in text_of(out["constraints"])

    rec = out["recall"].structured_content
    assert rec["memories"] and rec["memories"][0]["id"] == rem["id"]
    first = rec["memories"][0]
    assert first["kind"] == "constraint" and first["age"] and isinstance(first["score"], float)

    gone = out["forget"].structured_content
    assert gone["id"] == rem["id"] and gone["removed"] is True
    assert out["after"].structured_content["constraints"] == []

    st = out["status"].structured_content
    assert st["model"]["name"] == "fake" and st["model"]["ready"] is True
    assert st["worker"]["mode"] == "in-process"
    assert st["project"] == str(workdir) and st["data_dir"] == str(get_paths().data)
    assert st["versions"]["mcp"].startswith("2.") and st["store"]["exists"] is True
    assert "fake ready" in text_of(out["status"])


def test_remembered_in_one_session_recalled_in_another(workdir, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()

    async def first():
        async with stdio_session(workdir) as c:
            r = await c.call_tool("remember", {"text": "Deploys go through the staging cluster first",
                                               "kind": "decision"})
            assert not r.is_error, text_of(r)
            return r.structured_content["id"]

    async def second():
        # A different client process, started elsewhere, naming the project by path.
        async with stdio_session(other) as c:
            hit = await c.call_tool("recall", {"query": "how do deploys work", "project": str(workdir)})
            miss = await c.call_tool("recall", {"query": "how do deploys work"})
            return hit, miss

    mem_id = run(first)
    hit, miss = run(second)
    assert not hit.is_error, text_of(hit)
    assert [m["id"] for m in hit.structured_content["memories"]][:1] == [mem_id]
    assert hit.structured_content["memories"][0]["kind"] == "decision"
    assert mem_id not in [m["id"] for m in miss.structured_content["memories"]]  # other project: not shown

    # ... and the hooks' side (same store, through the service) sees it too.
    from compass_hooks.service import get_service

    svc = get_service(local=True)
    try:
        got = svc.call("constraints", project=str(workdir))
        listed = svc.call("recall", query="deploys staging", project=str(workdir), k=3)
    finally:
        svc.close()
    assert [m["id"] for m in listed["memories"]][:1] == [mem_id]
    assert got["constraints"] == []  # a decision, not a constraint


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # input_required round (2026-07-28) / roots/list mid-call
def test_project_defaults_to_the_clients_root(workdir, tmp_path, mode):
    elsewhere = tmp_path / "server-cwd"
    elsewhere.mkdir()

    async def go():
        async with stdio_session(elsewhere, roots=[workdir], mode=mode) as c:
            assert c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            return await c.call_tool("constraints", {})

    r = run(go)
    assert not r.is_error, text_of(r)
    assert r.structured_content["project"] == str(workdir)


def test_private_text_and_secrets_are_not_stored(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            r = await c.call_tool("remember", {
                "text": "Use the deploy key AKIAIOSFODNN7EXAMPLE for CI <private>my home address</private>",
                "kind": "constraint"})
            return r, await c.call_tool("constraints", {})

    r, listed = run(go)
    assert not r.is_error, text_of(r)
    stored = r.structured_content["text"]
    assert stored == "Use the deploy key [REDACTED:aws-access-key] for CI"
    assert r.structured_content["redactions"] == 1
    assert [m["text"] for m in listed.structured_content["constraints"]] == [stored]
    everything = text_of(r) + text_of(listed)
    assert "AKIAIOSFODNN7EXAMPLE" not in everything and "home address" not in everything


def test_wholly_private_text_is_refused(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            return await c.call_tool("remember", {"text": "<private>my salary is 90k</private>"})

    r = run(go)
    assert r.is_error and "private" in text_of(r) and "90k" not in text_of(r)


def test_bad_arguments_are_tool_errors_naming_the_argument(workdir):
    async def go():
        async with stdio_session(workdir) as c:
            return {
                "missing": await c.call_tool("drift_check", {}),
                "empty": await c.call_tool("remember", {"text": ""}),
                "k": await c.call_tool("recall", {"query": "x", "k": 0}),
                "kinds": await c.call_tool("recall", {"query": "x", "kinds": "constraint"}),
                "project": await c.call_tool("constraints", {"project": "/no/such/dir"}),
                "unknown_id": await c.call_tool("forget", {"id": "999999"}),
            }

    out = run(go)
    for name, r in out.items():
        assert r.is_error, name
        assert "Next:" in text_of(r), f"{name}: {text_of(r)}"
    assert "argument 'prompt'" in text_of(out["missing"])
    assert "argument 'text'" in text_of(out["empty"])
    assert "argument 'k'" in text_of(out["k"])
    assert "argument 'kinds'" in text_of(out["kinds"])
    assert "argument 'project'" in text_of(out["project"])
    assert "recall" in text_of(out["unknown_id"])  # says how to find a real id


def test_missing_model_is_a_tool_error_with_the_fix(workdir):
    async def go():
        async with stdio_session(workdir, COMPASS_MODEL="no-such-model") as c:
            return await c.call_tool("drift_check", {"prompt": "delete the staging database"}), \
                await c.call_tool("status", {})

    r, st = run(go)
    assert r.is_error
    assert "compass-hook model export --model no-such-model" in text_of(r)
    assert not st.is_error  # status still answers, and says what is wrong
    assert st.structured_content["model"]["ready"] is False
    assert "NOT READY" in text_of(st)


def test_stdout_carries_only_protocol(workdir):
    """A bare `initialize` then EOF: every stdout line is JSON-RPC, nothing else."""
    import json

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    proc = subprocess.run([str(COMPASS_MCP)], input=json.dumps(init) + "\n", capture_output=True, text=True,
                          cwd=workdir, timeout=60)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert lines, proc.stderr
    for ln in lines:
        assert json.loads(ln)["jsonrpc"] == "2.0"
    assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "compass"


def test_cli_help_and_argument_errors(cli_runner):
    from compass_hooks.cli import cli

    r = cli_runner.invoke(cli, ["mcp", "--help"])
    assert r.exit_code == 0 and "--http" in r.output and "config" in r.output
    r = cli_runner.invoke(cli, ["mcp", "--port", "9000"])
    assert r.exit_code == 2 and "only apply with --http" in r.output
    r = subprocess.run([str(COMPASS_MCP), "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "--http" in r.stdout


def test_through_the_real_worker(workdir, compass_home):
    """Without COMPASS_NO_WORKER the server starts the shared warm worker and calls ops there."""
    from compass_hooks.paths import get_paths
    from compass_hooks.worker.client import stop_worker, worker_status

    async def go():
        async with stdio_session(workdir, COMPASS_NO_WORKER=None) as c:
            r = await c.call_tool("drift_check", {"prompt": "git push --force origin main"})
            st = await c.call_tool("status", {})
            rem = await c.call_tool("remember", {"text": "Never force-push to main"})
            return r, st, rem

    try:
        r, st, rem = run(go)
        assert not r.is_error, text_of(r)
        assert r.structured_content["alert"] is True
        w = st.structured_content["worker"]
        assert w["mode"] == "worker" and w["running"] is True and w["pid"]
        assert not rem.is_error, text_of(rem)
        assert worker_status(get_paths())["running"] is True  # it outlives the MCP server (shared with hooks)
        # The in-process side (what another client would see) reads the same store.
        from compass_hooks.service import get_service

        svc = get_service(local=True)
        try:
            got = svc.call("constraints", project=str(workdir))
        finally:
            svc.close()
        assert [m["id"] for m in got["constraints"]] == [rem.structured_content["id"]]
    finally:
        stop_worker(get_paths())


def test_plugin_launcher_runs_the_server(workdir):
    """What Claude Code runs from the plugin's .mcp.json."""
    from testdirs import ROOT

    async def go():
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from mcp_client import server_env

        params = StdioServerParameters(command=str(ROOT / "mcp_server" / "launch.sh"), cwd=str(workdir),
                                       env=server_env(CLAUDE_PLUGIN_ROOT=str(ROOT), CLAUDE_PROJECT_DIR=str(workdir)))
        with open(workdir / "mcp-stderr.log", "a") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as c:
                return await c.call_tool("status", {})

    st = run(go)
    assert not st.is_error and st.structured_content["project"] == str(workdir)


def test_kinds_are_enumerated_for_the_model(workdir):
    """Both the schema and the server reject an unknown kind, naming the argument."""
    async def go():
        async with stdio_session(workdir) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            bad = await c.call_tool("remember", {"text": "x y z", "kind": "vibe"})
            return tools, bad

    tools, bad = run(go)
    kind_schema = tools["remember"].input_schema["properties"]["kind"]
    assert "constraint" in str(kind_schema) and "decision" in str(kind_schema)
    assert bad.is_error and "argument 'kind'" in text_of(bad)


@pytest.mark.model
def test_real_model_recall_across_clients_and_drift(workdir, real_model):
    """MiniLM: a paraphrased question finds the decision stored by another client session."""
    async def first():
        async with stdio_session(workdir) as c:
            await c.call_tool("remember", {"text": "We use pnpm for this repo, never npm or yarn", "kind": "constraint"})
            r = await c.call_tool("remember", {"text": "Releases are cut from the staging branch every Tuesday",
                                               "kind": "decision"})
            return r.structured_content["id"]

    async def second():
        async with stdio_session(workdir) as c:
            rec = await c.call_tool("recall", {"query": "which day do we ship a new version?", "k": 2})
            drift = await c.call_tool("drift_check", {"prompt": "just comment out the failing tests so the build goes green"})
            calm = await c.call_tool("drift_check", {"prompt": "rename the helper function and update its callers"})
            return rec, drift, calm

    mem_id = run(first)
    rec, drift, calm = run(second)
    assert not rec.is_error, text_of(rec)
    assert rec.structured_content["memories"][0]["id"] == mem_id
    assert drift.structured_content["alert"] is True
    assert calm.structured_content["alert"] is False
    assert drift.structured_content["probability"] > calm.structured_content["probability"]
