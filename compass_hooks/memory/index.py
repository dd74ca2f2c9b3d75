"""The dense vector index held by the worker: exact cosine top-k over an
in-memory matrix, one block per project.

Why this shape:
- Recall is per project by default, so each project gets its own contiguous
  float32 matrix; a query touches only its project's rows (a global query walks
  every block and merges). No mask over a global matrix, no wasted dot products.
- Exact search: ``block @ q`` then ``np.argpartition`` for the top k. At 384-d a
  100k-row block is 150 MB of float32 and a query is one 38 M multiply-add matvec,
  bound by memory bandwidth. 1M rows (1.5 GB) is still exact but ten times the
  work; float16 storage halves RAM but is slower per single query (no float16
  BLAS), so the step for 1M is a coarse IVF partition (probe a few % of rows,
  exact re-rank). docs/memory.md has the measured times (``bench recall``).
- Appends are amortised O(1): each block grows geometrically (x2, then x1.25
  past 16k rows), so a new memory never triggers a reload. Forget removes rows by compaction (rare).
- Thread-safe: one lock guards mutation and the (cheap) snapshot taken by a
  search; the matvec itself runs on the snapshot outside the lock, so
  concurrent queries do not serialise on numpy work.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

_MIN_CAPACITY = 256
_SLOW_GROWTH = 16384
_QUERY_CHUNK = 32
_F16_SLICE = 16384


@dataclass
class DenseHits:
    """Top-k rows of one search plus the score distribution they came from.

    ``mean``/``std`` are over every row searched; fusion uses them to turn raw
    cosines into z-scores, which are comparable across queries and projects.
    """

    ids: np.ndarray  # int64, best first
    scores: np.ndarray  # float32 cosine, best first
    mean: float
    std: float
    searched: int


class _Block:
    """One project's vectors: a growable matrix and the memory ids of its rows."""

    __slots__ = ("vecs", "ids", "n", "pos")

    def __init__(self, dim: int, dtype: np.dtype):
        self.vecs = np.zeros((_MIN_CAPACITY, dim), dtype=dtype)
        self.ids = np.zeros(_MIN_CAPACITY, dtype=np.int64)
        self.n = 0
        self.pos: dict[int, int] = {}  # memory id -> row, for scoring given ids

    def append(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        need = self.n + len(ids)
        if need > len(self.ids):
            # Doubling while small; past _SLOW_GROWTH rows +25%: still amortised O(1) appends,
            # but a 100k-row block carries at most 25k spare rows (37 MB), not 100k.
            grow = 2.0 if len(self.ids) < _SLOW_GROWTH else 1.25
            cap = max(need, int(grow * len(self.ids)))
            # New arrays (not resize in place): searches holding a snapshot of the
            # old ones keep reading valid memory.
            nv = np.zeros((cap, self.vecs.shape[1]), dtype=self.vecs.dtype)
            ni = np.zeros(cap, dtype=np.int64)
            nv[: self.n] = self.vecs[: self.n]
            ni[: self.n] = self.ids[: self.n]
            self.vecs, self.ids = nv, ni
        self.vecs[self.n : need] = vecs
        self.ids[self.n : need] = ids
        self.pos.update((int(m), self.n + j) for j, m in enumerate(ids))
        self.n = need

    def remove(self, drop: set[int]) -> int:
        keep = ~np.isin(self.ids[: self.n], np.fromiter(drop, dtype=np.int64, count=len(drop)))
        removed = int(self.n - keep.sum())
        if removed:
            self.vecs = np.ascontiguousarray(self.vecs[: self.n][keep])
            self.ids = self.ids[: self.n][keep].copy()
            self.n = len(self.ids)
            self.pos = {int(m): j for j, m in enumerate(self.ids)}
        return removed


def _scores(vecs: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Cosines of every row with every query. float16 rows are widened in slices:
    numpy has no BLAS kernel for float16, and a slice keeps the temporary small."""
    if vecs.dtype == np.float32:
        return queries @ vecs.T
    out = np.empty((len(queries), len(vecs)), dtype=np.float32)
    for start in range(0, len(vecs), _F16_SLICE):
        out[:, start : start + _F16_SLICE] = queries @ vecs[start : start + _F16_SLICE].astype(np.float32).T
    return out


class DenseIndex:
    """Exact cosine search over L2-normalised vectors, partitioned by project."""

    def __init__(self, dim: int, dtype: str = "float32"):
        self.dim = dim
        self.dtype = np.dtype(dtype)
        self._blocks: dict[str, _Block] = {}
        self._where: dict[int, str] = {}  # memory id -> project
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, memory_id: int) -> bool:
        return int(memory_id) in self._where

    def nbytes(self) -> int:
        """Bytes held by the matrices and id arrays (capacity included: what RAM it takes)."""
        with self._lock:
            return sum(b.vecs.nbytes + b.ids.nbytes for b in self._blocks.values())

    def add(self, ids: Sequence[int] | np.ndarray, projects: Sequence[str], vecs: np.ndarray) -> int:
        """Append rows (ids already present are replaced). Returns rows added."""
        vecs = np.asarray(vecs, dtype=np.float32).reshape(-1, self.dim)
        if len(ids) != len(vecs) or len(projects) != len(vecs):
            raise ValueError("ids, projects and vecs must have the same length")
        with self._lock:
            dup = {int(i) for i in ids if int(i) in self._where}
            if dup:
                self._remove_locked(dup)
            groups: dict[str, list[int]] = {}
            for row, proj in enumerate(projects):
                groups.setdefault(proj or "", []).append(row)
            for proj, rows in groups.items():
                block = self._blocks.get(proj)
                if block is None:
                    block = self._blocks[proj] = _Block(self.dim, self.dtype)
                sel = np.asarray(rows)
                block.append(np.asarray(ids, dtype=np.int64)[sel], vecs[sel].astype(self.dtype, copy=False))
                for r in rows:
                    self._where[int(ids[r])] = proj
        return len(ids)

    def remove(self, ids: Iterable[int]) -> int:
        with self._lock:
            return self._remove_locked({int(i) for i in ids})

    def _remove_locked(self, drop: set[int]) -> int:
        by_proj: dict[str, set[int]] = {}
        for i in drop:
            proj = self._where.pop(i, None)
            if proj is not None:
                by_proj.setdefault(proj, set()).add(i)
        return sum(self._blocks[p].remove(s) for p, s in by_proj.items())

    def clear(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._where.clear()

    def _snapshot(self, project: str | None) -> list[tuple[np.ndarray, np.ndarray]]:
        with self._lock:
            blocks = [self._blocks.get(project or "")] if project is not None else list(self._blocks.values())
            return [(b.vecs[: b.n], b.ids[: b.n]) for b in blocks if b is not None and b.n]

    def score_ids(self, query: np.ndarray, ids: Iterable[int]) -> dict[int, float]:
        """Exact cosine of ``query`` with the given memories (those in the index):
        fusion needs the dense score of keyword hits outside the dense top k."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        rows: dict[str, tuple[list[int], list[int]]] = {}
        with self._lock:
            for m in ids:
                proj = self._where.get(int(m))
                if proj is None:
                    continue
                block = self._blocks[proj]
                r = rows.setdefault(proj, ([], []))
                r[0].append(int(m))
                r[1].append(block.pos[int(m)])
            snaps = {p: self._blocks[p].vecs for p in rows}
        out: dict[int, float] = {}
        for proj, (mids, idx) in rows.items():
            sims = snaps[proj][np.asarray(idx)].astype(np.float32) @ q
            out.update(zip(mids, (float(x) for x in sims)))
        return out

    def search(self, query: np.ndarray, k: int = 10, project: str | None = None,
               exclude: "set[int] | None" = None) -> DenseHits:
        """Top ``k`` rows by cosine in ``project`` (None: every project)."""
        return self.search_many(np.asarray(query, dtype=np.float32).reshape(1, -1), k, project, exclude)[0]

    def search_many(self, queries: np.ndarray, k: int = 10, project: str | None = None,
                    exclude: "set[int] | None" = None) -> list[DenseHits]:
        """Batch search: one matrix-matrix product per block instead of a matvec per query."""
        queries = np.asarray(queries, dtype=np.float32).reshape(-1, self.dim)
        parts = self._snapshot(project)
        if len(queries) > _QUERY_CHUNK:  # bound the (queries x rows) score matrix
            out: list[DenseHits] = []
            for start in range(0, len(queries), _QUERY_CHUNK):
                out.extend(self._search_parts(parts, queries[start : start + _QUERY_CHUNK], k, exclude))
            return out
        return self._search_parts(parts, queries, k, exclude)

    def _search_parts(self, parts, queries: np.ndarray, k: int, exclude: "set[int] | None") -> list[DenseHits]:
        nq = len(queries)
        if not parts:
            empty = DenseHits(np.zeros(0, np.int64), np.zeros(0, np.float32), 0.0, 1.0, 0)
            return [empty for _ in range(nq)]
        cand_ids, cand_scores = [], []
        total, s1, s2 = 0, np.zeros(nq), np.zeros(nq)
        want = k + (len(exclude) if exclude else 0)
        for vecs, ids in parts:
            sims = _scores(vecs, queries)  # (nq, rows) float32
            total += sims.shape[1]
            s1 += sims.sum(1, dtype=np.float64)
            s2 += np.square(sims, dtype=np.float64).sum(1)
            kk = min(want, sims.shape[1])
            top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk] if kk < sims.shape[1] else np.tile(np.arange(sims.shape[1]), (nq, 1))
            cand_ids.append(ids[top])
            cand_scores.append(np.take_along_axis(sims, top, 1))
        all_ids = np.concatenate(cand_ids, 1)
        all_scores = np.concatenate(cand_scores, 1)
        mean = s1 / total
        std = np.sqrt(np.maximum(s2 / total - mean**2, 1e-12))
        out = []
        for r in range(nq):
            ids_r, sc_r = all_ids[r], all_scores[r]
            if exclude:
                keep = ~np.isin(ids_r, np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
                ids_r, sc_r = ids_r[keep], sc_r[keep]
            order = np.argsort(-sc_r, kind="stable")[:k]
            out.append(DenseHits(ids_r[order], sc_r[order], float(mean[r]), float(std[r]), total))
        return out
