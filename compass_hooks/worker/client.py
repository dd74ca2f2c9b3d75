"""The worker client: stdlib only, imported by the hook launcher on every prompt.

Nothing heavy is imported at module level (``subprocess`` and ``fcntl`` only
on the spawn path; ``compass_hooks.paths`` / ``config`` only when the caller
does not pass a socket path and timeouts), so the hot path stays at one
``connect`` + one request line + one answer line.

- :func:`request` sends one op and returns its result (typed errors re-raised).
- :func:`ensure_worker` pings; restarts a worker of another protocol/version;
  spawns one if none answers (a non-blocking ``flock`` on the spawn lock lets one
  caller spawn while the others just wait for the socket); waits for readiness.
- :class:`WorkerService` is what ``compass_hooks.service.get_service()`` returns.
- :func:`worker_status` / :func:`stop_worker` serve ``doctor`` and the CLI.

Timeouts (config, env override): ``hooks.connect_timeout_s``
(COMPASS_CONNECT_TIMEOUT), ``hooks.request_timeout_s`` (COMPASS_REQUEST_TIMEOUT),
``hooks.cold_start_s`` (COMPASS_COLD_START), ``worker.request_timeout_s``,
``worker.start_timeout_s`` (COMPASS_START_TIMEOUT).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import on the hook hot path
    from typing import Any

from .. import PROTOCOL_VERSION, __version__
from ..errors import CompassError, WorkerError, WorkerUnavailable
from ..trust import dir_problem, socket_problem
from .protocol import MAX_LINE, WORKER_MODULE

# Ops a human waits for (bulk import, transcript ingest ...): not bound by worker.request_timeout_s.
LONG_OPS = frozenset({"import_batch", "ingest_transcript", "reembed", "reindex", "train", "tune", "eval", "export"})
LONG_OP_TIMEOUT_S = 600.0
# While nothing answers on the socket, how often ensure_worker() checks that a worker is still on its way. A
# spawn skipped because the worker lock was held (a worker SIGKILLed but not yet gone: exit waits for a thread
# in fsync) must be retried once that holder is gone, or we wait out the whole deadline for nobody.
RESPAWN_CHECK_S = 1.0
_ids = iter(range(1, 1 << 62))


class ProtocolMismatch(WorkerUnavailable):
    """The worker runs another protocol or package version (the caller restarts it)."""


def _paths(paths: Any = None) -> Any:
    if paths is not None:
        return paths
    from ..paths import get_paths

    return get_paths()


def _config(paths: Any, config: Any = None) -> Any:
    if config is not None:
        return config
    from ..config import load_config

    return load_config(paths.config)


def _raise_error(err: dict[str, Any]) -> None:
    from .. import errors

    if err.get("type") == "ProtocolMismatch":
        raise ProtocolMismatch(str(err.get("message") or "protocol mismatch"), err.get("hint"))
    cls = getattr(errors, str(err.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, CompassError)):
        cls = WorkerError
    raise cls(str(err.get("message") or "worker error"), err.get("hint"))


def request(op: str, args: dict[str, Any] | None = None, *, socket_path: str, timeout: float,
            connect_timeout: float | None = None, wait: float | None = None,
            check_version: bool = False) -> dict[str, Any]:
    """One op over a fresh connection. Raises WorkerUnavailable (no answer) or the op's typed error.

    ``check_version`` sends our protocol/version so a mismatched worker answers
    ProtocolMismatch instead of running the op (the hook hot path skips ping).
    """
    frame: dict[str, Any] = {"id": next(_ids), "op": op, "args": args or {}}
    if wait is not None:
        frame["wait"] = wait
    if check_version:
        frame["client"] = [PROTOCOL_VERSION, __version__]
    data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    problem = socket_problem(socket_path)
    if problem:
        raise WorkerUnavailable(f"refusing to talk to the worker socket: {problem}",
                                "remove that file; compass-hooks recreates its socket in a private dir")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(connect_timeout if connect_timeout is not None else timeout)
        try:
            sock.connect(socket_path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise WorkerUnavailable(f"no worker on {socket_path} ({type(exc).__name__})", "start it: compass-hook worker start") from None
        except OSError as exc:
            raise WorkerUnavailable(f"cannot connect to the worker: {exc}", "compass-hook doctor") from None
        sock.settimeout(timeout)
        try:
            sock.sendall(data)
            chunks = []
            size = 0
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if chunk.endswith(b"\n") or size > MAX_LINE:
                    break
        except socket.timeout:
            raise WorkerUnavailable(f"the worker did not answer {op!r} within {timeout:g}s", "compass-hook worker status") from None
        except OSError as exc:
            raise WorkerUnavailable(f"lost the worker connection during {op!r}: {exc}", "compass-hook doctor") from None
    finally:
        sock.close()
    raw = b"".join(chunks)
    try:
        resp = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise WorkerUnavailable(f"the worker sent no valid answer to {op!r}", "compass-hook worker status") from None
    if not isinstance(resp, dict):
        raise WorkerUnavailable("the worker sent a malformed answer")
    if resp.get("ok"):
        result = resp.get("result")
        return result if isinstance(result, dict) else {}
    _raise_error(resp.get("error") or {})
    raise AssertionError("unreachable")


def ping(socket_path: str, timeout: float = 0.5) -> dict[str, Any] | None:
    """The worker's ping answer, or None when nothing answers."""
    try:
        return request("ping", socket_path=socket_path, timeout=timeout)
    except CompassError:
        return None


