"""``compass-hook uninstall [--keep-data] [--yes] [--dry-run] [--json]``: undo every install path, in one command.

In order, printing each step: stop the workers it owns (this data dir's, and any running from one of its venvs),
take out the editor entries ``mcp config --write`` recorded, unregister the Claude Code plugin and the
``compass-local`` marketplace (when a ``claude`` CLI is on PATH), remove the venvs a plugin install bootstrapped
(``~/.claude/plugins/data/compass-hooks-*/venv``), the export env, the models, the staged plugin copy,
``~/.local/bin/compass-hook`` when it points into our venvs, a checkout's ``.venv`` when it is install.sh's link to
the runtime, then the data (memories, audit log, config, logs) unless ``--keep-data``, and the runtime venv last.

The command usually runs from that runtime venv: every module it needs is imported before anything is removed,
and the venv goes last, so the process (whose files stay readable while it runs) finishes its report. The dev
envs ``tests/run`` keeps in ``~/.cache/compass-hooks/dev-venv-*`` are a developer's, not an install's: left alone.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
from functools import partial
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import click

from . import echo_json, set_exit_status

MARKETPLACE = "compass-local"
PLUGIN = "compass-hooks@compass-local"
CLAUDE_TIMEOUT_S = 120


@dataclass
class Step:
    what: str
    path: str | None = None
    run: Callable[[], str] | None = None  # does it; returns what was done (one line)
    action: str = "pending"  # done | skipped | failed | kept
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "path": self.path, "action": self.action, "detail": self.detail}


@dataclass
class Layout:
    """Everything an install may have put on this machine, found before anything is touched."""

    data: Path
    runtime_venv: Path
    models: Path
    export_env: Path
    plugin_copy: Path
    bootstrap_venvs: list[Path]
    bin_link: Path
    checkout_links: list[Path]
    running_venv: Path
    editor_entries: list[dict[str, str]] = field(default_factory=list)
    claude: str | None = None


def _real(p: Path | str) -> str:
    return os.path.realpath(str(p))


def _inside(path: Path | str, roots: list[Path]) -> bool:
    rp = _real(path)
    return any(rp == _real(r) or rp.startswith(_real(r) + os.sep) for r in roots)


def find_layout() -> Layout:
    from .. import dirs

    home = Path.home()
    data = Path(dirs.user_data_dir())
    runtime = Path(dirs.runtime_venv())
    boots = sorted(Path(p) for p in glob.glob(str(home / ".claude" / "plugins" / "data" / "compass-hooks-*" / "venv")))
    checkouts = []
    for venv in [runtime, *boots, Path(sys.prefix)]:
        rec = dirs.install_record(str(venv))
        co = rec.get("checkout")
        if co:
            link = Path(co) / ".venv"
            if link.is_symlink() and _real(link) == _real(venv) and link not in checkouts:
                checkouts.append(link)
    # Imported now, before anything is removed: the command usually runs from the venv it removes last.
    from mcp_server import editors
    from ..worker import client as _client, lifecycle as _lifecycle  # noqa: F401

    return Layout(data=data, runtime_venv=runtime, models=Path(dirs.models_dir()),
                  export_env=Path(dirs.export_env_dir()), plugin_copy=data / "plugin", bootstrap_venvs=boots,
                  bin_link=home / ".local" / "bin" / "compass-hook", checkout_links=checkouts,
                  running_venv=Path(sys.prefix), editor_entries=editors.written(), claude=shutil.which("claude"))


def _our_workers(venvs: list[Path], data: Path) -> list[int]:
    """Pids of this user's workers that serve ``data`` or run from one of ``venvs``."""
    from ..worker.client import WORKER_MODULE
    from ..worker.lifecycle import cmdline

    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
        except OSError:
            continue
        args = cmdline(pid)
        if WORKER_MODULE not in args or not args:
            continue
        home = args[args.index("--home") + 1] if "--home" in args[:-1] else None
        exe = args[0]
        if (home and _real(home) == _real(data)) or _inside(exe, venvs) or _inside(os.path.dirname(exe), venvs):
            found.append(pid)
    return found


def _stop_workers(layout: Layout) -> str:
    from ..worker.client import stop_worker
    from ..worker.lifecycle import pid_alive

    done = []
    result = stop_worker()
    if result.get("was_running"):
        done.append(f"pid {result.get('pid')}")
    venvs = [layout.runtime_venv, *layout.bootstrap_venvs]
    for pid in _our_workers(venvs, layout.data):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        done.append(f"pid {pid}")
    return "stopped " + ", ".join(done) if done else "no worker was running"


