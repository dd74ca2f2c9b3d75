"""Nearest dev items: features of the final logistic from the labelled items a prompt is most like.

Closeness is the text probe's own kernel over its hashed n-gram blocks (character, word, concept and local; not the
embedding, which adds nothing here: docs/drift.md, round 12), as a cosine. Per prompt six figures: the top-1 and
the mean top-5 cosine to the drift items and to the on-track items, and the two differences; the model reads them
once for every language and once more in a copy for the prompt's own language (``columns``). Training computes them
out of fold from the dense kernel (``train.Prepared``); scoring from an inverted index over the items' hashed rows
(``NeighbourIndex``), both through ``summarise`` and ``columns``, so the two cannot disagree on what they are.

The index is built from the very items the calibration was trained on (named in its ``neighbours`` section and
checked by digest) and cached in ``<data>/cache``: seconds to build once, milliseconds per prompt (docs/drift.md).
Until it exists the scorer uses the calibration's head without these features (``scorer.DriftState``).

``python -m compass_hooks.drift.neighbours SPEC_JSON OUT`` builds one index file (the worker runs it in a
process of its own at low priority, so the build holds neither its GIL nor a core a hook needs).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import AnchorPackError
from .lang import LANGS
from .probe import CHAR_DIM, CONCEPT_DIM, HASHED, LOCAL_DIM, SCALES, WORD_DIM, sparse_rows

SUMMARY = ("nbr_drift_top1", "nbr_drift_top5", "nbr_ok_top1", "nbr_ok_top5", "nbr_diff_top1", "nbr_diff_top5")
# The summary once for every language, and again per language (zero outside it): how far a near dev item can be
# trusted differs by language. With shared weights alone Chinese lost on dev and on the check sets while the other
# languages gained; the copies kept most of its AUC and raised the rest further (docs/drift.md, round 12).
FEATURES = SUMMARY + tuple(f"{name}_{lang}" for lang in LANGS for name in SUMMARY)
TOP = 5
FORMAT = 1  # the cache file's layout; part of its key
_DIMS = (CHAR_DIM, WORD_DIM, CONCEPT_DIM, LOCAL_DIM)
_W = np.array([SCALES[name] ** 2 for name in HASHED])  # a block's weight in the kernel (its scale squared)


def summarise(sim: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``sim``: (prompts, items) cosines; ``y``: the items' labels (1 = drift). Returns (prompts, 6) in FEATURES
    order. A class with fewer than TOP items averages what it has; with none its cosines are 0."""
    sim = np.atleast_2d(np.asarray(sim, np.float64))
    cols = []
    for label in (1, 0):
        s = sim[:, np.asarray(y) == label]
        if s.shape[1] == 0:
            cols += [np.zeros(len(sim)), np.zeros(len(sim))]
            continue
        k = min(TOP, s.shape[1])
        top = -np.partition(-s, k - 1, axis=1)[:, :k]
        cols += [top.max(1), top.mean(1)]
    f = np.column_stack(cols)
    return np.column_stack([f, f[:, 0] - f[:, 2], f[:, 1] - f[:, 3]])


def columns(summary: np.ndarray, langs: Sequence[str]) -> np.ndarray:
    """The FEATURES columns from ``summarise``'s and each prompt's language."""
    lang = np.asarray(langs)
    return np.column_stack([summary] + [summary * (lang == code)[:, None] for code in LANGS])


def row_norms(rows: Sequence[tuple[set[int], ...]]) -> np.ndarray:
    """Each row's norm under the n-gram kernel: every non-empty block is a unit vector, weighted."""
    return np.sqrt(np.array([sum(w for part, w in zip(r, _W) if part) for r in rows], np.float64))


def items_digest(texts: Sequence[str], labels: Iterable[int]) -> str:
    """What a calibration records of the items it was trained on, and the index checks."""
    return hashlib.sha256("\n".join(f"{t}\t{int(lbl)}" for t, lbl in zip(texts, labels)).encode()).hexdigest()[:16]


