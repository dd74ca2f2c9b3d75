"""Hashes of anchor packs.

Shipped packs (``<plugin root>/anchors/*.json``) are part of the repository, so
their expected hashes are too: ``anchors/SHA256SUMS`` (``sha256sum`` format,
tracked in git) is written by ``compass-hook audit seal-packs`` (the pack tooling
calls :func:`write_pack_sums` after it regenerates a pack) and checked by
``audit verify``; ``sha256sum -c SHA256SUMS`` in that folder checks it too.

Packs in the data dir (``<data>/anchors/user.json``, ``weights.json``) change at
run time, so they are logged like memories: the code that writes one calls
:func:`record_pack` afterwards with the file's new bytes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import AuditError
from .log import record_change, sha256_hex

SUMS_NAME = "SHA256SUMS"
# Files in <data>/anchors that are audited, by object_id.
DATA_PACKS = {"user": "user.json", "weights": "weights.json"}
_SUM_LINE = re.compile(r"^([0-9a-f]{64}) [ *]([A-Za-z0-9_.-]+\.json)$")


def shipped_dir(paths: Any) -> Path:
    return Path(paths.plugin_root) / "anchors"


def data_pack_path(paths: Any, object_id: str) -> Path:
    return Path(paths.anchors_user) / DATA_PACKS[object_id]


def compute_pack_sums(folder: Path) -> dict[str, str]:
    """{file name: sha256} for every ``*.json`` directly in ``folder``."""
    if not folder.is_dir():
        return {}
    return {p.name: sha256_hex(p.read_bytes()) for p in sorted(folder.glob("*.json")) if p.is_file()}


def read_pack_sums(folder: Path) -> dict[str, str] | None:
    """The recorded sums, or None when there is no SHA256SUMS file. Raises AuditError on a bad line."""
    path = folder / SUMS_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read {path}: {exc}") from None
    sums: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SUM_LINE.match(line.strip())
        if not m:
            raise AuditError(f"{path} line {n} is not '<sha256>  <name>.json'")
        sums[m.group(2)] = m.group(1)
    return sums


def write_pack_sums(folder: Path) -> dict[str, str]:
    """(Re)write ``SHA256SUMS`` for the packs now in ``folder`` (atomic replace)."""
    sums = compute_pack_sums(folder)
    tmp = folder / f".{SUMS_NAME}.tmp"
    tmp.write_text("".join(f"{h}  {name}\n" for name, h in sums.items()), encoding="utf-8")
    os.replace(tmp, folder / SUMS_NAME)
    return sums


def record_pack(paths: Any, object_id: str, *, actor: str, action: str = "pack-change") -> dict[str, Any]:
    """Log the current bytes of a data-dir pack (``user`` or ``weights``); a missing file logs a removal."""
    if object_id not in DATA_PACKS:
        raise AuditError(f"unknown audited pack {object_id!r}", f"one of: {', '.join(DATA_PACKS)}")
    path = data_pack_path(paths, object_id)
    try:
        content: bytes | None = path.read_bytes()
    except FileNotFoundError:
        content = None
        action = "pack-remove"
    return record_change(paths, actor=actor, action=action, object_type="pack", object_id=object_id, content=content)
