"""Query-side text handling for recall, without an LLM: tokenising, stop and
question words, FTS5 query building, and pseudo-relevance-feedback terms.

Stemming itself is done by SQLite's FTS5 ``porter`` tokenizer on both the
indexed text and the query, so the Python side never has to agree with it on
stems; here we only decide *which* words go into the query and with what weight.
Stdlib only.
"""

from __future__ import annotations

import calendar
import re
from typing import Iterable, Sequence

# Words (and CJK runs) as FTS5's unicode61 tokenizer sees them, roughly.
# Apostrophes split words, as in FTS5 ("gina's" -> gina, s), so a possessive in the
# query matches the bare name in the text instead of becoming a two-word phrase.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# English function words plus the wh-/auxiliary words questions are made of.
# They carry no topic; left in, BM25 ranks turns by how often they say "what".
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
    him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't
    my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
    we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why
    why's will with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
    also just get got really yeah yes oh hey hi ok okay well like thing things something anything lot lots
    s t d ll m re ve don doesn didn isn wasn aren weren won couldn wouldn shouldn haven hasn hadn can mustn shan
    """.split()
)

# Question scaffolding: words that say what *kind* of answer is wanted, not what it is about.
QUESTION_WORDS = frozenset(
    """
    what when where which who whom whose why how kind type sort likely would might ever recently
    """.split()
)

# Temporal questions ("when did ...", "how long ago ...") are answered by turns that
# mention time; these cue words are added to the query with a small weight for them.
TEMPORAL_CUES = ("yesterday", "today", "tomorrow", "last", "ago", "week", "weekend", "month", "year", "since")
_TEMPORAL_Q = re.compile(r"\b(when|what (?:date|day|time|year|month)|how long|how many (?:years|months|weeks|days))\b", re.I)


_SPEAKER = re.compile(r"\s*([^\W\d_][^\W_]{0,30}):", re.UNICODE)
_NAME = re.compile(r"\b([A-Z][^\W\d_]+)", re.UNICODE)


def speaker(text: str) -> str | None:
    """The lower-cased name a chat-log line opens with ("Melanie: I painted ..." -> "melanie"),
    a single capitalised word before a colon; None otherwise."""
    m = _SPEAKER.match(text)
    return m.group(1).lower() if m and m.group(1)[0].isupper() else None


def names(query: str) -> frozenset[str]:
    """Capitalised content words of a query, lower-cased: candidate speaker names."""
    return frozenset(w.lower() for w in _NAME.findall(query)
                     if w.lower() not in STOPWORDS and w.lower() not in QUESTION_WORDS)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return [w.lower() for w in _WORD.findall(text)]


def content_terms(text: str) -> list[str]:
    """Tokens minus stop and question words, in order, duplicates kept."""
    return [w for w in tokens(text) if w not in STOPWORDS and w not in QUESTION_WORDS and len(w) > 1 or _is_cjk(w)]


def _is_cjk(word: str) -> bool:
    return any("\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in word)


def is_temporal(query: str) -> bool:
    return bool(_TEMPORAL_Q.search(query))


def fts_quote(term: str) -> str:
    """One FTS5 string token (double quotes escaped), safe for any input."""
    return '"' + term.replace('"', '""') + '"'


def fts_or_query(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression: the distinct terms OR-ed, each quoted ("" = no query)."""
    seen: dict[str, None] = {}
    for t in terms:
        t = t.strip()
        if t:
            seen.setdefault(t, None)
    return " OR ".join(fts_quote(t) for t in seen)


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_M = "|".join(_MONTHS)
_DATE_Q = re.compile(rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+({_M})|({_M})\s+(\d{{1,2}})(?:st|nd|rd|th)?|({_M})),?\s+(\d{{4}})\b",
                     re.I)


def date_range(query: str) -> tuple[float, float] | None:
    """The UTC span an explicit date in the query names, as epoch seconds [start, end):
    "on 7 July, 2023" / "on May 23, 2023" -> that day, "in December 2023" -> that month.
    None when the query names no such date (a bare "July" or "2023" is too vague)."""
    m = _DATE_Q.search(query)
    if not m:
        return None
    day = m.group(1) or m.group(4)
    month = _MONTHS.index((m.group(2) or m.group(3) or m.group(5)).lower()) + 1
    year = int(m.group(6))
    if day:
        d = int(day)
        if not 1 <= d <= calendar.monthrange(year, month)[1]:
            return None
        start = calendar.timegm((year, month, d, 0, 0, 0))
        return float(start), float(start + 86400)
    start = calendar.timegm((year, month, 1, 0, 0, 0))
    return float(start), float(start + 86400 * calendar.monthrange(year, month)[1])


PROXIMITY_CHARS = 1000  # of a memory's text scanned for the query's word pairs (bounds the cost of long ones)


def _occurrences(text: str, word: str) -> list[tuple[int, int, str]]:
    """(start, end, word) of each whole-word occurrence of ``word`` in ``text`` (str.find: C speed)."""
    out = []
    i = text.find(word)
    while i >= 0:
        j = i + len(word)
        if (i == 0 or not text[i - 1].isalnum()) and (j == len(text) or not text[j].isalnum()):
            out.append((i, j, word))
        i = text.find(word, j)
    return out


def pair_proximity(query_terms: Sequence[str], text: str, window: int = 4) -> float:
    """Term proximity: the share of the query's adjacent content-word pairs ("pottery
    class", "chocolate tart") whose two words occur with fewer than ``window`` words
    between them in ``text`` (counted as spaces; either order, so "class on pottery"
    counts). Exact words, no stemming; only the first ``PROXIMITY_CHARS`` are read;
    0.0 when the query has fewer than two distinct content words."""
    pairs = {(a, b) for a, b in zip(query_terms, query_terms[1:]) if a != b}
    if not pairs:
        return 0.0
    head = text[:PROXIMITY_CHARS].lower()
    if not any(a in head and b in head for a, b in pairs):  # cheap substring test first: most rows fail it
        return 0.0
    hits = sorted(h for w in {t for p in pairs for t in p} for h in _occurrences(head, w))
    near = set()
    for j, (_, end, a) in enumerate(hits):
        for start, _, b in hits[j + 1 :]:
            if head.count(" ", end, start) > window:  # ~ words in between + 1
                break
            near.add((a, b))
            near.add((b, a))
    return sum(1 for p in pairs if p in near) / len(pairs)
