"""RFC 6962 / RFC 9162 Merkle tree over the audit entries' hashes.

Leaves and interior nodes are hashed with different one-byte prefixes (0x00 and
0x01), so a leaf can never be passed off as a node (second-preimage attack).
The leaf data is the entry's 32-byte ``hash``. Stdlib only.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

EMPTY_ROOT = hashlib.sha256(b"").hexdigest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below n (n >= 2)."""
    k = 1
    while k << 1 < n:
        k <<= 1
    return k


def _root(leaves: Sequence[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return node_hash(_root(leaves[:k]), _root(leaves[k:]))


def root(entry_hashes: Sequence[str]) -> str:
    """MTH over the hex entry hashes (hex); the hash of the empty string for no entries."""
    if not entry_hashes:
        return EMPTY_ROOT
    return _root([leaf_hash(bytes.fromhex(h)) for h in entry_hashes]).hex()


def _path(m: int, leaves: Sequence[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return _path(m, leaves[:k]) + [_root(leaves[k:])]
    return _path(m - k, leaves[k:]) + [_root(leaves[:k])]


def inclusion_proof(entry_hashes: Sequence[str], index: int) -> list[str]:
    """The audit path (hex, leaf to root) proving entry ``index`` is in the tree."""
    if not 0 <= index < len(entry_hashes):
        raise IndexError(index)
    return [h.hex() for h in _path(index, [leaf_hash(bytes.fromhex(e)) for e in entry_hashes])]


def verify_inclusion(entry_hash: str, index: int, size: int, proof: Sequence[str], expected_root: str) -> bool:
    """RFC 9162 section 2.1.3.2: recompute the root from one leaf and its path."""
    if not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    r = leaf_hash(bytes.fromhex(entry_hash))
    for p_hex in proof:
        p = bytes.fromhex(p_hex)
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r.hex() == expected_root
