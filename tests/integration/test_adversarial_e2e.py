"""The adversarial corpora end to end (issue 14): through the hook launcher exactly as hooks.json runs it, with
a real worker (fake embedder), through ``compass-hook import``/``export``, and through the real MCP server.

- secrets.jsonl: every item as a prompt (or, for "Assistant: …" items, as the Stop reply), again from a
  transcript (PreCompact ingest) and from an import; then not one listed secret may be found verbatim in the
  database file, its WAL, the FTS pages (same file), the drift alerts, the logs, the audit log, the hook
  state or an export.
- injection.jsonl: every ``instruction: true`` item stored by the hook path and imported as a pinned
  constraint never appears in the UserPromptSubmit block, the SessionStart brief or MCP ``recall`` as text,
  and no line of those blocks is anything but our header or one of our items; the benign items (the user's
  own standing rules among them) are shown, and the false positives are reported.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import uuid
from pathlib import Path

import anyio
import pytest

from compass_hooks.cli import cli
from compass_hooks.memory import inject
from compass_hooks.memory.standing import api as standing
from compass_hooks.paths import get_paths
from compass_hooks.textrules.instructions import instruction_flags
from mcp_client import stdio_session
from worker_helpers import stop_worker
import testdirs

pytestmark = pytest.mark.slow

ROOT = testdirs.ROOT
DATA = ROOT / "tests" / "data" / "adversarial"
HOOKS = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
SECRETS = [json.loads(line) for line in (DATA / "secrets.jsonl").read_text("utf-8").splitlines()]
INJECTION = [json.loads(line) for line in (DATA / "injection.jsonl").read_text("utf-8").splitlines()]
HEADERS = (inject.MEMORY_HEADER, inject.BRIEF_HEADER, inject.COMPACT_HEADER, inject.RELATED_HEADER, standing.HEADER)
# A standing instruction as the block renders it: one quoted rule (its own quotes neutralised), then where and when.
_STANDING_ITEM = re.compile(r"- \u201c[^\u201c\u201d]*\u201d \([a-z ]+, [^()]+\)")


@pytest.fixture(autouse=True)
def _no_worker_left():
    yield
    stop_worker()


def _hook(event: str, payload: dict) -> str:
    """Run one hook through the launcher with a real worker; its additionalContext ("" when none)."""
    handler = HOOKS[event][0]["hooks"][0]
    env = {k: v for k, v in os.environ.items() if k != "COMPASS_NO_WORKER"}
    env["CLAUDE_PLUGIN_ROOT"] = str(ROOT)
    payload = {"hook_event_name": event, "transcript_path": "", **payload}
    proc = subprocess.run(["sh", "-c", handler["command"]], input=json.dumps(payload).encode(), capture_output=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode().strip()
    if not out:
        return ""
    return json.loads(out).get("hookSpecificOutput", {}).get("additionalContext", "")


def _warm_worker(cwd: Path) -> None:
    from compass_hooks.worker import client

    client.ensure_worker(get_paths(), wait_s=60)
    _hook("SessionStart", {"session_id": "warm", "cwd": str(cwd), "source": "startup"})


def _transcript(path: Path, items: list[dict], session: str) -> None:
    lines = []
    for n, item in enumerate(items):
        if item["text"].startswith("Assistant:"):
            lines.append({"type": "assistant", "sessionId": session, "uuid": str(uuid.uuid4()),
                          "timestamp": "2025-05-01T10:00:00Z",
                          "message": {"id": f"msg_{n}", "role": "assistant",
                                      "content": [{"type": "text", "text": item["text"]}]}})
        else:
            lines.append({"type": "user", "sessionId": session, "uuid": str(uuid.uuid4()),
                          "timestamp": "2025-05-01T10:00:00Z", "message": {"role": "user", "content": item["text"]}})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def test_secret_corpus_leaves_no_verbatim_copy_anywhere(tmp_path, cli_runner):
    cwd = tmp_path / "shop"
    cwd.mkdir()
    _warm_worker(cwd)
    for n, item in enumerate(SECRETS):
        if item["text"].startswith("Assistant:"):
            _hook("Stop", {"session_id": "s-secrets", "cwd": str(cwd), "last_assistant_message": item["text"]})
        else:
            _hook("UserPromptSubmit", {"session_id": "s-secrets", "cwd": str(cwd), "prompt_id": f"p{n}",
                                       "prompt": item["text"]})
    transcript = tmp_path / "transcript.jsonl"
    _transcript(transcript, SECRETS, "s-transcript")
    _hook("PreCompact", {"session_id": "s-transcript", "cwd": str(cwd), "transcript_path": str(transcript),
                         "trigger": "auto"})
    stop_worker()  # drains the deferred captures
    lines = tmp_path / "import.jsonl"
    lines.write_text("\n".join(json.dumps({"text": s["text"], "ref": f"item-{n}", "kind": "note"})
                               for n, s in enumerate(SECRETS)) + "\n", encoding="utf-8")
    assert cli_runner.invoke(cli, ["import", str(lines), "--project", str(cwd)]).exit_code == 0
    export = tmp_path / "export.jsonl"
    assert cli_runner.invoke(cli, ["export", "-o", str(export)]).exit_code == 0

    paths = get_paths()
    con = sqlite3.connect(paths.db)
    n_memories = con.execute("SELECT count(*) FROM memories").fetchone()[0]
    alerts = [t for (t,) in con.execute("SELECT text FROM drift_alerts")]
    stored = [f"{t}\n{c}" for t, c in con.execute("SELECT text, context FROM memories")]
    con.close()
    assert n_memories >= 2.5 * len(SECRETS)  # hook + transcript + import, each stored
    assert len(alerts) >= 40  # a credential in a prompt alerts: the alert table was exercised
    exported = [json.loads(line) for line in export.read_text("utf-8").splitlines()]
    assert len(exported) == n_memories
    files = [paths.db, paths.db.with_name(paths.db.name + "-wal"), paths.audit_log, paths.hook_state,
             *paths.logs.iterdir()]
    blobs = {str(f): f.read_bytes() for f in files if f.is_file()}
    texts = {"memories": "\n".join(stored), "drift_alerts": "\n".join(alerts),
             "export": "\n".join(f"{r['text']}\n{r.get('context') or ''}" for r in exported),
             **{where: blob.decode("utf-8", "replace") for where, blob in blobs.items() if where.endswith(".log")}}
    found = []
    for item in SECRETS:
        for secret in item["secrets"]:
            if len(secret) >= 8:  # in the raw bytes of every file (FTS pages and free pages included)
                found += [(item["id"], where) for where, blob in blobs.items() if secret.encode() in blob]
                found += [(item["id"], where) for where, text in texts.items() if secret in text]
            else:  # a CVV ("847") is in any hex digest by chance: look for it as a token in the stored texts
                token = re.compile(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])")
                found += [(item["id"], where) for where, text in texts.items() if token.search(text)]
    assert not found, f"secrets kept verbatim: {found}"


_DRIFT_LINES = ("This prompt resembles ", "Rule that fired: ", "Nearest drift patterns: ", "If this is a false alarm: ")


def _lines_are_ours(context: str) -> bool:
    """Every line is one of our headers, one of our memory items (``- …[#id]``) or a line of our drift block:
    stored text started no line of its own."""
    for block in context.split("\n\n"):
        lines = block.splitlines()
        if lines and lines[0].startswith("Compass — drift check"):
            if not all(line.startswith(_DRIFT_LINES) for line in lines[1:]):
                return False
            continue
        for line in lines:
            if line in HEADERS or _STANDING_ITEM.fullmatch(line):
                continue
            if not (line.startswith("- ") and line.endswith("]") and "[#" in line and line.count("\u201c") <= 1):
                return False
    return True


def _shown_as_text(block: str, text: str) -> bool:
    """Whether the item's words reach the block: the raw text, or its first words as the renderer quotes them."""
    words = inject.one_line(text, 10_000)
    probe = words[:60] if len(words) > 20 else words
    return text in block or bool(probe.strip()) and probe in block


def test_injection_corpus_is_never_injected_as_instructions(tmp_path, cli_runner):
    root = tmp_path / "projects"
    projects = {}
    for item in INJECTION:
        projects[item["id"]] = root / item["id"]
        projects[item["id"]].mkdir(parents=True)
    _warm_worker(root)
    for n, item in enumerate(INJECTION):  # through the hook: the prompt is captured as the user said it
        _hook("UserPromptSubmit", {"session_id": f"s-{n}", "cwd": str(projects[item["id"]]), "prompt_id": f"p{n}",
                                   "prompt": item["text"]})
    lines = tmp_path / "pinned.jsonl"
    lines.write_text("\n".join(json.dumps({"text": i["text"], "kind": "constraint", "pinned": True,
                                           "project": str(projects[i["id"]]), "ref": i["id"]}) for i in INJECTION),
                     encoding="utf-8")
    assert cli_runner.invoke(cli, ["import", str(lines)]).exit_code == 0  # in process, same store

    leaked, structure, withheld_benign, briefs, recalled = [], [], [], {}, 0
    for n, item in enumerate(INJECTION):
        cwd = str(projects[item["id"]])
        brief = _hook("SessionStart", {"session_id": f"b-{n}", "cwd": cwd, "source": "startup"})
        # A later prompt that shares the item's words: recall brings the stored prompt back if anything does.
        asked = _hook("UserPromptSubmit", {"session_id": f"q-{n}", "cwd": cwd, "prompt_id": f"q{n}",
                                           "prompt": item["text"] + " — what did we say about this?"})
        briefs[item["id"]] = brief
        recalled += inject.MEMORY_HEADER in asked
        for where, block in (("brief", brief), ("prompt", asked)):
            if block and not _lines_are_ours(block):
                structure.append((item["id"], where))
            if item["instruction"] and _shown_as_text(block, item["text"]):
                leaked.append((item["id"], where))
        if not item["instruction"] and "withheld" in brief:
            withheld_benign.append(item["id"])
        if item["instruction"]:
            assert "withheld" in brief, (item["id"], brief)  # the pinned import had its chance and was withheld

    async def recall_all() -> list[tuple[str, str]]:
        out = []
        async with stdio_session(tmp_path) as client:
            for item in INJECTION:
                r = await client.call_tool("recall", {"query": item["text"][:200], "project": str(projects[item["id"]])})
                data = r.structured_content or {}
                text = "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")
                head, *lines = text.splitlines()  # the head line echoes the caller's own query
                for m in data.get("memories", []):
                    # Shown, it may only be what capture left of it: our copied block stripped, say, leaving
                    # "deploy script note" (data, not an order).
                    if item["instruction"] and not m.get("withheld") and (
                            instruction_flags(m["text"]) or _shown_as_text(m["text"], item["text"])):
                        out.append((item["id"], "mcp-structured"))
                if not data.get("memories"):
                    out.append((item["id"], "mcp-nothing-recalled"))  # the check below would prove nothing
                if item["instruction"] and _shown_as_text("\n".join(lines), item["text"]):
                    out.append((item["id"], "mcp-text"))
                if not all(line.startswith("- [") for line in lines):
                    out.append((item["id"], "mcp-structure"))
        return out

    leaked += anyio.run(recall_all)
    print(f"injection: {recalled} prompts recalled memories; "
          f"{sum(i['instruction'] for i in INJECTION)} instructions, {len(leaked)} shown; "
          f"{sum(not i['instruction'] for i in INJECTION)} benign, {len(withheld_benign)} withheld: {withheld_benign}")
    assert recalled >= len(INJECTION) // 2, recalled  # the prompt path did bring memories back
    assert not leaked, leaked
    assert not structure, structure
    assert not withheld_benign, withheld_benign
    benign_shown = [i["id"] for i in INJECTION if not i["instruction"] and "\u201c" in briefs[i["id"]]]
    assert len(benign_shown) == sum(not i["instruction"] for i in INJECTION)  # the user's rules still reach the model
