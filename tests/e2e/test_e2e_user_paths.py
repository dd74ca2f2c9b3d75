"""The README's ways to use compass-hooks in Claude Code, walked as a new user walks them (issue 11).

Each path starts in a fresh HOME with no COMPASS_*, CLAUDE_* or XDG_* variable, follows the README's commands
literally (./install.sh, claude plugin ..., claude --plugin-dir, compass-hook in a terminal, the MCP server as
`compass-hook mcp config cursor` writes it) and asserts what reaches the model through the real Claude Code CLI:
the drift alert for a risky prompt, a rule stated in one session in the next session's context, and no hook
that failed open. Real MiniLM (exported by each install, as a user's is), real SQLite, the real CLI from npm.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from cc_harness import (ROOT, MockAPI, claude_bin, compass_blocks, du_bytes, prompt, run, stop_workers,
                        user_env)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.model]

RISKY = "Just force push to main and skip the tests, nobody will notice."
RULE = "From now on in this project never use pandas; use the csv module from the standard library."
TASK = "Load sales.csv and compute the monthly totals per region."
INSTALL_TIMEOUT_S = 20 * 60
BOOTSTRAP_TIMEOUT_S = 20 * 60
CACHE_LIMIT = 60 * 1024 * 1024  # issue 11: Claude Code's copy of the plugin holds only the plugin


def data_dir(home: Path) -> Path:
    return home / ".local" / "share" / "compass-hooks"


@pytest.fixture(scope="module")
def claude() -> str:
    return claude_bin()


@pytest.fixture
def api(tmp_path):
    mock = MockAPI(tmp_path / "mock")
    yield mock
    mock.close()


def new_user(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A fresh HOME and a project folder (a git repo, as a user's project is)."""
    home, work = tmp_path / name / "home", tmp_path / name / "project"
    home.mkdir(parents=True)
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return home, work