class NeighbourIndex:
    """The hashed n-gram rows of labelled items as one inverted list per block: for each bucket, the items that
    have it. A prompt's cosine to every item is the shared-bucket count per block (one ``bincount`` over the
    prompt's buckets' lists), weighted by both rows' block norms."""

    def __init__(self, indptr: list[np.ndarray], postings: list[np.ndarray], inv: np.ndarray, norm: np.ndarray,
                 y: np.ndarray, digest: str):
        self.indptr, self.postings, self.inv, self.norm, self.y, self.digest = indptr, postings, inv, norm, y, digest

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[set[int], ...]], y: Sequence[int], digest: str = "") -> "NeighbourIndex":
        n = len(rows)
        dtype = np.uint16 if n <= np.iinfo(np.uint16).max else np.int32  # a third of the memory at dev-set sizes
        indptr, postings = [], []
        inv = np.zeros((len(HASHED), n), np.float32)
        for k, dim in enumerate(_DIMS):
            sizes = np.array([len(r[k]) for r in rows], np.int64)
            item = np.repeat(np.arange(n, dtype=np.int64), sizes)
            bucket = np.fromiter((b for r in rows for b in r[k]), np.int64, int(sizes.sum()))
            order = np.lexsort((item, bucket))
            indptr.append(np.concatenate([[0], np.cumsum(np.bincount(bucket, minlength=dim))]).astype(np.int64))
            postings.append(item[order].astype(dtype))
            inv[k] = np.where(sizes > 0, _W[k] / np.sqrt(np.maximum(sizes, 1)), 0.0)
        return cls(indptr, postings, inv, row_norms(rows), np.asarray(y, np.int8), digest)

    def __len__(self) -> int:
        return len(self.y)

    def similarities(self, rows: Sequence[tuple[set[int], ...]]) -> np.ndarray:
        """(len(rows), len(self)) cosines under the n-gram kernel."""
        n = len(self)
        out = np.zeros((len(rows), n))
        for i, row in enumerate(rows):
            acc = np.zeros(n)
            for k, part in enumerate(row):
                if not part:
                    continue
                b = np.fromiter(part, np.int64, len(part))
                start, end = self.indptr[k][b], self.indptr[k][b + 1]
                lens = end - start
                total = int(lens.sum())
                if not total:
                    continue
                # positions start[j] .. end[j] of every bucket, gathered in one go
                pos = np.repeat(start - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(total)
                shared = np.bincount(self.postings[k][pos], minlength=n)
                acc += shared * (self.inv[k] / np.sqrt(len(part)))
            out[i] = acc / (row_norms([row])[0] * self.norm)
        return out

    def features(self, rows: Sequence[tuple[set[int], ...]], langs: Sequence[str]) -> np.ndarray:
        """The FEATURES columns of prompts with these rows and languages."""
        return columns(summarise(self.similarities(rows), self.y), langs)

    def save(self, path: Path) -> Path:
        arrays: dict[str, Any] = {"inv": self.inv, "norm": self.norm, "y": self.y,
                                  "digest": np.array(self.digest)}
        for k in range(len(HASHED)):
            arrays[f"indptr{k}"], arrays[f"postings{k}"] = self.indptr[k], self.postings[k]
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: Path) -> "NeighbourIndex":
        with np.load(path, allow_pickle=False) as z:
            k = range(len(HASHED))
            return cls([z[f"indptr{i}"] for i in k], [z[f"postings{i}"] for i in k], z["inv"], z["norm"], z["y"],
                       str(z["digest"]))


def source_files(spec: dict[str, Any]) -> list[Path]:
    """The labelled files a calibration's ``neighbours`` section names: a bare name is a dev set shipped in the
    package (drift/data), anything else a path (a user's own ``anchors train --dev FILE``)."""
    from .train import DEV_DIR

    return [DEV_DIR / f if os.sep not in f else Path(f) for f in spec["files"]]


def cache_path(data: Path, spec: dict[str, Any]) -> Path:
    """Keyed by everything the rows depend on: the items, the cue patterns (their flags are in the concept block)
    and the probe's block sizes."""
    from .cues import get_cues

    key = hashlib.sha256(f"{FORMAT}|{spec['sha256_16']}|{get_cues().digest}|{_DIMS}".encode()).hexdigest()[:16]
    return data / "cache" / f"drift-neighbours-{key}.npz"


def build(spec: dict[str, Any]) -> NeighbourIndex:
    """The index of the items a calibration names, their rows computed as training computes them (language by
    ``lang.detect``, cue flags with the prompt rules run). Raises AnchorPackError when the files are gone or
    differ from what the calibration was trained on."""
    from .features import lexical_row
    from .lang import detect
    from .train import load_labelled

    try:
        items = [it for f in source_files(spec) for it in load_labelled(f)]
    except (OSError, ValueError) as exc:
        raise AnchorPackError(f"drift neighbour index: cannot read the calibration's dev items: {exc}",
                              "retrain with `compass-hook anchors train`") from None
    texts, y = [it["text"] for it in items], [it["label"] for it in items]
    digest = items_digest(texts, y)
    if digest != spec["sha256_16"]:
        raise AnchorPackError("drift neighbour index: the dev items differ from those the calibration was trained on",
                              "retrain with `compass-hook anchors train`")
    langs = [detect(t) for t in texts]
    cues = np.array([lexical_row(t, lang=lg)[1] for t, lg in zip(texts, langs)], bool)
    return NeighbourIndex.from_rows(sparse_rows(texts, langs, cues), y, digest)


def remove_stale(keep: Path) -> None:
    """Index files of other keys (an older calibration or cue set) go once a new one is written."""
    for old in keep.parent.glob("drift-neighbours-*.npz"):
        if old != keep:
            old.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``SPEC_JSON OUT``: build the index a calibration's ``neighbours`` section names into OUT (the worker's
    background build)."""
    import json

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m compass_hooks.drift.neighbours SPEC_JSON OUT", file=sys.stderr)
        return 2
    try:
        os.nice(10)  # a hook's worker comes first
    except OSError:
        pass
    parent = os.getppid()
    try:
        index = build(json.loads(args[0]))
        if os.getppid() != parent:  # the worker that asked is gone (its data dir may be too): nothing to write
            return 0
        out = index.save(Path(args[1]))
    except (AnchorPackError, OSError, ValueError, KeyError) as exc:
        print(f"compass-hooks: {exc}", file=sys.stderr)
        return 1
    remove_stale(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
