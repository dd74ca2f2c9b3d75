"""The capture queue: a hook's capture is durable before the hook answers, stored after.

Why: a prompt must be answered in milliseconds, while storing it (embedding, the
memory row, its FTS context, the audit entry) takes longer and, with many
sessions, falls behind. Held in memory, that backlog was lost whenever the worker
stopped (a stop that gave up after 10 s, a restart for a new version) or died.
Now:

1. **journal** (in the hook op, ~1 ms): the capture's items, already cleaned
   (:func:`.capture.prompt_items`, :func:`.capture.stop_item`), are committed to the
   store's ``capture_queue``. If the store cannot take them (disk full, read-only,
   corrupt) they go to the file spool (:mod:`compass_hooks.spool`) instead.
2. **process** (the worker's background thread, after the answer): queued rows in
   batches of :data:`BATCH`: one embedding call, one transaction that adds the
   memories *and deletes their queue rows*, one audit append. A row is stored once
   whether processing finishes, is cut short or runs twice (dedupe keys).
3. **rounds** (after each journal, when the worker becomes ready, and from its
   :func:`tick`): spool entries (hooks that failed open, step 1's fallback) move
   into the queue, audit intents a crash left are appended, the queue is processed.

A stopping worker processes until ``core.state["worker.stop_at"]`` and leaves the
rest for the next worker. Processing waits while the model is not loaded
(``core.state["worker.ready"]``): a memory stored without its vector would never
get one.

Failures are counted in ``<data>/run/capture-health.json`` (``doctor`` shows it) and
told to the user once per kind through ``core.state["notices.tell"]`` (the
worker's notices). A failed round is retried with backoff; nothing is dropped but
a row the store rejects as invalid (or one that failed :data:`MAX_ATTEMPTS` times),
which stays in the queue marked failed, for ``doctor``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import spool
from ..errors import CompassError, InvalidInput, ModelCorrupt, ModelNotFound, StoreError
from ..logs import get_logger
from . import capture

BATCH = 64  # captures per transaction (one embedding call, one audit append)
SPOOL_BATCH = 500  # spool entries moved into the queue per round
TICK_S = 2.0  # how often the worker's tick may start a round
RETRY_MIN_S, RETRY_MAX_S = 2.0, 300.0  # backoff after a failed round
MAX_ATTEMPTS = 5  # a row that fails this often for a reason other than the store itself is set aside
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
    last_tick: float = 0.0


def _state(core: Any) -> _State:
    return core.feature(FEATURE, lambda c: _State())


def _model_ready(core: Any) -> bool:
    ready = core.state.get("worker.ready")
    return True if ready is None else bool(ready())


def _stopping(core: Any) -> bool:
    stop_at = core.state.get("worker.stop_at")
    return stop_at is not None and time.monotonic() >= stop_at


# --------------------------------------------------------------------------- journal


def journal(core: Any, event: str, items: list[dict[str, Any]]) -> list[int]:
    """Make a capture durable now; store it at once without a worker (returns the new ids) or after the
    hook's answer with one (returns [])."""
    if not items:
        return []
    created = items[0].get("created")
    try:
        qid = core.store.enqueue_capture(event, items, created=created)
    except Exception as exc:  # noqa: BLE001 - whatever breaks the store, the capture goes to the spool
        kept = spool.write(core.paths.data, {"v": 1, "time": created or time.time(), "event": event,
                                             "items": items}) is not None
        failed(core, exc, "saving a capture", kept=kept)
        _state(core).dirty = True
        return []
    if core.state.get("worker.defer") is None:
        return process(core, ids=[qid])
    schedule(core)
    return []


def journal_hook(core: Any, event: str, payload: dict[str, Any]) -> None:
    """Journal what a hook would capture, for a worker that answers without running the handlers (model not
    loaded, still warming up): the prompt passes through and is stored once the model is there."""
    if event == "UserPromptSubmit":
        journal(core, "prompt", capture.prompt_items(core, payload))
    elif event == "Stop":
        item = capture.stop_item(core, payload)
        journal(core, "stop", [item] if item else [])


# --------------------------------------------------------------------------- processing


