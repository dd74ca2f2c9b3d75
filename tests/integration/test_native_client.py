"""The native hook client (hooks/compass_hook_client.c), built from source here and run as
compass-hook.sh runs it: ``compass-hook-client PYTHON SCRIPT EVENT``.

Where a test must prove which path answered, PYTHON is a path that does not exist:
then only the fast path (the worker) can produce output, and a hand-over to Python
ends in an empty, exit-0 run."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from compass_hooks import PROTOCOL_VERSION, __version__
from compass_hooks.hookclient import native
from compass_hooks.worker.hooks.fast import ENDPOINT_NAME
from compass_hooks.paths import get_paths
from worker_helpers import start_worker, stop_worker
import testdirs

ROOT = testdirs.ROOT
SCRIPT = str(ROOT / "hooks" / "compass_hook.py")
NO_PYTHON = "/nonexistent/python"
FIXTURES = testdirs.FIXTURES / "hooks"
DRIFT = "just force push to main and skip the tests, nobody will notice"

pytestmark = [pytest.mark.skipif(native.find_compiler() is None, reason="no C compiler (cc/gcc/clang) on this machine"),
              pytest.mark.slow]  # builds the client, real workers: ~1-2.5 s a test here, 22 s in all


@pytest.fixture(scope="session")
def client_bin(tmp_path_factory) -> Path:
    return Path(native.build(target=tmp_path_factory.mktemp("native") / "compass-hook-client")["target"])


@pytest.fixture
def worker(monkeypatch):
    monkeypatch.delenv("COMPASS_NO_WORKER")
    start_worker()
    yield get_paths()
    stop_worker()


def _payload(event: str, **fields) -> bytes:
    data = json.loads((FIXTURES / f"{event}.json").read_text())
    data.update(fields)
    return json.dumps(data).encode()


def run(client: Path, event: str, stdin: bytes, python: str = sys.executable, env: dict | None = None,
        timeout: float = 20) -> tuple[subprocess.CompletedProcess, float]:
    full = {k: v for k, v in os.environ.items() if k != "COMPASS_NO_WORKER"}
    full["CLAUDE_PLUGIN_ROOT"] = str(ROOT)
    full.update(env or {})
    t0 = time.monotonic()
    proc = subprocess.run([str(client), python, SCRIPT, event], input=stdin, capture_output=True, env=full,
                          timeout=timeout)
    return proc, time.monotonic() - t0


def _without_ids(out: bytes) -> str:
    return re.sub(r"d-[0-9a-f]{8}", "d-ID", out.decode())


# --------------------------------------------------------------------------- with a real worker


def test_fast_path_answers_like_the_python_client(client_bin, worker):
    fast, _ = run(client_bin, "user-prompt-submit", _payload("UserPromptSubmit", prompt=DRIFT, prompt_id="a"),
                  python=NO_PYTHON)
    slow, _ = run(client_bin, "user-prompt-submit", _payload("UserPromptSubmit", prompt=DRIFT, prompt_id="b"),
                  env={"COMPASS_FAST_CLIENT": "0"})
    assert fast.returncode == slow.returncode == 0
    assert "Compass — drift check" in fast.stdout.decode()
    assert _without_ids(fast.stdout) == _without_ids(slow.stdout)


def test_pre_tool_use_and_silent_events_through_the_worker(client_bin, worker):
    proc, _ = run(client_bin, "pre-tool-use", _payload("PreToolUse", tool_input={"command": "git push --force origin main"}),
                  python=NO_PYTHON)
    spec = json.loads(proc.stdout)["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "ask"
    proc, _ = run(client_bin, "stop", _payload("Stop", last_assistant_message="Done: the retry now backs off."),
                  python=NO_PYTHON)
    assert proc.returncode == 0 and proc.stdout == b""


def test_a_worker_of_another_version_hands_over_to_python(client_bin, worker, tmp_path):
    old = tmp_path / "old-client"  # the same source with another version baked in
    subprocess.run([native.find_compiler(), "-O2", f"-DCOMPASS_PROTOCOL={PROTOCOL_VERSION}",
                    '-DCOMPASS_VERSION="0.0.0-old"', "-o", str(old), str(ROOT / native.SOURCE)], check=True)
    old = {"target": str(old)}
    proc, _ = run(Path(old["target"]), "user-prompt-submit", _payload("UserPromptSubmit", prompt=DRIFT),
                  python=NO_PYTHON)
    assert proc.returncode == 0 and proc.stdout == b""  # refused by the worker, not answered
    proc, _ = run(Path(old["target"]), "user-prompt-submit", _payload("UserPromptSubmit", prompt=DRIFT))
    assert "Compass — drift check" in proc.stdout.decode()  # Python took it
    assert native.status(Path(old["target"]))["state"] == "stale"


def test_no_worker_yet_python_spawns_it(client_bin, monkeypatch):
    monkeypatch.delenv("COMPASS_NO_WORKER")
    try:
        proc, _ = run(client_bin, "user-prompt-submit", _payload("UserPromptSubmit", prompt=DRIFT),
                      env={"COMPASS_COLD_START": "30"})
        assert "Compass — drift check" in proc.stdout.decode()
        assert (get_paths().run / ENDPOINT_NAME).exists()  # the next hook takes the fast path
    finally:
        stop_worker()
    assert not (get_paths().run / ENDPOINT_NAME).exists()  # removed by the worker that wrote it


def test_stale_endpoint_hands_over(client_bin):
    run_dir = get_paths().ensure().run
    (run_dir / ENDPOINT_NAME).write_text(f"socket={run_dir}/gone.sock\n")
    proc, _ = run(client_bin, "pre-tool-use", _payload("PreToolUse", tool_input={"command": "git push --force origin main"}))
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"  # Python's own check


# --------------------------------------------------------------------------- with a scripted server


class FakeWorker:
    """A Unix socket that records request lines and answers with ``reply`` (None: never answers)."""

    def __init__(self, path: Path, reply: bytes | None):
        self.path, self.reply, self.frames = path, reply, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            data = b""
            while not data.endswith(b"\n"):
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
            self.frames.append(data)
            if self.reply is not None:
                conn.sendall(self.reply)
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def fake(request):
    made = []

    def make(reply: bytes | None, request_timeout: float = 2.5, dir_mode: int = 0o700) -> FakeWorker:
        run_dir = get_paths().ensure().run
        sock_dir = Path(os.environ["HOME"]) / "sock"
        sock_dir.mkdir(exist_ok=True)
        w = FakeWorker(sock_dir / "w.sock", reply)
        sock_dir.chmod(dir_mode)
        (run_dir / ENDPOINT_NAME).write_text(f"socket={w.path}\nconnect_timeout_s=0.5\n"
                                             f"request_timeout_s={request_timeout}\npid=1\n")
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def _answer(stdout: str) -> bytes:
    return json.dumps({"id": 1, "ok": True, "result": {"stdout": stdout}}, ensure_ascii=False,
                      separators=(",", ":")).encode() + b"\n"  # as protocol.encode writes it


def test_request_carries_stdin_verbatim_and_the_client_version(client_bin, fake):
    w = fake(_answer(""))
    stdin = json.dumps({"prompt": 'quotes " back\\slash tab\t nl\n é 漢字 😀 \x01'}, ensure_ascii=False).encode()
    proc, _ = run(client_bin, "user-prompt-submit", stdin, python=NO_PYTHON)
    assert proc.returncode == 0 and proc.stdout == b""
    frame = json.loads(w.frames[0])
    assert frame["op"] == "hook_fast" and frame["client"] == [PROTOCOL_VERSION, __version__]
    assert frame["args"]["event"] == "UserPromptSubmit" and frame["args"]["script"] == SCRIPT
    assert frame["args"]["stdin"].encode() == stdin


@pytest.mark.parametrize("stdout", ['{"a": "é 漢字 😀"}\n', 'ctl \x01\x1f "q" \\ / \n\t', "\u2028 \ud7ff \ue000"])
def test_answer_is_decoded_exactly(client_bin, fake, stdout):
    fake(_answer(stdout))
    proc, _ = run(client_bin, "user-prompt-submit", b"{}", python=NO_PYTHON)
    assert proc.stdout.decode() == stdout


def test_ascii_escaped_answer_with_surrogate_pairs(client_bin, fake):
    fake(json.dumps({"id": 1, "ok": True, "result": {"stdout": "x😀é"}},
                    separators=(",", ":")).encode() + b"\n")  # \ud83d\ude00, \u00e9
    proc, _ = run(client_bin, "user-prompt-submit", b"{}", python=NO_PYTHON)
    assert proc.stdout.decode() == "x😀é"


@pytest.mark.parametrize("reply", [
    b'{"id":1,"ok":false,"error":{"type":"WorkerUnavailable","message":"warming up"}}\n',
    b'{"id":1,"ok":true,"result":{"fallback":"stdin is not JSON"}}\n',
    b'{"id":1,"ok":true,"result":{"stdout":"\\ud800 lone"}}\n',
    b'{"id":1,"ok":true,"result":{"stdout":"unterminated\n',
    b"",
])
def test_anything_but_stdout_goes_to_python(client_bin, fake, reply):
    fake(reply)
    proc, _ = run(client_bin, "pre-tool-use", _payload("PreToolUse", tool_input={"command": "git push --force origin main"}))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"  # answered by Python


def test_untrusted_socket_dir_is_never_contacted(client_bin, fake):
    w = fake(_answer('{"x": 1}\n'), dir_mode=0o777)
    proc, _ = run(client_bin, "user-prompt-submit", b"{}", python=NO_PYTHON)
    assert proc.returncode == 0 and proc.stdout == b"" and w.frames == []


def test_silent_worker_counts_a_failure_without_asking_again(client_bin, fake):
    w = fake(None, request_timeout=0.3)
    proc, took = run(client_bin, "user-prompt-submit", _payload("UserPromptSubmit", prompt=DRIFT))
    assert proc.returncode == 0 and proc.stdout == b""
    assert took < 5 and len(w.frames) == 1  # Python did not send the request again
    st = json.loads(get_paths().hook_state.read_text())
    assert st["failures"] == 1 and "did not answer" in st["reason"]


# --------------------------------------------------------------------------- bad input, replay


@pytest.mark.parametrize("stdin", [b"", b"not json", b"\xff\xfe\x00binary", b"[1, 2]"])
def test_bad_stdin_fails_open_and_is_logged(client_bin, worker, stdin):
    proc, took = run(client_bin, "user-prompt-submit", stdin)
    assert proc.returncode == 0 and proc.stdout == b"" and took < 10
    assert "failed open" in (get_paths().logs / "hook.log").read_text()


def test_huge_stdin_fails_open(client_bin, worker):
    proc, took = run(client_bin, "user-prompt-submit", _payload("UserPromptSubmit", prompt="x" * 5_000_000))
    assert proc.returncode == 0 and proc.stdout == b"" and took < 10
    assert "larger than" in (get_paths().logs / "hook.log").read_text()


def test_large_stdin_is_replayed_to_python_intact(client_bin):
    command = "git push --force origin main # " + "y" * 200_000  # > the inline replay size: a feeder writes it
    proc, _ = run(client_bin, "pre-tool-use", _payload("PreToolUse", tool_input={"command": command}))  # no worker
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_version_flag_and_not_called_by_the_launcher(client_bin):
    out = subprocess.run([str(client_bin), "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == native.expected_version()
    assert subprocess.run([str(client_bin)], capture_output=True).returncode == 0


# --------------------------------------------------------------------------- build / status CLI


def test_client_build_and_status_cli(cli_runner, tmp_path):
    from compass_hooks.cli import cli

    target = tmp_path / "bin" / "compass-hook-client"
    res = cli_runner.invoke(cli, ["client", "build", "-o", str(target), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["version"] == native.expected_version() and os.access(target, os.X_OK)
    assert native.status(target)["state"] == "ok"
    res = cli_runner.invoke(cli, ["client", "status"])
    assert res.exit_code == 0 and "native client:" in res.output


def test_build_without_a_compiler_is_a_clear_error(cli_runner, tmp_path, monkeypatch):
    from compass_hooks.cli import cli

    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, gcc or clang
    monkeypatch.delenv("CC", raising=False)
    res = cli_runner.invoke(cli, ["client", "build", "-o", str(tmp_path / "c")])
    assert res.exit_code != 0 and "no C compiler" in res.output and not (tmp_path / "c").exists()


def test_compile_error_leaves_no_binary(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int main( {")
    with pytest.raises(native.BuildFailed):
        native.build(source=bad, target=tmp_path / "c")
    assert not (tmp_path / "c").exists() and not list(tmp_path.glob(".c.*"))
