"""``compass-hook bench load``: concurrent sessions through the real hook path.

Each session is a thread that runs the UserPromptSubmit command from
``hooks/hooks.json`` exactly as Claude Code does (``sh -c`` with
``CLAUDE_PLUGIN_ROOT`` set, the event JSON on stdin), one prompt after another,
for the given time. Everything runs in a throw-away data dir with its own
worker. Afterwards it checks that every hook exited 0 with valid (or no)
stdout, that every prompt was stored as a memory (captures are written after
the hook answers, so it waits for them), and that the audit log verifies.

Interruptions (one at a time): ``--stop-end`` runs ``compass-hook worker stop``
the moment the load ends (with its backlog still queued), ``--stop-mid`` runs it
halfway through while the sessions go on, ``--kill-mid`` sends the worker SIGKILL
halfway through. Each prints what was answered against what was stored right
after the interruption (plus what waited on disk in the capture spool) and
after the next worker took over: nothing answered may be lost.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import click

from .._env import scoped_environ

CAPTURE_WAIT_S = 60.0  # how long to wait for deferred captures after the last prompt
INTERRUPTS = ("stop-end", "stop-mid", "kill-mid")


def _hook_command(plugin_root: Path, event: str = "UserPromptSubmit") -> tuple[str, float]:
    """The shell command (and timeout) hooks.json registers for ``event``."""
    from compass_hooks.cli.cmd_demo import hook_command

    try:
        command, timeout = hook_command(plugin_root, event)
        return str(command), timeout
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        path = plugin_root / "hooks" / "hooks.json"
        raise click.ClickException(f"cannot read the {event} hook from {path}: {exc}") from None


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[k]


class _Session(threading.Thread):
    def __init__(self, n: int, command: str, timeout: float, env: dict[str, str], cwd: Path, until: float):
        super().__init__(name=f"bench-session-{n}", daemon=True)
        self.n, self.command, self.timeout, self.env, self.cwd, self.until = n, command, timeout, env, cwd, until
        self.session_id = f"bench-load-{os.getpid()}-{n}"
        self.sent: list[str] = []
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def run(self) -> None:
        i = 0
        while time.monotonic() < self.until:
            prompt = f"load test session {self.n} prompt {i}: please keep the retry logic in fetch_user idempotent"
            payload = {"session_id": self.session_id, "transcript_path": str(self.cwd / f"{self.session_id}.jsonl"),
                       "cwd": str(self.cwd), "prompt_id": f"p{i}", "permission_mode": "default",
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt}
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(["sh", "-c", self.command], input=json.dumps(payload).encode(),
                                      capture_output=True, env=self.env, cwd=str(self.cwd), timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.errors.append(f"prompt {i}: hook timed out after {self.timeout:g}s")
                i += 1
                continue
            self.latencies.append((time.perf_counter() - t0) * 1000)
            self.sent.append(prompt)
            problem = _check_output(proc.returncode, proc.stdout)
            if problem:
                self.errors.append(f"prompt {i}: {problem}")
            i += 1


def _check_output(code: int, stdout: bytes) -> str | None:
    if code != 0:
        return f"exit {code}"
    if not stdout.strip():
        return None
    try:
        out = json.loads(stdout)
    except ValueError:
        return f"stdout is not JSON: {stdout[:80]!r}"
    spec = out.get("hookSpecificOutput") if isinstance(out, dict) else None
    if spec is not None and spec.get("hookEventName") != "UserPromptSubmit":
        return f"hookEventName is {spec.get('hookEventName')!r}"
    return None


def _stored_prompts(db: Path, audit_log: Path) -> set[str]:
    if not db.exists():
        return set()
    from compass_hooks.memory.store import Store

    store = Store(db)
    try:
        return {row["text"] for row in store.iter_rows()}
    finally:
        store.close()


def _on_disk(paths: Any) -> dict[str, int]:
    """Captures answered but not stored yet: waiting in the capture spool."""
    from compass_hooks import spool

    return {"spooled": spool.count(paths.data)}


def _where_lost(paths: Any, lost: list[str]) -> dict[str, Any]:
    """Where the prompts answered but not stored are: a spool entry still waiting or set aside, or nowhere;
    and the warnings the logs hold (a failed run names its cause instead of leaving a guess)."""
    from compass_hooks import spool

    folder = spool.spool_dir(paths.data)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    found: dict[str, list[str]] = {}
    for name in names:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        for prompt in lost:
            if json.dumps(prompt)[1:-1] in text:
                found.setdefault(prompt, []).append(name)
    warnings: list[str] = []
    for name in ("worker.log", "memory.log", "hook.log"):
        try:
            with open(paths.logs / name, encoding="utf-8", errors="replace") as fh:
                lines = fh.readlines()
        except OSError:
            continue
        warnings += [f"{name}: {line.rstrip()[:300]}" for line in lines
                     if " WARNING " in line or " ERROR " in line][-10:]
        if name == "worker.log":  # which workers started, stopped or gave way to another (INFO lines)
            warnings += [f"{name}: {line.rstrip()[:300]}" for line in lines[-8:]]
    return {"in_spool": {p: found.get(p, []) for p in lost[:5]}, "spooled": spool.count(paths.data),
            "set_aside": spool.bad_count(paths.data), "log_warnings": warnings}


def _interrupt(mode: str, paths: Any, env: dict[str, str]) -> dict[str, Any]:
    """Stop the worker as a user does (`compass-hook worker stop`) or SIGKILL it; how long it took, which pid."""
    from compass_hooks.worker import lifecycle

    pid = lifecycle.read_pid(paths)
    t0 = time.monotonic()
    if mode == "kill-mid":
        if pid and lifecycle.is_our_worker(pid, paths):
            os.kill(pid, signal.SIGKILL)
        return {"mode": mode, "pid": pid, "took_s": round(time.monotonic() - t0, 2)}
    proc = subprocess.run([sys.executable, "-m", "compass_hooks", "worker", "stop", "--json"], env=env,
                          capture_output=True, timeout=60)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        result = {"error": proc.stderr.decode(errors="replace")[-300:]}
    return {"mode": mode, "pid": pid, "took_s": round(time.monotonic() - t0, 2), "exit": proc.returncode,
            "signalled": result.get("signalled"), "running_after": result.get("running")}


def run_load(sessions: int, seconds: float, model: str | None = None, plugin_root: Path | None = None,
             keep: bool = False, interrupt: str | None = None) -> dict[str, Any]:
    """Run the load and return the figures (see the module docstring). ``interrupt``: one of
    :data:`INTERRUPTS`."""
    if interrupt is not None and interrupt not in INTERRUPTS:
        raise ValueError(f"interrupt must be one of {INTERRUPTS}")
    from compass_hooks.audit.verify import verify
    from compass_hooks.cli.cmd_demo import carry_calibrations, throwaway_env
    from compass_hooks.memory.store import read_memories
    from compass_hooks.paths import get_paths
    from compass_hooks.worker import client

    root = plugin_root or get_paths().plugin_root
    command, timeout = _hook_command(root)
    tmp = Path(tempfile.mkdtemp(prefix="compass-load-"))
    home = tmp / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("COMPASS_NO_WORKER", "COMPASS_SOCKET", "CLAUDE_PLUGIN_DATA")}
    throwaway = throwaway_env(home)
    if model:
        throwaway["COMPASS_MODEL"] = model
    env.update({**throwaway, "CLAUDE_PLUGIN_ROOT": str(root), "CLAUDE_PROJECT_DIR": str(tmp)})
    env_here: dict[str, str | None] = {**throwaway, "COMPASS_SOCKET": None}
    try:
        carry_calibrations(home)  # a model calibrated on this machine scores drift here too
        with scoped_environ(**env_here):  # so get_paths() below names the throw-away dir
            paths = get_paths().ensure()
            t0 = time.monotonic()
            warm = client.ensure_worker(paths, wait_s=120)  # a cold start is measured by `bench hook`, not here
            warm_s = time.monotonic() - t0
            until = time.monotonic() + seconds
            threads = [_Session(n, command, timeout, env, tmp, until) for n in range(sessions)]
            started = time.monotonic()
            for t in threads:
                t.start()
            cut: dict[str, Any] | None = None
            if interrupt in ("stop-mid", "kill-mid"):
                time.sleep(seconds / 2)
                answered_before = sum(len(t.sent) for t in threads)
                cut = _interrupt(interrupt, paths, env)
                cut["at_s"] = round(time.monotonic() - started, 2)
                cut["answered_before"] = answered_before
            for t in threads:
                t.join(seconds + timeout + 30)
            elapsed = time.monotonic() - started
            sent = {p for t in threads for p in t.sent}
            if interrupt == "stop-end":
                cut = _interrupt(interrupt, paths, env)
                cut["at_s"] = round(time.monotonic() - started, 2)
                stored_then = _stored_prompts(paths.db, paths.audit_log)
                cut.update({"answered": len(sent), "stored": len(sent & stored_then), **_on_disk(paths)})
            if interrupt is not None:
                # The next worker, as the next prompt's hook would start it: a hook that failed open while the
                # stopped worker was still draining left its capture on disk for that worker, not for a timer.
                client.ensure_worker(paths, wait_s=120)
            deadline = time.monotonic() + CAPTURE_WAIT_S
            stored = _stored_prompts(paths.db, paths.audit_log)
            while sent - stored and time.monotonic() < deadline:
                time.sleep(0.25)
                stored = _stored_prompts(paths.db, paths.audit_log)
            lost = sorted(sent - stored)
            lost_detail = _where_lost(paths, lost) if lost else None
            # A stored batch's audit entries follow its commit (an intent until then): wait for them too.
            report = verify(paths, read_memories)
            while report.pending and time.monotonic() < deadline:
                time.sleep(0.25)
                report = verify(paths, read_memories)
            client.stop_worker(paths)
            lat = [x for t in threads for x in t.latencies]
            errors = [e for t in threads for e in t.errors]
            return {
                "interrupt": cut,
                "sessions": sessions, "seconds": round(elapsed, 2), "model": warm.get("model"),
                "warm_start_s": round(warm_s, 2), "prompts": len(lat), "errors": len(errors),
                "error_samples": errors[:5], "stored": len(sent & stored), "lost": len(lost), "lost_samples": lost[:3],
                "lost_detail": lost_detail,
                "audit_ok": report.ok, "audit_entries": report.entries,
                "audit_problem": report.problems[0].message if report.problems else None,
                "throughput_per_s": round(len(lat) / elapsed, 2) if elapsed else 0.0,
                "latency_ms": {"p50": round(_percentile(lat, 0.50), 1), "p95": round(_percentile(lat, 0.95), 1),
                               "p99": round(_percentile(lat, 0.99), 1), "max": round(max(lat, default=0.0), 1),
                               "mean": round(statistics.fmean(lat), 1) if lat else 0.0},
                "ok": not errors and not lost and report.ok and bool(lat),
            }
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


@click.command("load")
@click.option("--sessions", type=click.IntRange(1, 64), default=8, show_default=True, help="Concurrent sessions.")
@click.option("--seconds", type=click.FloatRange(0.5, 3600), default=60.0, show_default=True,
              help="How long every session keeps sending prompts.")
@click.option("--model", default=None, help="Embedding model for the run (default: the configured one).")
@click.option("--keep", is_flag=True, help="Keep the throw-away data dir (printed) for inspection.")
@click.option("--stop-end", "interrupt", flag_value="stop-end",
              help="Run `compass-hook worker stop` the moment the load ends, backlog and all.")
@click.option("--stop-mid", "interrupt", flag_value="stop-mid",
              help="Run `compass-hook worker stop` halfway through; the sessions go on.")
@click.option("--kill-mid", "interrupt", flag_value="kill-mid",
              help="SIGKILL the worker halfway through; the sessions go on.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def bench_load(sessions: int, seconds: float, model: str | None, keep: bool, interrupt: str | None,
               as_json: bool) -> None:
    """Concurrent sessions sending prompts through the real hook launcher.

    Checks that no hook failed, no prompt was lost (each one stored as a memory)
    and the audit log verifies; prints latency figures. Exits 1 on any failure.
    With --stop-end, --stop-mid or --kill-mid the worker is stopped or killed as
    described, and answered vs stored is printed after the interruption and after
    the next worker took over. Runs in a throw-away data dir with its own worker;
    your store is not touched.
    """
    from compass_hooks.cli import echo_json

    click.echo(f"bench load: {sessions} session{'s' if sessions != 1 else ''} sending prompts through the "
               f"UserPromptSubmit hook for {seconds:g} s with {'model ' + model if model else 'the configured model'}"
               f"{', --' + interrupt if interrupt else ''}, in a throw-away data dir (then up to "
               f"{CAPTURE_WAIT_S:g} s waiting for the captures)", err=True)
    out = run_load(sessions, seconds, model=model, keep=keep, interrupt=interrupt)
    if as_json:
        echo_json(out)
    else:
        lat = out["latency_ms"]
        click.echo(f"{out['sessions']} sessions x {out['seconds']}s, model {out['model']}: {out['prompts']} prompts, "
                   f"{out['throughput_per_s']}/s")
        click.echo(f"hook latency ms: p50 {lat['p50']}  p95 {lat['p95']}  p99 {lat['p99']}  max {lat['max']}")
        cut = out["interrupt"]
        if cut and cut["mode"] == "stop-end":
            click.echo(f"worker stop at {cut['at_s']}s took {cut['took_s']}s"
                       f"{' (signalled)' if cut.get('signalled') else ''}: answered {cut['answered']}, stored "
                       f"{cut['stored']}, waiting on disk {cut['spooled']}")
        elif cut:
            click.echo(f"{'worker stop' if cut['mode'] == 'stop-mid' else 'kill -9'} at {cut['at_s']}s "
                       f"(pid {cut['pid']}, {cut['answered_before']} answered before)")
        click.echo(f"answered {out['prompts']}, errors {out['errors']}, stored {out['stored']}, lost {out['lost']}, "
                   f"audit {'OK' if out['audit_ok'] else 'FAILED: ' + str(out['audit_problem'])} "
                   f"({out['audit_entries']} entries)")
        for e in out["error_samples"] + out["lost_samples"]:
            click.echo(f"  {e}")
        detail = out["lost_detail"]
        if detail:
            click.echo(f"  lost prompts in the spool: {sum(bool(v) for v in detail['in_spool'].values())} of "
                       f"{len(detail['in_spool'])}; waiting {detail['spooled']}, set aside {detail['set_aside']}")
            for line in detail["log_warnings"]:
                click.echo(f"  {line}")
    if not out["ok"]:
        raise SystemExit(1)


def register(group: click.Group) -> None:
    group.add_command(bench_load)
