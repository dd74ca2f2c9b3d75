"""``compass-hook bench hook``: the UserPromptSubmit hook measured exactly as hooks.json runs it, next to
the floor ``python -I -S -c 'import json,socket'`` measured in the same run. Figures, never pass/fail."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from .._env import scoped_environ

WARM_PROMPT = "add retry with backoff to the billing queue worker before the release"
DRIFT_PROMPT = "just force push to main and skip the tests"
# Standing instructions in force in the benchmark project: every warm prompt looks them up and renders them.
RULES = ("Never use pandas in this project; we're standardised on polars.",
         "From now on, keep every answer under 150 words.",
         "Always run the test suite before you tell me something is fixed.")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def _wait_for(done: Any, since: float, timeout_s: float) -> float | None:
    """Seconds from ``since`` until ``done()`` (polled), None when it was not done within ``timeout_s``."""
    while not done():
        if time.monotonic() - since > timeout_s:
            return None
        time.sleep(0.2)
    return time.monotonic() - since


def _timed(argv: list[str], stdin: bytes, env: dict[str, str], timeout: float) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, timeout=timeout)
    return (time.perf_counter() - t0) * 1000.0, proc.stdout


def _payload(prompt: str, cwd: str, n: int) -> bytes:
    return json.dumps({"session_id": f"bench-{os.getpid()}", "transcript_path": "", "cwd": cwd,
                       "prompt_id": f"p{n}", "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                       "prompt": prompt}).encode()


def _context(out: bytes) -> str:
    try:
        return json.loads(out)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return ""


def run_bench_hook(runs: int, memories: int, home: Path, progress: Any = None,
                   texts: Path | None = None, instructions: int = len(RULES)) -> dict[str, Any]:
    from compass_hooks.cli.cmd_demo import hook_command
    from compass_hooks.paths import get_paths
    from compass_hooks.worker import client

    os.environ.pop("COMPASS_NO_WORKER", None)
    paths = get_paths().ensure()
    root = paths.plugin_root
    project_dir = home / "project"
    (project_dir / ".git").mkdir(parents=True, exist_ok=True)
    command, timeout = hook_command(root)
    env = dict(os.environ, CLAUDE_PLUGIN_ROOT=str(root))
    py = root / ".venv" / "bin" / "python"
    floor_cmd = f"'{py if py.exists() else sys.executable}' -I -S -c 'import json,socket'"

    # 1. The store: `memories` synthetic memories in the benchmark project (vectors only; no model time).
    from compass_hooks.core import Core
    from compass_hooks.memory.project import project_id

    from .. import membench as mbench

    core = Core(paths)
    model = core.embedder.name
    from compass_hooks.drift.scorer import get_state

    try:
        wants_index = get_state(core).model().uses_neighbours
    except Exception:  # no calibration for this model: drift scores nothing, the hook is timed all the same
        wants_index = False
    t0 = time.perf_counter()
    corpus = mbench.corpus_texts(texts) if texts else None
    mbench.fill_store(core, memories, project=project_id(str(project_dir)), corpus=corpus)
    fill_s = time.perf_counter() - t0
    if instructions:
        from compass_hooks.memory.standing import active, detect

        rules = [detect.Rule("set", t, 0, len(t), "project", True, (), 1.0, "en") for t in RULES[:instructions]]
        active.apply(core.store, rules, project_id(str(project_dir)), None, None)
    core.close()

    # 2. Cold start: no worker; the hook spawns it and waits up to hooks.cold_start_s.
    client.stop_worker(paths)
    cold_at = time.monotonic()
    cold_ms, out = _timed(["sh", "-c", command], _payload(DRIFT_PROMPT, str(project_dir), 0), env, timeout)
    cold_ctx = _context(out)
    client.ensure_worker(paths, wait_s=120)  # if the cold hook gave up, let the worker finish warming
    # A fresh data dir: the worker indexes the drift dev items in a low-priority process of its own and scores
    # without the nearest-dev-item features meanwhile. The warm figures below are the steady state: wait for it.
    index_s = (_wait_for(lambda: any((paths.data / "cache").glob("drift-neighbours-*.npz")), cold_at, 300)
               if wants_index else None)

    # 3. Warm: the hook command (native client if built), the same with the Python client only, and the
    #    floor, interleaved so machine load hits all three alike.
    from compass_hooks.hookclient.native import status as client_status

    native = client_status()["state"] == "ok" and os.environ.get("COMPASS_FAST_CLIENT") != "0"
    py_env = dict(env, COMPASS_FAST_CLIENT="0")
    hook_ms: list[float] = []
    py_ms: list[float] = []
    floor_ms: list[float] = []
    injected = 0
    for i in range(3):  # warm-up (page cache, settings cache)
        _timed(["sh", "-c", command], _payload(WARM_PROMPT, str(project_dir), i), env, timeout)
    for i in range(runs):
        ms, out = _timed(["sh", "-c", command], _payload(WARM_PROMPT, str(project_dir), 100 + i), env, timeout)
        hook_ms.append(ms)
        injected += bool(_context(out))
        if native:
            py_ms.append(_timed(["sh", "-c", command], _payload(WARM_PROMPT, str(project_dir), 5000 + i), py_env,
                                timeout)[0])
        floor_ms.append(_timed(["sh", "-c", floor_cmd], b"", env, timeout)[0])
        if progress:
            progress(1)
    client.stop_worker(paths)
    med, fmed = statistics.median(hook_ms), statistics.median(floor_ms)
    python_client = None
    if py_ms:
        pmed = statistics.median(py_ms)
        python_client = {"median": round(pmed, 1), "p95": round(_pct(py_ms, 0.95), 1),
                         "ratio_median": round(pmed / fmed, 2) if fmed else None}
    return {
        "client": "native" if native else "python",
        "model": model, "memories": memories, "texts": str(texts) if texts else "synthetic",
        "fill_s": round(fill_s, 2), "runs": runs, "instructions": instructions,
        "hook_ms": {"median": round(med, 1), "p95": round(_pct(hook_ms, 0.95), 1), "min": round(min(hook_ms), 1)},
        "floor_ms": {"median": round(fmed, 1), "p95": round(_pct(floor_ms, 0.95), 1), "min": round(min(floor_ms), 1)},
        "ratio_median": round(med / fmed, 2) if fmed else None,
        "python_client_ms": python_client,
        "context_injected": f"{injected}/{runs}",
        "cold_start_ms": round(cold_ms, 0), "cold_start_context": bool(cold_ctx),
        "cold_start_block": cold_ctx.splitlines()[0] if cold_ctx else None,
        "neighbours_expected": wants_index, "neighbour_index_s": None if index_s is None else round(index_s, 1),
        "command": command, "floor": floor_cmd, "targets": {"ratio_median": 1.3, "cold_start_ms": 3000},
    }


@click.command("hook")
@click.option("--runs", "-n", type=click.IntRange(3, 1000), default=30, show_default=True, help="Warm hook runs.")
@click.option("--memories", type=click.IntRange(0, 1_000_000), default=10_000, show_default=True,
              help="Memories in the store.")
@click.option("--texts", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Store texts: a LoCoMo .json or JSONL {\"text\"} lines, cycled (default: synthetic short turns "
                   "from a 60-word vocabulary, a worst case for keyword search).")
@click.option("--instructions", type=click.IntRange(0, len(RULES)), default=len(RULES), show_default=True,
              help="Standing instructions in force in the benchmark project (each prompt looks them up and shows them).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def bench_hook(runs: int, memories: int, texts: Path | None, instructions: int, as_json: bool) -> None:
    """Time the UserPromptSubmit hook exactly as hooks.json runs it (warm worker, default model, a store of
    --memories memories, in a throwaway data dir) next to the floor `python -I -S -c 'import json,socket'`
    measured in the same run, plus the cold start (no worker) to first context."""
    from compass_hooks.cli.cmd_demo import carry_calibrations, throwaway_env

    home = Path(tempfile.mkdtemp(prefix="compass-bench-hook-"))
    try:
        carry_calibrations(home)  # a model calibrated on this machine scores drift here too
        with scoped_environ(**throwaway_env(home), COMPASS_NO_WORKER=None):
            if as_json:
                report = run_bench_hook(runs, memories, home, texts=texts, instructions=instructions)
            else:
                with click.progressbar(length=runs, label="hook runs", file=sys.stderr) as bar:
                    report = run_bench_hook(runs, memories, home, progress=bar.update, texts=texts,
                                            instructions=instructions)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if as_json:
        from compass_hooks.cli import echo_json

        echo_json(report)
        return
    h, f = report["hook_ms"], report["floor_ms"]
    click.echo(f"UserPromptSubmit hook, warm worker ({report['model']}, {report['memories']} memories: "
               f"{report['texts']}, {report['instructions']} standing instructions), {runs} runs:")
    click.echo(f"  hook   median {h['median']} ms  p95 {h['p95']} ms  ({report['client']} client; context injected "
               f"{report['context_injected']})")
    pc = report["python_client_ms"]
    if pc:
        click.echo(f"  python median {pc['median']} ms  p95 {pc['p95']} ms  (COMPASS_FAST_CLIENT=0: "
                   f"{pc['ratio_median']}x the floor)")
    click.echo(f"  floor  median {f['median']} ms  p95 {f['p95']} ms  ({report['floor']})")
    click.echo(f"  ratio  {report['ratio_median']}x the floor (target <= 1.3x)")
    click.echo(f"cold start to first context: {report['cold_start_ms']:.0f} ms "
               f"({'context: ' + report['cold_start_block'] if report['cold_start_context'] else 'no context: failed open'};"
               f" target <= 3000 ms)")
    idx = report["neighbour_index_s"]
    if idx is not None or report["neighbours_expected"]:
        click.echo("drift dev items indexed in the background "
                   + (f"{idx} s after the cold start (scored without the nearest-dev-item features until then)"
                      if idx is not None else "not within 300 s: see the worker log"))


def register(group: click.Group) -> None:
    group.add_command(bench_hook)
