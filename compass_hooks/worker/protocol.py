"""The worker's wire protocol (version ``compass_hooks.PROTOCOL_VERSION``).

Transport: a Unix domain stream socket (``get_paths().socket``, mode 0600 in a
0700 directory). The server reads the peer's uid with SO_PEERCRED and closes
connections from any other user. No TCP listener.

Framing: newline-delimited JSON, UTF-8, one object per line (``json.dumps``
never emits a raw newline, so a line is a frame). A line longer than
:data:`MAX_LINE` bytes is a protocol error and the connection is closed.

Request::

    {"id": 1, "op": "score", "args": {"texts": ["..."]}, "wait": 2.0}

``id`` is any JSON scalar echoed back; ``op`` names an op from the registry
(``compass_hooks.ops``); ``args`` are its keyword arguments; the optional
``wait`` is how many seconds the server may wait for readiness (model and
anchors loaded) before answering a warming-up error (default
:data:`DEFAULT_READY_WAIT_S`); the optional ``client`` is ``[protocol, version]``
of the caller: a worker of another protocol or version then answers a
``ProtocolMismatch`` error instead of running the op. ``ping`` and ``stop``
never wait and never check the version.

Response::

    {"id": 1, "ok": true, "result": {...}}
    {"id": 1, "ok": false, "error": {"type": "WorkerUnavailable", "message": "...", "hint": "..."}}

``error.type`` is the name of a :class:`compass_hooks.errors.CompassError`
subclass when the op raised one (the client re-raises that type), else
``"WorkerError"``. A connection may carry several requests in sequence; answers
come back in order. ``ping`` returns ``{"protocol", "version", "model",
"ready", "state", "error", "pid", "uptime", "data", "fast_hooks"}`` (``fast_hooks``:
hooks answered for the native client); a client that sees a different
``protocol`` or ``version`` stops the worker and starts its own.

Stdlib only (json).
"""

from __future__ import annotations

import json
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds to import on the hook hot path
    from typing import Any

MAX_LINE = 16 * 1024 * 1024
DEFAULT_READY_WAIT_S = 2.0
# Argument that marks a process as our worker in /proc/<pid>/cmdline.
WORKER_MODULE = "compass_hooks.worker"


class ProtocolError(ValueError):
    """A frame that is not a JSON object, or too long."""


def encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE:
        raise ProtocolError(f"frame longer than {MAX_LINE} bytes")
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"not a JSON frame: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("frame is not a JSON object")
    return obj


def ok(req_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"id": req_id, "ok": True, "result": result}


def error(req_id: Any, type_: str, message: str, hint: str | None = None) -> dict[str, Any]:
    return {"id": req_id, "ok": False, "error": {"type": type_, "message": message, "hint": hint}}
