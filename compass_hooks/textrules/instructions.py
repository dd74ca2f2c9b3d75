"""Stored text that reads like instructions *to the model* rather than data about the work.

Memory poisoning would otherwise become prompt injection: a memory is quoted back into the agent's context in
every later session. A user's own constraint ("never push to main") is an instruction too, but to the agent
about the work; it is not flagged. Each pattern is named so a flag says why. The write path flags such text
(``memory.privacy.clean``) and the renderer withholds it (``memory.inject``), with this one rule set.
Stdlib only.
"""

from __future__ import annotations

import re

# Phrases that only make sense as instructions *to the model* (or as forged
# conversation structure). A user's own constraint ("never push to main") is an
# instruction too, but to the agent about the work; it is not flagged. Each
# pattern is named so a flag says why.
_INSTRUCTION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("override", r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|any|"
                 r"your|the|system|safety)\b.{0,30}\b(instructions?|prompts?|rules|guidelines|guardrails|"
                 r"directives|messages|context)\b"),
    ("new-instructions", r"\b(new|updated|real|actual|hidden|secret)\s+(system\s+)?(instructions|prompt|orders|directives)\b"),
    ("role-play", r"\byou\s+are\s+(now|no\s+longer)\b|\bfrom\s+now\s+on,?\s+you\b|\bact\s+as\s+(an?\s+)?"
                  r"(unrestricted|jailbroken|different)\b|\bdeveloper\s+mode\b|\bjailbreak|\bDAN\b"),
    ("system-prompt", r"\b(reveal|print|show|repeat|output|leak)\b.{0,30}\b(system\s+prompt|your\s+instructions)\b"),
    ("forged-turn", r"(^|\n)\s*(system|assistant)\s*:\s|<\|?(im_start|im_end|system|endoftext)\|?>|"
                    r"</?(system|assistant|instructions?|human)>|\[/?(INST|SYS)\]|<<SYS>>"),
    ("addresses-model", r"\b(dear\s+)?(AI|assistant|claude|LLM|language\s+model|agent)\s*[,:]\s*(you\s+)?(must|should|"
                        r"will|need\s+to|ignore|always|never|do\s+not)\b"),
    ("conceal", r"\b(do\s+not|don't|never)\s+(tell|inform|mention\s+(this\s+)?to|show|alert|warn)\s+(the\s+)?user\b|"
                r"\bwithout\s+(telling|asking|informing)\s+the\s+user\b"),
    ("exfiltrate", r"\b(curl|wget|fetch|post|send|upload|exfiltrate)\b.{0,60}\b(secrets?|credentials?|tokens?|"
                   r"api[_\s-]?keys?|passwords?|\.env|ssh|id_rsa)\b.{0,40}\b(to|https?://)"),
    ("pipe-to-shell", r"\b(curl|wget)\b[^\n|]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b"),
    # Phrasings the memory filter knew besides these (Chinese, "do anything now", forged section headers).
    ("override-zh", r"忽略(之前|以上|前面|所有)的?(指令|指示|提示|规则)"),
    ("role-play-zh", r"你现在是"),
    ("system-prompt-zh", r"系统提示"),
    ("mention-system-prompt", r"\bsystem\s+prompt\b"),
    ("new-instructions-colon", r"\bnew\s+instructions?\s*:"),
    ("do-anything-now", r"\bdo\s+anything\s+now\b|\b(developer|god|jailbreak|dan)\s+mode\b"),
    ("override-short", r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+)*(previous|prior|above|"
                       r"earlier|preceding|system|original)\s+(instructions?|prompts?|rules|messages?|directions?)"),
    ("forged-section", r"(?m)^\s*#{2,}\s*(system|instructions?)\b|</?\s*(system|assistant|im_start|im_end)\s*>"),
)
_COMPILED = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in _INSTRUCTION_PATTERNS)
# Zero-width and bidi controls hide text from a human reviewer but not from the model.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def instruction_flags(text: str) -> list[str]:
    """The names of the instruction-like patterns ``text`` matches (empty: looks like data)."""
    if not text:
        return []
    flat = _INVISIBLE.sub("", text)
    flags = [name for name, rx in _COMPILED if rx.search(flat)]
    if flat != text:
        flags.append("invisible-characters")
    return flags


def looks_like_instruction(text: str) -> bool:
    """True when stored text reads like instructions to the model rather than data about the work."""
    return bool(instruction_flags(text))


