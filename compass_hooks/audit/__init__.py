"""Tamper-evident audit log: hash-chained JSONL entries plus a Merkle root.

Writers call :func:`record_change` for every change to a memory, an anchor or a
pack (:func:`record_pack` for the data-dir packs); ``compass-hook audit verify``
recomputes the chain, the Merkle root and every stored object's hash against it.
"""

from typing import Any, Callable

from .log import GENESIS, record_change, sha256_hex
from .packs import record_pack, write_pack_sums

__all__ = ["GENESIS", "memory_recorder", "record_change", "record_pack", "sha256_hex", "write_pack_sums"]


def memory_recorder(paths: Any) -> Callable[[str, str, int, "str | None"], None]:
    """The memory store's change callback that appends to this data dir's audit log (the Core wires it)."""

    def record(actor: str, action: str, memory_id: int, content: str | None) -> None:
        record_change(paths, actor=actor, action=action, object_type="memory", object_id=str(memory_id),
                      content=content)

    return record
