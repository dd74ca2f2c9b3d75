"""Tamper-evident audit log: hash-chained JSONL entries plus a Merkle root.

Writers call :func:`record_change` for every change to a memory, an anchor or a
pack (:func:`record_pack` for the data-dir packs); ``compass-hook audit verify``
recomputes the chain, the Merkle root and every stored object's hash against it.
"""

from .log import GENESIS, record_change, sha256_hex
from .packs import record_pack, write_pack_sums

__all__ = ["GENESIS", "record_change", "record_pack", "sha256_hex", "write_pack_sums"]
