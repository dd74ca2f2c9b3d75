"""LoCoMo retrieval evaluation through the product's own store and search.

Every turn of a conversation becomes a memory (one project per conversation,
``ref`` = the turn's ``dia_id``, text ``"Speaker: text"``, one session per
LoCoMo session, ``created`` = the session's date plus the turn index in
seconds so turn order is kept). Every question with evidence is asked with
:func:`compass_hooks.memory.recall.search_many` in each mode (``hybrid``: the
product's own ranking; ``dense``, ``bm25``, ``rrf``: the ablations in
:mod:`compass_eval.rankings`); a question is a hit at k when any of its evidence
turns is in the top k (turn level), or when any evidence session is among the
first k distinct sessions of the ranking (session level).

The data (CC BY-NC 4.0) is read from where it lies; nothing of it is copied
into the repository. Image captions (``blip_caption``) are not indexed: a
real conversation memory would not have them.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from compass_hooks.errors import InvalidInput
from compass_hooks.memory import capture, recall

from .rankings import RANKINGS

if TYPE_CHECKING:  # pragma: no cover
    from compass_hooks.memory.corelike import CoreLike

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10)
SESSION_DEPTH = 60  # turns retrieved to find the first 10 distinct sessions
_EVIDENCE = re.compile(r"D(\d+):(\d+)$")
_BATCH = 256  # turns per embedding call and per store transaction


@dataclass
class Turn:
    ref: str  # normalised dia_id "D<session>:<turn>"
    session: int
    speaker: str
    text: str
    created: float | None


@dataclass
class Question:
    text: str
    evidence: set[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    index: int = 0  # position in the file: decides the tune / held-out split, whatever subset is loaded

    @property
    def project(self) -> str:
        return f"locomo:{self.sample_id}"


def parse_evidence(items: Sequence[Any]) -> set[str]:
    """Evidence ids, repaired as SOURCES.md says: split on ';' and whitespace, strip leading zeros."""
    out = set()
    for item in items or ():
        for part in re.split(r"[;\s,]+", str(item)):
            m = _EVIDENCE.match(part.strip())
            if m:
                out.add(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def _session_time(text: str | None) -> float | None:
    """"1:56 pm on 8 May, 2023" -> unix seconds (UTC); None when unparseable."""
    if not text:
        return None
    try:
        return float(calendar.timegm(time.strptime(text.strip(), "%I:%M %p on %d %B, %Y")))
    except ValueError:
        return None


def parse_selection(spec: str) -> set[int]:
    """Conversation positions from ``"0-4"``, ``"5-9"``, ``"0,3,7"`` or a mix ("0-2,7")."""
    out: set[int] = set()
    for part in (p.strip() for p in str(spec).split(",")):
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise InvalidInput(f"bad conversation selection {part!r} in {spec!r}", "use e.g. 0-4, 5-9 or 0,3,7")
        out.update(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return out


def load(path: str | Path, limit: int | None = None, select: set[int] | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file: the first ``limit``, and of those only the
    positions in ``select`` (None: all)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"no LoCoMo file at {path}", "pass the path to locomo10.json") from None
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    if not isinstance(data, list):
        raise InvalidInput(f"{path} is not a LoCoMo file (expected a list of samples)")
    convs = []
    for pos, sample in enumerate(data[: limit if limit else None]):
        if select is not None and pos not in select:
            continue
        conv = Conversation(str(sample.get("sample_id", pos)), index=pos)
        c = sample["conversation"]
        n = 1
        while f"session_{n}" in c:
            base = _session_time(c.get(f"session_{n}_date_time"))
            for i, t in enumerate(c[f"session_{n}"]):
                ref = next(iter(parse_evidence([t.get("dia_id", "")])), str(t.get("dia_id")))
                conv.turns.append(Turn(ref, n, t["speaker"], f"{t['speaker']}: {t['text']}",
                                       None if base is None else base + i))
            n += 1
        for qa in sample.get("qa", ()):
            ev = parse_evidence(qa.get("evidence", ()))
            if ev:
                conv.questions.append(Question(qa["question"], ev, int(qa.get("category", 0))))
        convs.append(conv)
    if select is not None and not convs:
        raise InvalidInput(f"no conversation of {path} at positions {sorted(select)}",
                           f"the file has {len(data)} (positions 0-{len(data) - 1})")
    return convs


# --------------------------------------------------------------------------- ingest


def _embed_cached(core: CoreLike, texts: list[str], cache: Path | None) -> np.ndarray:
    """Eval-only convenience: reuse vectors of identical texts from ``cache`` (an .npz)."""
    if cache is None:
        return core.embedder.embed(texts)
    key = hashlib.sha256(("\x00".join(texts) + core.embedder.name).encode()).hexdigest()[:16]
    file = cache / f"locomo-{key}.npy"
    if file.is_file():
        return np.load(file)
    vecs = core.embedder.embed(texts)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(file, vecs)
    return vecs


def ingest(core: CoreLike, conv: Conversation, cache: Path | None = None,
           progress: Callable[[int], None] | None = None) -> list[int]:
    """Import a conversation's turns as memories (batched embedding, one transaction per batch)."""
    speakers: dict[str, str] = {}
    ids: list[int] = []
    model = core.embedder.name
    for start in range(0, len(conv.turns), _BATCH):
        batch = conv.turns[start : start + _BATCH]
        vecs = _embed_cached(core, [t.text for t in batch], cache)
        items = []
        for t, v in zip(batch, vecs):
            # Two speakers: the first one seen plays "user", the other "assistant".
            role = speakers.setdefault(t.speaker, "user" if not speakers else "assistant")
            items.append({"text": t.text, "project": conv.project, "session": f"{conv.sample_id}:S{t.session}",
                          "role": role, "kind": "note", "source": "import", "ref": t.ref, "created": t.created,
                          "embedding": v, "model": model})
        added = capture.store_items(core, items)  # the product's write path, contexts included
        ids.extend(a.id for a in added if a.id is not None)
        if progress:
            progress(len(batch))
    return ids


