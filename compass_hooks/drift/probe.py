"""A linear text probe learned from the dev set, in four blocks, fitted by ridge regression in dual form
(closed form, deterministic). Its score is one input of the calibrated model; it lets the dev set teach
phrasing the hand-written cues and anchors do not cover, in every language:

- character 2-4-grams of the normalised text (lower case, accents off Latin letters) and single CJK/kana
  characters: they read Chinese and Japanese, which have no spaces, and inflected words (löschen / gelöscht,
  borrar / borra) without a stemmer;
- word uni- and bigrams over crude stems (the first 6 letters of a Latin-script word);
- concepts: the cue families that fired, their pairs (a destroying verb with a valuable target, a claim with
  "without running"), and the language: shared by all languages, so English phrasing teaches Spanish;
- local: the same character and word n-grams again, hashed together with the prompt's language, so each
  language can weigh its own phrasing on top of what all languages share ("frustratingly easy" domain
  adaptation: the shared blocks carry what transfers, this one what does not; dev CV +0.003 AUC);
- the sentence embedding, zero where the embedding model does not cover the prompt's language.

Each block is L2-normalised per text and weighted (``SCALES``, chosen by dev cross-validation). Hashing uses
zlib.crc32 (deterministic across processes, unlike ``hash()``).
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from typing import Sequence

import numpy as np

from .cues import FAMILIES
from .lang import LANGS

# Wide hashed blocks: with fewer columns unrelated n-grams share them and the probe ranks worse in every language
# (docs/drift.md, rounds 8 and 10; twice these widths again was flat). Scoring reads only the columns a prompt hits;
# training builds each block's kernel a slice of columns at a time (``block_kernel``).
CHAR_DIM = 65536
WORD_DIM = 32768
CONCEPT_DIM = 1024
LOCAL_DIM = 65536
HASH_DIM = CHAR_DIM + WORD_DIM + CONCEPT_DIM + LOCAL_DIM
HASHED = ("char", "word", "concept", "local")
LAMBDA = 1.0  # ridge penalty (chosen by dev CV)
SCALES = {"char": 1.0, "word": 1.0, "concept": 1.0, "local": 1.0, "embed": 0.5}  # block weights (chosen by dev CV)
MAX_PROBE_CHARS = 4000  # a pasted log adds nothing the first pages do not; keeps the n-grams cheap
STEM = 6
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff66-\uff9f]")
_LATIN_WORD = re.compile(r"[^\W\d_]+|\d+")
_SPACE = re.compile(r"\s+")
_NF = len(FAMILIES)
assert 1 + _NF + _NF * _NF + len(LANGS) + 1 <= CONCEPT_DIM


def normalise(text: str) -> str:
    """Lower case, NFKC, whitespace collapsed, accents dropped from Latin letters only (a combining mark on
    kana changes the character: が is not か)."""
    text = unicodedata.normalize("NFKC", text[:MAX_PROBE_CHARS]).lower()
    if not text.isascii():
        out: list[str] = []
        for ch in unicodedata.normalize("NFD", text):
            if unicodedata.combining(ch) and out and out[-1].isascii():
                continue
            out.append(ch)
        text = unicodedata.normalize("NFC", "".join(out))
    return _SPACE.sub(" ", text).strip()


def _bucket(gram: str, dim: int) -> int:
    return zlib.crc32(gram.encode()) % dim


def char_grams(norm: str) -> set[str]:
    s = f" {norm} "
    out = {s[i:i + n] for n in (2, 3, 4) for i in range(len(s) - n + 1)}
    out.update(_CJK.findall(norm))
    return out


def word_grams(norm: str) -> set[str]:
    words = [w[:STEM] for w in _LATIN_WORD.findall(_CJK.sub(" ", norm))]
    out = {"w" + w for w in words}
    out.update(f"b{a} {b}" for a, b in zip(words, words[1:]))
    return out


def char_indices(norm: str) -> set[int]:
    return {_bucket(g, CHAR_DIM) for g in char_grams(norm)}


def word_indices(norm: str) -> set[int]:
    return {_bucket(g, WORD_DIM) for g in word_grams(norm)}


def local_indices(chars: set[str], words: set[str], lang: str) -> set[int]:
    """The n-grams hashed with the language: "en|del" and "de|del" are different features."""
    return {_bucket(f"{lang}|{g}", LOCAL_DIM) for grams in (chars, words) for g in grams}


def concept_indices(cues: Sequence[bool], lang: str) -> set[int]:
    fired = [i for i, f in enumerate(cues) if f]
    out = {0}  # a constant: every text has one concept, so the block is never empty
    out.update(1 + i for i in fired)
    out.update(1 + _NF + i * _NF + j for k, i in enumerate(fired) for j in fired[k + 1:])
    base = 1 + _NF + _NF * _NF
    out.add(base + (LANGS.index(lang) if lang in LANGS else len(LANGS)))
    return out


def sparse_rows(texts: Sequence[str], langs: Sequence[str], cue_rows: np.ndarray
                ) -> list[tuple[set[int], set[int], set[int], set[int]]]:
    rows = []
    for t, lang, cues in zip(texts, langs, cue_rows):
        norm = normalise(t)
        chars, words = char_grams(norm), word_grams(norm)
        rows.append(({_bucket(g, CHAR_DIM) for g in chars}, {_bucket(g, WORD_DIM) for g in words},
                     concept_indices(cues, lang), local_indices(chars, words, lang)))
    return rows


_DIMS = {"char": CHAR_DIM, "word": WORD_DIM, "concept": CONCEPT_DIM, "local": LOCAL_DIM}


def _value(idx: set[int]) -> float:
    """The row-normalised weight of each of a row's buckets in a block (float32, as the dense blocks held it)."""
    return float(np.float32(1.0 / np.sqrt(len(idx))))


