"""The hook client: what ``hooks/compass_hook.py`` (and ``compass-hook hook``) run.

Hot path (warm worker): read stdin, decode JSON, one request to the worker, one
JSON object (or nothing) on stdout. Imports on that path: json, os, sys, time,
socket and this package's import-light modules (settings, output, state,
worker.client) -- no click, numpy, onnxruntime, mcp, platformdirs, and not even
``compass_hooks.paths``/``config`` once the settings cache exists.

Fail open, always: any exception, no worker, a timeout, malformed / binary /
oversized stdin (read is capped at ``hooks.max_stdin_bytes``; the rest is
drained so Claude Code never blocks on a full pipe), an unknown event -> exit 0,
empty stdout, a line in the ``hook`` log. Never exit 2 (on UserPromptSubmit it
erases the prompt). After ``hooks.failures_before_notice`` failures in a row one
hook shows a short ``systemMessage`` (see state.py).

Cold start: no worker -> spawn one and wait up to ``hooks.cold_start_s`` for
readiness, then fail open and let it finish warming for the next prompt.
PreToolUse(Bash) is answered here without a worker (the guard's shell parser and rules are stdlib only).

Nothing answered is lost: a UserPromptSubmit or Stop that fails open (or passes
through while the environment is built) is written to the capture spool
(:mod:`compass_hooks.spool`, secrets and ``<private>`` spans taken out first) and
the worker stores it when it next runs.
"""

from __future__ import annotations

import json
import sys
import time
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import on the hook hot path
    from typing import Any, BinaryIO, Callable, TextIO

from .. import dirs
from ..worker.hooks import names, output, state
from . import settings as settings_mod

DRAIN_CHUNK = 1 << 20


class HookFailure(Exception):
    """A reason to fail open that is worth counting and logging."""


class Pending(Exception):
    """Expected pass-through (environment still being built): logged, not counted as a failure."""


def canonical(name: str) -> str:
    event = names.canonical(name)
    if event is None:
        raise HookFailure(f"unknown hook event {name!r}")
    return event


def _log(level: str, msg: str, *args: Any) -> None:
    try:
        from ..logs import get_logger

        getattr(get_logger("hook"), level)(msg, *args)
    except Exception:
        pass  # logging must never be the reason a hook fails


def _drain(stream: BinaryIO) -> None:
    try:
        while stream.read(DRAIN_CHUNK):
            pass
    except (OSError, ValueError):
        pass


def read_payload(stream: BinaryIO, max_bytes: int) -> dict[str, Any]:
    raw = stream.read(max_bytes + 1)
    if raw is None:
        raw = b""
    if len(raw) > max_bytes:
        _drain(stream)
        raise HookFailure(f"hook stdin is larger than {max_bytes} bytes (hooks.max_stdin_bytes)")
    if not raw.strip():
        raise HookFailure("hook stdin is empty")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HookFailure(f"hook stdin is not JSON ({type(exc).__name__})") from None
    if not isinstance(payload, dict):
        raise HookFailure("hook stdin is not a JSON object")
    return payload


def _environment(s: dict[str, Any]) -> str:
    """The worker's interpreter; raises Pending (and maybe starts the bootstrap) when there is none."""
    from . import bootstrap

    py = bootstrap.worker_python(s)
    if py is not None:
        return py
    notice = bootstrap.maybe_start(s)
    raise Pending(notice or "environment is being built")


def plugin_updated(s: dict[str, Any]) -> bool:
    return dirs.plugin_updated(settings_mod.bootstrap_dir(s), s["plugin_root"], sys.executable)


# A worker still loading its model waits for it at most this much less than our socket timeout, so it answers
# "warming up" (the prompt passes through by design, its capture journaled) before the socket gives up and the
# hook counts a failure. Waiting the whole cold-start budget (3 s) behind a 2.5 s socket timeout made a cold start
# slower than 2.5 s (a busy 2-core machine: ready in 2.75 s) fail open instead.
READY_WAIT_MARGIN_S = 0.25


