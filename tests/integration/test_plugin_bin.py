"""``bin/compass-hook``: Claude Code puts a plugin's bin/ on its Bash tool's PATH (without CLAUDE_PLUGIN_ROOT or,
usually, CLAUDE_PLUGIN_DATA), so the agent can call `compass-hook` however the plugin was installed. The script
finds the environment in the hook launcher's order; here each candidate is a fake venv whose `compass-hook`
says which one it is."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from testdirs import ROOT


def _venv(path: Path, name: str, finished: bool = True) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (path / "bin" / "compass-hook").write_text(f'#!/bin/sh\necho "{name} $*"\n')
    for f in ("python", "compass-hook"):
        (path / "bin" / f).chmod(0o755)
    if finished:
        (path / "compass-install.json").write_text("{}")
    return path


def _plugin(tmp_path: Path) -> Path:
    root = tmp_path / "cache" / "compass-hooks"
    (root / "bin").mkdir(parents=True)
    shutil.copy2(ROOT / "bin" / "compass-hook", root / "bin" / "compass-hook")
    return root


def _run(script: Path, home: Path, **env: str) -> subprocess.CompletedProcess:
    base = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run([str(script), "doctor", "--json"], capture_output=True, text=True, env={**base, **env},
                          cwd="/", timeout=30)


def test_finds_each_install_path_in_the_launchers_order(tmp_path):
    home = tmp_path / "home"
    root = _plugin(tmp_path)
    script = root / "bin" / "compass-hook"
    res = _run(script, home)
    assert res.returncode == 1 and "no compass-hooks environment found" in res.stderr
    # A marketplace install that bootstrapped its venv; neither CLAUDE_PLUGIN_* variable is set in the Bash tool.
    boot = _venv(home / ".claude" / "plugins" / "data" / "compass-hooks-compass-local" / "venv", "bootstrap")
    assert _run(script, home).stdout.strip() == "bootstrap doctor --json"
    # CLAUDE_PLUGIN_DATA, when set, is looked at first among the plugin data dirs.
    other = _venv(tmp_path / "pdata" / "venv", "plugin-data")
    assert _run(script, home, CLAUDE_PLUGIN_DATA=str(other.parent)).stdout.startswith("plugin-data")
    # A checkout's .venv comes before that.
    _venv(root / ".venv", "checkout")
    assert _run(script, home).stdout.startswith("checkout")
    # The user's runtime venv first, but only once its install finished.
    runtime = _venv(home / ".local" / "share" / "compass-hooks" / "venv", "runtime", finished=False)
    assert _run(script, home).stdout.startswith("checkout")
    (runtime / "compass-install.json").write_text("{}")
    assert _run(script, home).stdout.startswith("runtime")
    assert _run(script, home, COMPASS_VENV=str(boot)).stdout.startswith("bootstrap")


def test_works_through_a_symlink(tmp_path):
    home = tmp_path / "home"
    root = _plugin(tmp_path)
    _venv(root / ".venv", "checkout")
    link = tmp_path / "bin" / "compass-hook"
    link.parent.mkdir()
    link.symlink_to(root / "bin" / "compass-hook")
    assert _run(link, home).stdout.startswith("checkout")


def test_the_real_cli_from_this_checkout(tmp_path):
    """From this checkout (its .venv is the dev env tests/run made, or install.sh's link)."""
    res = subprocess.run([str(ROOT / "bin" / "compass-hook"), "--version"], capture_output=True, text=True,
                         env={**os.environ, "HOME": str(tmp_path)}, cwd="/", timeout=60)
    assert res.returncode == 0 and "compass-hook, version" in res.stdout