class _Environment(Exception):
    """The store itself failed (disk full, read-only, corrupt, locked): every row would; stop the round."""


def process(core: Any, ids: list[int] | None = None) -> list[int]:
    """Store queued captures, oldest first (``ids``: only those); returns the new memory ids. Stops at the
    worker's stop deadline or a store failure, leaving the rest queued."""
    if not _model_ready(core):
        _state(core).dirty = True
        return []
    st = _state(core)
    new: list[int] = []
    with st.run_lock:
        st.failed_now = False
        while True:
            if _stopping(core):
                st.dirty = True
                break
            try:
                rows = core.store.pending_captures(limit=BATCH, ids=ids)
                if not rows:
                    break
                new += _store_rows(core, rows)
            except (_Environment, CompassError) as exc:
                cause = exc.__cause__ if isinstance(exc, _Environment) and exc.__cause__ else exc
                failed(core, cause, "storing captures", kept=True)
                _backoff(st)
                return new
            if ids is not None:
                break
    if ids is None and not st.failed_now:
        _succeeded(core)
    return new


def _store_rows(core: Any, rows: list[dict[str, Any]]) -> list[int]:
    store = core.store
    unreadable = [r["id"] for r in rows
                  if not isinstance(r["items"], list) or not all(isinstance(i, dict) for i in r["items"])]
    if unreadable:
        store.capture_failed(unreadable, "unreadable queue row", dead=True)
    wanted: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    done: list[int] = []
    for r in rows:
        if r["id"] in unreadable:
            continue
        items = [dict(it) for it in r["items"]]
        if not items or _already_stored(store, r["event"], items):
            done.append(r["id"])
        else:
            wanted.append((r, items))
    try:
        return _add(core, wanted, done)
    except StoreError as exc:
        raise _Environment(str(exc)) from exc
    except Exception:  # noqa: BLE001 - find the row at fault; the others are stored
        if len(wanted) <= 1 and not done:
            if wanted:
                _reject(core, wanted[0][0])
            return []
    new: list[int] = []
    if done:
        try:
            store.dequeue_captures(done)
        except StoreError as exc:
            raise _Environment(str(exc)) from exc
    for w in wanted:
        try:
            new += _add(core, [w], [])
        except StoreError as exc:
            raise _Environment(str(exc)) from exc
        except Exception:  # noqa: BLE001
            _reject(core, w[0])
    return new


