"""Helpers for the MCP tests: run the real ``compass-mcp`` as a subprocess and talk to
it with the official SDK client over stdio (or streamable HTTP)."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = Path(sys.executable).parent
COMPASS_MCP = BIN / "compass-mcp"
PASS_ENV = ("HOME", "XDG_DATA_HOME", "COMPASS_HOME", "COMPASS_MODEL", "COMPASS_NO_WORKER", "COMPASS_SOCKET", "COMPASS_MODEL_DIR",
            "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "XDG_RUNTIME_DIR", "CLAUDE_PROJECT_DIR")


def server_env(**overrides: str | None) -> dict[str, str]:
    """The test's user (HOME) and COMPASS_* environment (conftest set it) plus overrides; None removes a variable."""
    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@asynccontextmanager
async def stdio_session(cwd: Path, roots: list[Path] | None = None, mode: str = "auto",
                        **env: str | None) -> AsyncIterator[Client]:
    """A client session with a fresh ``compass-mcp`` subprocess (its stderr goes to cwd/mcp-stderr.log).

    ``roots``: offer these MCP roots, as editors do for their open workspace.
    ``mode``: "auto" negotiates 2026-07-28; "legacy" forces the 2025-11-25 initialize handshake.
    """
    params = StdioServerParameters(command=str(COMPASS_MCP), env=server_env(**env), cwd=str(cwd))
    kwargs: dict[str, Any] = {}
    if roots is not None:
        from mcp.types import ListRootsResult, Root

        async def list_roots(_ctx: Any) -> ListRootsResult:
            return ListRootsResult(roots=[Root(uri=p.resolve().as_uri(), name=p.name) for p in roots])

        kwargs["list_roots_callback"] = list_roots
    with open(cwd / "mcp-stderr.log", "a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60, mode=mode, **kwargs) as client:
            yield client


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