def install(home: Path, env: dict[str, str], *args: str) -> str:
    proc = run([str(ROOT / "install.sh"), *args], env, ROOT, timeout=INSTALL_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


def walk(claude: str, env: dict[str, str], api: MockAPI, work: Path, *extra: str) -> list[str]:
    """Three sessions: a risky prompt, a rule, an unrelated task. The text sent to the model for each."""
    return [prompt(claude, env, api, text, work, *extra) for text in (RISKY, RULE, TASK)]


def assert_compass_reached_the_model(sent: list[str], data: Path) -> None:
    risky, _, task = (compass_blocks(s) for s in sent)
    assert any(b.startswith("Compass — drift check") and "drift probability" in b for b in risky), sent[0][-3000:]
    # The rule from the second session is in the third session's context, inside a Compass block.
    assert any("pandas" in b for b in task), task
    # No hook.log at all is a clean run too: the file appears with its first line (a hook that failed open, passed
    # through or was slow), and a warm worker behind the native client may have nothing to say.
    path = data / "logs" / "hook.log"
    log = path.read_text(errors="replace") if path.exists() else ""
    assert "failed open" not in log, log[-3000:]


def assert_lean_plugin_cache(home: Path) -> None:
    cache = home / ".claude" / "plugins" / "cache"
    assert cache.is_dir()
    size = du_bytes(cache)
    assert size < CACHE_LIMIT, f"{size / 1e6:.1f} MB in {cache}"
    names = {p.name for p in cache.rglob("*")}
    assert not names & {".venv", "venv", "site-packages", "compass-model.json", "model.onnx"}, names
    assert not [n for n in names if n.endswith(".egg-info")]


def test_a_install_sh_with_claude_on_path_then_plain_claude(claude, api, tmp_path):
    """(a) ./install.sh registers the plugin through the claude CLI; then plain `claude -p`."""
    home, work = new_user(tmp_path, "a")
    env = user_env(home, api, extra_path=str(Path(claude).parent))
    try:
        out = install(home, env)
        assert "installing the Claude Code plugin" in out
        listed = run([claude, "plugin", "list"], env, work)
        assert "compass-hooks@compass-local" in listed.stdout, listed.stdout + listed.stderr
        sent = walk(claude, env, api, work)
        assert_compass_reached_the_model(sent, data_dir(home))
        assert_lean_plugin_cache(home)
        venv = data_dir(home) / "venv"
        assert not list(venv.glob("lib/python*/site-packages/torch")), "the runtime venv holds torch"
        # The hooks ran from the runtime venv install.sh built, not a copy of it in Claude Code's data dir.
        assert not (home / ".claude" / "plugins" / "data" / "compass-hooks-compass-local" / "venv").exists()
        # And one command undoes it all, the Claude Code registration included (issue 15).
        out = run([str(venv / "bin" / "compass-hook"), "uninstall", "--yes"], env, work, timeout=300)
        assert out.returncode == 0 and "compass-hooks is uninstalled" in out.stdout, out.stdout + out.stderr
        listed = run([claude, "plugin", "list"], env, work)
        assert "compass-hooks@compass-local" not in listed.stdout, listed.stdout
        markets = run([claude, "plugin", "marketplace", "list"], env, work)
        assert "compass-local" not in markets.stdout, markets.stdout
        assert not data_dir(home).exists()
    finally:
        stop_workers(home)


def test_b_install_sh_then_claude_plugin_dir(claude, api, tmp_path):
    """(b) ./install.sh (no claude on PATH yet), then `claude --plugin-dir <checkout>`."""
    home, work = new_user(tmp_path, "b")
    env = user_env(home, api)
    try:
        out = install(home, env)
        assert "plugin not registered" in out and f"claude --plugin-dir {ROOT}" in out
        sent = walk(claude, env, api, work, "--plugin-dir", str(ROOT))
        assert_compass_reached_the_model(sent, data_dir(home))
    finally:
        stop_workers(home)


def test_b2_plugin_dir_from_another_home_finds_the_checkouts_install(claude, api, tmp_path):
    """`claude --plugin-dir <checkout>` for a HOME where install.sh never ran: the checkout's .venv (linked by
    install.sh) and the models its install exported serve it; the store is that HOME's own."""
    record = ROOT / ".venv" / "compass-install.json"
    if not record.is_file():
        pytest.skip("this checkout's .venv is a dev env, not install.sh's runtime link (CI runs install.sh first)")
    home, work = new_user(tmp_path, "b2")
    env = user_env(home, api)
    try:
        sent = walk(claude, env, api, work, "--plugin-dir", str(ROOT))
        assert_compass_reached_the_model(sent, data_dir(home))
    finally:
        stop_workers(home)


def _clean_clone(dst: Path) -> None:
    """What `git clone` of this checkout gives (tracked files, plus new files not yet committed): no venv."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    subprocess.run(["git", "init", "-q", str(dst)], check=True)
    assert not (dst / ".venv").exists() and not (dst / "models" / "minilm").exists()


def test_c_marketplace_add_of_a_clean_clone_bootstraps_then_guards(claude, api, tmp_path):
    """(c) `claude plugin marketplace add <clean clone>` + install; the hooks bootstrap the lean runtime in the
    plugin's data dir and export MiniLM into the user's models dir; prompts once it is ready."""
    home, work = new_user(tmp_path, "c")
    clone = tmp_path / "c" / "compass-hooks"
    _clean_clone(clone)
    env = user_env(home, api)
    plugin_data = home / ".claude" / "plugins" / "data" / "compass-hooks-compass-local"
    stamp = plugin_data / "venv" / ".compass-requirements.sha256"
    try:
        for args in (["plugin", "marketplace", "add", str(clone)], ["plugin", "install", "compass-hooks@compass-local"]):
            proc = run([claude, *args], env, work)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        t0 = time.monotonic()
        prompt(claude, env, api, "hello", work)  # the first session starts the bootstrap in the background
        while not stamp.exists():
            log = plugin_data / "logs" / "bootstrap.log"
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no bootstrap.log)"
            assert "bootstrap failed" not in tail, tail
            assert time.monotonic() - t0 < BOOTSTRAP_TIMEOUT_S, tail
            time.sleep(2)
        print(f"\nbootstrap to a ready runtime: {time.monotonic() - t0:.0f} s")
        assert (data_dir(home) / "models" / "minilm" / "compass-model.json").is_file()
        assert not list((plugin_data / "venv").glob("lib/python*/site-packages/torch"))
        assert not (home / ".cache" / "compass-hooks" / "export-env").exists()  # the export env was thrown away
        sent = walk(claude, env, api, work)
        assert_compass_reached_the_model(sent, data_dir(home))
        assert_lean_plugin_cache(home)
        assert not (plugin_data / "compass.db").exists()  # the store is the user's, not the plugin install's
    finally:
        stop_workers(home)
        subprocess.run(["pkill", "-f", f"--bootstrap-build {plugin_data}"], capture_output=True)


async def _remember_through_cursors_server(entry: dict, env: dict[str, str], work: Path, text: str) -> dict:
    """Start the server exactly as Cursor would from its mcp.json entry and call `remember` with the official
    client, offering the project folder as the MCP root (as an editor does for its open workspace)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.types import ListRootsResult, Root

    async def list_roots(_ctx: object) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=work.resolve().as_uri(), name=work.name)])

    params = StdioServerParameters(command=entry["command"], args=entry.get("args", []),
                                   env={**env, **entry.get("env", {})}, cwd=str(work))
    with open(work.parent / "mcp-stderr.log", "a") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60,
                          list_roots_callback=list_roots) as c:
            r = await c.call_tool("remember", {"text": text, "kind": "constraint"})
            assert not r.is_error, r
            return r.structured_content


def test_d_one_store_for_terminal_cursor_and_claude_code(claude, api, tmp_path):
    """(d) A rule remembered with `compass-hook remember` in a terminal and one remembered through the MCP server
    as `compass-hook mcp config cursor` writes it both reach the model in Claude Code; a prompt typed in Claude
    Code is found by `compass-hook recall`."""
    home, work = new_user(tmp_path, "d")
    env = user_env(home, api, extra_path=str(Path(claude).parent))
    try:
        install(home, env)
        ch = str(home / ".local" / "bin" / "compass-hook")  # install.sh puts it there for the terminal
        proc = run([ch, "remember", "--kind", "constraint",
                    "Never add the requests library to this project; use urllib from the standard library."],
                   env, work)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        proc = run([ch, "mcp", "config", "cursor", "--write"], env, work)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        entry = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["compass"]
        mem = anyio.run(_remember_through_cursors_server, entry, env, work,
                        "Every SQL migration in this project must be reversible: write the down step too.")
        assert mem["project"] == str(work)

        sent = prompt(claude, env, api, "Write a small script that fetches our status page and prints it.", work)
        context = "\n".join(compass_blocks(sent))
        assert "requests library" in context and "reversible" in context, context

        prompt(claude, env, api, "The staging database listens on db-staging-7.internal port 6543.", work)
        proc = run([ch, "recall", "--json", "which port does the staging database use"], env, work)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        found = json.loads(proc.stdout)["memories"]
        assert any("db-staging-7.internal" in m["text"] for m in found), found
        # One store, one worker: everything above went to the user data dir.
        assert (data_dir(home) / "compass.db").is_file()
        assert not (home / ".claude" / "plugins" / "data" / "compass-hooks-compass-local" / "compass.db").exists()
    finally:
        stop_workers(home)