def _already_stored(store: Any, event: str, items: list[dict[str, Any]]) -> bool:
    """Stored before (the same capture journaled twice: by the worker and by a hook that timed out, or from
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


def _add(core: Any, wanted: list[tuple[dict[str, Any], list[dict[str, Any]]]], done: list[int]) -> list[int]:
    items = [it for _, its in wanted for it in its]
    capture.embed_items(core, items)
    added = capture.store_items(core, items, dequeue=[r["id"] for r, _ in wanted] + done)
    audit_error = core.store.audit_error()
    if audit_error:  # stored; only the log entry waits (its intent is kept)
        failed(core, StoreError(audit_error), "writing the audit log", kept=True, stored=True)
    return [a.id for a in added if a.new and a.id is not None]


def _reject(core: Any, row: dict[str, Any]) -> None:
    """A row that fails on its own: counted; set aside for good when the store calls it invalid or it has
    failed :data:`MAX_ATTEMPTS` times (so it cannot block the rows behind it)."""
    import sys

    exc = sys.exc_info()[1]
    dead = isinstance(exc, InvalidInput) or row["attempts"] + 1 >= MAX_ATTEMPTS
    log.exception("capture %s failed (attempt %d%s)", row["id"], row["attempts"] + 1, ", set aside" if dead else "")
    try:
        core.store.capture_failed([row["id"]], f"{type(exc).__name__}: {exc}", dead=dead)
    except StoreError as err:
        raise _Environment(str(err)) from err
    failed(core, exc or RuntimeError("capture failed"), "storing a capture", kept=True)


# --------------------------------------------------------------------------- rounds


def schedule(core: Any, background: bool = False) -> None:
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


def run_round(core: Any) -> None:
    """Spool into the queue, stale audit intents into the log, then the queue into memories."""
    st = _state(core)
    if time.monotonic() < st.retry_at or _stopping(core):
        st.dirty = True
        return
    try:
        import_spool(core)
        flushed = core.store.flush_audit()
    except CompassError as exc:
        failed(core, exc, "moving spooled captures into the store", kept=True)
        _backoff(st)
        return
    if flushed["error"]:
        failed(core, StoreError(flushed["error"]), "writing the audit log", kept=True, stored=True)
        st.dirty = True
    elif flushed["recorded"]:
        log.info("recorded %d audit entries an interrupted write had left", flushed["recorded"])
    process(core)


def tick(core: Any) -> None:
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


def import_spool(core: Any) -> int:
    """Move spool entries into the capture queue, oldest first; returns how many. An entry stays on disk until
    the queue has it; one that cannot be read is set aside (``*.bad``)."""
    moved = 0
    for path, entry in spool.entries(core.paths.data, SPOOL_BATCH):
        try:
            if entry is None:
                raise ValueError("not a JSON object")
            event, items, created = _spool_items(core, entry)
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
            log.warning("setting aside unreadable spool entry %s: %s", path, exc)
            spool.quarantine(path)
            continue
        if items:
            core.store.enqueue_capture(event, items, created=created)
        spool.remove(path)
        moved += 1
    if moved:
        log.info("moved %d spooled captures into the queue", moved)
    return moved


def _spool_items(core: Any, entry: dict[str, Any]) -> tuple[str, list[dict[str, Any]], float]:
    t = entry.get("time")
    created = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) else time.time()
    event = entry.get("event")
    if isinstance(entry.get("items"), list):  # the worker's own fallback: already cleaned
        items = [dict(it) for it in entry["items"] if isinstance(it, dict)]
        return ("stop" if event == "stop" else "prompt"), items, created
    payload = entry.get("payload")
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
    return name, out, created


# --------------------------------------------------------------------------- failures, visibly


def classify(exc: BaseException) -> tuple[str, str]:
    """(kind, words for the user) of a capture failure."""
    text = str(exc).lower()
    if "disk full" in text or "no space left" in text or "enospc" in text or "sqlite_full" in text:
        return "disk-full", "the disk is full"
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


def _write_health(paths: Any, update: dict[str, Any], count: bool) -> None:
    with _health_lock:
        h = read_health(paths)
        if count:
            h["failures"] = int(h.get("failures") or 0) + 1
        h.update(update)
        tmp = f"{paths.capture_health}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(h, fh)
            os.replace(tmp, paths.capture_health)
        except OSError:
            pass  # a full disk: the count stays in the log and the user notice


def failed(core: Any, exc: BaseException, doing: str, kept: bool = True, stored: bool = False) -> None:
    """Count a capture failure and tell the user once per kind (until captures work again).
    ``kept``: the capture is safe on disk (queue or spool); ``stored``: only its audit entry waits."""
    kind, words = classify(exc)
    message = getattr(exc, "message", None) or str(exc)
    log.error("%s failed (%s): %s", doing, kind, message)
    _write_health(core.paths, {"failing": True, "kind": kind, "last_error": f"{doing}: {message}",
                               "last_failure": time.time()}, count=True)
    if not kept:
        _write_health(core.paths, {"lost": int(read_health(core.paths).get("lost") or 0) + 1}, count=False)
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


def _succeeded(core: Any) -> None:
    st = _state(core)
    st.delay = 0.0
    if st.failing is None:
        return
    st.failing = None
    _write_health(core.paths, {"failing": False, "recovered": time.time()}, count=False)
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
    """What ``doctor`` shows: the queue (waiting, set aside), spool entries, audit intents, failures seen."""
    out: dict[str, Any] = dict(store.backlog()) if store is not None else {}
    out["spooled"] = spool.count(paths.data)
    health = read_health(paths)
    out["failures"] = int(health.get("failures") or 0)
    out["failing"] = bool(health.get("failing"))
    out["last_error"] = health.get("last_error") or out.get("last_error")
    if health.get("lost"):
        out["lost"] = int(health["lost"])
    return out
