"""Secrets and ``<private>`` spans: what never reaches the store, a drift alert, a log or an export.

One list of credential shapes serves both the redaction pass (:func:`redact`, :func:`scrub`) and the drift
rule that alerts on a secret in a prompt (:func:`find_secret`). Redaction is conservative on purpose: a false
positive costs a few characters of a memory, a false negative leaks a credential into a database that is read
back into every later session.

What is matched (``tests/data/adversarial/secrets.jsonl`` has one realistic item per shape):

- **Known formats**, by their prefix and alphabet: cloud and SaaS keys (AWS, GitHub, GitLab, Slack, OpenAI,
  Anthropic, Stripe, Google, SendGrid, Mailgun, Discord, Telegram, Shopify, DigitalOcean, Vault, Doppler,
  Linear, Notion, Atlassian, Firebase, Mapbox, age, PyPI, npm, Hugging Face, Twilio), JWTs, PEM/PGP private key
  blocks. These also raise the drift alert.
- **Context**: a value assigned to a key that names a secret (``DB_PASS=``, ``"password": ...``,
  ``AccountKey=``; the key stays, the value goes), a password in prose ("my password is ...", ``密码：``,
  "mot de passe est ..."), ``Authorization: Bearer/Basic``, a password or token in a URL, ``sig=`` and
  similar query parameters, ``curl -u user:pass``, a 40-character AWS-style secret.
- **Validated numbers**: payment cards (Luhn), their CVV when labelled, IBANs (mod 97), US SSNs.
- **Encoded**: a base64 value that decodes to a credential or to ``user:password``; a quoted high-entropy
  string (mixed case and digits, no spaces) such as a positional API secret in code.

Every pattern is bounded (no nested or unbounded repetition that can backtrack), so the pass is linear in
the text. Stdlib only (the hook process imports it under ``python -I -S``); idempotent (redacting redacted
text changes nothing).
"""

from __future__ import annotations

import binascii
import re


class _Lazy:
    """A pattern compiled on first use. The hook process imports this module for the PreToolUse guard on every
    Bash command, and compiling all of these costs more than the check itself; most commands need none of
    them (:data:`_PREFILTER` answers first)."""

    __slots__ = ("_args", "_rx")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._rx: re.Pattern[str] | None = None

    def __getattr__(self, name: str):
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(*self._args)
        return getattr(rx, name)


