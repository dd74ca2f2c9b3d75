"""Standing instructions with the shipped MiniLM weights, through the real UserPromptSubmit handler: a limit the
user changes with a sentence that reads as a rule only beside the old one ("make it 50 lines instead") replaces
it, and a prompt that enforces or bends the rule for once leaves it in force (docs/memory.md, "Amendments")."""

from __future__ import annotations

import pytest

from compass_hooks.core import Core
from compass_hooks.worker.hooks import handlers

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture
def core(real_model):
    c = Core()
    assert c.embedder.name == "minilm"
    yield c
    c.close()


def _say(core, repo, prompt, n):
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(repo), "prompt": prompt,
               "prompt_id": f"p{n}", "transcript_path": None}
    return handlers.handle(core, "UserPromptSubmit", payload).get("additionalContext", "")


def _rules(context: str) -> str:
    return "\n\n".join(b for b in context.split("\n\n") if b.startswith("Compass — standing instructions"))


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_a_changed_limit_replaces_the_rule_and_a_one_off_does_not(core, repo):
    _say(core, repo, "In this repo, keep functions under 30 lines.", 0)
    assert "30 lines" in _rules(_say(core, repo, "Refactor the export module, it's a mess.", 1))
    # enforcing the rule, and bending it for one file, change nothing
    _say(core, repo, "This function is too long; split it into 3 smaller ones.", 2)
    _say(core, repo, "Make it 100 lines for this one file, it's generated.", 3)
    assert "under 30 lines" in _rules(_say(core, repo, "Write the CSV exporter.", 4))
    _say(core, repo, "Thinking about it, 30 lines is too strict; make it 50 lines instead.", 5)
    block = _rules(_say(core, repo, "Now the JSON exporter.", 6))
    assert "make it 50 lines instead" in block and "keep functions under 30 lines" not in block
