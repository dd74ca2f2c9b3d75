"""Streamable HTTP transport, for clients that cannot spawn a stdio server.

Bound to 127.0.0.1 only (anything else is refused, not "fixed"), and every request
needs ``Authorization: Bearer <token>``: other local users and any web page the
browser opens can reach a loopback port, so loopback alone is not access control.
The token is generated once, stored 0600 in the data dir and printed once (stderr).

The port is bound *before* the token is read or printed: when another process already listens there (another
local user can take 127.0.0.1:8765 first), clients configured for that port would hand it their token, so the
server refuses to start with a one-line error and never prints the token.
"""

from __future__ import annotations

import errno
import hmac
import json
import os
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

from compass_hooks.errors import ConfigError, InvalidInput
from compass_hooks.logs import get_logger
from compass_hooks.paths import get_paths

log = get_logger("mcp")

LOOPBACK = "127.0.0.1"
TOKEN_FILE = "mcp-http-token"
PATH = "/mcp"


def check_loopback(host: str) -> str:
    """The bind address, which must be 127.0.0.1 (``localhost`` means the same)."""
    if host in (LOOPBACK, "localhost"):
        return LOOPBACK
    raise InvalidInput(f"refusing to bind the MCP HTTP server to {host!r}",
                       "it listens on 127.0.0.1 only; use an SSH tunnel to reach it from elsewhere")


def token_path() -> Path:
    return get_paths().data / TOKEN_FILE


def load_or_create_token() -> tuple[str, bool]:
    """(token, created). Created atomically with mode 0600; an existing file must not be group/world readable."""
    paths = get_paths().ensure()
    path = paths.data / TOKEN_FILE
    if path.exists():
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise ConfigError(f"{path} is readable by other users (mode {mode:o})",
                              f"run `chmod 600 {path}` or delete it to get a new token")
        token = path.read_text(encoding="utf-8").strip()
        if len(token) >= 32:
            return token, False
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    os.replace(tmp, path)
    return token, True


class BearerAuth:
    """ASGI middleware: 401 unless the bearer token matches; 403 for a non-loopback peer."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan: the session manager needs it
            await self.app(scope, receive, send)
            return
        client = scope.get("client") or ("", 0)
        if client[0] not in (LOOPBACK, "::1"):
            await _reject(send, 403, "loopback clients only")
            return
        auth = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, value = auth.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self._token):
            log.info("http: rejected request without a valid token from %s", client[0])
            await _reject(send, 401, "missing or wrong bearer token (see `compass-hook mcp --http` output)")
            return
        await self.app(scope, receive, send)


async def _reject(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="compass"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a one-line :class:`ConfigError` (port taken, not allowed)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # SO_REUSEADDR only skips TIME_WAIT after our own restart; on Linux it never lets us share a port that
        # another socket is listening on, so "in use" below really means another process holds it.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"{host}:{port} is already in use by another process, so the MCP server did not start and printed "
                "no token (a client set up for this port would send its token to that process)",
                f"see who holds it (ss -ltnp 'sport = :{port}'), or pick another port with --port") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          "pick another port with --port") from None
    return sock


async def serve(server: Any, sock: socket.socket, token: str, created: bool) -> None:
    """Serve on the bound ``sock`` (see :func:`bind`) until cancelled; the address is printed to stderr."""
    import uvicorn

    host, actual = sock.getsockname()[:2]
    app = BearerAuth(server.streamable_http_app(streamable_http_path=PATH, host=host), token)
    url = f"http://{host}:{actual}{PATH}"
    # stderr: stdout stays clean even in HTTP mode, so scripts can rely on it being empty.
    print(f"compass MCP server listening on {url}", file=sys.stderr, flush=True)
    if created:
        print(f"bearer token (shown once; stored 0600 in {token_path()}): {token}", file=sys.stderr, flush=True)
    else:
        print(f"bearer token: in {token_path()}", file=sys.stderr, flush=True)
    log.info("http: listening on %s", url)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    await uvicorn.Server(config).serve(sockets=[sock])
