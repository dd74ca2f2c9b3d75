"""The store of standing instructions (table ``instructions``, schema v4 in :mod:`..migrations`), kept through
the memory store's writer path (``Store.write`` / ``Store.read``).

- A rule holds where it was said: ``session`` scope in that session of that project, ``project`` scope in
  every session of the project, ``global`` scope everywhere (``project = __global__``).
- A revocation retires the visible active rules it is about: those sharing one of its subjects, else the
  most similar one (embedding cosine, or character overlap for Chinese) above a floor; nothing when nothing
  matches. A newer rule retires the visible rules of the same or a narrower scope with its main subject
  (replacement) or its exact text (a restated rule: one row, the newest); a newer rule that says it replaces
  one ("instead", "actually", "改成") and shares no subject retires the most similar one; a newer "use X" retires an
  older "use Y" of the same kind of tool (package manager, test framework, naming case, ...: ``cues.TOOL_KINDS``). A
  broader rule on the same subject or kind stays active and the newer, narrower one wins when both are shown
  (:func:`in_force`).
- Retired rules stay as history (``state`` revoked / replaced, when, by which memory).
- A session that continues another one (compaction with a new session id, ``--resume``) inherits its active
  session rules as copies (``inherited_from``).

The lookup every prompt makes (:func:`visible`) is one indexed query.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import replace
from typing import Any, Callable, Collection, Iterable, Sequence

from ..store import GLOBAL
from .cues import NEGATIVE, POSITIVE, plain_question, project_parts, tool_kinds
from .detect import Rule

COLUMNS = ("id", "project", "session", "scope", "text", "subjects", "lang", "prob", "created", "origin", "memory_id",
           "state", "retired", "retired_by", "inherited_from")
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM instructions"
# A revocation naming no known subject retires the most similar active rule only above these floors.
REVOKE_MIN_COSINE = 0.45
REVOKE_MIN_OVERLAP = 0.35
# In English character overlap is loose (a short sentence shares a third of its bigrams with almost any other), so
# there it counts only with at least this cosine: "switch the comments to English" for "write code comments in
# Spanish", not "never mind the earlier restriction, the release is out" for "type hints everywhere" (docs/memory.md).
REVOKE_OVERLAP_COSINE = 0.3
# Failing those, a revocation that names nothing of its rule ("ok, feel free to go long from here", "那个库的禁令解除了")
# lifts a rule said earlier in the same session: the only one, or of several the one clearly most like it (English,
# cosine at least this and this far ahead of the next). docs/memory.md, "Revocations that name nothing".
REVOKE_FALLBACK_COSINE = 0.2
REVOKE_FALLBACK_MARGIN = 0.1
# An amendment (a sentence below the detector's bar that changes a rule in force) must be this like that rule
# (English, MiniLM cosine) besides sharing a subject with it. docs/memory.md, "Amendments".
AMEND_MIN_COSINE = 0.5
# ... and the detector must score it at least this (well below its trained bar): below, "Hmm, OK" and the like.
AMEND_MIN_PROB = 0.2
# ... and it must name a quantity (a limit changed: "make it 50 lines", "改成三段以内"): without one, a one-off
# exception ("use pandas for this quick exploration") or a task ("把缓存层换成 Redis") read as amendments on the
# dev negatives and would have retired the standing rule they touch.
_QUANTITY = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
                       r"forty|fifty|sixty|hundred|thousand|dozen|half|single|double)\b|[二两三四五六七八九十百千万半]|一[个段句行条次页点张篇字份项]", re.I)
# A SessionStart(compact) with a new session id continues the session whose PreCompact came this recently.
HANDOFF_WINDOW_S = 600.0
_REPLACING = POSITIVE["replace"]
_LIFTING = POSITIVE["revoke"]
_ONE_OFF = NEGATIVE["one_off"]
_NARROWER = {"global": ("global", "project", "session"), "project": ("project", "session"), "session": ("session",)}


def fold(text: str) -> str:
    return " ".join(text.lower().split())


def text_hash(text: str) -> str:
    return hashlib.sha256(fold(text).encode("utf-8")).hexdigest()


def _row(r: Sequence[Any]) -> dict[str, Any]:
    d = dict(zip(COLUMNS, r))
    d["subjects"] = [s for s in (d["subjects"] or "").split("|") if s]
    return d


def _visible_where(project: str, session: str | None, sessions: Sequence[str] = ()) -> tuple[str, list[Any]]:
    """Rows a prompt in (project, session) sees: global ones, the project's, and its session's."""
    wanted = [s for s in (session, *sessions) if s]
    clause = "(project = ? AND scope = 'global') OR (project = ? AND scope = 'project')"
    args: list[Any] = [GLOBAL, project]
    if wanted:
        clause += f" OR (project = ? AND scope = 'session' AND session IN ({','.join('?' * len(wanted))}))"
        args += [project, *wanted]
    return f"({clause})", args


def visible(store: Any, project: str | None, session: str | None) -> list[dict[str, Any]]:
    """The active rules a prompt in (project, session) is under, newest first."""
    where, args = _visible_where(project or GLOBAL, session)
    rows = store.read(f"{_SELECT} WHERE state = 'active' AND {where} ORDER BY created DESC, id DESC", args)
    return [_row(r) for r in rows]


def in_force(rules: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rules`` (newest first) without those a newer one overrides: the same main subject, the same text, or
    a tool of the same kind to use."""
    seen_subject: set[str] = set()
    seen_text: set[str] = set()
    seen_tools: list[tuple[set[str], set[str]]] = []
    out = []
    for r in rules:
        main = r["subjects"][0] if r["subjects"] else None
        key = fold(r["text"])
        kinds, parts = set(tool_kinds(r["text"])), project_parts(r["text"])
        if key in seen_text or (main and main in seen_subject) or any(_same_tool_use(kinds, parts, k, p) for k, p in seen_tools):
            continue
        seen_text.add(key)
        if main:
            seen_subject.add(main)
        if kinds:
            seen_tools.append((kinds, parts))
        out.append(r)
    return out


