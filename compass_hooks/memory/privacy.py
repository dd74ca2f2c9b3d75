"""The memory write path's text pass: ``<private>`` spans out, secrets redacted (both rules live in
:mod:`compass_hooks.textrules.secrets`), whitespace tidied, and a flag for text that reads like instructions to
the model (:mod:`compass_hooks.textrules.instructions`), so injection withholds it instead of quoting it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..textrules.instructions import looks_like_instruction
from ..textrules.secrets import redact, strip_private

__all__ = ["Cleaned", "clean", "redact", "strip_private"]


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
    text, n_private = strip_private(text)
    text, labels = redact(text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return Cleaned(text=text, redactions=labels, private_removed=n_private, suspicious=looks_like_instruction(text))
