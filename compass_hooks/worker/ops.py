"""Worker ops: ``ping``, ``stop``, ``hook`` (hook event dispatch) and ``hook_fast`` (the same for the
native hook client: raw stdin in, rendered stdout out).

Inside the worker the server answers ``ping`` and ``stop`` itself (they must not
wait for the model); these registrations make the same names work through the
in-process service, where there is no worker to stop.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import PROTOCOL_VERSION, __version__
from ..ops import op

if TYPE_CHECKING:  # pragma: no cover
    from ..memory.corelike import CoreLike


@op("ping")
def ping(core: CoreLike) -> dict:
    info = core.state.get("worker.info")
    if info is not None:
        return info()
    emb = getattr(core, "_embedder", None)
    return {"protocol": PROTOCOL_VERSION, "version": __version__,
            "model": getattr(emb, "name", None) or str(core.config.get("model", "name")),
            "ready": True, "state": "in-process", "error": None, "pid": os.getpid(), "uptime": 0.0,
            "data": str(core.paths.data)}


@op("stop")
def stop(core: CoreLike) -> dict:
    return {"stopping": False, "detail": "in-process service: there is no worker to stop"}


@op("hook")
def hook(core: CoreLike, event: str, payload: dict | None = None) -> dict:
    """``{"event": "UserPromptSubmit", "payload": {...stdin JSON...}}`` -> hook result fields."""
    from ..worker.hooks.handlers import handle

    return handle(core, event, payload or {})


@op("hook_fast")
def hook_fast(core: CoreLike, event: str, stdin: str, script: str | None = None) -> dict:
    """The native hook client's op: the hook's raw stdin in, ``{"stdout": text}`` or
    ``{"fallback": why}`` out (compass_hooks/worker/hooks/fast.py)."""
    from ..worker.hooks.fast import serve

    return serve(core, event, stdin, script)