def _same_tool_use(kinds: set[str], parts: set[str], other_kinds: set[str], other_parts: set[str]) -> bool:
    """Two rules to use a tool of the same kind for the same part of the project (or one naming no part): the
    newer replaces the older. "pytest for the Python tests" and "Jest for the frontend" hold side by side."""
    return bool(kinds & other_kinds) and not (parts and other_parts and not parts & other_parts)


def history(store: Any, project: str | None = None, include_retired: bool = False,
            limit: int = 200) -> list[dict[str, Any]]:
    """Rules of a project (None: all), newest first; retired ones too when asked."""
    where, args = [], []
    if project is not None:
        where.append("project IN (?, ?)")
        args += [project, GLOBAL]
    if not include_retired:
        where.append("state = 'active'")
    sql = f"{_SELECT} WHERE {' AND '.join(where) or '1'} ORDER BY created DESC, id DESC LIMIT {int(limit)}"
    return [_row(r) for r in store.read(sql, args)]


def sources(store: Any, memory_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """Rules (any state) by the memory they were said in."""
    ids = [int(i) for i in memory_ids]
    out: dict[int, list[dict[str, Any]]] = {}
    if not ids:
        return out
    rows = store.read(f"{_SELECT} WHERE memory_id IN ({','.join('?' * len(ids))})", ids)
    for r in rows:
        d = _row(r)
        out.setdefault(int(d["memory_id"]), []).append(d)
    return out


# --------------------------------------------------------------------------- changes


def _overlap(a: str, b: str) -> float:
    """Share of the shorter text's character bigrams the other has (Chinese has no spaces, and an English-only
    model cannot read it; a revocation is short and names a few words of the rule it lifts)."""
    def grams(t: str) -> set[str]:
        t = re.sub(r"[\s\W_]+", "", t.lower())
        return {t[i:i + 2] for i in range(len(t) - 1)}

    ga, gb = grams(a), grams(b)
    return len(ga & gb) / min(len(ga), len(gb)) if ga and gb else 0.0


# Words that say nothing about what a rule is about: function words and the vocabulary every rule uses.
_GENERIC_EN = frozenset("""
a an the and or but if then than so to of in on at for with without by from into onto about as is are was were be
been being do does did done have has had i me my we our you your it its this that these those there here what
which who when where why how all any every each some no not never always ever again now anymore longer more less
please just only also still can could would will should must may might shall let lets let's ok okay actually
thing things stuff way use using used write writing written say said tell told give put make keep stop start
answer answers reply replies response responses message messages chat conversation session project repo code
rule rules from now on going forward rest fine back need needs want like instead rather drop go get it's i'm
i've don't doesn't didn't isn't aren't can't won't you're we're that's there's what's one first
""".split())
_GENERIC_ZH = frozenset("""
以后 之后 今后 接下来 回答 回复 每次 每个 不要 不用 可以 这个 那个 项目 仓库 对话 一下 一律 统一 所有 我们 你的 我的
了吧 用了 再用 不再 现在 先给 都用 都要 以内 规矩 要求 禁令 取消 恢复 正常 作废 那条
""".split())
_WORD = re.compile(r"[a-z][a-z0-9_.+#-]*[a-z0-9+#]|[a-z]", re.I)
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def salient(text: str) -> set[str]:
    """What a rule is about, as terms: English content words (stemmed) and Chinese character bigrams, without
    the vocabulary every rule uses."""
    low = text.lower()
    terms = {_stem(w) for w in _WORD.findall(low) if len(w) >= 3 and w not in _GENERIC_EN}
    for run in _CJK_RUN.findall(text):
        terms.update(b for b in (run[i:i + 2] for i in range(len(run) - 1)) if b not in _GENERIC_ZH)
    return terms


def _most_similar(rule: Rule, candidates: list[dict[str, Any]],
                  similarity: Callable[[str, list[str]], list[float]] | None) -> list[dict[str, Any]]:
    """The single candidate most like ``rule``, when it clearly is: embedding cosine (English), character
    overlap (Chinese; in English only with some cosine too, and not at all without the embedding, which only tests
    leave out), or two or more shared salient terms ("stop quoting line numbers" for "quote the line numbers");
    [] otherwise."""
    if not candidates:
        return []
    texts = [c["text"] for c in candidates]
    cos = similarity(rule.text, texts) if similarity and rule.lang == "en" else None
    mine = salient(rule.text)
    shared = [len(mine & salient(t)) for t in texts]
    scored = []
    for i, t in enumerate(texts):
        overlap = _overlap(rule.text, t)
        near = overlap >= REVOKE_MIN_OVERLAP
        if cos is not None:
            ok = cos[i] >= REVOKE_MIN_COSINE or (near and cos[i] >= REVOKE_OVERLAP_COSINE)
        else:
            ok = near and rule.lang == "zh"
        if ok or shared[i] >= 2:
            scored.append((shared[i], cos[i] if cos is not None else overlap, i))
    if not scored:
        return []
    return [candidates[max(scored)[2]]]


def _on_its_subjects(rule: Rule, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates with ``rule``'s main subject, else with any of its subjects. Main first: "you don't have to ask
    before adding dependencies anymore" lifts the dependency rule, not every rule about asking first."""
    main = rule.subjects[:1]
    hit = [c for c in candidates if main and main[0] in c["subjects"]]
    if not hit:
        subj = set(rule.subjects)
        hit = [c for c in candidates if subj & set(c["subjects"])]
    return hit


def _revoke_targets(rule: Rule, candidates: list[dict[str, Any]],
                    similarity: Callable[[str, list[str]], list[float]] | None,
                    said_here: Collection[int] = ()) -> list[dict[str, Any]]:
    """The rules a revocation lifts. ``said_here``: ids of the candidates said earlier in this session."""
    hit = _on_its_subjects(rule, candidates)
    if hit:
        return hit
    # No shared subject: the single most similar rule, when it is clearly about the same thing.
    found = _most_similar(rule, candidates, similarity)
    if found:
        return found
    # Nothing of the rule named: a revocation is about a rule the user set, most likely in this conversation. Rules
    # from other sessions (global ones, the project's standing ones) are not guessed at, nor is a revocation that
    # names a subject no rule in force has ("drop the hand-holding" (tone) lifts no rule about clone()): the rule it
    # lifts was never recorded.
    if rule.subjects:
        return []
    recent = [c for c in candidates if c["id"] in said_here]
    if len(recent) == 1:
        return recent
    if len(recent) > 1 and similarity and rule.lang == "en":
        cos = similarity(rule.text, [c["text"] for c in recent])
        order = sorted(range(len(recent)), key=lambda i: -cos[i])
        if cos[order[0]] >= REVOKE_FALLBACK_COSINE and cos[order[0]] - cos[order[1]] >= REVOKE_FALLBACK_MARGIN:
            return [recent[order[0]]]
    return []


def _said_in(store: Any, candidates: Sequence[dict[str, Any]], session: str | None) -> set[int]:
    """Ids of ``candidates`` said in ``session``: session-scoped to it, or captured from one of its prompts."""
    if not session:
        return set()
    here = {int(c["id"]) for c in candidates if c["session"] == session}
    mids = [int(c["memory_id"]) for c in candidates if c["memory_id"] is not None]
    if mids:
        rows = store.read(f"SELECT id FROM memories WHERE session = ? AND id IN ({','.join('?' * len(mids))})",
                          [session, *mids])
        said = {int(r[0]) for r in rows}
        here |= {int(c["id"]) for c in candidates if c["memory_id"] in said}
    return here


def _active_visible(store: Any, project: str, session: str | None) -> list[dict[str, Any]]:
    where, args = _visible_where(project, session)
    return [_row(r) for r in store.read(f"{_SELECT} WHERE state = 'active' AND {where}", args)]


def amendment(store: Any, candidates: Sequence[Rule], project: str | None, session: str | None,
              similarity: Callable[[str, list[str]], list[float]] | None = None) -> tuple[Rule, int] | None:
    """The first of ``candidates`` (sentences the detector scored below its bar) that changes a rule in force,
    as (the rule to record, the id of the rule it replaces); None when none does.

    "Thinking about it, 30 lines is too strict; make it 50 lines instead." reads as a rule only beside "keep
    functions under 30 lines": on its own it scores 0.3. Left out, the old rule stayed in force and was shown
    with every prompt after the user changed it. Taken only when the sentence says it changes something (the
    detector's replace cues: "instead", "make it", "too strict", 改成), names a quantity, is not a question,
    shares a subject with exactly one visible rule, and is clearly about the same thing: cosine >=
    :data:`AMEND_MIN_COSINE` (English), character overlap >= :data:`REVOKE_MIN_OVERLAP` (Chinese), or two shared
    salient terms. It takes that rule's scope unless it names one."""
    live = _active_visible(store, project or GLOBAL, session)
    if not live:
        return None
    for rule in candidates:
        if (rule.action != "set" or not _REPLACING.search(rule.text) or not _QUANTITY.search(rule.text)
                or plain_question(rule.text)):
            continue
        mine = set(rule.subjects)
        near = [c for c in live if mine & set(c["subjects"])]
        if not near:
            continue
        texts = [c["text"] for c in near]
        cos = similarity(rule.text, texts) if similarity and rule.lang == "en" else None
        terms = salient(rule.text)
        hits = [c for i, c in enumerate(near)
                if (cos is not None and cos[i] >= AMEND_MIN_COSINE) or len(terms & salient(c["text"])) >= 2
                or (rule.lang == "zh" and _overlap(rule.text, c["text"]) >= REVOKE_MIN_OVERLAP)]
        if len(hits) != 1:  # none, or it could be about either: leave the rules as they are
            continue
        target = hits[0]
        scope = rule.scope if rule.scope_named else target["scope"]
        return replace(rule, scope=scope), int(target["id"])
    return None


def lift(store: Any, candidates: Sequence[Rule], project: str | None, session: str | None) -> list[int]:
    """Ids of the rules in force that one of ``candidates`` (sentences the detector scored below its bar) lifts:
    [] when none does.

    "ok, the length cap is off now, I actually want the deep version" scores just below the bar: left out, "keep
    every answer under 100 words" stayed in force. Taken only when the sentence has a lift cue (the detector's
    revoke cues: "is off", "feel free to", "can ... again", 可以...了), is neither a one-off ("这封可以语气强硬一点":
    this email only; the one dev negative that lifted a rule without this condition) nor a question, and its main
    subject is a subject of exactly one visible rule (two rules on it: it could be about either). Measured in
    docs/memory.md, "Scopes, revocation, replacement"."""
    live = _active_visible(store, project or GLOBAL, session)
    for rule in candidates:
        if not rule.subjects or not _LIFTING.search(rule.text) or _ONE_OFF.search(rule.text) or plain_question(rule.text):
            continue
        hits = [c for c in live if rule.subjects[0] in c["subjects"]]
        if len(hits) == 1:
            return [int(hits[0]["id"])]
    return []


def apply(store: Any, rules: Sequence[Rule], project: str | None, session: str | None, memory_id: int | None,
          created: float | None = None, similarity: Callable[[str, list[str]], list[float]] | None = None,
          capture_key: str | None = None, replaces: Sequence[int] = (), revokes: Sequence[int] = ()) -> dict[str, list[int]]:
    """Record what one prompt said: new rules in, rules it revokes or replaces retired. Returns the ids
    ``{"added": [...], "retired": [...]}``. ``similarity(text, texts)``: cosines, for a revocation naming no
    known subject (None: character overlap only). ``replaces``: rule ids the prompt replaces whatever its
    subjects (an :func:`amendment`'s target); ``revokes``: rule ids it lifts (a :func:`lift`'s)."""
    project = project or GLOBAL
    now = time.time() if created is None else float(created)
    candidates = _active_visible(store, project, session)
    plan_retire: list[tuple[int, str]] = [(int(i), "replaced") for i in replaces] + [(int(i), "revoked") for i in revokes]
    plan_add: list[tuple] = []
    said_here = _said_in(store, candidates, session) if any(r.action == "revoke" for r in rules) else set()
    for rule in rules:
        live = [c for c in candidates if c["id"] not in {i for i, _ in plan_retire}]
        if rule.action == "revoke":
            for c in _revoke_targets(rule, live, similarity, said_here):
                plan_retire.append((c["id"], "revoked"))
            continue
        if not replaces and _LIFTING.search(rule.text):
            # "You can write in English again", "feel free to use pnpm": read as a rule of its own, but it lifts the
            # rules in force on its subjects. Only those: the similarity a revocation falls back on lifts unrelated
            # rules for such sentences ("Forget five lines, ten lines is fine" lifting a rule about producer
            # settings; docs/memory.md), and guessing from the session alone would make every new permission a
            # lift. The sentence stays a rule: it says what to do instead.
            plan_retire.extend((c["id"], "revoked") for c in _on_its_subjects(rule, live))
            live = [c for c in candidates if c["id"] not in {i for i, _ in plan_retire}]
        main = rule.subjects[0] if rule.subjects else None
        key = fold(rule.text)
        narrower = [c for c in live if c["scope"] in _NARROWER[rule.scope]]
        same = [c for c in narrower if fold(c["text"]) == key or (main is not None and c["subjects"][:1] == [main])]
        if replaces:  # an amendment: its target is decided (amendment()), not guessed again here
            same = []
        elif not same and _REPLACING.search(rule.text):
            # "Actually, make it ... instead", "改成...吧": it changes an earlier rule; with no subject in common,
            # the one it is most like, when it is clearly like one.
            same = _most_similar(rule, narrower, similarity)
        if not same and not replaces:
            # "Use pnpm for every install" after "use yarn for every install command": no subject or word in common
            # but the tool, and a project uses one package manager (test framework, naming case, ...) at a time.
            kinds, parts = set(tool_kinds(rule.text)), project_parts(rule.text)
            same = [c for c in narrower if _same_tool_use(kinds, parts, set(tool_kinds(c["text"])), project_parts(c["text"]))
                    ] if kinds else []
        for c in same:
            plan_retire.append((c["id"], "replaced"))
        row_project = GLOBAL if rule.scope == "global" else project
        row_session = session if rule.scope == "session" else None
        subjects = "|" + "|".join(rule.subjects) + "|" if rule.subjects else ""
        plan_add.append((row_project, row_session, rule.scope, rule.text, subjects, rule.lang, round(rule.prob, 4), now,
                         project, memory_id, text_hash(rule.text), None if memory_id is not None else capture_key))

    def run(conn: Any) -> dict[str, list[int]]:
        retired = []
        for rid, state in plan_retire:
            cur = conn.execute("UPDATE instructions SET state = ?, retired = ?, retired_by = ? WHERE id = ? AND "
                               "state = 'active'", (state, now, memory_id, rid))
            if cur.rowcount:
                retired.append(rid)
        added = []
        for values in plan_add:
            cur = conn.execute("INSERT INTO instructions (project, session, scope, text, subjects, lang, prob, created, "
                               "origin, memory_id, hash, capture_key) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", values)
            added.append(int(cur.lastrowid))
        return {"added": added, "retired": retired}

    if not plan_retire and not plan_add:
        return {"added": [], "retired": []}
    return store.write(run)


def note_handoff(store: Any, project: str | None, session: str | None, when: float | None = None) -> None:
    """PreCompact: remember that (project, session) is being compacted."""
    if not session:
        return
    at = time.time() if when is None else when
    store.write(lambda conn: conn.execute(
        "INSERT OR REPLACE INTO session_handoffs (project, session, created) VALUES (?,?,?)",
        (project or GLOBAL, session, at)))


def handoff_source(store: Any, project: str | None, session: str | None, window_s: float = HANDOFF_WINDOW_S,
                   now: float | None = None) -> str | None:
    """The session a SessionStart(compact) with id ``session`` continues: the latest other session of the
    project whose PreCompact came within ``window_s``; None when it is the same id or none did."""
    at = time.time() if now is None else now
    rows = store.read("SELECT session FROM session_handoffs WHERE project = ? AND created >= ? ORDER BY created DESC "
                      "LIMIT 1", (project or GLOBAL, at - window_s))
    if not rows or rows[0][0] == session:
        return None
    return str(rows[0][0])


def inherit(store: Any, project: str | None, old_sessions: Iterable[str], session: str | None) -> list[int]:
    """Copy the active session rules of ``old_sessions`` (same project) into ``session``, once each. A rule one of
    ``old_sessions`` lifted or replaced in its copy (session A compacted into B, the rule revoked in B, B
    compacted or resumed into C whose transcript still names A) is not brought back from the original."""
    project = project or GLOBAL
    olds = [s for s in dict.fromkeys(old_sessions) if s and s != session]
    if not session or not olds:
        return []

    def run(conn: Any) -> list[int]:
        marks = ",".join("?" * len(olds))
        rows = conn.execute(f"{_SELECT} WHERE state = 'active' AND scope = 'session' AND project = ? AND session IN "
                            f"({marks}) ORDER BY created, id", [project, *olds]).fetchall()
        have = {r[0] for r in conn.execute("SELECT inherited_from FROM instructions WHERE project = ? AND session = ? AND "
                                           "inherited_from IS NOT NULL", (project, session)).fetchall()}
        have_text = {r[0] for r in conn.execute("SELECT hash FROM instructions WHERE state = 'active' AND project = ? AND "
                                                "session = ?", (project, session)).fetchall()}
        retired = {r[0] for r in conn.execute(
            f"SELECT COALESCE(inherited_from, id) FROM instructions WHERE state != 'active' AND scope = 'session' AND "
            f"project = ? AND session IN ({marks}, ?)", [project, *olds, session]).fetchall()}
        out = []
        for r in rows:
            d = _row(r)
            root = d["inherited_from"] or d["id"]
            if root in have or root in retired or text_hash(d["text"]) in have_text:
                continue
            cur = conn.execute(
                "INSERT INTO instructions (project, session, scope, text, subjects, lang, prob, created, origin, memory_id,"
                " inherited_from, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (project, session, "session", d["text"], "|" + "|".join(d["subjects"]) + "|" if d["subjects"] else "",
                 d["lang"], d["prob"], d["created"], d["origin"], d["memory_id"], root, text_hash(d["text"])))
            out.append(int(cur.lastrowid))
        return out

    return store.write(run)


def link_captures(conn: Any, stored: Iterable[tuple[int, str]]) -> None:
    """Rules recorded while their prompt waited in the capture spool get its memory id once it is stored
    (``stored``: (memory id, dedupe key)), so forgetting the prompt forgets them (ON DELETE CASCADE)."""
    conn.executemany("UPDATE instructions SET memory_id = ?, capture_key = NULL WHERE memory_id IS NULL AND "
                     "capture_key = ?", list(stored))