STORE_MANIFEST = "locomo-store.json"


def ingest_all(core: CoreLike, convs: Sequence[Conversation], source_digest: str, cache: Path | None = None,
               progress: Callable[[int], None] | None = None, reuse: bool = False) -> int:
    """Import ``convs`` into ``core``'s store; returns how many turns were imported.

    ``reuse=True`` (``eval locomo --store DIR``): a conversation already in the store
    with all its turns is not imported again, only its FTS contexts are rebuilt with
    the current code (so a change to the write path's contexts is measured without a
    re-embedding); one with a different turn count (an interrupted import) is an error,
    since forgotten turns leave tombstones that a re-import would respect. The store
    remembers the file and model it was built from (``locomo-store.json`` next
    to the database) and refuses to mix in another."""
    manifest_file = Path(core.paths.db).parent / STORE_MANIFEST
    model = core.embedder.name
    if reuse and manifest_file.is_file():
        have = json.loads(manifest_file.read_text(encoding="utf-8"))
        if have.get("model") != model or have.get("source") != source_digest:
            raise InvalidInput(f"the store in {manifest_file.parent} was built from another file or model "
                               f"({have.get('model')}), not {model} on this file", "use an empty --store dir")
    elif reuse and core.store.count() > 0:
        raise InvalidInput(f"{core.paths.db} holds memories that are not a LoCoMo import", "use an empty --store dir")
    if reuse:
        manifest_file.write_text(json.dumps({"model": model, "source": source_digest}), encoding="utf-8")
    imported = 0
    for conv in convs:
        if reuse and core.store.count(conv.project) == len(conv.turns):
            recall.update_contexts(core.store, [r["id"] for r in core.store.list(project=conv.project)])
            if progress:
                progress(len(conv.turns))
            continue
        if reuse and core.store.count(conv.project):
            raise InvalidInput(f"the store in {manifest_file.parent} has {core.store.count(conv.project)} of the "
                               f"{len(conv.turns)} turns of conversation {conv.index} (an interrupted import?)",
                               "delete that --store dir and run again")
        ingest(core, conv, cache=cache, progress=progress)
        imported += len(conv.turns)
    return imported


