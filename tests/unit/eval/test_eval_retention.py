"""`compass-hook eval retention`: conversations replayed through the real hook handlers (fake embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compass_hooks.cli import cli
import testdirs

DATA = testdirs.DATA / "instructions" / "retention_dev.jsonl"


def _subset(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    picked = []
    for kind in ("instruction", "control", "revoked", "replaced"):
        picked += [r for r in rows if r["kind"] == kind][:2]
    out = tmp_path / "subset.jsonl"
    out.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in picked) + "\n", encoding="utf-8")
    return out


@pytest.mark.slow
def test_eval_retention_reports_every_figure(cli_runner, tmp_path, compass_home):
    res = cli_runner.invoke(cli, ["eval", "retention", str(_subset(tmp_path)), "--model", "fake", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)  # the progress bar goes to stderr
    assert report["conversations"] == 8 and report["by_kind"] == {"instruction": 2, "control": 2, "revoked": 2,
                                                                   "replaced": 2}
    fp = report["final_prompt"]
    for key in ("instruction_carried", "instruction_carried_far", "baseline_carried", "baseline_carried_far",
                "avg_chars", "control_false_rule", "revoked_correct", "replaced_correct"):
        assert key in fp
    assert 0.0 <= fp["instruction_carried"] <= 1.0 and fp["avg_chars"] > 0
    for variant in ("compact-same", "compact-new"):
        assert set(report[variant]) >= {"brief_carried", "final_carried", "control_false_rule"}
    assert "rows" not in report
    # Nothing written where the user's memories live: each conversation had a throw-away data dir.
    assert not (compass_home / "compass.db").exists()


def test_eval_retention_text_output_and_one_variant(cli_runner, tmp_path):
    res = cli_runner.invoke(cli, ["eval", "retention", str(_subset(tmp_path)), "--model", "fake", "--variant", "plain",
                                  "--limit", "2"])
    assert res.exit_code == 0, res.output
    assert "final prompt carries the instruction" in res.output and "baseline, last 4 user turns" in res.output
    assert "after compaction" not in res.output


def test_eval_retention_help_and_bad_file(cli_runner, tmp_path):
    res = cli_runner.invoke(cli, ["eval", "retention", "--help"])
    assert res.exit_code == 0 and "baseline" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "kind": "weird", "turns": [{"role": "user", "text": "hi"}]}\n', encoding="utf-8")
    res = cli_runner.invoke(cli, ["eval", "retention", str(bad), "--model", "fake"])
    assert res.exit_code != 0 and "kind must be one of" in res.output


def test_eval_instructions_on_labelled_prompts(cli_runner, tmp_path):
    from compass_hooks.memory.standing import train

    rows = [r for r in train.load() if r["scenario"].startswith(("en-dev-pandas", "zh-dev-supp2-revocations"))]
    f = tmp_path / "some.jsonl"
    f.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    res = cli_runner.invoke(cli, ["eval", "instructions", str(f), "--model", "fake", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert "embedding" in res.stderr  # progress, on stderr
    assert report["items"] == len(rows) and report["model"] == "fake:64"
    assert {"precision", "recall", "rule_exact", "rule_whole", "action_accuracy", "scope_accuracy"} <= set(report)
    assert 0 < report["scope_labelled"] <= report["true_positives"] and 0 <= report["scope_accuracy"] <= 1
    # A file that names no scope (the blind files' convention: null = the user named none) has no scope figure,
    # rather than counting every guess against a null label.
    unscoped = tmp_path / "unscoped.jsonl"
    unscoped.write_text("\n".join(json.dumps({**r, "scope": None}, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    res = cli_runner.invoke(cli, ["eval", "instructions", str(unscoped), "--model", "fake", "--json"])
    assert res.exit_code == 0, res.output
    plain = json.loads(res.stdout)
    assert plain["scope_labelled"] == 0 and plain["scope_accuracy"] is None
    assert plain["true_positives"] == report["true_positives"]
    words = cli_runner.invoke(cli, ["eval", "instructions", str(unscoped), "--model", "fake"])
    assert words.exit_code == 0 and "no scope labelled" in words.output
    text = cli_runner.invoke(cli, ["eval", "instructions", str(f), "--model", "fake", "--errors"])
    assert text.exit_code == 0 and "precision" in text.output


@pytest.mark.parametrize("name", ["retention_revoke_dev.jsonl", "retention_revoke_check.jsonl"])
def test_the_revocation_conversation_files_are_well_formed(name):
    """The round-13 revocation sets (tests/data/instructions/README.md): they load, hold every kind in both
    languages, and each check / absent string is where it must be (a label no turn holds could never pass)."""
    from compass_eval import retention

    path = testdirs.DATA / "instructions" / name
    convs = retention.load(path)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(convs) == 80 and {(c.kind, c.lang) for c in convs} == {(k, lg) for k in ("instruction", "revoked",
                                                                                         "replaced") for lg in ("en", "zh")}
    for conv, row in zip(convs, rows):
        said = conv.turns[conv.instruction_turn]["text"].lower()
        assert conv.turns[conv.instruction_turn]["role"] == "user" and row["instruction"].lower() in said, conv.id
        assert all(c in said for c in conv.checks), conv.id
        assert (conv.kind == "instruction") == (not conv.absent) and (conv.kind == "revoked") == (not conv.checks)
        if conv.kind == "revoked":  # what must disappear is what the rule said
            assert all(a in said for a in conv.absent), conv.id
        if conv.kind == "replaced":  # the old rule's words, said before the new rule, are not in it
            before = " ".join(t["text"].lower() for t in conv.turns[:conv.instruction_turn] if t["role"] == "user")
            assert all(a in before and a not in said for a in conv.absent), conv.id
