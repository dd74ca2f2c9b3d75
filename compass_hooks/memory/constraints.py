"""LLM-free detection of what a user prompt *establishes*: a constraint (a rule or
preference for the rest of the work), a decision, or a correction of the agent.

Rules work per sentence and lean towards precision: a constraint has to read as
a rule ("never ...", "always use ...", "from now on ...", "I prefer ...",
"不要...", "以后..."), not merely contain the word ("why does it always fail?").
Questions are never constraints. When several kinds match, correction wins
(it is the strongest signal that the agent went off track), then constraint,
then decision. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Sentence boundaries: ASCII and CJK punctuation, newlines, list bullets.
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？；])|\n+\s*(?:[-*•]\s+|\d+[.)]\s+)?")
_LEAD = r"(?:(?:ok(?:ay)?|so|and|also|but|please|pls|remember|note|important|reminder|fyi|hey|btw)[,:!]?\s+)*"

_CONSTRAINT_EN = re.compile(
    rf"""^\s*{_LEAD}(?:
        (?:never|always|don'?t|do\s+not|dont|must(?:\s+not|n'?t)?|avoid|stop\s+\w+ing|no\s+more|only\s+use|
           make\s+sure\s+(?:to|you|that)|be\s+sure\s+to|refrain\s+from|under\s+no\s+circumstances)\b
      )
    | \b(?:from\s+now\s+on|going\s+forward|for\s+the\s+rest\s+of\s+(?:this|the)\s+\w+|in\s+this\s+(?:project|repo|codebase),\s+(?:we|you)\b)
    | \b(?:i|we)\s+(?:always\s+|strongly\s+|really\s+)?(?:prefer|want\s+you\s+to\s+(?:always|never)|don'?t\s+want\s+you\s+to|
          never\s+want|require|insist)\b
    | \byou\s+(?:must|should|need\s+to)\s+(?:always|never|not)\b
    | \b(?:please\s+)?(?:stop|quit)\s+(?:using|doing|adding|writing|creating|changing|touching|running)\b
    | \bdon'?t\s+ever\b
    | \bis\s+(?:forbidden|not\s+allowed|off[\s-]limits)\b
    | \buse\s+\S+(?:\s+\S+)?\s+instead\s+of\b
    """,
    re.IGNORECASE | re.VERBOSE,
)
# 别 only as "don't" (not in 别人/特别/区别/分别/类别/识别/级别/告别/个别/性别/差别/辨别/派别/鉴别).
_CONSTRAINT_ZH = re.compile(
    r"不要|必须|务必|以后(?:都|一律|请|不要|别|要|只|必须)?|永远|禁止|一律|始终|请勿|不许|不准|不得|记住|切勿|千万别|"
    r"(?<![特区分类识级告个性差辨派鉴])别(?![人的处称扭])|我(?:更)?(?:喜欢|偏好|倾向)"
)
_DECISION = re.compile(
    r"""\b(?:we(?:'ve|\s+have)?\s+decided|i(?:'ve|\s+have)?\s+decided|let'?s\s+(?:go\s+with|use|stick\s+with|keep)|
          we(?:'ll|\s+will)\s+(?:go\s+with|use|stick\s+with)|decision\s*:|the\s+plan\s+is|we\s+(?:agreed|chose|settled\s+on)|
          (?:it'?s|that'?s)\s+decided|final\s+answer\s*:|go\s+with\s+(?:option|approach|plan)\b)
      |我们决定|决定(?:用|采用|使用)|就用|(?:就)?这么定了|定下来|选择(?:了|用)|方案是""",
    re.IGNORECASE | re.VERBOSE,
)
_CORRECTION = re.compile(
    r"""(?:^\s*no[,.!]\s+(?:i|that|it|not|you|the|this|we|don'?t|stop|wrong)\b)
      |\bi\s+(?:said|told\s+you|asked\s+(?:you\s+)?(?:for|to))\b(?!\s+(?:hi|hello|thanks))
      |\b(?:that'?s|that\s+is|this\s+is|it'?s)\s+(?:wrong|not\s+(?:right|correct|what\s+i\s+(?:asked|said|meant|wanted)))\b
      |\bnot\s+what\s+i\s+(?:asked|said|meant|wanted)\b
      |\byou\s+(?:misunderstood|got\s+it\s+wrong|broke|ignored)\b
      |\b(?:wrong\s+(?:file|function|approach|branch|one)|undo\s+that|revert\s+that)\b
      |我说过|我刚才说|不对|错了|不是这样|我不是说|搞错|你理解错|不是我要的""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
_QUESTION_END = re.compile(r"[?？]\s*$|吗\s*[。]?$")
_QUESTION_START = re.compile(r"^\s*(?:why|how|what|when|where|which|who|is|are|does|do|can|could|should|would|will)\b.*",
                             re.IGNORECASE)


@dataclass(frozen=True)
class Detection:
    kind: str  # constraint | decision | correction
    sentences: tuple[str, ...]  # the sentences that matched, in order

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _is_question(s: str) -> bool:
    return bool(_QUESTION_END.search(s))


def _kind_of(s: str) -> str | None:
    if _CORRECTION.search(s):
        return "correction"
    if _is_question(s):
        return None
    if _CONSTRAINT_EN.search(s) or _CONSTRAINT_ZH.search(s):
        return "constraint"
    if _DECISION.search(s):
        return "decision"
    return None


_RANK = {"correction": 0, "constraint": 1, "decision": 2}


def detect(text: str) -> Detection | None:
    """The strongest kind any sentence of ``text`` establishes, with those sentences."""
    hits: dict[str, list[str]] = {}
    for s in sentences(text)[:200]:  # a pasted log is not a list of rules
        if len(s) > 600:
            continue
        kind = _kind_of(s)
        if kind:
            hits.setdefault(kind, []).append(s)
    if not hits:
        return None
    best = min(hits, key=_RANK.__getitem__)
    # A correction usually restates the rule ("no, I said never use X"): keep both.
    picked = hits[best] + (hits.get("constraint", []) if best == "correction" else [])
    ordered = [s for s in sentences(text) if s in picked]
    return Detection(best, tuple(dict.fromkeys(ordered)))


def classify(text: str) -> str | None:
    d = detect(text)
    return d.kind if d else None