def block_kernel(rows, name: str, chunk: int = 8192) -> np.ndarray:
    """``M @ M.T`` (float32, n x n) of one hashed block, dense and row-normalised (training only; scoring uses
    ``score_rows``), built ``chunk`` columns at a time so the whole dense block is never held (memory: docs/drift.md,
    round 10)."""
    k = HASHED.index(name)
    n, dim = len(rows), _DIMS[name]
    r_idx, c_idx, vals = [], [], []
    for i, parts in enumerate(rows):
        if parts[k]:
            cols = sorted(parts[k])
            r_idx.append(np.full(len(cols), i, np.int64))
            c_idx.append(np.asarray(cols, np.int64))
            vals.append(np.full(len(cols), _value(parts[k]), np.float32))
    out = np.zeros((n, n), np.float32)
    if not r_idx:
        return out
    r, c, v = np.concatenate(r_idx), np.concatenate(c_idx), np.concatenate(vals)
    order = np.argsort(c, kind="stable")
    r, c, v = r[order], c[order], v[order]
    bounds = np.searchsorted(c, np.arange(0, dim + chunk, chunk))
    for lo, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        if a == b:
            continue
        mat = np.zeros((n, chunk), np.float32)
        mat[r[a:b], c[a:b] - lo * chunk] = v[a:b]
        out += mat @ mat.T
    return out


def block_transpose_dot(rows, name: str, alpha: np.ndarray) -> np.ndarray:
    """``block_matrix(rows, name).T @ alpha`` from the sparse rows (the probe's weights from its dual ones)."""
    k = HASHED.index(name)
    out = np.zeros(_DIMS[name])
    for parts, a in zip(rows, np.asarray(alpha, np.float64)):
        if parts[k]:
            out[list(parts[k])] += _value(parts[k]) * a
    return out


def score_rows(rows, vectors: np.ndarray, embedding_on: np.ndarray, w: np.ndarray, b: float,
               scales: dict[str, float] = SCALES) -> np.ndarray:
    """Probe scores from the sparse rows: the dot product without building the dense design."""
    ends = np.cumsum([CHAR_DIM, WORD_DIM, CONCEPT_DIM, LOCAL_DIM])
    parts = np.split(w[:HASH_DIM], ends[:-1])
    we = w[HASH_DIM:]
    out = np.empty(len(rows))
    emb = (np.asarray(vectors, np.float64) @ we) * np.asarray(embedding_on, np.float64) * scales["embed"]
    for i, row in enumerate(rows):
        s = 0.0
        for idx, wv, name in zip(row, parts, HASHED):
            if idx:
                s += scales[name] * float(wv[list(idx)].sum()) / np.sqrt(len(idx))
        out[i] = s + emb[i] + b
    return out
