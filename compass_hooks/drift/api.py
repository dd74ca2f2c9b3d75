"""What the hook handlers call: drift's part of the prompt context, scoring a prompt (skipping harness
text), storing alerts, and formatting the block. Contract in docs/architecture.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..textrules.harness import is_harness

from . import history
from .format import format_block
from .rules import RuleHit, check_prompt_rules
from .scorer import get_state, scored_text

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.prompt import PromptContext
    from ..memory.corelike import CoreLike

__all__ = ["check_prompt", "format_block", "is_harness_text", "prompt_rules", "score_texts", "scored_text"]


def is_harness_text(text: str | None) -> bool:
    return is_harness(text)


def score_texts(core: CoreLike, texts: list[str], project: str | None = None) -> list[dict]:
    return get_state(core).score(texts, project)


def prompt_rules(text: str) -> tuple[RuleHit, ...]:
    """Drift's part of the prompt context: the prompt rules that fire on the text the model scores
    (the context's vector for drift is that of ``scored_text(text)``)."""
    hit = check_prompt_rules(scored_text(text))
    return (hit,) if hit else ()


def check_prompt(core: CoreLike, prompt: PromptContext) -> dict | None:
    """Score one user prompt, prepared by the handler; None when it is harness text. Alerts are stored."""
    if prompt.harness:
        return None
    vector = prompt.vector(scored_text(prompt.text))
    hits = None if prompt.rules is None else [prompt.rules[0] if prompt.rules else None]
    result = get_state(core).score([prompt.text], prompt.project,
                                   with_vectors=None if vector is None else vector.reshape(1, -1), with_hits=hits)[0]
    if result["alert"]:
        result["alert_id"] = history.record_alert(core.store, result, prompt.project, prompt.session,
                                                  model=core.embedder.name)
    return result
