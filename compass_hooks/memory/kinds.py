"""The kinds of memory: one list for the store's CHECK constraint, the CLI's choices, the MCP tools' schemas
and the skill. Its own module so the CLI can offer the choices without importing the store. Stdlib only.

- ``constraint``: a lasting rule the user set ("never push to main");
- ``decision``: something decided ("we use pnpm");
- ``correction``: the user corrected the agent;
- ``lesson``: something learnt the hard way;
- ``note``: anything else worth keeping;
- ``prompt``: what the user typed (the hooks capture every prompt as one).
"""

from __future__ import annotations

KINDS = ("constraint", "decision", "correction", "lesson", "note", "prompt")