def compatible(info: dict[str, Any] | None) -> bool:
    return bool(info and info.get("protocol") == PROTOCOL_VERSION and info.get("version") == __version__)


def worker_python() -> str:
    """The interpreter that runs the worker: $COMPASS_WORKER_PYTHON, else this one."""
    return os.environ.get("COMPASS_WORKER_PYTHON") or sys.executable


def spawn(paths: Any = None, python: str | None = None) -> bool:
    """Start a detached worker unless one is alive or another caller is spawning. True if we spawned."""
    import fcntl
    import subprocess

    from . import lifecycle

    paths = _paths(paths).ensure()
    fd = os.open(paths.spawn_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # someone else is spawning: the caller just waits for the socket
        if lifecycle.lock_held(paths) or ping(str(paths.socket), 0.3):
            return False  # a worker is alive (or binding its socket right now)
        env = dict(os.environ)
        root = str(paths.plugin_root)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.pop("PYTHONSAFEPATH", None)
        stderr = open(os.path.join(paths.logs, "worker.stderr.log"), "ab")
        try:
            subprocess.Popen(
                [python or worker_python(), "-m", WORKER_MODULE, "--home", str(paths.data)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=str(paths.data),
                env=env, start_new_session=True, close_fds=True,
            )
        finally:
            stderr.close()
        # Keep the spawn lock until the socket answers, so late callers do not spawn a second one.
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not ping(str(paths.socket), 0.2):
            if lifecycle.lock_held(paths) and os.path.exists(paths.socket):
                break
            time.sleep(0.01)
        return True
    finally:
        os.close(fd)


def wait_ready(socket_path: str, deadline: float, need_ready: bool = True) -> dict[str, Any] | None:
    """Poll ping until the worker is ready (or just alive) or ``deadline`` (monotonic) passes."""
    info = None
    delay = 0.005
    while True:
        info = ping(socket_path, 0.3)
        if info and (info.get("ready") or not need_ready or info.get("state") == "error"):
            return info
        if time.monotonic() >= deadline:
            return info
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _spawn_and_wait(paths: Any, python: str | None, deadline: float, need_ready: bool) -> dict[str, Any] | None:
    """Spawn (unless a worker is alive or being spawned) and wait; spawn again whenever nothing has answered for
    :data:`RESPAWN_CHECK_S`. ``spawn`` refuses while the worker lock is held, so retrying never starts two."""
    sock = str(paths.socket)
    while True:
        spawn(paths, python)
        info = wait_ready(sock, min(deadline, time.monotonic() + RESPAWN_CHECK_S), need_ready)
        if info is not None:  # alive: whatever it still needs (its model) is not helped by another spawn
            return info if info.get("ready") or not need_ready else wait_ready(sock, deadline, need_ready)
        if time.monotonic() >= deadline:
            return None


def ensure_worker(paths: Any = None, config: Any = None, wait_s: float | None = None,
                  python: str | None = None, need_ready: bool = True) -> dict[str, Any]:
    """A live, compatible (and, with ``need_ready``, ready) worker's ping answer.

    Raises WorkerUnavailable when it is not there within ``wait_s``
    (default ``worker.start_timeout_s``).
    """
    paths = _paths(paths)
    if wait_s is None:
        wait_s = float(_config(paths, config).get("worker", "start_timeout_s"))
    deadline = time.monotonic() + wait_s
    sock = str(paths.socket)
    # A socket or socket dir we would refuse (planted in the shared /tmp fallback) never becomes usable by
    # waiting: say why at once instead of spawning and polling until the deadline on every prompt.
    problem = socket_problem(sock) or dir_problem(os.path.dirname(sock))
    if problem:
        raise WorkerUnavailable(f"refusing the worker socket: {problem}",
                                "remove it; compass-hooks creates its socket dir itself (0700, yours)")
    info = ping(sock, 0.5)
    if info and not compatible(info):
        from ..logs import get_logger

        get_logger("client").info("worker is protocol %s version %s, we are %s/%s: restarting it",
                                  info.get("protocol"), info.get("version"), PROTOCOL_VERSION, __version__)
        stop_worker(paths, timeout=5.0)
        info = None
    if info is None:
        info = _spawn_and_wait(paths, python, deadline, need_ready)
    elif need_ready and not info.get("ready"):
        info = wait_ready(sock, deadline, need_ready)
    if not info:
        raise WorkerUnavailable(f"the worker did not start within {wait_s:g}s",
                                f"see {os.path.join(paths.logs, 'worker.log')} and run `compass-hook doctor`")
    if need_ready and not info.get("ready"):
        if info.get("error"):
            raise WorkerUnavailable(f"the worker could not load the model: {info['error']}",
                                    "run `compass-hook doctor`; export it with `compass-hook model export`")
        raise WorkerUnavailable(f"the worker is still warming up after {wait_s:g}s", "retry in a few seconds")
    return info


def stop_worker(paths: Any = None, timeout: float = 5.0) -> dict[str, Any]:
    """Stop this data dir's worker: ask it over the socket, then SIGTERM it only if the pid is provably ours."""
    from . import lifecycle

    paths = _paths(paths)
    sock = str(paths.socket)
    info = ping(sock, 0.5)
    pid = (info or {}).get("pid") or lifecycle.read_pid(paths)
    asked = False
    if info:
        try:
            request("stop", socket_path=sock, timeout=2.0)
            asked = True
        except CompassError:
            pass
    deadline = time.monotonic() + timeout
    while asked and time.monotonic() < deadline and lifecycle.lock_held(paths):
        time.sleep(0.02)
    killed = False
    if lifecycle.lock_held(paths) and pid and lifecycle.is_our_worker(int(pid), paths):
        killed = lifecycle.terminate(int(pid), paths, timeout=timeout)
    running = lifecycle.lock_held(paths)
    return {"stopped": bool(info or killed) and not running, "was_running": bool(info) or killed,
            "pid": pid, "signalled": killed, "running": running}


def worker_status(paths: Any = None) -> dict[str, Any]:
    """What doctor and ``worker status`` show. Never starts a worker, never raises for a dead one."""
    from . import lifecycle

    paths = _paths(paths)
    info = ping(str(paths.socket), 0.5)
    out: dict[str, Any] = {"running": bool(info), "socket": str(paths.socket), "pid_file": str(paths.worker_pid)}
    if info:
        out.update({k: info.get(k) for k in ("ready", "state", "error", "pid", "model", "protocol", "version", "uptime")})
        out["compatible"] = compatible(info)
        if not out["compatible"]:
            out["detail"] = f"worker runs protocol {info.get('protocol')} / {info.get('version')}; the next call restarts it"
    else:
        pid = lifecycle.read_pid(paths)
        out["ready"] = False
        if lifecycle.lock_held(paths):
            out["detail"] = "a worker holds the lock but does not answer (starting, or hung)"
            out["pid"] = pid
        elif os.path.exists(paths.socket):
            out["detail"] = "stale socket file (no worker); the next hook or `compass-hook worker start` replaces it"
        else:
            out["detail"] = "not running (the first hook or `compass-hook worker start` starts it)"
    return out


class WorkerService:
    """``call(op, **args) -> dict`` through the warm worker (started on first use)."""

    def __init__(self, paths: Any = None, config: Any = None, timeout: float | None = None):
        self.paths = _paths(paths)
        self.config = _config(self.paths, config)
        self.timeout = float(timeout if timeout is not None else self.config.get("worker", "request_timeout_s"))
        self._ensured = False

    def _ensure(self) -> None:
        ensure_worker(self.paths, self.config)
        self._ensured = True

    def call(self, op: str, **args: Any) -> dict:
        timeout = LONG_OP_TIMEOUT_S if op in LONG_OPS else self.timeout
        if not self._ensured:
            self._ensure()
        sock = str(self.paths.socket)
        wait = float(self.config.get("worker", "start_timeout_s"))
        try:
            return request(op, args, socket_path=sock, timeout=timeout, connect_timeout=2.0, wait=wait,
                           check_version=True)
        except ProtocolMismatch:
            pass
        except WorkerUnavailable as exc:
            # Only a refused connect is retried (the request was never sent, so nothing runs twice).
            if "no worker on" not in exc.message:
                raise
        self._ensure()
        return request(op, args, socket_path=sock, timeout=timeout, connect_timeout=2.0, wait=wait,
                       check_version=True)

    def close(self) -> None:
        """Nothing to release: every call uses its own connection; the worker stays warm."""