def ready_wait(cold_s: float, elapsed_s: float, request_timeout_s: float) -> float:
    """How long the worker may wait for its model before answering: the cold-start budget left, and never so long
    that the answer comes after our socket timeout."""
    return max(0.0, min(cold_s - elapsed_s, request_timeout_s - READY_WAIT_MARGIN_S))


def _call_worker(event: str, payload: dict[str, Any], s: dict[str, Any], t0: float) -> dict[str, Any]:
    from ..errors import WorkerUnavailable
    from ..worker import client

    args = {"event": event, "payload": payload}
    cold = float(s["cold_start_s"])
    timeout = float(s["request_timeout_s"])

    def send() -> dict[str, Any]:
        return client.request("hook", args, socket_path=s["socket"], timeout=timeout,
                              connect_timeout=float(s["connect_timeout_s"]),
                              wait=ready_wait(cold, time.monotonic() - t0, timeout), check_version=True)

    if plugin_updated(s):
        _environment(s)  # other requirements: raises Pending and starts the rebuild
        import os  # same requirements (a reinstall): refresh the stamp so later hooks skip the hash

        try:
            os.utime(os.path.join(settings_mod.bootstrap_dir(s), "venv", dirs.BOOTSTRAP_STAMP))
        except OSError:
            pass
    try:
        return _answered(event, send())
    except client.ProtocolMismatch:
        pass  # an older/newer worker: ensure_worker below restarts it
    except WorkerUnavailable as exc:
        _pending_if_warming(exc)
        if not exc.message.startswith("no worker on"):
            raise
    py = _environment(s)
    from ..paths import get_paths

    remaining = cold - (time.monotonic() - t0)
    if remaining <= 0:
        raise Pending("no time left in hooks.cold_start_s to start the worker")
    # Alive is enough here: the request itself waits for readiness within the budget, and a worker that
    # cannot load its model answers at once (not_ready) instead of letting the budget run out.
    client.ensure_worker(get_paths(), wait_s=remaining, python=py, need_ready=False)
    try:
        return _answered(event, send())
    except WorkerUnavailable as exc:
        _pending_if_warming(exc)
        raise


def _pending_if_warming(exc: Exception) -> None:
    """A worker still loading its model within our budget is expected, not a failure: it serves the next prompt."""
    if getattr(exc, "message", "").startswith("the worker is warming up"):
        raise Pending("the worker is still loading the model (cold start); it serves the next prompt")


def _answered(event: str, result: dict[str, Any]) -> dict[str, Any]:
    reason = result.get("not_ready")
    if reason:  # the prompt passes through; the worker decides whether the user is told (once)
        _log("info", "%s: passing through: the worker is not ready: %s", event, reason)
    return result


