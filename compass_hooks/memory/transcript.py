"""Tolerant reader of Claude Code transcript JSONL: the human turns and the
assistant's visible replies, nothing else.

Kept: ``user`` records whose content is a string or has ``text`` blocks, and
``assistant`` text blocks (lines sharing one ``message.id`` merged in order).
Skipped: malformed lines, non-objects, unknown types (progress, system, summary,
file-history-snapshot, queue-operation, attachment, ...), sidechains (subagent
traffic), ``isMeta`` records (skill bodies, caveats), compaction summaries,
tool results, tool_use/thinking blocks, and harness text (slash-command echoes,
local command output, system reminders, "[Request interrupted ...]").

Stdlib only. Reads the whole file (transcripts are MBs, not GBs) but never
holds more than the kept turns.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from ..textrules.harness import is_harness, strip_harness

__all__ = ["Turn", "is_harness", "parse", "parse_time", "strip_harness"]

@dataclass(frozen=True)
class Turn:
    key: str  # idempotency key: "uuid:<uuid>" (user) or "msg:<message id>" (assistant)
    role: str  # user | assistant
    text: str
    created: float | None  # unix seconds from the record's timestamp
    session: str | None
    uuid: str | None
    line: int  # 1-based line of the first record of this turn


def parse_time(value: Any) -> float | None:
    if isinstance(value, (int, float)):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _text_blocks(content: Any) -> tuple[list[str], bool]:
    """(texts of the text blocks, whether any tool_result block was present)."""
    if isinstance(content, str):
        return [content], False
    texts: list[str] = []
    tool = False
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            t = block.get("type")
            if t == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif t == "tool_result":
                tool = True
    return texts, tool


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        f = open(path, "rb")
    except OSError:
        return
    with f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                rec = json.loads(raw.decode("utf-8", errors="replace"))
            except ValueError:
                continue
            if isinstance(rec, dict):
                yield n, rec


def parse(path: str | Path) -> list[Turn]:
    """The transcript's human prompts and assistant replies, in order. Never raises on content."""
    turns: list[Turn] = []
    assistant_at: dict[str, int] = {}  # message id -> index in turns (merge split messages)
    for n, rec in _records(Path(path)):
        kind = rec.get("type")
        if kind not in ("user", "assistant"):
            continue
        if rec.get("isSidechain") or rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("isVisibleInTranscriptOnly"):
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict):
            continue
        texts, had_tool = _text_blocks(msg.get("content"))
        if kind == "user" and (had_tool or "toolUseResult" in rec):
            continue  # tool output travels as a user record; it is not the human speaking
        uuid = rec.get("uuid") if isinstance(rec.get("uuid"), str) else None
        session = rec.get("sessionId") if isinstance(rec.get("sessionId"), str) else None
        created = parse_time(rec.get("timestamp"))
        if kind == "user":
            parts = [strip_harness(t) for t in texts]
            text = "\n\n".join(p for p in parts if p and not is_harness(p)).strip()
            if not text:
                continue
            key = f"uuid:{uuid}" if uuid else "sha:" + hashlib.sha256(text.encode()).hexdigest()[:32]
            turns.append(Turn(key, "user", text, created, session, uuid, n))
            continue
        text = "\n\n".join(t.strip() for t in texts if t.strip())
        mid = msg.get("id") if isinstance(msg.get("id"), str) else None
        if mid and mid in assistant_at:
            i = assistant_at[mid]
            prev = turns[i]
            if text:
                merged = f"{prev.text}\n\n{text}" if prev.text else text
                turns[i] = Turn(prev.key, prev.role, merged, prev.created, prev.session, prev.uuid, prev.line)
            continue
        key = f"msg:{mid}" if mid else (f"uuid:{uuid}" if uuid else f"line:{n}")
        if mid:
            assistant_at[mid] = len(turns)
        turns.append(Turn(key, "assistant", text, created, session, uuid, n))
    return [t for t in turns if t.text]
