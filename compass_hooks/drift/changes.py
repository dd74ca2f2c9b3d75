"""Changes to the anchors in the data dir (your user pack, the tuned weights): each one is written and then
audited here, and nowhere else. The ops in :mod:`.ops` and ``anchors tune`` call these; the CLI only prints.

Audit entries: one ``anchor-add`` / ``anchor-remove`` / ``anchor-reweight`` per anchor (its JSON; none for a
removal), then the pack file's new bytes (:func:`compass_hooks.audit.record_pack`), which is what
``audit verify`` checks the file against. The audit is a hard dependency: it is imported before anything is
written, so a change that cannot be audited is not made.

A worker's cached anchor matrices follow without a restart: the scorer re-embeds when the signature of the
pack files it uses changes (:meth:`.scorer.DriftState.snapshot`), whichever process wrote them.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from . import pack as packmod

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike

ACTORS = ("cli", "mcp")


def _audit() -> tuple[Any, Any]:
    from ..audit import record_change, record_pack  # lazy: listing and scoring never need it

    return record_change, record_pack


def _lock(core: CoreLike) -> threading.Lock:
    """Read-modify-write of user.json by concurrent ops of one worker, one at a time."""
    return core.feature("drift.changes", lambda _core: threading.Lock())


def _actor(actor: str) -> str:
    from ..errors import InvalidInput

    if actor not in ACTORS:
        raise InvalidInput(f"unknown source {actor!r}", f"one of: {', '.join(ACTORS)}")
    return actor


def add_anchor(core: CoreLike, text: str, polarity: str, category: str, weight: float = 1.0, lang: str = "en",
               anchor_id: str | None = None, actor: str = "cli") -> packmod.Anchor:
    """Add an anchor to the user pack; its id must not be in use by any selected pack."""
    record_change, record_pack = _audit()
    actor = _actor(actor)
    paths = core.paths
    with _lock(core):
        existing = [a.id for a in packmod.load_anchors(packmod.selected_pack_paths(paths, core.config))]
        anchor = packmod.add_user_anchor(paths, text, polarity, category, weight, lang, anchor_id, existing)
        content = json.dumps({k: v for k, v in anchor.as_dict().items() if k != "pack"}, ensure_ascii=False,
                             sort_keys=True)
        record_change(paths, actor=actor, action="anchor-add", object_type="anchor", object_id=anchor.id,
                      content=content)
        record_pack(paths, "user", actor=actor)
    return anchor


def remove_anchor(core: CoreLike, anchor_id: str, actor: str = "cli") -> dict[str, Any]:
    """Remove an anchor from the user pack (shipped anchors cannot be removed). Returns what was removed."""
    record_change, record_pack = _audit()
    actor = _actor(actor)
    paths = core.paths
    with _lock(core):
        removed = packmod.remove_user_anchor(paths, anchor_id)
        record_change(paths, actor=actor, action="anchor-remove", object_type="anchor", object_id=anchor_id,
                      content=None)
        record_pack(paths, "user", actor=actor)
    return removed


def apply_weights(core: CoreLike, changed: dict[str, float], previous: dict[str, float], evidence: dict[str, Any],
                  actor: str = "cli") -> str:
    """Save tuned weights over the saved ones; ``evidence`` (the dev AUCs) goes into each anchor's entry.
    Returns the weights file."""
    record_change, record_pack = _audit()
    actor = _actor(actor)
    paths = core.paths
    with _lock(core):
        saved = dict(packmod.load_weights(paths))
        saved.update(changed)
        path = packmod.save_weights(paths, saved)
        for anchor_id, w in sorted(changed.items()):
            record_change(paths, actor=actor, action="anchor-reweight", object_type="anchor", object_id=anchor_id,
                          content=json.dumps({"id": anchor_id, "weight": w, "previous": previous[anchor_id],
                                              **evidence}))
        record_pack(paths, "weights", actor=actor)
    return str(path)


def audit_available() -> None:
    """Raise now if changes could not be audited (before a long computation that would end in one)."""
    _audit()
