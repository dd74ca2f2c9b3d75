"""What never reaches the store: ``<private>`` spans and secrets. Plus a flag for
stored text that reads like instructions to the model (prompt injection bait),
so injection can quote it cautiously instead of verbatim.

Redaction is conservative on purpose: a false positive costs a few characters of
a memory, a false negative leaks a credential into a database that is read back
into every later session. Known key formats are matched exactly; generic
``password=...`` style assignments keep the key name and drop the value.
Stdlib only; idempotent (redacting redacted text changes nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)

_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.DOTALL
)

# (label, pattern). Order matters: specific formats first (sk-ant- before sk-).
_TOKENS: list[tuple[str, re.Pattern[str]]] = [
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("google-oauth", re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer", re.compile(r"(?<=\bBearer )[A-Za-z0-9._~+/\-]{16,}=*", re.IGNORECASE)),
    ("url-password", re.compile(r"(?<=://)[^\s:/@]+:[^\s@/]{3,}(?=@)")),
]

# key = value / key: value / "key": "value" where the key names a secret.
_ASSIGN = re.compile(
    r"""(?P<key>\b[\w.\-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|
          private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)(?:[_\-.]?(?:key|value|str|string))?)
        (?P<sep>["']?\s*(?:=|:)\s*)
        (?P<val>"[^"\n]{3,}"|'[^'\n]{3,}'|[^\s"',;}{)\]]{3,})""",
    re.IGNORECASE | re.VERBOSE,
)
_PLACEHOLDER = re.compile(r"^\[REDACTED(?::[a-z\-]+)?\]$|^[\"']?\[REDACTED")
# Values that are obviously not secrets (config references, types, empties).
_NOT_SECRET = re.compile(r"^[\"']?(?:none|null|true|false|str|string|int|bool|undefined|\$\{?\w+\}?|<[^>]*>|\*+)[\"']?$",
                         re.IGNORECASE)

_INSTRUCTION_LIKE = re.compile(
    r"""\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|
          preceding|system|original)\s+(?:instructions?|prompts?|rules|messages?|directions?)
      |\byou\s+are\s+now\b
      |\bsystem\s+prompt\b
      |\bnew\s+instructions?\s*:
      |\b(?:developer|god|jailbreak|dan)\s+mode\b
      |\bdo\s+anything\s+now\b
      |\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|different)\b
      |</?\s*(?:system|assistant|im_start|im_end)\s*>
      |^\s*\#{2,}\s*(?:system|instructions?)\b
      |忽略(?:之前|以上|前面|所有)的?(?:指令|指示|提示|规则)
      |你现在是
      |系统提示""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)


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


def strip_private(text: str) -> tuple[str, int]:
    """Drop ``<private>...</private>`` (an unclosed tag hides everything after it)."""
    out, n = _PRIVATE.subn("", text)
    out = re.sub(r"</private>", "", out, flags=re.IGNORECASE)
    return out, n


def redact(text: str) -> tuple[str, list[str]]:
    """Replace secrets by ``[REDACTED:<label>]``; returns the text and the labels."""
    labels: list[str] = []

    def sub(label: str):
        def fn(m: re.Match[str]) -> str:
            labels.append(label)
            return f"[REDACTED:{label}]"

        return fn

    text = _PEM.sub(sub("private-key"), text)
    for label, pat in _TOKENS:
        text = pat.sub(sub(label), text)

    def assign(m: re.Match[str]) -> str:
        val = m.group("val")
        if _PLACEHOLDER.search(val) or _NOT_SECRET.match(val):
            return m.group(0)
        labels.append("assignment")
        quote = val[0] if val[0] in "\"'" else ""
        return f"{m.group('key')}{m.group('sep')}{quote}[REDACTED]{quote}"

    text = _ASSIGN.sub(assign, text)
    return text, labels


def looks_like_instructions(text: str) -> bool:
    """True when the text reads like orders to the model ("ignore previous instructions")."""
    return bool(_INSTRUCTION_LIKE.search(text))


def clean(text: str) -> Cleaned:
    """Private spans out, secrets redacted, whitespace tidied, instruction-like text flagged."""
    text, n_private = strip_private(text)
    text, labels = redact(text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return Cleaned(text=text, redactions=labels, private_removed=n_private, suspicious=looks_like_instructions(text))
