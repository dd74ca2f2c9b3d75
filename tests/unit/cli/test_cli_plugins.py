"""Commands from outside the product package: the ``compass_hooks.cli`` entry point group.

compass_eval's ``bench`` and ``eval`` come in this way; any installed distribution may add commands the same
way, and one that is broken costs its own commands and a one-line warning, never the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from compass_eval.cli import bench_group, eval_group
from compass_hooks.cli import cli


def test_bench_and_eval_are_registered_by_compass_eval_s_entry_point():
    (ep,) = [e for e in entry_points(group="compass_hooks.cli") if e.name == "eval"]
    assert ep.value == "compass_eval.cli:register"
    assert cli.commands["bench"] is bench_group and cli.commands["eval"] is eval_group
    assert set(bench_group.commands) >= {"hook", "recall", "ingest", "load"}
    assert set(eval_group.commands) >= {"locomo", "drift"}


def _fake_distribution(site: Path) -> None:
    """An installed distribution (as pip leaves it: a dist-info with entry_points.txt) with three plugins: one
    that works, one whose module is missing, one that registers a command and then fails."""
    info = site / "fake_plugins-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[compass_hooks.cli]\ngood = good_plugin:register\n"
                                           "missing = no_such_module_here:register\nhalf = half_plugin:register\n")
    (site / "good_plugin.py").write_text(
        "import click\n\n\n@click.command('hello')\ndef hello():\n    '''Say hello.'''\n    click.echo('hello from a plugin')\n\n\n"
        "def register(cli):\n    cli.add_command(hello)\n")
    (site / "half_plugin.py").write_text(
        "import click\n\n\n@click.command('half-done')\ndef half():\n    '''Half.'''\n\n\n"
        "def register(cli):\n    cli.add_command(half)\n    raise RuntimeError('broke\\nover two lines')\n")


def test_a_broken_plugin_warns_in_one_line_and_the_cli_still_works(tmp_path):
    site = tmp_path / "site"
    _fake_distribution(site)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "compass_hooks", *args], capture_output=True, text=True, env=env,
                              timeout=60)

    res = run("--help")
    assert res.returncode == 0, res.stderr
    warnings = res.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("compass-hook: warning: plugin ") for w in warnings), warnings
    assert "'missing' (no_such_module_here:register)" in res.stderr and "ModuleNotFoundError" in res.stderr
    assert "'half' (half_plugin:register) not loaded: RuntimeError: broke over two lines" in res.stderr
    listed = res.stdout
    assert "hello" in listed and "half-done" not in listed  # nothing half-registered
    assert all(name in listed for name in ("bench", "eval", "recall", "doctor"))
    res = run("hello")
    assert res.returncode == 0 and res.stdout == "hello from a plugin\n"
    res = run("eval", "drift", "--help")
    assert res.returncode == 0 and "--json" in res.stdout


def test_start_up_imports_no_heavy_module_for_the_plugins():
    """Every `compass-hook` start-up imports compass_eval's command modules: they must leave the product's
    features (numpy, the store, the model) to the commands that use them. The one list of memory kinds
    (memory/kinds.py, a tuple in an otherwise empty package) is the exception: the CLI's choices are built from it."""
    light = ("compass_hooks.memory", "compass_hooks.memory.kinds")
    code = ("import sys, compass_hooks.cli; "
            "print(' '.join(sorted(m for m in sys.modules if m not in %r and (m.split('.')[0] in "
            "('numpy', 'onnxruntime', 'tokenizers') "
            "or m.startswith(('compass_hooks.core', 'compass_hooks.memory', 'compass_hooks.drift'))))))" % (light,))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "", res.stdout + res.stderr
