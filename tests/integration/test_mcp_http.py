"""The optional streamable HTTP transport: loopback only, bearer token required."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_client import COMPASS_MCP, server_env

pytestmark = pytest.mark.slow  # a real HTTP compass-mcp per test: 1-6 s each here


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, str, str]:
    """Start `compass-mcp --http --port 0`; return (proc, url, stderr so far)."""
    err = tmp_path / f"http-{time.monotonic_ns()}.log"
    fh = open(err, "w")
    proc = subprocess.Popen([str(COMPASS_MCP), "--http", "--port", "0", *extra], cwd=tmp_path,
                            env={**os.environ, **server_env()}, stdout=subprocess.PIPE, stderr=fh, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = err.read_text()
        m = re.search(r"listening on (http://\S+)", text)
        if m and "bearer token" in text:
            return proc, m.group(1), text
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"server did not start: {err.read_text()}")


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, /proc/net/tcp*) in LISTEN state on this port."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            parts = ln.split()
            addr, hexport = parts[1].rsplit(":", 1)
            if int(hexport, 16) == port and parts[3] == "0A":
                found.add(addr)
    return found


def test_http_binds_loopback_and_requires_the_token(tmp_path, compass_home):
    proc, url, log = _start(tmp_path)
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        token = re.search(r"bearer token \(shown once; stored 0600 in (\S+)\): (\S+)", log)
        assert token, log
        token_file, secret = Path(token.group(1)), token.group(2)
        assert token_file.parent == compass_home
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert token_file.read_text().strip() == secret

        port = int(url.rsplit(":", 1)[1].split("/")[0])
        if Path("/proc/net/tcp").exists():
            assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only, no 0.0.0.0 / ::

        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        headers = {"accept": "application/json, text/event-stream"}
        assert httpx2.post(url, json=body, headers=headers, timeout=10).status_code == 401
        wrong = httpx2.post(url, json=body, headers={**headers, "authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401 and "token" in wrong.text

        async def session():
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers={"authorization": f"Bearer {secret}"}, timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http)) as c:
                    names = {t.name for t in (await c.list_tools()).tools}
                    r = await c.call_tool("drift_check", {"prompt": "git push --force to main", "project": "global"})
                    return names, r

        names, r = anyio.run(session)
        assert "drift_check" in names and not r.is_error
        assert set(r.structured_content) >= {"drift", "probability", "alert"}
    finally:
        out = _stop(proc)
    assert out == ""  # nothing on stdout, even in HTTP mode

    # A second start reuses the token and does not print it again.
    proc, _, log = _start(tmp_path)
    _stop(proc)
    assert secret not in log and str(token_file) in log


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10"])
def test_http_refuses_non_loopback_hosts(tmp_path, host):
    r = subprocess.run([str(COMPASS_MCP), "--http", "--host", host, "--port", "0"], capture_output=True,
                       text=True, timeout=30, env={**os.environ, **server_env()})
    assert r.returncode == 1
    assert "127.0.0.1 only" in r.stderr and r.stdout == ""


def test_token_file_readable_by_others_is_refused(compass_home):
    from compass_hooks.errors import ConfigError
    from mcp_server import http

    token, created = http.load_or_create_token()
    assert created and len(token) >= 32
    assert http.load_or_create_token() == (token, False)
    http.token_path().chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        http.load_or_create_token()