def _remove_editor_entry(client: str, path: str) -> str:
    from mcp_server import editors

    res = editors.remove_config(client, Path(path))
    if res.action == "removed":
        return f"removed the compass entry from {path}" + (f" (backup {res.backup})" if res.backup else "")
    return f"no compass entry left in {path}"


def _claude(claude: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([claude, *args], capture_output=True, text=True, timeout=CLAUDE_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)


def _unregister_plugin(claude: str) -> str:
    listed = _claude(claude, "plugin", "list")
    if PLUGIN not in listed.stdout:
        return f"{PLUGIN} was not installed"
    proc = _claude(claude, "plugin", "uninstall", PLUGIN)
    if proc.returncode != 0:
        raise RuntimeError(" ".join((proc.stderr or proc.stdout).split())[:300] or f"exit {proc.returncode}")
    return f"claude plugin uninstall {PLUGIN}"


def _remove_marketplace(claude: str) -> str:
    listed = _claude(claude, "plugin", "marketplace", "list")
    if MARKETPLACE not in listed.stdout:
        return f"no {MARKETPLACE} marketplace registered"
    proc = _claude(claude, "plugin", "marketplace", "remove", MARKETPLACE)
    if proc.returncode != 0:
        raise RuntimeError(" ".join((proc.stderr or proc.stdout).split())[:300] or f"exit {proc.returncode}")
    return f"claude plugin marketplace remove {MARKETPLACE}"


def _rmtree(path: Path) -> str:
    if not path.exists() and not path.is_symlink():
        return "not there"
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path)
    return f"removed {path}"


def _unlink_if_ours(link: Path, venvs: list[Path]) -> str:
    if not link.is_symlink():
        return "not ours (not a link into a compass-hooks venv): left alone" if link.exists() else "not there"
    if not _inside(os.path.realpath(link), venvs) and not _inside(os.path.dirname(os.readlink(link)), venvs):
        return f"points at {os.readlink(link)}, not ours: left alone"
    link.unlink()
    return f"removed {link}"


def _remove_data(layout: Layout, keep: bool) -> str:
    """The data dir's content but the runtime venv (removed last): all of it, or with ``keep`` only what is
    not the user's data (the worker's run dir, the hook settings cache)."""
    data = layout.data
    if not data.exists():
        return "not there"
    if keep:
        run = data / "run"
        if run.exists():
            shutil.rmtree(run)
        return f"kept {data}: memories, audit log, config, logs (--keep-data)"
    for child in sorted(data.iterdir()):
        if _real(child) == _real(layout.runtime_venv):
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    return f"removed {data}: memories, audit log, config, logs"


def _check_data_dir(data: Path) -> None:
    """Never remove a home, the root or a folder that is not a compass data dir (a COMPASS_HOME typo)."""
    real = _real(data)
    if real in ("/", _real(Path.home())) or _real(Path.home()).startswith(real + os.sep):
        raise click.ClickException(f"refusing: the data dir {data} is {real}, not a compass-hooks data dir")
    if data.exists():
        known = {"compass.db", "audit.log", "config.toml", "logs", "run", "venv", "models", "plugin", "anchors",
                 "calibration", "spool", "mcp-configs.json", "mcp-http-token"}
        names = {c.name for c in data.iterdir()}
        if names and not names & known:
            raise click.ClickException(f"refusing: {data} holds none of compass-hooks' files; check COMPASS_HOME")


