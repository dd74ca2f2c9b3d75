"""Hook captures: durable before the hook answers, stored after it.

Why: a prompt must be answered in milliseconds, while storing it (embedding, the
memory row, its FTS context, the audit entry) takes longer and, with many
sessions, falls behind. Held in memory, that backlog was lost whenever the worker
stopped (a stop that gave up after 10 s, a restart for a new version) or died.
Now:

1. **journal** (in the hook op, ~0.1 ms): the capture's items, already cleaned
   (:func:`.capture.prompt_items`, :func:`.capture.stop_item`), are written to the
   capture spool (:mod:`compass_hooks.spool`): one file, no lock shared with the
   store, so a busy or broken store never slows or fails the hook. (A SQLite row
   was tried first: under 16 sessions its write lock, shared with the batch
   writes, made the journal wait p50 110 ms.)
2. **process** (the worker's background thread, after the answer): spool entries,
   oldest first, in batches of :data:`BATCH`: one embedding call, one transaction,
   one audit append; then the entries are deleted. A batch cut short by a kill is
   stored again without doubling: every capture has a dedupe key
   (``prompt:<session>:<prompt id>``, ``stop:<session>:<sha>``) and is skipped when
   stored already.
3. **rounds** (after each journal, when the worker becomes ready, and from its
   :func:`tick`): the spool (including what hooks that failed open wrote, and what
   a stopped or killed worker left), then audit intents a crash left.

A stopping worker processes until ``core.state["worker.stop_at"]`` and leaves the
rest on disk for the next worker. Processing waits while the model is not loaded
(``core.state["worker.ready"]``): a memory stored without its vector would never
get one. Without a worker (in process) a capture is stored at once and only
spooled when that fails.

Failures are counted in ``<data>/run/capture-health.json`` (``doctor`` shows it) and
told to the user once per kind through ``core.state["notices.tell"]`` (the
worker's notices). A failed round is retried with backoff; nothing is dropped but
an entry that cannot be stored on its own (invalid, or failed :data:`MAX_ATTEMPTS`
times), which is set aside as ``*.bad`` for ``doctor``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from .. import spool
from ..errors import CompassError, InvalidInput, ModelCorrupt, ModelNotFound, StoreError
from ..logs import get_logger
from . import capture
from .store import MAX_TEXT

if TYPE_CHECKING:  # pragma: no cover
    from .corelike import CoreLike

BATCH = 64  # captures per transaction (one embedding call, one audit append)
TICK_S = 2.0  # how often the worker's tick may start a round
RETRY_MIN_S, RETRY_MAX_S = 2.0, 300.0  # backoff after a failed round
MAX_ATTEMPTS = 5  # an entry that fails this often for a reason other than the store itself is set aside
FEATURE = "memory.queue"

log = get_logger("memory")


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    run_lock: threading.Lock = field(default_factory=threading.Lock)  # one processor per process
    scheduled: bool = False
    retry_at: float = 0.0  # monotonic: no round before this after a failure
    delay: float = 0.0
    dirty: bool = False  # work was left (failure, stop, not ready): the tick starts a round
    failing: str | None = None  # the failure kind the user was told of, until a round succeeds
    failed_now: bool = False  # a failure in the current processing run: it did not succeed
    stored_now: bool = False  # a batch stored and logged in it: proof that captures work again
    attempts: dict[str, int] = field(default_factory=dict)  # spool path -> failures on its own
    last_tick: float = 0.0
    # Entries this process journaled and has not stored yet, by spool path -> session: a later prompt of the
    # same session waits for them (:func:`settle`), so what it reads never depends on the background round.
    unsettled: dict[str, str] = field(default_factory=dict)
    settled: threading.Condition = field(default_factory=threading.Condition)


def _state(core: CoreLike) -> _State:
    return core.feature(FEATURE, lambda c: _State())


def _model_ready(core: CoreLike) -> bool:
    ready = core.state.get("worker.ready")
    return True if ready is None else bool(ready())


def _stopping(core: CoreLike) -> bool:
    stop_at = core.state.get("worker.stop_at")
    return stop_at is not None and time.monotonic() >= stop_at


# --------------------------------------------------------------------------- journal


def journal(core: CoreLike, event: str, items: list[dict[str, Any]]) -> list[int]:
    """Make a capture durable now. With a worker: spooled, stored after the answer (returns []). In process:
    stored at once (returns the new ids), spooled only if that fails."""
    if not items:
        return []
    for it in items:  # the store keeps no more; a bounded entry keeps the spool small
        if isinstance(it.get("text"), str) and len(it["text"]) > MAX_TEXT:
            it["text"] = it["text"][:MAX_TEXT]
    entry = {"v": 1, "time": items[0].get("created") or time.time(), "event": event, "items": items}
    if core.state.get("worker.defer") is None:
        try:
            return _add(core, [[dict(it) for it in items]])  # copies: the entry must not carry the vectors
        except Exception as exc:  # noqa: BLE001 - whatever breaks the store, the capture goes to the spool
            _spool_or_lose(core, entry, exc)
            return []
    try:
        path = spool.write(core.paths.data, entry)
    except (OSError, TypeError, ValueError) as exc:
        failed(core, exc, "saving a capture", kept=False)
        return []
    st = _state(core)
    with st.settled:
        st.unsettled[path] = str(items[0].get("session"))
    schedule(core)
    return []


def settle(core: CoreLike, session: str | None, timeout: float) -> bool:
    """Wait (at most ``timeout`` s) until the captures of ``session`` this process journaled are stored; True
    when none is left. A prompt reads the store after this, so its recall and the rules in force include the
    session's earlier prompts whatever the background round's progress (same input, same output)."""
    st = _state(core)
    key = str(session)
    with st.settled:
        return st.settled.wait_for(lambda: key not in st.unsettled.values(), timeout)


def _settled(core: CoreLike, paths: Iterable[str]) -> None:
    st = _state(core)
    with st.settled:
        for path in paths:
            st.unsettled.pop(path, None)
        st.settled.notify_all()


def _spool_or_lose(core: CoreLike, entry: dict[str, Any], cause: BaseException) -> None:
    try:
        spool.write(core.paths.data, entry)
    except (OSError, TypeError, ValueError) as exc:
        failed(core, exc, "saving a capture", kept=False)
        return
    failed(core, cause, "storing a capture", kept=True)
    _state(core).dirty = True


def journal_hook(core: CoreLike, event: str, payload: dict[str, Any]) -> None:
    """Journal what a hook would capture, for a worker that answers without running the handlers (model not
    loaded, still warming up): the prompt passes through and is stored once the model is there."""
    if event == "UserPromptSubmit":
        journal(core, "prompt", capture.prompt_items(core, payload))
    elif event == "Stop":
        item = capture.stop_item(core, payload)
        journal(core, "stop", [item] if item else [])


# --------------------------------------------------------------------------- processing


class _Environment(Exception):
    """The store itself failed (disk full, read-only, corrupt, locked): every entry would; stop the round."""


def process(core: CoreLike) -> list[int]:
    """Store the spooled captures, oldest first; returns the new memory ids. Stops at the worker's stop
    deadline or a store failure, leaving the rest on disk."""
    st = _state(core)
    if not _model_ready(core):
        st.dirty = True
        return []
    new: list[int] = []
    with st.run_lock:
        st.failed_now = st.stored_now = False
        waiting = spool.pending(core.paths.data)
        for i in range(0, len(waiting), BATCH):
            if _stopping(core):
                st.dirty = True
                break
            try:
                new += _store_entries(core, waiting[i : i + BATCH])
                _settled(core, waiting[i : i + BATCH])  # stored, or set aside: either way nothing to wait for
            except _Environment as exc:
                failed(core, exc.__cause__ or exc, "storing captures", kept=True)
                _backoff(st)
                return new
        if st.stored_now and not st.failed_now:  # a run with nothing to store proves nothing
            _succeeded(core)
    return new


def _store_entries(core: CoreLike, paths: list[str]) -> list[int]:
    store = core.store
    ready: list[tuple[str, list[dict[str, Any]]]] = []
    done: list[str] = []
    for path in paths:
        entry = spool.read(path)
        if entry is None:
            continue  # gone: stored by another reader
        try:
            if not entry:
                raise ValueError("not a JSON object")
            event, items = _entry_items(core, entry)
            if not items or _already_stored(store, event, items):
                done.append(path)
                continue
        except StoreError as exc:
            raise _Environment(str(exc)) from exc
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
            log.warning("setting aside unreadable capture %s: %s", path, exc)
            spool.quarantine(path)
            failed(core, exc, "reading a spooled capture", kept=True)
            continue
        ready.append((path, items))
    try:
        new = _add(core, [items for _, items in ready])
    except StoreError as exc:
        raise _Environment(str(exc)) from exc
    except Exception:  # noqa: BLE001 - find the entry at fault; the others are stored
        new = []
        for path, items in ready:
            try:
                new += _add(core, [items])
            except StoreError as exc:
                raise _Environment(str(exc)) from exc
            except Exception as exc:  # noqa: BLE001
                _reject(core, path, exc)
                continue
            spool.remove(path)
    else:
        done += [path for path, _ in ready]
    for path in done:
        spool.remove(path)
    return new


def _already_stored(store: Any, event: str, items: list[dict[str, Any]]) -> bool:
    """Stored before (a batch cut short, the same capture journaled by the worker and by a hook that timed out,
    the transcript): skip it, as capture always did, before paying for the embedding."""
    project = items[0].get("project")
    keys = [it["dedupe_key"] for it in items if isinstance(it.get("dedupe_key"), str)]
    if not isinstance(project, str):
        return False
    if keys and store.existing_keys(project, keys):
        return True
    first = items[0]
    return event == "stop" and isinstance(first.get("text"), str) and store.has_hash(
        project, first["text"], first.get("session"))


def _add(core: CoreLike, groups: list[list[dict[str, Any]]]) -> list[int]:
    items = [it for group in groups for it in group]
    if not items:
        return []
    # A prompt's own vector came with it (made once while the hook prepared the prompt); the rest is embedded here.
    capture.embed_items(core, items, capture.known_vectors(core, items))
    added = capture.store_items(core, items)
    stored = [(a.id, it["dedupe_key"]) for a, it in zip(added, items)
              if a.new and a.id is not None and str(it.get("dedupe_key") or "").startswith("prompt:")]
    if stored:  # rules the hook recorded while these prompts waited here get their memory ids
        from .standing.active import link_captures

        core.store.write(lambda conn: link_captures(conn, stored))
    audit_error = core.store.audit_error()
    if audit_error:  # stored; only the log entries wait (their intents are kept)
        failed(core, StoreError(audit_error), "writing the audit log", kept=True, stored=True)
        _state(core).dirty = True
    elif any(a.new for a in added):
        _state(core).stored_now = True
    return [a.id for a in added if a.new and a.id is not None]


def _reject(core: CoreLike, path: str, exc: BaseException) -> None:
    """An entry that fails on its own: counted; set aside for good when the store calls it invalid or it has
    failed :data:`MAX_ATTEMPTS` times, so it cannot block the ones behind it."""
    st = _state(core)
    n = st.attempts.get(path, 0) + 1
    dead = isinstance(exc, InvalidInput) or n >= MAX_ATTEMPTS
    log.error("capture %s failed (attempt %d%s): %s: %s", path, n, ", set aside" if dead else "",
              type(exc).__name__, exc)
    if dead:
        st.attempts.pop(path, None)
        spool.quarantine(path)
    else:
        st.attempts[path] = n
    failed(core, exc, "storing a capture", kept=True)


def _entry_items(core: CoreLike, entry: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    t = entry.get("time")
    created = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) else None
    event = entry.get("event")
    if isinstance(entry.get("items"), list):  # the worker's journal: already cleaned
        items = [dict(it) for it in entry["items"]]
        if not all(isinstance(it, dict) for it in entry["items"]):
            raise ValueError("items are not objects")
        return ("stop" if event == "stop" else "prompt"), items
    payload = entry.get("payload")  # a hook process that failed open: its stdin fields, redacted
    if not isinstance(payload, dict):
        raise ValueError("no payload")
    if event == "UserPromptSubmit":
        out, name = capture.prompt_items(core, payload, created), "prompt"
    elif event == "Stop":
        item = capture.stop_item(core, payload, created)
        out, name = ([item] if item else []), "stop"
    else:
        raise ValueError(f"unknown event {event!r}")
    if entry.get("redacted"):  # the hook process took secrets out before writing the file
        for it in out:
            it["flags"] = sorted(set(it.get("flags") or []) | {"redacted"})
    return name, out


# --------------------------------------------------------------------------- rounds


def schedule(core: CoreLike, background: bool = False) -> None:
    """Run a round on the worker's background thread (one waiting at a time). ``background``: started by
    the tick, so it does not count as activity that keeps an idle worker alive."""
    defer = core.state.get("worker.defer")
    if defer is None:
        return
    st = _state(core)
    with st.lock:
        if st.scheduled:
            return
        st.scheduled = True

    def round_() -> None:
        with st.lock:
            st.scheduled = False
        run_round(core)

    try:
        defer(round_, not background)
    except Exception:  # noqa: BLE001 - a worker shutting down: the next one runs the round
        with st.lock:
            st.scheduled = False


def run_round(core: CoreLike) -> None:
    """The spool into memories, then audit intents a crash (or an unwritable log) left into the log."""
    st = _state(core)
    if time.monotonic() < st.retry_at or _stopping(core):
        st.dirty = True
        return
    process(core)
    try:
        flushed = core.store.flush_audit()
        if flushed["error"]:
            failed(core, StoreError(flushed["error"]), "writing the audit log", kept=True, stored=True)
        elif flushed["recorded"]:
            log.info("recorded %d audit entries an interrupted write had left", flushed["recorded"])
            if st.failing == "audit":  # the log takes entries again
                _succeeded(core)
        if core.store.pending_audit_count():  # too young to be a crashed writer's, or the log still unwritable
            st.dirty = True
    except CompassError as exc:
        failed(core, exc, "writing pending audit entries", kept=True, stored=True)
        st.dirty = True


def tick(core: CoreLike) -> None:
    """Called often by the worker; at most every :data:`TICK_S` starts a round when something waits: a spool
    entry (a hook that failed open while we were down or busy) or work a failure or a stop left."""
    st = _state(core)
    now = time.monotonic()
    if now - st.last_tick < TICK_S or now < st.retry_at:
        return
    st.last_tick = now
    if st.dirty or spool.has_entries(core.paths.data):
        st.dirty = False
        schedule(core, background=True)


# --------------------------------------------------------------------------- failures, visibly


def classify(exc: BaseException) -> tuple[str, str]:
    """(kind, words for the user) of a capture failure."""
    text = str(exc).lower()
    if "disk full" in text or "no space left" in text or "enospc" in text or "sqlite_full" in text:
        return "disk-full", "the disk is full"
    if isinstance(exc, spool.SpoolFull):
        return "spool-full", "too many captures are waiting for the worker"
    if "read-only" in text or "readonly" in text:
        return "read-only", "the memory store is read-only"
    if "corrupt" in text or "malformed" in text or "not a database" in text:
        return "corrupt", "the memory store is corrupt"
    if "audit" in text:
        return "audit", "the audit log cannot be written"
    if "locked" in text:
        return "locked", "the memory store stayed locked by another process"
    if isinstance(exc, (ModelNotFound, ModelCorrupt)):
        return "model", "the embedding model cannot be loaded"
    return "error", f"an unexpected {type(exc).__name__}"


_health_lock = threading.Lock()


def read_health(paths: Any) -> dict[str, Any]:
    try:
        with open(paths.capture_health, encoding="utf-8") as fh:
            obj = json.load(fh)
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_health(paths: Any, update: dict[str, Any], counts: tuple[str, ...] = ()) -> None:
    with _health_lock:
        h = read_health(paths)
        for name in counts:
            h[name] = int(h.get(name) or 0) + 1
        h.update(update)
        tmp = f"{paths.capture_health}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(h, fh)
            os.replace(tmp, paths.capture_health)
        except OSError:
            pass  # a full disk: the failure is in the log and told to the user


def failed(core: CoreLike, exc: BaseException, doing: str, kept: bool = True, stored: bool = False) -> None:
    """Count a capture failure and tell the user once per kind (until captures work again).
    ``kept``: the capture is safe on disk; ``stored``: it is a memory, only its audit entry waits."""
    kind, words = classify(exc)
    message = getattr(exc, "message", None) or str(exc)
    log.error("%s failed (%s): %s", doing, kind, message)
    _write_health(core.paths, {"failing": True, "kind": kind, "last_error": f"{doing}: {message}",
                               "last_failure": time.time()}, counts=("failures",) if kept else ("failures", "lost"))
    st = _state(core)
    st.failed_now = True
    if st.failing == kind:
        return
    st.failing = kind
    if stored:
        text = (f"Compass: {words} ({message}). Your prompts are still stored; their audit entries are kept "
                "pending and written once this is fixed (`compass-hook audit verify` shows them).")
    elif kept:
        text = (f"Compass could not store your prompts: {words} ({message}). They are kept on disk and stored "
                "once this is fixed; `compass-hook doctor` shows what is wrong.")
    else:
        text = (f"Compass could not save your prompt: {words} ({message}). It was not stored; "
                "`compass-hook doctor` shows what is wrong.")
    tell = core.state.get("notices.tell")
    if tell is not None:
        try:
            tell("capture", kind, text)
        except Exception:  # noqa: BLE001 - telling must never be what fails
            log.exception("could not queue the capture notice")


def _succeeded(core: CoreLike) -> None:
    st = _state(core)
    st.delay = 0.0
    if st.failing is None:
        return
    st.failing = None
    _write_health(core.paths, {"failing": False, "recovered": time.time()})
    clear = core.state.get("notices.clear")
    if clear is not None:
        try:
            clear("capture")  # should it break again, the user is told again
        except Exception:  # noqa: BLE001
            pass


def _backoff(st: _State) -> None:
    st.delay = min(RETRY_MAX_S, max(RETRY_MIN_S, st.delay * 2))
    st.retry_at = time.monotonic() + st.delay
    st.dirty = True


def status(store: Any, paths: Any) -> dict[str, Any]:
    """What ``doctor`` shows: captures waiting on disk, set aside, audit entries pending, failures seen."""
    health = read_health(paths)
    out: dict[str, Any] = {"captures_waiting": spool.count(paths.data), "captures_set_aside": spool.bad_count(paths.data),
                           "audit_pending": store.pending_audit_count() if store is not None else 0,
                           "capture_failures": int(health.get("failures") or 0),
                           "capture_failing": bool(health.get("failing"))}
    if health.get("last_error"):
        out["last_capture_error"] = health["last_error"]
    if health.get("lost"):
        out["captures_lost"] = int(health["lost"])
    return out
