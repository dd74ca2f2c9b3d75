"""No network listener unless asked: the stdio MCP server listens on nothing; --http binds 127.0.0.1 only and
wants the bearer token."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from compass_hooks.paths import get_paths

from netinspect import tcp_listeners

EXE = str(Path(sys.executable).with_name("compass-hook"))


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_stdio_mcp_server_has_no_tcp_listener():
    proc = subprocess.Popen([EXE, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and "result" in reply  # the server is up and serving
        assert tcp_listeners(proc.pid) == []
    finally:
        proc.stdin.close()
        _stop(proc)


def test_http_mcp_server_is_loopback_only_and_needs_the_token():
    proc = subprocess.Popen([EXE, "mcp", "--http", "--port", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        url = token = None
        deadline = time.monotonic() + 30
        while (url is None or token is None) and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            if m := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line):
                url = m.group(1)
            if m := re.search(r"bearer token.*: (\S+)$", line.strip()):
                token = m.group(1)
        assert url and token, "the server did not print its URL and token"
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert tcp_listeners(proc.pid) == [f"127.0.0.1:{port}"]
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        for auth in (None, "Bearer wrong-token", f"Basic {token}"):
            req = urllib.request.Request(url, data=body, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream",
                                                  **({"Authorization": auth} if auth else {})})
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(req, timeout=10)
            assert info.value.code == 401, auth
        token_file = get_paths().data / "mcp-http-token"
        assert token_file.stat().st_mode & 0o077 == 0
    finally:
        _stop(proc)


def test_http_mcp_server_refuses_a_public_bind():
    res = subprocess.run([EXE, "mcp", "--http", "--host", "0.0.0.0", "--port", "0"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode != 0 and "127.0.0.1" in res.stderr and "Traceback" not in res.stderr
