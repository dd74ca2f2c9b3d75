"""Standing instructions: the detector (cues, sentences, rule text, scope, subjects), the store of active rules
(revocation, replacement, dedupe, scopes, inheritance over a compaction), the block on every prompt and in the
brief, whole rules in quotes, and deterministic hooks. Fake embedder (its detector weights are test data,
tests/fixtures/calibration/instructions/fake-64.json)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from compass_hooks.core import Core
from compass_hooks.errors import InvalidInput
from compass_hooks.memory import api, inject
from compass_hooks.memory.standing import active, cues, detect
from compass_hooks.memory.standing import api as standing
from compass_hooks.memory.standing.detect import Rule
from compass_hooks.worker.hooks import events, handlers
import testdirs

ROOT = testdirs.ROOT


@pytest.fixture
def core():
    c = Core()
    yield c
    c.close()


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def ups(repo, prompt, session="s1", n=0):
    return {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(repo), "prompt": prompt,
            "prompt_id": f"p{n}", "transcript_path": None}


def ctx(core, payload):
    return handlers.prepare_prompt(core, events.parse("UserPromptSubmit", payload), mem=api)


def say(core, repo, prompt, session="s1", n=0):
    """One prompt through the real handler; what Compass injected with it."""
    return handlers.handle(core, "UserPromptSubmit", ups(repo, prompt, session, n)).get("additionalContext", "")


def rules_block(context: str) -> str:
    return "\n\n".join(b for b in context.split("\n\n") if b.startswith("Compass — standing instructions"))


# --------------------------------------------------------------------------- cues


def test_sentences_skip_code_and_keep_offsets():
    text = "Why does this fail?\n\n```\n# never do this\nx = 1\n```\nAlso, never use pandas here. Thanks!"
    us = cues.units(text)
    assert [u.text for u in us] == ["Why does this fail?", "Also, never use pandas here.", "Thanks!"]
    assert all(text[u.start:u.end] == u.text for u in us)
    log = "Bash:\nset -euo pipefail\n# never continue after an error\nWhy does my script still exit?"
    assert "# never continue after an error" not in [u.text for u in cues.units(log)]


def test_preface_is_trimmed_only_when_it_says_nothing_of_the_rule():
    s = "Quick heads up before we start: no pandas in this codebase, ever."
    assert s[cues.trim_preface(s):] == "no pandas in this codebase, ever."
    kept = "A few ground rules for this project: ask before you run migrations."
    assert cues.trim_preface(kept) == 0
    # Only the talk is dropped, not the rule's first clause after it ("give distances in kilometres").
    s = "Quick request before we start: give distances in kilometres, not miles, in all your replies."
    assert s[cues.trim_preface(s):] == "give distances in kilometres, not miles, in all your replies."


@pytest.mark.parametrize("text, scope", [
    ("We use httpx, not requests, everywhere in this codebase.", "project"),
    ("Please don't use bold anywhere in your replies for the rest of this conversation.", "session"),
    ("In every project, always ask me before deleting any file.", "global"),
    ("本次对话中请用繁体中文回答。", "session"),
    ("这个仓库里任何情况下都不要 force push。", "project"),
    ("Keep answers short.", None),
])
def test_explicit_scope(text, scope):
    assert cues.explicit_scope(text) == scope


def test_subjects_put_the_known_subject_first_and_name_words_and_libraries():
    assert cues.subjects("End every reply with a TL;DR line.")[0] == "reply ending"
    assert cues.subjects('Instead of the TL;DR, end each answer with a "Next step:" line.')[0] == "reply ending"
    assert "word:delve" in cues.subjects('Avoid the word "delve" in anything you write for me.')
    assert cues.subjects("pandas is fine again")[0] == "lib:pandas"
    assert cues.subjects("You can go back to English now.")[0] == "language of replies"
    assert cues.subjects("以后回答都用中文。")[0] == "language of replies"


# --------------------------------------------------------------------------- detector


def _detect(core, text):
    return detect.detect(detect.weights_for(core), text, core.embedder.embed)


@pytest.mark.parametrize("text, rule, action, scope", [
    ("Never use pandas in this project; we're standardised on polars. Can you rewrite load_orders() accordingly?",
     "Never use pandas in this project; we're standardised on polars.", "set", "project"),
    ("From now on, reply in Chinese. Now, what does this regex do?", "From now on, reply in Chinese.", "set", "session"),
    ("You can use bold again.", "You can use bold again.", "revoke", None),
    ("以后回答都用中文。", "以后回答都用中文。", "set", None),
    ("这个项目不许用 pandas，统一用 polars。帮我把 load_orders 改一下。", "这个项目不许用 pandas，统一用 polars。", "set", "project"),
])
def test_detector_finds_the_rule_whole(core, text, rule, action, scope):
    found = _detect(core, text)
    assert found, text
    r = found[0]
    assert r.text == rule and text[r.start:r.end] == r.text
    assert r.action == action
    if scope:
        assert r.scope == scope


@pytest.mark.parametrize("text", [
    "My manager says never deploy on Fridays, what do you think?",
    "Should we ban pandas from the ingestion service, or is that overkill?",
    "Use pandas for this one chart, it's just a throwaway notebook cell.",
    "If I told you to always use tabs, would you?",
    "I always used argparse before I found click.",
    "Why does this fail?\n\nassert df.height > 0, 'orders must never be empty'",
    "Explain the causes of the French Revolution.",
])
def test_detector_leaves_mentions_of_rules_alone(core, text):
    assert _detect(core, text) == []


def test_shipped_weights_load_for_minilm_and_match_the_cue_families():
    w = detect.load_weights(detect.SHIPPED / "minilm.json")
    assert w.model == "minilm" and w.dim == 384
    assert w.rule.features == cues.FEATURE_NAMES + ["probe"]
    assert 0.0 < w.threshold < 1.0 and w.meta["dev"]["reference_oof"]["precision"] >= 0.96


def test_missing_weights_name_the_command_that_makes_them(core, monkeypatch, tmp_path):
    monkeypatch.setattr(detect, "SHIPPED", tmp_path)
    (core.paths.data / "calibration" / "instructions" / "fake-64.json").unlink()
    with pytest.raises(detect.NoWeights, match="instructions train"):
        detect.weights_for(core)


# --------------------------------------------------------------------------- the store


def _rule(text, action="set", scope="session", subjects=(), lang="en"):
    return Rule(action, text, 0, len(text), scope, True, tuple(subjects), 0.9, lang)


def test_scopes_revocation_replacement_and_dedupe(core):
    st = core.store
    active.apply(st, [_rule("No bold.", subjects=("bold",))], "/p", "s1", None)
    active.apply(st, [_rule("Never use pandas in this repo.", scope="project", subjects=("lib:pandas",))], "/p", "s1", None)
    active.apply(st, [_rule("Always state units.", scope="global")], "/p", "s1", None)
    assert {r["text"] for r in active.visible(st, "/p", "s1")} == {"No bold.", "Never use pandas in this repo.",
                                                                    "Always state units."}
    # Another session of the project: not the session rule. Another project: only the global one.
    assert {r["text"] for r in active.visible(st, "/p", "s2")} == {"Never use pandas in this repo.", "Always state units."}
    assert {r["text"] for r in active.visible(st, "/q", "s9")} == {"Always state units."}
    # A revocation retires by subject; a newer rule on the same subject replaces; the same text is kept once.
    active.apply(st, [_rule("You can use bold again.", action="revoke", subjects=("bold",))], "/p", "s1", None)
    active.apply(st, [_rule("Keep answers under 100 words.", subjects=("answer length",))], "/p", "s1", None)
    active.apply(st, [_rule("Actually, under 200 words.", subjects=("answer length",))], "/p", "s1", None)
    active.apply(st, [_rule("Always state units.", scope="global")], "/p", "s1", None)
    now = [r["text"] for r in active.visible(st, "/p", "s1")]
    assert "No bold." not in now and "Keep answers under 100 words." not in now
    assert now.count("Always state units.") == 1 and "Actually, under 200 words." in now
    states = {r["text"]: r["state"] for r in active.history(st, "/p", include_retired=True)}
    assert states["No bold."] == "revoked" and states["Keep answers under 100 words."] == "replaced"


def test_a_revocation_without_a_known_subject_retires_the_most_similar_rule_only(core):
    st = core.store
    active.apply(st, [_rule("Answer as if you were a grumpy sysadmin."), _rule("Use metric units.")], "/p", "s1", None)
    active.apply(st, [_rule("Use tabs.", scope="global")], "/p", "s0", None)  # said in another session
    active.apply(st, [_rule("Okay, enough of the grumpy sysadmin act.", action="revoke")], "/p", "s1", None)
    assert [r["text"] for r in active.visible(st, "/p", "s1")] == ["Use tabs.", "Use metric units."]
    # A revocation naming a subject no rule in force has lifts none: the rule it is about was never recorded.
    active.apply(st, [_rule("Drop the formal tone.", action="revoke", subjects=("tone",))], "/p", "s1", None)
    assert len(active.visible(st, "/p", "s1")) == 2
    # Naming nothing at all, it lifts the one rule said in this session (not the global one from another).
    active.apply(st, [_rule("Forget that, it's fine now.", action="revoke")], "/p", "s1", None)
    assert [r["text"] for r in active.visible(st, "/p", "s1")] == ["Use tabs."]
    active.apply(st, [_rule("You can stop that now.", action="revoke")], "/p", "s1", None)  # none said here: kept
    assert [r["text"] for r in active.visible(st, "/p", "s1")] == ["Use tabs."]


def test_a_revocation_naming_nothing_picks_among_this_sessions_rules_only_when_one_is_clearly_meant(core):
    """Several rules said in this session: the one clearly most like the revocation (cosine), else none."""
    st = core.store
    active.apply(st, [_rule("Keep every answer under 100 words."), _rule("Use British spelling.")], "/p", "s1", None)

    def cosines(cos):
        return lambda text, texts: [cos.get(t, 0.0) for t in texts]

    close = {"Keep every answer under 100 words.": 0.3, "Use British spelling.": 0.25}
    active.apply(st, [_rule("You can go on as long as you like now.", action="revoke")], "/p", "s1", None,
                 similarity=cosines(close))
    assert len(active.visible(st, "/p", "s1")) == 2  # 0.05 apart: not clear, nothing lifted
    clear = {"Keep every answer under 100 words.": 0.32, "Use British spelling.": 0.1}
    active.apply(st, [_rule("You can go on as long as you like now.", action="revoke")], "/p", "s1", None,
                 similarity=cosines(clear))
    assert [r["text"] for r in active.visible(st, "/p", "s1")] == ["Use British spelling."]


def test_in_english_character_overlap_alone_does_not_pick_the_rule_a_revocation_lifts(core):
    """Short English sentences share many character bigrams ("Never mind the earlier restriction, the release is out"
    has half of "Type hints everywhere."'s): overlap counts there only with some cosine as well."""
    st = core.store
    rules = ["Type hints everywhere.", "No semicolons.", "Write code comments in Spanish."]
    active.apply(st, [_rule(t, scope="global") for t in rules], "/p", "s0", None)  # not said in this session
    assert active._overlap("Never mind the earlier restriction, the release is out.", rules[0]) >= \
        active.REVOKE_MIN_OVERLAP

    def cosines(cos):
        return lambda text, texts: [cos.get(t, 0.1) for t in texts]

    active.apply(st, [_rule("Never mind the earlier restriction, the release is out.", action="revoke")], "/p", "s1",
                 None, similarity=cosines({}))
    assert sorted(r["text"] for r in active.visible(st, "/p", "s1")) == sorted(rules)
    switch = "We've got new hires joining, so switch the comments to English."
    assert active._overlap(switch, rules[2]) >= active.REVOKE_MIN_OVERLAP
    active.apply(st, [_rule(switch, action="revoke")], "/p", "s1", None,
                 similarity=cosines({rules[2]: active.REVOKE_OVERLAP_COSINE}))
    assert sorted(r["text"] for r in active.visible(st, "/p", "s1")) == sorted(rules[:2])


def _candidate(text, scope="session", named=False):
    """A sentence the detector scored below its bar (0.3), with the subjects the product gives it."""
    return Rule("set", text, 0, len(text), scope, named, tuple(cues.subjects(text)), 0.3,
                "zh" if cues.is_zh(text) else "en")


def test_an_amendment_below_the_bar_replaces_the_one_rule_it_changes(core):
    st = core.store
    rule = "In this repo, keep functions under 30 lines."
    active.apply(st, [_rule(rule, scope="project", subjects=cues.subjects(rule))], "/p", "s1", None)
    active.apply(st, [_rule("Never use pandas in this project.", scope="project", subjects=("lib:pandas",))],
                 "/p", "s1", None)
    alike = lambda text, texts: [0.6 for _ in texts]  # noqa: E731 - cosines as MiniLM gives these pairs (0.59)
    change = "Thinking about it, 30 lines is too strict; make it 50 lines instead."
    got = active.amendment(st, [_candidate(change)], "/p", "s1", alike)
    assert got is not None
    amended, target = got
    assert amended.text == change and amended.scope == "project"  # the scope of the rule it changes
    assert [r["text"] for r in active.visible(st, "/p", "s1") if r["id"] == target] == [rule]
    active.apply(st, [amended], "/p", "s1", None, similarity=alike, replaces=[target])
    now = {r["text"] for r in active.visible(st, "/p", "s2")}  # another session of the project: project scope
    assert now == {change, "Never use pandas in this project."}
    states = {r["text"]: r["state"] for r in active.history(st, "/p", include_retired=True)}
    assert states[rule] == "replaced"


@pytest.mark.parametrize("text", [
    "Use pandas for this quick exploration, it's a scratch notebook.",  # a one-off exception: names no quantity
    "Is 50 lines too strict instead?",  # a question
    "Make the hero image 50 pixels taller instead.",  # shares no subject with a rule in force
    "This function is too long; split it into 3 smaller ones.",  # enforces the rule (no subject of its own)
])
def test_what_is_not_an_amendment_leaves_the_rules_in_force(core, text):
    st = core.store
    for rule, subjects in (("In this repo, keep functions under 30 lines.", None), ("Never use pandas in this project.",
                                                                                  ("lib:pandas",))):
        active.apply(st, [_rule(rule, scope="project", subjects=subjects or cues.subjects(rule))], "/p", "s1", None)
    alike = lambda text, texts: [0.9 for _ in texts]  # noqa: E731 - even when the embedding finds them alike
    assert active.amendment(st, [_candidate(text)], "/p", "s1", alike) is None


def test_an_amendment_that_could_change_either_of_two_rules_changes_neither(core):
    st = core.store
    for rule in ("Keep every answer under 100 words.", "Keep summaries under 3 sentences."):
        active.apply(st, [_rule(rule, scope="project", subjects=cues.subjects(rule))], "/p", "s1", None)
    alike = lambda text, texts: [0.7 for _ in texts]  # noqa: E731
    assert active.amendment(st, [_candidate("Actually that's too tight, make it 200 instead.")], "/p", "s1",
                            alike) is None
    assert active.amendment(st, [_candidate("Make it 50 lines instead.")], "/q", "s1", alike) is None  # no rules there


def test_a_narrower_newer_rule_wins_over_a_broader_one_without_retiring_it(core):
    st = core.store
    active.apply(st, [_rule("Use pnpm in this repo.", scope="project", subjects=("lib:pnpm",))], "/p", "s1", None)
    active.apply(st, [_rule("Use bun for installs today instead of pnpm.", subjects=("lib:pnpm", "lib:bun"))],
                 "/p", "s1", None)
    assert [r["text"] for r in active.in_force(active.visible(st, "/p", "s1"))] == ["Use bun for installs today instead of pnpm."]
    assert [r["text"] for r in active.visible(st, "/p", "s2")] == ["Use pnpm in this repo."]


def test_forgetting_the_prompt_forgets_its_rule(core, repo):
    payload = ups(repo, "From now on, keep every answer under 50 words.")
    ids = api.capture_prompt(core, ctx(core, payload))
    assert [r["memory_id"] for r in active.visible(core.store, str(repo), "s1")] == [ids[0]]
    core.store.forget(ids[0])
    assert active.visible(core.store, str(repo), "s1") == []


def test_editing_the_prompt_redetects_its_rules(core, repo):
    """`compass-hook edit` on a prompt: the rules of its old words go (as with forget), the new words' are
    detected; a tag or pin change leaves them alone."""
    from compass_hooks.memory.ops import edit_op

    ids = api.capture_prompt(core, ctx(core, ups(repo, "From now on, keep every answer under 50 words.")))
    edit_op(core, ids[0], add_tags=["style"], pin=True)
    assert [r["text"] for r in active.visible(core.store, str(repo), "s1")] == [
        "From now on, keep every answer under 50 words."]
    edit_op(core, ids[0], text="What does a goroutine cost?")
    assert active.visible(core.store, str(repo), "s1") == []
    assert rules_block(say(core, repo, "Explain how DNS resolution works.", n=1)) == ""
    edit_op(core, ids[0], text="From now on, never use pandas in this project.")
    assert [(r["text"], r["memory_id"]) for r in active.visible(core.store, str(repo), "s1")] == [
        ("From now on, never use pandas in this project.", ids[0])]


def test_a_compaction_under_a_new_session_id_carries_the_session_rules(core, repo):
    say(core, repo, "For the rest of this session, no bullet lists please.", "old")
    base = {"cwd": str(repo), "transcript_path": None}
    handlers.handle(core, "PreCompact", {**base, "hook_event_name": "PreCompact", "session_id": "old", "trigger": "auto"})
    out = handlers.handle(core, "SessionStart", {**base, "hook_event_name": "SessionStart", "session_id": "new",
                                                 "source": "compact"})
    assert "no bullet lists" in rules_block(out["additionalContext"])
    assert "no bullet lists" in rules_block(say(core, repo, "What is a monad?", "new", 1))
    # Once: a second compaction notice does not copy it again.
    api.continue_session(core, {**base, "session_id": "new", "source": "compact"})
    assert len(active.visible(core.store, str(repo), "new")) == 1
    # A fresh session (startup) is not under another session's rules.
    start = handlers.handle(core, "SessionStart", {**base, "hook_event_name": "SessionStart", "session_id": "other",
                                                   "source": "startup"})
    assert "no bullet lists" not in start.get("additionalContext", "")


@pytest.mark.parametrize("new_id", [False, True], ids=["same-id", "new-id"])
def test_a_compaction_keeps_the_session_rules_whether_or_not_the_id_changes(core, repo, new_id):
    """Claude Code 2.1.328 keeps the session id through /compact; other versions give the compacted session a new
    one (PreCompact still sees the old id). Either way the brief and the next prompt carry the session's rules,
    once, and another session's rules stay out."""
    say(core, repo, "For the rest of this session, no bullet lists please.", "s1", 0)
    say(core, repo, "For the rest of this session, answer in French.", "other", 0)
    after = "s2" if new_id else "s1"
    base = {"cwd": str(repo), "transcript_path": None}
    handlers.handle(core, "PreCompact", {**base, "hook_event_name": "PreCompact", "session_id": "s1", "trigger": "auto"})
    brief = handlers.handle(core, "SessionStart", {**base, "hook_event_name": "SessionStart", "session_id": after,
                                                   "source": "compact"})["additionalContext"]
    assert "no bullet lists" in rules_block(brief) and "French" not in brief
    assert rules_block(brief).count("no bullet lists") == 1
    later = rules_block(say(core, repo, "What is a monad?", after, 1))
    assert "no bullet lists" in later and "French" not in later
    assert len(active.visible(core.store, str(repo), after)) == 1


def test_a_rule_lifted_after_a_compaction_does_not_come_back_from_the_session_before_it(core, repo):
    say(core, repo, "For the rest of this session, no bullet lists please.", "a", 0)
    base = {"cwd": str(repo), "transcript_path": None}
    handlers.handle(core, "PreCompact", {**base, "hook_event_name": "PreCompact", "session_id": "a", "trigger": "auto"})
    handlers.handle(core, "SessionStart", {**base, "hook_event_name": "SessionStart", "session_id": "b",
                                           "source": "compact"})
    say(core, repo, "Bullet lists are fine again.", "b", 1)
    assert rules_block(say(core, repo, "What is a monad?", "b", 2)) == ""
    # b continues under yet another id, and c's transcript still names a: the lifted rule stays lifted.
    assert standing.continue_session(core, str(repo), "c", "resume", ["a", "b"]) == []
    assert rules_block(say(core, repo, "What is a functor?", "c", 3)) == ""


# --------------------------------------------------------------------------- hooks


def test_a_rule_applies_from_the_next_prompt_whatever_its_topic(core, repo):
    first = say(core, repo, "From now on, keep every answer under 50 words. What's a goroutine?", n=0)
    assert "50 words" not in rules_block(first)  # in the user's message already
    later = say(core, repo, "Explain how DNS resolution works.", n=1)
    block = rules_block(later)
    assert block.startswith(standing.HEADER) and "“From now on, keep every answer under 50 words.”" in block
    assert later.index("Compass — standing instructions") < (later.find("Compass — memory") % (len(later) + 1) or len(later))
    say(core, repo, "Forget the word limit, long answers are fine again.", n=2)
    assert rules_block(say(core, repo, "How do TCP handshakes work?", n=3)) == ""


def test_rules_are_quoted_whole_and_the_budget_drops_rather_than_cuts(core, repo):
    long_rule = ("For the rest of our conversation, please be gentle: let me finish explaining before you suggest "
                 "anything, don't hand me a numbered framework right away, avoid 'you should', and if you think I "
                 "am wrong, ask me questions that help me find it myself instead of telling me.")
    say(core, repo, long_rule, n=0)
    block = standing.block(core, str(repo), "s1")
    assert " ".join(long_rule.split()).replace("'", "'") in block and "…" not in block
    assert standing.block(core, str(repo), "s1", limit=len(standing.HEADER) + 50) == ""


def test_quote_cuts_around_a_rule_never_inside_it():
    rule = "Never use pandas in this project; we are standardised on polars."
    text = "Some long context before it. " * 8 + rule + " And a task after it that goes on. " * 8
    q = inject.quote(text, 120, [rule])
    assert rule in q and q.startswith("“… ") and q.endswith(" …”")
    assert rule in inject.quote(text, 20, [rule])  # longer than the limit: still whole
    line = inject.item({"id": 1, "text": text, "kind": "prompt", "role": "user", "created": None, "keep": [rule]})
    assert rule in line


def test_a_prompt_never_sees_its_own_capture_and_replays_are_identical(repo, tmp_path, monkeypatch):
    """The capture of a prompt is queued after every read its answer makes, and a prompt waits for its session's
    earlier captures: a worker running captures on its own thread, however late, gives what in-process gives."""
    turns = ["We're building a billing service in Go with a Postgres database.",
             "From now on, keep every answer under 80 words.",
             "How should the invoices table be indexed for the billing service?",
             "What about the Postgres connection pool for billing?",
             "And how do I test the billing service's invoice totals?",
             "Explain how the billing service should retry failed Postgres writes."]

    def replay(defer) -> list[str]:
        c = Core()
        try:
            if defer is not None:
                c.state["worker.defer"] = defer
            out = [say(c, repo, t, "det", i) for i, t in enumerate(turns)]
            handlers._settle(c, "det")  # the last capture, before the store closes
        finally:
            c.close()
        return [re.sub(r"\[#\d+\]|d-[0-9a-f]{8}", "", o) for o in out]  # ids differ between stores

    def fresh_store():  # the next replay starts from nothing, as the first did
        c = Core()
        for path in (c.paths.db, Path(str(c.paths.db) + "-wal"), Path(str(c.paths.db) + "-shm")):
            path.unlink(missing_ok=True)

    inline = replay(None)
    fresh_store()

    def late(fn, *args, **kwargs):  # a busy background thread: the capture round runs late, on its own thread
        def run():
            time.sleep(0.05)
            fn()
        threading.Thread(target=run, daemon=True).start()

    threaded = replay(late)
    fresh_store()
    immediate = replay(lambda fn, *args, **kwargs: fn())  # a worker that runs the round at once, inside the hook
    assert inline == threaded == immediate
    assert "80 words" in rules_block(inline[-1]) and "80 words" not in inline[1]


def test_a_prompt_waits_only_for_its_own_sessions_captures(core, repo):
    """Captures journaled by this worker and not stored yet hold back their own session's next prompt, nobody
    else's; storing them releases it."""
    from compass_hooks.memory import queue

    rounds = []
    core.state["worker.defer"] = lambda fn, *args, **kwargs: rounds.append(fn)  # the round waits until we run it
    say(core, repo, "From now on, keep every answer under 80 words.", "a", 0)
    assert queue.settle(core, "b", 0.01) and not queue.settle(core, "a", 0.01)
    rounds[0]()
    assert queue.settle(core, "a", 0.01)


# --------------------------------------------------------------------------- packaging and CLI


def test_the_dev_set_and_weights_ship_in_the_package_and_the_held_out_set_does_not():
    import tomllib

    from compass_hooks.memory.standing import train

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert set(data["compass_hooks.memory.standing"]) == {"data/*.jsonl", "lexicon/*.txt", "weights/*.json"}
    pkg = ROOT / "compass_hooks" / "memory" / "standing"
    assert all(f.is_file() for f in train.DEV_SETS) and (pkg / "weights" / "minilm.json").is_file()
    assert {f.name for f in (pkg / "lexicon").glob("*.txt")} == {"en.txt", "zh.txt"}
    assert not list(pkg.rglob("*heldout*")) and (ROOT / "tests" / "data" / "instructions" / "detect_heldout.jsonl").is_file()


def _terms(text: str) -> set[str]:
    """Lowercase words and Chinese character bigrams (what the leak check compares)."""
    low = text.lower()
    han = "".join(re.findall(r"[\u3400-\u9fff]", low))
    return set(re.findall(r"[a-z0-9]+", low)) | {han[i:i + 2] for i in range(len(han) - 1)}


def test_the_dev_files_do_not_leak_into_the_held_out_sets():
    """Dev prompts share no id or scenario with the held-out detector split, and none is a near copy (word /
    bigram Jaccard >= 0.6) of a held-out prompt or of a user turn of a held-out conversation."""
    from compass_hooks.memory.standing import train

    data = ROOT / "tests" / "data" / "instructions"
    dev = train.load_dev()
    held = [json.loads(line) for line in (data / "detect_heldout.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len({r["id"] for r in dev}) == len(dev)
    assert not {r["id"] for r in dev} & {r["id"] for r in held}
    assert not {r["scenario"] for r in dev} & {r["scenario"] for r in held}
    texts = [r["text"] for r in held]
    for line in (data / "retention_heldout.jsonl").read_text(encoding="utf-8").splitlines():
        texts += [t["text"] for t in json.loads(line)["turns"] if t["role"] == "user"]
    index: dict[str, list[int]] = {}
    held_terms = [_terms(t) for t in texts]
    for i, terms in enumerate(held_terms):
        for t in terms:
            index.setdefault(t, []).append(i)
    leaks = []
    for r in dev:
        mine = _terms(r["text"])
        near = {i for t in mine for i in index.get(t, ())}
        best = max((len(mine & held_terms[i]) / len(mine | held_terms[i]) for i in near), default=0.0)
        if best >= 0.6:
            leaks.append(r["id"])
    assert leaks == []


def test_the_blind_checks_are_never_trained_on():
    """The blind check files load as the detector's data and share no id, scenario or text with the dev files:
    they measure text the detector has not seen (docs/memory.md, rounds 6-8, 12 and 13; the round-10 and -11 files
    became dev files in round 12). Round 13's dev file, not shipped, is not read by training either."""
    from compass_hooks.memory.standing import train

    dev = train.load_dev()
    dev_texts = {" ".join(r["text"].split()).lower() for r in dev}
    for name in ("detect_fresh_en.jsonl", "detect_fresh_zh.jsonl", "detect_check_r9.jsonl", "detect_check_r12.jsonl",
                 "detect_check_r13.jsonl", "detect_dev_r13_pending.jsonl"):
        rows = train.load(ROOT / "tests" / "data" / "instructions" / name)
        assert len(rows) >= 60 and {r["label"] for r in rows} == {0, 1}, name
        assert not {r["id"] for r in rows} & {r["id"] for r in dev}, name
        assert not {r["scenario"] for r in rows} & {r["scenario"] for r in dev}, name
        shared = {r["id"] for r in rows if " ".join(r["text"].split()).lower() in dev_texts}
        # one ordinary one-line task two writers both wrote ("Add an OpenAPI entry for the /orders endpoint.")
        assert shared <= {"fresh-en-058"}, (name, shared)


def test_instructions_list_cli(cli_runner, repo, monkeypatch):
    from compass_hooks.cli import cli

    c = Core()
    say(c, repo, "Never use pandas in this project; we're standardised on polars.")
    say(c, repo, "pandas is fine again, we added it to the image.", n=1)
    c.close()
    monkeypatch.chdir(repo)
    res = cli_runner.invoke(cli, ["instructions", "list", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["instructions"] == []
    res = cli_runner.invoke(cli, ["instructions", "list", "--all"])
    assert res.exit_code == 0 and "[revoked]" in res.output and "Never use pandas" in res.output


def test_instructions_train_cli_writes_where_the_detector_reads(cli_runner, compass_home, tmp_path):
    from compass_hooks.cli import cli
    from compass_hooks.memory.standing import train

    rows = train.load()
    small = tmp_path / "small.jsonl"
    picked = [r for r in rows if r["scenario"].startswith(("en-dev-pandas", "zh-dev-"))][:160]
    small.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in picked) + "\n", encoding="utf-8")
    res = cli_runner.invoke(cli, ["instructions", "train", "--model", "fake", "--dev", str(small), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert "embedding" in res.stderr and "fitting" in res.stderr  # progress, on stderr
    assert out["file"] == str(compass_home / "calibration" / "instructions" / "fake-64.json")
    assert detect.load_weights(Path(out["file"])).meta["trained_on"]["items"] == len(picked)


def test_the_threshold_is_set_on_the_reference_files_only(cli_runner, compass_home, tmp_path, monkeypatch):
    """The shipped dev files the threshold is measured on are named in REFERENCE_SETS; a later file trains the
    detector without moving the bar, and a user's own dev files (no reference among them) all set it."""
    from compass_hooks.cli import cli
    from compass_hooks.memory.standing import train

    assert train.reference_rows(["detect_dev.jsonl", "detect_dev_r11.jsonl"], [2, 3]).tolist() == [True] * 2 + [False] * 3
    assert train.reference_rows(["mine.jsonl", "more.jsonl"], [2, 1]).tolist() == [True] * 3
    assert "detect_dev_r11.jsonl" in train.DEV_SET_NAMES and "detect_dev_r11.jsonl" not in train.REFERENCE_SET_NAMES
    rows = train.load()
    ref, extra = tmp_path / "ref" / "detect_dev.jsonl", tmp_path / "extra.jsonl"
    ref.parent.mkdir()
    ref_rows = [r for r in rows if r["scenario"].startswith(("en-dev-pandas", "zh-dev-"))][:120]
    extra_rows = [r for r in rows if r["scenario"].startswith("en-dev-") and r not in ref_rows][:80]
    for path, part in ((ref, ref_rows), (extra, extra_rows)):
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in part) + "\n", encoding="utf-8")
    seen: list[int] = []  # how many prompts the threshold was chosen on

    def spy(y, probs, min_precision):
        seen.append(len(y))
        return real(y, probs, min_precision)

    real = train.threshold_for_precision
    monkeypatch.setattr(train, "threshold_for_precision", spy)
    res = cli_runner.invoke(cli, ["instructions", "train", "--model", "fake", "--dev", str(ref), "--dev", str(extra),
                                  "--json"])
    assert res.exit_code == 0, res.output
    assert seen == [len(ref_rows)]
    w = detect.load_weights(Path(json.loads(res.stdout)["file"]))
    assert w.meta["trained_on"]["items"] == len(ref_rows) + len(extra_rows)
    assert f"on the {len(ref_rows)} prompts of the reference files" in w.meta["method"]
    assert w.meta["dev"]["reference_oof"]["precision"] >= train.MIN_PRECISION
    with pytest.raises(InvalidInput, match="reference mask"):
        train.train(ref_rows, lambda t: np.zeros((len(t), 64)), "fake", 64, reference=np.ones(3, dtype=bool))


def test_a_rule_recorded_before_its_prompt_is_stored_is_linked_and_forgotten_with_it(core, repo):
    """With a worker the prompt waits in the capture spool while its rule is recorded at once (the next prompt
    must see it); once the queue stores the prompt the rule carries its memory id, so forgetting the prompt
    forgets the rule."""
    rounds = []
    core.state["worker.defer"] = lambda fn, *args, **kwargs: rounds.append(fn)
    say(core, repo, "From now on, never use pandas in this project.", "s1", 0)
    rows = core.store.read("SELECT memory_id, capture_key FROM instructions")
    assert len(rows) == 1 and rows[0][0] is None and rows[0][1].startswith("prompt:s1:")
    assert "pandas" in rules_block(say(core, repo, "How do I read a CSV file?", "s1", 1))  # before the round ran
    for fn in rounds:
        fn()
    (mid, key), = core.store.read("SELECT memory_id, capture_key FROM instructions")
    assert mid is not None and key is None
    core.store.forget(int(mid))
    assert core.store.read("SELECT COUNT(*) FROM instructions")[0][0] == 0


def test_the_lexicon_files_extend_cue_families_and_add_their_own(tmp_path):
    """Phrasings live in lexicon/<lang>.txt: a known family is extended, a new one becomes a feature (after the
    code's, in name order), a pattern before any header or one that does not compile is refused."""
    lex = cues.read_lexicon()
    assert {"scope_session", "default_rule", "preference", "label_header"} <= set(lex)
    assert cues.LEXICON_FAMILIES == sorted(n for n in lex if n in cues.LEXICON_FAMILIES)
    assert cues.FEATURE_NAMES[:len(cues.CUE_NAMES)] == cues.CUE_NAMES
    assert cues.explicit_scope("For the entirety of this chat, answer in British English.") == "session"
    assert cues.cue_hits("By default, give me quantities in metric units.")["default_rule"]
    assert cues.cue_hits("默认用公制单位给我答案。")["default_rule"]
    (tmp_path / "xx.txt").write_text("# comment\n\\bfoo\\b\n", encoding="utf-8")
    with pytest.raises(ValueError, match="before any"):
        cues.read_lexicon(tmp_path)
    (tmp_path / "xx.txt").write_text("[temporal]\n(unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match="xx.txt:2"):
        cues.read_lexicon(tmp_path)


def test_the_rule_sentence_decides_set_or_lift_not_a_neighbour_joined_to_it(core, monkeypatch):
    """A task sentence that joins a rule (both clear the bar) and mentions 取消 / "cancelled" does not turn the
    rule into a revocation: the sentence that reads most as the rule decides."""
    w = detect.weights_for(core)
    text = "每次你改完代码，先跑一遍 pytest，全部通过了再跟我说改好了。订单状态机有个 bug，已取消的订单还能发货。"
    monkeypatch.setattr(w, "extend", 0.0)  # the task sentence joins whatever its score
    monkeypatch.setattr(detect, "_own_rule", lambda *a: False)  # ... even as a rule of its own (tested below)
    rules = _detect(core, text)
    assert rules and rules[0].text == text and rules[0].action == "set"


def test_two_rules_about_different_things_in_one_prompt_stay_two(core, monkeypatch):
    """Sentences that each clear the bar and are about different things are two rules, so lifting one later does
    not lift the other; sentences about the same thing, or both naming nothing known, stay one rule."""
    w = detect.weights_for(core)
    monkeypatch.setattr(w, "threshold", 0.0)  # every sentence clears the bar: what is joined is what is tested
    monkeypatch.setattr(w, "extend", 0.0)
    two = _detect(core, "Always give me prices in euros. And no emojis please.")
    assert sorted(r.text for r in two) == ["Always give me prices in euros.", "And no emojis please."]
    assert {r.subjects[0] for r in two} == {"currency", "emojis"}
    one = _detect(core, "Keep answers short. Three sentences max.")
    assert [r.text for r in one] == ["Keep answers short. Three sentences max."]
    plain = _detect(core, "Be nice. Be quick.")
    assert [r.text for r in plain] == ["Be nice. Be quick."]


def test_typing_slips_in_cue_words_are_read_as_the_words_but_real_words_are_not():
    assert cues.normalise("Alwyas keep answrs short, evrey reply") == "always keep answers short, every reply"
    assert cues.normalise("it relies on selling tales") == "it relies on selling tales"
    assert cues.cue_hits("alwyas answer in Frnech")["always_never"]


def test_a_markdown_star_bullet_is_prose_and_an_indented_comment_line_is_code():
    assert [u.text for u in cues.units("Notes:\n* never use bold\n* keep it short")] == [
        "Notes:", "never use bold", "keep it short"]
    assert cues.units("/**\n * Never call this twice.\n */") == []


@pytest.mark.parametrize("old, new", [
    ("Use yarn for every install command you give me.", "Use pnpm for every install command from now on."),
    ("All tests you write should use Jest.", "We're moving to vite, so use Vitest for tests from now on."),
    ("Use snake_case for all variable names.", "Please use camelCase for variables from now on."),
    ("Always use alpine base images in the Dockerfiles you write.", "Use debian slim images from now on."),
    ("这个项目装依赖的命令都用 yarn。", "团队统一换包管理器了，以后装依赖都用 pnpm。"),
    ("样式统一用 Less 写。", "以后样式都用 SCSS 写。"),
])
def test_a_newer_rule_to_use_another_tool_of_the_same_kind_replaces_the_older(core, old, new):
    st = core.store
    for text in (old, "Keep every answer under 100 words.", new):
        active.apply(st, [_rule(text, subjects=cues.subjects(text), lang="zh" if cues.is_zh(text) else "en")],
                     "/p", "s1", None)
    assert {r["text"] for r in active.visible(st, "/p", "s1")} == {"Keep every answer under 100 words.", new}
    assert {r["text"]: r["state"] for r in active.history(st, "/p", include_retired=True)}[old] == "replaced"


def test_a_ban_on_a_tool_is_not_replaced_by_a_rule_to_use_another_of_its_kind(core):
    """"Don't use npm" says nothing of what to use, so "use pnpm" keeps it; a broader rule of the same kind stays
    in the store, and the newer, narrower one is the one shown."""
    st = core.store
    active.apply(st, [_rule("Don't use npm here.", subjects=("lib:npm",))], "/p", "s1", None)
    active.apply(st, [_rule("Use yarn for installs in this repo.", scope="project", subjects=("lib:yarn",))], "/p", "s1", None)
    active.apply(st, [_rule("Use pnpm for installs today.", subjects=("lib:pnpm",))], "/p", "s1", None)
    assert {r["text"] for r in active.visible(st, "/p", "s1")} == {"Don't use npm here.", "Use yarn for installs in this repo.",
                                                                    "Use pnpm for installs today."}
    assert [r["text"] for r in active.in_force(active.visible(st, "/p", "s1"))] == ["Use pnpm for installs today.",
                                                                                    "Don't use npm here."]


def test_tool_kinds_need_the_context_where_a_member_is_an_ordinary_word():
    assert cues.tool_kinds("Write less code, please.") == []
    assert cues.tool_kinds("Keep the answers slim.") == []
    assert cues.tool_kinds("Use Less for the styles.") == ["stylesheet language"]
    assert cues.tool_kinds("Never use yarn for installs.") == []
    # A tool name inside a Latin word is not the tool ("print" in "sprint").
    assert "lib:print" not in cues.subjects("We're in this sprint, so 冲刺期间都用 vitest。")


def test_a_rule_that_lifts_one_in_force_retires_it(core):
    """"You can write in English again" reads as a rule of its own; it lifts the Spanish one (a subject in common)
    and stays a rule; a permission about something no rule in force is about lifts nothing."""
    st = core.store
    for text in ("Can you reply in Spanish from now on?", "Keep every answer under 100 words."):
        active.apply(st, [_rule(text, subjects=cues.subjects(text))], "/p", "s1", None)
    active.apply(st, [_rule("Feel free to ask me clarifying questions.", subjects=())], "/p", "s1", None)
    assert len(active.visible(st, "/p", "s1")) == 3
    again = "You can write in English again, my brain is fried."
    active.apply(st, [_rule(again, subjects=cues.subjects(again))], "/p", "s1", None)
    states = {r["text"]: r["state"] for r in active.history(st, "/p", include_retired=True)}
    assert states["Can you reply in Spanish from now on?"] == "revoked"
    assert states["Keep every answer under 100 words."] == states[again] == "active"


@pytest.mark.parametrize("text", ["ok back to english please, my brain is fried.", "算了还是说中文吧，看得太累了。"])
def test_going_back_to_a_language_is_about_the_language_of_replies(text):
    assert cues.subjects(text)[0] == "language of replies"


def test_a_lift_below_the_bar_retires_the_one_rule_on_its_subject(core):
    st = core.store
    for text in ("From now on, keep every answer under 100 words.", "No bold."):
        active.apply(st, [_rule(text, subjects=cues.subjects(text))], "/p", "s1", None)
    assert active.lift(st, [_candidate("Walk me through how yield suspends the frame.")], "/p", "s1") == []
    assert active.lift(st, [_candidate("Is the length cap off now?")], "/p", "s1") == []  # a question
    assert active.lift(st, [_candidate("For this one answer the length cap is off.")], "/p", "s1") == []  # a one-off
    cap = "ok, the length cap is off now, I actually want the deep version."
    ids = active.lift(st, [_candidate(cap)], "/p", "s1")
    assert [r["text"] for r in active.visible(st, "/p", "s1") if r["id"] in ids] == [
        "From now on, keep every answer under 100 words."]
    active.apply(st, [], "/p", "s1", None, revokes=ids)
    assert [r["text"] for r in active.visible(st, "/p", "s1")] == ["No bold."]
    # Two rules on the subject: it could be about either, nothing is lifted.
    for text, scope in (("Keep summaries under 3 sentences.", "project"), ("Keep every answer under 100 words.", "session")):
        active.apply(st, [_rule(text, scope=scope, subjects=cues.subjects(text))], "/p", "s2", None)
    assert len(active.visible(st, "/p", "s2")) == 2
    assert active.lift(st, [_candidate(cap)], "/p", "s2") == []


def test_tools_of_one_kind_for_different_parts_of_the_project_hold_side_by_side(core):
    st = core.store
    for text in ("Use pytest for the Python tests.", "Use Jest for the frontend tests.", "Use Vitest for the frontend tests."):
        active.apply(st, [_rule(text, scope="project", subjects=cues.subjects(text))], "/p", "s1", None)
    shown = [r["text"] for r in active.in_force(active.visible(st, "/p", "s1"))]
    assert sorted(shown) == ["Use Vitest for the frontend tests.", "Use pytest for the Python tests."]
    assert len(active.visible(st, "/p", "s1")) == 2
