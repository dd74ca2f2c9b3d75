"""The ``instructions`` op: the standing instructions of a project (registered by ``memory.ops``, which imports
this module, since the op registry loads one ``ops`` module per top-level feature package)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...ops import op
from ..store import GLOBAL
from . import active

if TYPE_CHECKING:  # pragma: no cover
    from ..corelike import CoreLike


@op("instructions")
def instructions_op(core: CoreLike, project: str | None = None, cwd: str | None = None, session: str | None = None,
                    include_retired: bool = False, limit: int = 200) -> dict:
    """Standing instructions of a project (with the global ones), newest first. ``session``: only what a prompt
    of that session is under (the rules in force). ``include_retired``: revoked and replaced ones too."""
    from ..ops import _project

    proj = _project(core, project, cwd)
    now = time.time()
    if session:
        rows = active.in_force(active.visible(core.store, proj, session))
    else:
        rows = active.history(core.store, None if proj == GLOBAL else proj, include_retired, int(limit))
    out = [{**r, "age_s": round(max(0.0, now - float(r["created"])), 1)} for r in rows]
    return {"project": proj, "instructions": out}
