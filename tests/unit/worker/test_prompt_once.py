"""One UserPromptSubmit prompt is prepared once for drift, recall and the deferred capture: one embedder call,
one project id, one privacy pass, one run of the prompt rules. Counted, not timed."""

from __future__ import annotations

import json

import pytest

from compass_hooks.core import Core
from compass_hooks.embedding.fake import FakeEmbedder
from compass_hooks.worker.hooks.handlers import handle
import testdirs

FIXTURES = testdirs.FIXTURES / "hooks"
CALM = "Add a loading spinner while the search results are fetched."
SECRET = "Add the config value sk-ant-api03-Qw7eRt9yUi2oPa4sDf6gHj8kLz1xCv3bNm5 please"


class Counting(FakeEmbedder):
    def __init__(self):
        super().__init__(dim=64)
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return super().embed(texts)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


@pytest.fixture
def counts(monkeypatch):
    """How often the per-prompt preparation steps run, wherever they are called from."""
    from compass_hooks.drift import api as drift_api
    from compass_hooks.drift import features
    from compass_hooks.memory import privacy, project

    seen = {"project_id": 0, "privacy": 0, "rules": 0}

    def counting(key, fn):
        def wrapper(*a, **k):
            seen[key] += 1
            return fn(*a, **k)
        return wrapper

    # project_id walks up with git_toplevel: counting that catches every project_id call, however imported.
    monkeypatch.setattr(project, "git_toplevel", counting("project_id", project.git_toplevel))
    monkeypatch.setattr(privacy, "clean", counting("privacy", privacy.clean))
    rules = counting("rules", drift_api.check_prompt_rules)
    monkeypatch.setattr(drift_api, "check_prompt_rules", rules)
    monkeypatch.setattr(features, "check_prompt_rules", rules)
    return seen


def _warm(core):
    """What a worker does before it is ready: the anchors embedded, so a prompt embeds only itself."""
    from compass_hooks.drift.scorer import get_state

    get_state(core).snapshot()
    return core


def _run(core, repo, prompt, prompt_id="p1"):
    """The hook as the worker runs it, then the capture round (as the worker's thread would, after the answer)."""
    queued = []
    core.state["worker.defer"] = lambda fn, *a, **k: queued.append(fn)
    core.state["worker.ready"] = lambda: True
    payload = json.loads((FIXTURES / "UserPromptSubmit.json").read_text())
    payload.update(prompt=prompt, cwd=str(repo / "src"), prompt_id=prompt_id)
    out = handle(core, "UserPromptSubmit", payload)
    assert len(queued) == 1  # the capture is on disk (the spool); one round stores it after the answer
    queued[0]()
    return out


def test_one_prompt_one_embedding_one_project_id_one_privacy_pass(repo, counts):
    inner = Counting()
    core = _warm(Core(embedder=inner))  # used as given: no LRU in between that could hide a second embedding
    inner.calls.clear()
    try:
        out = _run(core, repo, CALM)
        assert "drift check" not in out.get("additionalContext", "")
        assert inner.calls == [[CALM]]  # drift, recall and the capture all used that one vector
        assert counts == {"project_id": 1, "privacy": 1, "rules": 1}
        (row,) = core.store.list()
        ids, _, _ = core.store.vectors_since(inner.name, 0)
        assert row["text"] == CALM and list(ids) == [row["id"]]  # captured with the prompt's vector
    finally:
        core.close()


def test_a_redacted_prompt_embeds_both_texts_in_the_one_call(repo, counts):
    """Drift scores the prompt as sent (its secret rule needs the secret), memory the redacted text."""
    inner = Counting()
    core = _warm(Core(embedder=inner))
    inner.calls.clear()
    try:
        out = _run(core, repo, SECRET)
        assert out["additionalContext"].startswith("Compass — drift check")
        (call,) = inner.calls[:1]
        assert call[0] == SECRET and "sk-ant" not in call[1] and len(call) == 2
        # An alert searches once more for related constraints, with its own query text; nothing else embeds.
        assert all(SECRET not in t for c in inner.calls[1:] for t in c) and len(inner.calls) == 2
        assert counts == {"project_id": 1, "privacy": 1, "rules": 1}
        (row,) = core.store.list()
        assert "sk-ant" not in row["text"] and "redacted" in row["flags"]
    finally:
        core.close()


def test_the_core_embedder_is_asked_once_per_prompt(repo):
    """The production wiring (the factory's fake behind the core's LRU): one text requested, so no cache hit."""
    core = _warm(Core())
    core.embedder.misses = core.embedder.hits = 0
    try:
        _run(core, repo, CALM)
        assert (core.embedder.misses, core.embedder.hits) == (1, 0)
    finally:
        core.close()


def test_a_failed_embedding_still_answers_and_still_captures(repo, monkeypatch):
    """Each reader embeds for itself when the shared call failed, and fails the way it always did."""
    inner = Counting()
    core = _warm(Core(embedder=inner))
    broken = {"on": True}

    def embed(texts):
        if broken["on"]:
            broken["on"] = False
            raise RuntimeError("model went away")
        return Counting.embed(inner, texts)

    monkeypatch.setattr(inner, "embed", embed)
    try:
        _run(core, repo, "Never deploy the billing service on Fridays.")
        assert [r["kind"] for r in core.store.list()] == ["constraint"]
    finally:
        core.close()