def plan(layout: Layout, keep_data: bool) -> list[Step]:
    steps = [Step("stop the workers", str(layout.data), lambda: _stop_workers(layout))]
    for e in layout.editor_entries:
        steps.append(Step(f"{e['client']} editor entry", e["path"],
                          partial(_remove_editor_entry, e["client"], e["path"])))
    claude = layout.claude
    if claude:
        steps.append(Step("Claude Code plugin", PLUGIN, lambda: _unregister_plugin(claude)))
        steps.append(Step("Claude Code marketplace", MARKETPLACE, lambda: _remove_marketplace(claude)))
    else:
        steps.append(Step("Claude Code plugin", PLUGIN, None, "skipped", "no claude CLI on PATH"))
    ours = [layout.runtime_venv, *layout.bootstrap_venvs]
    last = []
    for venv in layout.bootstrap_venvs:
        if _real(venv) == _real(layout.running_venv):
            last.append(Step("bootstrapped venv", str(venv), partial(_rmtree, venv)))
        else:
            steps.append(Step("bootstrapped venv", str(venv), partial(_rmtree, venv)))
    steps.append(Step("model export env", str(layout.export_env), lambda: _rmtree(layout.export_env)))
    steps.append(Step("models", str(layout.models), lambda: _rmtree(layout.models)))
    steps.append(Step("staged plugin copy", str(layout.plugin_copy), lambda: _rmtree(layout.plugin_copy)))
    steps.append(Step("compass-hook on PATH", str(layout.bin_link), lambda: _unlink_if_ours(layout.bin_link, ours)))
    for link in layout.checkout_links:
        steps.append(Step("checkout's .venv link", str(link), partial(_unlink_if_ours, link, ours)))
    steps.append(Step("data" if not keep_data else "data (kept)", str(layout.data),
                      lambda: _remove_data(layout, keep_data)))
    steps.append(Step("runtime venv", str(layout.runtime_venv), lambda: _rmtree(layout.runtime_venv)))
    steps += last
    if not keep_data:  # the data dir itself, once the runtime venv inside it is gone
        steps.append(Step("data dir", str(layout.data), lambda: _rmdir_if_empty(layout.data)))
    return steps


def _rmdir_if_empty(path: Path) -> str:
    try:
        path.rmdir()
    except FileNotFoundError:
        return "not there"
    except OSError:
        return f"left {path}: not empty"
    return f"removed {path}"


@click.command("uninstall")
@click.option("--keep-data", is_flag=True, help="Keep the memories, audit log, config and logs (remove the rest).")
@click.option("--yes", is_flag=True, help="Do not ask first (needed when stdin is not a terminal).")
@click.option("--dry-run", is_flag=True, help="Only print what would be removed.")
@click.option("--json", "as_json", is_flag=True, help="Print the steps and their outcome as JSON.")
def uninstall_cmd(keep_data: bool, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Remove compass-hooks from this machine: workers, editor entries, the Claude Code plugin, venvs, models,
    the plugin copy, the command on PATH and (unless --keep-data) your memories, audit log, config and logs.

    Every step is printed. The dev envs of tests/run (~/.cache/compass-hooks/dev-venv-*) are left alone.
    """
    layout = find_layout()
    _check_data_dir(layout.data)
    steps = plan(layout, keep_data)
    if dry_run:
        if as_json:
            echo_json({"dry_run": True, "steps": [s.as_dict() | {"action": s.action if s.run is None else "would"}
                                                  for s in steps]})
        else:
            for s in steps:
                click.echo(f"would: {s.what}: {s.path or ''}" + (f" ({s.detail})" if s.detail else ""))
        return
    if not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("uninstalling needs --yes when stdin is not a terminal (see --dry-run first)")
        for s in steps:
            click.echo(f"  {s.what}: {s.path or ''}")
        what = "everything above" + ("" if not keep_data else " (your data is kept)")
        click.confirm(f"Remove {what}?", abort=True)
    failed = 0
    for s in steps:
        if s.run is not None:
            try:
                s.detail = s.run()
                s.action = "kept" if s.detail.startswith("kept") else (
                    "skipped" if s.detail.startswith(("not there", "no ", "not ours")) or "left alone" in s.detail
                    or s.detail.endswith("was not installed") else "done")
            except Exception as exc:  # one step failing must not stop the others: report it and go on
                s.action, s.detail = "failed", f"{type(exc).__name__}: {exc}"
                failed += 1
        if not as_json:
            mark = {"done": "ok  ", "skipped": "--  ", "kept": "kept", "failed": "FAIL"}.get(s.action, "    ")
            click.echo(f"{mark} {s.what}: {s.detail}")
    set_exit_status(1 if failed else 0)
    if as_json:
        echo_json({"steps": [s.as_dict() for s in steps], "kept_data": keep_data, "failed": failed})
    else:
        click.echo("compass-hooks is uninstalled" + (" (your data is kept in " + str(layout.data) + ")"
                                                     if keep_data else "") if not failed
                   else f"{failed} step(s) failed (see above); fix them and run `compass-hook uninstall` again")
    if failed:
        raise SystemExit(1)


def register(cli: click.Group) -> None:
    cli.add_command(uninstall_cmd)

