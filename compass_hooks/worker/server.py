"""The worker process: one per data dir, serving ops over a Unix socket.

Start-up order: take the worker lock (another worker holds it -> exit quietly),
write the pid file, bind the socket (0600 in a 0700 dir), *then* load the model
and anchors on a background thread. So the socket answers ``ping`` (liveness)
within milliseconds while ``ready`` (readiness) turns true once the model is
loaded; ops that need the model wait up to the request's ``wait`` seconds and
then get a ``WorkerUnavailable`` "warming up" error.

A worker whose model could not be loaded (missing, corrupt, wrong version) is
*not ready* and says so at once: a hook gets ``{"not_ready": reason}`` with no
wait (plus, once per reason, a ``systemMessage`` naming the fix), other ops a
``WorkerUnavailable`` with the reason. Requests retry the load at most every
``RETRY_LOAD_S``, so the worker becomes ready by itself once the model appears.

Each connection runs on a thread from a bounded pool, so one slow op never
stalls another. Work an op defers runs on one background thread. Hook captures
are durable before the answer (the op writes them to the capture spool,
:mod:`compass_hooks.memory.queue`) and stored on that thread afterwards; a
stopping worker keeps storing them for at most :data:`STOP_DRAIN_S` and leaves
the rest on disk, and a worker that becomes ready resumes whatever is there
(the spool, audit intents), so a stop, a restart or a ``kill -9`` loses nothing
that was answered. A worker that cannot answer a hook normally (model
not loaded, still warming up) still journals its capture. The worker exits after
``worker.idle_timeout_s`` without requests, on ``stop`` or on SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable

from .. import PROTOCOL_VERSION, __version__
from ..config import Config, load_config
from ..errors import CompassError, InvalidInput, WorkerUnavailable
from ..logs import get_logger
from ..paths import Paths, get_paths
from . import lifecycle, protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike

log = get_logger("worker")

MAX_THREADS = 16
CONN_IDLE_S = 60.0  # a connection with no request for this long is closed
ACCEPT_TICK_S = 0.25  # how often the accept loop checks for stop / idle
RETRY_LOAD_S = 5.0  # after a failed model load, retry at most this often
# A stopping worker stores queued captures for at most this long, then leaves the rest for the next worker:
# below the 5 s a stopping client (`worker stop`, a restart for a new version) waits before it signals.
STOP_DRAIN_S = 3.0


class WorkerServer:
    def __init__(self, paths: Paths | None = None, config: Config | None = None, core: CoreLike | None = None,
                 idle_timeout: float | None = None, max_threads: int = MAX_THREADS):
        self.paths = (paths or get_paths()).ensure()
        self.config = config or load_config(self.paths.config)
        self.core = core
        self.idle_timeout = float(self.config.get("worker", "idle_timeout_s") if idle_timeout is None else idle_timeout)
        self.started = time.monotonic()
        self.ready = threading.Event()
        self.state = "starting"
        self.load_error: str | None = None
        self.load_hint: str | None = None
        self._load_attempt = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self._last = time.monotonic()
        self._conns: set[socket.socket] = set()
        self._pool = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="compass-conn")
        self._deferred: queue.Queue[tuple[Callable[[], None], bool] | None] = queue.Queue()
        self._sock: socket.socket | None = None
        self._sock_ino: int | None = None
        self._lock_fd: int | None = None

    # -- readiness -------------------------------------------------------------------------------
    def _warm(self) -> None:
        from . import notices

        self._load_attempt = time.monotonic()
        t0 = time.perf_counter()
        try:
            from ..ops import load_ops

            if self.core is None:
                from ..core import Core

                self.core = Core(self.paths, self.config)
            self.core.state["worker.defer"] = self.defer
            self.core.state["worker.info"] = self.info
            self.core.state["worker.ready"] = self.ready.is_set  # captures wait for the model (no vector backfill)
            self.core.state["notices.take"] = lambda: notices.take_pending(self.paths)
            self.core.state["notices.tell"] = self._tell
            self.core.state["notices.clear"] = lambda topic: notices.clear(self.paths, topic)
            load_ops()
            self.core.embedder.embed(["compass warm-up"])  # first run allocates the ONNX arena
            self._warm_features()
        except Exception as exc:  # model missing / corrupt: report on ping, keep answering
            message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            if message != self.load_error:
                log.error("warm-up failed: %s", message)
            self.load_error = message
            self.load_hint = getattr(exc, "hint", None)
            self.state = "error"
            return
        self.load_error = None
        # The endpoint file goes down before the worker says ready: a hook that sees "ready" on ping may at once
        # run the native client, which finds the worker through this file only; written after, it lost that race
        # about one run in three (empty output, hand-over to Python; CI stop 25). A native client arriving before
        # ready gets "warming up" from the worker itself, which is the same hand-over, by design.
        try:
            from ..worker.hooks.fast import write_endpoint

            write_endpoint(self.paths, self.config)
        except OSError as exc:
            log.warning("cannot write the fast-client endpoint (hooks use the Python client): %s", exc)
        self.state = "ready"
        self.ready.set()
        notices.clear(self.paths, "model")  # fixed: should it break again, the user is told again
        self.defer(self._merge_legacy)
        self.defer(self._resume)
        log.info("ready in %.2fs (model %s)", time.perf_counter() - t0, self.model_name())

    def _built(self) -> CoreLike:
        """The core, once start-up has built it (every caller runs after that)."""
        if self.core is None:
            raise RuntimeError("the worker's core is not built yet")
        return self.core

    def _merge_legacy(self) -> None:
        """A 0.1.0 store under a plugin's data dir joins the user's one store, once; the user is told once."""
        from ..memory import legacy
        from . import notices

        for done in legacy.merge_all(self._built()):
            notices.add_pending(self.paths, (
                f"Compass merged {done['added']} memories from {done['from']} into your store {self.paths.db} "
                f"(hooks, CLI and MCP now share it); the old file is kept as {done['backup']}."))

    def _resume(self) -> None:
        """Captures a stopped or killed worker (or a hook that failed open) left, audit intents a crash left."""
        from .. import spool
        from ..memory import queue as capture_queue

        spool.sweep_tmp(self.paths.data)
        capture_queue.run_round(self._built())

    def _tell(self, topic: str, reason: str, text: str) -> None:
        """Tell the user ``text`` with the next hook, once per ``topic`` and ``reason``."""
        from . import notices

        told = notices.once(self.paths, topic, reason, text)
        if told:
            notices.add_pending(self.paths, told)

    def _tick(self) -> None:
        """Cheap, often: lets the capture queue start a round when something waits on disk."""
        if self.core is None or not self.ready.is_set():
            return
        try:
            from ..memory import queue as capture_queue

            capture_queue.tick(self.core)
        except Exception:
            log.exception("capture tick failed")

    def _journal_unanswered(self, name: str, args: dict[str, Any]) -> bool:
        """A hook this worker answers without its handlers (model not loaded, warming up): its prompt passes
        through, and its capture is journaled so it is stored once the model is there. False when it could not
        be (no core yet): the hook process then spools it itself."""
        if self.core is None or name not in ("hook", "hook_fast"):
            return False
        try:
            from .hooks import names

            event = names.canonical(str(args.get("event") or ""))
            payload = args.get("payload")
            if name == "hook_fast":
                import json

                payload = json.loads(args.get("stdin") or "null")
            if event not in ("UserPromptSubmit", "Stop") or not isinstance(payload, dict):
                return True  # nothing to keep
            if not self.core.config.get("hooks", "enabled"):
                return True
            from ..memory import queue as capture_queue

            capture_queue.journal_hook(self.core, event, payload)
            return True
        except Exception:
            log.exception("could not journal the capture of an unanswered hook")
            return False

    def _warm_features(self) -> None:
        """Build the anchor matrix and memory index now, not on the first prompt. Each optional."""
        try:
            from ..drift.scorer import BACKGROUND_BUILDS, get_state

            # The drift neighbour index, when missing, is built by a process of its own: hooks are answered meanwhile.
            self._built().state[BACKGROUND_BUILDS] = True
            get_state(self._built()).score(["compass warm-up"], None)
        except ImportError:
            pass
        except Exception:
            log.exception("drift warm-up failed (drift ops will retry)")
        try:
            from ..memory import api as memory_api

            warm = getattr(memory_api, "warm", None)
            if warm is not None:
                warm(self.core)
        except ImportError:
            pass
        except Exception:
            log.exception("memory warm-up failed (memory ops will retry)")

    def _maybe_retry_load(self) -> None:
        with self._lock:
            if self.state != "error" or time.monotonic() - self._load_attempt <= RETRY_LOAD_S:
                return
            self.state = "retrying"  # load_error stays set: requests are still answered at once meanwhile
            self._load_attempt = time.monotonic()
        threading.Thread(target=self._warm, name="compass-warm", daemon=True).start()

    def _wait_ready(self, wait: float) -> bool:
        """Wait up to ``wait`` s for readiness, but not for a load that already failed."""
        deadline = time.monotonic() + wait
        while not self.ready.is_set() and self.load_error is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.ready.wait(min(left, 0.05))
        return self.ready.is_set()

    def _fix_command(self) -> str:
        import sys

        exe = os.path.join(os.path.dirname(sys.executable), "compass-hook")
        return exe if os.access(exe, os.X_OK) else "compass-hook"

    def not_ready_hook(self, args: dict[str, Any]) -> dict[str, Any]:
        """A hook's answer while the model cannot be loaded: at once, the prompt passes through."""
        from . import notices

        reason = self.load_error or "the model is not loaded"
        cmd = self._fix_command()
        if self.load_hint:  # a model problem (missing, corrupt, another version) names its own fix
            fix = self.load_hint.replace("`compass-hook ", f"`{cmd} ")
            if "export" not in fix:
                fix += f", or `{cmd} model export --model {self.model_name()} --force`"
        else:  # anything else: the install itself is broken
            fix = "re-run ./install.sh (or reinstall the plugin)"
        text = (f"Compass is not active: {reason}. Your prompts pass through unchanged (they are kept and stored "
                f"once it works). Fix: {fix} "
                f"(`{cmd} doctor` shows what is wrong); Compass notices the model within seconds, no restart needed.")
        out: dict[str, Any] = {"not_ready": reason}
        told = notices.once(self.paths, "model", reason, text)
        if told:
            out["systemMessage"] = told
        return out

    def model_name(self) -> str:
        emb = getattr(self.core, "_embedder", None) if self.core is not None else None
        return getattr(emb, "name", None) or str(self.config.get("model", "name"))

    def info(self) -> dict[str, Any]:
        return {"protocol": PROTOCOL_VERSION, "version": __version__, "model": self.model_name(),
                "ready": self.ready.is_set(), "state": self.state, "error": self.load_error, "pid": os.getpid(),
                "uptime": round(time.monotonic() - self.started, 3), "data": str(self.paths.data),
                "fast_hooks": self.core.state.get("hook_fast.served", 0) if self.core is not None else 0}

    # -- deferred work ---------------------------------------------------------------------------
    def defer(self, fn: Callable[[], None], activity: bool = True) -> None:
        """Run ``fn`` on the background thread after the answer. ``activity``: it counts as use (keeps an idle
        worker alive); retries the worker starts by itself do not."""
        self._deferred.put((fn, activity))

    def _run_deferred(self) -> None:
        while True:
            job = self._deferred.get()
            if job is None:
                return
            fn, activity = job
            try:
                fn()
            except Exception:
                log.exception("deferred work failed")
            finally:
                if activity:
                    self._touch()

    # -- requests --------------------------------------------------------------------------------
    def _touch(self) -> None:
        self._last = time.monotonic()

    def dispatch(self, req: dict[str, Any]) -> dict[str, Any]:
        rid = req.get("id")
        name = req.get("op")
        args = req.get("args") or {}
        with self._lock:
            self._active += 1
        self._touch()
        try:
            if not isinstance(name, str) or not isinstance(args, dict):
                raise InvalidInput("a request needs op (string) and args (object)")
            if name == "ping":
                return protocol.ok(rid, self.info())
            if name == "stop":
                self.request_stop("stop requested")
                return protocol.ok(rid, {"stopping": True, "pid": os.getpid()})
            peer = req.get("client")
            if peer is not None and peer != [PROTOCOL_VERSION, __version__]:
                return protocol.error(rid, "ProtocolMismatch", f"client {peer} != worker "
                                      f"{[PROTOCOL_VERSION, __version__]}", "the client restarts the worker")
            wait = req.get("wait", protocol.DEFAULT_READY_WAIT_S)
            wait = max(0.0, min(float(wait), 120.0)) if isinstance(wait, (int, float)) else protocol.DEFAULT_READY_WAIT_S
            self._maybe_retry_load()
            if not self._wait_ready(wait):
                kept = self._journal_unanswered(name, args)
                if self.load_error and name == "hook":
                    return protocol.ok(rid, {**self.not_ready_hook(args), "captured": kept})
                if self.load_error:
                    raise WorkerUnavailable(f"the worker could not load the model: {self.load_error}",
                                            "run `compass-hook doctor`; export it with `compass-hook model export`")
                raise WorkerUnavailable("the worker is warming up (loading the model)", "retry in a few seconds")
            from .. import ops

            return protocol.ok(rid, ops.call(self.core, name, args))
        except CompassError as exc:
            return protocol.error(rid, type(exc).__name__, exc.message, exc.hint)
        except TypeError as exc:  # wrong keyword arguments for the op
            return protocol.error(rid, "InvalidInput", f"bad arguments for {name!r}: {exc}")
        except Exception as exc:
            log.exception("op %r failed", name)
            return protocol.error(rid, "WorkerError", f"{type(exc).__name__}: {exc}", "details in the worker log")
        finally:
            with self._lock:
                self._active -= 1
            self._touch()

    def _serve_conn(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.add(conn)
        try:
            from ..trust import peer_uid

            try:
                uid = peer_uid(conn)
            except OSError:
                uid = -1
            if uid != os.getuid():
                log.warning("refused a connection from uid %s", uid)
                conn.sendall(protocol.encode(protocol.error(None, "WorkerError", "connection refused: wrong user")))
                return
            conn.settimeout(CONN_IDLE_S)
            reader = conn.makefile("rb")
            while not self._stop.is_set():
                line = reader.readline(protocol.MAX_LINE + 1)
                if not line:
                    return
                try:
                    req = protocol.decode(line)
                except protocol.ProtocolError as exc:
                    conn.sendall(protocol.encode(protocol.error(None, "InvalidInput", str(exc))))
                    return
                conn.sendall(protocol.encode(self.dispatch(req)))
        except (OSError, socket.timeout):
            pass  # client went away or idled out: nothing to answer
        except Exception:
            log.exception("connection handler failed")
        finally:
            with self._lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    # -- lifecycle -------------------------------------------------------------------------------
    def request_stop(self, why: str) -> None:
        if not self._stop.is_set():
            log.info("stopping: %s", why)
        self._stop.set()

    def _log_backlog(self) -> None:
        from .. import spool

        left = spool.count(self.paths.data)
        if left:
            log.info("left %d captures in %s for the next worker", left, self.paths.spool)

    def _bind(self) -> None:
        from ..trust import ensure_private_dir

        path = self.paths.socket
        ensure_private_dir(path.parent)
        # We hold the worker lock, so any socket file here is left over from a dead worker.
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the file is born 0600: no window where others could connect
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(128)
        sock.settimeout(ACCEPT_TICK_S)
        self._sock = sock
        self._sock_ino = os.stat(path).st_ino

    def _unbind(self) -> None:
        if self._sock is not None:
            self._sock.close()
        try:  # only remove the file if it is still ours (a new worker may have bound one)
            if self._sock_ino is not None and os.stat(self.paths.socket).st_ino == self._sock_ino:
                os.unlink(self.paths.socket)
        except OSError:
            pass

    def _idle(self) -> bool:
        return (self.idle_timeout > 0 and self._active == 0 and self._deferred.empty()
                and time.monotonic() - self._last > self.idle_timeout)

    def serve(self, install_signals: bool = True) -> int:
        """Run until stopped. 0 on a clean stop (or when another worker already runs)."""
        self._lock_fd = lifecycle.acquire_lock(self.paths)
        if self._lock_fd is None:
            log.info("another worker holds %s: exiting", self.paths.worker_lock)
            return 0
        if install_signals and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: self.request_stop("SIGTERM"))
            signal.signal(signal.SIGINT, lambda *_: self.request_stop("SIGINT"))
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        deferred = threading.Thread(target=self._run_deferred, name="compass-deferred", daemon=True)
        try:
            lifecycle.write_pid(self.paths)
            self._bind()
            log.info("listening on %s (pid %d, protocol %d, version %s)", self.paths.socket, os.getpid(),
                     PROTOCOL_VERSION, __version__)
            deferred.start()
            threading.Thread(target=self._warm, name="compass-warm", daemon=True).start()
            while not self._stop.is_set():
                self._tick()
                try:
                    conn, _ = self._sock.accept()  # type: ignore[union-attr]
                except socket.timeout:
                    if self._idle():
                        self.request_stop(f"idle for {self.idle_timeout:.0f}s")
                    continue
                except OSError as exc:
                    if self._stop.is_set():
                        break
                    log.error("accept failed: %s", exc)
                    time.sleep(0.1)
                    continue
                conn.settimeout(None)
                self._touch()
                self._pool.submit(self._serve_conn, conn)
        finally:
            from ..worker.hooks.fast import remove_endpoint

            remove_endpoint(self.paths)
            self._unbind()
            with self._lock:
                conns = list(self._conns)
            for c in conns:  # wake readers blocked on idle keep-alive connections
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._pool.shutdown(wait=True)
            if deferred.is_alive():  # store captures for a moment; whatever is left stays queued on disk
                if self.core is not None:
                    self.core.state["worker.stop_at"] = time.monotonic() + STOP_DRAIN_S
                self._deferred.put(None)
                deferred.join(timeout=STOP_DRAIN_S + 5)
                self._log_backlog()
            if self.core is not None:
                try:
                    self.core.close()
                except Exception:
                    log.exception("closing the core failed")
            lifecycle.remove_pid(self.paths)
            os.close(self._lock_fd)
            self._lock_fd = None
            log.info("stopped")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compass_hooks.worker", description="Run the compass-hooks worker.")
    parser.add_argument("--home", help="data dir this worker serves (also marks the process as ours)")
    parser.add_argument("--idle-timeout", type=float, default=None, help="seconds without requests before exiting")
    ns = parser.parse_args(argv)
    if ns.home and os.path.realpath(ns.home) != os.path.realpath(str(get_paths().data)):
        os.environ["COMPASS_HOME"] = ns.home  # the spawner's data dir is the one we serve
    try:
        return WorkerServer(idle_timeout=ns.idle_timeout).serve()
    except Exception:
        log.exception("worker crashed")
        return 1


__all__ = ["WorkerServer", "main"]