# <private>, < private >, <private reason=x>; an unclosed tag hides everything after it.
_PRIVATE = _Lazy(r"<\s*private\b[^<>\n]{0,200}>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_PRIVATE_CLOSE = _Lazy(r"<\s*/\s*private\s*>", re.IGNORECASE)

PEM = _Lazy(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.DOTALL)

# (label, pattern). A pattern with a group named ``s`` redacts only that group (the key or the URL around it
# stays readable); otherwise the whole match goes. Order matters: specific formats first (sk-ant- before sk-).
SHAPES: tuple[tuple[str, _Lazy], ...] = (
    ("anthropic-key", _Lazy(r"\bsk-ant-[A-Za-z0-9_\-]{20,400}")),
    ("openai-key", _Lazy(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,400}")),
    ("stripe-key", _Lazy(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,200}")),
    ("stripe-webhook-secret", _Lazy(r"\bwhsec_[A-Za-z0-9]{24,100}")),
    ("github-token", _Lazy(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,100}|github_pat_[A-Za-z0-9_]{22,255})")),
    ("gitlab-token", _Lazy(r"\bglpat-[A-Za-z0-9_\-]{20,100}")),
    ("aws-access-key", _Lazy(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("slack-token", _Lazy(r"\b(?:xox[abposre]-[A-Za-z0-9\-]{10,250}|xapp-\d-[A-Za-z0-9\-]{20,250})")),
    ("slack-webhook", _Lazy(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,200}")),
    ("google-api-key", _Lazy(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("google-oauth", _Lazy(r"\bya29\.[0-9A-Za-z_\-]{20,2000}")),
    ("google-client-secret", _Lazy(r"\bGOCSPX-[A-Za-z0-9_\-]{20,100}")),
    ("npm-token", _Lazy(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("huggingface-token", _Lazy(r"\bhf_[A-Za-z0-9]{30,100}\b")),
    ("sendgrid-key", _Lazy(r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}")),
    ("mailgun-key", _Lazy(r"\bkey-[0-9a-f]{32}\b")),
    ("discord-token", _Lazy(r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}")),
    ("telegram-token", _Lazy(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{32,40}")),
    ("shopify-token", _Lazy(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b")),
    ("digitalocean-token", _Lazy(r"\bdo[opr]_v1_[a-f0-9]{64}\b")),
    ("vault-token", _Lazy(r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,200}")),
    ("doppler-token", _Lazy(r"\bdp\.(?:st|sa|ct|pt|scim|audit)\.[A-Za-z0-9_.\-]{20,120}")),
    ("linear-key", _Lazy(r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,64}\b")),
    ("notion-token", _Lazy(r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,60})\b")),
    ("atlassian-token", _Lazy(r"\bATATT[A-Za-z0-9_\-=]{50,400}")),
    ("firebase-key", _Lazy(r"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,200}")),
    ("mapbox-token", _Lazy(r"\bsk\.eyJ[A-Za-z0-9_\-]{20,400}\.[A-Za-z0-9_\-]{20,100}")),
    ("age-key", _Lazy(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b")),
    ("pypi-token", _Lazy(r"\bpypi-Ag[A-Za-z0-9_\-]{50,300}")),
    ("twilio-key", _Lazy(r"\bSK[0-9a-f]{32}\b")),
    ("jwt", _Lazy(r"\beyJ[A-Za-z0-9_\-]{8,2000}\.eyJ[A-Za-z0-9_\-]{8,4000}\.[A-Za-z0-9_\-]{8,1000}")),
    # Context: redacted, but no drift alert on their own (see CONTEXTUAL).
    ("bearer", _Lazy(r"\bBearer\s{1,3}(?P<s>[A-Za-z0-9._~+/\-]{16,2000}=*)", re.IGNORECASE)),
    ("basic-auth", _Lazy(r"\bauthorization[\"']?\s{0,3}[:=]\s{0,3}[\"']?Basic\s{1,3}(?P<s>[A-Za-z0-9+/]{8,400}={0,2})",
                              re.IGNORECASE)),
    ("url-password", _Lazy(r"://[^\s:/@\[\]]{1,100}:(?P<s>[^\s@/]{3,200})@")),
    ("url-token", _Lazy(r"://(?P<s>[A-Za-z0-9_\-]{20,200})@")),  # a Sentry DSN key, a token as the user
    ("url-secret-param", _Lazy(r"[?&;](?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|"
                                    r"access_token|api_key|apikey|token|secret|password|client_secret)"
                                    r"=(?P<s>[^&#\s\"'<>]{6,2000})", re.IGNORECASE)),
    ("curl-user", _Lazy(r"(?:\s-u|--user)\s{1,3}[\"']?[^\s:\"']{1,100}:(?P<s>[^\s\"'@]{3,400})")),
    ("card-cvv", _Lazy(r"\b(?:cvv2?|cvc2?|cid|csc|card\s+security\s+code)\b[\"']?\s{0,3}[:=]?\s{0,3}[\"']?"
                            r"(?P<s>\d{3,4})\b", re.IGNORECASE)),
    ("us-ssn", _Lazy(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")),
    ("aws-secret-key", _Lazy(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                                  r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")),
)

# Every known format (the shapes that raise the drift alert, and PEM) contains one of these; a text without any
# needs no further look. One small pattern, compiled at import.
_PREFILTER = re.compile(r"sk[-_.]|[rp]k_|whsec_|gh[pousr]_|github_pat_|glpat-|A(?:KIA|SIA|GPA|IDA|ROA|NPA)|xox|"
                        r"xapp-|hooks\.slack|AIza|ya29\.|GOCSPX-|npm_|hf_|SG\.|key-|:AA|:APA91b|shp|_v1_|"
                        r"hv[sbr]\.|dp\.|lin_|secret_|ntn_|ATATT|AGE-SECRET|pypi-|SK[0-9a-f]|eyJ|PRIVATE KEY|"
                        r"[MNO][A-Za-z0-9_\-]{23,27}\.")

# Redacted, but not a drift alert on their own: these are as often a placeholder in an example
# ("postgres://user:pass@localhost", "Bearer <token>") as a real credential, or personal data rather than a key.
CONTEXTUAL = frozenset({"bearer", "basic-auth", "url-password", "url-token", "url-secret-param", "curl-user",
                        "card-cvv", "us-ssn", "aws-secret-key"})

# key = value / key: value / "key": "value" where the key names a secret. The key is kept, the value goes.
_KEYWORDS = (r"password|passwd|passphrase|(?<![a-z])pass|(?<![a-z])pwd|secret|token|api[_\-]?key|apikey|"
             r"access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?|"
             r"(?:app|admin|master|encryption|signing|account|storage|service|session|license|webhook|shared)"
             r"[_\-]?(?:access[_\-]?)?key|(?<![a-z])auth|(?<![a-z])dsn")
_ASSIGN = _Lazy(
    rf"""(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z0-9_.\-]{{0,40}}?(?:{_KEYWORDS})(?:[_\-.]?(?:key|value|str|string|id))?)
        (?P<sep>["']?[ \t]{{0,3}}(?:=|:)[ \t]{{0,3}})
        (?P<val>"[^"\n]{{3,500}}"|'[^'\n]{{3,500}}'|[^\s"',;}}{{)(\[\]]{{3,500}})""",
    re.IGNORECASE | re.VERBOSE,
)
# Keys whose values are secrets whatever they look like (a password can be "hunter2"); the other keywords
# (…_KEY, auth, dsn) need a value that looks random, so "primary_key: id" or "auth: oauth2" stay.
_STRONG_KEY = _Lazy(r"pass|pwd|secret|token|credential|private|api[_\-]?key|apikey|access[_\-]?key|auth[_\-]?key|"
                    r"encryption[_\-]?key|signing[_\-]?key|master[_\-]?key", re.IGNORECASE)
_PLACEHOLDER = _Lazy(r"^[\"']?\[REDACTED")
# Values that are obviously not secrets: config references, types, empties, masks, code.
_NOT_SECRET = _Lazy(r"^[\"']?(?:none|null|nil|true|false|yes|no|str|string|int|bool|undefined|required|optional|"
                         r"changeme|example|xxx+|\$.*|%\(.*|\{\{.*|<.*|\*+.*|•+.*|.*(?:…|\.\.\.|redacted).*)[\"']?$",
                         re.IGNORECASE)

# A password in prose: "my password is X", "the pass for the printer is X", "密码：X", "mot de passe est X".
_PROSE = _Lazy(
    r"(?:\b(?:password|passphrase|passcode|pass|pwd|secret|pin|contrase[ñn]a|senha|passwort|kennwort|пароль)\b"
    r"(?:\s(?:for|of|to|on|für|de|para|для)\s[^.\n,;:]{1,40}?)?\s{1,3}(?:is|was|=|:|ist|es|é|est|это|—|-)"
    r"|\bmot\s+de\s+passe\s+(?:est|:)|密码(?:是|为|：|:)|パスワード(?:は|：|:))"
    r"[ \t\u3000]{0,3}[\"'`]?(?P<s>[^\s\"'`，。、；！？]{4,200})",
    re.IGNORECASE,
)

# Payment cards (13-19 digits, groups of digits split by single spaces or dashes) and IBANs, checked by sum.
_CARD = _Lazy(r"(?<![\d.\-])\d(?:[ \-]?\d){12,18}(?![\d\-])")
_IBAN = _Lazy(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
# Base64 that may hide a credential (k8s Secret data, docker auth): decoded and checked.
_B64 = _Lazy(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/]{16,4096}={0,2}(?![A-Za-z0-9+/=_\-])")
_USER_PASS = _Lazy(r"^[^\s:]{1,64}:[^\s]{3,200}$")
# A quoted string that looks random: positional API secrets in code (Client('SK...', 'secret')).
_QUOTED = _Lazy(r"(?P<q>[\"'`])(?P<s>[A-Za-z0-9+/=_\-.]{20,200})(?P=q)")
_SRI = _Lazy(r"^(?:sha(?:1|256|384|512)|md5)[-:]", re.IGNORECASE)
_TAG = "[REDACTED"


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban_ok(raw: str) -> bool:
    s = raw.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    try:
        return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
    except ValueError:
        return False


def _random_looking(value: str, min_len: int = 16) -> bool:
    """Mixed letters and digits with frequent changes of character class: a key, not a word or a name."""
    if len(value) < min_len or _SRI.match(value):
        return False
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    digit = sum(c.isdigit() for c in value)
    if digit < 2 or (upper + lower) < 4:
        return False
    if upper < 2 and lower >= 2 and digit < 6:  # lower-case words with a number ("release2024v2") are not keys
        return False
    changes = sum(1 for a, b in zip(value, value[1:]) if _cls(a) != _cls(b))
    return changes >= 0.3 * len(value)


def _cls(c: str) -> int:
    return 0 if c.isdigit() else 1 if c.isupper() else 2 if c.islower() else 3


def _decoded_secret(token: str) -> bool:
    """A base64 token whose decoded text is a credential (a known shape or ``user:password``)."""
    import base64  # only redaction decodes; the PreToolUse guard imports this module and never needs it

    body = token.rstrip("=")
    if len(body) % 4 == 1:
        return False
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if not text or not text.isprintable():
        return False
    if _USER_PASS.match(text.strip()):
        return True
    return _known_shape(text) is not None


def _known_shape(text: str) -> str | None:
    if PEM.search(text):
        return "private-key"
    for label, pattern in SHAPES:
        if label not in CONTEXTUAL and pattern.search(text):
            return label
    return None


def find_secret(text: str) -> str | None:
    """The label of the first credential shape in ``text`` that raises the drift alert (known formats and
    private key blocks; not the CONTEXTUAL ones), else None."""
    if not text or not _PREFILTER.search(text):
        return None
    label = _known_shape(text)
    if label == "stripe-key" and not re.search(r"\b(?:sk|rk)_(?:live|test)_", text):
        return None  # a publishable key is public by design: redacted, but no alert
    return label


def strip_private(text: str) -> tuple[str, int]:
    """Drop ``<private>...</private>`` (any spacing or attributes; an unclosed tag hides everything after it)."""
    out, n = _PRIVATE.subn("", text)
    out = _PRIVATE_CLOSE.sub("", out)
    return out, n


def redact(text: str) -> tuple[str, list[str]]:
    """Replace secrets by ``[REDACTED:<label>]`` (assignments: ``[REDACTED]``); returns the text and the labels."""
    labels: list[str] = []

    def sub(label: str):
        def fn(m: re.Match[str]) -> str:
            if "s" in m.re.groupindex and m.group("s") is not None:
                if _TAG in m.group(0):  # already redacted by an earlier, more specific shape
                    return m.group(0)
                labels.append(label)
                start, end = m.span("s")
                base = m.start()
                return m.group(0)[: start - base] + f"[REDACTED:{label}]" + m.group(0)[end - base:]
            labels.append(label)
            return f"[REDACTED:{label}]"

        return fn

    text = PEM.sub(sub("private-key"), text)
    for label, pat in SHAPES:
        text = pat.sub(sub(label), text)

    def iban(m: re.Match[str]) -> str:
        if _iban_ok(m.group(0)):
            labels.append("iban")
            return "[REDACTED:iban]"
        return m.group(0)

    text = _IBAN.sub(iban, text)

    def card(m: re.Match[str]) -> str:
        raw = m.group(0)
        digits = re.sub(r"\D", "", raw)
        groups = [len(g) for g in re.split(r"[ \-]", raw)]
        # Printed cards group by 4 (Amex 4-6-5): two unrelated numbers side by side are not a card.
        grouped = len(groups) == 1 or all(g == 4 for g in groups[:-1]) or groups[:2] == [4, 6]
        if grouped and 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn(digits):
            labels.append("card-number")
            return "[REDACTED:card-number]"
        return raw

    text = _CARD.sub(card, text)

    def assign(m: re.Match[str]) -> str:
        val = m.group("val")
        if _PLACEHOLDER.search(val) or _NOT_SECRET.match(val):
            return m.group(0)
        bare = val.strip("\"'")
        if val[0] not in "\"'" and m.end() < len(m.string) and m.string[m.end()] in "([":
            return m.group(0)  # code: os.environ["KEY"], getenv("KEY")
        if not _STRONG_KEY.search(m.group("key")) and not _random_looking(bare, 12):
            return m.group(0)
        labels.append("assignment")
        quote = val[0] if val[0] in "\"'" else ""
        return f"{m.group('key')}{m.group('sep')}{quote}[REDACTED]{quote}"

    text = _ASSIGN.sub(assign, text)

    def prose(m: re.Match[str]) -> str:
        value = m.group("s").rstrip(".,;:!?)")
        if value.startswith(_TAG) or not (any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)):
            return m.group(0)
        labels.append("password")
        start = m.start("s") - m.start()
        return m.group(0)[:start] + "[REDACTED:password]" + m.group(0)[start + len(value):]

    text = _PROSE.sub(prose, text)

    def b64(m: re.Match[str]) -> str:
        if _decoded_secret(m.group(0)):
            labels.append("encoded-secret")
            return "[REDACTED:encoded-secret]"
        return m.group(0)

    text = _B64.sub(b64, text)

    def quoted(m: re.Match[str]) -> str:
        if _random_looking(m.group("s"), 20):
            labels.append("high-entropy")
            return f"{m.group('q')}[REDACTED:high-entropy]{m.group('q')}"
        return m.group(0)

    text = _QUOTED.sub(quoted, text)
    return text, labels


# Characters no credential contains: a cut there never leaves part of one behind.
_BREAK = _Lazy(r"[\s,;\"'<>(){}\[\]|`]")


def precut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at whitespace or punctuation, so no credential is split in
    two (half a key is not recognised by its shape; cut between tokens, it is either whole or gone)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    last = -1
    m = _BREAK.search(cut, limit // 2)
    while m is not None:  # the last break after the middle: one pass over the tail
        last = m.start()
        m = _BREAK.search(cut, m.end())
    return cut[:last] if last >= 0 else ""  # one giant token: dropped rather than kept in part


def scrub(text: str, limit: int | None = None) -> tuple[str, list[str], int]:
    """The one pass before anything is written: cut to ``limit`` (see :func:`precut`), ``<private>`` spans
    out, then secrets redacted. Returns (text, redaction labels, private spans removed).

    Pass a limit somewhat above what will be kept: redaction shortens text (a PEM block becomes a short tag),
    and the margin keeps the final cut inside text that was redacted."""
    if limit is not None:
        text = precut(text, limit)
    text, n_private = strip_private(text)
    text, labels = redact(text)
    return text, labels, n_private


def scrub_text(text: str, keep: int | None = None) -> str:
    """:func:`scrub`'s text only, at most ``keep`` characters (drift alerts, logs, exports)."""
    if not text:
        return text
    if keep is None:
        return scrub(text)[0]
    return scrub(text, keep + 16_384)[0][:keep]
