"""The guard corpus (tests/data/adversarial/guard.jsonl, README there), command by command: every ``ask`` asks and
every ``allow`` stays silent, through the same function the hook process and the worker call. Plus the shell
parser on its own, and inputs built to be slow (they must return; no tight timing asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from compass_hooks.textrules.commands import MAX_COMMAND, check_command
from compass_hooks.textrules.shell import parse, walk_commands
from compass_hooks.worker.hooks.guard import pretooluse_decision
import testdirs

ROOT = testdirs.ROOT
ITEMS = [json.loads(line) for line in (ROOT / "tests/data/adversarial/guard.jsonl").read_text("utf-8").splitlines()]
ASK = [i for i in ITEMS if i["expect"] == "ask"]
ALLOW = [i for i in ITEMS if i["expect"] == "allow"]


def test_the_corpus_is_what_the_readme_says():
    assert (len(ITEMS), len(ASK), len(ALLOW)) == (246, 165, 81)


@pytest.mark.parametrize("item", ASK, ids=[i["command"][:60] for i in ASK])
def test_asks(item):
    decision = pretooluse_decision(item["command"], "ask")
    assert decision.get("permissionDecision") == "ask", item["why"]
    assert decision["permissionDecisionReason"].startswith("Compass — destructive command check: ")


@pytest.mark.parametrize("item", ALLOW, ids=[i["command"][:60] for i in ALLOW])
def test_allows(item):
    assert pretooluse_decision(item["command"], "ask") == {}, (item["why"], check_command(item["command"]))


@pytest.mark.parametrize("src, commands", [
    ("rm -rf ~", [["rm", "-rf", "~"]]),
    ("r\"\"m -rf ~; 'rm' x; \\rm y", [["rm", "-rf", "~"], ["rm", "x"], ["rm", "y"]]),
    ("a && (b || { c; }) | d &", [["a"], ["b"], ["c"], ["d"]]),
    ("echo $(rm -rf ~) `git reset --hard`", [["echo", "$(rm -rf ~)", "`git reset --hard`"], ["git", "reset", "--hard"],
                                            ["rm", "-rf", "~"]]),
    ("if true; then x; elif y; else z; fi; for i in 1 2; do w \"$i\"; done", [["true"], ["x"], ["y"], ["z"], ["w", "$i"]]),
    ("cat <<'EOF' > f\nrm -rf ~\nEOF\nls", [["cat"], ["ls"]]),
    ("cat <<EOF\n$(rm -rf ~)\nEOF", [["cat"], ["rm", "-rf", "~"]]),
    ("ls # rm -rf ~\necho a\\\nb", [["ls"], ["echo", "ab"]]),
    ("x $'a\\tb' \"q\\\"uote\"", [["x", "a\tb", 'q"uote']]),
])
def test_the_parser_finds_every_command(src, commands):
    assert sorted(c.argv() for c in walk_commands(parse(src))) == sorted(commands)


def test_redirections_and_heredocs_are_attached():
    (cmd,) = list(walk_commands(parse("cat /dev/zero 2>&1 > /dev/sda <<-X\n\tbody\n\tX")))
    assert [(op, w.text) for op, w in cmd.redirects] == [(">&", "1"), (">", "/dev/sda")]
    assert cmd.heredocs[0][:2] == ("\tbody\n", False)


@pytest.mark.parametrize("cmd", [
    "bash -c \"bash -c 'rm -rf ~'\"",
    "sudo -u root env -i timeout 5 nice -n 1 nohup rm -rf ~",
    "xargs -0 -I{} sh -c 'rm -rf {}'",
    "git -C a -c x=y --no-pager push origin +main",
    "python3 -c \"import os; os.system('rm -rf ~')\"",
    "env -S 'rm -rf ~'",
    "echo 'rm -rf ~' | sudo bash",
    "printf 'git push -f origin main' | sh",
    "watch -n 1 rm -rf ~",
    "git -c core.hooksPath=/dev/null commit -m x",
    "X=rm; $X -rf ~",
    "X=git\n${X} push -f origin main",
    "$CMD -rf /",
    "$(which rm) -rf ~",
    "ssh prod 'rm -rf /srv/data'",
    "python3 -c \"import subprocess; subprocess.run(['rm', '-rf', '/'])\"",
    "node -e \"require('child_process').execSync('git push -f origin main')\"",
])
def test_nested_wrappers_are_unwrapped(cmd):
    assert check_command(cmd) is not None, cmd


def test_a_megabyte_unclosed_quote_returns():
    t0 = time.perf_counter()
    for command in ("echo \"" + "a" * 1_000_000, "echo '" + "a" * 1_000_000, "$(" * 200_000, "`" * 1_000_000):
        decision = pretooluse_decision(command, "ask")
        assert decision["permissionDecision"] == "ask"  # too long to read whole: asked, not skipped
    assert time.perf_counter() - t0 < 2


@pytest.mark.parametrize("unit", ["a | ", "$(a) ", "\"", "'", "\\", "`", "$", "A=1 ", "eval ", "bash -c ", "( ", "{ ",
                                  "> a ", "<<a\n", "git -c a=b ", "xargs ", "sudo ", "curl x | "])
def test_hostile_shapes_finish(unit):
    command = (unit * (MAX_COMMAND // len(unit)))[:MAX_COMMAND]
    t0 = time.perf_counter()
    check_command(command)
    assert time.perf_counter() - t0 < 30  # generous: a quadratic path takes hours at this size


def test_the_guard_is_stdlib_only_and_light():
    """The hook process answers PreToolUse with `python -I -S`: no site-packages, nothing heavy."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]);"
            "from compass_hooks.worker.hooks.guard import pretooluse_decision;"
            "assert pretooluse_decision(\"bash -c 'rm -rf ~'\", 'ask')['permissionDecision'] == 'ask';"
            "bad = [m for m in ('dataclasses', 'typing', 'shlex', 'unicodedata', 'base64') if m in sys.modules];"
            "assert not bad, bad; print('ok')")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
