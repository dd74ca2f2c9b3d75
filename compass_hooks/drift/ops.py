"""Drift ops for the worker / in-process service: scoring, the alert history, and the audited changes to
your anchors (so they run where the anchors are cached, and are audited in one place: :mod:`.changes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..ops import op
from .api import score_texts

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike

MAX_BATCH = 1000


@op("score")
def score(core: CoreLike, texts: list[str] | None = None, project: str | None = None) -> dict:
    """Batch scoring: ``{"texts": [...], "project"?}`` -> ``{"results": [...]}`` in input order."""
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InvalidInput("score needs texts: a list of strings")
    if len(texts) > MAX_BATCH:
        raise InvalidInput(f"score takes at most {MAX_BATCH} texts per call")
    return {"results": score_texts(core, texts, project)}


@op("anchor_add")
def anchor_add(core: CoreLike, text: str, polarity: str, category: str, weight: float = 1.0, lang: str = "en",
               id: str | None = None, source: str = "cli") -> dict:
    """Add an anchor to the user pack (audited) -> ``{"anchor": {...}, "pack": path}``."""
    from .changes import add_anchor
    from .pack import user_pack_path

    anchor = add_anchor(core, text, polarity, category, float(weight), lang, id, actor=source)
    return {"anchor": anchor.as_dict(), "pack": str(user_pack_path(core.paths))}


@op("anchor_remove")
def anchor_remove(core: CoreLike, id: str, source: str = "cli") -> dict:
    """Remove an anchor from the user pack (audited) -> ``{"removed": {...}, "pack": path}``."""
    from .changes import remove_anchor
    from .pack import user_pack_path

    return {"removed": remove_anchor(core, id, actor=source), "pack": str(user_pack_path(core.paths))}


@op("drift_history")
def drift_history(core: CoreLike, limit: int = 50, project: str | None = None) -> dict:
    """Stored alerts, newest first -> ``{"alerts": [...]}`` (``limit`` 0 = all)."""
    from .history import list_alerts

    return {"alerts": list_alerts(core.store, limit=int(limit), project=project)}


@op("drift_feedback")
def drift_feedback(core: CoreLike, alert_id: str, label: str) -> dict:
    """Label an alert fp or tp -> ``{"alert": {...}}``."""
    from .history import set_feedback

    return {"alert": set_feedback(core.store, alert_id, label)}
