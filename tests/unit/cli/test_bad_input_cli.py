"""Bad CLI arguments: one `Error:` line, a non-zero exit, never a traceback (in process and as a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compass_hooks.cli import cli

CASES = [
    (["nosuch"], 2),
    (["audit", "show", "-n", "-5"], 2),
    (["audit", "proof", "x"], 2),
    (["audit", "proof", "99"], 1),
    (["audit", "verify", "--root", "zz"], 2),
    (["audit", "verify", "--size", "1"], 2),
    (["score"], 2),
    (["drift", "history", "--limit", "x"], 2),
    (["embed"], 2),
    (["model", "export", "--model", "nosuch"], 1),
    (["anchors", "remove", "nosuch"], 1),
    (["anchors", "add", "x", "--polarity", "negative", "--category", "bogus"], 2),
    (["anchors", "add", "x", "--polarity", "negative", "--category", "verification"], 2),
    (["anchors", "add", "x", "--polarity", "sideways", "--category", "secrets"], 2),
    (["feedback", "no-such-alert", "fp"], 1),
    (["score", "--jsonl", "/nonexistent/file.jsonl"], 1),
]


def _check(output: str, code: int, expected: int) -> None:
    assert code == expected, output
    assert "Traceback" not in output
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, output
    assert "internal error" not in errors[0], errors[0]


@pytest.mark.parametrize("args, expected", CASES)
def test_bad_arguments_in_process(cli_runner, args, expected):
    res = cli_runner.invoke(cli, args)
    _check(res.output, res.exit_code, expected)


@pytest.mark.parametrize("args, expected", [c for c in CASES[:6] if not hasattr(c, "marks")])
def test_bad_arguments_as_a_subprocess(args, expected, compass_home):
    """The real entry point: stdout stays empty, the one error line is on stderr."""
    exe = Path(sys.executable).with_name("compass-hook")
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30, env=dict(os.environ))
    _check(proc.stderr, proc.returncode, expected)
    assert proc.stdout == ""


def test_unexpected_exception_becomes_one_line(cli_runner, monkeypatch):
    """Even a bug inside a command is one line plus a pointer to the log, not a traceback."""
    import compass_hooks.audit.verify as verify_mod

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(verify_mod, "verify", boom)
    res = cli_runner.invoke(cli, ["audit", "verify"])
    _check(res.output.replace("internal error", "internal-error"), res.exit_code, 1)
    assert "kaboom" in res.output and "cli log" in res.output
