"""`compass-hook uninstall` after a real ./install.sh in a fresh HOME (issue 15): the command on PATH removes the
install it runs from, the venv it runs from last, and leaves this checkout and its dev env alone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cc_harness import ROOT, run, stop_workers, user_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.model]

INSTALL_TIMEOUT_S = 20 * 60


def _worker_pids(data: Path) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--home" in args and str(data).encode() in args:
                out.append(int(entry))
    return out


def test_uninstall_after_install_sh(tmp_path):
    home = tmp_path / "user" / "home"  # not the fixture's HOME: a user of its own, as the other e2e paths
    home.mkdir(parents=True)
    work = tmp_path / "project"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    env = user_env(home)
    data = home / ".local" / "share" / "compass-hooks"
    checkout_venv = os.readlink(ROOT / ".venv") if (ROOT / ".venv").is_symlink() else None
    try:
        proc = run([str(ROOT / "install.sh"), "--no-plugin", "--no-demo"], env, ROOT, timeout=INSTALL_TIMEOUT_S)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        assert "compass-hook uninstall" in proc.stdout  # install.sh's Undo line
        ch = home / ".local" / "bin" / "compass-hook"
        assert ch.is_symlink()
        for args in (["remember", "never push to main", "--kind", "constraint"],
                     ["mcp", "config", "cursor", "--write"], ["worker", "start"]):
            r = run([str(ch), *args], env, work, timeout=180)
            assert r.returncode == 0, args + [r.stdout, r.stderr]
        cursor = home / ".cursor" / "mcp.json"
        assert "compass" in json.loads(cursor.read_text())["mcpServers"]
        assert _worker_pids(data)

        dry = run([str(ch), "uninstall", "--dry-run"], env, work)
        assert dry.returncode == 0 and "runtime venv" in dry.stdout and (data / "venv").is_dir()
        out = run([str(ch), "uninstall"], env, work)  # no terminal, no --yes: nothing happens
        assert out.returncode == 2 and "--yes" in out.stderr and (data / "venv").is_dir()

        out = run([str(ch), "uninstall", "--yes"], env, work, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "compass-hooks is uninstalled" in out.stdout, out.stdout
        for step in ("stop the workers", "cursor editor entry", "models", "staged plugin copy", "compass-hook on PATH",
                     "runtime venv"):
            assert step in out.stdout, step
        assert not data.exists(), list(data.rglob("*"))[:20]
        assert not ch.exists() and not ch.is_symlink()
        assert json.loads(cursor.read_text())["mcpServers"] == {}
        assert not _worker_pids(data)
        assert not (home / ".cache" / "compass-hooks" / "export-env").exists()
        # This checkout's .venv (the dev env tests/run made) was not install.sh's link: untouched.
        if checkout_venv is not None:
            assert (ROOT / ".venv").is_symlink() and os.readlink(ROOT / ".venv") == checkout_venv
    finally:
        stop_workers(home)
