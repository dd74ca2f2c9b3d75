"""Drift ops for the worker / in-process service."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..ops import op
from .api import score_texts

MAX_BATCH = 1000


@op("score")
def score(core: Any, texts: list[str] | None = None, project: str | None = None) -> dict:
    """Batch scoring: ``{"texts": [...], "project"?}`` -> ``{"results": [...]}`` in input order."""
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InvalidInput("score needs texts: a list of strings")
    if len(texts) > MAX_BATCH:
        raise InvalidInput(f"score takes at most {MAX_BATCH} texts per call")
    return {"results": score_texts(core, texts, project)}