def run(event_arg: str, stdin: BinaryIO, stdout: TextIO, t0: float | None = None,
        call: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None) -> int:
    """Run one hook through the worker (or ``call(event, payload)``: ``compass-hook hook --local`` runs the
    handler in its own process). Always returns 0."""
    t0 = time.monotonic() if t0 is None else t0
    s: dict[str, Any] | None = None
    event = None
    # Set by the native client when it handed this hook over (they must not reach the settings cache key).
    import os

    fast_failed = os.environ.pop("COMPASS_FAST_FAILED", None)
    fast_fallback = os.environ.pop("COMPASS_FAST_FALLBACK", None)
    payload: dict[str, Any] | None = None
    answered = False
    try:
        event = canonical(event_arg)
        s = settings_mod.load()
        if not s["enabled"]:
            _drain(stdin)
            return 0
        if fast_failed:  # the worker took the request and did not answer: asking again would double the wait
            payload = read_payload(stdin, int(s["max_stdin_bytes"]))  # for the spool: it may not have been kept
            raise HookFailure(f"native client: {fast_failed}")
        if fast_fallback and os.environ.get("COMPASS_LOG_LEVEL", "").upper() == "DEBUG":  # logging is slow to import
            _log("debug", "%s: native client handed over: %s", event, fast_fallback)
        payload = read_payload(stdin, int(s["max_stdin_bytes"]))
        if event == "PreToolUse":
            from ..worker.hooks.guard import pre_tool_use

            result = pre_tool_use(payload, str(s["pretooluse"]))
        else:
            result = call(event, payload) if call else _call_worker(event, payload, s, t0)
            # the worker has the capture now, unless it answered "not ready" without being able to keep it
            answered = not (result.get("not_ready") and result.get("captured") is False)
        output.emit(event, result, int(s["budget_chars"]), stdout)
        if not answered:
            _spool(s, event, payload)
            answered = True  # kept now: not a second time below
        state.record_success(s["hook_state"])
    except Pending as p:
        _log("info", "%s: passing through: %s", event, p)
        if not answered:
            _spool(s, event, payload)
        msg = str(p)
        if s is not None and event and msg.startswith("Compass"):
            _emit_quietly(event, {"systemMessage": msg}, stdout)
    except BaseException as exc:  # fail open on everything, including KeyboardInterrupt
        reason = str(exc) if isinstance(exc, HookFailure) else f"{type(exc).__name__}: {exc}"
        _log("warning", "%s failed open after %.0f ms: %s", event or event_arg, (time.monotonic() - t0) * 1000, reason)
        if not answered:
            _spool(s, event, payload)
        if s is not None and event:
            try:
                notice = state.record_failure(s["hook_state"], reason, int(s["failures_before_notice"]))
            except Exception:
                notice = None
            if notice:
                _emit_quietly(event, {"systemMessage": notice}, stdout)
    return 0


SPOOL_TEXT = {"UserPromptSubmit": "prompt", "Stop": "last_assistant_message"}
SPOOL_MAX_CHARS = 100_000  # the store keeps 20,000; a cut inside <private> hides the rest (see strip_private)


def _opted_out(cwd: str) -> bool:
    """A ``.compass-ignore`` at the project root (the nearest dir with ``.git``, else the cwd): nothing of that
    project goes to disk, not even the spool. (The config's opt-out list is applied by the worker.)"""
    import os

    d = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return os.path.exists(os.path.join(d, ".compass-ignore"))
        parent = os.path.dirname(d)
        if parent == d:
            return os.path.exists(os.path.join(os.path.abspath(cwd), ".compass-ignore"))
        d = parent


def _spool(s: dict[str, Any] | None, event: str | None, payload: dict[str, Any] | None) -> None:
    """Keep a prompt or Stop reply the worker did not take, for the worker to store when it runs."""
    name = SPOOL_TEXT.get(event or "")
    if s is None or name is None or payload is None:
        return
    text = payload.get(name)
    cwd = payload.get("cwd")
    if not isinstance(text, str) or not text.strip():
        return
    try:
        if isinstance(cwd, str) and cwd and _opted_out(cwd):
            return
        from .. import spool
        from ..textrules.secrets import scrub

        clean, secrets, private = scrub(text, SPOOL_MAX_CHARS)  # the one redaction pass, as for a stored memory
        kept = {k: payload[k] for k in ("session_id", "prompt_id", "cwd") if isinstance(payload.get(k), str)}
        kept[name] = clean
        entry = {"v": 1, "time": time.time(), "event": event, "payload": kept, "redacted": bool(private or secrets)}
        spool.write(s["data"], entry)
        _log("info", "%s: kept in the capture spool for the worker", event)
    except Exception as exc:  # the spool must never be what breaks the hook
        _log("error", "%s: LOST: could not write the capture spool in %s: %s: %s", event, s.get("data"),
             type(exc).__name__, exc)


def _emit_quietly(event: str, result: dict[str, Any], stdout: TextIO) -> None:
    try:
        output.emit(event, result, 1000, stdout)
    except Exception:
        pass


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--bootstrap-build":
        from .bootstrap import build_main

        return build_main(argv[1:])
    if not argv:
        _log("warning", "hook launcher called without an event")
        return 0
    return run(argv[0], sys.stdin.buffer, sys.stdout, t0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
