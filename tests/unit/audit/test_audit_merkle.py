"""Merkle tree: RFC 6962 test vectors, inclusion proofs that verify and that fail when wrong."""

from __future__ import annotations

import hashlib

import pytest

from compass_hooks.audit import merkle

# The RFC 6962 reference leaves and the roots of their first n leaves
# (certificate-transparency's test vectors).
LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


@pytest.mark.parametrize("n", range(1, 9))
def test_rfc6962_roots(n):
    assert merkle.root(LEAVES[:n]) == ROOTS[n - 1]


def test_empty_root_is_hash_of_nothing():
    assert merkle.root([]) == hashlib.sha256(b"").hexdigest()


def _hashes(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 33])
def test_every_inclusion_proof_verifies_and_is_short(n):
    hs = _hashes(n)
    r = merkle.root(hs)
    for i in range(n):
        p = merkle.inclusion_proof(hs, i)
        assert len(p) <= max(1, (n - 1).bit_length())
        assert merkle.verify_inclusion(hs[i], i, n, p, r)


def test_wrong_leaf_index_size_path_or_root_fails():
    hs = _hashes(11)
    r = merkle.root(hs)
    p = merkle.inclusion_proof(hs, 6)
    assert merkle.verify_inclusion(hs[6], 6, 11, p, r)
    assert not merkle.verify_inclusion(hs[7], 6, 11, p, r)  # other leaf
    assert not merkle.verify_inclusion(hs[6], 7, 11, p, r)  # other index
    assert not merkle.verify_inclusion(hs[6], 6, 7, p, r)  # a size with another tree shape
    assert not merkle.verify_inclusion(hs[6], 6, 11, p[:-1], r)  # truncated path
    assert not merkle.verify_inclusion(hs[6], 6, 11, p + [hs[0]], r)  # padded path
    bad = list(p)
    bad[0] = hs[0]
    assert not merkle.verify_inclusion(hs[6], 6, 11, bad, r)
    assert not merkle.verify_inclusion(hs[6], 6, 11, p, merkle.root(hs[:10]))
    assert not merkle.verify_inclusion(hs[6], 11, 11, p, r)  # index out of range


def test_leaf_and_node_are_domain_separated():
    a, b = bytes(32), bytes([1]) * 32
    # A two-leaf tree's root must not equal the leaf hash of the concatenated children.
    assert merkle.node_hash(merkle.leaf_hash(a), merkle.leaf_hash(b)) != merkle.leaf_hash(
        merkle.leaf_hash(a) + merkle.leaf_hash(b)
    )
