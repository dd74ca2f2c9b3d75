"""Time bounds for ``recall`` and ``list``: ``--since`` / ``--until`` as a number of unix seconds, an ISO date,
or a phrase a person says ("yesterday", "last week", "3 days ago", "上周", "昨天").

Phrases go through dateparser (offline: its language data ships in the package), limited to English and
Chinese, the languages the rest of the product reads: with every language enabled its first parse takes ~2 s,
with these two ~0.1 s. It is imported on first use, in the worker or the CLI, never by the hook process.

A bound that names a day ("yesterday", "last week", "2024-05-01") starts at that day's midnight (local time)
for ``since`` and ends at the next midnight for ``until``, so ``--since yesterday`` includes all of yesterday
and ``--until yesterday`` all of it too; one that names a time ("2 hours ago", "2024-05-01 14:00") is exact.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from typing import Any

from ..errors import InvalidInput

LANGUAGES = ["en", "zh"]
_parser: Any = None
_lock = threading.Lock()


def _get_parser() -> Any:
    global _parser
    with _lock:
        if _parser is None:
            try:
                from dateparser.date import DateDataParser
            except ImportError:  # an install that predates the dependency
                raise InvalidInput("cannot read dates in words here: the dateparser package is missing",
                                   "re-run ./install.sh, or give a date as YYYY-MM-DD") from None
            _parser = DateDataParser(languages=LANGUAGES, settings={
                "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False, "RETURN_TIME_AS_PERIOD": True})
        return _parser


def parse_bound(value: Any, end: bool = False, name: str = "since") -> float | None:
    """Unix seconds for a ``since`` (``end=False``) or ``until`` (``end=True``) bound; None for None/empty.
    Raises :class:`InvalidInput` naming the argument when the value is not a time."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"'{name}' must be a time, got {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InvalidInput(f"'{name}' must be a finite number of unix seconds, got {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise InvalidInput(f"'{name}' must be a time, got {type(value).__name__}")
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:  # ISO dates and times without the phrase machinery
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        day_only = len(text) <= 10
    except ValueError:
        data = _get_parser().get_date_data(text)
        if data is None or data.date_obj is None:
            raise InvalidInput(f"'{name}': cannot read {text!r} as a time",
                               "e.g. 2024-05-01, \"yesterday\", \"last week\", \"3 days ago\", \"上周\"") from None
        when = data.date_obj
        day_only = data.period != "time"
    if when.tzinfo is not None:
        when = when.astimezone().replace(tzinfo=None)
    if day_only:
        when = when.replace(hour=0, minute=0, second=0, microsecond=0)
        if end:
            when += dt.timedelta(days=1)
    return when.timestamp()


def window(since: Any = None, until: Any = None) -> tuple[float | None, float | None]:
    """(since, until) in unix seconds; an empty window (since >= until) is an error, not an empty answer."""
    lo = parse_bound(since, end=False, name="since")
    hi = parse_bound(until, end=True, name="until")
    if lo is not None and hi is not None and lo >= hi:
        raise InvalidInput("'since' is not before 'until'", "swap them, or widen the window")
    return lo, hi
