"""What the hook handlers call: score a prompt (skipping harness text), store
alerts, and format the block. Contract in docs/architecture.md."""

from __future__ import annotations

from typing import Any

from ..textrules.harness import is_harness

from . import history
from .format import format_block
from .scorer import get_state

__all__ = ["check_prompt", "format_block", "is_harness_text", "score_texts"]

def is_harness_text(text: str | None) -> bool:
    return is_harness(text)


def score_texts(core: Any, texts: list[str], project: str | None = None) -> list[dict]:
    return get_state(core).score(texts, project)


def check_prompt(core: Any, text: str, project: str | None = None, session: str | None = None) -> dict | None:
    """Score one user prompt; None when it is harness text. Alerts are stored."""
    if is_harness_text(text):
        return None
    result = get_state(core).score([text], project)[0]
    if result["alert"]:
        result["alert_id"] = history.record_alert(core.paths.db, result, project, session, model=core.embedder.name)
    return result
