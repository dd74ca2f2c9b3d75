"""The memory write path's text pass: ``<private>`` spans out and secrets redacted (:func:`~compass_hooks.textrules.
secrets.scrub`, the one pass every writer uses), whitespace tidied, and a flag for text that reads like
instructions to the model (:mod:`compass_hooks.textrules.instructions`), so injection withholds it instead of
quoting it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..textrules.instructions import looks_like_instruction
from ..textrules.secrets import precut, redact, scrub, strip_private
from .store import MAX_TEXT

__all__ = ["Cleaned", "clean", "precut", "redact", "strip_private"]

# Redaction runs on at most this much of a text: the store keeps MAX_TEXT characters, and a 2 MB prompt should
# not cost seconds of regex work for text that is cut anyway.
_PRECUT = MAX_TEXT + 16_384


@dataclass
class Cleaned:
    """Text ready to store plus what was done to it."""

    text: str
    redactions: list[str] = field(default_factory=list)  # labels, one per redacted secret
    private_removed: int = 0
    suspicious: bool = False

    @property
    def flags(self) -> list[str]:
        out = []
        if self.redactions or self.private_removed:
            out.append("redacted")
        if self.suspicious:
            out.append("suspicious-instruction")
        return out


def clean(text: str) -> Cleaned:
    """Private spans out, secrets redacted, whitespace tidied, instruction-like text flagged."""
    text, labels, n_private = scrub(text, _PRECUT)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return Cleaned(text=text, redactions=labels, private_removed=n_private, suspicious=looks_like_instruction(text))
