"""Tamper-evident audit log: hash-chained JSONL entries plus a Merkle root.

Writers call :func:`record_change` for every change to a memory, an anchor or a
pack; ``compass-hook audit verify`` recomputes the chain, the Merkle root and
every stored object's hash against it.
"""

from .log import GENESIS, record_change, sha256_hex

__all__ = ["GENESIS", "record_change", "sha256_hex"]
