"""Merge a 0.1.0 store kept per plugin install into the user's one store, once.

0.1.0 kept the memories of hooks run inside Claude Code in ``$CLAUDE_PLUGIN_DATA``
(``~/.claude/plugins/data/compass-hooks-<marketplace>/compass.db``), apart from the
store the CLI and the MCP server used. The worker merges every such store it can
see through the normal import path (privacy pass, embeddings, dedupe keys, audit
entries with actor ``import``), then renames the old file to
``compass.db.merged-<time>.bak`` so nothing is lost and nothing is merged twice
(the dedupe keys make a repeated merge a no-op as well).
"""

from __future__ import annotations

import glob
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..logs import get_logger

if TYPE_CHECKING:  # pragma: no cover
    from .corelike import CoreLike

log = get_logger("legacy")
BATCH = 200


def legacy_stores(db: Path) -> list[Path]:
    """0.1.0 per-install stores on this machine (not ``db`` itself)."""
    found: list[str] = []
    plugin_data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if plugin_data:
        found.append(os.path.join(os.path.expanduser(plugin_data), "compass.db"))
    found += glob.glob(os.path.join(os.path.expanduser("~"), ".claude", "plugins", "data", "compass-hooks*",
                                    "compass.db"))
    ours = os.path.realpath(str(db))
    out: list[Path] = []
    for path in found:
        real = os.path.realpath(path)
        if real != ours and os.path.isfile(real) and Path(real) not in out:
            out.append(Path(real))
    return out


def _items(old: Path) -> list[dict[str, Any]]:
    from .store import Store

    store = Store(old)
    try:
        return [{"text": r["text"], "ref": r["ref"], "project": r["project"], "session": r["session"],
                 "role": r["role"], "kind": r["kind"], "ts": r["created"], "pinned": r["pinned"],
                 "flags": r["flags"], "source": r["source"],
                 "key": r["dedupe_key"] or f"legacy:{r['id']}:{r['created']}",
                 "context": r["context"] or None, "meta": r["meta"] or None}
                for r in store.iter_rows()]
    finally:
        store.close()


def merge_one(core: CoreLike, old: Path) -> dict[str, Any]:
    """Import every memory of ``old`` into ``core``'s store, then keep ``old`` as a backup."""
    from .ops import import_batch

    items = _items(old)
    added = dupes = 0
    errors: list[dict[str, Any]] = []
    by_project: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_project.setdefault(str(item["project"]), []).append(item)
    for project, group in by_project.items():
        for i in range(0, len(group), BATCH):
            out = import_batch(core, group[i:i + BATCH], project=project, first_line=i + 1)
            added += out["added"]
            dupes += out["duplicates"]
            errors += out["errors"]
    backup = old.with_name(f"{old.name}.merged-{time.strftime('%Y%m%d-%H%M%S')}.bak")
    os.replace(old, backup)
    for suffix in ("-wal", "-shm"):
        try:
            os.replace(f"{old}{suffix}", f"{backup}{suffix}")
        except OSError:
            pass
    log.info("merged %s into %s: %d added, %d already there, %d unreadable; old file kept as %s",
             old, core.paths.db, added, dupes, len(errors), backup)
    return {"from": str(old), "added": added, "duplicates": dupes, "errors": len(errors), "backup": str(backup)}


def merge_all(core: CoreLike) -> list[dict[str, Any]]:
    done = []
    for old in legacy_stores(Path(core.paths.db)):
        try:
            done.append(merge_one(core, old))
        except Exception:  # an unreadable old store stays where it is, to be merged by hand (compass-hook import)
            log.exception("could not merge the old store %s (it is left in place)", old)
    return done
