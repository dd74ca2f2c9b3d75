"""Tamper-evident audit log: hash-chained JSONL entries plus a Merkle root.

Writers call :func:`record_change` for every change to a memory, an anchor or a
pack (:func:`record_pack` for the data-dir packs); ``compass-hook audit verify``
recomputes the chain, the Merkle root and every stored object's hash against it.
"""

from typing import Any, Callable, Sequence

from .log import GENESIS, record_change, record_changes, sha256_hex
from .packs import record_pack, write_pack_sums

__all__ = ["GENESIS", "memory_recorder", "record_change", "record_changes", "record_pack", "sha256_hex",
           "write_pack_sums"]


def memory_recorder(paths: Any) -> Callable[[Sequence[Sequence[Any]]], None]:
    """The memory store's change callback (the Core wires it): appends a batch of memory changes,
    ``(actor, action, memory id, content SHA-256 or None, since or None)`` each, to this data dir's
    audit log in one write. Raises :class:`~compass_hooks.errors.AuditError` when it cannot."""

    def record(changes: Sequence[Sequence[Any]]) -> None:
        record_changes(paths, [{"actor": actor, "action": action, "object_type": "memory", "object_id": str(mid),
                                "content_sha256": digest, "since": since}
                               for actor, action, mid, digest, since in changes])

    return record
