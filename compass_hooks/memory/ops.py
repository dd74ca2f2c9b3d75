"""Memory ops (worker, in-process service, MCP server): remember, recall (single or
batch), list, edit, forget, import_batch, export, constraints, ingest_transcript.

Arguments and results are JSON. ``project`` accepts a project id, a path or a
name (see :func:`.project.resolve`); relative paths are the caller's business
(the CLI resolves them against its own cwd before calling). ``cwd`` is the
alternative for callers that only know a directory. No project: the global scope.
Memory ids are integers; strings of ASCII digits are accepted (MCP passes strings).

A project the caller named (``strict_project``) must have memories: a typo or a wrong path is an error
naming the known projects, never an empty answer that looks like "nothing remembered".

Writes are committed before the audit log hears of them; when the log cannot be
written the write still succeeds (it is stored, and a retry must not store it
twice) and the result says why its entry is pending (``audit_pending``).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import CompassError, InvalidInput, NotFound, StoreError
from ..ops import op
from . import capture, privacy
from . import project as projects
from .standing import ops as _standing_ops  # noqa: F401 - registers the `instructions` op
from .store import GLOBAL, KINDS, ROLES, SOURCES, normalize_tags, parse_id

if TYPE_CHECKING:  # pragma: no cover
    from .corelike import CoreLike

RESULT_FIELDS = ("id", "ref", "text", "score", "kind", "session", "created", "tags")
MAX_LIST = 1000
MAX_BATCH = 5000
# An export page stops at this many bytes of JSON rows: a page is one worker message, and a message has a
# ceiling (protocol.MAX_LINE, 16 MiB). One row is at most ~100 KB (20,000 characters of text, a bounded context).
EXPORT_PAGE_BYTES = 4 * 1024 * 1024
MAX_CONTEXT = 20_000  # characters of an imported row's context (derived search text; ours is ~1,500)


def _project(core: CoreLike, project: str | None = None, cwd: str | None = None, strict: bool = False) -> str:
    """The project id for a name, a path or a cwd. ``strict``: the caller named it, so it must hold memories
    (else :class:`NotFound` naming the known ones)."""
    if project is None and cwd:
        return projects.project_id(cwd)
    if project is None:
        return GLOBAL
    known = [p for p, _ in core.store.projects()]
    proj = projects.resolve(project, known)
    if strict and proj != GLOBAL and proj not in known:
        shown = ", ".join(known[:8]) + (f" and {len(known) - 8} more" if len(known) > 8 else "")
        raise NotFound(f"no memories in project {project!r}" + (f" ({proj})" if proj != project else ""),
                       f"known projects: {shown}" if known else "nothing is stored yet")
    return proj


def _kind(kind: Any) -> str | None:
    if kind is None:
        return None
    if not isinstance(kind, str):
        raise InvalidInput(f"kind must be a string, got {kind!r}", f"one of: {', '.join(KINDS)}")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r}", f"one of: {', '.join(KINDS)}")
    return kind


def _id(value: Any) -> int:
    return parse_id(value)


def _audit_note(core: CoreLike, out: dict) -> dict:
    """Add why the audit entry of this write is pending, when it is (the write itself is done)."""
    pending = core.store.audit_error()
    if pending:
        out["audit_pending"] = pending
    return out


def public(row: dict, now: float | None = None) -> dict:
    """A stored row as ops return it (no hash/dedupe internals)."""
    out = {k: row.get(k) for k in ("id", "project", "session", "role", "kind", "text", "created", "source", "ref",
                                     "pinned", "flags", "tags")}
    if row.get("created") is not None:
        out["age_s"] = round(max(0.0, (now or time.time()) - float(row["created"])), 1)
    return out


def _hit(h: dict, now: float) -> dict:
    out = {k: h.get(k) for k in RESULT_FIELDS}
    out["role"] = h.get("role")
    out["project"] = h.get("project")
    out["flags"] = list(h.get("flags") or [])  # renderers withhold suspicious-instruction text (memory.inject.shown)
    out["tags"] = list(h.get("tags") or [])
    if h.get("created") is not None:
        out["age_s"] = round(max(0.0, now - float(h["created"])), 1)
    return out


@op("remember")
def remember(core: CoreLike, text: str, kind: str | None = None, project: str | None = None, cwd: str | None = None,
             session: str | None = None, pin: bool = False, pinned: bool | None = None, source: str = "cli",
             ref: str | None = None, role: str = "user", tags: Sequence[str] | str | None = None) -> dict:
    """Store one memory after privacy cleaning; kind detected when not given (else "note"). ``tags`` label it
    (remembering the same text again adds them to the one memory)."""
    if source not in SOURCES:
        raise InvalidInput(f"unknown source {source!r}", f"one of: {', '.join(SOURCES)}")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("nothing to remember", "give the text to store")
    cleaned = privacy.clean(text)
    if not cleaned.text:
        raise InvalidInput("nothing left to remember after removing <private> text")
    proj = _project(core, project, cwd)
    kind = _kind(kind)
    tags = normalize_tags(tags)
    if kind is None:
        from .constraints import classify

        kind = classify(cleaned.text) or "note"
    # The same text remembered again (a retry after a timeout, twice by hand) is one memory: the key is the
    # content; `revive` lets the user remember what they once forgot (a transcript re-read may not).
    digest = hashlib.sha256(f"{kind}\x1f{role}\x1f{cleaned.text}".encode("utf-8")).hexdigest()[:32]
    item = {"text": cleaned.text, "project": proj, "session": session, "role": role, "kind": kind,
            "source": source, "ref": ref, "pinned": bool(pin or pinned), "flags": cleaned.flags,
            "dedupe_key": f"remember:{digest}", "revive": True, "tags": tags}
    capture.embed_items(core, [item])
    added = capture.store_items(core, [item])[0]
    row = core.store.get(added.id)
    if not added.new and not set(tags) <= set(row["tags"]):
        row = core.store.edit(added.id, add_tags=tags, actor=source)
    return _audit_note(core, {"memory": {**public(row), "redactions": len(cleaned.redactions)}, "new": added.new})


def _search_many(core: CoreLike, items: list[dict], kinds: Sequence[str] | None, scope: str, only: Any = None) -> list[list[dict]]:
    from . import recall

    return recall.search_many(core, items, kinds=kinds, scope=scope, only=only)


def _floor(core: Any, min_score: float | None) -> float:
    """The relevance floor on a hit's raw cosine: the caller's, else ``memory.min_score``, else the hooks'
    default. The fused score is relative to the best hit of the query, so it cannot say "nothing is relevant";
    the cosine can."""
    if min_score is not None:
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not math.isfinite(min_score):
            raise InvalidInput(f"min_score must be a number, got {min_score!r}")
        return float(min_score)
    from .api import DEFAULT_MIN_COSINE

    try:
        value = core.config.get("memory", "min_score")
    except KeyError:
        value = None
    return DEFAULT_MIN_COSINE if value is None else float(value)


def _relevant(hits: list[dict], floor: float) -> tuple[list[dict], int]:
    """(hits with keyword evidence or a cosine at or above the floor, how many were dropped). A hit that shares
    a searched word with the query is kept whatever its cosine: the words are evidence of their own."""
    kept = [h for h in hits if h.get("bm25") is not None or (h.get("cosine") is not None and h["cosine"] >= floor)]
    return kept, len(hits) - len(kept)


@op("recall")
def recall_op(core: CoreLike, query: str | None = None, queries: Sequence[dict | str] | None = None,
              project: str | None = None, cwd: str | None = None, k: int = 5, kinds: Sequence[str] | None = None,
              scope: str = "project", since: Any = None, until: Any = None, tags: Sequence[str] | None = None,
              min_score: float | None = None, strict_project: bool = False) -> dict:
    """Single: ``{"query", "project", "memories": [...], "below_floor"}``. Batch (``queries``):
    ``{"results": [{"query", "results": [...]}, ...]}`` in input order.

    Only hits above the relevance floor (:func:`_floor`; ``min_score`` overrides it, 0 or below keeps
    everything but the negative) come back, so a query with nothing relevant gets nothing: ``below_floor`` counts
    what was left out. ``since`` / ``until``: unix seconds, ISO dates or phrases ("last week", memory/when.py);
    ``tags``: only memories carrying all of them."""
    from . import recall, when

    kinds = [kd for x in kinds if (kd := _kind(x)) is not None] if kinds else None  # a None kind filters nothing
    lo, hi = when.window(since, until)
    only = recall.candidate_filter(core.store, lo, hi, normalize_tags(tags))
    floor = _floor(core, min_score)
    now = time.time()
    if queries is not None:
        if len(queries) > MAX_BATCH:
            raise InvalidInput(f"at most {MAX_BATCH} queries per call", "split the batch")
        default = _project(core, project, cwd, strict=strict_project)
        items = []
        for q in queries:
            q = {"query": q} if isinstance(q, str) else dict(q)
            if not isinstance(q.get("query"), str) or not q["query"].strip():
                raise InvalidInput(f"batch query without text: {q!r}")
            q["project"] = _project(core, q["project"]) if q.get("project") else default
            q["k"] = int(q.get("k") or k)
            items.append(q)
        found = _search_many(core, items, kinds, scope, only)
        return {"results": [{"query": it["query"], "results": [_hit(h, now) for h in _relevant(hits, floor)[0]]}
                            for it, hits in zip(items, found)]}
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("empty query", "give some words to search for")
    proj = _project(core, project, cwd, strict=strict_project)
    hits = _search_many(core, [{"query": query, "project": proj, "k": int(k)}], kinds, scope, only)[0]
    kept, dropped = _relevant(hits, floor)
    return {"query": query, "project": proj, "memories": [_hit(h, now) for h in kept], "below_floor": dropped,
            "min_score": floor}


@op("list")
def list_op(core: Any, project: str | None = None, cwd: str | None = None, kinds: Sequence[str] | None = None,
            tags: Sequence[str] | None = None, session: str | None = None, since: Any = None, until: Any = None,
            pinned: bool | None = None, limit: int = 50, offset: int = 0, every_project: bool = False,
            oldest_first: bool = False, strict_project: bool = False) -> dict:
    """Memories by filter, newest first: ``{"project", "memories": [...], "total", "offset"}`` (``total``:
    how many match without the limit). ``every_project``: all projects (``project`` ignored)."""
    from . import when

    kinds = [kd for x in kinds if (kd := _kind(x)) is not None] if kinds else None
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
        raise InvalidInput(f"limit must be a whole number from 1 to {MAX_LIST}, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput(f"offset must be a whole number >= 0, got {offset!r}")
    if session is not None and (not isinstance(session, str) or not session.strip()):
        raise InvalidInput("session must be a session id")
    lo, hi = when.window(since, until)
    proj = None if every_project else _project(core, project, cwd, strict=strict_project)
    filters = {"project": proj, "kinds": kinds, "session": session, "pinned": pinned, "since": lo, "until": hi,
               "tags": normalize_tags(tags)}
    rows = core.store.list(limit=limit, offset=offset, newest_first=not oldest_first, **filters)
    now = time.time()
    return {"project": proj, "memories": [public(r, now) for r in rows], "total": core.store.count_where(**filters),
            "offset": offset, "since": lo, "until": hi}


@op("edit")
def edit_op(core: Any, id: Any, text: str | None = None, kind: str | None = None, pin: bool | None = None,
            tags: Sequence[str] | str | None = None, add_tags: Sequence[str] | str | None = None,
            remove_tags: Sequence[str] | str | None = None, source: str = "cli") -> dict:
    """Change a memory in place: ``text`` (privacy pass, re-embedded, search rows and neighbours' context
    rebuilt; a user prompt's standing instructions re-detected from the new text), ``kind``, ``pin``, ``tags`` (replace) / ``add_tags`` / ``remove_tags``. Audited as an ``edit``.
    -> ``{"memory": {...}, "changed": [fields], "before": {...}}``."""
    if source not in SOURCES:
        raise InvalidInput(f"unknown source {source!r}", f"one of: {', '.join(SOURCES)}")
    mid = _id(id)
    if all(v is None for v in (text, kind, pin, tags, add_tags, remove_tags)):
        raise InvalidInput("nothing to change", "give a new text, kind, pin or tags")
    if pin is not None and not isinstance(pin, bool):
        raise InvalidInput(f"pin must be true or false, got {pin!r}")
    before = core.store.get(mid)
    args: dict[str, Any] = {"kind": _kind(kind), "pinned": pin, "tags": tags, "add_tags": add_tags,
                            "remove_tags": remove_tags, "actor": source}
    vector = None
    if text is not None:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("the new text is empty", "give the text the memory should say")
        cleaned = privacy.clean(text)
        if not cleaned.text:
            raise InvalidInput("nothing left of the new text after removing <private> text")
        flags = sorted((set(before["flags"]) - {"redacted", "suspicious-instruction"}) | set(cleaned.flags))
        item = {"text": cleaned.text}
        capture.embed_items(core, [item])
        vector = item.get("embedding")
        args.update(text=cleaned.text, flags=flags, embedding=vector, model=item.get("model"))
    after = core.store.edit(mid, **args)
    changed = [f for f in ("text", "kind", "pinned", "tags", "flags") if after[f] != before[f]]
    if "text" in changed:
        from . import recall

        recall.replace_vector(core, mid, after["project"], vector)
        try:  # derived search text of its neighbours quotes the old text
            recall.update_contexts(core.store, [mid])
        except Exception:  # noqa: BLE001 - the edit is stored; only the neighbours' keyword context lags
            from ..logs import get_logger

            get_logger("memory").exception("context update after edit failed for %d", mid)
        _observe_edited(core, after, vector)
    now = time.time()
    return _audit_note(core, {"memory": public(after, now), "changed": changed, "before": public(before, now)})


def _observe_edited(core: Any, memory: dict, vector: Any) -> None:
    """A captured user prompt's new text may set or lift standing instructions, as when it was first captured
    (the store dropped the rules of its old text). What `remember` or `import` stored, and rule sentences split
    from a prompt, never went through the detector, so they do not now either."""
    if memory["role"] != "user" or memory["source"] != "hook" or memory["meta"].get("derived_from"):
        return
    from .standing import api as standing

    try:
        standing.observe(core, memory["text"], memory["project"], memory["session"], int(memory["id"]),
                         memory["flags"], {memory["text"]: vector} if vector is not None else None,
                         created=memory["created"])
    except Exception:  # noqa: BLE001 - the edit is stored; a detector failure must not undo it
        from ..logs import get_logger

        get_logger("memory").exception("standing-instruction detection failed after edit of %s", memory["id"])


@op("forget")
def forget(core: CoreLike, id: Any = None, project: str | None = None, session: str | None = None,
           source: str = "cli") -> dict:
    # A named project or session that holds nothing is an error: "forgot 0" reads as done when it was a typo.
    """Forget one memory (``id``), a whole project or a session; vectors and FTS rows go too."""
    if sum(x is not None for x in (id, project, session)) != 1:
        raise InvalidInput("forget needs exactly one of: an id, --project, --session")
    whole_project = None
    if id is not None:
        removed = core.store.forget(_id(id), actor=source)
    elif project is not None:
        whole_project = _project(core, project, strict=True)
        removed = core.store.forget(project=whole_project, actor=source)
    else:
        removed = core.store.forget(session=session, actor=source)
        if not removed:
            raise NotFound(f"no memories in session {session!r}", "`compass-hook list --all-projects` shows sessions")
    from . import recall, wipe

    audit = core.store.audit_error()
    recall.invalidate(core, [r["id"] for r in removed])
    # Then what they leave behind: drift alerts, neighbours' FTS context, FTS segments, free pages, the WAL.
    wiped = wipe.after_forget(core, removed, project=whole_project, session=session)
    out: dict[str, Any] = {"removed": len(removed), "ids": [r["id"] for r in removed], **wiped}
    if id is not None:
        r = removed[0]
        out["memory"] = {"id": r["id"], "removed": True, "kind": r["kind"], "text": r["text"]}
    if audit:
        out["audit_pending"] = audit
    return out


def _opt_str(raw: dict, name: str, allow_number: bool = False) -> str | None:
    """An optional string field; a number too where ids are often numbers (ref, session)."""
    value = raw.get(name)
    if value is None:
        return None
    if allow_number and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    if not isinstance(value, str):
        raise InvalidInput(f"'{name}' must be a string{' or a number' if allow_number else ''}, got {json.dumps(value)[:60]}")
    return value


def _import_item(raw: Any, project: str | None, core: CoreLike, extra_tags: Sequence[str] = ()) -> dict:
    """One import line as a store item; InvalidInput names the first bad field."""
    if not isinstance(raw, dict):
        raise InvalidInput("not a JSON object")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("missing or empty 'text'")
    cleaned = privacy.clean(text)
    if not cleaned.text:
        raise InvalidInput("nothing left after removing <private> text")
    role = raw.get("role") or "user"
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}", f"one of: {', '.join(ROLES)}")
    kind = _kind(raw.get("kind")) or "note"
    ts = raw.get("ts", raw.get("created"))
    if ts is not None:
        from .transcript import parse_time

        parsed = None if isinstance(ts, bool) else parse_time(ts)
        if parsed is None or not math.isfinite(parsed):
            raise InvalidInput(f"unreadable ts {ts!r}", "unix seconds or ISO 8601")
        ts = parsed
    session = _opt_str(raw, "session", allow_number=True)
    ref = _opt_str(raw, "ref", allow_number=True)
    raw_project = raw.get("project")
    if raw_project is not None and not isinstance(raw_project, str):
        raise InvalidInput(f"'project' must be a string, got {json.dumps(raw_project)[:60]}")
    proj = project or (_project(core, raw_project) if raw_project else GLOBAL)
    key = _opt_str(raw, "key") or (f"ref:{ref}" if ref is not None else None)
    if key is None:  # no id from the caller: the same line imported twice is still one memory
        ident = "\x1f".join(str(x) for x in (session, role, kind, ts, cleaned.text))
        key = "imp:" + hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32]
    src = raw.get("source") or "import"
    if src not in SOURCES:
        src = "import"
    flags = raw.get("flags") or []
    if isinstance(flags, str):
        flags = [f for f in flags.split(",") if f]
    if not isinstance(flags, list) or not all(isinstance(f, str) and f and "," not in f for f in flags):
        raise InvalidInput(f"'flags' must be a list of strings, got {json.dumps(raw.get('flags'))[:60]}")
    pinned = raw.get("pinned", False)
    if pinned is None:
        pinned = False
    if not isinstance(pinned, bool) and pinned not in (0, 1):
        raise InvalidInput(f"'pinned' must be true or false, got {json.dumps(pinned)[:60]}")
    context = _opt_str(raw, "context") or ""
    meta = raw.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidInput(f"'meta' must be an object, got {json.dumps(meta)[:60]}")
    try:
        tags = normalize_tags(raw.get("tags")) + normalize_tags(extra_tags)
    except InvalidInput as exc:
        raise InvalidInput(f"'tags': {exc.message}", exc.hint) from None
    return {"tags": sorted(set(tags)), "text": cleaned.text, "project": proj, "session": session, "role": role,
            "kind": kind, "created": ts, "ref": ref, "pinned": bool(pinned),
            "flags": sorted(set(flags) | set(cleaned.flags)), "source": src, "dedupe_key": key,
            "context": context[:MAX_CONTEXT], "meta": meta or None}


@op("import_batch")
def import_batch(core: CoreLike, items: Sequence[Any], project: str | None = None, first_line: int = 1,
                 lines: Sequence[int] | None = None, tags: Sequence[str] | str | None = None) -> dict:
    """Import memories (one embedding batch). Bad items are reported with their line
    (``lines[i]``, else ``first_line`` + i) and skipped; the rest are stored, also when the store rejects one
    of them (the batch is then written line by line to find it). Items with a ``ref``
    (or an exported ``key``) are not imported twice into the same project. ``tags`` are added to every line's
    own ``tags``."""
    extra = normalize_tags(tags)
    if len(items) > MAX_BATCH:
        raise InvalidInput(f"at most {MAX_BATCH} items per call", "split the batch")
    proj = _project(core, project) if project else None
    good: list[dict] = []
    where: list[int] = []
    errors: list[dict] = []

    def line(i: int) -> int:
        return lines[i] if lines and i < len(lines) else first_line + i

    for i, raw in enumerate(items):
        try:
            good.append(_import_item(raw, proj, core, extra))
            where.append(line(i))
        except CompassError as exc:
            errors.append({"line": line(i), "error": exc.message})
        except (TypeError, ValueError, OverflowError) as exc:  # a value no check above foresaw: still one line
            errors.append({"line": line(i), "error": f"{type(exc).__name__}: {exc}"})
    capture.embed_items(core, good)
    try:
        added = capture.store_items(core, good, actor="import")
    except StoreError:
        raise  # the store itself (disk full, locked, corrupt): no line is at fault, the caller stops
    except CompassError:
        added = []
        for item, n in zip(good, where):  # one item the store rejects must not drop the others
            try:
                added += capture.store_items(core, [item], actor="import")
            except StoreError:
                raise
            except CompassError as exc:
                errors.append({"line": n, "error": exc.message})
    new = sum(1 for a in added if a.new)
    errors.sort(key=lambda e: e["line"])
    return _audit_note(core, {"added": new, "duplicates": len(added) - new, "errors": errors})


EXPORT_FIELDS = ("id", "text", "ref", "project", "session", "role", "kind", "ts", "pinned", "flags", "source", "key",
                 "context", "meta", "tags")


@op("export")
def export(core: CoreLike, project: str | None = None, after_id: int = 0, limit: int = 1000,
           max_bytes: int = EXPORT_PAGE_BYTES, strict_project: bool = True) -> dict:
    """One page of memories as import lines (``ts`` = created, ``key`` = dedupe key),
    oldest id first, at most ``limit`` rows and about ``max_bytes`` of JSON (always at least one row);
    ``next_after`` (the id to continue after) is None on the last page."""
    proj = _project(core, project, strict=strict_project) if project else None
    limit = max(1, min(int(limit), 10_000))
    budget = max(1, min(int(max_bytes), EXPORT_PAGE_BYTES))
    rows: list[dict] = []
    size = 0
    full = False
    for r in core.store.iter_rows(project=proj, after_id=int(after_id), batch=min(limit, 500)):
        row = {"id": r["id"], "text": r["text"], "ref": r["ref"], "project": r["project"],
               "session": r["session"], "role": r["role"], "kind": r["kind"], "ts": r["created"],
               "pinned": r["pinned"], "flags": r["flags"], "source": r["source"], "key": r["dedupe_key"],
               "context": r["context"] or None, "meta": r["meta"] or None, "tags": r["tags"] or None}
        cost = len(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        if rows and (size + cost > budget or len(rows) >= limit):
            full = True
            break
        rows.append(row)
        size += cost
    return {"rows": rows, "next_after": rows[-1]["id"] if full else None}


@op("constraints")
def constraints_op(core: CoreLike, project: str | None = None, cwd: str | None = None, include_global: bool = True,
                   strict_project: bool = False) -> dict:
    """The project's rules: pinned memories, constraints and corrections (newest first)."""
    proj = _project(core, project, cwd, strict=strict_project)
    scopes = [proj] + ([GLOBAL] if include_global and proj != GLOBAL else [])
    now = time.time()
    rows: list[dict] = []
    for scope in scopes:
        rows += core.store.list(project=scope, kinds=("constraint", "correction"))
        rows += [r for r in core.store.list(project=scope, pinned=True) if r["kind"] not in ("constraint", "correction")]
    seen: set[int] = set()
    out = []
    for r in sorted(rows, key=lambda r: (not r["pinned"], -r["created"])):
        if r["id"] not in seen:
            seen.add(r["id"])
            out.append(public(r, now))
    return {"project": proj, "constraints": out}


@op("ingest_transcript")
def ingest_transcript_op(core: CoreLike, transcript_path: str, cwd: str | None = None, session_id: str | None = None) -> dict:
    """Ingest a Claude Code transcript's turns not stored yet (idempotent), standing instructions included."""
    from . import api

    event = {"transcript_path": transcript_path, "cwd": cwd, "session_id": session_id}
    return {"added": api.ingest_transcript(core, event)}
