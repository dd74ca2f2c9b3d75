"""Reading a labelled dev set: the file's text, then its JSON lines, with errors that name the file and line.
What each trainer requires of a row (its fields and labels) stays with that trainer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from ..errors import InvalidInput


def read_text(path: Path | str) -> str:
    """The file's text; an :class:`InvalidInput` naming it when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None


def jsonl_rows(raw: str, path: Path | str) -> Iterator[tuple[int, Any]]:
    """(1-based line number, parsed value) for every non-blank line of ``raw``, the text of ``path``; a line
    that is not JSON is an :class:`InvalidInput` naming ``path:line``."""
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError:
            raise InvalidInput(f"{path}:{n}: not JSON") from None
