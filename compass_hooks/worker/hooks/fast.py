"""The worker's side of the native hook client (``hooks/compass_hook_client.c``).

The native client skips the Python start-up on every prompt: it forwards the
hook's raw stdin to the worker (op ``hook_fast``) and writes back the exact
stdout text :func:`serve` returns. So everything the Python client decides is
decided here too, with the same functions: the event name, the stdin limit, the
payload checks, ``hooks.enabled``, the handler, the rendering and the end of a
failure streak. Anything the Python client would handle differently (a plugin
update to check, bad stdin to log and count) is answered ``{"fallback": why}``
and the native client runs the Python client instead.

The client finds the worker through the endpoint file ``<data>/run/fast-endpoint``
("key=value" lines: socket, the two hook timeouts, pid) that the worker writes
once it is ready and removes when it stops.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from ... import dirs
from . import guard, names, output, state

if TYPE_CHECKING:  # pragma: no cover
    from ...memory.corelike import CoreLike

ENDPOINT_NAME = "fast-endpoint"
CLIENT_NAME = "compass-hook-client"
SERVED = "hook_fast.served"  # core.state key: hooks answered for the native client (ping shows it)
_count_lock = threading.Lock()


def endpoint_path(paths: Any) -> str:
    return os.path.join(str(paths.run), ENDPOINT_NAME)


def write_endpoint(paths: Any, config: Any) -> None:
    path = endpoint_path(paths)
    lines = [f"socket={paths.socket}", f"connect_timeout_s={config.get('hooks', 'connect_timeout_s')}",
             f"request_timeout_s={config.get('hooks', 'request_timeout_s')}", f"pid={os.getpid()}"]
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def remove_endpoint(paths: Any) -> None:
    """Remove the endpoint file if this process wrote it (a newer worker may own it)."""
    path = endpoint_path(paths)
    try:
        with open(path, encoding="utf-8") as fh:
            if f"pid={os.getpid()}\n" not in fh.read():
                return
        os.unlink(path)
    except OSError:
        pass


def serve(core: CoreLike, event: str, stdin: str, script: str | None = None) -> dict[str, Any]:
    """``{"stdout": text}`` (possibly empty) for one hook run, or ``{"fallback": why}``."""
    name = names.canonical(event)
    if name is None:
        return {"fallback": f"unknown hook event {event!r}"}
    hooks = core.config.section("hooks")
    if not hooks["enabled"]:
        return {"stdout": ""}
    bootstrap_dir = dirs.plugin_install_data() or str(core.paths.data)
    if script and dirs.plugin_updated(bootstrap_dir, os.path.dirname(os.path.dirname(script)), sys.executable):
        return {"fallback": "the plugin was updated: the Python client checks the environment"}
    if len(stdin.encode("utf-8", "surrogatepass")) > int(hooks["max_stdin_bytes"]):
        return {"fallback": "stdin over hooks.max_stdin_bytes"}
    try:
        payload = json.loads(stdin)
    except ValueError:
        return {"fallback": "stdin is not JSON"}
    if not isinstance(payload, dict):
        return {"fallback": "stdin is not a JSON object"}
    if name == "PreToolUse":  # the client's own rule check, so both paths answer alike
        result = guard.pre_tool_use(payload, str(hooks["pretooluse"]))
    else:
        from .handlers import handle

        result = handle(core, name, payload)
    text = output.render(name, result, int(hooks["budget_chars"]))
    state.record_success(str(core.paths.hook_state))
    with _count_lock:
        core.state[SERVED] = core.state.get(SERVED, 0) + 1
    return {"stdout": text}
