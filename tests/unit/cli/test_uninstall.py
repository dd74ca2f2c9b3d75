"""`compass-hook uninstall` on a fake install layout in the test's fresh HOME (CliRunner, the fast loop): every
piece an install path leaves is removed, what is not ours is left alone, --keep-data keeps the store. The real
thing, after a real ./install.sh, is tests/test_e2e_uninstall.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compass_hooks.cli import cli
from mcp_server import editors


def _venv(path: Path, record: dict | None = None) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "compass-hook").write_text("#!/bin/sh\n")
    (path / "bin" / "compass-hook").chmod(0o755)
    (path / "compass-install.json").write_text(json.dumps(record or {}))
    return path


@pytest.fixture
def layout(tmp_path, compass_home, cli_runner, monkeypatch):
    home = Path(os.environ["HOME"])
    data = compass_home
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    runtime = _venv(data / "venv", {"data": str(data), "checkout": str(checkout)})
    (checkout / ".venv").symlink_to(runtime)
    other_checkout = tmp_path / "dev"
    other_checkout.mkdir()
    dev_env = home / ".cache" / "compass-hooks" / "dev-venv-abc"
    _venv(dev_env)
    (other_checkout / ".venv").symlink_to(dev_env)
    boot = _venv(home / ".claude" / "plugins" / "data" / "compass-hooks-compass-local" / "venv")
    export_env = home / ".cache" / "compass-hooks" / "export-env"
    export_env.mkdir(parents=True)
    (data / "models" / "minilm").mkdir(parents=True)
    (data / "plugin" / "compass-hooks").mkdir(parents=True)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "compass-hook").symlink_to(runtime / "bin" / "compass-hook")
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text(json.dumps({"mcpServers": {"fs": {"command": "fs-mcp"}}}))
    editors.write_config("cursor", cursor)
    r = cli_runner.invoke(cli, ["remember", "never push to main", "--project", str(checkout)])
    assert r.exit_code == 0, r.output
    # A claude CLI that records what it was asked and lists the plugin as installed.
    fake = tmp_path / "fakebin"
    fake.mkdir()
    log = tmp_path / "claude.log"
    (fake / "claude").write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                                 'case "$*" in "plugin list") echo "compass-hooks@compass-local";; '
                                 '"plugin marketplace list") echo "compass-local";; esac\n')
    (fake / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    return {"home": home, "data": data, "runtime": runtime, "checkout": checkout, "dev_link": other_checkout / ".venv",
            "dev_env": dev_env, "boot": boot, "export_env": export_env, "cursor": cursor, "claude_log": log}


def test_dry_run_changes_nothing(cli_runner, layout):
    r = cli_runner.invoke(cli, ["uninstall", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    steps = json.loads(r.stdout)["steps"]
    assert {s["what"] for s in steps} >= {"stop the workers", "cursor editor entry", "Claude Code plugin",
                                          "bootstrapped venv", "models", "runtime venv", "data"}
    assert layout["runtime"].exists() and (layout["data"] / "compass.db").exists()
    assert not layout["claude_log"].exists()


def test_needs_yes_off_a_terminal(cli_runner, layout):
    r = cli_runner.invoke(cli, ["uninstall"])
    assert r.exit_code == 2 and "--yes" in r.output
    assert layout["runtime"].exists()


def test_removes_everything_it_installed(cli_runner, layout):
    r = cli_runner.invoke(cli, ["uninstall", "--yes"])
    assert r.exit_code == 0, r.output
    assert "compass-hooks is uninstalled" in r.stdout
    home, data = layout["home"], layout["data"]
    assert not data.exists()
    assert not layout["boot"].exists() and not layout["export_env"].exists()
    assert not (home / ".local" / "bin" / "compass-hook").is_symlink()
    assert not (layout["checkout"] / ".venv").is_symlink()
    assert json.loads(layout["cursor"].read_text()) == {"mcpServers": {"fs": {"command": "fs-mcp"}}}
    calls = layout["claude_log"].read_text().splitlines()
    assert "plugin uninstall compass-hooks@compass-local" in calls
    assert "plugin marketplace remove compass-local" in calls
    # Not ours: a developer's env and its checkout link.
    assert layout["dev_env"].exists() and layout["dev_link"].is_symlink()


def test_keep_data(cli_runner, layout):
    r = cli_runner.invoke(cli, ["uninstall", "--yes", "--keep-data", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["kept_data"] and out["failed"] == 0
    data = layout["data"]
    assert (data / "compass.db").exists() and (data / "audit.log").exists()
    assert not (data / "venv").exists() and not (data / "models").exists() and not (data / "plugin").exists()
    # The data still verifies, and a new install finds the memory.
    assert cli_runner.invoke(cli, ["audit", "verify"]).exit_code == 0
    r = cli_runner.invoke(cli, ["list", "--all-projects"])
    assert "never push to main" in r.stdout


def test_a_link_that_is_not_ours_is_left_alone(cli_runner, layout, tmp_path):
    link = layout["home"] / ".local" / "bin" / "compass-hook"
    link.unlink()
    elsewhere = tmp_path / "my-own-compass-hook"
    elsewhere.write_text("#!/bin/sh\n")
    link.symlink_to(elsewhere)
    r = cli_runner.invoke(cli, ["uninstall", "--yes", "--json"])
    assert r.exit_code == 0, r.output
    step = next(s for s in json.loads(r.stdout)["steps"] if s["what"] == "compass-hook on PATH")
    assert step["action"] == "skipped" and link.is_symlink()


def test_refuses_a_data_dir_that_is_not_ours(cli_runner, tmp_path, monkeypatch):
    odd = tmp_path / "documents"
    odd.mkdir()
    (odd / "thesis.tex").write_text("...")
    monkeypatch.setenv("COMPASS_HOME", str(odd))  # the subject: a COMPASS_HOME pointing somewhere else
    r = cli_runner.invoke(cli, ["uninstall", "--yes"])
    assert r.exit_code == 1 and "refusing" in r.output and (odd / "thesis.tex").exists()


def test_stops_a_worker_it_owns(layout):
    """A real worker of this data dir (the dev env's python) is stopped first."""
    env = {**os.environ}
    env.pop("COMPASS_NO_WORKER", None)
    subprocess.run([sys.executable, "-m", "compass_hooks", "worker", "start"], env=env, check=True, timeout=60,
                   capture_output=True)
    proc = subprocess.run([sys.executable, "-m", "compass_hooks", "uninstall", "--yes", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    step = json.loads(proc.stdout)["steps"][0]
    assert step["what"] == "stop the workers" and step["detail"].startswith("stopped pid")
    status = subprocess.run([sys.executable, "-m", "compass_hooks", "worker", "status"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 3
