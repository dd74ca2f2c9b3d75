"""One user prompt as the UserPromptSubmit handler prepares it, once, for drift, recall and capture.

The handler (``worker/hooks/handlers.py``) computes the project id, the harness verdict, drift's prompt rules,
memory's cleaned text and one embedder call for the texts both features read, and passes this frozen value to
``drift.api.check_prompt``, ``memory.api.recall_for_prompt`` and the deferred ``memory.api.capture_prompt``.
Each of them used to redo that work on the raw event.

It lives in memory because :class:`~.capture.Prepared` does; drift imports it for the annotation only, and
memory never imports drift, so the packages stay acyclic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..textrules.commands import RuleHit
from .capture import Prepared


def _no_vectors() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class PromptContext:
    """Read-only: the deferred capture reads it on the worker's background thread after the answer."""

    # The prompt as the user sent it. Drift scores this text, not the cleaned one: its secret rule must see the
    # secret that memory redacts.
    text: str
    project: str | None = None  # project id of the hook's cwd (git top-level); None without a cwd
    session: str | None = None
    prompt_id: str | None = None
    harness: bool = False  # Claude Code or Compass wrote it: neither scored nor recalled
    # Drift's prompt rules on the scored text (a secret, a destructive command asked for): () none fired,
    # (hit,) one did, None not checked yet (drift then runs them itself). Set from ``drift.api.prompt_rules``.
    rules: tuple[RuleHit, ...] | None = None
    # What memory stores and searches with: blocks, harness text and <private> out, secrets redacted, flags,
    # the constraint/decision/correction detection. None: nothing to store, or memory is off for the project.
    prepared: Prepared | None = None
    # Embeddings by exact text, all from one embedder call; a text missing here is embedded by its reader.
    vectors: Mapping[str, Any] = field(default_factory=_no_vectors)
    model: str | None = None  # the embedder that made ``vectors`` (a spooled capture keeps its vector only then)

    def vector(self, text: str) -> Any:
        """The embedding of ``text`` made while preparing the prompt, or None."""
        return self.vectors.get(text)
