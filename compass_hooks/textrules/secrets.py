"""Secrets and ``<private>`` spans: what never reaches the store, a log or an export.

One list of credential shapes serves both the redaction pass (:func:`redact`) and the drift rule that alerts
on a secret in a prompt (:func:`find_secret`). Redaction is conservative on purpose: a false positive costs a
few characters of a memory, a false negative leaks a credential into a database that is read back into every
later session. Known key formats are matched exactly; generic ``password=...`` style assignments keep the key
name and drop the value. Stdlib only; idempotent (redacting redacted text changes nothing).
"""

from __future__ import annotations

import re

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)

PEM = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.DOTALL)

# (label, pattern): the union of the shapes the drift rules and the memory filter each had. Order matters:
# specific formats first (sk-ant- before sk-).
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
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
)

# Redacted, but not a drift alert on their own: a bearer header or a password in a URL is as often a
# placeholder in an example as a real credential ("postgres://user:pass@localhost").
CONTEXTUAL = frozenset({"bearer", "url-password"})

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


def find_secret(text: str) -> str | None:
    """The label of the first credential shape in ``text`` (a private key block counts; CONTEXTUAL shapes do
    not), else None."""
    if PEM.search(text):
        return "private-key"
    for label, pattern in SHAPES:
        if label not in CONTEXTUAL and pattern.search(text):
            return label
    return None


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

    text = PEM.sub(sub("private-key"), text)
    for label, pat in SHAPES:
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
