"""What the audit log hashes for a memory: every field that changes what is injected, not only the text.

Hashing the text alone let ``UPDATE memories SET kind = 'constraint', pinned = 1, project = '__global__'``
pass ``audit verify`` while it promoted a memory into every project's session brief. The audited content is
a canonical serialisation of the fields the renderers read: project (where it is injected), role and kind
(how it is introduced: "the user set a rule"), pinned (whether it is in every brief), flags (whether it is
withheld) and the text. Derived or bookkeeping fields (context, embeddings, created, ref, meta) are not.

The serialisation is versioned (its first line) so the format can grow. Entries written before it hashed the
text alone; :func:`forms` offers that form second, so ``audit verify`` still accepts those entries (and says
how many memories are covered by the text-only hash) while a v2 entry can only be matched by the v2 form: an
edit of any audited field is reported whatever entry the memory was last logged with, except that a memory
last logged before v2 is covered for its text only until its next audited change.
"""

from __future__ import annotations

import json
from typing import Any

FORMAT = "compass-memory/v2"


def audit_content(row: dict[str, Any]) -> str:
    """The canonical text the audit log hashes for a memory row (a store row or a validated insert)."""
    flags = row.get("flags") or []
    if isinstance(flags, str):
        flags = [f for f in flags.split(",") if f]
    body = {
        "project": row.get("project"),
        "role": row.get("role"),
        "kind": row.get("kind"),
        "pinned": bool(row.get("pinned")),
        "flags": sorted(set(flags)),
        "text": row.get("text"),
    }
    return FORMAT + "\n" + json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def forms(row: dict[str, Any]) -> tuple[str, str]:
    """The forms ``audit verify`` accepts for a row, current first: (v2 content, the text alone)."""
    return audit_content(row), str(row.get("text"))