def file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------- evaluate


def _hits(ranked_refs: list[str], ranked_sessions: list[str], q: Question) -> dict[str, bool]:
    out = {f"turn@{k}": any(r in q.evidence for r in ranked_refs[:k]) for k in KS}
    ev_sessions = {e.split(":")[0] for e in q.evidence}
    distinct = list(dict.fromkeys(ranked_sessions))
    out.update({f"session@{k}": any(s in ev_sessions for s in distinct[:k]) for k in KS})
    return out


def evaluate(core: CoreLike, convs: Sequence[Conversation], modes: Sequence[str] = ("dense", "bm25", "rrf", "hybrid"),
             weights: Any = None, held_out_from: int = 5) -> dict[str, Any]:
    """Ask every question in every mode; return recall figures (overall, per category,
    and for the tuning / held-out split of conversations)."""
    per_q: dict[str, list[tuple[int, int, dict[str, bool]]]] = {m: [] for m in modes}
    timings: dict[str, float] = {}
    for mode in modes:
        t0 = time.perf_counter()
        for conv in convs:
            ci = conv.index
            queries = [{"query": q.text, "project": conv.project, "k": SESSION_DEPTH} for q in conv.questions]
            results = recall.search_many(core, queries, weights=weights, ranking=RANKINGS[mode])
            for q, res in zip(conv.questions, results):
                refs = [r["ref"] for r in res]
                sessions = [r["ref"].split(":")[0] for r in res if r["ref"]]
                per_q[mode].append((ci, q.category, _hits(refs, sessions, q)))
        timings[mode] = time.perf_counter() - t0
    n_q = sum(len(c.questions) for c in convs)
    report: dict[str, Any] = {"conversations": len(convs), "turns": sum(len(c.turns) for c in convs),
                              "questions": n_q, "modes": {}}
    for mode, rows in per_q.items():
        report["modes"][mode] = {
            "overall": _agg(rows),
            "by_category": {f"{c} {CATEGORIES.get(c, '?')}": _agg([r for r in rows if r[1] == c])
                            for c in sorted({r[1] for r in rows})},
            f"tune (conv 0-{held_out_from - 1})": _agg([r for r in rows if r[0] < held_out_from]),
            f"held out (conv {held_out_from}+)": _agg([r for r in rows if r[0] >= held_out_from]),
            "ms_per_query": round(1000 * timings[mode] / max(1, n_q), 2),
        }
    return report


def _agg(rows: list[tuple[int, int, dict[str, bool]]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    keys = rows[0][2].keys()
    out: dict[str, float] = {"n": len(rows)}
    out.update({k: round(float(np.mean([r[2][k] for r in rows])), 4) for k in keys})
    return out


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table: one line per mode and group."""
    lines = [f"LoCoMo: {report['conversations']} conversations, {report['turns']} turns, "
             f"{report['questions']} questions with evidence"]
    head = f"{'mode':8} {'group':26} {'n':>5}  " + "  ".join(f"{'T@' + str(k):>6}" for k in KS) + "  " + \
        "  ".join(f"{'S@' + str(k):>6}" for k in KS)
    lines.append(head)
    for mode, res in report["modes"].items():
        groups = [("overall", res["overall"])] + list(res["by_category"].items()) + \
            [(k, v) for k, v in res.items() if k.startswith(("tune", "held"))]
        for name, agg in groups:
            if not agg.get("n"):
                continue
            lines.append(f"{mode:8} {name:26} {agg['n']:>5}  " + "  ".join(f"{agg[f'turn@{k}']:>6.3f}" for k in KS)
                         + "  " + "  ".join(f"{agg[f'session@{k}']:>6.3f}" for k in KS))
        lines.append(f"{mode:8} {'ms per query':26} {res['ms_per_query']:>5}")
    return "\n".join(lines)
